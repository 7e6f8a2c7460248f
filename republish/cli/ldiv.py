"""``republish ldiv``: a static l-diverse table with minimum suppression.

Reads microdata and its schema, partitions the rows into l-eligible QI-groups with the
chosen method (see :mod:`republish.solver.ldiversity`), verifies the result and writes
the published table (``group``, QIs in schema order, SA; no identifier; rows in random
order). Exit codes: 0 success; 2 bad input or usage, including a table that is not
l-eligible (no l-diverse generalization exists).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from republish.cli.app import app, check_finite, check_range, console, fail, print_json
from republish.cli.store_commands import MAX_SEED, MAX_TIME_LIMIT
from republish.errors import InputError, RepublishError
from republish.release import frame_bytes, write_file_durably
from republish.schema import load_schema
from republish.solver.ldiversity import publish_l_diverse, solve_l_diversity
from republish.tables import load_table

#: Most CP-SAT worker threads accepted (more is a typo that would exhaust memory).
MAX_WORKERS = 256


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


def _write(frame_path: Path, frame: pd.DataFrame, overwrite: bool) -> None:
    """Write the published table whole or not at all; CSV cells neutralized against
    formula injection (docs/formats.md). An existing OUTPUT (or a symbolic link there) is
    refused without ``--overwrite``; with it, the file itself is replaced (a link is
    replaced by the file, its target is never written)."""
    if os.path.lexists(frame_path) and not overwrite:
        kind = "a symbolic link" if frame_path.is_symlink() else "a file"
        raise InputError(f"-o {str(frame_path)!r} already exists ({kind}); pass --overwrite "
                         "to replace it, or choose another path.")
    if frame_path.is_dir() and not frame_path.is_symlink():
        raise InputError(f"-o {str(frame_path)!r} is a folder; give a file path such as "
                         "published.csv.")
    fmt = "parquet" if frame_path.suffix.lower() in (".parquet", ".pq") else "csv"
    frame_path.parent.mkdir(parents=True, exist_ok=True)
    write_file_durably(frame_path, frame_bytes(frame, fmt))


@app.command("ldiv")
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
            "--method", "-m",
            help="tp, tp+ (TP then Mondrian on the residue), mondrian, exact (tuple "
            "minimization, CP-SAT), exact-stars (star minimization, small tables), matching "
            "(l=2, two SA values), auto.",
        ),
    ] = Method.auto,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Seconds for each CP-SAT solve.")
    ] = 10.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of group numbers and row order.")] = 0,
    workers: Annotated[int, typer.Option("--workers", help="CP-SAT worker threads.")] = 2,
    rendering: Annotated[
        Rendering,
        typer.Option("--model", help="Render QI-groups with '*' (suppression) or ranges."),
    ] = Rendering.suppression,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON document {stars, suppressed_tuples, "
                     "lower_bound, status, phase, time_s, ...}."),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace OUTPUT if it exists (the file "
                           "itself: a symbolic link is replaced, never followed).")
    ] = False,
) -> None:
    """Publish DATA as an l-diverse table with few stars and suppressed tuples.

    Prints stars, suppressed tuples, the lower bound on suppressed tuples (Corollary 5.10
    of the l-diversity paper), the status (OPTIMAL when proven minimal) and its proof,
    and the time. A table where one SA value fills more than n/l rows has no l-diverse
    generalization: that is an error (exit 2); see `republish eligibility`.
    """
    try:
        check_finite(time_limit, "--time-limit", positive=True, maximum=MAX_TIME_LIMIT)
        check_range(workers, "--workers", 1, MAX_WORKERS)
        check_range(seed, "--seed", 0, MAX_SEED)
        if os.path.lexists(output) and not overwrite:
            _write(output, pd.DataFrame(), overwrite)  # the refusal, before any work
        parsed = load_schema(schema)
        table = load_table(data, parsed)
        solution = solve_l_diversity(
            table, parsed, l, method.value, time_limit=time_limit, num_workers=workers,
            seed=seed,
        )
        published = publish_l_diverse(table, parsed, solution, seed=seed,
                                      model=rendering.value)
        _write(output, published, overwrite)
    except RepublishError as exc:
        fail(str(exc))
        return
    summary = solution.summary()
    summary["output"] = str(output)
    if json_output:
        print_json(summary)
        return
    proof = solution.certificate.get("proof")
    lines = [
        f"{l}-diverse table written to {output} ({summary['groups']} QI-groups, "
        f"{summary['rows']} rows, method {solution.method})",
        f"  stars              {solution.stars}",
        f"  suppressed tuples  {solution.suppressed_tuples}",
        f"  lower bound        {solution.lower_bound} suppressed tuples",
        f"  status             {solution.status} ({solution.objective})"
        + (f": {proof}" if proof else ""),
    ]
    if solution.phase is not None:
        lines.append(f"  TP phase           {solution.phase}")
    lines.append(f"  time               {solution.time_s:.3f} s")
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)
