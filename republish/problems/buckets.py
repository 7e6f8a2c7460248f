"""Buckets of previously published rows, and when counts can form m-unique groups.

Shared by the greedy release pipeline (:mod:`republish.heuristics`) and the exact models
(:mod:`republish.models.bucket_assignment`, :mod:`republish.models.grouping.formation`), so
it lives in the core.

A *bucket* (m-invariance paper, §4.1) holds the rows of ``S∩`` whose last hosting group
had one signature; :class:`BucketCounts` gives its signature and rows per value.

Counterfeits have no QI values and must never form a group on their own: every published
group holds at least one real row. Which multisets of real rows and counterfeits can be
split into m-unique groups that each hold a real row is answered exactly by
:func:`m_unique_feasible`:

    **Lemma.** Let value ``v`` have ``r_v`` real rows and ``e_v`` counterfeits,
    ``t_v = r_v + e_v``, ``N = Σ t_v`` and ``R = Σ r_v``. The rows can be partitioned
    into groups of at least ``m`` rows with pairwise distinct values, each holding a
    real row, if and only if ``m·max_v t_v <= N`` (m-eligibility) and
    ``max_v t_v <= R`` (equivalently ``e_v <= Σ_{u≠v} r_u`` for every ``v``).

*Necessity*: a value's ``t_v`` rows lie in ``t_v`` distinct groups, each with ``>= m``
rows (so ``m·t_v <= N``) and a real row (so ``t_v <= R``). *Sufficiency* is
constructive: :func:`plan_m_unique_groups` builds ``g = max_v t_v`` groups one at a
time; each group takes every value with ``t_v = g``, is filled to ``m`` values
(counterfeit-capable values first, the most frequent first) with one real row chosen
when none is forced, and leaves counts meeting the same condition for ``g - 1``. The
lemma is checked against exhaustive search in ``tests/test_bucket_assignment.py``.

A balanced bucket (signature size ``s``, ``k`` rows per value) is the case ``m = s``
with every ``t_v = k``: it splits into ``k`` groups of one row per value, each with a
real row, if and only if it holds at least ``k`` real rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from republish.errors import InputError

__all__ = ["BucketCounts", "m_unique_feasible", "plan_m_unique_groups"]


@dataclass(frozen=True)
class BucketCounts:
    """A bucket of previously published rows: its signature and its rows per value.

    ``counts`` may omit values of the signature (count 0) but may not name others.
    """

    signature: tuple[str, ...]
    counts: Mapping[str, int]

    def __post_init__(self) -> None:
        signature = tuple(str(v) for v in self.signature)
        if not signature:
            raise InputError("a bucket needs a non-empty signature.")
        if len(set(signature)) != len(signature):
            raise InputError(f"signature {list(signature)} repeats a value.")
        counts = {str(v): c for v, c in self.counts.items()}
        outside = sorted(set(counts) - set(signature))
        if outside:
            raise InputError(
                f"bucket with signature {list(signature)} counts rows of values {outside} "
                "outside its signature; every old row's value belongs to its signature."
            )
        for value, count in counts.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise InputError(
                    f"bucket {list(signature)}: count of {value!r} must be a non-negative "
                    f"integer, got {count!r}."
                )
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "counts", {v: counts.get(v, 0) for v in signature})

    def count(self, value: str) -> int:
        return int(self.counts.get(value, 0))

    @property
    def size(self) -> int:
        """Old rows in the bucket."""
        return sum(self.counts.values())

    @property
    def min_groups(self) -> int:
        """Rows per value after balancing without extra rows: ``max_v c_v``."""
        return max(self.counts.values(), default=0)


def _check_counts(name: str, counts: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(f"{name}[{value!r}] must be a non-negative integer, got {count!r}.")
        out[str(value)] = int(count)
    return out


def m_unique_feasible(real: Mapping[str, int], counterfeits: Mapping[str, int], m: int) -> bool:
    """Whether the rows split into m-unique groups that each hold a real row (the lemma)."""
    r = _check_counts("real", real)
    e = _check_counts("counterfeits", counterfeits)
    totals = {v: r.get(v, 0) + e.get(v, 0) for v in set(r) | set(e)}
    total = sum(totals.values())
    if total == 0:
        return True
    largest = max(totals.values())
    return m * largest <= total and largest <= sum(r.values())


def plan_m_unique_groups(
    real: Mapping[str, int], counterfeits: Mapping[str, int], m: int
) -> list[dict[str, bool]]:
    """Groups meeting the lemma: each a mapping value -> ``True`` (real row) / ``False``.

    Raises
    ------
    InputError
        if :func:`m_unique_feasible` is false (the message names the violated bound).
    """
    r = _check_counts("real", real)
    e = _check_counts("counterfeits", counterfeits)
    values = sorted(set(r) | set(e))
    for v in values:
        r.setdefault(v, 0)
        e.setdefault(v, 0)
    t = {v: r[v] + e[v] for v in values}
    total = sum(t.values())
    if total == 0:
        return []
    largest = max(t, key=lambda v: (t[v], v))
    if m * t[largest] > total:
        raise InputError(
            f"value {largest!r} has {t[largest]} of {total} rows, more than 1/{m}: not "
            f"{m}-eligible."
        )
    if t[largest] > sum(r.values()):
        raise InputError(
            f"value {largest!r} has {t[largest]} rows but only {sum(r.values())} rows are "
            "real; some group would hold counterfeits only."
        )
    groups: list[dict[str, bool]] = []
    for g in range(t[largest], 0, -1):
        live = [v for v in values if t[v] > 0]
        chosen = [v for v in live if t[v] == g]
        rest = [v for v in live if t[v] < g]
        if not any(r[v] > 0 for v in chosen):
            # One value must bring the group's real row; prefer one that keeps counterfeits
            # of its own available, then the most frequent.
            donor = min((v for v in rest if r[v] > 0), key=lambda v: (e[v] == 0, -t[v], v))
            chosen.append(donor)
            rest.remove(donor)
        # Values that can contribute a counterfeit first: real rows are the scarce resource.
        rest.sort(key=lambda v: (e[v] == 0, -t[v], v))
        chosen += rest[: max(0, m - len(chosen))]
        group = {v: e[v] == 0 for v in chosen}
        if not any(group.values()):
            group[max((v for v in chosen if r[v] > 0), key=lambda v: (r[v], v))] = True
        for v, is_real in group.items():
            if is_real:
                r[v] -= 1
            else:
                e[v] -= 1
            t[v] -= 1
        groups.append(group)
    return groups
