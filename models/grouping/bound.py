"""A lower bound on the best grouping of a balanced bucket, from exact pairings.

Group formation for signature size ``s >= 3`` is NP-hard (3-dimensional matching), so a
large bucket keeps the §4.3 split (m-invariance paper, Xiao & Tao, SIGMOD 2007) or a
time-limited model whose own bound is weak. This bound says how far that grouping may be
from the optimum:

For three values ``a, b, c`` of the signature, every group ``G`` (one row per value) and
every QI ``j``, the group's length ``max - min`` over its real rows is at least the span
of its three rows, which is exactly half the sum of their pairwise distances (on a line,
the tour ``a -> b -> c -> a`` runs over the span twice). Summed over groups, the pairs
``(a, b)``, ``(b, c)``, ``(c, a)`` each form a perfect matching of two values' rows, whose
cost is at least the minimum-cost matching ``M_ab`` (signature-size-2 pairing, solved
exactly by :func:`republish.models.grouping.pairs.match_pairs`; a pair holding a
counterfeit costs 0, and pairing counterfeits together never lowers the minimum). Hence

    perimeter = Σ_G |G|·Σ_j length_j  >=  (s / 2)·(M_ab + M_bc + M_ca).

(A longer cycle does not work: four points on a line can zigzag, so their tour may exceed
twice the span.) With NCP, a pair of real rows sits in a group of at least 2 real rows, so
``NCP >= (M_ab + M_bc + M_ca) / (R·d)`` (``R`` real rows, ``d`` QIs). For ``s = 2`` the
bound is the pairing's optimum itself. The three values are those with the most real
rows (the fewest pairs that counterfeits make free).
"""

from __future__ import annotations

import time

import numpy as np

from republish.models.grouping.pairs import (
    FIRST_ROUND_SECONDS_PER_ROW,
    SCALE,
    match_pairs,
)

__all__ = ["pairing_lower_bound"]


def pairing_lower_bound(
    points: np.ndarray,
    value_index: np.ndarray,
    fake: np.ndarray,
    objective: str,
    time_limit: float,
) -> float | None:
    """The bound of the module docstring for a balanced bucket (points normalized to
    [0, 1], ``value_index`` in ``0..s-1``, ``fake`` marking counterfeits), or None when
    ``time_limit`` runs out before every pairing of the cycle has started (a pairing the
    limit stops early contributes its proven dual bound, which is still valid)."""
    started = time.perf_counter()
    s = int(value_index.max()) + 1 if len(value_index) else 0
    if s < 2:
        return 0.0
    d = points.shape[1]
    q = np.rint(np.nan_to_num(points) * SCALE).astype(np.int64)
    rows = [np.flatnonzero(value_index == v) for v in range(s)]
    real = [int((~fake[r]).sum()) for r in rows]
    a, b, c = (sorted(range(s), key=lambda v: -real[v]) + [0])[:3]
    cycle = [(a, b)] if s == 2 else [(a, b), (b, c), (c, a)]
    total = 0.0
    for left, right in cycle:
        remaining = time_limit - (time.perf_counter() - started)
        if remaining <= 0:
            return None
        first, second = rows[left], rows[right]
        real_a, real_b = first[~fake[first]], second[~fake[second]]
        fake_a, fake_b = len(first) - len(real_a), len(second) - len(real_b)
        if len(real_a) <= fake_b or len(real_b) <= fake_a:
            continue  # every real row of one side can take a counterfeit: M_i = 0
        if remaining < FIRST_ROUND_SECONDS_PER_ROW * (len(real_a) + len(real_b)):
            return None  # the pairing's first round would overrun the time left
        matching = match_pairs(q[real_a], q[real_b], fake_a, fake_b, remaining)
        pairs = len(real_a) - fake_b
        # Rounding codes to 1/SCALE moves each pair's distance by at most d/SCALE.
        total += max(0.0, (matching.bound - pairs * d) / SCALE)
    factor = s / 2 if s > 2 else 2.0
    if objective == "perimeter":
        return factor * total
    real_rows = int((~fake).sum())
    ncp_factor = 1.0 if s > 2 else 2.0
    return ncp_factor * total / max(real_rows * d, 1)
