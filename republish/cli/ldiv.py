"""``republish ldiv``: a static l-diverse table with minimum suppression.

Reads microdata and its schema, partitions the rows into l-eligible QI-groups with the
chosen method (see :mod:`republish.solver.ldiversity`), verifies the result and writes
the published table (``group``, QIs in schema order, SA; no identifier; rows in random
order). The schema may omit ``id``: the rows are then numbered (the identifier is never
published). Exit codes: 0 success; 2 bad input or usage, including a table that is not
l-eligible (no l-diverse generalization exists).

Heavy modules (pandas, the solver) are imported inside the command, so ``republish
--help`` starts fast.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from republish.cli.app import (
    MAX_SEED,
    MAX_TIME_LIMIT,
    MAX_WORKERS,
    TIME_LIMIT_HELP,
    app,
    check_finite,
    check_range,
    console,
    fail,
    print_json,
)
from republish.errors import InputError, RepublishError

if TYPE_CHECKING:
    import pandas as pd

    from republish.schema import Schema
    from republish.solver.ldiversity import LDiversitySolution

__all__ = ["MAX_WORKERS", "Method", "Rendering", "ldiv"]

#: What a method minimizes (its objective), named in each rendering's terms: a star of
#: the suppression model is a generalized cell (a range or an ancestor label) of the
#: interval model, a suppressed tuple a generalized one.
OBJECTIVES = {
    ("tuples", "suppression"): "suppressed tuples", ("stars", "suppression"): "stars",
    ("tuples", "interval"): "generalized tuples", ("stars", "interval"): "generalized cells",
}


class Method(StrEnum):
    tp = "tp"
    tp_plus = "tp+"
    mondrian = "mondrian"
    exact = "exact"
    exact_stars = "exact-stars"
    matching = "matching"
    auto = "auto"


class Rendering(StrEnum):
    suppression = "suppression"
    interval = "interval"


def _refuse_existing(frame_path: Path, overwrite: bool) -> None:
    """An existing OUTPUT (or a symbolic link there) is refused without ``--overwrite``."""
    if os.path.lexists(frame_path) and not overwrite:
        kind = "a symbolic link" if frame_path.is_symlink() else "a file"
        raise InputError(f"-o {str(frame_path)!r} already exists ({kind}); pass --overwrite "
                         "to replace it, or choose another path.")


def _write(frame_path: Path, frame: pd.DataFrame, overwrite: bool) -> None:
    """Write the published table whole or not at all; CSV cells neutralized against
    formula injection (docs/formats.md). An existing OUTPUT (or a symbolic link there) is
    refused without ``--overwrite``; with it, the file itself is replaced (a link is
    replaced by the file, its target is never written)."""
    from republish.release_files import frame_bytes, write_file_durably

    _refuse_existing(frame_path, overwrite)
    if frame_path.is_dir() and not frame_path.is_symlink():
        raise InputError(f"-o {str(frame_path)!r} is a folder; give a file path such as "
                         "published.csv.")
    fmt = "parquet" if frame_path.suffix.lower() in (".parquet", ".pq") else "csv"
    frame_path.parent.mkdir(parents=True, exist_ok=True)
    write_file_durably(frame_path, frame_bytes(frame, fmt))


#: The command's help (one string: rich would keep a docstring's line breaks).
LDIV_HELP = (
    "Publish DATA as an l-diverse table with few suppressed tuples or stars.\n\n"
    "Prints the objective the method minimized (suppressed tuples, or stars), the metrics of "
    "the rendering (--model suppression: stars and suppressed tuples; --model interval: "
    "generalized cells, generalized tuples and NCP), the lower bound on suppressed tuples "
    "(Corollary 5.10 of the l-diversity paper), the status (OPTIMAL when the objective is "
    "proven minimal) and its proof, and the time.\n\n"
    "DATA is read with the schema's delimiter, or the detected one (, ; tab |); a schema "
    "without 'id' numbers the rows (no identifier is ever published).\n\n"
    "A table where one SA value fills more than n/l rows has no l-diverse generalization: "
    "that is an error (exit 2); see 'republish eligibility'."
)


@app.command("ldiv", help=LDIV_HELP)
def ldiv(
    data: Annotated[Path, typer.Argument(help="Microdata (CSV or Parquet).")],
    schema: Annotated[Path, typer.Option("--schema", "-s", help="schema.toml of the data.")],
    l: Annotated[  # noqa: E741 - the paper's symbol
        int, typer.Option("--l", "-l", help="l: no SA value above |G|/l of any QI-group.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Published table (.csv, or .parquet).")
    ],
    method: Annotated[
        Method,
        typer.Option(
            "--method",
            help="Objective suppressed tuples: tp, tp+ (TP then Mondrian on the residue), "
            "mondrian, exact (CP-SAT), auto (TP, then the exact tuple model, then Mondrian "
            "on the residue). Objective stars: exact-stars (CP-SAT, small tables), "
            "matching (l=2, two SA values).",
        ),
    ] = Method.auto,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help=TIME_LIMIT_HELP)
    ] = 10.0,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed of CP-SAT, group numbers and row order (default 0: a rerun "
        "gives the same table).")] = 0,
    workers: Annotated[int, typer.Option("--workers", help="CP-SAT worker threads.")] = 2,
    rendering: Annotated[
        Rendering,
        typer.Option("--model", help="Render QI-groups with '*' (suppression) or ranges."),
    ] = Rendering.suppression,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON document {stars, suppressed_tuples, "
                     "lower_bound, status, phase, time_s, method, objective, model, ncp, "
                     "...}; stars and suppressed_tuples count the partition's generalized "
                     "cells and rows whatever --model renders."),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace OUTPUT if it exists (the file "
                           "itself: a symbolic link is replaced, never followed).")
    ] = False,
) -> None:
    """Publish DATA as an l-diverse table (help text: :data:`LDIV_HELP`)."""
    from republish.cli.progress import progress
    from republish.schema import load_schema
    from republish.solver.ldiversity import partition_ncp, publish_l_diverse, solve_l_diversity
    from republish.tables import load_table

    try:
        check_finite(time_limit, "--time-limit", positive=True, maximum=MAX_TIME_LIMIT)
        check_range(workers, "--workers", 1, MAX_WORKERS)
        check_range(seed, "--seed", 0, MAX_SEED)
        _refuse_existing(output, overwrite)  # the refusal, before any work
        with progress("ldiv") as reporter:
            reporter.phase("reading")
            parsed = load_schema(schema)
            table = load_table(data, parsed)
            reporter.rows(len(table))
            reporter.phase(f"method {method.value} (at most {time_limit:g} s)")
            solution = solve_l_diversity(
                table, parsed, l, method.value, time_limit=time_limit, num_workers=workers,
                seed=seed,
            )
            reporter.phase("writing")
            published = publish_l_diverse(table, parsed, solution, seed=seed,
                                          model=rendering.value)
            _write(output, published, overwrite)
    except RepublishError as exc:
        fail(str(exc))
        return
    summary = _summary(solution, rendering, partition_ncp(table, parsed, solution.groups,
                                                          rendering.value))
    summary["output"] = str(output)
    if json_output:
        print_json(summary)
        return
    for line in _lines(solution, summary, parsed, output):
        console.print(line, markup=False, soft_wrap=True)


def _summary(solution: LDiversitySolution, rendering: Rendering, ncp: float) -> dict[str, Any]:
    """The --json document: the solver's summary plus the rendering and its metrics."""
    summary = solution.summary()
    summary["model"] = rendering.value
    summary["ncp"] = round(ncp, 6)
    if rendering is Rendering.interval:
        summary["generalized_cells"] = solution.stars
        summary["generalized_tuples"] = solution.suppressed_tuples
    return summary


def _lines(solution: LDiversitySolution, summary: dict[str, Any], schema: Schema,
           output: Path) -> list[str]:
    """The human-readable report: objective first, then the rendering's metrics."""
    objective = OBJECTIVES.get((solution.objective, summary["model"]), solution.objective)
    proof = solution.certificate.get("proof")
    lines = [
        f"{solution.l}-diverse table written to {output} ({summary['groups']} QI-groups, "
        f"{summary['rows']} rows, method {solution.method}, {summary['model']} model)",
        f"  objective          {objective} (minimized by method {solution.method})",
    ]
    if summary["model"] == Rendering.interval.value:
        lines += [
            f"  generalized cells  {solution.stars} (a range or an ancestor label)",
            f"  generalized tuples {solution.suppressed_tuples}",
            f"  NCP                {summary['ncp']:.4f} (mean normalized interval length over "
            f"{len(schema.qis)} QIs)",
        ]
    else:
        lines += [
            f"  stars              {solution.stars}",
            f"  suppressed tuples  {solution.suppressed_tuples}",
        ]
    noun = "generalized" if summary["model"] == Rendering.interval.value else "suppressed"
    lines.append(f"  lower bound        {solution.lower_bound} {noun} tuples")
    lines.append(f"  status             {solution.status} for {objective}"
                 + (f": {proof}" if proof else ""))
    if solution.phase is not None:
        lines.append(f"  TP phase           {solution.phase}")
    lines.append(f"  time               {solution.time_s:.3f} s")
    return lines
