"""Pricing from tables of every column (models/whole_release_tables.py) against brute
force: the table holds each column once, its reduced costs and per-anchor least are those
of the generic formulas, and the pool fixing's proof only claims true optima."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from republish.models import whole_release_columns as columns_module
from republish.models import whole_release_table_columns as table_columns_module
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_bound import Relaxation, reduced_costs
from republish.models.whole_release_columns import Columns
from republish.models.whole_release_counts import (
    BoxExtent,
    Family,
    ReleaseCounts,
    count_columns,
    families,
)
from republish.models.whole_release_extent_tables import TabulatedExtent
from republish.models.whole_release_master import IncrementalMaster
from republish.models.whole_release_restricted import fix_by_pool
from republish.models.whole_release_tables import (
    TABLE_CHUNK,
    FamilyTable,
    TabledPricing,
    all_columns,
    all_columns_and_extents,
)


def brute_columns(family: Family, is_new: np.ndarray) -> set[tuple[int, ...]]:
    found = set()
    pools = [p.tolist() for p in family.pools]
    for size in range(max(family.lo, 1), family.hi + 1):
        for chosen in itertools.combinations(range(len(pools)), size):
            for rows in itertools.product(*(pools[p] for p in chosen)):
                if family.need_old and all(is_new[list(rows)]):
                    continue
                found.add(tuple(sorted(rows)))
    return found


@st.composite
def random_families(draw: st.DrawFn) -> tuple[Family, np.ndarray]:
    n = draw(st.integers(1, 14))
    pools_of = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    pools = tuple(np.flatnonzero(np.array(pools_of) == p) for p in range(5))
    hi = draw(st.integers(1, 4))
    lo = draw(st.integers(1, hi))
    is_new = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return Family(pools, lo, hi, hi, draw(st.booleans())), is_new


@settings(max_examples=80, deadline=None)
@given(random_families(), st.integers(0, 2), st.sampled_from([1, 2, 5, TABLE_CHUNK]),
       st.sampled_from([table_columns_module.BIT_POOLS, 0]))
def test_all_columns_are_every_column_once(drawn: tuple[Family, np.ndarray], extra: int,
                                           chunk: int, bit_pools: int) -> None:
    """Built ``chunk`` candidates at a time (TABLE_CHUNK) or at once, with the pools a
    column holds as bits or compared member by member (BIT_POOLS 0: more pools than
    bits), the same columns."""
    family, is_new = drawn
    width = family.hi + extra
    saved = table_columns_module.TABLE_CHUNK, table_columns_module.BIT_POOLS
    table_columns_module.TABLE_CHUNK, table_columns_module.BIT_POOLS = chunk, bit_pools
    try:
        table = all_columns(family, is_new, width)
    finally:
        table_columns_module.TABLE_CHUNK, table_columns_module.BIT_POOLS = saved
    expected = brute_columns(family, is_new)
    rows = [tuple(r[r >= 0].tolist()) for r in table]
    assert len(rows) == len(set(rows)) == len(expected) == count_columns(family, is_new)
    assert set(rows) == expected
    assert table.shape[1] == width
    for r in table:  # canonical: ascending rows, then the pads
        used = r[r >= 0]
        assert (np.diff(used) > 0).all() and (r[len(used):] == -1).all()


@settings(max_examples=60, deadline=None)
@given(random_families(), st.integers(0, 10**6), st.sampled_from([1, 3, TABLE_CHUNK]))
def test_extents_grown_with_the_columns_are_the_measures(drawn: tuple[Family, np.ndarray],
                                                         seed: int, chunk: int) -> None:
    """The extents built with the columns, a row at a time, are exactly what the measure
    computes from every member (two numeric QIs and a tabulated hierarchy QI, and the box
    extent), and a measure without boxes gets none."""
    family, is_new = drawn
    rng = np.random.default_rng(seed)
    n, leaves = len(is_new), int(rng.integers(1, 6))
    points = np.column_stack([rng.random(n), rng.integers(0, leaves, n).astype(float),
                              rng.choice([0.0, 0.5, 1.0], n)])
    hierarchy = rng.random((leaves, leaves))
    saved = table_columns_module.TABLE_CHUNK
    table_columns_module.TABLE_CHUNK = chunk
    try:
        for measure in (TabulatedExtent(points, [None, hierarchy, None]), BoxExtent(points)):
            members, extents = all_columns_and_extents(family, is_new, family.hi + 1, measure)
            assert np.array_equal(members, all_columns(family, is_new, family.hi + 1))
            assert extents is not None and np.array_equal(extents, measure.batch(members))
        members, extents = all_columns_and_extents(family, is_new, family.hi,
                                                   lambda rows: 0.0)
        assert extents is None and np.array_equal(members, all_columns(family, is_new,
                                                                       family.hi))
    finally:
        table_columns_module.TABLE_CHUNK = saved


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**6))
def test_table_reduced_costs_and_least_per_anchor(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, width = int(rng.integers(1, 40)), 4
    members = np.sort(np.where(rng.random((30, width)) < 0.3, n, rng.integers(0, n, (30, width))),
                      axis=1)
    members = np.where(members == n, -1, members)
    members = members[(members >= 0).any(axis=1)]
    # -1 pads last, as canonical columns
    members = np.array([np.concatenate([r[r >= 0], r[r < 0]]) for r in members]).reshape(
        -1, width)
    cost, a_coef = rng.random(len(members)), rng.integers(-2, 3, len(members))
    table = FamilyTable.of(members.astype(np.int32), cost, a_coef)
    assert table.slots.dtype == np.int16  # the rows fit: half the bytes a round reads
    y, y_a = rng.normal(size=n), float(-rng.random())
    relaxed = Relaxation(y, y_a, y, np.zeros(0), np.zeros(0), 0.0, 0.0)
    rc = table.reduced_costs(relaxed)
    expected = reduced_costs(table.members.astype(np.int64), table.cost, table.a_coef, y, y_a)
    assert np.allclose(rc, expected)
    # rows past int16's range keep their slots' width (the pads still read 0)
    shift = 2**15
    wide = FamilyTable.of(np.where(members >= 0, members + shift, -1).astype(np.int32), cost,
                          a_coef)
    assert wide.slots.dtype == np.int32
    wide_y = np.concatenate([np.full(shift, 1e6), y])
    assert np.allclose(wide.reduced_costs(Relaxation(wide_y, y_a, wide_y, np.zeros(0),
                                                     np.zeros(0), 0.0, 0.0)), expected)
    least = table.least_per_anchor(rc, n)
    for a in range(n):
        mine = rc[table.members[:, 0] == a]
        assert least[a] == (mine.min() if len(mine) else math.inf)
    assert (table.anchor == table.members[:, 0]).all()


def first_release(seed: int, n: int, m: int) -> WholeReleaseProblem:
    rng = np.random.default_rng(seed)
    domain = m + int(rng.integers(0, 3))
    values = np.arange(n) % domain  # m-eligible: every value at most ceil(n / domain) times
    return WholeReleaseProblem(rng.integers(0, 9, (n, 2)) / 8, rng.permutation(values),
                               np.full(n, -1), (), m, domain)


@pytest.mark.parametrize("seed", range(6))
def test_pool_fixing_proves_only_optima(seed: int) -> None:
    """Any pool size: when the pool fixing claims a proof, its value is the optimum (the
    model over every column); with the whole table as the pool it always proves it."""
    problem = first_release(seed, 14, 2 + seed % 2)
    optimum = solve_whole_release(problem, time_limit=20.0)
    assert optimum.status_b == "OPTIMAL"
    counts = ReleaseCounts.of(problem)
    fams = families(problem, counts, 0)
    width = max(2 * problem.m - 1, 1)
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(1), 0, width)
    pricer = TabledPricing(problem, columns, fams, deadline=math.inf)
    assert pricer.covers_all and pricer.tabled == sum(count_columns(f, counts.is_new)
                                                      for f in fams)
    columns.add(pricer.start_columns(3))
    # the hint: a release found in no time (the count plan's, usually not optimal)
    quick = solve_whole_release(problem, time_limit=1e-4)
    best = columns.add(np.array([np.pad(g, (0, width - len(g)), constant_values=-1)
                                 for g in quick.groups])).tolist()
    master = columns.master(np.full(len(problem.values), -math.inf))
    relaxed = IncrementalMaster(master).relax(master, 10.0)
    assert relaxed is not None
    rc = pricer.table.reduced_costs(relaxed)  # type: ignore[union-attr]
    floor = relaxed.bound + float(np.minimum(
        pricer.table.least_per_anchor(rc, len(problem.values)), 0.0).sum())  # type: ignore[union-attr]
    assert floor <= optimum.objective_b + 1e-9  # a Lagrangian bound
    proofs = 0
    for size in (1, 5, 20, pricer.tabled):
        fixed = fix_by_pool(columns, pricer, relaxed, floor, best, size, 10.0, seed)
        assert fixed.chosen is not None
        assert fixed.value >= optimum.objective_b - 1e-7
        if fixed.proven:
            proofs += 1
            assert fixed.value == pytest.approx(optimum.objective_b, abs=1e-7)
    assert proofs >= 1  # the whole table as the pool proves the optimum
    assert quick.objective_b > optimum.objective_b + 1e-7  # so a false proof would show


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_column_attributes_in_chunks_equal_one_pass(chunk: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A table's columns costed ``chunk`` at a time (TABLE_CHUNK) get the costs and (a)
    coefficients of one pass, in the same order."""
    problem = first_release(3, 16, 3)
    counts = ReleaseCounts.of(problem)
    width = 2 * problem.m - 1
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(2, 3), 0, width)
    block = np.vstack([all_columns(f, counts.is_new, width) for f in families(problem, counts, 0)])
    assert len(block) > 64
    cost, a_coef = columns.attributes(block)
    monkeypatch.setattr(columns_module, "TABLE_CHUNK", chunk)
    chunked_cost, chunked_a = columns.attributes(block)
    assert np.array_equal(cost, chunked_cost) and np.array_equal(a_coef, chunked_a)
    assert len(np.unique(cost)) > 1  # so a shuffled order would show


def test_first_release_from_tables_matches_enumeration() -> None:
    """Twenty rows at m = 2 (pairs and triples): the tabled model and the fully enumerated
    one prove the same optimum."""
    from unittest import mock

    from republish.models import whole_release
    problem = first_release(11, 20, 2)
    tabled = solve_whole_release(problem, time_limit=20.0)
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 0):
        enumerated = solve_whole_release(problem, time_limit=20.0)
    assert "every column tabled" in tabled.detail and "tabled" not in enumerated.detail
    assert tabled.status_b == enumerated.status_b == "OPTIMAL"
    assert tabled.objective_b == pytest.approx(enumerated.objective_b, abs=1e-9)


def assert_member_boxes(points: np.ndarray, members: np.ndarray) -> None:
    """``member_boxes`` against each group's own minimum and maximum, ``inf``/``-inf`` for
    a group without rows."""
    from republish.objectives import member_boxes
    low, high = member_boxes(points, members)
    for row, lo, hi in zip(members, low, high, strict=True):
        used = row[row >= 0]
        if len(used):
            assert (lo == points[used].min(axis=0)).all() and (hi == points[used].max(axis=0)).all()
        else:
            assert np.isposinf(lo).all() and np.isneginf(hi).all()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_box_batch_matches_per_group(seed: int) -> None:
    """The vectorized extents (one member slot at a time) equal the group-by-group ones."""
    from republish.models.whole_release_extent_tables import TabulatedExtent
    rng = np.random.default_rng(seed)
    n, leaves = int(rng.integers(1, 30)), 5
    points = np.column_stack([rng.random(n), rng.integers(0, leaves, n)]).astype(float)
    tree = np.abs(np.subtract.outer(np.arange(leaves), np.arange(leaves))) / leaves
    measure = TabulatedExtent(points, [None, tree])
    members = rng.integers(-1, n, (25, 3))
    got = measure.batch(members)
    for row, value in zip(members, got, strict=True):
        used = row[row >= 0]
        assert value == pytest.approx(measure(used) if len(used) else 0.0)
    assert_member_boxes(points, members)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 6))
def test_member_boxes_of_few_groups_among_many_points(seed: int, width: int) -> None:
    """Few groups among many points (the gather path of ``member_ranges``, a slot trade's
    groups in a census): each group's box, ``inf``/``-inf`` for a group without rows."""
    rng = np.random.default_rng(seed)
    points = rng.random((400, 3))
    members = rng.integers(-1, 400, (int(rng.integers(1, 12)), width))
    members[0] = -1
    assert members.size < len(points) // 4
    assert_member_boxes(points, members)


def extension_case(seed: int) -> tuple[WholeReleaseProblem, Columns, TabledPricing]:
    """A first release at m = 3 whose three-row columns fit the table and larger ones do
    not: they are priced by extension."""
    problem = first_release(seed, 13, 3)
    counts = ReleaseCounts.of(problem)
    fams = families(problem, counts, 0)
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(1), 0, 5)
    triples = count_columns(dataclasses.replace(fams[0], hi=3), counts.is_new)
    pricer = TabledPricing(problem, columns, fams, deadline=math.inf, limit=triples)
    assert pricer.prices_all and not pricer.covers_all and pricer.tabled == triples
    return problem, columns, pricer


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([0.0, 0.05, 0.3]))
def test_extension_finds_every_column_under_theta(seed: int, theta: float) -> None:
    """Random prices: the extension returns exactly the columns of four and five rows of
    reduced cost <= theta, and per anchor their least reduced cost (brute force)."""
    problem, columns, pricer = extension_case(seed % 7)
    rng = np.random.default_rng(seed)
    n = len(problem.values)
    (extension,) = pricer.extensions
    everything = all_columns(extension.family, columns.counts.is_new, 5).astype(np.int64)
    larger = everything[(everything >= 0).sum(axis=1) > 3]
    cost, a_coef = columns.attributes(larger)
    y = rng.uniform(0.0, 1.2, n)
    # raise the prices of the rows of one column so that it passes: the test then bites
    c = int(rng.integers(len(larger)))
    chosen = larger[c][larger[c] >= 0]
    above = reduced_costs(larger[c:c + 1], cost[c:c + 1], a_coef[c:c + 1], y, 0.0)[0] - theta
    y[chosen] += (above + 0.01) / len(chosen)
    rc = reduced_costs(larger, cost, a_coef, y, 0.0)
    relaxed = Relaxation(y, 0.0, y, np.zeros(0), np.zeros(0), 0.0, 0.0)
    block, block_rc, least = extension.price(columns, relaxed, theta)
    expected = {tuple(r.tolist()) for r in larger[rc <= theta + 1e-9]}
    got = [tuple(r.tolist()) for r in block]
    assert len(got) == len(set(got)) and set(got) == expected
    assert np.allclose(block_rc, reduced_costs(block, *columns.attributes(block), y, 0.0))
    assert 0 < len(expected) < len(larger)  # some columns pass, not all
    for a in range(n):
        mine = rc[(larger[:, 0] == a) & (rc <= theta + 1e-9)]
        if len(mine):
            assert least[a] == pytest.approx(mine.min())
        else:
            assert least[a] > theta - 1e-9  # inf, or a column found above theta


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans())
@example(204, False)  # drew duals under which no row had a negative price
def test_row_prices_bound_every_column_of_an_extended_table(seed: int, deferrals: bool
                                                            ) -> None:
    """Random duals: every column, tabled (three rows) or only extended (four and five),
    has a reduced cost at least the sum of its rows' prices (brute force over all of
    them), so the LP value plus their sum bounds every solution."""
    problem, columns, pricer = extension_case(seed % 7)
    if deferrals:  # new rows may be deferred: the (a) coefficients count them
        problem = dataclasses.replace(problem, allow_deferrals=True)
        columns = Columns(problem, ReleaseCounts.of(problem), BoxExtent(problem.points),
                          Fraction(2, 3), 0, 5)
        pricer = TabledPricing(problem, columns, families(problem, columns.counts, 0),
                               deadline=math.inf, limit=pricer.tabled)
    assert pricer.bounds_by_subsets and pricer.table is not None
    rng = np.random.default_rng(seed)
    n = len(problem.values)
    y, y_a = rng.uniform(-0.2, 1.5, n), float(-rng.uniform(0.0, 0.5))
    while True:  # duals high enough that some row has a negative price (seed 204: none)
        relaxed = Relaxation(y, y_a, y, np.zeros(0), np.zeros(0), 0.0, 0.0)
        prices = pricer.row_prices(pricer.table.reduced_costs(relaxed))
        if (prices < 0).any():
            break
        y = y * 1.5 + 0.1
    (extension,) = pricer.extensions
    everything = all_columns(extension.family, columns.counts.is_new, 5).astype(np.int64)
    rc = reduced_costs(everything, *columns.attributes(everything), y, y_a)
    floor = np.where(everything >= 0, prices[np.maximum(everything, 0)], 0.0).sum(axis=1)
    assert (rc >= floor - 1e-9).all()
    larger = (everything >= 0).sum(axis=1) > 3
    assert larger.any() and (prices < 0).any()  # the larger columns are checked, and bite
    # each row's price is its tightest tabled column's: raising one would break the bound
    tabled = ~larger
    for i in np.flatnonzero(prices < 0)[:3]:
        holding = tabled & (everything == i).any(axis=1)
        sizes = (everything[holding] >= 0).sum(axis=1)
        assert prices[i] == pytest.approx((rc[holding] / sizes).min())


def test_extension_computes_the_pair_extents_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows' pair extents are computed by the first pricing call only; later calls
    under other prices find the same columns as a fresh extension would."""
    problem, columns, pricer = extension_case(2)
    (extension,) = pricer.extensions
    calls: list[int] = []
    real = BoxExtent.pairwise

    def pairwise(self: BoxExtent, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        calls.append(len(a))
        return real(self, a, b)

    monkeypatch.setattr(BoxExtent, "pairwise", pairwise)
    rng = np.random.default_rng(2)
    n = len(problem.values)
    found = 0
    for _ in range(3):
        y = rng.uniform(0.0, 1.2, n)
        relaxed = Relaxation(y, 0.0, y, np.zeros(0), np.zeros(0), 0.0, 0.0)
        block, _, least = extension.price(columns, relaxed, 0.3)
        fresh = dataclasses.replace(extension, pairs=[])
        again, _, fresh_least = fresh.price(columns, relaxed, 0.3)
        assert {tuple(r) for r in block.tolist()} == {tuple(r) for r in again.tolist()}
        assert np.array_equal(least, fresh_least)
        found += len(block)
    assert found > 0  # the calls find columns, so a wrong cache would show
    assert calls == [n] * 4  # the kept extension once, each fresh copy once


@pytest.mark.parametrize("seed", range(4))
def test_model_with_extension_pricing_matches_enumeration(seed: int) -> None:
    """The model priced by extension proves the optimum of the enumerated model."""
    from unittest import mock

    from republish.models import whole_release
    problem = first_release(seed, 13, 3)
    counts = ReleaseCounts.of(problem)
    (family,) = families(problem, counts, 0)
    triples = count_columns(dataclasses.replace(family, hi=3), counts.is_new)
    with mock.patch.object(whole_release, "TABLE_COLUMNS", triples):
        extended = solve_whole_release(problem, time_limit=20.0)
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 0):
        enumerated = solve_whole_release(problem, time_limit=20.0)
    assert "priced by extending" in extended.detail
    assert extended.status_b == enumerated.status_b == "OPTIMAL"
    assert extended.objective_b == pytest.approx(enumerated.objective_b, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_row_prices_bound_every_column_of_a_later_release(seed: int) -> None:
    """A release with two buckets of old rows (their columns tabled, counterfeits
    allowed) and new rows whose all-new groups of four and five rows are only extended:
    under random duals every column of every family has a reduced cost at least the sum
    of its rows' prices (all columns enumerated)."""
    rng = np.random.default_rng(seed)
    values = np.array([0, 1, 2] * 2 + [0, 1, 3] * 2 + [0, 1, 2, 3, 4] * 2)
    bucket = np.array([0] * 6 + [1] * 6 + [-1] * 10)
    problem = WholeReleaseProblem(rng.random((len(values), 2)), values, bucket,
                                  (frozenset({0, 1, 2}), frozenset({0, 1, 3})), 3, 5)
    counts = ReleaseCounts.of(problem)
    fams = families(problem, counts, 1)
    sizes = [count_columns(f, counts.is_new) for f in fams]
    (everyone,) = [f for f in fams if not f.need_old]
    triples = count_columns(dataclasses.replace(everyone, hi=3), counts.is_new)
    limit = sum(size for f, size in zip(fams, sizes, strict=True) if f.need_old) + triples
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(1), 0, 5)
    pricer = TabledPricing(problem, columns, fams, deadline=math.inf, limit=limit)
    assert pricer.bounds_by_subsets and len(pricer.extensions) == 1
    assert pricer.table is not None and not pricer.covers_all
    y, y_a = rng.uniform(-0.2, 1.5, len(values)), float(-rng.uniform(0.0, 0.5))
    relaxed = Relaxation(y, y_a, y, np.zeros(0), np.zeros(0), 0.0, 0.0)
    table_rc = pricer.table.reduced_costs(relaxed)
    prices = pricer.row_prices(table_rc)
    # exactly the least min(0, rc / |R|) of the tabled columns holding each row
    tabled = pricer.table.members
    expected = [min([0.0, *(table_rc[c] / (tabled[c] >= 0).sum()
                           for c in np.flatnonzero((tabled == i).any(axis=1)))])
                for i in range(len(values))]
    assert prices == pytest.approx(expected, abs=1e-12)
    everything = np.vstack([all_columns(f, counts.is_new, 5) for f in fams]).astype(np.int64)
    rc = reduced_costs(everything, *columns.attributes(everything), y, y_a)
    floor = np.where(everything >= 0, prices[np.maximum(everything, 0)], 0.0).sum(axis=1)
    assert (rc >= floor - 1e-9).all()
    assert ((everything >= 0).sum(axis=1) > 3).any() and (prices < 0).any()
    # with counterfeits allowed some columns are short of rows: their (a) coefficient
    assert (columns.attributes(everything)[1] != 0).any()


@pytest.mark.parametrize("seed", range(4))
def test_rounds_over_the_table_alone_bound_the_release(seed: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Column generation that never prices the extended columns (EXTEND_BELOW = 0) still
    bounds stage 2 by the row prices, and the bound is at most the enumerated optimum."""
    from republish.models import whole_release, whole_release_tables
    problem = first_release(seed, 13, 3)
    with monkeypatch.context() as patch:
        patch.setattr(whole_release, "TABLE_COLUMNS", 0)
        optimum = solve_whole_release(problem, time_limit=20.0)
    assert optimum.status_b == "OPTIMAL"
    counts = ReleaseCounts.of(problem)
    (family,) = families(problem, counts, 0)
    monkeypatch.setattr(whole_release, "TABLE_COLUMNS",
                        count_columns(dataclasses.replace(family, hi=3), counts.is_new))
    monkeypatch.setattr(whole_release_tables, "EXTEND_BELOW", 0.0)
    bounds: list[float] = []
    real = whole_release.stage2

    def stage2(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        bounds.append(result.bound)
        return result

    monkeypatch.setattr(whole_release, "stage2", stage2)
    extended = solve_whole_release(problem, time_limit=20.0)
    assert "priced by extending" in extended.detail
    (bound,) = bounds
    assert 0.5 * optimum.objective_b < bound <= optimum.objective_b + 1e-9
    assert extended.bound_b <= optimum.objective_b + 1e-9


def test_table_cells_cap_keeps_large_tables_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """TABLE_CELLS bounds a table's memory: past it the model prices as before, and
    proves the same optimum."""
    from republish.models import whole_release_tables
    problem = first_release(5, 16, 2)
    tabled = solve_whole_release(problem, time_limit=20.0)
    assert "every column tabled" in tabled.detail
    monkeypatch.setattr(whole_release_tables, "TABLE_CELLS", 10)
    assert whole_release_tables.table_limit(3) == 3
    capped = solve_whole_release(problem, time_limit=20.0)
    assert "tabled" not in capped.detail
    assert capped.status_b == tabled.status_b == "OPTIMAL"
    assert capped.objective_b == pytest.approx(tabled.objective_b, abs=1e-9)


def test_no_table_is_built_that_would_end_past_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is built in one piece: where its columns, at TABLE_SECONDS_PER_COLUMN
    each, would take it past the deadline, it is not built (the families are priced by
    anchors); with time for it, it is."""
    import time

    import republish.models.whole_release_tables as tables_module

    problem = first_release(0, 12, 2)
    counts = ReleaseCounts.of(problem)
    fams = families(problem, counts, 0)
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(1), 0, 3)
    built = TabledPricing(problem, columns, fams, deadline=time.perf_counter() + 60.0)
    assert built.covers_all and built.table is not None
    monkeypatch.setattr(tables_module, "TABLE_SECONDS_PER_COLUMN", 60.0 / built.tabled)
    skipped = TabledPricing(problem, columns, fams, deadline=time.perf_counter() + 30.0)
    assert skipped.table is None and not skipped.covers_all and skipped.rest
