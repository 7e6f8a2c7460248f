"""Update set signatures and their relations (Li & Zhou, the m-Distinct paper, §IV-A).

* the *update set signature* ``USS(g)`` of a QI group (Definition 13) is the multiset of
  the candidate update sets (CUS) of its values; here a canonical sorted tuple of
  frozensets (:func:`canonical_uss`);
* ``S`` is a *legal update instance* of a USS (Definition 14) when ``|S| = |USS|``, every
  value of ``S`` lies in some CUS of the USS and every CUS holds some value of ``S``;
* two USSs are *intersectable* when a one-to-one map pairs their CUSs with non-empty
  intersections, and ``USS_i`` *implies* ``USS_j`` (``USS_i ⊇ USS_j``) when a one-to-one
  map makes every CUS of ``USS_j`` a subset of its partner in ``USS_i``.

These are bipartite matchings between the CUSs (Kuhn's augmenting paths; a linear sum
assignment for the best-scored intersection). The transition model that yields the CUSs
is :mod:`republish.transitions`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ortools.graph.python import linear_sum_assignment

__all__ = [
    "UpdateSetSignature",
    "canonical_uss",
    "has_representatives",
    "implies",
    "intersectable",
    "intersection_plan",
    "is_legal_update_instance",
    "legal_update_problems",
    "pairwise_disjoint",
    "representable_values",
]

#: A USS: the multiset of candidate update sets, as a canonically sorted tuple.
UpdateSetSignature = tuple[frozenset[str], ...]


def _sort_key(entry: frozenset[str]) -> tuple[int, tuple[str, ...]]:
    return (len(entry), tuple(sorted(entry)))


def canonical_uss(entries: Iterable[Iterable[str]]) -> UpdateSetSignature:
    """The canonical form of a multiset of value sets (sorted by size, then members)."""
    return tuple(sorted((frozenset(e) for e in entries), key=_sort_key))


def _matching(
    left: Sequence[Any], right: Sequence[Any], compatible: Callable[[Any, Any], bool]
) -> list[int] | None:
    """A matching saturating ``left`` (Kuhn's augmenting paths), or None."""
    partner_of_right: list[int] = [-1] * len(right)
    options = [[j for j, r in enumerate(right) if compatible(item, r)] for item in left]

    def augment(i: int, seen: list[bool]) -> bool:
        for j in options[i]:
            if seen[j]:
                continue
            seen[j] = True
            if partner_of_right[j] < 0 or augment(partner_of_right[j], seen):
                partner_of_right[j] = i
                return True
        return False

    for i in range(len(left)):
        if not augment(i, [False] * len(right)):
            return None
    match = [-1] * len(left)
    for j, i in enumerate(partner_of_right):
        if i >= 0:
            match[i] = j
    return match


def intersectable(first: UpdateSetSignature, second: UpdateSetSignature) -> bool:
    """Equal sizes and a one-to-one map pairing CUSs with non-empty intersections."""
    return len(first) == len(second) and (
        _matching(first, second, lambda a, b: bool(a & b)) is not None
    )


def implies(first: UpdateSetSignature, second: UpdateSetSignature) -> bool:
    """``first ⊇ second``: a one-to-one map makes every CUS of ``second`` a subset of its
    partner in ``first``."""
    return len(first) == len(second) and (
        _matching(second, first, lambda b, a: b <= a) is not None
    )


def intersection_plan(
    first: UpdateSetSignature, second: UpdateSetSignature
) -> UpdateSetSignature | None:
    """The highest-scored intersection of two intersectable USSs, or None.

    Among one-to-one maps pairing CUSs with non-empty intersections, the one maximizing
    the summed overlap proportion ``|a ∩ b| / |a ∪ b|`` (Algorithm 2, line 9: "the higher
    proportion of the overlapped elements, the higher score").
    """
    if not intersectable(first, second):
        return None
    size = len(first)
    if size == 0:
        return ()
    assignment = linear_sum_assignment.SimpleLinearSumAssignment()
    scale = 1_000_000
    for i, a in enumerate(first):
        for j, b in enumerate(second):
            if a & b:
                assignment.add_arc_with_cost(i, j, -round(scale * len(a & b) / len(a | b)))
    if assignment.solve() != assignment.OPTIMAL:  # pragma: no cover - intersectable above
        return None
    return canonical_uss(first[i] & second[assignment.right_mate(i)] for i in range(size))


@functools.lru_cache(maxsize=65536)
def has_representatives(entries: UpdateSetSignature) -> bool:
    """Whether the sets have a system of distinct representatives (one value each)."""
    values = sorted(frozenset().union(*entries)) if entries else []
    return _matching(entries, values, lambda e, v: v in e) is not None


@functools.lru_cache(maxsize=65536)
def representable_values(entries: UpdateSetSignature) -> frozenset[str]:
    """Values that some system of distinct representatives of ``entries`` uses.

    A row with such a value can sit in a group built from these entries; other values
    cannot (every group is one representative per entry, all distinct).
    """
    if not entries or not has_representatives(entries):
        return frozenset()
    union = sorted(frozenset().union(*entries))
    usable = set()
    for value in union:
        for k, entry in enumerate(entries):
            if value not in entry:
                continue
            rest = entries[:k] + entries[k + 1:]
            others = [v for v in union if v != value]
            if _matching(rest, others, lambda e, v: v in e) is not None:
                usable.add(value)
                break
    return frozenset(usable)


def pairwise_disjoint(sets: Iterable[frozenset[str]]) -> bool:
    """No value shared by two of the sets (the §IV-B extension on a first release)."""
    seen: set[str] = set()
    for members in sets:
        if seen & members:
            return False
        seen |= members
    return True


def legal_update_problems(
    values: Iterable[str], uss: UpdateSetSignature
) -> list[str]:
    """Why ``values`` is not a legal update instance of ``uss`` (Definition 14); empty
    when it is."""
    chosen = sorted(set(values))
    problems = []
    if len(chosen) != len(uss):
        problems.append(f"{len(chosen)} distinct value(s) for {len(uss)} candidate update set(s)")
    uncovered = [v for v in chosen if not any(v in entry for entry in uss)]
    if uncovered:
        problems.append(f"value(s) {uncovered} lie in no candidate update set")
    empty = [sorted(entry) for entry in uss if not any(v in entry for v in chosen)]
    if empty:
        problems.append(f"candidate update set(s) {empty} hold no value of the group")
    return problems


def is_legal_update_instance(values: Iterable[str], uss: UpdateSetSignature) -> bool:
    """Definition 14."""
    return not legal_update_problems(values, uss)
