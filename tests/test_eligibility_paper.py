"""m-eligibility: the paper's worked examples, Algorithm 3's counterexamples, bad input.

Tobar Nicolau et al., "m-Eligibility with minimum counterfeits and deletions", IEEE TIFS
2024: Table I/II ({5,3,1,1}, m=3), the hybrid example of §III-C ({10,9,7,1}, m=3) and the
§IV-B example ({10,2}, m=2).
"""

from __future__ import annotations

import json
import math

import pytest

from republish.errors import InputError, ParameterError
from republish.heuristics.eligibility import (
    greedy_hybrid,
    maximal_subset,
    minimal_superset,
    random_counterfeits,
)
from republish.models.eligibility import solve_eligibility
from republish.problems.eligibility import EligibilitySolution, is_m_eligible

TABLE_I = {"FLU": 5, "ACNE": 3, "ADHD": 1, "HIV": 1}
HYBRID_EXAMPLE = {"a": 10, "b": 9, "c": 7, "d": 1}
TWO_VALUES = {"a": 10, "b": 2}


def _solve(counts: dict[str, int], m: int, mode: str, **options: object) -> EligibilitySolution:
    return solve_eligibility(counts, m, mode, num_workers=1, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("counts", "m", "expected"),
    [(TABLE_I, 3, (5, 4, 3)), (HYBRID_EXAMPLE, 3, (3, 3, 2)), (TWO_VALUES, 2, (8, 8, 8))],
)
def test_paper_examples_optimal_objectives(counts: dict[str, int], m: int,
                                           expected: tuple[int, int, int]) -> None:
    for mode, objective in zip(("counterfeit", "delete", "hybrid"), expected, strict=True):
        solution = _solve(counts, m, mode)
        assert solution.status == "OPTIMAL"
        assert solution.objective == objective
        assert solution.bound == pytest.approx(objective)
        assert solution.is_eligible()
        assert solution.modifications == objective
    assert minimal_superset(counts, m).objective == expected[0]
    assert maximal_subset(counts, m).objective == expected[1]
    assert greedy_hybrid(counts, m).objective == expected[2]


def test_table_ii_counts_of_algorithms_1_2_3() -> None:
    # Table II: {5,4,3,3} with counterfeits, {2,2,1,1} with deletions, {3,3,2,1} hybrid.
    superset = minimal_superset(TABLE_I, 3)
    assert superset.target_counts == {"FLU": 5, "ACNE": 4, "ADHD": 3, "HIV": 3}
    assert superset.counterfeits == {"ACNE": 1, "ADHD": 2, "HIV": 2}
    assert superset.deletions == {}
    subset = maximal_subset(TABLE_I, 3)
    assert subset.target_counts == {"FLU": 2, "ACNE": 2, "ADHD": 1, "HIV": 1}
    assert subset.deletions == {"FLU": 3, "ACNE": 1}
    hybrid = greedy_hybrid(TABLE_I, 3)
    assert hybrid.target_counts == {"FLU": 3, "ACNE": 3, "ADHD": 2, "HIV": 1}
    assert hybrid.deletions == {"FLU": 2} and hybrid.counterfeits == {"ADHD": 1}
    assert hybrid.status == "HEURISTIC"


def test_hybrid_example_of_section_iii_c() -> None:
    assert minimal_superset(HYBRID_EXAMPLE, 3).target_counts == {"a": 10, "b": 9, "c": 7, "d": 4}
    assert maximal_subset(HYBRID_EXAMPLE, 3).target_counts == {"a": 8, "b": 8, "c": 7, "d": 1}
    exact = _solve(HYBRID_EXAMPLE, 3, "hybrid")
    assert exact.total_counterfeits == 1 and exact.total_deletions == 1


def test_proposition_3_count_and_already_eligible() -> None:
    assert minimal_superset({"a": 7, "b": 1, "c": 1}, 3).total_counterfeits == 7 * 3 - 9
    eligible = {"a": 2, "b": 2, "c": 2}
    for solution in (minimal_superset(eligible, 3), maximal_subset(eligible, 3),
                     greedy_hybrid(eligible, 3), _solve(eligible, 3, "hybrid")):
        assert solution.objective == 0 and solution.target_counts == eligible


# Algorithm 3 is not optimal: counterexamples found by exhaustive search over all count
# vectors with 8-10 values of at most 6 rows (the smallest has 17 rows, m = 7), by random
# search, and on Adult (education, m = 7). Greedy objective, optimum.
GREEDY_COUNTEREXAMPLES = [
    ([3, 3, 3, 2, 2, 2, 1, 1], 7, 4, 3),
    ([3, 3, 3, 2, 2, 1, 1, 1, 1], 7, 4, 3),
    ([5, 4, 4, 2, 2, 2, 1, 1], 7, 8, 7),
    ([3, 3, 3, 2, 2, 2, 2, 2, 1], 8, 4, 3),
    ([733, 83, 63, 56, 56, 43, 36, 26, 7, 6, 4, 2], 7, 703, 702),
]


@pytest.mark.parametrize(("values", "m", "greedy", "optimum"), GREEDY_COUNTEREXAMPLES)
def test_algorithm_3_counterexamples(values: list[int], m: int, greedy: int,
                                     optimum: int) -> None:
    counts = {f"v{i}": c for i, c in enumerate(values)}
    heuristic = greedy_hybrid(counts, m)
    exact = _solve(counts, m, "hybrid")
    assert heuristic.is_eligible() and exact.is_eligible()
    assert heuristic.objective == greedy
    assert exact.objective == optimum and exact.status == "OPTIMAL"
    # Hinting the model with the greedy answer must not stop it at the greedy answer.
    assert _solve(counts, m, "hybrid", hint=heuristic).objective == optimum


def test_smallest_counterexample_optimum_by_hand() -> None:
    # {3,3,3,2,2,2,1,1}, m = 7: deleting one row of each 3 gives {2,...,2,1,1}, 14 rows,
    # 7 * 2 <= 14. Algorithm 3 adds counterfeits first and needs 4 changes.
    counts = {f"v{i}": c for i, c in enumerate([3, 3, 3, 2, 2, 2, 1, 1])}
    assert is_m_eligible({f"v{i}": c for i, c in enumerate([2, 2, 2, 2, 2, 2, 1, 1])}, 7)
    assert greedy_hybrid(counts, 7).total_counterfeits > 0


def test_random_baseline_is_seedable_and_eligible() -> None:
    first = random_counterfeits(TABLE_I, 3, seed=7)
    again = random_counterfeits(TABLE_I, 3, seed=7)
    assert first == again
    assert first.status == "HEURISTIC" and first.is_eligible()
    assert first.total_deletions == 0
    assert first.total_counterfeits >= 5  # Proposition 3's optimum
    outcomes = {random_counterfeits(TWO_VALUES, 2, seed=s).total_counterfeits for s in range(8)}
    assert min(outcomes) >= 8 and len(outcomes) > 1


def test_random_baseline_gives_up_at_the_cap() -> None:
    solution = random_counterfeits({"a": 1000, "b": 1}, 2, seed=0, max_counterfeits=50)
    assert solution.status == "INFEASIBLE"
    assert solution.total_counterfeits == 50
    assert not solution.is_eligible()


def test_new_values_when_fewer_than_m_values() -> None:
    counts = {"flu": 5, "cold": 0}
    with pytest.raises(ParameterError, match="allow-new-values"):
        _solve(counts, 3, "counterfeit")
    with pytest.raises(ParameterError, match="allow_new_values"):
        minimal_superset(counts, 3)
    with pytest.raises(ParameterError, match="allow_new_values"):
        random_counterfeits(counts, 3, seed=0)
    exact = _solve(counts, 3, "counterfeit", allow_new_values=True, new_values=["hiv"])
    # Proposition 2: c*m - n = 10 counterfeits; the zero-count key first, then new_values.
    assert exact.objective == 10 and exact.is_eligible()
    assert set(exact.counterfeits) == {"cold", "hiv"}
    superset = minimal_superset({"flu": 5}, 3, allow_new_values=True)
    assert superset.counterfeits == {"counterfeit-value-1": 5, "counterfeit-value-2": 5}
    # Keeping X rows of flu costs (5 - X) + 2X >= 6 > 5: deleting every row is cheaper.
    hybrid = _solve({"flu": 5}, 3, "hybrid", allow_new_values=True)
    assert hybrid.objective == 5 and hybrid.target_counts["flu"] == 0
    # Without new values, deleting everything is the only m-eligible subset.
    for solution in (_solve(counts, 3, "delete"), _solve(counts, 3, "hybrid"),
                     maximal_subset(counts, 3), greedy_hybrid(counts, 3)):
        assert solution.target_counts == {"flu": 0, "cold": 0}
        assert solution.objective == 5


def test_deletion_caps_and_costs() -> None:
    capped = _solve(TWO_VALUES, 2, "hybrid", deletion_caps={"a": 0})
    assert capped.objective == 8 and capped.deletions == {}
    infeasible = _solve(TWO_VALUES, 2, "delete", deletion_caps={"a": 3})
    assert infeasible.status == "INFEASIBLE" and math.isinf(infeasible.objective)
    assert infeasible.to_dict()["objective"] is None
    partial = _solve(TABLE_I, 3, "hybrid", deletion_caps={"FLU": 1})
    assert partial.deletions.get("FLU", 0) <= 1 and partial.is_eligible()
    expensive_counterfeits = _solve(TABLE_I, 3, "hybrid", counterfeit_cost=10.0)
    assert expensive_counterfeits.counterfeits == {} and expensive_counterfeits.objective == 4
    expensive_deletions = _solve(TABLE_I, 3, "hybrid", deletion_cost=2.5)
    assert expensive_deletions.deletions == {} and expensive_deletions.objective == 5
    weighted = _solve(TABLE_I, 3, "hybrid", counterfeit_cost=1.5, deletion_cost=1.0)
    assert weighted.objective == pytest.approx(
        1.5 * weighted.total_counterfeits + weighted.total_deletions
    )
    with pytest.raises(InputError, match="not among"):
        _solve(TABLE_I, 3, "hybrid", deletion_caps={"XYZ": 1})
    with pytest.raises(ParameterError, match="deletion cap"):
        _solve(TABLE_I, 3, "hybrid", deletion_caps={"FLU": -1})


def test_empty_counts_are_trivially_eligible() -> None:
    for solution in (_solve({}, 3, "counterfeit"), _solve({}, 5, "hybrid"),
                     minimal_superset({}, 4), maximal_subset({}, 4), greedy_hybrid({}, 4),
                     random_counterfeits({}, 4, seed=1), _solve({"a": 0}, 3, "delete")):
        assert solution.objective == 0 and solution.is_eligible()


@pytest.mark.parametrize("m", [1, 0, -3, 2.5, True, "3"])
def test_bad_m(m: object) -> None:
    with pytest.raises(ParameterError, match="m must"):
        _solve(TABLE_I, m, "hybrid")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="m must"):
        greedy_hybrid(TABLE_I, m)  # type: ignore[arg-type]


@pytest.mark.parametrize("counts", [{"a": -1, "b": 2}, {"a": 2.5}, {"a": True}, {"a": "3"}])
def test_bad_counts(counts: dict[str, object]) -> None:
    with pytest.raises(InputError, match="count of 'a'"):
        _solve(counts, 2, "hybrid")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="count of 'a'"):
        maximal_subset(counts, 2)  # type: ignore[arg-type]


def test_bad_mode_costs_and_limits() -> None:
    with pytest.raises(ParameterError, match="mode"):
        _solve(TABLE_I, 3, "both")
    with pytest.raises(ParameterError, match="counterfeit_cost"):
        _solve(TABLE_I, 3, "hybrid", counterfeit_cost=0)
    with pytest.raises(ParameterError, match="deletion_cost"):
        greedy_hybrid(TABLE_I, 3, deletion_cost=-1.0)
    with pytest.raises(ParameterError, match="time_limit"):
        _solve(TABLE_I, 3, "hybrid", time_limit=0)


def test_to_dict_is_the_json_contract() -> None:
    document = _solve(TABLE_I, 3, "hybrid").to_dict()
    for key in ("method", "objective", "counterfeits", "deletions", "target_counts", "status"):
        assert key in document
    assert document["method"] == "hybrid"
    assert document["counterfeits"] + document["deletions"] == 3
    assert json.loads(json.dumps(document)) == document


def test_algorithm_3_is_not_optimal_on_adult_education(adult_dir) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    frame = pd.read_csv(adult_dir / "adult.csv", sep=";", dtype=str)
    counts = frame["education"].str.strip().value_counts().to_dict()
    assert sum(counts.values()) == 30162 and len(counts) == 16
    assert greedy_hybrid(counts, 7).objective == 15113
    exact = _solve(counts, 7, "hybrid")
    assert exact.objective == 15112 and exact.status == "OPTIMAL"
