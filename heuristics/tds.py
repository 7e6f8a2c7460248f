"""TDS: top-down specialization for l-diversity (l-diversity paper, §6.2).

The l-diversity paper (Xiao, Yi, Tao, EDBT 2010) compares TP+ with TDS, "the
state-of-the-art single-dimensional generalization algorithm" (its reference [15]: Fung,
Wang, Yu, "Top-down specialization for information and privacy preservation", ICDE 2005),
modified from k-anonymity to l-diversity (§6.2, footnote 3), by the KL-divergence of the
published table (Figs. 7, 8).

Single-dimensional generalization keeps one global *cut* per QI: every value of the QI is
replaced by the cut element that contains it, whatever the row's group. TDS starts from
the most general cut (every QI the root) and repeatedly *specializes* one cut element of
one QI into its children, in every row at once:

* hierarchy QIs: a node becomes its children (one level down);
* numeric and ordered QIs: an interval is split at the median of the rows' codes in it
  (Fung et al. pick the split point of highest information gain; the median is this
  module's simplification, like Mondrian's);

A specialization is *valid* when every QI-group it creates (rows sharing all cut
elements) stays l-eligible -- the l-diversity condition replacing k-anonymity. Among the
valid ones TDS takes the one of highest *score*, Fung et al.'s InfoGain / (AnonyLoss + 1)
with the diversity ``min_G floor(|G| / max count)`` of the QI-groups in place of their
anonymity ``min_G |G|`` (AnonyLoss: how much it falls). Fung et al.'s InfoGain is toward a
class label; here there is no class, and InfoGain is the decrease of the
KL-divergence of §6.2 the specialization brings when every published row is uniform over
its cut cell: per row, ``ln |cell| - ln n(group, SA)`` falls by the log-ratio of the old to
the new cell size (integers for integer codes, else active-domain values; hierarchy
leaves) minus the log-ratio of the old to the new count of the row's SA value in its group
(the class-entropy term of InfoGain with the SA as class). As in Fung et al., TDS goes on
while a specialization is valid, also at zero gain; it stops early only when every valid
one would raise the divergence.

The QI-groups are the distinct combinations of cut elements; :func:`tds` returns them like
every partitioner of the project, so they render as boxes (the group's own extent, never
wider than its cut cell).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["TDSResult", "tds", "tds_table"]


@dataclass(frozen=True)
class TDSResult:
    """``groups[i]``: QI-group of row ``i`` (0 .. ``n_groups - 1``); ``specializations``:
    how many cut elements were specialized."""

    groups: np.ndarray
    n_groups: int
    specializations: int


@dataclass
class _Attribute:
    """The cut of one QI: ``cell[i]`` is row ``i``'s cut element (dense ids)."""

    kind: str  # "hierarchy" or "interval"
    rank: np.ndarray  # active-domain rank (interval) or leaf code (hierarchy)
    cell: np.ndarray
    level: np.ndarray | None = None  # hierarchy: level of each cell id
    node_ids: np.ndarray | None = None
    node_sizes: np.ndarray | None = None
    low: np.ndarray | None = None  # interval: rank bounds of each cell id
    high: np.ndarray | None = None
    grid: np.ndarray | None = None  # interval: the grid position of each rank

    def span(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Grid points of the rank intervals ``[low, high]``."""
        assert self.grid is not None
        return (self.grid[high] - self.grid[low] + 1).astype(np.float64)

    def width(self, cells: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.kind == "hierarchy":
            assert self.level is not None and self.node_sizes is not None
            return self.node_sizes[self.level[cells], self.rank[rows]].astype(np.float64)
        assert self.low is not None and self.high is not None
        return self.span(self.low[cells], self.high[cells])


def _attributes(codes: np.ndarray, schema: Schema | None) -> list[_Attribute]:
    attributes = []
    for j in range(codes.shape[1]):
        qi = None if schema is None else schema.qis[j]
        if qi is not None and qi.kind == "hierarchy" and qi.hierarchy is not None:
            h = qi.hierarchy
            leaf = codes[:, j].astype(np.int64)
            attributes.append(_Attribute(
                "hierarchy", leaf, np.zeros(len(leaf), dtype=np.int64),
                level=np.array([h.height - 1], dtype=np.int64), node_ids=h.node_ids,
                node_sizes=h.node_sizes))
        else:
            distinct, rank = np.unique(codes[:, j], return_inverse=True)
            top = int(rank.max()) if len(rank) else 0
            integral = bool(np.all(distinct == np.round(distinct)))
            # Integer codes count every integer of an interval (the grid of the KL-
            # divergence); other codes count the distinct values (the active domain).
            grid = distinct - distinct.min() if integral and len(distinct) else \
                np.arange(len(distinct), dtype=np.float64)
            attributes.append(_Attribute(
                "interval", rank.astype(np.int64), np.zeros(len(rank), dtype=np.int64),
                low=np.array([0]), high=np.array([top]), grid=grid))
    return attributes


def _children(attribute: _Attribute) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the child of its cell it falls in (-1: the cell cannot be specialized) and
    the child's width."""
    n = len(attribute.rank)
    child = np.full(n, -1, dtype=np.int64)
    width = np.ones(n, dtype=np.float64)
    if attribute.kind == "hierarchy":
        assert attribute.level is not None and attribute.node_ids is not None
        assert attribute.node_sizes is not None
        level = attribute.level[attribute.cell]
        ok = level > 0
        child[ok] = attribute.node_ids[level[ok] - 1, attribute.rank[ok]]
        width[ok] = attribute.node_sizes[level[ok] - 1, attribute.rank[ok]]
        return child, width
    assert attribute.low is not None and attribute.high is not None
    low, high = attribute.low[attribute.cell], attribute.high[attribute.cell]
    split = _split_points(attribute)[attribute.cell]
    ok = high > low
    left = attribute.rank <= split
    child[ok] = np.where(left[ok], 0, 1)
    width[ok] = np.where(left[ok], attribute.span(low[ok], split[ok]),
                         attribute.span(np.minimum(split[ok] + 1, high[ok]), high[ok]))
    return child, width


def _split_points(attribute: _Attribute) -> np.ndarray:
    """Per interval cell, the last rank of its left half: the median of its rows' ranks
    (rounded down), moved below the top so both halves are non-empty intervals."""
    assert attribute.low is not None and attribute.high is not None
    frame = pd.DataFrame({"cell": attribute.cell, "rank": attribute.rank})
    median = frame.groupby("cell")["rank"].median().reindex(
        np.arange(len(attribute.low))).to_numpy()
    split = np.floor(np.nan_to_num(median, nan=0.0)).astype(np.int64)
    return np.clip(split, attribute.low, np.maximum(attribute.high - 1, attribute.low))


def _group_ids(attributes: list[_Attribute]) -> np.ndarray:
    stacked = np.stack([a.cell for a in attributes], axis=1)
    return np.unique(stacked, axis=0, return_inverse=True)[1].reshape(-1)


def _best(attributes: list[_Attribute], groups: np.ndarray, value: np.ndarray,
          values: int, l: int) -> tuple[float, int, int] | None:  # noqa: E741
    """(gain, QI, cell) of the valid specialization with the largest KL decrease."""
    n = len(value)
    group_value = groups * values + value
    _, inverse, old_counts = np.unique(group_value, return_inverse=True, return_counts=True)
    old_n = old_counts[inverse].astype(np.float64)
    rows = np.arange(n)
    group_sizes = np.bincount(groups)
    group_largest = np.zeros(len(group_sizes), dtype=np.int64)
    np.maximum.at(group_largest, groups, old_counts[inverse])
    group_diversity = group_sizes // np.maximum(group_largest, 1)
    diversity = int(group_diversity.min())
    group_first = np.unique(groups, return_index=True)[1]
    best: tuple[float, int, int] | None = None
    for j, attribute in enumerate(attributes):
        child, child_width = _children(attribute)
        able = child >= 0
        if not able.any():
            continue
        sub = np.flatnonzero(able)
        key = np.unique(np.stack([groups[sub], child[sub]], axis=1), axis=0,
                        return_inverse=True)[1].reshape(-1)
        pair = key * values + value[sub]
        _, pair_inverse, pair_counts = np.unique(pair, return_inverse=True, return_counts=True)
        sizes = np.bincount(key)
        largest = np.zeros(len(sizes), dtype=np.int64)
        np.maximum.at(largest, key, pair_counts[pair_inverse])
        bad_key = l * largest > sizes
        cells = attribute.cell[sub]
        bad_set = set(np.unique(cells[bad_key[key]]).tolist())
        # Diversity after the specialization: min over the new groups of the cell and the
        # untouched groups of the other cells.
        new_diversity = sizes // np.maximum(largest, 1)
        cell_of_key = np.zeros(len(sizes), dtype=np.int64)
        cell_of_key[key] = cells
        cells_all = int(attribute.cell.max()) + 1
        after_inside = np.full(cells_all, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(after_inside, cell_of_key, new_diversity)
        before_cell = np.full(cells_all, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(before_cell, attribute.cell[group_first], group_diversity)
        order = np.sort(before_cell)
        gain_row = (np.log(attribute.width(attribute.cell[sub], rows[sub]))
                    - np.log(child_width[sub])
                    - np.log(old_n[sub]) + np.log(pair_counts[pair_inverse]))
        gains = np.bincount(cells, weights=gain_row, minlength=int(attribute.cell.max()) + 1)
        narrower = np.bincount(cells, weights=(child_width[sub] < attribute.width(
            attribute.cell[sub], rows[sub])).astype(np.float64), minlength=len(gains))
        for cell in np.unique(cells).tolist():
            if cell in bad_set:
                continue
            # A hierarchy node whose only child covers the same leaves gains nothing but
            # must be passed to reach the levels below: taken last, at gain 0.
            chain = attribute.kind == "hierarchy" and narrower[cell] == 0
            if gains[cell] < -1e-9 and not chain:
                continue
            gain = max(float(gains[cell]), 0.0) if chain else float(gains[cell])
            outside = order[1] if before_cell[cell] == order[0] and len(order) > 1 else order[0]
            if len(order) == 1 and before_cell[cell] == order[0]:
                outside = np.iinfo(np.int64).max
            after = min(int(after_inside[cell]), int(outside))
            # Fung et al.'s Score = InfoGain / (AnonyLoss + 1), with the diversity
            # min_G floor(|G| / max count) in place of the anonymity min_G |G|.
            gain = gain / (max(diversity - after, 0) + 1)
            if best is None or gain > best[0]:
                best = (gain, j, int(cell))
    return best


def _specialize(attribute: _Attribute, cell: int) -> None:
    child, _ = _children(attribute)
    rows = np.flatnonzero(attribute.cell == cell)
    if attribute.kind == "hierarchy":
        assert attribute.level is not None
        level = int(attribute.level[cell]) - 1
        new_ids: dict[int, int] = {}
        for c in np.unique(child[rows]).tolist():
            new_ids[c] = len(attribute.level) + len(new_ids)
        attribute.level = np.concatenate(
            [attribute.level, np.full(len(new_ids), level, dtype=np.int64)])
        attribute.cell[rows] = [new_ids[c] for c in child[rows].tolist()]
        return
    assert attribute.low is not None and attribute.high is not None
    left = rows[child[rows] == 0]
    right = rows[child[rows] == 1]
    split = int(_split_points(attribute)[cell])
    base = len(attribute.low)
    attribute.low = np.concatenate([attribute.low, [attribute.low[cell], split + 1]])
    attribute.high = np.concatenate([attribute.high, [split, attribute.high[cell]]])
    attribute.cell[left] = base
    attribute.cell[right] = base + 1


def tds(qi_codes: np.ndarray, sensitive: np.ndarray | list[object], l: int,  # noqa: E741
        schema: Schema | None = None, max_specializations: int = 100_000) -> TDSResult:
    """TDS on rows given by QI codes ``(n, d)`` (those of
    :func:`republish.tables.encode_qis`) and SA values; ``schema`` supplies the
    hierarchies (without it every QI is treated as ordered).

    Raises
    ------
    ParameterError
        on a bad ``l`` or shapes.
    InputError
        if the rows are not l-eligible.
    """
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    codes = np.asarray(qi_codes, dtype=np.float64)
    value, uniques = pd.factorize(np.asarray(sensitive), sort=True)
    n = len(value)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    if schema is not None and len(schema.qis) != codes.shape[1]:
        raise ParameterError(f"schema has {len(schema.qis)} QIs, codes {codes.shape[1]}.")
    if n == 0:
        return TDSResult(np.zeros(0, dtype=np.int64), 0, 0)
    if l * int(np.bincount(value).max()) > n:
        raise InputError(f"the rows are not {l}-eligible; no {l}-diverse partition exists.")
    attributes = _attributes(codes, schema)
    groups = np.zeros(n, dtype=np.int64)
    steps = 0
    while steps < max_specializations:
        best = _best(attributes, groups, value, len(uniques), l)
        if best is None:
            break
        _, j, cell = best
        _specialize(attributes[j], cell)
        groups = _group_ids(attributes)
        steps += 1
    return TDSResult(groups, int(groups.max()) + 1, steps)


def tds_table(table: pd.DataFrame, schema: Schema, l: int) -> TDSResult:  # noqa: E741
    """TDS on a validated table, hierarchies from ``schema``."""
    return tds(encode_qis(table, schema), table[schema.sensitive].to_numpy(), l, schema)
