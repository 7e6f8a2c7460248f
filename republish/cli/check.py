"""``republish check``: the achieved k and l and the re-identification risk of a published
table, and (with ``--principle``) its verification against k-anonymity or l-diversity.

Without ``--principle`` the command only measures: k (smallest group), l (largest l for
which the table is l-diverse), distinct l, and the prosecutor risk as ARX reports it
(highest, average, share of records above ``--risk-threshold``); see ``docs/report.md``.

Exit codes (design Contracts): 0 the table satisfies the principle (or none was asked);
1 it does not (the violations are printed); 2 bad input or usage (message on stderr).

Heavy modules (pandas, the verifiers) are imported inside the command, so that
``republish --help`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from republish.cli.app import app, check_finite, console, error_console, print_json
from republish.errors import InputError, ParameterError, RepublishError

if TYPE_CHECKING:
    from republish.principles.report import VerificationReport
    from republish.report.risk import TableRisk

#: Default threshold of "records at risk" (republish.report.risk.DEFAULT_RISK_THRESHOLD).
RISK_THRESHOLD = 0.2


class Principle(StrEnum):
    k_anonymity = "k-anonymity"
    l_diversity = "l-diversity"


@dataclass(frozen=True)
class Outcome:
    """What one ``check`` found: the verification (``None`` without ``--principle``), the
    parameter verified, whether the table has a group column, and the measured figures."""

    report: VerificationReport | None
    parameter: int | None
    has_groups: bool
    risk: TableRisk


def _arguments(principle: Principle | None, k: int | None, l: int | None) -> None:  # noqa: E741
    if principle is None:
        if k is not None or l is not None:
            raise ParameterError("--k and --l need --principle (k-anonymity or l-diversity); "
                                 "without it, check only measures the table.")
    elif principle is Principle.k_anonymity:
        if k is None:
            raise ParameterError("--principle k-anonymity needs --k N (the minimum group size).")
        if l is not None:
            raise ParameterError("--l applies to --principle l-diversity only; drop it.")
    else:
        if l is None:
            raise ParameterError("--principle l-diversity needs --l N (the diversity parameter).")
        if k is not None:
            raise ParameterError("--k applies to --principle k-anonymity only; drop it.")


def _run(table: Path, schema_path: Path, principle: Principle | None, k: int | None,
         l: int | None, threshold: float) -> Outcome:  # noqa: E741
    from republish.principles.k_anonymity import check_k_anonymity
    from republish.principles.l_diversity import check_l_diversity
    from republish.release import GROUP
    from republish.release_files import read_published
    from republish.report.risk import table_risk
    from republish.schema import load_schema

    schema = load_schema(schema_path)
    _arguments(principle, k, l)
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
    report: VerificationReport | None = None
    parameter: int | None = None
    if principle is Principle.k_anonymity:
        assert k is not None
        report, parameter = check_k_anonymity(published, schema, k), k
    elif principle is Principle.l_diversity:
        assert l is not None
        report, parameter = check_l_diversity(published, schema, l), l
    risk = table_risk(published, schema, threshold)
    return Outcome(report, parameter, GROUP in published.columns, risk)


def _figures(risk: TableRisk) -> dict[str, Any]:
    """The measured figures of the --json document (extensions of the Contract's keys)."""
    return {
        "rows": risk.records, "groups": risk.groups, "classes": risk.classes, "k": risk.k,
        "l": risk.l,
        "l_distinct": risk.l_distinct,
        "risk": {"highest": risk.highest_risk, "average": risk.average_risk,
                 "records_at_risk": risk.records_at_risk, "threshold": risk.threshold},
    }


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %"


@app.command("check")
def check(
    table: Annotated[
        Path, typer.Argument(help="Published generalized table (CSV or Parquet).")
    ],
    schema: Annotated[
        Path, typer.Option("--schema", "-s", help="schema.toml naming the QIs and the SA.")
    ],
    principle: Annotated[
        Principle | None,
        typer.Option("--principle", "-p", help="Principle to verify (default: none, only "
                     "measure k, l and the risk)."),
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", "-k", help="k of k-anonymity (minimum group size).")
    ] = None,
    l: Annotated[  # noqa: E741 - the principle's symbol
        int | None,
        typer.Option("--l", "-l", help="l of l-diversity (no SA value above |G|/l of a group)."),
    ] = None,
    risk_threshold: Annotated[
        float, typer.Option("--risk-threshold", help="Records at risk: share of rows whose "
                            "prosecutor risk 1/|G| is above this threshold, in [0, 1].")
    ] = RISK_THRESHOLD,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document {ok, principle, violations, "
                           "rows, groups, classes, k, l, l_distinct, risk}.")
    ] = False,
) -> None:
    """Measure a published table (achieved k and l, prosecutor risk) and, with --principle,
    verify it: groups by its `group` column, else by identical QI cells.

    Exit 0 when the principle holds (or none is asked), 1 when it is violated (violations
    printed), 2 on bad input. Violation rows are 0-based data-row positions in TABLE.
    """
    try:
        check_finite(risk_threshold, "--risk-threshold", minimum=0.0, maximum=1.0)
        outcome = _run(table, schema, principle, k, l, risk_threshold)
    except RepublishError as exc:
        # soft_wrap: keep the message on one line whatever the terminal width
        error_console.print(f"error: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    report, risk = outcome.report, outcome.risk
    ok = report is None or report.ok
    if json_output:
        document: dict[str, Any] = (
            report.to_dict() if report is not None
            else {"ok": True, "principle": None, "violations": []}
        )
        print_json(document | _figures(risk))
    else:
        grouping = "the group column" if outcome.has_groups else "identical QI cells"
        if report is not None:
            symbol = "k" if principle is Principle.k_anonymity else "l"
            verdict = "OK" if report.ok else f"{len(report.violations)} violation(s)"
            console.print(f"{report.principle} ({symbol} = {outcome.parameter}, groups by "
                          f"{grouping}): {verdict}", markup=False)
            for violation in report.violations:
                console.print(f"  - {violation.reason}", markup=False, soft_wrap=True)
        console.print(
            f"achieved: k = {risk.k}, l = {risk.l} (distinct l = {risk.l_distinct}); "
            f"{risk.groups} groups by {grouping}, {risk.records} rows"
            + (f", {risk.classes} classes of identical QI cells within them"
               if risk.classes != risk.groups else ""), markup=False)
        console.print(
            f"prosecutor risk: highest {_percent(risk.highest_risk)}, average "
            f"{_percent(risk.average_risk)}, records above {risk.threshold:g}: "
            f"{_percent(risk.records_at_risk)}", markup=False)
    if not ok:
        raise typer.Exit(1)
