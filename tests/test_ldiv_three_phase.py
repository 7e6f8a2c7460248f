"""TP (l-diversity paper, §5): the paper's worked examples, phase one, bounds, rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.heuristics._inverted_lists import PillarLists
from republish.heuristics.three_phase import (
    phase_one_heights,
    qi_classes,
    three_phase,
    three_phase_counts,
)
from republish.models.tuple_minimization import solve_tuple_minimization


def eligible(vector: tuple[int, ...] | list[int] | np.ndarray, l: int) -> bool:  # noqa: E741
    return sum(vector) >= l * max(vector, default=0)


def states(result):
    return [(s.phase, s.groups, s.residue) for s in result.trace]


def test_phase_two_worked_example_of_section_5_3():
    result = three_phase_counts([(3, 1, 1, 2, 3), (0, 2, 2, 4, 4), (4, 4, 0, 0, 0)], 3, trace=True)
    # Q3 is emptied by phase one, so only Q1, Q2 and R are compared, as in the paper.
    seen = [(phase, groups[:2], residue) for phase, groups, residue in states(result)]
    assert seen == [
        (1, ((3, 1, 1, 2, 3), (0, 2, 2, 4, 4)), (4, 4, 0, 0, 0)),
        (2, ((3, 1, 0, 2, 3), (0, 2, 2, 4, 4)), (4, 4, 1, 0, 0)),
        (2, ((3, 1, 0, 2, 3), (0, 2, 2, 3, 3)), (4, 4, 1, 1, 1)),
        (2, ((3, 1, 0, 2, 3), (0, 2, 1, 3, 3)), (4, 4, 2, 1, 1)),
    ]
    assert result.phase == 2
    assert result.pillar_bound == 12 and sum(result.residue) == 12


def test_phase_three_worked_example_of_section_5_4():
    result = three_phase_counts(
        [(3, 1, 2, 3, 3), (1, 3, 2, 3, 3)], 4, residue=(4, 4, 4, 0, 0), trace=True
    )
    assert states(result) == [
        (1, ((3, 1, 2, 3, 3), (1, 3, 2, 3, 3)), (4, 4, 4, 0, 0)),
        (3, ((2, 1, 2, 2, 2), (1, 2, 2, 2, 2)), (5, 5, 4, 2, 2)),
        (3, ((2, 1, 1, 2, 2), (1, 2, 2, 2, 2)), (5, 5, 5, 2, 2)),
        (3, ((2, 1, 1, 2, 2), (1, 2, 2, 1, 2)), (5, 5, 5, 3, 2)),
    ]
    assert result.phase == 3


def test_phase_three_example_reached_from_raw_groups():
    # A third group (4,4,4,0,0) is not 4-eligible and is emptied by phase one, leaving
    # exactly the state the paper starts phase three from.
    result = three_phase_counts([(3, 1, 2, 3, 3), (1, 3, 2, 3, 3), (4, 4, 4, 0, 0)], 4)
    assert result.phase == 3
    assert result.kept[:2] == ((2, 1, 1, 2, 2), (1, 2, 2, 1, 2))
    assert result.residue == (5, 5, 5, 3, 2)


def test_phase_one_example_of_table_1_terminates_optimally():
    # Table 1 with l = 2: groups {1,2}, {3}, {4}, {5..8}, {9,10}; R = {HIV, HIV, pneu, bron}.
    hiv, pneumonia, bronchitis, flu, gastritis = range(5)
    groups = [(2, 0, 0, 0, 0), (0, 1, 0, 0, 0), (0, 0, 1, 0, 0), (2, 0, 0, 1, 1), (0, 1, 0, 1, 0)]
    result = three_phase_counts(groups, 2)
    assert result.phase == 1
    assert sorted(np.repeat(np.arange(5), result.residue)) == [hiv, hiv, pneumonia, bronchitis]


def literal_phase_one(counts: list[int], l: int) -> list[int]:  # noqa: E741
    """Remove one tuple at a time from a pillar until l-eligible (§5.2, verbatim)."""
    counts = list(counts)
    while not eligible(counts, l):
        counts[counts.index(max(counts))] -= 1
    return counts


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 9), min_size=4, max_size=4), min_size=1, max_size=6),
    st.integers(1, 5),
)
def test_closed_form_phase_one_equals_pillar_removal(groups, l):  # noqa: E741
    dense = np.array(groups)
    pair_group, pair_value = np.nonzero(dense)
    heights = phase_one_heights(pair_group, dense[pair_group, pair_value], len(groups), l)
    for g, counts in enumerate(groups):
        expected = literal_phase_one(counts, l)
        assert np.minimum(counts, heights[g]).tolist() == expected


def test_pillar_lists_keep_the_pillar_pointer():
    lists = PillarLists({0: 3, 1: 3, 2: 1})
    assert lists.height == 3 and lists.pillars() == {0, 1}
    lists.remove(0)
    assert lists.height == 3 and lists.pillars() == {1}
    lists.remove(1)
    assert lists.height == 2 and lists.pillars() == {0, 1}
    lists.add(2)
    lists.add(2)
    assert lists.height == 3 and lists.pillars() == {2} and lists.size == 7


eligible_counts = st.lists(
    st.lists(st.integers(0, 5), min_size=5, max_size=5), min_size=1, max_size=6
).filter(lambda g: eligible(np.sum(g, axis=0), 2) and np.sum(g) > 0)


def optimum(groups: list[list[int]], l: int) -> int:  # noqa: E741
    dense = np.array(groups)
    pair_group, pair_value = np.nonzero(dense)
    solution = solve_tuple_minimization(pair_group, pair_value, dense[pair_group, pair_value], l,
                                        num_workers=1, time_limit=10)
    assert solution.status == "OPTIMAL" and solution.objective is not None
    return solution.objective


def check_tp(groups: list[list[int]], l: int) -> tuple[int, int, int]:  # noqa: E741
    result = three_phase_counts(groups, l)
    assert all(eligible(k, l) for k in result.kept)
    assert eligible(result.residue, l)
    total = np.array(result.kept).sum(axis=0) + np.array(result.residue)
    assert total.tolist() == np.sum(groups, axis=0).tolist()
    assert all(k <= g for kept, group in zip(result.kept, groups, strict=True)
               for k, g in zip(kept, group, strict=True))
    best = optimum(groups, l)
    suppressed = sum(result.residue)
    assert result.lower_bound <= best <= suppressed
    if result.phase == 1:
        assert suppressed == best  # Corollary 5.9
    if result.phase == 2:
        assert suppressed <= best + l - 1  # Corollary 5.13
    assert suppressed < l * best or suppressed == best == 0  # Theorem 5.19
    return result.phase, suppressed, best


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(eligible_counts)
def test_tp_within_one_of_optimum_for_l_2(groups):
    phase, suppressed, best = check_tp(groups, 2)
    assert phase in (1, 2)  # Theorem 5.16
    assert suppressed <= best + 1


def test_tp_bounds_on_random_tables_reach_every_phase():
    rng = np.random.default_rng(7)
    phases = set()
    for _ in range(250):
        l = int(rng.integers(2, 6))  # noqa: E741
        groups = rng.integers(0, 6, size=(int(rng.integers(1, 7)), l + int(rng.integers(0, 4))))
        totals = groups.sum(axis=0)
        if totals.sum() == 0 or not eligible(totals, l):
            continue
        phases.add(check_tp(groups.tolist(), l)[0])
    assert phases == {1, 2, 3}


def test_phase_three_skips_groups_emptied_in_an_earlier_round():
    # Regression: an emptied QI-group has no pillar, so the greedy cover took it forever.
    groups = [[0, 0, 0, 4, 0, 4, 1], [2, 3, 1, 0, 3, 4, 1], [2, 1, 2, 3, 3, 0, 0],
              [3, 0, 4, 3, 4, 1, 3], [2, 3, 1, 4, 2, 4, 2]]
    phase, _, _ = check_tp(groups, 5)
    assert phase == 3


def test_three_phase_on_rows_maps_counts_to_rows():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(300, 2)).astype(float)
    sensitive = rng.choice(list("abcdef"), size=300)
    result = three_phase(codes, sensitive, 3)
    classes = qi_classes(codes)
    kept = result.groups >= 0
    assert (result.groups[kept] == classes[kept]).all()
    assert sorted(result.residue.tolist()) == np.flatnonzero(~kept).tolist()
    for g in np.unique(result.groups[kept]):
        _, counts = np.unique(sensitive[result.groups == g], return_counts=True)
        assert eligible(counts, 3)
    _, counts = np.unique(sensitive[result.residue], return_counts=True)
    assert eligible(counts, 3)
    assert result.lower_bound <= result.suppressed_tuples


def test_ineligible_table_names_the_value():
    with pytest.raises(InputError, match="'a' occurs in 3 of 4 rows"):
        three_phase(np.zeros((4, 1)), ["a", "a", "a", "b"], 2)
    with pytest.raises(ParameterError):
        three_phase(np.zeros((4, 1)), ["a", "b", "a", "b"], 0)
