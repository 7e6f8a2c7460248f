"""Random COUNT(*) range queries and their exact answers (m-invariance paper, §5.2).

A query is::

    SELECT COUNT(*) FROM T(j) WHERE A_1 in R_1 AND ... AND A_d in R_d AND A_s in R_s

with one random range per QI and on the sensitive attribute, each of length
``|A| * theta ** (1 / (d + 1))`` where ``|A|`` is the attribute's domain size and
``theta`` the *expected selectivity* (the paper fixes ``theta = 10%`` in Figure 8b; it is
the default here). Categorical ranges run over codes (declared order, or depth-first leaf
order of a hierarchy); the sensitive attribute's values are ranged in sorted order.
The actual answer ``act`` comes from ``T(j)`` (:func:`answer_exact`); the estimates from
a published table are in :mod:`republish.query_estimates`.

Discrete attributes (categorical, and numeric QIs whose values are all integers) measure a
range by the number of values it holds, so ``[21, 22]`` is two ages and a single-row group
is answered exactly; other numeric QIs measure lengths, a degenerate box counting as a point.

On a small discrete domain the answers come from prefix sums over the grid of all
(QIs, SA) cells (``2 ** (d + 1)`` look-ups per query); otherwise every row is compared
with blocks of queries.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from republish.errors import ParameterError
from republish.generalization import Domain
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["DEFAULT_SELECTIVITY", "Method", "QueryWorkload", "answer_exact", "generate_queries"]

Method = Literal["auto", "grid", "blocks"]

#: Expected selectivity used by default (the paper's fixed value in Figure 8b).
DEFAULT_SELECTIVITY = 0.1
#: Cells of the largest prefix-sum grid (128 MB of float64).
_GRID_CELLS = 1 << 24
#: Array cells per vectorized block of queries (about 2 MB of float64: stays in cache).
_QUERY_BLOCK_CELLS = 250_000


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


def _chosen_grid(
    workload: QueryWorkload, domain: Domain, method: Method, pairs: int, per_pair: float
) -> tuple[int, ...] | None:
    """The grid's shape when ``method`` uses it: ``grid`` whenever :func:`_grid_shape`
    allows, ``auto`` only when it also beats ``pairs`` comparisons (:func:`_grid_pays`)."""
    shape = _grid_shape(workload, domain) if method != "blocks" else None
    if shape is not None and method == "auto" and not _grid_pays(shape, pairs, per_pair):
        return None
    return shape


def _no_grid() -> ParameterError:
    return ParameterError("method='grid' needs discrete QIs and a domain of at most "
                          f"{_GRID_CELLS} cells; use method='blocks'.")


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
    shape = _chosen_grid(workload, domain, method,
                         workload.count * len(table) * (codes.shape[1] + 1), per_pair=1.0)
    offsets = np.round(codes - domain.low).astype(np.int64) + 1
    if shape is not None and np.any((offsets < 1) | (offsets >= np.array(shape[:-1]))):
        shape = None  # rows outside a declared domain
    if shape is not None:
        known = sensitive >= 0
        index = np.ravel_multi_index((*offsets[known].T, sensitive[known] + 1), shape)
        prefix = np.bincount(index, minlength=int(np.prod(shape))).astype(np.float64)
        prefix = prefix.reshape(shape)
        for axis in range(prefix.ndim):
            np.cumsum(prefix, axis=axis, out=prefix)
        return np.round(_grid_sums(prefix, workload, domain)).astype(np.int64)
    if method == "grid":
        raise _no_grid()
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
