"""Estimated answers of a query workload from a published table (m-invariance paper, §5.2).

For the queries of :mod:`republish.query_workload`, the estimate ``est`` from a
generalized ``T*(j)`` sums, over every QI group ``QI*``, the partial answer
``(|QI*| - c3) * c1 * c2``: ``c1`` the share of the group's box inside the query's box
(values uniform in the box), ``c2`` the share of the group's published rows whose
sensitive value qualifies, ``c3`` the group's counterfeit count from ``R(j)``
(:func:`estimate_from_release`).

A permutation-published ``T*(j)`` (ε-inclusion paper, Definition 2) shows exact QIs and
sensitive values permuted within each group; its estimate is the expected answer over the
random permutation (:func:`estimate_from_permuted`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.generalization import Domain, parse_boxes
from republish.query_workload import (
    _QUERY_BLOCK_CELLS,
    Method,
    QueryWorkload,
    _chosen_grid,
    _grid_sums,
    _no_grid,
    _sensitive_codes,
)
from republish.release import COUNT, GROUP
from republish.schema import Schema

__all__ = ["estimate_from_permuted", "estimate_from_release"]


def _published_boxes(published: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """:func:`parse_boxes` of every row, parsing each distinct combination of cells once
    (rows of a group share their cells, so this parses about one row per group)."""
    pattern = published.groupby(schema.qi_names, sort=False, dropna=False).ngroup().to_numpy()
    _, first, inverse = np.unique(pattern, return_index=True, return_inverse=True)
    low, high = parse_boxes(published.iloc[first], schema)
    return low[inverse], high[inverse]


def _counterfeit_counts(counterfeits: pd.DataFrame | None, labels: np.ndarray) -> np.ndarray:
    counts = np.zeros(len(labels))
    if counterfeits is None or len(counterfeits) == 0:
        return counts
    position = {label: i for i, label in enumerate(labels.tolist())}
    for group, number in zip(counterfeits[GROUP].tolist(), counterfeits[COUNT].tolist(),
                             strict=True):
        if group not in position:
            raise InputError(
                f"R(j) lists counterfeits for group {group!r}, which is not in T*(j); "
                "pass the counterfeit table of the same release."
            )
        counts[position[group]] += float(number)
    return counts


def _multiply_box_share(
    partial: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    query_low: np.ndarray,
    query_high: np.ndarray,
    unit: float,
) -> None:
    """Multiply ``partial`` (queries, groups) by each box side's share inside the query
    range (values uniform in the box); in place, to keep memory traffic low."""
    width = high - low + unit
    degenerate = width <= 0
    share = np.empty_like(partial)
    lower = np.empty_like(partial)
    np.minimum(high[None, :], query_high[:, None], out=share)
    np.maximum(low[None, :], query_low[:, None], out=lower)
    share -= lower
    share += unit
    np.maximum(share, 0.0, out=share)
    share *= (1.0 / np.where(degenerate, 1.0, width))[None, :]
    if degenerate.any():
        # A zero-length continuous side is a point: in or out of the range.
        point = (low[None, :] >= query_low[:, None]) & (low[None, :] <= query_high[:, None])
        share = np.where(degenerate[None, :], point, share)
    partial *= share


def _blocked_estimates(
    weights: np.ndarray,
    workload: QueryWorkload,
    multiply_qi_share: Callable[[np.ndarray, slice], None],
) -> np.ndarray:
    """Block form of the estimate: per query, ``Σ_item Σ_{v in range} weights[item, v]``
    times the item's QI share, which ``multiply_qi_share(partial, queries)`` applies in
    place to the (queries, items) block ``partial`` of the query slice ``queries``."""
    items, values = weights.shape
    # A prefix sum over the sensitive values answers any sensitive range in two look-ups.
    cumulative = np.zeros((values + 1, items))
    cumulative[1:] = np.cumsum(weights.T, axis=0)
    estimates = np.empty(workload.count)
    block = max(1, _QUERY_BLOCK_CELLS // items)
    for begin in range(0, workload.count, block):
        end = min(begin + block, workload.count)
        partial = (
            cumulative[workload.sensitive_high[begin:end] + 1]
            - cumulative[workload.sensitive_low[begin:end]]
        )
        multiply_qi_share(partial, slice(begin, end))
        estimates[begin:end] = partial.sum(axis=1)
    return estimates


def _estimate(
    box_low: np.ndarray,
    box_high: np.ndarray,
    weights: np.ndarray,
    workload: QueryWorkload,
    domain: Domain,
    method: Method,
    multiply_qi_share: Callable[[np.ndarray, slice], None],
) -> np.ndarray:
    """The estimate from ``weights[item, v]`` spread over the box of every item: the grid
    form (:func:`_estimate_grid`) when ``method`` chooses it, else the block form
    (:func:`_blocked_estimates`, QI shares from ``multiply_qi_share``)."""
    pairs = workload.count * len(weights) * box_low.shape[1]
    shape = _chosen_grid(workload, domain, method, pairs, per_pair=25.0)
    if shape is not None:
        return _estimate_grid(shape, box_low, box_high, weights, workload, domain)
    if method == "grid":
        raise _no_grid()
    return _blocked_estimates(weights, workload, multiply_qi_share)


def estimate_from_release(
    published: pd.DataFrame,
    counterfeits: pd.DataFrame | None,
    schema: Schema,
    workload: QueryWorkload,
    domain: Domain,
    *,
    method: Method = "auto",
) -> np.ndarray:
    """Estimated answers ``est`` from ``T*(j)`` and ``R(j)`` (§5.2, see module doc).

    ``domain`` bounds suppressed numeric cells (``*``); pass the domain the workload was
    drawn from. ``counterfeits=None`` ignores ``R(j)`` (every published row counted).
    ``method`` as in :func:`republish.query_workload.answer_exact`: ``grid`` spreads every
    group's mass uniformly over the grid cells of its box (difference arrays), which equals
    the paper's area ratio ``c1`` on discrete QIs; ``blocks`` computes ``c1`` per
    (query, group).
    """
    if len(published) == 0:
        return np.zeros(workload.count)
    low, high = _published_boxes(published, schema)
    low = np.where(np.isinf(low), domain.low[None, :], low)
    high = np.where(np.isinf(high), domain.high[None, :], high)
    labels, first, inverse = np.unique(
        published[GROUP].to_numpy(), return_index=True, return_inverse=True
    )
    groups = len(labels)
    sizes = np.bincount(inverse, minlength=groups).astype(float)
    real_share = (sizes - _counterfeit_counts(counterfeits, labels)) / sizes
    sensitive = _sensitive_codes(published[schema.sensitive], workload)
    values = len(workload.sensitive_values)
    known = sensitive >= 0
    counts = np.zeros((groups, values))
    np.add.at(counts, (inverse[known], sensitive[known]), 1.0)
    # (|QI*| - c3) * c2 = real_share * qualifying rows; a prefix sum answers any SA range.
    weights = counts * real_share[:, None]
    box_low, box_high = low[first], high[first]

    def multiply_box_shares(partial: np.ndarray, queries: slice) -> None:
        for j in range(len(schema.qis)):
            _multiply_box_share(
                partial, box_low[:, j], box_high[:, j], workload.low[queries, j],
                workload.high[queries, j], float(workload.units[j]),
            )

    return _estimate(box_low, box_high, weights, workload, domain, method,
                     multiply_box_shares)


def _estimate_grid(
    shape: tuple[int, ...],
    box_low: np.ndarray,
    box_high: np.ndarray,
    weights: np.ndarray,
    workload: QueryWorkload,
    domain: Domain,
) -> np.ndarray:
    """Grid form of the estimate: ``weights[g, v] / |box g|`` on every cell of box ``g``.

    Corner updates at ``low + 1`` and ``high + 2`` followed by two prefix sums per QI
    give the zero-padded prefix sums of the density in one array.
    """
    sizes = np.array(shape[:-1]) - 1
    volume = np.prod(box_high - box_low + 1.0, axis=1)
    low = np.clip(np.round(box_low - domain.low).astype(np.int64), 0, None)
    high = np.minimum(np.round(box_high - domain.low).astype(np.int64), sizes - 1)
    group, value = np.nonzero(weights)
    keep = np.all(low[group] <= high[group], axis=1)
    group, value = group[keep], value[keep]
    mass = weights[group, value] / volume[group]
    flats: list[np.ndarray] = []
    signed: list[np.ndarray] = []
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        index = np.where(np.array(corner, dtype=bool), high[group] + 2, low[group] + 1)
        # Updates past the last padded cell would only affect cells beyond the grid.
        inside = np.all(index <= sizes, axis=1)
        flats.append(np.ravel_multi_index((*index[inside].T, value[inside] + 1), shape))
        signed.append((-1) ** sum(corner) * mass[inside])
    prefix = np.bincount(np.concatenate(flats), weights=np.concatenate(signed),
                         minlength=int(np.prod(shape))).reshape(shape)
    for axis in range(len(sizes)):
        np.cumsum(prefix, axis=axis, out=prefix)
    for axis in range(prefix.ndim):
        np.cumsum(prefix, axis=axis, out=prefix)
    return _grid_sums(prefix, workload, domain)


def estimate_from_permuted(
    published: pd.DataFrame,
    schema: Schema,
    workload: QueryWorkload,
    domain: Domain,
    *,
    method: Method = "auto",
) -> np.ndarray:
    """Estimated answers ``est`` from a permutation-published ``T*(j)`` (ε-inclusion).

    Every row shows its exact QIs; its sensitive value is a uniform draw from its group's
    published values (Definition 2 of the ε-inclusion paper), so a row of group ``g``
    inside the query's QI ranges adds the share of ``g``'s published values inside the
    sensitive range (the expected answer over the random permutation; substituted values
    count as published). ``method`` as in :func:`estimate_from_release`.
    """
    if len(published) == 0:
        return np.zeros(workload.count)
    low, high = _published_boxes(published, schema)
    if np.any(low != high):
        raise InputError("estimate_from_permuted needs exact QI cells (one value per cell).")
    labels, inverse = np.unique(published[GROUP].to_numpy(), return_inverse=True)
    sizes = np.bincount(inverse, minlength=len(labels)).astype(float)
    sensitive = _sensitive_codes(published[schema.sensitive], workload)
    values = len(workload.sensitive_values)
    known = sensitive >= 0
    share = np.zeros((len(labels), values))
    np.add.at(share, (inverse[known], sensitive[known]), 1.0)
    share /= sizes[:, None]
    # Rows at one QI point add up: one point-box per distinct point, weights = Σ shares.
    points, point_of = np.unique(low, axis=0, return_inverse=True)
    point_of = point_of.reshape(-1)
    group, value = np.nonzero(share)
    per_group = np.bincount(group, minlength=len(labels))
    starts = np.concatenate([[0], np.cumsum(per_group)[:-1]])
    row_entries = per_group[inverse]
    rows = np.repeat(np.arange(len(inverse)), row_entries)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(row_entries) - row_entries, row_entries)
    entry = starts[inverse[rows]] + offsets
    weights = np.zeros((len(points), values))
    np.add.at(weights, (point_of[rows], value[entry]), share[group[entry], value[entry]])

    def keep_points_inside(partial: np.ndarray, queries: slice) -> None:
        for j in range(len(schema.qis)):
            inside = (points[None, :, j] >= workload.low[queries, j, None]) & (
                points[None, :, j] <= workload.high[queries, j, None])
            partial *= inside

    return _estimate(points, points, weights, workload, domain, method, keep_points_inside)
