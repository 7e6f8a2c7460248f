"""Hilbert-curve partitioning for l-diversity, and TP+ with it (l-diversity paper, §6.1).

The l-diversity paper (Xiao, Yi, Tao, "The hardness and approximation algorithms for
l-diversity", EDBT 2010) compares TP and TP+ with *Hilbert* (its reference [16]: Ghinita,
Karras, Kalnis, Mamoulis, "Fast data anonymization with low information loss", VLDB 2007),
the best of the suppression baselines it tried, and builds TP+ as TP followed by Hilbert on
TP's residue set (§5.6, §6.1). The project's TP+ (:mod:`republish.heuristics.tp_plus`)
substitutes Mondrian; this module is the paper's partitioner.

Hilbert maps every row's QI point to its index on a d-dimensional Hilbert curve
(Skilling's transpose algorithm, "Programming the Hilbert curve", AIP Conf. Proc. 707,
2004; QI codes rank-scaled to a ``2^b`` grid per QI) and forms groups along the curve, as
Ghinita et al.'s 1-D l-diversity step: rows are bucketed by sensitive value, each bucket in
curve order; a group takes the first remaining row on the curve (the pivot) and, from
``l - 1`` other values, the row of each bucket that comes next on the curve -- values that
must lose a row to keep the rest l-eligible first, then the values whose next row is
closest to the pivot on the curve. When the remaining rows could not form another group
and stay l-eligible, they form the last group. Every group has ``l`` distinct values (the last one
at least ``l`` rows, l-eligible because the remainder is), so the partition is l-diverse.
Ghinita et al. also merge consecutive groups by dynamic programming to lower information
loss; that refinement is not implemented (groups have exactly ``l`` rows but the last).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.heuristics.three_phase import ThreePhaseResult, three_phase
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["HilbertResult", "TPHilbertResult", "hilbert", "hilbert_index", "hilbert_table",
           "tp_plus_hilbert"]

#: Bits of a Hilbert index (one unsigned 64-bit word, kept below the sign bit).
MAX_BITS = 62


@dataclass(frozen=True)
class HilbertResult:
    """``groups[i]``: QI-group of row ``i`` (0 .. ``n_groups - 1``, in curve order)."""

    groups: np.ndarray
    n_groups: int


@dataclass(frozen=True)
class TPHilbertResult:
    """TP+ with Hilbert on the residue: groups as :class:`HilbertResult`, TP's groups
    first, then ``residue_groups`` Hilbert parts; ``three_phase`` is TP's own result."""

    groups: np.ndarray
    n_groups: int
    residue_groups: int
    three_phase: ThreePhaseResult


def _grid(codes: np.ndarray, bits: int) -> np.ndarray:
    """Dense ranks of every column scaled to ``[0, 2^bits)``."""
    grid = np.zeros(codes.shape, dtype=np.uint64)
    top = (1 << bits) - 1
    for j in range(codes.shape[1]):
        _, ranks = np.unique(codes[:, j], return_inverse=True)
        largest = int(ranks.max()) if len(ranks) else 0
        scaled = ranks if largest <= top else (ranks * top) // max(largest, 1)
        grid[:, j] = scaled.astype(np.uint64)
    return grid


def hilbert_index(points: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert index of integer points ``(n, d)`` in ``[0, 2^bits)^d`` (Skilling 2004).

    Raises
    ------
    ParameterError
        if ``d * bits`` exceeds :data:`MAX_BITS` or a coordinate is out of range.
    """
    x = np.array(points, dtype=np.uint64, copy=True)
    if x.ndim != 2:
        raise ParameterError("points must be an (n, d) array.")
    n, d = x.shape
    if bits < 1 or d * bits > MAX_BITS:
        raise ParameterError(f"d * bits = {d * bits}: must be between 1 and {MAX_BITS}.")
    if n and int(x.max()) >= 1 << bits:
        raise ParameterError(f"coordinates must lie in [0, 2^{bits}).")
    one = np.uint64(1)
    q = np.uint64(1 << (bits - 1))
    while q > one:  # inverse undo
        p = q - one
        for i in range(d):
            high = (x[:, i] & q) != 0
            x[high, 0] ^= p
            low = ~high
            t = (x[low, 0] ^ x[low, i]) & p
            x[low, 0] ^= t
            x[low, i] ^= t
        q >>= one
    for i in range(1, d):  # Gray encode
        x[:, i] ^= x[:, i - 1]
    t = np.zeros(n, dtype=np.uint64)
    q = np.uint64(1 << (bits - 1))
    while q > one:
        t[(x[:, d - 1] & q) != 0] ^= q - one
        q >>= one
    x ^= t[:, None]
    index = np.zeros(n, dtype=np.uint64)
    for bit in range(bits - 1, -1, -1):  # interleave the transpose, high bits first
        for i in range(d):
            index = (index << one) | ((x[:, i] >> np.uint64(bit)) & one)
    return index


def _curve_order(codes: np.ndarray) -> np.ndarray:
    """Position of every row on the Hilbert curve (ties broken by row order)."""
    d = codes.shape[1]
    distinct = max((len(np.unique(codes[:, j])) for j in range(d)), default=1)
    bits = max(1, min(int(np.ceil(np.log2(max(distinct, 2)))), MAX_BITS // max(d, 1)))
    index = hilbert_index(_grid(codes, bits), bits)
    return np.argsort(index, kind="stable")


def hilbert(
    qi_codes: np.ndarray, sensitive: np.ndarray | Sequence[object], l: int  # noqa: E741
) -> HilbertResult:
    """Hilbert partition of rows given by QI codes ``(n, d)`` and SA values ``(n,)``.

    Raises
    ------
    ParameterError
        on a bad ``l`` or shapes.
    InputError
        if the rows are not l-eligible (no l-diverse partition exists).
    """
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    codes = np.asarray(qi_codes, dtype=np.float64)
    value, uniques = pd.factorize(np.asarray(sensitive), sort=True)
    n = len(value)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    groups = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return HilbertResult(groups, 0)
    counts = np.bincount(value, minlength=len(uniques))
    if l * int(counts.max()) > n:
        raise InputError(f"the rows are not {l}-eligible; no {l}-diverse partition exists.")
    order = _curve_order(codes) if codes.shape[1] else np.arange(n)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    buckets = [order[value[order] == v].tolist() for v in range(len(uniques))]
    heads = [0] * len(uniques)
    remaining, n_groups, cursor = n, 0, 0
    while remaining:
        # Values that must lose a row now to keep the rest l-eligible.
        over = np.flatnonzero(l * counts > remaining - l).tolist()
        if remaining < 2 * l or len(over) > l or int((counts > 0).sum()) < l:
            groups[groups < 0] = n_groups  # the remainder is l-eligible: one group
            n_groups += 1
            break
        while groups[order[cursor]] >= 0:
            cursor += 1
        pivot = int(order[cursor])
        if int(value[pivot]) not in over and len(over) == l:
            pivot = min((buckets[v][heads[v]] for v in over), key=lambda r: position[r])
        chosen = {int(value[pivot]), *over}
        if len(chosen) < l:
            others = [v for v in range(len(uniques))
                      if v not in chosen and heads[v] < len(buckets[v])]
            others.sort(key=lambda v: abs(position[buckets[v][heads[v]]] - position[pivot]))
            chosen.update(others[: l - len(chosen)])
        for v in chosen:
            row = buckets[v][heads[v]]
            heads[v] += 1
            groups[row] = n_groups
            counts[v] -= 1
        remaining -= len(chosen)
        n_groups += 1
    return HilbertResult(groups, n_groups)


def hilbert_table(table: pd.DataFrame, schema: Schema, l: int) -> HilbertResult:  # noqa: E741
    """Hilbert on a validated table (QI codes of :func:`republish.tables.encode_qis`)."""
    return hilbert(encode_qis(table, schema), table[schema.sensitive].to_numpy(), l)


def tp_plus_hilbert(
    qi_codes: np.ndarray, sensitive: np.ndarray | Sequence[object], l: int  # noqa: E741
) -> TPHilbertResult:
    """TP+ as the paper builds it (§5.6, §6.1): TP, then Hilbert on TP's residue set."""
    result = three_phase(qi_codes, sensitive, l)
    codes = np.asarray(qi_codes, dtype=np.float64)
    kept = result.groups >= 0
    labels, dense = np.unique(result.groups[kept], return_inverse=True)
    out = np.empty(len(codes), dtype=np.int64)
    out[kept] = dense
    residue = np.flatnonzero(~kept)
    parts = 0
    if len(residue):
        refined = hilbert(codes[residue], np.asarray(sensitive)[residue], l)
        out[residue] = len(labels) + refined.groups
        parts = refined.n_groups
    return TPHilbertResult(out, len(labels) + parts, parts, result)
