"""The exact steps plugged into the m-invariant release (:mod:`republish.solver.m_invariance`).

With ``mode`` ``auto`` or ``exact``, :func:`publish_m_invariant` takes its count decisions
(balancing, whole extra rows, eligibility of the leftover) from :func:`decide_counts`
-- the bucket-assignment model hinted with the greedy phases, via
:func:`republish.solver.steps.bucket_step` -- and groups every bucket with
:func:`exact_splitter` (:func:`republish.solver.group_steps.split_step`: the §4.3 split, then
the exact group formation). With ``mode="heuristic"`` (the default) neither is used.

One time budget covers the whole step: the pipeline fixes a deadline when the step starts,
the bucket-assignment model may use at most :data:`COUNTS_SHARE` of the time left, and the
grouping gets whatever is left when it starts (shared among the buckets by rows). The
greedy answer is always ready first, so a spent budget means heuristic groups, never a
late release.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.heuristics.balancing import Balancing
from republish.heuristics.perimeter_split import SplitResult
from republish.models.bucket_assignment import BucketAssignment
from republish.problems.buckets import BucketCounts
from republish.problems.eligibility import EligibilitySolution, solution_from_targets
from republish.schema import Schema
from republish.solver.certificate import Certificate
from republish.solver.eligibility import apply_eligibility
from republish.solver.group_steps import split_step
from republish.solver.step_modes import Eligibility, Mode
from republish.solver.steps import bucket_step

__all__ = ["COUNTS_SHARE", "DecidedCounts", "decide_counts", "defer_rows", "exact_splitter"]

#: Most of the step's remaining time the bucket-assignment model may take; the rest is
#: kept for group formation (measured: counts are solved in milliseconds to a few seconds,
#: while grouping large buckets uses all it gets).
COUNTS_SHARE = 0.5


@dataclass(frozen=True)
class DecidedCounts:
    """The bucket-assignment answer as the pipeline's phases consume it."""

    balancing: Balancing
    assignment: BucketAssignment
    certificate: Certificate


def decide_counts(
    signatures: Sequence[frozenset[str]],
    counts: Sequence[Mapping[str, int]],
    available: Mapping[str, int],
    m: int,
    eligibility: Eligibility,
    domain: Sequence[str],
    mode: Mode,
    deadline: float,
    workers: int,
) -> DecidedCounts:
    """Counts per bucket (new rows, counterfeits, extra rows) and for the leftover, with
    at most :data:`COUNTS_SHARE` of the time left before ``deadline`` (``perf_counter``)."""
    buckets = [BucketCounts(tuple(sorted(s)), dict(c)) for s, c in zip(signatures, counts,
                                                                       strict=True)]
    result = bucket_step(buckets, dict(available), m, mode=mode, eligibility=eligibility,
                         allow_new_values=True, new_values=list(domain), value_order=domain,
                         time_limit=_seconds_left(deadline, COUNTS_SHARE), workers=workers)
    balancing = Balancing(
        targets=result.targets,
        from_new=result.from_new,
        counterfeits=result.counterfeits,
        remaining=dict(result.leftover),
    )
    return DecidedCounts(balancing, result, result.certificate)


def defer_rows(decided: DecidedCounts, table: pd.DataFrame, schema: Schema,
               leftover: np.ndarray, m: int) -> tuple[EligibilitySolution, np.ndarray]:
    """The leftover's eligibility as an :class:`EligibilitySolution`, and the deferred rows
    (positions in ``table``; the outliers of each value, as the greedy pipeline does)."""
    assignment = decided.assignment
    original = dict(assignment.leftover)
    targets = {v: c - assignment.deferrals.get(v, 0) for v, c in original.items()}
    for v, c in assignment.eligibility_counterfeits.items():
        targets[v] = targets.get(v, 0) + c
    solution = solution_from_targets(
        f"bucket-assignment ({assignment.status})", m, original, targets,
        status=assignment.status, solve_time_s=assignment.wall_time_s,
        bound=assignment.bound,
    )
    if not assignment.deferrals or len(leftover) == 0:
        return solution, np.zeros(0, dtype=np.int64)
    applied = apply_eligibility(table.iloc[leftover], schema, solution, seed=None)
    return solution, np.sort(applied.deferred.index.to_numpy(dtype=np.int64))


def _seconds_left(deadline: float, share: float = 1.0) -> float:
    # The steps need a positive limit; below MIN_MODEL_TIME they answer heuristically.
    return max(share * (deadline - time.perf_counter()), 1e-3)


def exact_splitter(
    mode: Mode, deadline: float, workers: int, certificates: list[Certificate]
) -> Callable[[np.ndarray, np.ndarray, np.ndarray], SplitResult]:
    """A drop-in for ``split_buckets_min_perimeter`` that groups every bucket exactly
    (when the models allow and time is left before ``deadline``) and records the
    grouping certificate in ``certificates``."""

    def split(points: np.ndarray, values: np.ndarray, buckets: np.ndarray) -> SplitResult:
        groups, certificate = split_step(points, values, buckets, mode=mode,
                                         time_limit=_seconds_left(deadline),
                                         workers=workers)
        certificates.append(certificate)
        return SplitResult(groups=groups, group_count=int(groups.max()) + 1 if len(groups)
                           else 0, levels=0)

    return split
