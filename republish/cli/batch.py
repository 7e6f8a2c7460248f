"""``republish batch`` and ``republish batch-report``: many instances in one run.

Exit codes: 0 every instance ran (OPTIMAL, FEASIBLE, INFEASIBLE or TIMEOUT are answers);
1 an instance ended in ERROR or an answer failed its independent verification (the
table holds every row all the same); 2 bad manifest or usage; 130 the batch was
interrupted (finished instances are kept: rerun with ``--resume``).

Heavy modules (pandas, the batch runner, matplotlib) are imported inside the commands.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from republish.cli.app import (
    MAX_TIME_LIMIT,
    MAX_WORKERS,
    app,
    check_finite,
    check_range,
    console,
    error_console,
    fail,
    print_json,
)
from republish.errors import ParameterError, RepublishError

if TYPE_CHECKING:
    import pandas as pd

    from republish.batch.execute import BatchProgress

#: Exit code of a batch where an instance ended in ERROR or failed verification.
EXIT_FAILED_INSTANCE = 1


def _counts_text(progress: BatchProgress) -> str:
    return (
        f"{progress.done}/{progress.total} done · {progress.running} running · "
        f"{progress.failed} failed · {progress.timeouts} timed out"
    )


@app.command("batch")
def batch(
    manifest: Annotated[
        Path, typer.Argument(help="Batch manifest (TOML): [defaults], [[instance]] entries.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Results table (.csv or .parquet).")
    ],
    workers: Annotated[int, typer.Option("--workers", "-w", help="Local worker processes.")] = 2,
    time_limit: Annotated[
        float | None,
        typer.Option("--time-limit", help="Wall-clock budget in seconds for one instance "
                     "where the manifest sets none (default 60); the same budget as the "
                     "instance's command's --time-limit."),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Dask scheduler address (tcp://HOST:PORT); needs the "
                     "'dask' extra. Default: local worker processes."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Keep the instances already in OUTPUT or its journal.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="With --resume, run ERROR instances again.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing OUTPUT and its journal.")
    ] = False,
    kill_margin: Annotated[
        float | None,
        typer.Option("--kill-margin", help="Seconds past an instance's time limit before its "
                     "worker is killed (default 5 + half the limit)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    r"""Solve every instance of MANIFEST and write one results row per instance.

    Manifest: a \[defaults] table and \[\[instance]] entries; a list is a sweep: m = \[2, 4].

    Problems: eligibility, ldiv, release-series, group-formation, compare, selftest.

    Past its time limit plus the kill margin an instance is TIMEOUT; a crash is ERROR.

    Exit 1 when an instance ends in ERROR or fails verification (the table is written).

    Finished rows are journaled next to OUTPUT, so --resume continues an interrupted batch.
    """
    from republish.batch.execute import run_batch
    from republish.batch.manifest import load_manifest
    from republish.cli.progress import progress

    try:
        check_range(workers, "--workers", 1, MAX_WORKERS)
        check_finite(time_limit, "--time-limit", positive=True, maximum=MAX_TIME_LIMIT)
        if kill_margin is not None and not (math.isfinite(kill_margin) and kill_margin >= 0):
            raise ParameterError(f"--kill-margin {kill_margin}: must be a non-negative number.")
        loaded = load_manifest(manifest, time_limit=time_limit)
    except RepublishError as exc:
        fail(str(exc))
        return
    if loaded.duplicates:
        error_console.print(f"note: {loaded.duplicates} duplicate instance(s) ignored.")
    # a bar on a terminal, plain lines on stderr otherwise (republish.cli.progress)
    with progress("batch", total=len(loaded.instances)) as reporter:
        shown = [0]

        def show(state: BatchProgress) -> None:
            text = _counts_text(state)
            while shown[0] < state.done:  # the bar advances by finished instances
                shown[0] += 1
                reporter.step(text)
            reporter.phase(text)

        try:
            result = run_batch(
                loaded, output, workers=workers, scheduler=scheduler, resume=resume,
                retry_failed=retry_failed, overwrite=overwrite, margin=kill_margin,
                on_progress=show,
            )
        except RepublishError as exc:
            fail(str(exc))
            return
        except KeyboardInterrupt:
            error_console.print(
                f"interrupted: finished instances are in {output}; rerun with --resume."
            )
            raise typer.Exit(130) from None
    frame = result.frame
    statuses = {str(k): int(v) for k, v in frame["status"].value_counts().items()}
    unverified = int((frame["verified"] == False).sum())  # noqa: E712 (nullable column)
    summary: dict[str, Any] = {
        "output": str(output), "instances": len(loaded.instances), "computed": result.computed,
        "skipped": result.skipped, "statuses": statuses, "unverified": unverified,
    }
    if json_output:
        print_json(summary)
    else:
        console.print(
            f"{len(frame)} rows written to {output} ({result.computed} computed, "
            f"{result.skipped} from an earlier run); statuses: "
            + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            markup=False,
        )
        for row in frame[frame["status"] == "ERROR"].head(5).itertuples():
            console.print(f"  error in instance {row.index}: {row.error}", markup=False)
    errors = statuses.get("ERROR", 0)
    if errors:
        error_console.print(f"{errors} instance(s) ended in ERROR (column 'error' of {output}).",
                            markup=False)
    if unverified:
        error_console.print(f"{unverified} answer(s) failed verification (column 'verified').")
    if errors or unverified:
        raise typer.Exit(EXIT_FAILED_INSTANCE)


#: Short headers of the report tables (terminals are narrow).
_HEADERS = {"instances": "n", "optimal": "opt", "feasible": "feas", "timeout": "t/o",
            "infeasible": "infeas", "error": "err", "mean_gap": "gap", "time_p50_s": "p50 s",
            "time_p90_s": "p90 s", "time_max_s": "max s", "at_optimum": "at opt",
            "mean_ratio": "mean ratio", "max_ratio": "max ratio", "mean_excess": "excess"}


def _show(title: str, frame: pd.DataFrame) -> None:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, padding=(0, 1, 0, 0))
    for position, column in enumerate(frame.columns):
        table.add_column(_HEADERS.get(str(column), str(column)), no_wrap=position < 2)
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(cell) for cell in row))
    console.print(table)
    console.print()


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:.4g}"
    return str(value)


@app.command("batch-report")
def batch_report(
    results: Annotated[
        Path, typer.Argument(help="Results table written by 'republish batch'.")
    ],
    figures: Annotated[
        Path | None,
        typer.Option("--figures", help="Directory for the PNG plots (default: next to RESULTS)."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the summaries as JSON.")
    ] = False,
) -> None:
    """Summarize a batch: per method solved to optimality, mean gap, time percentiles."""
    # matplotlib is imported only by the command that draws (a faster start for the others)
    from republish.batch.report import (
        comparison_summary,
        method_summary,
        optimum_comparison,
        plot_optimum_comparison,
        plot_time_vs_size,
    )
    from republish.batch.results import read_results

    try:
        frame = read_results(results)
    except RepublishError as exc:
        fail(str(exc))
        return
    summary = method_summary(frame)
    comparison = optimum_comparison(frame)
    against = comparison_summary(comparison)
    folder = figures if figures is not None else results.parent
    stem = results.name.split(".")[0]
    paths = [
        plot_optimum_comparison(comparison, folder / f"{stem}-heuristic-vs-optimum.png"),
        plot_time_vs_size(frame, folder / f"{stem}-time-vs-size.png"),
    ]
    if json_output:
        print_json({
            "methods": _records(summary),
            "optimum_comparison": _records(against),
            "figures": [str(p) for p in paths],
        })
        return
    for problem, rows in summary.groupby("problem", sort=True):
        _show(f"{problem}: {int(rows['instances'].sum())} instances by method",
              rows.drop(columns=["problem"]))
    if len(against):
        _show("Against the optimum of the same input (ratio = objective / optimum)",
              against.drop(columns=["problem"]))
    else:
        console.print("no case has a proven optimum to compare with.")
    for path in paths:
        console.print(f"wrote {path}", markup=False)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    cleaned = frame.astype(object).where(frame.notna(), None)
    records: list[dict[str, Any]] = cleaned.to_dict("records")
    for record in records:
        for key, value in record.items():
            if isinstance(value, float) and not math.isfinite(value):
                record[key] = None
    return records
