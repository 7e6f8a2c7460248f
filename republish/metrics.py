"""Utility of published tables: the query workload error and the KL-divergence.

Query workload (m-invariance paper, §5.2). A query is::

    SELECT COUNT(*) FROM T(j) WHERE A_1 in R_1 AND ... AND A_d in R_d AND A_s in R_s

with one random range per QI and on the sensitive attribute, each of length
``|A| * theta ** (1 / (d + 1))`` where ``|A|`` is the attribute's domain size and
``theta`` the *expected selectivity* (the paper fixes ``theta = 10%`` in Figure 8b; it is
the default here). Categorical ranges run over codes (declared order, or depth-first leaf
order of a hierarchy); the sensitive attribute's values are ranged in sorted order.
The actual answer ``act`` comes from ``T(j)``. The estimate ``est`` sums, over every QI
group ``QI*`` of ``T*(j)``, the partial answer ``(|QI*| - c3) * c1 * c2``: ``c1`` the share
of the group's box inside the query's box (values uniform in the box), ``c2`` the share of
the group's published rows whose sensitive value qualifies, ``c3`` the group's counterfeit
count from ``R(j)``. The relative error is ``|act - est| / act``; queries with
``act = 0`` are skipped (the ratio is undefined) and the workload error is the median.

Discrete attributes (categorical, and numeric QIs whose values are all integers) measure a
range by the number of values it holds, so ``[21, 22]`` is two ages and a single-row group
is answered exactly; other numeric QIs measure lengths, a degenerate box counting as a point.

KL-divergence (l-diversity paper, §6.2, eq. 2): ``KL(f, f*) = sum_p f(p) ln(f(p)/f*(p))``
where ``f`` is the distribution of the microdata's points ``(QIs, SA)`` and ``f*`` the one
induced by ``T*``: every published row is uniform over its box (a star: the whole domain),
its sensitive value kept.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.generalization import Domain, parse_boxes
from republish.release import COUNT, GROUP
from republish.schema import Schema
from republish.tables import encode_qis

Method = Literal["auto", "grid", "blocks"]

#: Expected selectivity used by default (the paper's fixed value in Figure 8b).
DEFAULT_SELECTIVITY = 0.1
#: Cells of the largest prefix-sum grid (128 MB of float64).
_GRID_CELLS = 1 << 24
#: Array cells per vectorized block of queries (about 2 MB of float64: stays in cache).
_QUERY_BLOCK_CELLS = 250_000
#: Candidate (point, box) pairs per block in the KL-divergence.
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class QueryWorkload:
    """COUNT(*) range queries; bounds are inclusive, in code space (see module doc).

    ``low``/``high`` have shape ``(q, d)``; ``sensitive_low``/``sensitive_high`` index
    ``sensitive_values``; ``units[j]`` is 1 for a discrete QI and 0 for a continuous one.
    """

    low: np.ndarray
    high: np.ndarray
    sensitive_low: np.ndarray
    sensitive_high: np.ndarray
    sensitive_values: tuple[str, ...]
    units: np.ndarray
    selectivity: float

    @property
    def count(self) -> int:
        return int(self.low.shape[0])


def _is_integral(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(np.all(finite == np.round(finite)))


def generate_queries(
    schema: Schema,
    domain_or_table: Domain | pd.DataFrame,
    count: int = 1000,
    selectivity: float = DEFAULT_SELECTIVITY,
    seed: int = 0,
    sensitive_values: tuple[str, ...] | list[str] | None = None,
) -> QueryWorkload:
    """Random workload of ``count`` queries with expected selectivity ``selectivity``.

    ``domain_or_table`` is a validated table (domains from :meth:`Domain.of`, numeric QIs
    discrete when all their values are integers, sensitive values its distinct values) or
    a :class:`Domain` (numeric QIs discrete when both bounds are integers; then
    ``sensitive_values`` is required). ``sensitive_values`` fixes the sensitive domain.
    """
    if count < 1:
        raise ParameterError(f"count={count}: a workload needs at least one query.")
    if not 0 < selectivity <= 1:
        raise ParameterError(f"selectivity={selectivity}: the expected selectivity is in (0, 1].")
    d = len(schema.qis)
    units = np.ones(d)
    if isinstance(domain_or_table, pd.DataFrame):
        codes = encode_qis(domain_or_table, schema)
        domain = Domain.of(schema, codes)
        for j, qi in enumerate(schema.qis):
            if qi.kind == "numeric" and not _is_integral(codes[:, j]):
                units[j] = 0.0
        if sensitive_values is None:
            sensitive_values = sorted(set(domain_or_table[schema.sensitive].astype(str)))
    else:
        domain = domain_or_table
        for j, qi in enumerate(schema.qis):
            bounds = np.array([domain.low[j], domain.high[j]])
            if qi.kind == "numeric" and not _is_integral(bounds):
                units[j] = 0.0
    if not sensitive_values:
        raise ParameterError(
            "generate_queries needs the sensitive domain: pass a table or sensitive_values."
        )
    values = tuple(str(v) for v in sensitive_values)
    rng = np.random.default_rng(seed)
    fraction = selectivity ** (1.0 / (d + 1))
    low = np.empty((count, d))
    high = np.empty((count, d))
    for j in range(d):
        start, stop, unit = float(domain.low[j]), float(domain.high[j]), units[j]
        size = stop - start + unit
        if unit > 0:
            length = max(1, min(int(size), int(round(size * fraction))))
            first = start + rng.integers(0, int(size) - length + 1, size=count)
            low[:, j], high[:, j] = first, first + length - 1
        else:
            length = size * fraction
            first = start + rng.random(count) * (size - length)
            low[:, j], high[:, j] = first, first + length
    size = len(values)
    length = max(1, min(size, int(round(size * fraction))))
    sensitive_low = rng.integers(0, size - length + 1, size=count)
    return QueryWorkload(
        low=low,
        high=high,
        sensitive_low=sensitive_low,
        sensitive_high=sensitive_low + length - 1,
        sensitive_values=values,
        units=units,
        selectivity=float(selectivity),
    )


def _sensitive_codes(values: pd.Series, workload: QueryWorkload) -> np.ndarray:
    """Position of each value in the workload's sensitive domain, -1 when absent."""
    lookup = {v: i for i, v in enumerate(workload.sensitive_values)}
    return values.astype(str).map(lookup).fillna(-1).to_numpy(dtype=np.int64)


def _compact(values: np.ndarray, bounds: list[np.ndarray], integral: bool
             ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Shift integral codes to start at 0 and store them in the smallest integer type.

    Comparisons on narrow integers move less memory; query bounds are clipped to one
    step outside the data so they keep their meaning after the cast.
    """
    if not integral or len(values) == 0:
        return values, bounds
    origin = float(values.min())
    span = float(values.max()) - origin
    dtype = np.int16 if span + 1 < np.iinfo(np.int16).max else np.int32
    if span + 1 >= np.iinfo(np.int32).max:
        return values, bounds
    shifted = [np.clip(np.ceil(b - origin) if k == 0 else np.floor(b - origin), -1, span + 1)
               .astype(dtype) for k, b in enumerate(bounds)]
    return (values - origin).astype(dtype), shifted


def _grid_shape(workload: QueryWorkload, domain: Domain) -> tuple[int, ...] | None:
    """Shape of the zero-padded prefix-sum grid over (QIs, SA), ``None`` if unusable.

    The grid needs every QI discrete with integral domain bounds and at most
    ``_GRID_CELLS`` cells; then a query costs ``2 ** (d + 1)`` look-ups.
    """
    bounds = np.concatenate([domain.low, domain.high])
    if not np.all(workload.units == 1) or not np.all(np.isfinite(bounds)) or not _is_integral(
        bounds
    ):
        return None
    sizes = np.round(domain.high - domain.low).astype(np.int64) + 1
    shape = (*(sizes + 1).tolist(), len(workload.sensitive_values) + 1)
    if np.any(sizes < 1) or np.prod(np.array(shape, dtype=np.float64)) > _GRID_CELLS:
        return None
    return tuple(int(size) for size in shape)


def _grid_pays(shape: tuple[int, ...], pairs: int, per_pair: float) -> bool:
    """Whether prefix sums over the grid (about 25 ns per cell and pass, ``2d + 2`` passes,
    measured on 2 cores) beat ``pairs`` (query, row or group, attribute) comparisons of
    ``per_pair`` ns each."""
    cells = float(np.prod(np.array(shape, dtype=np.float64)))
    return cells * 25.0 * (2 * len(shape)) < pairs * per_pair


def _grid_sums(prefix: np.ndarray, workload: QueryWorkload, domain: Domain) -> np.ndarray:
    """Sum of the grid cells inside every query, by inclusion-exclusion on ``prefix``
    (``prefix[i]`` = sum of the cells before ``i`` along every axis)."""
    sizes = np.array(prefix.shape) - 1
    low = np.column_stack([workload.low - domain.low, workload.sensitive_low])
    high = np.column_stack([workload.high - domain.low, workload.sensitive_high])
    low = np.clip(np.round(low).astype(np.int64), 0, sizes)
    after = np.clip(np.round(high).astype(np.int64) + 1, low, sizes)
    total = np.zeros(workload.count)
    for corner in itertools.product((0, 1), repeat=prefix.ndim):
        index = tuple(after[:, a] if bit else low[:, a] for a, bit in enumerate(corner))
        total += (-1) ** (prefix.ndim - sum(corner)) * prefix[index]
    return total


def answer_exact(
    table: pd.DataFrame,
    schema: Schema,
    workload: QueryWorkload,
    *,
    method: Method = "auto",
) -> np.ndarray:
    """Actual answers ``act`` of every query on the microdata ``table`` (validated).

    ``method``: ``grid`` (prefix sums over the discrete domain), ``blocks`` (every row
    against blocks of queries) or ``auto`` (``grid`` when the domain is small enough).
    """
    codes = encode_qis(table, schema)
    sensitive = _sensitive_codes(table[schema.sensitive], workload)
    domain = Domain.of(schema, codes)
    shape = _grid_shape(workload, domain) if method != "blocks" else None
    offsets = np.round(codes - domain.low).astype(np.int64) + 1
    if shape is not None and np.any((offsets < 1) | (offsets >= np.array(shape[:-1]))):
        shape = None  # rows outside a declared domain
    if shape is not None and method == "auto" and not _grid_pays(
        shape, workload.count * len(table) * (codes.shape[1] + 1), per_pair=1.0
    ):
        shape = None
    if shape is not None:
        known = sensitive >= 0
        index = np.ravel_multi_index((*offsets[known].T, sensitive[known] + 1), shape)
        prefix = np.bincount(index, minlength=int(np.prod(shape))).astype(np.float64)
        prefix = prefix.reshape(shape)
        for axis in range(prefix.ndim):
            np.cumsum(prefix, axis=axis, out=prefix)
        return np.round(_grid_sums(prefix, workload, domain)).astype(np.int64)
    if method == "grid":
        raise ParameterError("method='grid' needs discrete QIs and a domain of at most "
                             f"{_GRID_CELLS} cells; use method='blocks'.")
    columns = [_compact(
        sensitive.astype(np.float64),
        [workload.sensitive_low.astype(np.float64), workload.sensitive_high.astype(np.float64)],
        integral=True,
    )]
    for j in range(codes.shape[1]):
        columns.append(_compact(
            codes[:, j], [workload.low[:, j], workload.high[:, j]],
            integral=_is_integral(codes[:, j]),
        ))
    answers = np.empty(workload.count, dtype=np.int64)
    block = max(1, _QUERY_BLOCK_CELLS // max(1, len(table)))
    for begin in range(0, workload.count, block):
        end = min(begin + block, workload.count)
        inside = np.ones((end - begin, len(table)), dtype=bool)
        for values, (low, high) in columns:
            inside &= values[None, :] >= low[begin:end, None]
            inside &= values[None, :] <= high[begin:end, None]
        answers[begin:end] = np.count_nonzero(inside, axis=1)
    return answers


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
    ``method`` as in :func:`answer_exact`: ``grid`` spreads every group's mass uniformly
    over the grid cells of its box (difference arrays), which equals the paper's
    area ratio ``c1`` on discrete QIs; ``blocks`` computes ``c1`` per (query, group).
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
    shape = _grid_shape(workload, domain) if method != "blocks" else None
    if shape is not None and method == "auto" and not _grid_pays(
        shape, workload.count * groups * len(schema.qis), per_pair=25.0
    ):
        shape = None
    if shape is not None:
        return _estimate_grid(shape, box_low, box_high, weights, workload, domain)
    if method == "grid":
        raise ParameterError("method='grid' needs discrete QIs and a domain of at most "
                             f"{_GRID_CELLS} cells; use method='blocks'.")
    cumulative = np.zeros((values + 1, groups))
    cumulative[1:] = np.cumsum(weights.T, axis=0)
    estimates = np.empty(workload.count)
    block = max(1, _QUERY_BLOCK_CELLS // groups)
    for begin in range(0, workload.count, block):
        end = min(begin + block, workload.count)
        partial = (
            cumulative[workload.sensitive_high[begin:end] + 1]
            - cumulative[workload.sensitive_low[begin:end]]
        )
        for j in range(len(schema.qis)):
            _multiply_box_share(
                partial, box_low[:, j], box_high[:, j], workload.low[begin:end, j],
                workload.high[begin:end, j], float(workload.units[j]),
            )
        estimates[begin:end] = partial.sum(axis=1)
    return estimates


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


def relative_errors(actual: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """``|act - est| / act`` of every query with ``act > 0`` (the others are skipped)."""
    actual = np.asarray(actual, dtype=float)
    keep = actual > 0
    return np.abs(actual[keep] - np.asarray(estimate, dtype=float)[keep]) / actual[keep]


def query_error(
    table: pd.DataFrame,
    published: pd.DataFrame,
    counterfeits: pd.DataFrame | None,
    schema: Schema,
    count: int = 1000,
    selectivity: float = DEFAULT_SELECTIVITY,
    seed: int = 0,
) -> float:
    """Workload error: median relative error of ``count`` random queries (§5.2).

    The workload is drawn on ``table``'s domain; the sensitive domain is every value of
    ``table`` or ``published`` (counterfeits may carry values absent from ``T(j)``).
    Queries whose actual answer is 0 are skipped; ``nan`` when every query is skipped.
    """
    values = sorted(
        set(table[schema.sensitive].astype(str)) | set(published[schema.sensitive].astype(str))
    )
    workload = generate_queries(schema, table, count, selectivity, seed, sensitive_values=values)
    domain = Domain.of(schema, encode_qis(table, schema))
    errors = relative_errors(
        answer_exact(table, schema, workload),
        estimate_from_release(published, counterfeits, schema, workload, domain),
    )
    return float(np.median(errors)) if len(errors) else float("nan")


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
    shape = _grid_shape(workload, domain) if method != "blocks" else None
    if shape is not None and method == "auto" and not _grid_pays(
        shape, workload.count * len(points) * len(schema.qis), per_pair=25.0
    ):
        shape = None
    if shape is not None:
        return _estimate_grid(shape, points, points, weights, workload, domain)
    if method == "grid":
        raise ParameterError("method='grid' needs discrete QIs and a domain of at most "
                             f"{_GRID_CELLS} cells; use method='blocks'.")
    cumulative = np.zeros((values + 1, len(points)))
    cumulative[1:] = np.cumsum(weights.T, axis=0)
    estimates = np.empty(workload.count)
    block = max(1, _QUERY_BLOCK_CELLS // len(points))
    for begin in range(0, workload.count, block):
        end = min(begin + block, workload.count)
        partial = (
            cumulative[workload.sensitive_high[begin:end] + 1]
            - cumulative[workload.sensitive_low[begin:end]]
        )
        for j in range(len(schema.qis)):
            inside = (points[None, :, j] >= workload.low[begin:end, j, None]) & (
                points[None, :, j] <= workload.high[begin:end, j, None])
            partial *= inside
        estimates[begin:end] = partial.sum(axis=1)
    return estimates
