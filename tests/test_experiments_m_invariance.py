"""Issue 19 (m-invariance experiments): the Adult-skewed census table and the
"reuse existing signatures" Assign policy (fast checks; the sweeps are in benchmarks/)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import republish.solver.m_invariance as mi
from republish.datasets import (
    ADULT_OCCUPATION_COUNTS,
    dynamic_series,
    sensitive_shares,
    synthetic_census,
)
from republish.errors import ParameterError
from republish.heuristics.assign import assign_new_rows
from republish.heuristics.assign_reuse import assign_reusing, reuse_alpha
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.options import SolveOptions


def _eligible(counts: dict[str, int], m: int) -> bool:
    total = sum(counts.values())
    return all(m * c <= total for c in counts.values())


def _random_eligible_counts(rng: np.random.Generator, m: int) -> dict[str, int]:
    values = int(rng.integers(m, m + 8))
    counts = {f"v{i}": int(c) for i, c in enumerate(rng.integers(1, 30, size=values))}
    while not _eligible(counts, m):
        top = max(counts, key=counts.__getitem__)
        counts[top] -= 1
    return counts


def _replay(counts: dict[str, int], moves, m: int) -> None:
    remaining = dict(counts)
    for values, alpha in moves:
        assert len(set(values)) == len(values) >= m and alpha >= 1
        for value in values:
            remaining[value] -= alpha
            assert remaining[value] >= 0
        rest = {v: c for v, c in remaining.items() if c}
        assert not rest or _eligible(rest, m)
    assert not any(remaining.values())


def test_adult_occupation_shares_and_default_unchanged() -> None:
    shares = sensitive_shares("adult-occupation")
    assert list(shares) == list(ADULT_OCCUPATION_COUNTS)
    assert shares["Prof-specialty"] == pytest.approx(4038 / 30162)
    stretched = sensitive_shares("adult-occupation-50")
    assert len(stretched) == 50 and sum(stretched.values()) == pytest.approx(1.0)
    assert max(stretched.values()) < 0.04
    table, _ = synthetic_census(4000, seed=2, sensitive_distribution="adult-occupation")
    observed = table["occupation"].value_counts(normalize=True)
    assert observed.index[0] in ("Prof-specialty", "Craft-repair", "Exec-managerial")
    assert abs(observed["Sales"] - shares["Sales"]) < 0.01
    default, _ = synthetic_census(500, seed=3)
    explicit, _ = synthetic_census(500, seed=3, sensitive_distribution="census")
    assert default.equals(explicit)
    with pytest.raises(ParameterError):
        synthetic_census(10, seed=1, sensitive_distribution="zipf")


def test_reuse_without_existing_signatures_is_the_papers_assign() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        m = int(rng.integers(2, 6))
        counts = _random_eligible_counts(rng, m)
        assert assign_reusing(counts, m).moves == assign_new_rows(counts, m).moves


def test_reuse_places_everything_balanced_and_keeps_the_rest_eligible() -> None:
    rng = np.random.default_rng(1)
    for _ in range(40):
        m = int(rng.integers(2, 5))
        counts = _random_eligible_counts(rng, m)
        values = sorted(counts)
        existing = [frozenset(rng.choice(values, size=int(rng.integers(m, len(values) + 1)),
                                         replace=False).tolist()) for _ in range(4)]
        result = assign_reusing(counts, m, existing)
        _replay(counts, result.moves, m)
        for signature, per_value in result.buckets.items():
            assert set(per_value) == signature and len(set(per_value.values())) == 1
        placed = Counter()
        for per_value in result.buckets.values():
            placed.update(per_value)
        assert dict(placed) == counts


def test_reuse_alpha_is_the_largest_that_keeps_the_rest_eligible() -> None:
    rng = np.random.default_rng(2)
    for _ in range(60):
        m = int(rng.integers(2, 5))
        counts = _random_eligible_counts(rng, m)
        signature = frozenset(rng.choice(sorted(counts), size=m + int(rng.integers(0, 3)),
                                         replace=False).tolist()) \
            if len(counts) >= m + 2 else frozenset(sorted(counts)[:m])
        alpha = reuse_alpha(counts, signature, m)

        def after(a: int, counts: dict[str, int] = counts,
                  signature: frozenset[str] = signature) -> dict[str, int]:
            return {v: c - (a if v in signature else 0) for v, c in counts.items()}

        if alpha:
            rest = {v: c for v, c in after(alpha).items() if c}
            assert min(after(alpha).values()) >= 0 and (not rest or _eligible(rest, m))
        bigger = after(alpha + 1)
        rest = {v: c for v, c in bigger.items() if c}
        assert min(bigger.values()) < 0 or (rest and not _eligible(rest, m))


def test_reuse_prefers_an_existing_signature() -> None:
    counts = {"a": 5, "b": 5, "c": 4, "d": 3, "e": 3}
    assert assign_new_rows(counts, 2).moves[0] == (("a", "b"), 5)
    result = assign_reusing(counts, 2, [frozenset("de")])
    assert result.moves[0] == (("d", "e"), 3)
    assert frozenset("de") in result.buckets
    _replay(counts, result.moves, 2)


def test_reuse_policy_inside_a_verified_series(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line hook, applied by wrapping place_assignment: releases still verify."""
    m = 4
    original = mi.place_assignment
    seen: list[int] = []

    def place(work, moves) -> None:  # type: ignore[no-untyped-def]
        counts: Counter[str] = Counter()
        for values, alpha in moves:
            for value in values:
                counts[value] += alpha
        before = list(work.signatures)
        seen.append(len(before))
        original(work, assign_reusing(counts, m, before).moves)

    monkeypatch.setattr(mi, "place_assignment", place)
    table, schema = synthetic_census(900, seed=4, sensitive_distribution="adult-occupation-50")
    state = None
    rng = np.random.default_rng(4)
    for microdata in dynamic_series(table, 300, 60, 4, seed=4):
        result = publish_m_invariant(microdata, schema, m, state, rng=rng, validated=True,
                                     mode="heuristic")
        state = result.state
        assert result.report.ok
    assert len(seen) == 4 and seen[-1] > 0


def test_assign_option_selects_the_reuse_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``assign="reuse"`` (CLI --assign reuse) runs the reuse policy in the release step,
    the default runs the paper's Assign; both verify; a bad value names the option."""
    calls: list[int] = []

    def spy(counts, m, existing, sizes):  # type: ignore[no-untyped-def]
        calls.append(len(existing))
        return assign_reusing(counts, m, existing, sizes)

    monkeypatch.setattr(mi, "assign_reusing", spy)
    table, schema = synthetic_census(900, seed=4, sensitive_distribution="adult-occupation-50")
    for policy in ("paper", "reuse"):
        calls.clear()
        state, rng = None, np.random.default_rng(4)
        for microdata in dynamic_series(table, 300, 60, 3, seed=4):
            result = publish_m_invariant(microdata, schema, 4, state, rng=rng, validated=True,
                                         mode="heuristic", assign=policy)
            state = result.state
            assert result.report.ok
        assert (len(calls) == 3) == (policy == "reuse")
    with pytest.raises(ParameterError, match="--assign"):
        SolveOptions(assign="greedy")
