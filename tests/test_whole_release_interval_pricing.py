"""Exact pricing by intervals (republish.models.whole_release_interval_pricing): the least
reduced cost of every class equals an enumeration of every column, and the column it
returns reaches it, whether the families are priced together or one chunk each."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import republish.models.whole_release_interval_pricing as pricing_module
from republish.models.whole_release_interval_pricing import IntervalFamily, price_families


def _instance(seed: int) -> tuple[list[IntervalFamily], np.ndarray, np.ndarray, int,
                                  np.ndarray, np.ndarray, float, int, bool]:
    rng = np.random.default_rng(seed)
    coordinates, domain = int(rng.integers(1, 6)), int(rng.integers(2, 5))
    n_types = int(rng.integers(2, 11))
    position = rng.integers(0, coordinates, n_types)
    value = rng.integers(0, domain, n_types)
    w = np.round(rng.normal(0.3, 1.0, n_types), 2)
    # extents monotone under inclusion, as every QI's are
    x = np.cumsum(rng.uniform(0.0, 1.0, coordinates))
    extent = np.abs(x[None, :] - x[:, None]) * (np.arange(coordinates)[None, :]
                                                 >= np.arange(coordinates)[:, None])
    m = int(rng.integers(2, 4))
    families = []
    for _ in range(int(rng.integers(1, 5))):
        values = [v for v in range(domain) if (value == v).any() and rng.random() < 0.8]
        pools = [np.flatnonzero((value == v) & (rng.random(n_types) < 0.8)) for v in values]
        pools = [pool for pool in pools if len(pool)]
        if not pools:
            continue
        hi = int(rng.integers(1, len(pools) + 1))
        lo = int(rng.integers(1, hi + 1))
        signature = 0 if rng.random() < 0.4 else int(rng.integers(hi, hi + 3))
        used = np.concatenate(pools)
        families.append(IntervalFamily(tuple(pools), lo, hi, signature,
                                       len(np.unique(position[used]))))
    slot = float(np.round(rng.uniform(-0.5, 0.5), 2))
    return families, position, value, coordinates, w, extent, slot, m, bool(rng.random() < 0.5)


def _column_cost(types: tuple[int, ...], family: IntervalFamily, position: np.ndarray,
                 w: np.ndarray, extent: np.ndarray, slot: float, m: int, ncp: bool) -> float:
    k = len(types)
    sigma = family.signature or max(m, k)
    spread = extent[position[list(types)].min(), position[list(types)].max()]
    return (k if ncp else sigma) * spread + sigma * slot - float(w[list(types)].sum())


def _enumerated(families: list[IntervalFamily], position: np.ndarray, value: np.ndarray,
                coordinates: int, w: np.ndarray, extent: np.ndarray, slot: float, m: int,
                ncp: bool) -> dict[int, float]:
    """Class -> least reduced cost over every column: a column is of class (v, p) when
    its least coordinate is x_p and it holds a row of value v there."""
    least: dict[int, float] = {}
    for family in families:
        for k in range(family.lo, family.hi + 1):
            for chosen in itertools.combinations(family.pools, k):
                for types in itertools.product(*chosen):
                    cost = _column_cost(types, family, position, w, extent, slot, m, ncp)
                    p = int(position[list(types)].min())
                    for t in types:
                        if position[t] == p:
                            c = int(value[t]) * coordinates + p
                            least[c] = min(least.get(c, np.inf), cost)
    return least


def _is_column(types: tuple[int, ...], family: IntervalFamily) -> bool:
    """One type from each of ``lo..hi`` distinct pools of ``family``."""
    held = [j for t in types for j, pool in enumerate(family.pools) if t in pool]
    return len(held) == len(types) == len(set(held)) and family.lo <= len(types) <= family.hi


def _check(seed: int) -> None:
    families, position, value, coordinates, w, extent, slot, m, ncp = _instance(seed)
    priced = price_families(families, position, value, coordinates, w, extent, slot, m, ncp)
    found: dict[int, float] = {}
    for c, cost in zip(priced.classes.tolist(), priced.least.tolist(), strict=True):
        found[c] = min(found.get(c, np.inf), cost)
    expected = _enumerated(families, position, value, coordinates, w, extent, slot, m, ncp)
    assert found.keys() == expected.keys()
    for c, cost in expected.items():
        assert found[c] == pytest.approx(cost, abs=1e-9)
    # each returned column is a column of a family of its |σ|, of its class, at its cost
    for c, cost, row, signature in zip(priced.classes, priced.least, priced.members,
                                       priced.signature, strict=True):
        types = tuple(int(t) for t in row[row >= 0])
        p = int(c) % coordinates
        assert int(position[list(types)].min()) == p
        assert any(int(value[t]) * coordinates + p == c and position[t] == p for t in types)
        costs = [_column_cost(types, f, position, w, extent, slot, m, ncp)
                 for f in families if f.signature == signature and _is_column(types, f)]
        assert any(abs(x - cost) < 1e-9 for x in costs)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**6))
def test_least_reduced_cost_of_every_class_equals_enumeration(seed: int) -> None:
    _check(seed)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_each_family_in_its_own_chunk_prices_the_same(seed: int) -> None:
    original = pricing_module.CHUNK_ELEMENTS
    try:
        pricing_module.CHUNK_ELEMENTS = 1
        _check(seed)
    finally:
        pricing_module.CHUNK_ELEMENTS = original
