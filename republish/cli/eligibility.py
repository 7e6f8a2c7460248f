"""``republish eligibility``: how many counterfeits and/or deletions make a table m-eligible.

Counts come from ``--counts`` (``5,3,1,1`` or ``FLU=5,ACNE=3,...``) or from the sensitive
column of a data file read with ``--schema``. ``--json`` prints one JSON list, one
object per method, with ``method, objective, counterfeits, deletions, target_counts,
status`` (plus per-value changes, bound and time).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from republish.cli.app import (
    MAX_SEED,
    MAX_TIME_LIMIT,
    TIME_LIMIT_HELP,
    app,
    check_finite,
    check_range,
    console,
    print_json,
)
from republish.errors import InputError, ParameterError
from republish.excerpts import excerpt
from republish.parameters import validate_m

if TYPE_CHECKING:
    from republish.problems.eligibility import EligibilitySolution

#: Largest count of one value accepted by --counts (rows of one table).
MAX_COUNT = 10**12
_ALL = "all"
_RANDOM = "random"


def parse_counts(text: str) -> dict[str, int]:
    """``5,3,1,1`` (values named ``v1, v2, ...``) or ``FLU=5,ACNE=3``."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or not all(items):
        raise InputError(
            f"--counts {text!r}: give comma-separated counts such as 5,3,1,1 or FLU=5,ACNE=3 "
            "(no empty items)."
        )
    counts: dict[str, int] = {}
    for position, item in enumerate(items, start=1):
        name, _, number = item.rpartition("=") if "=" in item else (f"v{position}", "", item)
        name = name.strip()
        digits = number.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", digits):
            raise InputError(
                f"--counts: {excerpt(digits)} (item {position}) is not a non-negative integer."
            )
        count = int(digits)
        if count < 0:
            raise InputError(f"--counts: item {position} is negative ({count}); counts are rows.")
        if count > MAX_COUNT:
            raise InputError(f"--counts: item {position} ({count}) exceeds {MAX_COUNT:.0e} "
                             "rows; check the value.")
        if not name or name in counts:
            raise InputError(
                f"--counts: item {position} repeats or lacks the value name {excerpt(name)}.")
        counts[name] = count
    return counts


def _render(solutions: list[EligibilitySolution], counts: dict[str, int]) -> None:
    from rich.table import Table

    total = sum(counts.values())
    console.print(f"{len(counts)} sensitive values, {total} rows, m = {solutions[0].m}")
    table = Table("method", "counterfeits", "deletions", "objective", "status", "time (ms)",
                  "target counts")
    for solution in solutions:
        targets = ", ".join(f"{v}={c}" for v, c in solution.target_counts.items())
        objective = "-" if solution.objective == float("inf") else f"{solution.objective:g}"
        table.add_row(
            solution.method, str(solution.total_counterfeits), str(solution.total_deletions),
            objective, solution.status, f"{solution.solve_time_s * 1000:.1f}", targets,
        )
    console.print(table)


@app.command("eligibility")
def eligibility(
    m: Annotated[int, typer.Option("--m", help="Eligibility parameter m (>= 2).")],
    data: Annotated[
        Path | None,
        typer.Argument(help="Data file (CSV/Parquet); its sensitive column is counted."),
    ] = None,
    counts_text: Annotated[
        str | None,
        typer.Option("--counts", help="Value counts: 5,3,1,1 or FLU=5,ACNE=3 (instead of DATA)."),
    ] = None,
    schema_path: Annotated[
        Path | None, typer.Option("--schema", help="schema.toml describing DATA.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="counterfeit | delete | hybrid | hybrid-greedy | random | all (the first four).",
        ),
    ] = _ALL,
    allow_new_values: Annotated[
        bool,
        typer.Option("--allow-new-values",
                     help="Let counterfeits take new sensitive values when fewer than m exist."),
    ] = False,
    counterfeit_cost: Annotated[
        float, typer.Option("--counterfeit-cost", help="Cost of one counterfeit.")
    ] = 1.0,
    deletion_cost: Annotated[
        float, typer.Option("--deletion-cost", help="Cost of one deletion (deferral).")
    ] = 1.0,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help=TIME_LIMIT_HELP)
    ] = 10.0,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed of the random baseline (default 0: reproducible).")] = 0,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON list.")] = False,
) -> None:
    """Minimum counterfeits / deletions / both that make a table m-eligible.

    DATA is read with the schema's delimiter or the detected one; 'id' may be omitted.
    """
    from republish.problems.eligibility import (
        present_values,
        too_few_values_message,
        validate_counts,
    )
    from republish.schema import load_schema
    from republish.solver.eligibility import (
        METHODS,
        random_baseline,
        sensitive_counts,
        solve_counts,
    )
    from republish.tables import load_table

    check_finite(time_limit, "--time-limit", positive=True, maximum=MAX_TIME_LIMIT)
    check_finite(counterfeit_cost, "--counterfeit-cost", minimum=0, maximum=1e9)
    check_finite(deletion_cost, "--deletion-cost", minimum=0, maximum=1e9)
    check_range(seed, "--seed", 0, MAX_SEED)
    if (data is None) == (counts_text is None):
        raise ParameterError("give either DATA (with --schema) or --counts, not both or neither.")
    if data is not None:
        if schema_path is None:
            raise ParameterError("DATA needs --schema schema.toml to find the sensitive column.")
        schema = load_schema(schema_path)
        counts = sensitive_counts(load_table(data, schema), schema)
    else:
        assert counts_text is not None
        counts = validate_counts(parse_counts(counts_text))
    m = validate_m(m)
    if sum(counts.values()) == 0:
        raise InputError("the table is empty (no rows to count); nothing to make eligible.")
    distinct = len(present_values(counts))
    if m > distinct and not allow_new_values:
        raise ParameterError(too_few_values_message(m, distinct))
    known = (*METHODS, _RANDOM, _ALL)
    if method not in known:
        raise ParameterError(f"--method must be one of {', '.join(known)}; got {method!r}.")
    methods = list(METHODS) if method == _ALL else [method]
    solutions: list[EligibilitySolution] = []
    for name in methods:
        if name == _RANDOM:
            solutions.append(random_baseline(
                counts, m, seed, allow_new_values=allow_new_values,
                counterfeit_cost=counterfeit_cost,
            ))
        else:
            solutions.append(solve_counts(
                counts, m, name,  # type: ignore[arg-type]
                time_limit=time_limit, counterfeit_cost=counterfeit_cost,
                deletion_cost=deletion_cost, allow_new_values=allow_new_values,
            ))
    if json_output:
        print_json([solution.to_dict() for solution in solutions])
    else:
        _render(solutions, counts)
