"""The τ-safety random-counterfeit baseline on a dynamic series (m-eligibility paper, §IV-C).

Anjum et al.'s τ-safety (the m-eligibility paper's reference [14]) makes the new rows of a
release m-eligible by adding counterfeits with uniformly random sensitive values until the
table is m-eligible (:func:`republish.heuristics.eligibility.random_counterfeits`, the
static baseline of §IV-B). Fig. 7 of the m-eligibility paper compares it, release after
release, with Algorithm 1 (the minimal superset) on a series cut from Adult: a first
release of 20,000 rows, then 2,000 deletions and 4,000 insertions per release, seven
releases, five runs averaged. :data:`TAU_SAFETY` and :data:`ALGORITHM_1` are the two
eligibility policies of that comparison for
:func:`republish.heuristics.count_series.run_count_series`; :func:`growing_series` builds
the series.

τ-safety's counterfeits take values drawn uniformly from every sensitive value known so
far; Algorithm 1's take values absent from the leftover rows only when fewer than ``m`` are
present (the most frequent in ``T(n)`` first).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.errors import ParameterError
from republish.heuristics.count_series import CountPolicy
from republish.heuristics.eligibility import (
    greedy_hybrid,
    maximal_subset,
    minimal_superset,
)
from republish.problems.eligibility import EligibilitySolution, solution_from_targets

__all__ = ["ALGORITHM_1", "ALGORITHM_2", "ALGORITHM_3", "TAU_SAFETY", "growing_series",
           "random_rule"]


def _absent(counts: dict[str, int], domain: Sequence[str]) -> list[str]:
    return [v for v in domain if counts.get(v, 0) == 0]


def random_rule(counts: dict[str, int], m: int, domain: Sequence[str],
                rng: np.random.Generator) -> EligibilitySolution:
    """τ-safety: counterfeits with values drawn uniformly from the whole sensitive domain
    known so far (``domain``), until m-eligible.

    Drawn in exact jumps as :func:`~republish.heuristics.eligibility.random_counterfeits`:
    with ``g = m * max - |T|`` no table is eligible before ``g`` more rows, so ``g``
    draws are one multinomial sample. With ``len(domain) == m`` it must hit exactly equal
    counts, which a random walk may never do: a run is stopped after ``1000 * max(g, m)``
    counterfeits or 100,000 rounds (status ``INFEASIBLE``).
    """
    start = time.perf_counter()
    names = list(dict.fromkeys([*domain, *counts]))
    current = np.array([counts.get(v, 0) for v in names], dtype=np.int64)
    total = int(current.sum())
    gap = m * int(current.max()) - total
    added, cap, rounds = 0, 1000 * max(gap, m), 0
    probabilities = np.full(len(names), 1.0 / len(names))
    while gap > 0 and added < cap and rounds < 100_000:
        rounds += 1
        jump = min(gap, cap - added)
        current += rng.multinomial(jump, probabilities)
        added += jump
        gap = m * int(current.max()) - (total + added)
    targets = {v: int(c) for v, c in zip(names, current, strict=True)}
    original = {v: int(counts.get(v, 0)) for v in names}
    return solution_from_targets("tau-safety random", m, original, targets,
                                 status="HEURISTIC" if gap <= 0 else "INFEASIBLE",
                                 solve_time_s=time.perf_counter() - start)


def _algorithm_1(counts: dict[str, int], m: int, domain: Sequence[str],
                 rng: np.random.Generator) -> EligibilitySolution:
    return minimal_superset(counts, m, allow_new_values=True,
                            new_values=_absent(counts, domain))


def _algorithm_2(counts: dict[str, int], m: int, domain: Sequence[str],
                 rng: np.random.Generator) -> EligibilitySolution:
    return maximal_subset(counts, m)


def _algorithm_3(counts: dict[str, int], m: int, domain: Sequence[str],
                 rng: np.random.Generator) -> EligibilitySolution:
    return greedy_hybrid(counts, m, allow_new_values=True, new_values=_absent(counts, domain))


TAU_SAFETY = CountPolicy("tau-safety random", random_rule)
ALGORITHM_1 = CountPolicy("algorithm 1", _algorithm_1)
ALGORITHM_2 = CountPolicy("algorithm 2 (deferrals)", _algorithm_2)
ALGORITHM_3 = CountPolicy("algorithm 3 (hybrid)", _algorithm_3)


def growing_series(table: pd.DataFrame, initial: int, deletions: int, insertions: int,
                   releases: int, seed: int, identifier: str = "id") -> list[pd.DataFrame]:
    """``T(1)``: ``initial`` random rows; ``T(j)``: ``T(j-1)`` less ``deletions`` random
    rows plus ``insertions`` rows never published, drawn at random (§IV-C, Fig. 6). When
    no unused row is left the insertions are drawn from rows deleted earlier
    (re-insertions), which a table smaller than ``initial + (releases - 1) * insertions``
    needs.

    Raises
    ------
    ParameterError
        on negative sizes or when the table cannot supply a release.
    """
    if min(initial, deletions, insertions) < 0 or releases < 1:
        raise ParameterError("initial, deletions and insertions must be >= 0, releases >= 1.")
    if identifier not in table.columns:
        raise ParameterError(f"identifier column {identifier!r} is not in the table.")
    final = initial + (releases - 1) * (insertions - deletions)
    if max(initial, final) > len(table) or deletions > initial:
        raise ParameterError(f"the series needs {max(initial, final)} rows at once; the "
                             f"table has {len(table)}.")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table))
    current = order[:initial]
    unused = list(order[initial:])
    deleted: list[int] = []
    series = [table.iloc[current]]
    for _ in range(releases - 1):
        removed = rng.choice(len(current), size=deletions, replace=False)
        keep = np.ones(len(current), dtype=bool)
        keep[removed] = False
        fresh = unused[:insertions]
        unused = unused[insertions:]
        back: list[int] = []
        if len(fresh) < insertions:
            if insertions - len(fresh) > len(deleted):
                raise ParameterError(
                    f"release {len(series) + 1} needs {insertions} insertions; only "
                    f"{len(fresh)} unused and {len(deleted)} earlier-deleted rows are left.")
            picks = rng.choice(len(deleted), size=insertions - len(fresh), replace=False)
            back = [deleted[k] for k in picks.tolist()]
            chosen = set(back)
            deleted = [d for d in deleted if d not in chosen]
        deleted.extend(current[removed].tolist())
        current = np.concatenate([current[keep], np.asarray(fresh + back, dtype=np.int64)])
        series.append(table.iloc[current])
    return series
