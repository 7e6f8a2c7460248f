"""The offline optimum of a whole series (models/offline_series.py): brute force on tiny
series, and no online chain below it."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.errors import ParameterError
from republish.models.offline_series import (
    OfflineSeriesProblem,
    solve_offline_series,
    split_signature,
)
from republish.schema import QIAttribute, Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.offline_series import offline_optimum


def bucket_cost(counts: list[int], weight: Fraction, withholding: bool) -> Fraction:
    """Least counterfeits (+ weighted withheld rows) of one bucket in one release."""
    top = max(counts, default=0)
    options = range(top + 1) if withholding else [top]
    return min(sum(Fraction(g - min(n, g)) + weight * max(0, n - g) for n in counts)
               for g in options)


def brute_force(problem: OfflineSeriesProblem) -> Fraction:
    """Every person tries every signature of >= m codes holding its value (any size:
    this also checks that sizes m..2m-1 lose nothing)."""
    weight = Fraction(problem.deferral_weight).limit_denominator(1000)
    domain = range(problem.domain_size)
    choices = [[frozenset(s) for size in range(problem.m, problem.domain_size + 1)
                for s in itertools.combinations(domain, size) if v in s]
               for v in problem.values.tolist()]
    best = None
    for assignment in itertools.product(*choices):
        total = Fraction(0)
        for j in range(problem.presence.shape[1]):
            for sigma in set(assignment):
                counts = [sum(1 for p, s in enumerate(assignment) if s == sigma and
                              problem.presence[p, j] and problem.values[p] == v)
                          for v in sorted(sigma)]
                if sum(counts):
                    total += bucket_cost(counts, weight, problem.allow_withholding)
        best = total if best is None else min(best, total)
    assert best is not None
    return best


@st.composite
def tiny_series(draw: st.DrawFn) -> OfflineSeriesProblem:
    m = draw(st.integers(2, 3))
    domain = m + draw(st.integers(0, 1))
    persons = draw(st.integers(1, 5 if m == 2 else 4))
    releases = draw(st.integers(1, 3))
    values = np.array([draw(st.integers(0, domain - 1)) for _ in range(persons)])
    presence = np.array([[draw(st.booleans()) for _ in range(releases)]
                         for _ in range(persons)])
    return OfflineSeriesProblem(values, presence, m, domain,
                                deferral_weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                                allow_withholding=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_series())
def test_model_equals_brute_force(problem: OfflineSeriesProblem) -> None:
    solution = solve_offline_series(problem, time_limit=20.0)
    assert solution.status == "OPTIMAL"
    expected = brute_force(problem)
    assert solution.objective == pytest.approx(float(expected))
    assert solution.bound == pytest.approx(float(expected))
    weight = Fraction(problem.deferral_weight).limit_denominator(1000)
    assert solution.counterfeits + weight * solution.withheld == expected
    if not problem.allow_withholding:
        assert solution.withheld == 0


def test_too_large_is_said_not_guessed() -> None:
    problem = OfflineSeriesProblem(np.arange(20) % 12, np.ones((20, 2), bool), 5, 12)
    solution = solve_offline_series(problem, time_limit=1.0, max_variables=100)
    assert solution.status == "TOO_LARGE" and solution.objective is None
    assert solution.bound == 0.0 and solution.gap is None


def test_parameters_are_validated() -> None:
    with pytest.raises(ParameterError, match="presence"):
        OfflineSeriesProblem(np.array([0, 1]), np.ones((3, 2), bool), 2, 2)
    with pytest.raises(ParameterError, match="domain_size"):
        OfflineSeriesProblem(np.array([0, 1]), np.ones((2, 2), bool), 3, 2)


SCHEMA = Schema(identifier="id", sensitive="disease", qis=(QIAttribute("age", "numeric"),))


def random_series(seed: int, people: int, releases: int, domain: int) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    value = rng.integers(0, domain, people)
    age = rng.integers(20, 70, people)
    present = rng.random((people, releases)) < 0.75
    present[:, 0] |= rng.random(people) < 0.5
    return [pd.DataFrame({"id": ids, "age": age[ids],
                          "disease": [f"d{v}" for v in value[ids]]})
            for ids in (np.flatnonzero(present[:, j]) for j in range(releases))]


@pytest.mark.parametrize("seed", range(6))
def test_no_online_chain_beats_the_offline_optimum(seed: int) -> None:
    series = random_series(seed, people=14, releases=3, domain=4)
    m = 2 + seed % 2
    offline = offline_optimum(series, SCHEMA, m, time_limit=20.0)
    assert offline.solution.status == "OPTIMAL" and offline.exact_for_chain
    for mode in ("heuristic", "exact"):
        state, total = None, 0
        for table in series:
            if len(table) == 0:
                continue
            step = publish_m_invariant(table, SCHEMA, m, state, mode=mode, time_limit=5.0,
                                       rng=np.random.default_rng(seed))
            state = step.state
            total += int(step.summary()["counterfeits"])
        assert total >= offline.solution.objective - 1e-9
        # the chain's signatures start the solver: never worse than the chain, at any budget
        hinted = offline_optimum(series, SCHEMA, m, time_limit=0.05, state=state)
        assert hinted.solution.objective is not None
        assert offline.solution.objective - 1e-9 <= hinted.solution.objective <= total + 1e-9


def test_split_signature_keeps_the_value_and_sizes() -> None:
    for size in range(2, 12):
        sigma = frozenset(range(size))
        for value in sigma:
            part = split_signature(sigma, value, 2)
            assert value in part and 2 <= len(part) <= 3 and set(part) <= sigma
