"""Mondrian multidimensional partitioning for l-diversity.

LeFevre, DeWitt, Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE 2006 (the
l-diversity paper's reference [27]), with the l-diversity paper's eligibility as the
stopping rule: starting from the whole table, a region is cut at the median of the QI
whose normalized range is widest; the cut is allowed only if both halves stay l-eligible
(at most ``|S| / l`` rows of a half share an SA value); otherwise the next widest QI is
tried, and a region no QI can cut is a QI-group. Every QI-group is l-eligible: the table
is, and a cut is only made when both halves are.

Codes are those of :mod:`republish.schema` (numeric value, position in the order, DFS leaf
index for hierarchies), so a cut always splits a hierarchy QI between subtrees of the DFS
order. The median cut is strict: rows with the median code go left, unless that leaves the
right half empty, in which case they go right.

The partition is rendered in the suppression model (Definition 1 of the l-diversity paper)
or in the interval model by :func:`mondrian_generalization`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.generalization import Domain, Model, generalize
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["MondrianResult", "mondrian", "mondrian_generalization", "mondrian_table"]


@dataclass(frozen=True)
class MondrianResult:
    """``groups[i]`` is the QI-group number (0 .. ``n_groups - 1``) of row ``i``."""

    groups: np.ndarray
    n_groups: int


def _eligible(counts: np.ndarray, size: int, l: int) -> bool:  # noqa: E741
    return size > 0 and l * int(counts.max()) <= size


def mondrian(
    qi_codes: np.ndarray,
    sensitive: np.ndarray | Sequence[object],
    l: int,  # noqa: E741
    *,
    extents: np.ndarray | None = None,
) -> MondrianResult:
    """Mondrian on rows given by QI codes ``(n, d)`` and SA values ``(n,)``.

    ``extents[j]`` normalizes the range of QI ``j`` when choosing the cut dimension
    (default: the range of the given codes).
    """
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    codes = np.asarray(qi_codes, dtype=np.float64)
    value, uniques = pd.factorize(np.asarray(sensitive), sort=True)
    n = len(value)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    groups = np.zeros(n, dtype=np.int64)
    if n == 0:
        return MondrianResult(groups, 0)
    m = len(uniques)
    if not _eligible(np.bincount(value, minlength=m), n, l):
        raise InputError(f"the rows are not {l}-eligible; Mondrian needs an l-eligible table.")
    if extents is None:
        extents = codes.max(axis=0) - codes.min(axis=0)
    scale = np.where(np.asarray(extents, dtype=np.float64) > 0, extents, 1.0)
    n_groups = 0
    stack = [np.arange(n)]
    while stack:
        rows = stack.pop()
        halves = _cut(codes[rows], value[rows], m, l, scale) if len(rows) >= 2 * l else None
        if halves is None:
            groups[rows] = n_groups
            n_groups += 1
            continue
        stack.append(rows[~halves])
        stack.append(rows[halves])
    return MondrianResult(groups, n_groups)


def _cut(
    codes: np.ndarray, value: np.ndarray, m: int, l: int, scale: np.ndarray  # noqa: E741
) -> np.ndarray | None:
    """Mask of the left half of the first allowed median cut, widest QI first."""
    low = codes.min(axis=0)
    high = codes.max(axis=0)
    widths = (high - low) / scale
    size = len(value)
    for j in np.argsort(-widths, kind="stable"):
        if widths[j] <= 0:
            return None
        column = codes[:, j]
        median = np.partition(column, (size - 1) // 2)[(size - 1) // 2]
        left = column <= median
        if median >= high[j]:
            left = column < median
        left_size = int(left.sum())
        if left_size < l or size - left_size < l:
            continue
        left_counts = np.bincount(value[left], minlength=m)
        right_counts = np.bincount(value, minlength=m) - left_counts
        if _eligible(left_counts, left_size, l) and _eligible(right_counts, size - left_size, l):
            return left
    return None


def mondrian_table(table: pd.DataFrame, schema: Schema, l: int) -> MondrianResult:  # noqa: E741
    """Mondrian on a validated table, ranges normalized by the schema's domains."""
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    return mondrian(codes, table[schema.sensitive].to_numpy(), l,
                    extents=domain.high - domain.low)


def mondrian_generalization(
    table: pd.DataFrame, schema: Schema, l: int, model: Model = "suppression"  # noqa: E741
) -> pd.DataFrame:
    """The Mondrian partition rendered (``group``, QIs, SA; rows in table order)."""
    result = mondrian_table(table, schema, l)
    return generalize(table, result.groups, schema, model)
