"""The ``keep-signatures`` first release: the paper's signatures, each as often, rows free
among the groups holding their value; its bound within those releases is checked against
their brute-force optimum."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from helpers import random_hospital_table
from hypothesis import given, settings
from hypothesis import strategies as st

import republish.solver.m_invariance_whole as whole_step
from republish.examples.hospital import load_hospital
from republish.models.whole_release import WholeReleaseProblem
from republish.principles import verify_release
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.signature_policy import same_signatures, signature_problem


def best_keeping_signatures(problem: WholeReleaseProblem, groups: list[np.ndarray]
                            ) -> float | None:
    """The least (b) (box perimeter on the problem's points) over every release whose groups
    have the value sets of ``groups``, each as often: each value's rows placed in the
    groups holding that value, in every order. None when there are too many orders."""
    sets = [sorted(problem.values[g].tolist()) for g in groups]
    slots = {v: [i for i, s in enumerate(sets) if v in s] for v in set(problem.values.tolist())}
    rows = {v: np.flatnonzero(problem.values == v).tolist() for v in slots}
    orders = [list(itertools.permutations(rows[v])) for v in sorted(slots)]
    if np.prod([len(o) for o in orders], dtype=float) > 200_000:
        return None
    best = np.inf
    for choice in itertools.product(*orders):
        members: list[list[int]] = [[] for _ in sets]
        for v, order in zip(sorted(slots), choice, strict=True):
            for group, row in zip(slots[v], order, strict=True):
                members[group].append(row)
        cost = sum(len(g) * float(np.ptp(problem.points[g], axis=0).sum()) for g in members)
        best = min(best, cost)
    return float(best)


def test_signature_problem_holds_rows_whose_value_one_signature_takes() -> None:
    """Values 0 and 3 lie in one signature each: their rows are old rows of it; 1 and 2
    lie in two: new rows. Groups that miss a row or repeat a value give None."""
    values = np.array([0, 1, 2, 1, 2, 3, 0, 1, 2])
    problem = WholeReleaseProblem(np.zeros((9, 2)), values, np.full(9, -1), (), 3, 4)
    groups = [np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([6, 7, 8])]
    relaxed = signature_problem(problem, groups)
    assert relaxed is not None
    held = {relaxed.signatures[b] for b in relaxed.bucket[[0, 5, 6]].tolist()}
    assert held == {frozenset({0, 1, 2}), frozenset({1, 2, 3})}
    assert relaxed.signatures[relaxed.bucket[0]] == frozenset({0, 1, 2})
    assert relaxed.signatures[relaxed.bucket[5]] == frozenset({1, 2, 3})
    assert (relaxed.bucket[[1, 2, 3, 4, 7, 8]] == -1).all()
    assert signature_problem(problem, groups[:2]) is None  # rows 6-8 in no group
    assert signature_problem(problem, [np.array([0, 6, 1]), *groups[1:]]) is None
    assert same_signatures(problem, groups, [np.array([0, 3, 2]), np.array([1, 4, 5]),
                                             np.array([6, 7, 8])])
    assert not same_signatures(problem, groups, [np.array([0, 1, 4]), np.array([3, 2, 5]),
                                                 np.array([6, 7, 8])][:2])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 3]),
       policy=st.sampled_from(["keep-signatures", "local-signatures"]))
def test_keep_signatures_bound_is_below_the_best_release_with_those_signatures(
        seed: int, m: int, policy: str) -> None:
    """12 rows: the release keeps its start's value sets (each as often: the pipeline's
    under ``keep-signatures``), is verified, costs at least the best release that keeps
    them (brute force) and no more than the pipeline's; the bound within the signatures
    is at most that best release."""
    seen: list[tuple[WholeReleaseProblem, list[np.ndarray]]] = []
    solve = whole_step.solve_whole_release

    def recording(problem: WholeReleaseProblem, **options):  # type: ignore[no-untyped-def]
        seen.append((problem, [np.asarray(g) for g in options["hint"][0]]))
        return solve(problem, **options)

    table, schema = random_hospital_table(seed, 12), load_hospital().schema
    pipeline = publish_m_invariant(table, schema, m, rng=np.random.default_rng(seed),
                                   mode="heuristic")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(whole_step, "solve_whole_release", recording)
        step = publish_m_invariant(table, schema, m, rng=np.random.default_rng(seed),
                                   mode="exact", time_limit=2.0, first_release=policy)
    assert verify_release(step.release, m).ok
    if policy == "keep-signatures":
        assert Counter(step.release.signatures().values()) == \
            Counter(pipeline.release.signatures().values())
    summary = step.summary()
    assert summary["cost"] <= pipeline.summary()["cost"] + 1e-9
    if pipeline.summary()["objective"] > 0 or not seen:
        assert summary["within_status"] is None  # counterfeits or deferrals: no claim
        return
    (problem, hint), = seen
    best = best_keeping_signatures(problem, hint)
    if best is None:
        return
    if Counter(step.release.signatures().values()) != Counter(
            frozenset(table["disease"].iloc[g]) for g in hint):
        assert summary["cost"] == pytest.approx(pipeline.summary()["cost"])  # the pipeline's
        return
    assert summary["cost"] >= best - 1e-9
    # local-signatures keeps the paper's where no compact start fits the values' counts
    assert summary["within"] in ({"within the paper's signatures"}
                                 if policy == "keep-signatures" else
                                 {"within the paper's signatures", "within the chosen signatures"})
    assert summary["within_bound"] is not None and summary["within_bound"] <= best + 1e-9
    if summary["within_status"] == "OPTIMAL":
        assert summary["cost"] == pytest.approx(best, abs=1e-9)


def test_auto_keeps_the_signatures_of_a_first_release_above_400_rows() -> None:
    """450 rows, m = 3: ``auto`` keeps the paper's value sets and their counts, costs no
    more than holding every row in its bucket (``keep-buckets``) there, and says what it
    proved within the signatures beside its bound over every partition."""
    import republish

    table, schema = republish.synthetic_census(450, seed=3)
    steps = {policy: publish_m_invariant(table, schema, 3, mode="auto", time_limit=3.0,
                                         rng=np.random.default_rng(1), first_release=policy)
             for policy in ("buckets", "keep-buckets")}
    heuristic = publish_m_invariant(table, schema, 3, mode="heuristic",
                                    rng=np.random.default_rng(1))
    auto = steps["buckets"].summary()
    assert Counter(steps["buckets"].release.signatures().values()) == \
        Counter(heuristic.release.signatures().values())
    assert auto["within"] == "within the paper's signatures"
    assert auto["within_bound"] is not None and auto["within_bound"] <= auto["cost"] + 1e-9
    assert auto["cost"] <= steps["keep-buckets"].summary()["cost"] + 1e-9
    assert auto["status"] != "OPTIMAL"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 3]), offered=st.integers(1, 6),
       least=st.integers(1, 4))
def test_local_signatures_cover_every_row_with_few_sets(seed: int, m: int, offered: int,
                                                        least: int) -> None:
    """From compact groups and the paper's groups of random values: every row in one group
    of ``m`` distinct values or the paper's wider ones, each group's value set one offered
    (the compact groups' most frequent) for at least ``least`` groups, or the paper's, and
    compact groups of a set kept whole where its count allows."""
    from republish.heuristics.compact_groups import compact_groups
    from republish.solver.signature_policy import local_signatures

    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(m + 2), 2 * m)  # every value equally often: papers fit
    points = rng.random((len(values), 2))
    problem = WholeReleaseProblem(points, values, np.full(len(values), -1), (), m, m + 2)
    # the paper's stand-in: group j holds values j, j + 1, ..., j + m - 1 (mod m + 2), so
    # over 2(m + 2) groups each value is held 2m times: once per row
    unused = [list(rng.permutation(np.flatnonzero(values == v))) for v in range(m + 2)]
    paper = [np.array([unused[(j + i) % (m + 2)].pop() for i in range(m)])
             for j in range(2 * (m + 2))]
    assert signature_problem(problem, paper) is not None
    compact = compact_groups(points, values, m)
    assert compact is not None
    groups = local_signatures(problem, compact, paper, offered=offered, least=least)
    assert groups is not None
    rows = np.sort(np.concatenate(groups))
    assert (rows == np.arange(len(values))).all()
    sets = [frozenset(values[g].tolist()) for g in groups]
    assert all(len(s) == len(g) for s, g in zip(sets, groups, strict=True))
    frequent = Counter(frozenset(values[g].tolist()) for g in compact
                       if len(g) == m).most_common(offered)
    allowed = {s for s, _ in frequent} | {frozenset(values[g].tolist()) for g in paper}
    assert set(sets) <= allowed
    papers = {frozenset(values[g].tolist()) for g in paper}
    assert all(count >= least for s, count in Counter(sets).items() if s not in papers)
    kept = Counter(s for s, g in zip(sets, groups, strict=True)
                   if any(np.array_equal(g, c) for c in compact))
    for s, count in Counter(sets).items():
        assert kept[s] == min(count, sum(frozenset(values[c].tolist()) == s
                                         for c in compact))


@pytest.mark.parametrize("start_crossed", [True, False])
def test_rows_of_a_value_in_two_signatures_stay_free_in_the_bound(start_crossed: bool) -> None:
    """Value 0 lies in both signatures {0, 1} and {0, 2}: its rows are new rows of the
    relaxation, so the bound stays below the best release with those signatures (0 here:
    each 0-row beside the row of its own point), whichever 0-row the start put where.
    Holding each 0-row where the start put it would bound only that placement."""
    from republish.models.whole_release_pair_bound import lower_bound_b

    points = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    values = np.array([0, 0, 1, 2])
    problem = WholeReleaseProblem(points, values, np.full(4, -1), (), 2, 3)
    start = [np.array([1, 2]), np.array([0, 3])] if start_crossed else \
        [np.array([0, 2]), np.array([1, 3])]
    relaxed = signature_problem(problem, start)
    assert relaxed is not None
    assert (relaxed.bucket[[0, 1]] == -1).all() and (relaxed.bucket[[2, 3]] >= 0).all()
    best = best_keeping_signatures(problem, start)
    assert best == pytest.approx(0.0)
    assert lower_bound_b(relaxed, None, 0) <= best + 1e-9


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="the bound runs beside the search only with fork")
def test_two_workers_compute_the_bound_within_the_signatures_beside_the_search() -> None:
    """With two workers the bound within the signatures comes from a second process (this
    process's copy is never called); on a small table it converges there as here, so both
    runs report the same bound."""
    table, schema = random_hospital_table(5, 40), load_hospital().schema
    bounds = {}
    for workers in (1, 2):
        with pytest.MonkeyPatch.context() as patch:
            if workers == 2:
                patch.setattr(whole_step, "lower_bound_b", lambda *a, **k: pytest.fail(
                    "computed in this process"))
            step = publish_m_invariant(table, schema, 2, rng=np.random.default_rng(5),
                                       mode="exact", time_limit=2.0, workers=workers,
                                       first_release="keep-signatures")
        summary = step.summary()
        assert summary["within"] == "within the paper's signatures"
        assert summary["within_bound"] <= summary["cost"] + 1e-9
        bounds[workers] = summary["within_bound"]
    assert bounds[2] == pytest.approx(bounds[1], abs=1e-9)


def test_local_signatures_keep_the_paper_start_where_no_local_set_repeats() -> None:
    """600 census rows over 50 values at m = 6: no value set of the compact groups repeats
    often enough to be offered, so the fit is the paper's sets, filled in row order. That
    start costs more than the paper's own release, which therefore stays the start: the
    model regroups it within the paper's signatures, no worse than the heuristic."""
    import republish

    table, schema = republish.synthetic_census(600, seed=3)
    step = publish_m_invariant(table, schema, 6, mode="auto", time_limit=3.0,
                               rng=np.random.default_rng(1), first_release="local-signatures")
    heuristic = publish_m_invariant(table, schema, 6, mode="heuristic",
                                    rng=np.random.default_rng(1))
    summary = step.summary()
    assert summary["within"] == "within the paper's signatures"
    assert summary["cost"] <= heuristic.summary()["cost"] + 1e-9
    assert Counter(step.release.signatures().values()) == \
        Counter(heuristic.release.signatures().values())
