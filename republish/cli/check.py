"""``republish check``: verify a published generalized table against k-anonymity or l-diversity.

Exit codes (design Contracts): 0 the table satisfies the principle; 1 it does not (the
violations are printed); 2 bad input or usage (message on stderr).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from republish.cli.app import app, console, error_console, print_json
from republish.errors import InputError, ParameterError, RepublishError
from republish.principles.k_anonymity import check_k_anonymity
from republish.principles.l_diversity import check_l_diversity
from republish.principles.report import VerificationReport
from republish.release import GROUP, read_published
from republish.schema import load_schema


class Principle(StrEnum):
    k_anonymity = "k-anonymity"
    l_diversity = "l-diversity"


def _run(
    table: Path, schema_path: Path, principle: Principle, k: int | None, l: int | None  # noqa: E741
) -> tuple[VerificationReport, int, bool]:
    """The report, the parameter used and whether the table has a group column."""
    schema = load_schema(schema_path)
    if principle is Principle.k_anonymity:
        if k is None:
            raise ParameterError("--principle k-anonymity needs --k N (the minimum group size).")
        if l is not None:
            raise ParameterError("--l applies to --principle l-diversity only; drop it.")
    else:
        if l is None:
            raise ParameterError("--principle l-diversity needs --l N (the diversity parameter).")
        if k is not None:
            raise ParameterError("--k applies to --principle k-anonymity only; drop it.")
    try:
        published = read_published(table)
    except RepublishError:
        raise
    except (ValueError, OSError) as exc:
        # malformed CSV or a non-integer group column: bad input, not a crash
        raise InputError(f"{table}: cannot be read as a published table ({exc}).") from exc
    if schema.identifier in published.columns:
        error_console.print(
            f"warning: {table} contains the identifier column {schema.identifier!r}; a "
            "published table must not.",
            markup=False,
            soft_wrap=True,
        )
    if principle is Principle.k_anonymity:
        assert k is not None
        return check_k_anonymity(published, schema, k), k, GROUP in published.columns
    assert l is not None
    return check_l_diversity(published, schema, l), l, GROUP in published.columns


@app.command("check")
def check(
    table: Annotated[
        Path, typer.Argument(help="Published generalized table (CSV or Parquet).")
    ],
    schema: Annotated[
        Path, typer.Option("--schema", "-s", help="schema.toml naming the QIs and the SA.")
    ],
    principle: Annotated[
        Principle, typer.Option("--principle", "-p", help="Principle to verify.")
    ],
    k: Annotated[
        int | None, typer.Option("--k", "-k", help="k of k-anonymity (minimum group size).")
    ] = None,
    l: Annotated[  # noqa: E741 - the principle's symbol
        int | None,
        typer.Option("--l", "-l", help="l of l-diversity (no SA value above |G|/l of a group)."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document {ok, principle, violations}.")
    ] = False,
) -> None:
    """Verify a published table: groups by its `group` column, else by identical QI cells.

    Exit 0 when the principle holds, 1 when it is violated (violations printed), 2 on bad
    input. Violation rows are 0-based data-row positions in TABLE.
    """
    try:
        report, parameter, has_groups = _run(table, schema, principle, k, l)
    except RepublishError as exc:
        # soft_wrap: keep the message on one line whatever the terminal width
        error_console.print(f"error: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    if json_output:
        print_json(report.to_dict())
    else:
        symbol = "k" if principle is Principle.k_anonymity else "l"
        grouping = "the group column" if has_groups else "identical QI cells"
        if report.ok:
            console.print(
                f"{report.principle} ({symbol} = {parameter}, groups by {grouping}): OK",
                markup=False,
            )
        else:
            console.print(
                f"{report.principle} ({symbol} = {parameter}, groups by {grouping}): "
                f"{len(report.violations)} violation(s)",
                markup=False,
            )
            for violation in report.violations:
                console.print(f"  - {violation.reason}", markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)
