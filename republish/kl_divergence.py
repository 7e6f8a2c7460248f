"""KL-divergence between microdata and a published table (l-diversity paper, §6.2, eq. 2).

``KL(f, f*) = sum_p f(p) ln(f(p)/f*(p))`` where ``f`` is the distribution of the
microdata's points ``(QIs, SA)`` and ``f*`` the one induced by ``T*``: every published row
is uniform over its box (a star: the whole domain), its sensitive value kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.generalization import Domain
from republish.query_estimates import _published_boxes
from republish.query_workload import _is_integral
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["kl_divergence"]

#: Candidate (point, box) pairs per block in the KL-divergence.
_BLOCK_CELLS = 4_000_000


def _discrete_points(
    schema: Schema, codes: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Put every QI on an integer grid: the table's codes and the boxes' inclusive bounds.

    Categorical and integer-valued numeric QIs keep their codes; other numeric QIs use
    ranks among the table's distinct values (the active domain).
    """
    domain = Domain.of(schema, codes)
    points, box_low, box_high = codes.copy(), low.copy(), high.copy()
    for j, qi in enumerate(schema.qis):
        box_low[:, j] = np.where(np.isinf(low[:, j]), domain.low[j], low[:, j])
        box_high[:, j] = np.where(np.isinf(high[:, j]), domain.high[j], high[:, j])
        if qi.kind == "numeric" and not (
            _is_integral(codes[:, j]) and _is_integral(np.concatenate([low[:, j], high[:, j]]))
        ):
            distinct = np.unique(codes[:, j])
            points[:, j] = np.searchsorted(distinct, codes[:, j])
            box_low[:, j] = np.searchsorted(distinct, box_low[:, j], side="left")
            box_high[:, j] = np.searchsorted(distinct, box_high[:, j], side="right") - 1
    return points, box_low, box_high


def _stabbing_mass(
    points: np.ndarray, low: np.ndarray, high: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """For every point, the total ``weight`` of the boxes ``[low, high]`` containing it.

    Candidate pairs come from the QI along which the boxes hold the fewest points (sorted
    points, one contiguous slice per box), so small boxes cost little; the other QIs are
    checked on the candidates in blocks.
    """
    best: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
    for j in range(points.shape[1]):
        order = np.argsort(points[:, j], kind="stable")
        ordered = points[order, j]
        start = np.searchsorted(ordered, low[:, j], side="left")
        stop = np.searchsorted(ordered, high[:, j], side="right")
        if best is None or (stop - start).sum() < (best[2] - best[1]).sum():
            best = (j, start, stop, order)
    assert best is not None
    axis, start, stop, order = best
    lengths = np.maximum(stop - start, 0)
    mass = np.zeros(len(points))
    ends = np.cumsum(lengths)
    first = 0
    while first < len(lengths):
        budget = (ends[first - 1] if first else 0) + _BLOCK_CELLS
        last = max(first + 1, int(np.searchsorted(ends, budget, side="right")))
        box = np.repeat(np.arange(first, last), lengths[first:last])
        offsets = np.concatenate([[0], np.cumsum(lengths[first:last])[:-1]])
        rank = np.arange(len(box)) - np.repeat(offsets, lengths[first:last])
        candidate = order[start[box] + rank]
        inside = np.ones(len(box), dtype=bool)
        for j in range(points.shape[1]):
            if j != axis:
                inside &= (points[candidate, j] >= low[box, j]) & (
                    points[candidate, j] <= high[box, j]
                )
        mass += np.bincount(candidate[inside], weights=weight[box[inside]], minlength=len(points))
        first = last
    return mass


def kl_divergence(table: pd.DataFrame, published: pd.DataFrame, schema: Schema) -> float:
    """``KL(f, f*)`` between ``table`` and the distribution induced by ``published``.

    Both are over the points ``(QI codes, sensitive value)``; ``f*`` spreads every published
    row uniformly over the grid points of its box (see :func:`_discrete_points`). Returns
    ``inf`` when some microdata point gets no mass from ``published`` (not a
    generalization of ``table``).
    """
    if len(table) == 0 or len(published) == 0:
        raise InputError("kl_divergence needs a non-empty table and published table.")
    codes = encode_qis(table, schema)
    low, high = _published_boxes(published, schema)
    points, box_low, box_high = _discrete_points(schema, codes, low, high)
    table_values = table[schema.sensitive].astype(str).to_numpy()
    published_values = published[schema.sensitive].astype(str).to_numpy()
    total = 0.0
    for value in np.unique(table_values):
        unique_points, multiplicity = np.unique(
            points[table_values == value], axis=0, return_counts=True
        )
        rows = published_values == value
        # Rows sharing a box and a value are one box of weight = their count.
        boxes, copies = np.unique(
            np.hstack([box_low[rows], box_high[rows]]), axis=0, return_counts=True
        )
        d = points.shape[1]
        weight = copies / np.prod(boxes[:, d:] - boxes[:, :d] + 1.0, axis=1)
        f_star = _stabbing_mass(unique_points, boxes[:, :d], boxes[:, d:], weight) / len(published)
        if np.any(f_star <= 0):
            return float("inf")
        f = multiplicity / len(table)
        total += float(np.sum(f * np.log(f / f_star)))
    return total
