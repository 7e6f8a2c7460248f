"""Balancing: give every value of a bucket's signature the same count (m-invariance, §4.1).

Xiao & Tao (SIGMOD 2007), §4.1, phase 2: a bucket is *balanced* when every sensitive
value of its signature is held by the same number of its rows. A bucket of previously
published rows with counts ``c_v`` (``v`` in its signature) is raised to
``k = max_v c_v`` rows per value: the deficit ``k - c_v`` of each value is filled with new
rows (``S−``) of value ``v`` while any remain, and with counterfeits of value ``v``
otherwise. A balanced bucket with ``k`` rows per value later splits into ``k`` groups of
one row per value, so each previously published row keeps its signature.

Only counts go in and out, so that an exact model can replace this step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from republish.errors import InputError

__all__ = ["Balancing", "balance_buckets", "forced_counterfeits"]


@dataclass(frozen=True)
class Balancing:
    """How every bucket is balanced.

    Attributes
    ----------
    targets:
        ``targets[b]``: rows per signature value of bucket ``b`` after balancing.
    from_new:
        ``from_new[b][v]``: new rows of value ``v`` moved into bucket ``b``.
    counterfeits:
        ``counterfeits[b][v]``: counterfeits of value ``v`` added to bucket ``b``.
    remaining:
        New rows per value left for the assignment phase.
    """

    targets: tuple[int, ...]
    from_new: tuple[dict[str, int], ...]
    counterfeits: tuple[dict[str, int], ...]
    remaining: dict[str, int]

    @property
    def total_counterfeits(self) -> int:
        return sum(sum(c.values()) for c in self.counterfeits)


def balance_buckets(
    counts: Sequence[Mapping[str, int]],
    available: Mapping[str, int],
) -> Balancing:
    """Balance buckets with new rows first and counterfeits for what remains.

    Parameters
    ----------
    counts:
        ``counts[b]``: rows of bucket ``b`` per value, with every value of the bucket's
        signature as a key (0 when no row holds it).
    available:
        New rows per sensitive value.

    Buckets are served in the given order when new rows of a value run short; the total
    number of counterfeits does not depend on that order.

    Raises
    ------
    InputError
        on a negative count or a bucket without any row.
    """
    remaining = {str(v): int(c) for v, c in available.items()}
    if any(c < 0 for c in remaining.values()):
        raise InputError("available new-row counts must be non-negative.")
    targets: list[int] = []
    from_new: list[dict[str, int]] = []
    counterfeits: list[dict[str, int]] = []
    for bucket, bucket_counts in enumerate(counts):
        if not bucket_counts or any(int(c) < 0 for c in bucket_counts.values()):
            raise InputError(f"bucket {bucket}: counts must be non-negative, one per value.")
        target = max(int(c) for c in bucket_counts.values())
        if target == 0:
            raise InputError(f"bucket {bucket} holds no row; a bucket starts from published rows.")
        taken: dict[str, int] = {}
        faked: dict[str, int] = {}
        for value, count in bucket_counts.items():
            deficit = target - int(count)
            if deficit <= 0:
                continue
            use = min(deficit, remaining.get(value, 0))
            if use:
                taken[value] = use
                remaining[value] -= use
            if deficit > use:
                faked[value] = deficit - use
        targets.append(target)
        from_new.append(taken)
        counterfeits.append(faked)
    return Balancing(
        targets=tuple(targets),
        from_new=tuple(from_new),
        counterfeits=tuple(counterfeits),
        remaining={v: c for v, c in remaining.items() if c > 0},
    )


def forced_counterfeits(counts: Sequence[Mapping[str, int]], available: Mapping[str, int]) -> int:
    """The fewest counterfeits any m-invariant release from this state publishes: a lower
    bound on objective (a) (counterfeits + weighted deferrals) of the release.

    Every bucket needs ``k_b >= max_v c_v`` rows of each signature value (its previously
    published rows keep their signature and only new rows are ever deferred), and a slot of
    value ``v`` is filled only by a new row of ``v`` or a counterfeit of ``v``; so at least
    ``sum_v max(0, sum_b (k_b - c_{b,v}) - available_v)`` counterfeits are published
    whatever the policy (§4.1; :func:`balance_buckets` reaches it, the eligibility of the
    leftover may add more).
    """
    slots: dict[str, int] = {}
    for bucket_counts in counts:
        if not bucket_counts:
            continue
        target = max(int(c) for c in bucket_counts.values())
        for value, count in bucket_counts.items():
            slots[str(value)] = slots.get(str(value), 0) + target - int(count)
    return sum(max(0, deficit - int(available.get(value, 0)))
               for value, deficit in slots.items())
