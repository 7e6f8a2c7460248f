"""Pricing by extension (republish.models.whole_release_extension): every column of more
than k rows whose reduced cost reaches theta is found, and each anchor's least reduced cost
is exact where it reaches theta, against enumeration of every column of the family."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.models.whole_release import WholeReleaseProblem
from republish.models.whole_release_bound import Relaxation, reduced_costs
from republish.models.whole_release_columns import Columns
from republish.models.whole_release_counts import BoxExtent, ReleaseCounts, families
from republish.models.whole_release_extension import Extension, _extents
from republish.models.whole_release_extent_tables import tabulated
from republish.models.whole_release_tables import all_columns


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 3), st.sampled_from([0.0, -0.05, -0.3]))
def test_extension_finds_every_column_below_theta(seed: int, m: int, theta: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(m + 2, 10))
    values = rng.integers(0, m + 2, n)
    problem = WholeReleaseProblem(rng.integers(0, 6, (n, 2)) / 6, values, np.full(n, -1), (),
                                  m, m + 2)
    counts = ReleaseCounts.of(problem)
    family = next(f for f in families(problem, counts, 0) if not f.need_old)
    measure = tabulated(BoxExtent(problem.points))
    hi, k = m + 1, m - 1  # two levels of extension past the base of k rows
    columns = Columns(problem, counts, measure, Fraction(1), 0, hi)
    base = all_columns(dataclasses.replace(family, lo=k, hi=k), counts.is_new, k)
    extension = Extension(dataclasses.replace(family, lo=m, hi=hi), k, base,
                          _extents(measure, base) if len(base) else np.zeros(0))
    y = rng.uniform(-0.2, 1.0, n)  # duals with ties and negative prices
    y[rng.integers(0, n, 2)] = y[0]
    relaxed = Relaxation(y, 0.0, y.copy(), np.zeros(0), np.zeros(0), 0.0, 0.0)
    found, rc, least = extension.price(columns, relaxed, theta)

    every = [c for size in range(m, hi + 1) for c in itertools.combinations(range(n), size)
             if len(set(values[list(c)].tolist())) == size]
    if not every:
        assert not len(found)
        return
    block = columns.canonical(np.array([list(c) + [-1] * (hi - len(c)) for c in every]))
    cost, a_coef = columns.attributes(block)
    expected_rc = reduced_costs(block, cost, a_coef, y, 0.0)
    tolerance = 1e-9 * max(1.0, abs(theta))
    below = {tuple(row) for row in block[expected_rc <= theta + tolerance].tolist()}
    assert {tuple(row) for row in found.tolist()} == below
    for anchor in range(n):
        mine = expected_rc[block[:, 0] == anchor]
        if len(mine) and mine.min() <= theta + tolerance:
            assert least[anchor] == np.float64(mine.min()) or \
                abs(least[anchor] - mine.min()) <= 1e-9
        else:
            assert least[anchor] > theta
