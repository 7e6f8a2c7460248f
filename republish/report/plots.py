"""The plots of a store report, as PNG bytes (matplotlib's Agg canvas, no pyplot state).

Each plot is drawn over the release numbers; :data:`PLOTS` names them in page order.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from republish.report.series import StoreReport

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["PLOTS", "render_plots"]

#: File stem -> caption, in the order the page shows them.
PLOTS: dict[str, str] = {
    "movements": "Rows of T(n), new, deleted, re-inserted and deferred rows per release",
    "counterfeits": "Counterfeit and deferral shares per release",
    "certificates": "Certificate of each release: objective and proven bound of each stage",
    "information_loss": "Information loss: NCP and mean normalized width per QI",
    "query_error": "Query error: median relative error of the random COUNT(*) workload",
    "k_l": "Achieved k, l and distinct l per release",
    "risk": "Re-identification risk: prosecutor risk and the intersection audit",
}

DPI = 96
MARKERS = "osD^vp*"
SIZE = (8.0, 3.2)


def _figure(draw: Callable[..., None], panels: int = 1) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(SIZE[0], SIZE[1] * (1 if panels == 1 else 1.6)), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(panels, 1, squeeze=False)[:, 0]
    draw(*axes)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("release")
        if ax.get_legend_handles_labels()[0]:
            # outside the axes, on the right: a legend never hides a line
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    # fixed margins: tight_layout would draw every figure twice
    figure.subplots_adjust(left=0.08, right=0.72, top=0.96, bottom=0.16 if panels == 1 else 0.1,
                           hspace=0.35)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _series(frame: pd.DataFrame, column: str) -> np.ndarray:
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


def _lines(ax: Axes, frame: pd.DataFrame, columns: dict[str, str],
           scale: float = 1.0, style: str = "o-") -> None:
    x = frame["release"].to_numpy()
    for index, (column, label) in enumerate(columns.items()):
        values = _series(frame, column) * scale
        if np.isfinite(values).any():
            # equal series must not hide each other: a bound dashed, markers that differ
            # and shrink, so that the first drawn stays visible under the later ones
            shape = "x--" if "bound" in column else MARKERS[index % len(MARKERS)] + style[1:]
            ax.plot(x, values, shape, label=label, markersize=max(3.0, 8.0 - 1.2 * index))
    if len(x) <= 20:
        ax.set_xticks(x)
    else:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def render_plots(report: StoreReport) -> dict[str, bytes]:
    """PNG bytes of every plot of :data:`PLOTS`, keyed by file stem."""
    frame = report.releases

    def movements(ax: Axes) -> None:
        _lines(ax, frame, {"rows": "rows of T(n)", "new": "new", "deleted": "deleted",
                           "reinserted": "re-inserted", "deferred": "deferred"})
        ax.set_ylabel("rows")

    def shares(ax: Axes) -> None:
        _lines(ax, frame, {"counterfeit_share": "counterfeits / rows of T*(n)",
                           "deferred_share": "deferred / rows of T(n)"}, scale=100.0)
        ax.set_ylabel("%")

    def certificates(first: Axes, second: Axes) -> None:
        _lines(first, frame, {"objective": "(a) objective", "bound": "(a) bound"})
        first.set_ylabel("(a)")
        _lines(second, frame, {"cost": "(b) objective", "cost_bound": "(b) bound"})
        second.set_ylabel("(b)")

    def loss(ax: Axes) -> None:
        columns = {"ncp": "NCP"} | {w: w.removeprefix("width_") for w in report.width_columns}
        _lines(ax, frame, columns)
        ax.set_ylabel("normalized width")

    def query(ax: Axes) -> None:
        _lines(ax, frame, {"query_error": "median relative error"})
        ax.set_ylabel("relative error")

    def k_l(ax: Axes) -> None:
        _lines(ax, frame, {"k": "k", "l": "l", "l_distinct": "distinct l"})
        ax.set_ylabel("achieved")

    def risk(ax: Axes) -> None:
        _lines(ax, frame, {"risk_highest": "prosecutor: highest",
                           "risk_average": "prosecutor: average",
                           "records_at_risk": f"records above {report.threshold:g}",
                           "audit_highest_risk": "intersection audit: highest"})
        ax.set_ylabel("risk / share")
        ax.set_ylim(-0.02, 1.02)

    return {
        "movements": _figure(movements),
        "counterfeits": _figure(shares),
        "certificates": _figure(certificates, panels=2),
        "information_loss": _figure(loss),
        "query_error": _figure(query),
        "k_l": _figure(k_l),
        "risk": _figure(risk),
    }
