"""``republish report --store S.db -o report/``: a self-contained HTML page on every release.

Writes ``report/report.html`` (plots embedded), the plots as PNG files and
``report/releases.csv`` beside it, all public figures; the identifiers of deferred rows go
to a separate private file beside the store (``S.db.deferred.csv``, or ``--deferred``).
Definitions: ``docs/report.md``. Exit codes: 0 success; 2 bad input or usage.

Heavy modules (pandas, matplotlib, the store) are imported inside the command, so that
``republish --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from republish.cli.app import app, check_finite, console, error_console, print_json
from republish.errors import InputError

#: Default threshold of "records at risk" (kept equal to republish.report.risk's).
RISK_THRESHOLD = 0.2


def _note(message: str) -> None:
    error_console.print(f"note: {message}", markup=False, soft_wrap=True)


@app.command("report")
def report(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder for report.html, its PNG plots and "
                           "releases.csv (created if missing; files of an earlier report are "
                           "replaced).")
    ],
    deferred: Annotated[
        Path | None,
        typer.Option("--deferred", help="Private CSV of the deferred identifiers (default: "
                     "beside the store, STORE.deferred.csv). Never publish it."),
    ] = None,
    queries: Annotated[
        int, typer.Option("--queries", min=0, help="Random COUNT(*) queries per release for "
                          "the query error (0: skip it).")
    ] = 1000,
    selectivity: Annotated[
        float, typer.Option("--selectivity", help="Expected selectivity of each query, in "
                            "(0, 1].")
    ] = 0.1,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the query workload (release n uses seed + n); "
                          "the report is reproducible.")
    ] = 0,
    risk_threshold: Annotated[
        float, typer.Option("--risk-threshold", help="Records at risk: share of records whose "
                            "prosecutor risk 1/|G| is above this threshold, in [0, 1].")
    ] = RISK_THRESHOLD,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: the files written and the "
                           "figures of every release.")
    ] = False,
) -> None:
    """Write a self-contained HTML report on every release of a store (public figures only)."""
    check_finite(selectivity, "--selectivity", positive=True, maximum=1.0)
    check_finite(risk_threshold, "--risk-threshold", minimum=0.0, maximum=1.0)
    import json

    from republish.cli.progress import progress
    from republish.report.html import deferred_path, write_deferred, write_report
    from republish.report.series import store_report
    from republish.store import ReleaseStore

    if output.exists() and not output.is_dir():
        raise InputError(f"-o {str(output)!r} exists and is not a folder; give a folder.")
    private = deferred if deferred is not None else deferred_path(store)
    with ReleaseStore.open(store) as opened:
        numbers = opened.release_numbers()
        if not numbers:
            raise InputError(f"the store {str(store)!r} holds no release yet; publish one with "
                             "'republish release' first.")
        with progress("report", total=len(numbers) + 1) as reporter:

            def measured(done: int, total: int) -> None:
                reporter.step(f"release {done} of {total} measured")

            figures = store_report(opened, queries=queries, selectivity=selectivity,
                                   seed=seed, threshold=risk_threshold, progress=measured)
            reporter.step("intersection audit done; drawing the plots")
            written_private = write_deferred(figures, private)
            files = write_report(figures, output, deferred_file=None if written_private is None
                                 else private.name)
    if written_private is not None and output.resolve() in private.resolve().parents:
        _note(f"the private deferred list {private} is inside the report folder {output}; "
              "move it out before publishing the folder.")
    if as_json:
        print_json({
            "html": str(files.html), "plots": [str(p) for p in files.plots],
            "table": str(files.table),
            "deferred_file": None if written_private is None else str(written_private),
            "deferred": len(figures.deferred),
            "releases": json.loads(figures.releases.to_json(orient="records")),
        })
        return
    console.print(f"wrote {files.html} ({len(figures.releases)} release(s), "
                  f"{len(files.plots)} plots) and {files.table}", markup=False)
    if written_private is not None:
        console.print(f"private: {len(figures.deferred)} deferred identifier(s) in "
                      f"{written_private} (never publish this file)", markup=False)
    else:
        console.print("no row was deferred: no private file written", markup=False)
