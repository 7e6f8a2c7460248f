"""Rebuild each bucket's groups by sequential assignment, keeping who is in the bucket.

The groups of bucket ``b`` hold one row (or a counterfeit) per value of its signature
``σ_b`` (m-invariance paper, Xiao & Tao, SIGMOD 2007, §4.1-4.3). With the rows of ``b``'s
groups fixed (its old rows and the new rows the release put there), regrouping them is a
``|σ_b|``-dimensional assignment problem. :func:`rebuild_buckets` builds a fresh grouping
of every bucket the way greedy matching heuristics for multi-index assignment do (Pierskalla,
*The multidimensional assignment problem*, Operations Research 16, 1968, §3 on sequential
two-index assignments): the rows of the most frequent value seed the groups, then each
other value's rows are placed by one exact linear assignment (OR-Tools
``SimpleLinearSumAssignment``) at cost ``|σ_b| · extent(group so far ∪ {row})``, a missing
row (a counterfeit) at the group's extent so far. A bucket keeps the result only when it is
valid (every group still holds an old row of ``b``) and cheaper.

Every group keeps its signature and every bucket its rows and its counterfeits of each
value (they may move between its groups), so (a) and the next release's buckets are
unchanged, as with the slot trades of :mod:`republish.models.whole_release_slots`. The
slot trades re-assign one value within windows of nearby groups and stop in a local
optimum of the grouping they start from; the rebuild starts elsewhere, and
:func:`republish.models.whole_release_large.solve_by_neighbourhoods` runs it on large
releases once the trades stall, or early where the search has room for it (SLOT_SHARE),
then trades again. Measured on 20,000 Adult rows (m = 3, release 2,
recorded in ``benchmarks/RESULTS.md``): after 10 s of the model,
the rebuild (11 s) lowered (b) from 15,963 to 15,390 (6 of 14 buckets rebuilt; the bucket
of 2,400 old rows 829.5 -> 769.2), trades then to 15,238. Within a 10 s or 60 s budget the
trades had not stalled on these releases, so the rebuild did not run there until session
14 gave it room early in the 60 s search. A matheuristic: it proves nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from republish.models.whole_release_counts import BoxExtent, Extent
from republish.models.whole_release_extent_tables import tabulated
from republish.models.whole_release_problem import WholeReleaseProblem, as_matrix
from republish.models.whole_release_slots import _assign, _extents, _joined

__all__ = ["Rebuild", "rebuild_buckets"]

#: Integer units per unit of cost in the assignments: the solver's time grows with the log
#: of the largest cost (1e6 -> 1e3: 11.3 -> 6.9 s for the 14 buckets of 20,000 Adult rows
#: at m = 3); the result is checked in floating point. Cutting large buckets into k-d parts
#: of 256 (1,024) groups instead took 0.8 s (3.7 s) but gained 17 (318) instead of 677.
ASSIGN_SCALE = 1e3
#: Candidate rows whose costs are computed at once (bounds the ``(rows, groups, QIs)``
#: temporaries of the extent's ``joined``: 256 x 2,400 groups x 4 QIs = 20 MB).
BLOCK = 256


@dataclass(frozen=True)
class Rebuild:
    """The regrouped release, the buckets rebuilt and tried, and the decrease of (b)."""

    groups: tuple[np.ndarray, ...]
    rebuilt: int
    tried: int
    gain: float


def _sequential(problem: WholeReleaseProblem, measure: Extent, rows: np.ndarray,
                sigma: list[int], groups: int, deadline: float) -> np.ndarray | None:
    """A ``(groups, |σ|)`` slot matrix (``-1``: counterfeit) of ``rows``, or None when the
    most frequent value does not seed every group or time runs out."""
    by_value = {v: rows[problem.values[rows] == v] for v in sigma}
    order = sorted(sigma, key=lambda v: (-len(by_value[v]),
                                         -int((problem.bucket[by_value[v]] >= 0).sum())))
    if len(by_value[order[0]]) != groups:
        return None
    slots = np.full((groups, len(sigma)), -1, dtype=np.int64)
    slots[:, 0] = by_value[order[0]]
    everywhere = np.ones((groups, groups), dtype=bool)
    for j, v in enumerate(order[1:], start=1):
        if time.perf_counter() > deadline:
            return None
        candidates = by_value[v]
        if not len(candidates):
            continue  # counterfeits of v in every group
        rest = slots.copy()  # column j is still -1: the emptied slot _joined fills
        placed = np.empty((groups, groups))
        for start in range(0, len(candidates), BLOCK):  # (rows, groups, QIs) temporaries
            block = candidates[start:start + BLOCK]
            placed[start:start + len(block)] = _joined(measure, rest, block)
        placed[len(candidates):] = _extents(measure, rest)[None, :]  # a counterfeit
        order_of = _assign(placed, everywhere, ASSIGN_SCALE)  # [group] = candidate
        slots[:, j] = np.where(order_of < len(candidates),
                               candidates[np.minimum(order_of, len(candidates) - 1)], -1)
    return slots


def rebuild_buckets(problem: WholeReleaseProblem, groups: Sequence[np.ndarray], *,
                    deadline: float, extent: Extent | None = None) -> Rebuild:
    """Rebuild the groups of each bucket of ``problem`` (module docstring), smallest bucket
    first (a bucket of ``g`` groups costs ``|σ| - 1`` assignments of ``g × g``: as many as
    possible finish), until ``time.perf_counter()`` passes ``deadline``; groups without old
    rows and buckets the rebuild does not improve stay as they are."""
    measure: Extent = tabulated(extent) if extent is not None else BoxExtent(problem.points)
    result = [np.asarray(g, dtype=np.int64) for g in groups]
    owner = np.array([int(problem.bucket[g].max(initial=-1)) for g in result], dtype=np.int64)
    sizes = np.bincount(problem.bucket[problem.bucket >= 0], minlength=len(problem.signatures))
    rebuilt = tried = 0
    gain = 0.0
    for b in np.argsort(sizes, kind="stable").tolist():
        mine = np.flatnonzero(owner == b)
        if len(mine) < 2 or time.perf_counter() > deadline:
            continue
        sigma = sorted(problem.signatures[b])
        rows = np.concatenate([result[g] for g in mine])
        s = float(len(sigma))
        before = s * float(_extents(measure, as_matrix([result[g] for g in mine])).sum())
        tried += 1
        slots = _sequential(problem, measure, rows, sigma, len(mine), deadline)
        if slots is None:
            continue
        old = np.where(slots >= 0, problem.bucket[np.maximum(slots, 0)] == b, False)
        if not old.any(axis=1).all():
            continue  # a group of only new rows and counterfeits would change signature
        after = s * float(_extents(measure, slots).sum())
        if after >= before - 1e-9 * max(1.0, before):
            continue
        for i, g in enumerate(mine):
            result[g] = np.sort(slots[i][slots[i] >= 0])
        rebuilt += 1
        gain += before - after
    return Rebuild(tuple(result), rebuilt, tried, gain)
