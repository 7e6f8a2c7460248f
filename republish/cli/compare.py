"""``republish compare``: heuristic vs exact m-invariant pipelines on one dynamic series.

``--series initial=400,r=50,releases=3`` builds ``T(1), ..., T(releases)`` from DATA
(m-invariance paper, §5). Writes ``compare.csv`` and ``compare.png`` into ``-o`` and
prints a table, or with ``--json`` (``--format json``) one JSON list with one object per
pipeline and release (the columns of :data:`republish.solver.compare.COLUMNS`), or with
``--format csv`` the rows of ``compare.csv``. Progress goes to stderr
(:mod:`republish.cli.progress`). The columns: docs/formats.md.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from republish.api import defaults
from republish.cli.app import MAX_WORKERS, app, check_finite, check_range, console, print_json
from republish.cli.store_commands import (
    DEFAULT_ELIGIBILITY,
    MAX_SEED,
    MAX_TIME_LIMIT,
    Eligibility,
    TableFormat,
    print_csv,
)
from republish.errors import InputError
from republish.excerpts import excerpt

if TYPE_CHECKING:
    import pandas as pd

_SERIES_KEYS = ("initial", "r", "releases")
#: Largest value of each --series item (rows, rows per release, releases).
MAX_SERIES = {"initial": 10**8, "r": 10**8, "releases": 1000}
_SERIES_FORM = "initial=N,r=N,releases=N (e.g. initial=400,r=50,releases=3)"


def parse_series(text: str) -> dict[str, int]:
    """``initial=400,r=50,releases=3`` -> ``{"initial": 400, "r": 50, "releases": 3}``."""
    values: dict[str, int] = {}
    for item in text.split(","):
        key, sign, number = item.partition("=")
        key = key.strip()
        if not sign or key not in _SERIES_KEYS or key in values:
            raise InputError(f"--series {excerpt(text)}: expected {_SERIES_FORM}; "
                             f"item {excerpt(item.strip())} is unknown, repeated or lacks '='.")
        digits = number.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,12}", digits):
            raise InputError(f"--series {excerpt(text)}: {key}={excerpt(digits)} is not an "
                             f"integer; expected {_SERIES_FORM}.")
        values[key] = int(digits)
    for key, value in values.items():
        if not 1 <= value <= MAX_SERIES[key]:
            raise InputError(f"--series {excerpt(text)}: {key}={value} must be between 1 and "
                             f"{MAX_SERIES[key]:,}.")
    missing = [key for key in _SERIES_KEYS if key not in values]
    if missing:
        raise InputError(f"--series {excerpt(text)}: missing {', '.join(missing)}; expected "
                         f"{_SERIES_FORM}.")
    return values


def _plain(value: Any) -> Any:
    """NaN (a missing bound or gap, or an undefined query error) becomes JSON null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _cell(value: Any, digits: int = 4) -> str:
    value = _plain(value)
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _render(frame: pd.DataFrame, directory: Path) -> None:
    from rich.table import Table

    table = Table("pipeline", "release", "counterfeits", "deferred", "mean_perimeter",
                  "query_error", "status", "objective", "bound", "gap", "grouping_status",
                  "grouping_gap", "wall_time_s")
    for row in frame.itertuples(index=False):
        table.add_row(
            str(row.pipeline), str(row.release), str(row.counterfeits), str(row.deferred),
            _cell(row.mean_perimeter), _cell(row.query_error), str(row.status),
            _cell(row.objective), _cell(row.bound), _cell(row.gap),
            _cell(row.grouping_status), _cell(row.grouping_gap), _cell(row.wall_time_s, 3),
        )
    console.print(table)
    offline = frame.attrs.get("offline")
    if offline is not None:
        chains = ", ".join(f"{name} {total:g}" for name, total in offline["chains"].items())
        best = "none found" if offline["objective"] is None else f"{offline['objective']:g}"
        kind = "optimum" if offline["exact_for_chain"] else "bound (withholding any row)"
        console.print(
            f"offline {kind} of Σ (counterfeits + deferrals) over the series: best {best}, "
            f"proven bound {offline['bound']:g}, status {offline['status']} "
            f"({offline['variables']} variables, {offline['wall_time_s']:.1f} s); "
            f"online chains: {chains}", markup=False)
    written = "compare.csv, compare.png" + (", offline.json" if offline is not None else "")
    console.print(f"wrote {written} in {directory}", markup=False)


@app.command("compare")
def compare(
    data: Annotated[Path, typer.Argument(help="Data file (CSV/Parquet) the series is drawn from.")],
    schema_path: Annotated[Path, typer.Option("--schema", help="schema.toml describing DATA.")],
    m: Annotated[int, typer.Option("--m", help="m-invariance parameter m (>= 2).")],
    series_text: Annotated[
        str, typer.Option("--series", help=f"Dynamic series: {_SERIES_FORM}.")
    ],
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Seconds per release step of the exact pipeline "
                     "(one budget for all its models).")
    ] = defaults.TIME_LIMIT,
    offline_time_limit: Annotated[
        float, typer.Option("--offline-time-limit", help="Seconds for the offline optimum of "
                            "the whole series (the least total of counterfeits + deferrals any "
                            "policy reaches), started from the better chain; 0 skips it.")
    ] = defaults.TIME_LIMIT,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the series and both pipelines.")] = 0,
    workers: Annotated[
        int, typer.Option("--workers", help="Cores the exact pipeline may use: CP-SAT's "
                          "workers, and from 2 a release above 2,000 rows computes its bound "
                          "on the generalization cost in a second process beside its search, "
                          "as does a first release whose m-row relaxation would not get "
                          "its time in the process, and a smaller later release whose "
                          "columns do not fit in a table.")
    ] = 1,
    eligibility: Annotated[
        Eligibility,
        typer.Option("--eligibility", help="What makes leftover new rows m-eligible in both "
                     "pipelines: counterfeits, deferrals (delete) or both (hybrid)."),
    ] = DEFAULT_ELIGIBILITY,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Folder for compare.csv and compare.png.")
    ] = Path("."),
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON list "
                                              "(= --format json).")] = False,
    fmt: Annotated[
        TableFormat,
        typer.Option("--format", help="table (for people), csv (the rows of compare.csv) or "
                     "json (as --json)."),
    ] = TableFormat.table,
) -> None:
    """Run the heuristic and the exact m-invariant pipelines side by side on one series.

    Progress on stderr: one line per pipeline and release when piped, a bar on a terminal.
    """
    from republish.cli.progress import progress
    from republish.parameters import validate_m
    from republish.schema import load_schema
    from republish.solver.compare import compare_pipelines, plot_comparison
    from republish.tables import load_table

    check_finite(time_limit, "--time-limit", positive=True, maximum=MAX_TIME_LIMIT)
    check_range(seed, "--seed", 0, MAX_SEED)
    check_range(workers, "--workers", 1, MAX_WORKERS)
    if offline_time_limit != 0:
        check_finite(offline_time_limit, "--offline-time-limit", positive=True,
                     maximum=MAX_TIME_LIMIT)
    validate_m(m)
    series = parse_series(series_text)
    if output.exists() and not output.is_dir():
        raise InputError(f"-o {output}: exists and is not a folder; give a folder path.")
    schema = load_schema(schema_path)
    table = load_table(data, schema)
    with progress("compare", total=2 * series["releases"] + (offline_time_limit > 0)) as report:

        def show(text: str, step: bool) -> None:
            (report.step if step else report.phase)(text)

        frame = compare_pipelines(table, schema, m, series["initial"], series["r"],
                                  series["releases"], time_limit, seed,
                                  eligibility=eligibility.value, workers=workers, progress=show,
                                  offline_time_limit=offline_time_limit)
    if output.exists() and not output.is_dir():
        raise InputError(f"-o {output}: exists and is not a folder; give a folder path.")
    output.mkdir(parents=True, exist_ok=True)
    frame.to_csv(output / "compare.csv", index=False)
    plot_comparison(frame, output / "compare.png")
    if "offline" in frame.attrs:
        import json

        (output / "offline.json").write_text(
            json.dumps(frame.attrs["offline"], indent=2, default=_plain, ensure_ascii=False) + "\n",
            encoding="utf-8")
    records = [{key: _plain(value) for key, value in record.items()}
               for record in frame.to_dict(orient="records")]
    if json_output or fmt is TableFormat.json:
        print_json(records)
    elif fmt is TableFormat.csv:
        print_csv(records)
    else:
        _render(frame, output)
