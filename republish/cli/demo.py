"""``republish demo``: the hospital example of the m-invariance paper, verified and recomputed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from republish.cli.app import app, console, print_json

if TYPE_CHECKING:  # the command imports them when it runs (``--help`` stays fast)
    import pandas as pd

    from republish.certificate import Certificate
    from republish.examples.hospital import HospitalExample
    from republish.principles.report import VerificationReport
    from republish.release import Release
    from republish.solver.m_invariance import StepResult


def _show(title: str, frame: pd.DataFrame) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(str(cell) for cell in row))
    console.print(table)


def _verdict(label: str, report: VerificationReport, expect_ok: bool) -> dict[str, Any]:
    mark = "yes" if report.ok else "NO"
    console.print(f"[bold]{escape(label)}:[/bold] {mark}", markup=True)
    for violation in report.violations:
        rows = ", ".join(str(r) for r in violation.rows)
        who = f" (rows: {rows})" if rows else ""
        console.print(f"    group {violation.group}: {violation.reason}{who}", markup=False)
    return {
        "check": label,
        "ok": report.ok,
        "expected": expect_ok,
        "violations": [v.to_dict() for v in report.violations],
    }


def _sorted(release: Release) -> pd.DataFrame:
    # Sorted by group for reading only; published files keep their random row order.
    columns = release.schema.published_columns
    return release.published.sort_values(columns).reset_index(drop=True)


def paper_verdicts(example: HospitalExample) -> list[dict[str, Any]]:
    """The three verdicts of the paper's running example (§1, Examples 3 and 5)."""
    from republish.principles import (
        check_l_diversity,
        check_m_invariance_pair,
        check_m_uniqueness,
    )

    schema = example.schema
    verdicts = [
        _verdict("Table 1b is 2-unique", check_m_uniqueness(example.t1_star, 2), True),
    ]
    diverse = check_l_diversity(example.t1_star.published, schema, 2).merge(
        check_l_diversity(example.t2_star.published, schema, 2), principle="2-diversity"
    )
    verdicts.append(_verdict("Tables 1b and 2b are each 2-diverse", diverse, True))
    verdicts.append(
        _verdict(
            "Tables 1b -> 2b are 2-invariant",
            check_m_invariance_pair(example.t1_star, example.t2_star, 2),
            False,
        )
    )
    verdicts.append(
        _verdict(
            "Tables 1b -> 3a (with R(2) = Table 3b) are 2-invariant",
            check_m_invariance_pair(example.t1_star, example.t3_star, 2),
            True,
        )
    )
    return verdicts


def computed_releases(example: HospitalExample, seed: int) -> dict[str, StepResult]:
    """Releases computed by republish (m = 2): T*(1) from Table 1a, T*(2) from Table 2a,
    and T*(2) again starting from the paper's own T*(1) (Table 1b)."""
    import numpy as np

    from republish.solver.m_invariance import publish_m_invariant
    from republish.state import PublisherState

    rng = np.random.default_rng(seed)
    first = publish_m_invariant(example.t1, example.schema, 2, None, rng=rng, mode="exact")
    second = publish_m_invariant(example.t2, example.schema, 2, first.state, rng=rng,
                                 mode="exact")
    paper_state = PublisherState.from_releases([example.t1_star], 2)
    after_paper = publish_m_invariant(
        example.t2, example.schema, 2, paper_state, rng=rng, mode="exact", time_limit=10.0
    )
    return {"release 1": first, "release 2": second, "release 2 after Table 1b": after_paper}


def _computed_summary(steps: dict[str, StepResult]) -> list[dict[str, Any]]:
    summary = []
    for label, step in steps.items():
        entry = {"step": label, **step.summary(), "verified": step.report.ok}
        summary.append(entry)
    return summary


def _show_computed(example: HospitalExample, steps: dict[str, StepResult]) -> None:
    from republish.principles import check_m_invariance_pair

    first, second, after_paper = steps.values()
    _show("T*(1) computed from Table 1a (m = 2)", _sorted(first.release))
    _show("T*(2) computed from Table 2a", _sorted(second.release))
    _show("R(2)", second.release.counterfeits)
    pair = check_m_invariance_pair(first.release, second.release, 2)
    console.print(
        f"[bold]Computed T*(1) -> T*(2) are 2-invariant:[/bold] {'yes' if pair.ok else 'NO'}",
        markup=True,
    )
    _show("T*(2) computed after the paper's Table 1b", _sorted(after_paper.release))
    _show("R(2)", after_paper.release.counterfeits)
    costs = paper_costs(example)
    for label, step in steps.items():
        console.print(f"[bold]{escape(label)}:[/bold] ", end="", markup=True)
        console.print(certificate_line(step.certificate), markup=False)
    console.print(
        f"The paper's hand-made releases cost {costs['table 1b']:.3f} (Table 1b) and "
        f"{costs['table 3a']:.3f} (Table 3a) under (b); Bob's group needs a bronchitis "
        "counterfeit in release 2 because Alice left."
    )


def certificate_line(certificate: Certificate) -> str:
    """``release STATUS; (a) name = value (STATUS, bound B); (b) ...`` of a certificate."""
    parts = [f"release {certificate.status}"]
    for label, stage in zip(("(a)", "(b)"), certificate.stages, strict=False):
        bound = "no bound" if stage.bound is None else f"bound {stage.bound:.4g}"
        parts.append(f"{label} {stage.objective_name} = {stage.objective:.4g} "
                     f"({stage.status}, {bound})")
    return "; ".join(parts)


def paper_costs(example: HospitalExample) -> dict[str, float]:
    """Objective (b) of the paper's Table 1b and Table 3a (with R(2))."""
    from republish.objectives import release_cost

    return {"table 1b": release_cost(example.t1_star, example.t1),
            "table 3a": release_cost(example.t3_star, example.t2)}


@app.command()
def demo(
    json_output: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    seed: int = typer.Option(1, "--seed", help="Seed of the computed releases' randomness."),
) -> None:
    """Run the m-invariance paper's hospital example: verify it, then compute releases."""
    from republish.examples.hospital import load_hospital

    example = load_hospital()
    if json_output:
        with console.capture():
            verdicts = paper_verdicts(example)
            steps = computed_releases(example, seed)
        print_json({"verdicts": verdicts, "computed": _computed_summary(steps),
                    "paper_costs": paper_costs(example)})
    else:
        console.rule("The hospital example (Xiao & Tao, SIGMOD 2007)")
        _show("Table 1a: microdata T(1)", example.t1)
        _show("Table 1b: T*(1)", _sorted(example.t1_star))
        _show("Table 2a: microdata T(2)", example.t2)
        _show("Table 2b: T*(2), conventional generalization", _sorted(example.t2_star))
        _show("Table 3a: T*(2) with counterfeits", _sorted(example.t3_star))
        _show("Table 3b: R(2)", example.t3_star.counterfeits)
        console.rule("Verdicts")
        verdicts = paper_verdicts(example)
        console.rule("Releases computed by republish")
        steps = computed_releases(example, seed)
        _show_computed(example, steps)
    if any(v["ok"] != v["expected"] for v in verdicts):
        raise typer.Exit(1)
