"""Applying an eligibility solution to rows: deferrals, counterfeits, determinism."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from republish.errors import InputError, ParameterError
from republish.heuristics.eligibility import maximal_subset, minimal_superset
from republish.problems.eligibility import is_m_eligible
from republish.schema import make_schema
from republish.solver.eligibility import apply_eligibility, make_eligible, sensitive_counts
from republish.tables import validate_table

SCHEMA = make_schema("id", "disease", ["age", "zip"])


def _table() -> pd.DataFrame:
    # Table I of the m-eligibility paper (ages), with a zip code; FLU row "5" is the outlier.
    rows = [
        ("1", 15, 100, "FLU"), ("2", 18, 101, "FLU"), ("3", 18, 100, "FLU"),
        ("4", 19, 102, "FLU"), ("5", 90, 190, "FLU"), ("6", 15, 100, "ACNE"),
        ("7", 17, 101, "ACNE"), ("8", 19, 103, "ACNE"), ("9", 15, 100, "ADHD"),
        ("10", 18, 102, "HIV"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "age", "zip", "disease"]).astype(str)
    return validate_table(frame, SCHEMA)


@pytest.mark.parametrize("method", ["counterfeit", "delete", "hybrid", "hybrid-greedy"])
def test_make_eligible_rows_match_the_targets(method: str) -> None:
    table = _table()
    solution, applied = make_eligible(table, SCHEMA, 3, method=method)  # type: ignore[arg-type]
    assert solution.method == method
    assert solution.objective == {"counterfeit": 5, "delete": 4, "hybrid": 3,
                                  "hybrid-greedy": 3}[method]
    # Kept and deferred partition the table, index preserved.
    assert sorted([*applied.kept.index, *applied.deferred.index]) == list(table.index)
    assert not set(applied.kept.index) & set(applied.deferred.index)
    published = Counter(applied.kept["disease"]) + Counter(applied.counterfeit_values)
    assert dict(published) == {v: c for v, c in solution.target_counts.items() if c}
    assert is_m_eligible(dict(published), 3)
    assert len(applied.deferred) == solution.total_deletions
    assert len(applied.counterfeit_values) == solution.total_counterfeits
    if method in ("counterfeit", "delete", "hybrid"):
        assert solution.status == "OPTIMAL"


def test_seeded_deferral_is_deterministic_and_within_values() -> None:
    table = _table()
    solution = maximal_subset(sensitive_counts(table, SCHEMA), 3)
    first = apply_eligibility(table, SCHEMA, solution, seed=11)
    again = apply_eligibility(table, SCHEMA, solution, seed=11)
    pd.testing.assert_frame_equal(first.deferred, again.deferred)
    assert Counter(first.deferred["disease"]) == Counter(solution.deletions)
    chosen = {tuple(apply_eligibility(table, SCHEMA, solution, seed=s).deferred["id"])
              for s in range(10)}
    assert len(chosen) > 1


def test_utility_rule_defers_outliers_first() -> None:
    table = _table()
    solution = maximal_subset(sensitive_counts(table, SCHEMA), 3)  # FLU -3, ACNE -1
    applied = apply_eligibility(table, SCHEMA, solution, seed=None)
    # Medians (age 18, zip 101), ranges 75 and 90: FLU rows 5 (90, 190), 1 (15, 100) and
    # 4 (19, 102) are the farthest of their value, ACNE row 6 (15, 100) of its value.
    assert set(applied.deferred["id"]) == {"1", "4", "5", "6"}
    assert applied.counterfeit_values == []


def test_counterfeits_only_add_values() -> None:
    table = _table()
    solution = minimal_superset(sensitive_counts(table, SCHEMA), 3)
    applied = apply_eligibility(table, SCHEMA, solution)
    assert applied.deferred.empty and len(applied.kept) == len(table)
    assert applied.counterfeit_values == ["ACNE", "ADHD", "ADHD", "HIV", "HIV"]


def test_deletion_caps_reach_the_rows() -> None:
    table = _table()
    solution, applied = make_eligible(table, SCHEMA, 3, method="hybrid",
                                      deletion_caps={"FLU": 0})
    assert "FLU" not in solution.deletions
    assert set(applied.kept["id"]) >= {"1", "2", "3", "4", "5"}
    with pytest.raises(ParameterError, match="deletion caps"):
        make_eligible(table, SCHEMA, 3, method="delete", deletion_caps={"FLU": 0})
    with pytest.raises(ParameterError, match="cannot honour"):
        make_eligible(table, SCHEMA, 3, method="hybrid-greedy", deletion_caps={"FLU": 0})


def test_few_values_and_empty_tables() -> None:
    table = _table()
    two_values = table[table["disease"].isin(["FLU", "ACNE"])]
    with pytest.raises(ParameterError, match="allow_new_values"):
        make_eligible(two_values, SCHEMA, 3, method="counterfeit")
    solution, applied = make_eligible(two_values, SCHEMA, 3, method="counterfeit",
                                      allow_new_values=True, new_values=["HIV"])
    assert set(applied.counterfeit_values) <= {"FLU", "ACNE", "HIV", "counterfeit-value-1"}
    assert solution.objective == 5 * 3 - 8
    deferred_all, applied_all = make_eligible(two_values, SCHEMA, 3, method="delete")
    assert applied_all.kept.empty and len(applied_all.deferred) == len(two_values)
    empty = table.iloc[0:0]
    nothing, applied_nothing = make_eligible(empty, SCHEMA, 3, method="hybrid")
    assert nothing.objective == 0 and applied_nothing.kept.empty


def test_solution_for_other_counts_is_refused() -> None:
    table = _table()
    solution = maximal_subset({"FLU": 9, "ACNE": 1, "HIV": 1}, 3)
    with pytest.raises(InputError, match="differ"):
        apply_eligibility(table, SCHEMA, solution)
    with pytest.raises(ParameterError, match="method"):
        make_eligible(table, SCHEMA, 3, method="both")  # type: ignore[arg-type]


def test_hybrid_keeps_the_best_start_when_algorithm_3_is_worse() -> None:
    from republish.solver.eligibility import solve_counts

    counts = {f"v{i}": c for i, c in enumerate([3, 3, 3, 2, 2, 2, 1, 1])}
    assert solve_counts(counts, 7, "hybrid-greedy").objective == 4
    exact = solve_counts(counts, 7, "hybrid")
    assert exact.objective == 3 and exact.status == "OPTIMAL" and exact.method == "hybrid"
