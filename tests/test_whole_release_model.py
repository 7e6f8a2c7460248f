"""The whole-release model (republish.models.whole_release) against an independent brute
force, an independent release checker, and the paper's hospital example (Xiao & Tao 2007,
Tables 1-3)."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from fractions import Fraction
from functools import cache
from importlib import resources
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.errors import ParameterError
from republish.models import whole_release
from republish.models.whole_release import (
    WholeReleaseProblem,
    WholeReleaseSolution,
    solve_whole_release,
    whole_release_bound,
)

TOL = 1e-6


# --- independent reference: validity, objectives, exhaustive search ----------------------

def box(points: np.ndarray, rows: list[int]) -> float:
    chosen = points[rows]
    return float((chosen.max(axis=0) - chosen.min(axis=0)).sum())


def weight_of(problem: WholeReleaseProblem) -> Fraction:
    # the documented treatment of the deferral weight: nearest fraction, denominator <= 1000
    return Fraction(problem.deferral_weight).limit_denominator(1000)


def check_release(problem: WholeReleaseProblem, solution: WholeReleaseSolution) -> None:
    """Every rule of a valid release, and the reported objectives, recomputed."""
    values, bucket, n = problem.values.tolist(), problem.bucket.tolist(), len(problem.values)
    seen: Counter[int] = Counter()
    counterfeits, cost = 0, 0.0
    assert len(solution.groups) == len(solution.group_signatures)
    assert len(solution.groups) == len(solution.counterfeits_per_group)
    for rows_array, sigma, fake in zip(solution.groups, solution.group_signatures,
                                       solution.counterfeits_per_group, strict=True):
        rows = [int(i) for i in rows_array]
        assert rows, "every group holds a real row"
        assert all(0 <= i < n for i in rows)
        seen.update(rows)
        real = [values[i] for i in rows]
        fake = set(fake)
        assert len(set(real)) == len(real), "one item per value"
        assert not set(real) & fake and set(real) | fake == set(sigma), "one item per value"
        assert len(sigma) >= problem.m and all(0 <= v < problem.domain_size for v in sigma)
        olds = {bucket[i] for i in rows if bucket[i] >= 0}
        assert len(olds) <= 1, "old rows of different buckets never share a group"
        if olds:
            assert set(sigma) == set(problem.signatures[olds.pop()]), "old rows keep σ"
        elif fake:
            assert problem.counterfeits_in_new_groups, "eligibility counterfeits forbidden"
        counterfeits += len(fake)
        cost += len(sigma) * box(problem.points, rows)
    deferred = [int(i) for i in solution.deferred]
    seen.update(deferred)
    assert all(bucket[i] == -1 for i in deferred), "old rows are never deferred"
    assert problem.allow_deferrals or not deferred
    assert all(seen[i] == 1 for i in range(n)) and set(seen) <= set(range(n))
    a = counterfeits + weight_of(problem) * len(deferred)
    assert solution.objective_a == pytest.approx(float(a), abs=1e-9)
    assert solution.objective_b == pytest.approx(cost, abs=TOL)


def valid_groups(problem: WholeReleaseProblem) -> dict[int, list[tuple[int, int, float]]]:
    """Every valid group (bitmask, counterfeits, cost) by its lowest row; an all-new group's
    best signature over *every* superset of its values of >= m codes."""
    n, values, bucket = len(problem.values), problem.values.tolist(), problem.bucket.tolist()
    domain = set(range(problem.domain_size))
    found: dict[int, list[tuple[int, int, float]]] = {i: [] for i in range(n)}
    for size in range(1, min(n, problem.domain_size) + 1):
        for rows in itertools.combinations(range(n), size):
            real = {values[i] for i in rows}
            if len(real) < size:
                continue
            olds = {bucket[i] for i in rows if bucket[i] >= 0}
            if len(olds) > 1:
                continue
            if olds:
                sigmas = [set(problem.signatures[olds.pop()])]
                if not real <= sigmas[0]:
                    continue
            else:
                rest = sorted(domain - real)
                sigmas = [real | set(extra) for k in range(len(rest) + 1)
                          for extra in itertools.combinations(rest, k)]
                sigmas = [s for s in sigmas if len(s) == size
                          or problem.counterfeits_in_new_groups]
            options = [(len(s) - size, len(s) * box(problem.points, list(rows)))
                       for s in sigmas if len(s) >= problem.m]
            if options:
                cf, cost = min(options)
                found[rows[0]].append((sum(1 << i for i in rows), cf, cost))
    return found


def brute_force(problem: WholeReleaseProblem) -> tuple[Fraction, float] | None:
    """Lexicographic optimum (a, b) over all releases (exhaustive DP over row subsets)."""
    groups, w = valid_groups(problem), weight_of(problem)
    deferrable = [problem.allow_deferrals and b < 0 for b in problem.bucket.tolist()]

    @cache
    def best(rest: int) -> tuple[Fraction, float] | None:
        if rest == 0:
            return Fraction(0), 0.0
        i = (rest & -rest).bit_length() - 1
        options = []
        if deferrable[i] and (sub := best(rest & ~(1 << i))) is not None:
            options.append((sub[0] + w, sub[1]))
        for mask, cf, cost in groups[i]:
            if mask & ~rest == 0 and (sub := best(rest & ~mask)) is not None:
                options.append((sub[0] + cf, sub[1] + cost))
        return min(options) if options else None

    return best((1 << len(problem.values)) - 1)


def random_later_release(seed: int, *, buckets: int, domain: int, most_per_value: int,
                         new: int, grid: int, short: bool = False, m: int = 3
                         ) -> WholeReleaseProblem:
    """A release with old rows: ``buckets`` buckets of m values, each holding 1 to
    ``most_per_value`` old rows per value (with ``short``, a bucket's last value one row
    short half the time: a counterfeit or a new row must fill it), ``new`` new rows, points
    on a ``grid`` x ``grid`` grid."""
    rng = np.random.default_rng(seed)
    values: list[int] = []
    bucket: list[int] = []
    signatures = []
    for b in range(buckets):
        sigma = sorted(rng.choice(domain, m, replace=False).tolist())
        signatures.append(frozenset(sigma))
        rows = [v for v in sigma for _ in range(int(rng.integers(1, most_per_value + 1)))]
        if short and rng.random() < 0.5:
            rows = rows[:-1]
        values += rows
        bucket += [b] * len(rows)
    fresh = rng.integers(0, domain, new).tolist()
    values += fresh
    bucket += [-1] * len(fresh)
    points = rng.integers(0, grid, (len(values), 2)) / grid
    return WholeReleaseProblem(points, np.array(values), np.array(bucket), tuple(signatures),
                               m, domain)


def random_release(problem: WholeReleaseProblem, seed: int
                   ) -> tuple[list[list[int]], list[int]]:
    """A random valid release (for hints), built from the valid groups only."""
    groups, rng = valid_groups(problem), random.Random(seed)
    chosen: list[list[int]] = []
    deferred: list[int] = []
    rest = (1 << len(problem.values)) - 1

    @cache
    def feasible(left: int) -> bool:
        if left == 0:
            return True
        i = (left & -left).bit_length() - 1
        if problem.allow_deferrals and problem.bucket[i] < 0 and feasible(left & ~(1 << i)):
            return True
        return any(mask & ~left == 0 and feasible(left & ~mask) for mask, _, _ in groups[i])

    while rest:
        i = (rest & -rest).bit_length() - 1
        moves = [mask for mask, _, _ in groups[i] if mask & ~rest == 0 and feasible(rest & ~mask)]
        if problem.allow_deferrals and problem.bucket[i] < 0 and feasible(rest & ~(1 << i)):
            moves.append(-1)
        move = rng.choice(moves)
        if move == -1:
            deferred.append(i)
            rest &= ~(1 << i)
        else:
            chosen.append([j for j in range(len(problem.values)) if move >> j & 1])
            rest &= ~move
    return chosen, deferred


# --- tiny random instances -----------------------------------------------------------------

@st.composite
def tiny_problems(draw: st.DrawFn) -> WholeReleaseProblem:
    m = draw(st.sampled_from([2, 3]))
    domain = m + draw(st.integers(0, 2))
    values: list[int] = []
    buckets: list[int] = []
    signatures = []
    for b in range(draw(st.integers(1, 3))):
        size = draw(st.integers(m, min(domain, m + 1)))
        sigma = sorted(draw(st.permutations(range(domain)))[:size])
        signatures.append(frozenset(sigma))
        # old rows: values of the signature, some missing (critical absence), some repeated
        most = min(4, 8 - len(values))  # <= 8 old rows; a bucket may end up empty
        rows = draw(st.lists(st.sampled_from(sigma), min_size=min(1, most), max_size=most))
        values += rows
        buckets += [b] * len(rows)
    new = draw(st.lists(st.integers(0, domain - 1), max_size=6 if len(values) <= 6 else 4))
    values += new
    buckets += [-1] * len(new)
    grid = st.integers(0, 10).map(lambda k: k / 10)
    points = np.array(draw(st.lists(st.tuples(grid, grid), min_size=len(values),
                                    max_size=len(values))), dtype=float)
    return WholeReleaseProblem(
        points=points, values=np.array(values), bucket=np.array(buckets),
        signatures=tuple(signatures), m=m, domain_size=domain,
        allow_deferrals=draw(st.booleans()),
        deferral_weight=draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 1 / 3])),
        counterfeits_in_new_groups=draw(st.booleans()),
        padding_order=tuple(draw(st.permutations(range(domain)))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_problems())
def test_model_equals_brute_force_and_bound_is_valid(problem: WholeReleaseProblem) -> None:
    optimum = brute_force(problem)
    solution = solve_whole_release(problem, time_limit=20.0)
    bound = whole_release_bound(problem)
    if optimum is None:
        assert solution.status_a == "INFEASIBLE" and bound.status_a == "INFEASIBLE"
        return
    check_release(problem, solution)
    assert solution.status_a == "OPTIMAL" and solution.status_b == "OPTIMAL"
    assert Fraction(solution.objective_a).limit_denominator(10**6) == optimum[0]
    assert solution.objective_b == pytest.approx(optimum[1], abs=TOL)
    # the bounds: (a) exact, (b) never above the optimum of (b) among (a)-optimal releases
    assert bound.status_a == "OPTIMAL" and bound.objective_a == pytest.approx(float(optimum[0]))
    assert bound.objective_b <= optimum[1] + 1e-9
    assert solution.bound_b <= optimum[1] + 1e-9
    # a tiny column cap and no tables: local columns, column generation, anchor pricing;
    # still exact or bounded (the default above prices from the table of every column)
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 0):
        capped = solve_whole_release(problem, time_limit=20.0, max_columns=12)
    check_release(problem, capped)
    assert capped.status_a == "OPTIMAL" and capped.bound_b <= optimum[1] + 1e-9
    assert capped.objective_b >= optimum[1] - TOL
    if capped.status_b == "OPTIMAL":
        assert capped.objective_b == pytest.approx(optimum[1], abs=TOL)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_problems(), st.integers(0, 10**6))
def test_hint_is_never_beaten_and_time_out_returns_valid(problem: WholeReleaseProblem,
                                                         seed: int) -> None:
    optimum = brute_force(problem)
    if optimum is None:
        return
    groups, deferred = random_release(problem, seed)
    w = weight_of(problem)
    sigma = []
    for rows in groups:
        olds = {int(problem.bucket[i]) for i in rows if problem.bucket[i] >= 0}
        real = len({int(problem.values[i]) for i in rows})
        sigma.append(len(problem.signatures[olds.pop()]) if olds else max(problem.m, real))
    hint_a = sum(s - len(r) for s, r in zip(sigma, groups, strict=True)) + w * len(deferred)
    hint_b = sum(s * box(problem.points, r) for s, r in zip(sigma, groups, strict=True))
    for limit in (20.0, 1e-4):
        solution = solve_whole_release(problem, time_limit=limit, hint=(groups, deferred))
        check_release(problem, solution)
        ours = (Fraction(solution.objective_a).limit_denominator(10**6), solution.objective_b)
        assert ours <= (hint_a, hint_b + TOL)  # lexicographically no worse than the hint
        assert {solution.status_a, solution.status_b} <= {"OPTIMAL", "FEASIBLE", "HEURISTIC"}
        assert solution.bound_a <= float(optimum[0]) + 1e-9
        assert solution.bound_b <= optimum[1] + 1e-9
        if solution.status_b == "OPTIMAL":
            assert solution.objective_b == pytest.approx(optimum[1], abs=TOL)


@pytest.mark.parametrize("seed", range(12))
def test_all_new_rows_match_brute_force(seed: int) -> None:
    """First releases (no buckets): new groups of every size, with and without counterfeits."""
    rng = np.random.default_rng(seed)
    m = 2 + seed % 2
    n, domain = int(rng.integers(6, 10)), m + int(rng.integers(0, 3))
    problem = WholeReleaseProblem(
        rng.integers(0, 8, (n, 2)) / 8, rng.integers(0, domain, n), np.full(n, -1), (), m,
        domain, allow_deferrals=bool(seed % 3 == 0), deferral_weight=0.75,
        counterfeits_in_new_groups=bool(seed % 4 < 2))
    optimum = brute_force(problem)
    for tables in (whole_release.TABLE_COLUMNS, 0):  # priced from tables, then enumerated
        with mock.patch.object(whole_release, "TABLE_COLUMNS", tables):
            solution = solve_whole_release(problem, time_limit=20.0)
        if optimum is None:
            assert solution.status_a == "INFEASIBLE"
            return
        check_release(problem, solution)
        assert solution.status_b == "OPTIMAL" and solution.objective_a == float(optimum[0])
        assert solution.objective_b == pytest.approx(optimum[1], abs=TOL)
    assert whole_release_bound(problem).objective_b <= optimum[1] + 1e-9


def test_enumeration_cap_and_custom_extent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past max_columns: the box extent still reaches the optimum (column generation prices
    the missing columns by anchors, or from the table of all columns); a custom extent (no
    pricing) gets a valid answer and bound."""
    rng = np.random.default_rng(3)
    n = 40
    problem = WholeReleaseProblem(rng.random((n, 2)), rng.integers(0, 4, n), np.full(n, -1),
                                  (), 2, 4)
    tabled = solve_whole_release(problem, time_limit=20.0, max_columns=500)
    assert "every column tabled" in tabled.detail
    monkeypatch.setattr(whole_release, "TABLE_COLUMNS", 0)  # anchors price, as above 3M
    exact = solve_whole_release(problem, time_limit=20.0)
    capped = solve_whole_release(problem, time_limit=20.0, max_columns=500)
    assert "tabled" not in capped.detail
    check_release(problem, tabled)
    assert tabled.status_b == "OPTIMAL"
    assert tabled.objective_b == pytest.approx(exact.objective_b, abs=TOL)

    def doubled(rows: np.ndarray) -> float:  # a plain callable: per-column calls, no pricing
        return 2 * box(problem.points, [int(i) for i in rows])

    custom = solve_whole_release(problem, time_limit=20.0, max_columns=500, extent=doubled)
    for solution in (exact, capped):
        check_release(problem, solution)
    assert exact.status_b == "OPTIMAL" and exact.columns > 500
    assert capped.bound_b <= exact.objective_b + 1e-9 <= capped.objective_b + 2e-9
    if capped.status_b == "OPTIMAL":
        assert capped.objective_b == pytest.approx(exact.objective_b, abs=TOL)
    assert custom.bound_b <= 2 * exact.objective_b + 1e-9 <= custom.objective_b + 2e-9
    assert custom.status_a == "OPTIMAL"
    full = solve_whole_release(problem, time_limit=20.0, extent=doubled)
    assert full.status_b == "OPTIMAL"
    assert full.objective_b == pytest.approx(2 * exact.objective_b, abs=TOL)


def test_parameter_errors_name_the_field() -> None:
    points, values = np.zeros((2, 1)), np.array([0, 1])
    with pytest.raises(ParameterError, match="'m' parameter"):
        WholeReleaseProblem(points, values, np.array([-1, -1]), (), 0, 2)
    with pytest.raises(ParameterError, match="'bucket' parameter"):
        WholeReleaseProblem(points, values, np.array([0, -1]), (), 2, 2)
    with pytest.raises(ParameterError, match="'values' parameter"):
        WholeReleaseProblem(points, values[::-1], np.array([0, -1]), (frozenset({0, 2}),), 2, 3)
    problem = WholeReleaseProblem(points, values, np.array([-1, -1]), (), 2, 2)
    with pytest.raises(ParameterError, match="'hint' parameter"):
        solve_whole_release(problem, time_limit=1.0, hint=([[0]], []))


# --- the paper's running example -----------------------------------------------------------

HOSPITAL = resources.files("republish.examples").joinpath("hospital")


def read(name: str) -> pd.DataFrame:
    with resources.as_file(HOSPITAL.joinpath(name)) as path:
        return pd.read_csv(path)


def normalized(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    points = table[["age", "zip"]].to_numpy(dtype=float)
    low, span = points.min(axis=0), np.ptp(points, axis=0)
    return (points - low) / span, low, span


def published_cost(generalized: pd.DataFrame, span: np.ndarray) -> float:
    """Σ_G |G| · Σ_q (interval length / range) of a published table (|G| counts fakes)."""
    total = 0.0
    for _, group in generalized.groupby("group"):
        lengths = [np.diff(json.loads(group[q].iloc[0]))[0] for q in ("age", "zip")]
        total += len(group) * float((np.array(lengths) / span).sum())
    return total


def test_hospital_first_and_second_release() -> None:
    t1, t2, t1b = read("table1a.csv"), read("table2a.csv"), read("table1b.csv")
    diseases = sorted(set(t1.disease) | set(t2.disease))
    code = {d: i for i, d in enumerate(diseases)}

    points1, _, span1 = normalized(t1)
    first = WholeReleaseProblem(points1, t1.disease.map(code).to_numpy(), np.full(len(t1), -1),
                                (), 2, len(diseases))
    release1 = solve_whole_release(first, time_limit=10.0)
    check_release(first, release1)
    table1b_cost = published_cost(t1b, span1)
    print(f"release 1: (a)={release1.objective_a} (b)={release1.objective_b:.4f} "
          f"[{release1.status_b}, {release1.wall_time_s:.3f}s] vs Table 1b {table1b_cost:.4f}")
    assert table1b_cost == pytest.approx(3.795, abs=5e-4)
    assert release1.status_a == release1.status_b == "OPTIMAL"
    assert release1.objective_a == 0 and release1.objective_b <= table1b_cost + 1e-9
    assert release1.wall_time_s < 1.0

    group_of = dict(zip(read("assignment1b.csv").name, read("assignment1b.csv").group,
                        strict=True))
    signature_of = {g: frozenset(code[d] for d in rows.disease)
                    for g, rows in t1b.groupby("group")}
    signatures = sorted(set(signature_of.values()), key=sorted)
    bucket = np.array([signatures.index(signature_of[group_of[name]]) if name in group_of
                       else -1 for name in t2.name])
    points2, _, span2 = normalized(t2)
    second = WholeReleaseProblem(points2, t2.disease.map(code).to_numpy(), bucket,
                                 tuple(signatures), 2, len(diseases))
    release2 = solve_whole_release(second, time_limit=10.0)
    check_release(second, release2)
    table3a_cost = published_cost(read("table3a.csv"), span2)
    table3a_fakes = int(read("counterfeits3b.csv")["count"].sum())
    print(f"release 2: (a)={release2.objective_a} (b)={release2.objective_b:.4f} "
          f"[{release2.status_b}, {release2.wall_time_s:.3f}s] vs Table 3a {table3a_cost:.4f}")
    assert release2.status_a == release2.status_b == "OPTIMAL"
    assert release2.counterfeits == table3a_fakes == 2 and release2.deferrals == 0
    assert release2.objective_b <= table3a_cost + 1e-9
    bound = whole_release_bound(second)
    assert bound.objective_a == 2 and 0 < bound.objective_b <= release2.objective_b + 1e-9
