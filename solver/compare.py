"""Heuristic vs exact m-invariant pipelines on one dynamic series (``republish compare``).

The series follows the papers' update protocol (m-invariance paper, §5;
:func:`republish.datasets.dynamic_series`). Each pipeline keeps its own
:class:`~republish.state.PublisherState` chain and its own generator seeded with the same
``seed``, so release 1 of both starts from the same (empty) state and the exact objective
can be compared with the heuristic's counterfeits plus deferrals. Later releases start
from different states: their comparison is per chain, not a proof of dominance.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from republish.datasets import dynamic_series
from republish.errors import ParameterError
from republish.metrics import query_error
from republish.parameters import Eligibility as EligibilityMethod
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.offline_series import OfflineOptimum, offline_optimum
from republish.solver.step_modes import Mode
from republish.state import PublisherState
from republish.tables import validate_table

__all__ = ["COLUMNS", "PIPELINES", "compare_pipelines", "plot_comparison"]

PIPELINES: tuple[Mode, ...] = ("heuristic", "exact")
COLUMNS = (
    "pipeline", "release", "counterfeits", "deferred", "mean_perimeter", "query_error",
    "status", "objective", "bound", "gap", "counts_status", "cost", "cost_status",
    "cost_bound", "cost_gap", "grouping_status", "grouping_gap", "wall_time_s",
)


def compare_pipelines(
    table: pd.DataFrame,
    schema: Schema,
    m: int,
    initial: int,
    r: int,
    releases: int,
    time_limit: float,
    seed: int,
    *,
    queries: int = 1000,
    workers: int = 1,
    eligibility: EligibilityMethod = "counterfeit",
    progress: Callable[[str, bool], None] | None = None,
    offline_time_limit: float = 0.0,
) -> pd.DataFrame:
    """Publish the same series with ``mode="heuristic"`` and ``mode="exact"``.

    ``time_limit`` is the budget of each release step of the exact pipeline (all its
    models together) and of the eligibility model of the heuristic one. ``queries``
    random queries (selectivity 0.1, seeded with ``seed``) give each release's
    ``query_error``. ``eligibility`` (``counterfeit``, ``delete``, ``hybrid``) is what
    both pipelines may use to make leftover rows m-eligible. Returns one row per pipeline
    and release with the columns :data:`COLUMNS` (heuristic rows first). ``progress`` is
    called with ``("heuristic release 3/6", True)`` as each step starts and with
    ``("heuristic release 3/6: <phase>", False)`` as its phases start.
    ``offline_time_limit > 0``: also the offline optimum of the series (the least total
    of (a) any policy reaches, :mod:`republish.solver.offline_series`), started from the
    better chain, in ``frame.attrs["offline"]`` (:func:`offline_summary`).

    Raises
    ------
    ParameterError
        on a non-positive ``time_limit``/``queries``/``workers`` or a series parameter out
        of range (from :func:`~republish.datasets.dynamic_series`).
    """
    if not time_limit > 0:
        raise ParameterError(f"time_limit={time_limit}: give a positive number of seconds.")
    if queries < 1:
        raise ParameterError(f"queries={queries}: at least one query is needed.")
    if workers < 1:
        raise ParameterError(f"workers={workers}: at least one CP-SAT worker is needed.")
    table = validate_table(table, schema)
    series = dynamic_series(table, initial, r, releases, seed, identifier=schema.identifier)
    records: list[dict[str, object]] = []
    finals: dict[str, tuple[float, PublisherState | None]] = {}
    for mode in PIPELINES:
        rng = np.random.default_rng(seed)
        state: PublisherState | None = None
        total = 0.0
        for index, microdata in enumerate(series, start=1):
            label = f"{mode} release {index}/{len(series)}"
            if progress is not None:
                progress(label, True)
            step = publish_m_invariant(
                microdata, schema, m, previous=state, rng=rng, validated=True,
                mode=mode, time_limit=time_limit,
                workers=workers, eligibility=eligibility,
                progress=None if progress is None else _phases(progress, label),
            )
            state = step.state
            summary = step.summary()
            total += float(summary["counterfeits"]) + float(summary["deferred"])
            error = query_error(microdata, step.release.published, step.release.counterfeits,
                                schema, count=queries, seed=seed)
            records.append({
                "pipeline": mode,
                "release": summary["release"],
                "counterfeits": summary["counterfeits"],
                "deferred": summary["deferred"],
                "mean_perimeter": summary["mean_perimeter"],
                "query_error": error,
                "status": summary["status"],
                "objective": summary["objective"],
                "bound": summary["bound"],
                "gap": summary["gap"],
                "counts_status": summary.get("counts_status"),
                "cost": summary.get("cost"),
                "cost_status": summary.get("cost_status"),
                "cost_bound": summary.get("cost_bound"),
                "cost_gap": summary.get("cost_gap"),
                "grouping_status": summary["grouping_status"],
                "grouping_gap": summary["grouping_gap"],
                "wall_time_s": summary["wall_time_s"],
            })
        finals[mode] = (total, state)
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    if offline_time_limit > 0:
        if progress is not None:
            progress("offline optimum of the series", True)
        best = min(finals, key=lambda mode: finals[mode][0])
        found = offline_optimum(series, schema, m, eligibility=eligibility,
                                time_limit=offline_time_limit, workers=workers, seed=seed,
                                state=finals[best][1])
        frame.attrs["offline"] = offline_summary(found, {k: v[0] for k, v in finals.items()})
    return frame


def offline_summary(found: OfflineOptimum, chains: dict[str, float]) -> dict[str, object]:
    """The offline optimum beside the chains' totals of (a) (``offline.json``)."""
    solution = found.solution
    return {
        "objective_name": "counterfeits + 1·deferrals, summed over the series",
        "status": solution.status, "objective": solution.objective, "bound": solution.bound,
        "gap": solution.gap, "exact_for_chain": found.exact_for_chain,
        "counterfeits": solution.counterfeits, "withheld": solution.withheld,
        "variables": solution.variables, "wall_time_s": solution.wall_time_s,
        "chains": chains,
    }


def _phases(progress: Callable[[str, bool], None], label: str) -> Callable[[str], None]:
    return lambda phase: progress(f"{label}: {phase}", False)


def plot_comparison(frame: pd.DataFrame, path: str | Path) -> Path:
    """Counterfeits and mean perimeter per release, one line per pipeline, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    path = Path(path)
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    try:
        for pipeline, rows in frame.groupby("pipeline", sort=False):
            left.plot(rows["release"], rows["counterfeits"], marker="o", label=str(pipeline))
            right.plot(rows["release"], rows["mean_perimeter"], marker="o", label=str(pipeline))
        for axis, label in ((left, "counterfeits"), (right, "mean perimeter")):
            axis.set_xlabel("release")
            axis.set_ylabel(label)
            axis.set_xticks(sorted(frame["release"].unique()))
            axis.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)
    return path
