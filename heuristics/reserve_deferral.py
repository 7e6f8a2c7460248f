"""Reserve deferrals: hold surplus new rows back for the next releases' deficits.

A deviation from the m-invariance paper (Xiao & Tao, SIGMOD 2007, §4.1-4.2). In the
paper's protocol every new row of ``S−`` is published at once: balancing (§4.1) fills a
bucket's deficits with new rows of the missing value, else with counterfeits, and
Algorithm Assign (§4.2, Fig. 3) places *all* the rows left over in buckets. A deficit of
value ``v`` that finds no new row of ``v`` becomes a counterfeit, and it comes back at
every later release until a release brings a surplus of ``v``; but in that release the
surplus goes to Assign (into buckets) and is not kept for the next shortage. With random
deletions, the deficits of ``v`` per release and the new rows of ``v`` have about the same
mean once most buckets are small, so the shortfall behaves like a random walk that
nothing stores against (benchmarks/RESULTS.md, "m-invariance, issue 19 items 1-5").

This policy stores against it. After balancing, from the new rows left over, it holds back
(defers: the rows stay unpublished in ``T(n)`` and come back as new rows of ``T(n+1)``, the
product's partial publication, ``eligibility="delete"``) up to ``target_v`` rows of each
value ``v``, where

    ``target_v = ceil(factor * sqrt(demand_v))``,

``demand_v`` the smoothed number of deficit slots of ``v`` per release (balancing's
``from_new + counterfeits`` of ``v``, an exponential moving average: :class:`DemandTracker`),
i.e. a buffer of ``factor`` standard deviations of a Poisson-like per-release demand. The
rows held back never make the rest need more counterfeits for m-eligibility than the full
leftover needed (:func:`reserve_rows`). Deferrals are a cost too (rows of ``T(n)`` not in
``T*(n)``): a benchmark must report them beside the counterfeits.

Rare values (variant ``reserve-rare``): a value whose expected new rows per release,
``share_v * |S−|``, are below ``min_supply`` gets an unbounded target: its leftover rows
are all held back, so they only ever fill deficits of buckets that already hold the value
and no new bucket takes it (a bucket holding a value that arrives less than once a release
pays a counterfeit at every release until a row of it comes; :func:`rare_values`).

Only counts go in and out; the benchmark hook (``benchmarks/m_invariance_common.py``)
picks the rows and wires it around the product's balancing and eligibility phases.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from republish.errors import InputError, ParameterError

__all__ = ["DemandTracker", "eligibility_gap", "rare_values", "reserve_rows"]


def eligibility_gap(counts: Mapping[str, int], m: int) -> int:
    """Fewest rows to add to ``counts`` to make them m-eligible (0 if already, or empty).

    m-eligible: at least ``m`` distinct values and none above ``1/m`` of the rows. Adding
    ``x`` rows to values other than the most frequent (the domain is assumed to have at
    least ``m`` values) needs ``x >= m * n_1 - γ`` and ``x >= m - distinct``.
    """
    if m < 1:
        raise ParameterError(f"m={m}: must be at least 1.")
    present = [int(c) for c in counts.values() if int(c) != 0]
    if any(c < 0 for c in present):
        raise InputError("counts must be non-negative.")
    if not present:
        return 0
    return max(0, m * max(present) - sum(present), m - len(present))


def reserve_rows(
    leftover: Mapping[str, int], targets: Mapping[str, int], m: int
) -> dict[str, int]:
    """Rows per value to hold back from ``leftover``: at most ``targets[v]`` of value
    ``v`` and never more than it has, such that the rest needs no more rows for
    m-eligibility (:func:`eligibility_gap`) than ``leftover`` itself.

    Values are served by decreasing target (then name); for each, the largest amount that
    keeps the gap is taken. Returns only positive amounts.
    """
    rest = {str(v): int(c) for v, c in leftover.items() if int(c) > 0}
    if any(int(t) < 0 for t in targets.values()):
        raise InputError("targets must be non-negative.")
    allowed = eligibility_gap(rest, m)
    held: dict[str, int] = {}
    order = sorted(targets, key=lambda v: (-int(targets[v]), str(v)))
    for value in order:
        value = str(value)
        want = min(int(targets[value]), rest.get(value, 0))
        for amount in range(want, 0, -1):
            trial = dict(rest)
            trial[value] -= amount
            if eligibility_gap(trial, m) <= allowed:
                rest = trial
                held[value] = amount
                break
    return held


def rare_values(table_counts: Mapping[str, int], new_rows: int, min_supply: float) -> set[str]:
    """Values whose expected count among ``new_rows`` new rows (their share of the table
    ``table_counts`` times ``new_rows``) is below ``min_supply``."""
    if new_rows < 0 or min_supply < 0:
        raise ParameterError("new_rows and min_supply must be non-negative.")
    total = sum(int(c) for c in table_counts.values())
    if total <= 0:
        return set()
    return {str(v) for v, c in table_counts.items() if int(c) * new_rows < min_supply * total}


@dataclass
class DemandTracker:
    """Smoothed deficit slots per value and release, and the reserve targets they give.

    ``smoothing`` is the weight of the newest release in the moving average (1: only the
    last release). ``factor`` scales the buffer, in standard deviations of a Poisson demand.
    """

    factor: float = 2.0
    smoothing: float = 0.2
    demand: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.factor < 0:
            raise ParameterError(f"factor={self.factor}: must be non-negative.")
        if not 0.0 < self.smoothing <= 1.0:
            raise ParameterError(f"smoothing={self.smoothing}: must be in (0, 1].")

    def update(self, slots: Mapping[str, int]) -> None:
        """Record one release's deficit slots per value (values absent count as 0)."""
        for value in set(self.demand) | {str(v) for v in slots}:
            now = float(slots.get(value, 0))
            if now < 0:
                raise InputError(f"value {value!r}: negative demand {now}.")
            before = self.demand.get(value)
            self.demand[value] = now if before is None else (
                self.smoothing * now + (1.0 - self.smoothing) * before)

    def targets(self, hold_all: Collection[str] = (), unbounded: int = 10**9) -> dict[str, int]:
        """``ceil(factor * sqrt(demand_v))`` per value with a positive demand; ``unbounded``
        for the values of ``hold_all`` (e.g. :func:`rare_values`)."""
        targets = {v: math.ceil(self.factor * math.sqrt(d))
                   for v, d in self.demand.items() if d > 0 and self.factor > 0}
        targets.update(dict.fromkeys((str(v) for v in hold_all), unbounded))
        return targets
