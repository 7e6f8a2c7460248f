"""The report page and its files: ``report.html`` (self-contained: plots embedded as
base64 PNG), the same plots as PNG files beside it, ``releases.csv`` (the figures of every
release), and, away from them, the private list of deferred identifiers.

The page holds public figures only: no identifier, no row, no value of any row. A short
inline script marks the root element once the page has loaded (``data-plots``: plots
drawn / plots on the page; ``data-errors``: script or image errors caught), so that a
headless browser can check the rendering.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import math
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from republish.report.plots import PLOTS, render_plots
from republish.report.series import StoreReport

__all__ = ["DEFERRED_SUFFIX", "ReportFiles", "deferred_path", "render_page", "write_deferred",
           "write_report"]

#: The private deferred list is written beside the store: ``<store>`` + this suffix.
DEFERRED_SUFFIX = ".deferred.csv"
PAGE, TABLE = "report.html", "releases.csv"


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`write_report` wrote the page, its plots and the figures table."""

    html: Path
    plots: tuple[Path, ...]
    table: Path


def deferred_path(store: Path) -> Path:
    """The default private file of deferred identifiers: beside the store."""
    return store.with_name(store.name + DEFERRED_SUFFIX)


def _cell(value: Any, kind: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "%":
        return f"{100 * float(value):.1f} %"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


#: Page sections: title, (column, header, kind) rows of the table, plot stems, note.
SECTIONS: tuple[tuple[str, tuple[tuple[str, str, str], ...], tuple[str, ...], str], ...] = (
    ("Rows and movements", (
        ("rows", "rows of T(n)", ""), ("published_rows", "real rows published", ""),
        ("new", "new", ""), ("deleted", "deleted", ""), ("reinserted", "re-inserted", ""),
        ("groups", "groups", ""), ("wall_time_s", "time (s)", "")),
     ("movements",), "New rows count those never published before (deferred ones included)."),
    ("Counterfeits and deferrals", (
        ("counterfeits", "counterfeits", ""), ("counterfeit_share", "share of T*(n)", "%"),
        ("deferred", "deferred", ""), ("deferred_share", "share of T(n)", "%"),
        ("substitutions", "substitutions", "")),
     ("counterfeits",), "Counterfeits are fake published rows; deferred rows of T(n) were "
     "held back from the release (their identifiers are not in this report)."),
    ("Certificates", (
        ("status", "release status", ""), ("counts_status", "(a) status", ""),
        ("objective", "(a) objective", ""), ("bound", "(a) bound", ""), ("gap", "(a) gap", ""),
        ("cost_status", "(b) status", ""), ("cost", "(b) objective", ""),
        ("cost_bound", "(b) bound", ""), ("cost_gap", "(b) gap", "")),
     ("certificates",), "The objective is lexicographic: (a) first, then (b) given (a). "
     "A bound is a proven lower bound; the gap is (objective − bound) / max(|objective|, 1)."),
    ("Information loss", (("cost", "release cost (b)", ""), ("ncp", "NCP", "")),
     ("information_loss",), "NCP: mean normalized width of the published interval, per real "
     "row and QI, in [0, 1] (0: exact values, 1: the whole range). Per-QI widths below."),
    ("Query error", (("query_error", "median relative error", ""),), ("query_error",),
     "Random COUNT(*) queries over the QIs and the sensitive attribute, answered exactly on "
     "the real rows published and estimated from T*(n) and R(n); median of "
     "|actual − estimate| / actual over the queries with a non-zero actual answer."),
    ("Achieved k and l", (("k", "k", ""), ("l", "l", ""), ("l_distinct", "distinct l", "")),
     ("k_l",), "k: smallest equivalence class of T*(n) (rows of a group with identical QI "
     "cells; counterfeits included); l: largest l for which no sensitive value fills more "
     "than |G|/l rows of a group G; distinct l: fewest distinct sensitive values in a group."),
    ("Re-identification risk", (
        ("risk_highest", "prosecutor: highest", "%"), ("risk_average", "prosecutor: average",
                                                       "%"),
        ("records_at_risk", "records above threshold", "%"),
        ("individuals", "individuals so far", ""), ("vulnerable", "vulnerable", ""),
        ("audit_highest_risk", "audit: highest risk", "%")),
     ("risk",), "Prosecutor risk as ARX reports it: a record in an equivalence class C is "
     "re-identified with probability 1/|C|. The intersection audit attacks releases 1..n with full "
     "knowledge of who is in which release; vulnerable individuals have one sensitive value "
     "left, the highest risk is 1 / the smallest candidate set."),
)

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #bbb;padding:.2em .6em;text-align:right}
th{background:#eee} caption{text-align:left;font-weight:bold}
img{max-width:100%;height:auto;display:block} p.note{color:#555;max-width:60em}
"""

_SCRIPT = """
(function () {
  var root = document.documentElement, errors = 0;
  window.addEventListener("error", function () {
    errors += 1; root.setAttribute("data-errors", String(errors));
  }, true);
  window.addEventListener("load", function () {
    var images = Array.prototype.slice.call(document.images);
    var drawn = images.filter(function (i) { return i.complete && i.naturalWidth > 0; });
    root.setAttribute("data-plots", drawn.length + "/" + images.length);
    root.setAttribute("data-errors", String(errors));
  });
})();
"""


def _table(frame: pd.DataFrame, columns: tuple[tuple[str, str, str], ...]) -> str:
    shown = [c for c in columns if c[0] in frame.columns and frame[c[0]].notna().any()]
    head = "<tr><th>release</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in shown)
    body = []
    for _, row in frame.iterrows():
        cells = "".join(f"<td>{_cell(row[c], kind)}</td>" for c, _, kind in shown)
        body.append(f"<tr><td>{_cell(row['release'])}</td>{cells}</tr>")
    return f"<table>{head}</tr>{''.join(body)}</table>"


def _image(stem: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    caption = html.escape(PLOTS[stem])
    return (f'<figure><img id="plot-{stem}" src="data:image/png;base64,{data}" '
            f'alt="{caption}"><figcaption>{caption}</figcaption></figure>')


def render_page(report: StoreReport, plots: dict[str, bytes], deferred_file: str | None) -> str:
    """The HTML text of the report (public figures only)."""
    frame = report.releases
    names = sorted({str(n) for n in frame["objective_name"].dropna()})
    intro = (
        f"<p>Store <code>{html.escape(report.store)}</code>: principle "
        f"{html.escape(report.principle)}, m = {report.m}, {len(frame)} release(s). "
        f"Objective: {html.escape('; '.join(names) or '–')}. Query workload: "
        f"{report.queries} queries of expected selectivity {report.selectivity:g} "
        f"(seed {report.seed} + n). Risk threshold: {report.threshold:g}. Generated "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Definitions: docs/report.md "
        "of republish.</p>"
    )
    total = int(frame["deferred"].sum()) if len(frame) else 0
    if total:
        where = (f"the private file <code>{html.escape(deferred_file)}</code> beside the "
                 "store (never publish it)" if deferred_file else "the store only")
        intro += (f"<p>Deferred rows over the series: {total}; their identifiers are not in "
                  f"this report but in {where}.</p>")
    else:
        intro += "<p>No row was deferred.</p>"
    parts = [intro]
    for title, columns, stems, note in SECTIONS:
        parts.append(f"<h2>{html.escape(title)}</h2><p class=note>{html.escape(note)}</p>")
        parts.append(_table(frame, columns))
        if title == "Information loss":
            widths = tuple((w, f"width {w.removeprefix('width_')}", "")
                           for w in report.width_columns)
            parts.append(_table(frame, widths))
        parts.extend(_image(stem, plots[stem]) for stem in stems if stem in plots)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>republish report: {html.escape(report.store)}</title>"
        f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>"
        f"<h1>Release report</h1>{''.join(parts)}</body></html>\n"
    )


def write_report(report: StoreReport, folder: Path,
                 deferred_file: str | None = None) -> ReportFiles:
    """Write ``report.html``, one PNG per plot and ``releases.csv`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    plots = render_plots(report)
    written = []
    for stem, png in plots.items():
        path = folder / f"{stem}.png"
        path.write_bytes(png)
        written.append(path)
    table = folder / TABLE
    report.releases.to_csv(table, index=False)
    page = folder / PAGE
    page.write_text(render_page(report, plots, deferred_file), encoding="utf-8")
    return ReportFiles(html=page, plots=tuple(written), table=table)


def write_deferred(report: StoreReport, path: Path) -> Path | None:
    """Write the private deferred list to ``path``: columns ``release,identifier``, one line
    per deferred row, owner-only permissions, replaced whole (the same file ``republish
    release`` keeps beside the store). ``None`` (and no file) when nothing was deferred."""
    if not len(report.deferred):
        return None
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["release", "identifier"])
    writer.writerows(report.deferred[["release", "identifier"]].itertuples(index=False))
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text.getvalue())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path
