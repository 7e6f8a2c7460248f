"""Phase-one pillar heights of tuple minimization (l-diversity paper, §5.2, Lemma 5.8).

Phase one of TP removes tuples from the pillars of every QI-group ``Q`` until it is
l-eligible; the result does not depend on the order of the removals, and Lemma 5.8 shows
that every l-eligible subset of ``Q`` keeps at most ``ḣ(Q, v) = min(h(Q, v), Ḣ(Q))``
tuples of each SA value ``v``, where ``Ḣ(Q)`` is the pillar height at the end of phase
one: the largest ``H`` with ``sum_v min(h(Q, v), H) >= l * H``. TP
(:mod:`republish.heuristics.three_phase`) runs phase one with it, and the tuple
minimization model (:mod:`republish.models.tuple_minimization`) bounds its variables
with it.

Closed form: with a group's counts sorted in decreasing order and ``tail_k`` the sum after
the first ``k``, ``sum_v min(h, H) = min_k (k * H + tail_k)``, so
``Ḣ(Q) = min(h(Q), min_{k < l} floor(tail_k / (l - k)))``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["phase_one_heights"]


def phase_one_heights(
    pair_group: np.ndarray, pair_count: np.ndarray, n_groups: int, l: int  # noqa: E741
) -> np.ndarray:
    """``Ḣ(Q)`` of Lemma 5.8 for every QI-group (see module docstring).

    Parameters
    ----------
    pair_group, pair_count:
        One entry per (QI-group, SA value) pair present: the group number in
        ``0 .. n_groups - 1`` and the count ``h(Q, v)``.
    n_groups:
        The number of QI-groups.
    l:
        The diversity parameter (>= 1).
    """
    pair_group = np.asarray(pair_group, dtype=np.int64)
    pair_count = np.asarray(pair_count, dtype=np.int64)
    order = np.lexsort((-pair_count, pair_group))
    group = pair_group[order]
    count = pair_count[order]
    starts = np.searchsorted(group, np.arange(n_groups))
    rank = np.arange(len(group)) - starts[group]
    size = np.bincount(pair_group, weights=pair_count, minlength=n_groups).astype(np.int64)
    top = np.zeros((n_groups, l), dtype=np.int64)
    first = rank < l
    top[group[first], rank[first]] = count[first]
    before = np.cumsum(top, axis=1) - top
    bounds = (size[:, None] - before) // (l - np.arange(l))
    return np.minimum(top[:, 0], bounds.min(axis=1))
