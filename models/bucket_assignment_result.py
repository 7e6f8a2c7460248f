"""The result type of the bucket-assignment model, its checker, and its construction
from a heuristic's counts (:mod:`republish.models.bucket_assignment`)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.models.solve import certificate
from republish.parameters import validate_m
from republish.problems.buckets import BucketCounts, m_unique_feasible

__all__ = [
    "STEP",
    "BucketAssignment",
    "bucket_assignment_from_counts",
    "bucket_assignment_problems",
]

STEP = "bucket-assignment"


@dataclass(frozen=True)
class BucketAssignment:
    """Counts of one release step; empty tuples/dicts when ``status`` has no solution.

    Attributes
    ----------
    targets:
        ``targets[b]``: rows per signature value of bucket ``b`` (``k[b]``, its groups).
    from_new:
        ``from_new[b][v]``: new rows of value ``v`` joining bucket ``b`` (``x[b,v]``).
    counterfeits:
        ``counterfeits[b][v]``: counterfeits of value ``v`` in bucket ``b`` (``f[b,v]``).
    leftover:
        New rows per value joining no bucket, deferred ones included (``L[v]``).
    eligibility_counterfeits:
        Counterfeits per value added to the leftover (``E[v]``).
    deferrals:
        Leftover rows per value held back from this release (``D[v]``).
    objective:
        ``Σ f + Σ E + deferral_weight · Σ D``; ``inf`` without a solution.
    status:
        ``OPTIMAL``, ``FEASIBLE``, ``HEURISTIC`` (built from a heuristic's counts),
        ``INFEASIBLE`` or ``TIMEOUT`` (no solution found in time).
    bound:
        Proven lower bound of the objective (``None`` when nothing is proven).
    wall_time_s:
        Wall time of the model (building included), or of the heuristic that gave the counts.
    certificate:
        Status, objective, bound and times as stored with the release.
    """

    m: int
    targets: tuple[int, ...]
    from_new: tuple[dict[str, int], ...]
    counterfeits: tuple[dict[str, int], ...]
    leftover: dict[str, int]
    eligibility_counterfeits: dict[str, int]
    deferrals: dict[str, int]
    objective: float
    status: str
    bound: float | None
    wall_time_s: float
    certificate: Certificate

    @property
    def feasible(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE", "HEURISTIC")

    @property
    def bucket_counterfeits(self) -> int:
        return sum(sum(f.values()) for f in self.counterfeits)

    @property
    def total_counterfeits(self) -> int:
        return self.bucket_counterfeits + sum(self.eligibility_counterfeits.values())

    @property
    def total_deferrals(self) -> int:
        return sum(self.deferrals.values())

    @property
    def published_leftover(self) -> dict[str, int]:
        """Real leftover rows published this release: ``L[v] - D[v]``."""
        return {
            v: c - self.deferrals.get(v, 0)
            for v, c in self.leftover.items()
            if c > self.deferrals.get(v, 0)
        }


def validate(
    buckets: Sequence[BucketCounts],
    new_counts: Mapping[str, int],
    m: int,
    deferral_weight: float,
) -> dict[str, int]:
    m = validate_m(m)
    if not (isinstance(deferral_weight, int | float) and math.isfinite(deferral_weight)
            and deferral_weight >= 0):
        raise ParameterError(
            f"deferral_weight must be a finite non-negative number, got {deferral_weight!r}."
        )
    for b, bucket in enumerate(buckets):
        if not isinstance(bucket, BucketCounts):
            raise InputError(f"buckets[{b}] must be a BucketCounts, got {type(bucket).__name__}.")
        if len(bucket.signature) < m:
            raise InputError(
                f"bucket {b} has signature {list(bucket.signature)} of fewer than m={m} "
                "values; it cannot come from an m-unique release."
            )
    counts: dict[str, int] = {}
    for value, count in new_counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"new_counts[{value!r}] must be a non-negative integer, got {count!r}."
            )
        counts[str(value)] = int(count)
    return counts


def objective_value(f_total: int, e_total: int, d_total: int, deferral_weight: float) -> float:
    return float(f_total + e_total) + deferral_weight * d_total


def bucket_assignment_problems(
    buckets: Sequence[BucketCounts],
    new_counts: Mapping[str, int],
    m: int,
    solution: BucketAssignment,
    allow_deferrals: bool = False,
    allow_new_values: bool = False,
    new_values: Collection[str] = (),
) -> list[str]:
    """Every constraint of the model that ``solution`` violates (empty when valid)."""
    problems: list[str] = []
    if len(solution.targets) != len(buckets):
        return [f"{len(solution.targets)} targets for {len(buckets)} buckets"]
    used: dict[str, int] = {}
    for b, bucket in enumerate(buckets):
        k = solution.targets[b]
        x, f = solution.from_new[b], solution.counterfeits[b]
        outside = sorted((set(x) | set(f)) - set(bucket.signature))
        if outside:
            problems.append(f"bucket {b}: values {outside} outside its signature")
        if k < bucket.min_groups:
            problems.append(f"bucket {b}: k={k} below its largest old count {bucket.min_groups}")
        for v in bucket.signature:
            if min(x.get(v, 0), f.get(v, 0)) < 0:
                problems.append(f"bucket {b}: negative count for {v!r}")
            if bucket.count(v) + x.get(v, 0) + f.get(v, 0) != k:
                problems.append(f"bucket {b}: value {v!r} not balanced to k={k}")
            used[v] = used.get(v, 0) + x.get(v, 0)
        if sum(bucket.count(v) + x.get(v, 0) for v in bucket.signature) < k:
            problems.append(f"bucket {b}: fewer real rows than its {k} groups")
    for v in set(used) | set(new_counts) | set(solution.leftover):
        if new_counts.get(v, 0) - used.get(v, 0) != solution.leftover.get(v, 0):
            problems.append(f"leftover of {v!r} is not new rows minus rows joining buckets")
        if solution.leftover.get(v, 0) < 0:
            problems.append(f"more new rows of {v!r} join buckets than exist")
    deferred = solution.deferrals
    if any(c > 0 for c in deferred.values()) and not allow_deferrals:
        problems.append("deferrals used but not allowed")
    if any(deferred.get(v, 0) > solution.leftover.get(v, 0) or deferred.get(v, 0) < 0
           for v in deferred):
        problems.append("more rows deferred than left over")
    published = solution.published_leftover
    extra = set(new_values) if allow_new_values else set()
    for v, e in solution.eligibility_counterfeits.items():
        if e < 0 or (e > 0 and v not in published and v not in extra):
            problems.append(f"eligibility counterfeits of {v!r}, absent from the leftover")
    if not m_unique_feasible(published, solution.eligibility_counterfeits, m):
        problems.append("the leftover cannot form m-unique groups each holding a real row")
    return problems


def bucket_assignment_from_counts(
    buckets: Sequence[BucketCounts],
    new_counts: Mapping[str, int],
    m: int,
    targets: Sequence[int],
    from_new: Sequence[Mapping[str, int]],
    eligibility_counterfeits: Mapping[str, int],
    deferrals: Mapping[str, int],
    deferral_weight: float = 1.0,
    wall_time_s: float = 0.0,
) -> BucketAssignment:
    """A :class:`BucketAssignment` (status ``HEURISTIC``) from a heuristic's counts.

    Bucket counterfeits and the leftover follow from ``targets`` and ``from_new``. Use
    :func:`bucket_assignment_problems` to check it.
    """
    counts = validate(buckets, new_counts, m, deferral_weight)
    counterfeits = tuple(
        {v: t - bucket.count(v) - x.get(v, 0) for v in bucket.signature
         if t - bucket.count(v) - x.get(v, 0) != 0}
        for bucket, t, x in zip(buckets, targets, from_new, strict=True)
    )
    used: dict[str, int] = {}
    for x in from_new:
        for v, c in x.items():
            used[v] = used.get(v, 0) + c
    leftover = {v: counts.get(v, 0) - used.get(v, 0) for v in set(counts) | set(used)}
    e = {v: c for v, c in eligibility_counterfeits.items() if c}
    d = {v: c for v, c in deferrals.items() if c}
    objective = objective_value(
        sum(sum(f.values()) for f in counterfeits), sum(e.values()), sum(d.values()),
        deferral_weight,
    )
    return BucketAssignment(
        m=m,
        targets=tuple(int(t) for t in targets),
        from_new=tuple({v: c for v, c in x.items() if c} for x in from_new),
        counterfeits=counterfeits,
        leftover={v: c for v, c in leftover.items() if c},
        eligibility_counterfeits=e,
        deferrals=d,
        objective=objective,
        status="HEURISTIC",
        bound=None,
        wall_time_s=wall_time_s,
        certificate=certificate(STEP, "HEURISTIC", objective, heuristic_objective=objective,
                                times={"heuristic": wall_time_s}),
    )


def no_solution(m: int, status: str, bound: float | None, elapsed: float) -> BucketAssignment:
    return BucketAssignment(
        m=m, targets=(), from_new=(), counterfeits=(), leftover={},
        eligibility_counterfeits={}, deferrals={}, objective=math.inf, status=status,
        bound=bound, wall_time_s=elapsed,
        certificate=certificate(STEP, status, None, bound, times={"model": elapsed}),
    )
