"""The release's extent with hierarchy QIs read from tables: the same numbers, faster.

The perimeter of :mod:`republish.objectives` measures a hierarchy QI by the leaves under
the lowest common ancestor of a group's smallest and largest leaf code
(:meth:`republish.schema.Hierarchy.covered_leaves`), which compares ancestor ids level by
level for every box. The slot trades of the large-release path
(:mod:`republish.models.whole_release_slots`) evaluate millions of boxes per release, and
on Adult (three hierarchy QIs of 2-41 leaves) that comparison took a fifth of their time.
A hierarchy of ``L`` leaves has only ``L²`` intervals, so each QI's normalized extent is
tabulated once per release, computed by the cost's own ``lengths`` (hence equal, not
approximately equal), and a box's extent is a table look-up. This is memoization, not a
new measure: it changes no objective.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from republish.models.whole_release_counts import BoxExtent, Extent
from republish.objectives import ReleaseCost, member_boxes, member_ranges

__all__ = ["TabulatedExtent", "box_point_lengths", "tabulated", "unit_points"]

#: A hierarchy with more leaves than this keeps the cost's own computation (the table
#: holds ``leaves²`` floats).
MAX_TABLE_LEAVES = 2_048


class TabulatedExtent:
    """``Σ_q length_q(box)`` with hierarchy QIs looked up in ``tables[q]`` (``None`` for a
    numeric QI: the width ``max - min``). Offers what the searches call: the extent of a
    set of rows, ``batch``, ``joined`` and ``pairwise``."""

    separable = True

    def __init__(self, points: np.ndarray, tables: list[np.ndarray | None]) -> None:
        self.points = np.asarray(points, dtype=np.float64)
        self.tables = tables
        self.coded = [q for q, t in enumerate(tables) if t is not None]

    def lengths(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Normalized length per QI of boxes ``low..high`` (shape ``(..., d)``)."""
        lengths = high - low
        for q in self.coded:
            table = self.tables[q]
            assert table is not None
            lengths[..., q] = table[low[..., q].astype(np.int64), high[..., q].astype(np.int64)]
        return lengths

    def __call__(self, rows: np.ndarray) -> float:
        chosen = self.points[np.asarray(rows, dtype=np.int64)]
        if not len(chosen):
            return 0.0
        return float(self.lengths(chosen.min(axis=0), chosen.max(axis=0)).sum())

    def _length(self, q: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """QI ``q``'s normalized length of intervals ``low..high`` (any shape; hierarchy
        intervals as flat table indices): the one formula :meth:`boxes`, :meth:`batch` and
        :meth:`joined` add up QI by QI."""
        table = self.tables[q]
        if table is None:
            return high - low
        return table.ravel()[low.astype(np.intp) * len(table) + high.astype(np.intp)]

    def boxes(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The extent of each box ``low[c]..high[c]`` (``(C, d)`` each, corners of rows'
        points), summed as :meth:`batch` sums it."""
        total = np.zeros(len(low))
        for q in range(len(self.tables)):
            total += self._length(q, low[:, q], high[:, q])
        return total

    def batch(self, members: np.ndarray) -> np.ndarray:
        """The extent of each row of ``members`` (``-1`` pads; 0 for no rows), one QI at a
        time on flat arrays (:func:`~republish.objectives.member_ranges`): the
        whole-release tables (:mod:`republish.models.whole_release_tables`) cost a million
        groups at once, where a ``(C, k, d)`` gather took most of a second."""
        total = np.zeros(len(members))
        for q, (low, high) in enumerate(member_ranges(self.points, members)):
            none = np.isposinf(low)  # a row without members: extent 0
            low[none], high[none] = 0.0, 0.0
            total += self._length(q, low, high)
        return total

    def joined(self, members: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``extent(members[b] ∪ {rows[a]})`` as an ``(A, B)`` matrix (the slot trades'
        inner loop: one QI at a time, hierarchy intervals as flat table indices)."""
        low, high = member_boxes(self.points, members)
        x = self.points[np.asarray(rows, dtype=np.int64)]
        total = np.zeros((len(x), len(low)))
        for q in range(len(self.tables)):
            total += self._length(q, np.minimum(low[None, :, q], x[:, None, q]),
                                  np.maximum(high[None, :, q], x[:, None, q]))
        return total

    def pairwise(self, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        a = self.points[np.asarray(rows_a, dtype=np.int64)][:, None, :]
        b = self.points[np.asarray(rows_b, dtype=np.int64)][None, :, :]
        return self.lengths(np.minimum(a, b), np.maximum(a, b)).sum(axis=2)


def tabulated(measure: Extent) -> Extent:
    """``measure`` itself, or its tabulated equal when it is the perimeter's extent of a
    :class:`~republish.objectives.ReleaseCost` with hierarchy QIs (the model's extent of
    :func:`republish.objectives.ReleaseCost.model_extent`, which carries its ``cost``)."""
    if isinstance(measure, BoxExtent | TabulatedExtent):
        return measure
    cost = getattr(measure, "cost", None)
    if not isinstance(cost, ReleaseCost) or cost.name != "perimeter":
        return measure
    tables: list[np.ndarray | None] = []
    for qi in cost.schema.qis:
        if qi.kind != "hierarchy" or qi.hierarchy is None:
            tables.append(None)
            continue
        leaves = len(qi.hierarchy.leaves)
        if leaves > MAX_TABLE_LEAVES:
            return measure
        low, high = np.meshgrid(np.arange(leaves), np.arange(leaves), indexing="ij")
        box_low = np.zeros((leaves, leaves, len(cost.schema.qis)))
        box_high = np.zeros_like(box_low)
        q = len(tables)
        box_low[..., q] = np.minimum(low, high)
        box_high[..., q] = np.maximum(low, high)
        tables.append(cost.lengths(box_low, box_high)[..., q])
    return TabulatedExtent(cost.points, tables)


def unit_points(points: np.ndarray, measure: Extent) -> np.ndarray:
    """``points`` with every QI on the scale of its extent, for choosing *nearby* groups:
    a hierarchy QI's leaf codes divided by ``leaves - 1`` (a code step of Adult's
    native-country, 41 leaves, would otherwise weigh as much as the whole age range)."""
    tables = getattr(measure, "tables", None)
    if tables is None:
        return points
    scale = np.array([1.0 if t is None else max(len(t) - 1, 1) for t in tables])
    return np.asarray(points, dtype=np.float64) / scale


def box_point_lengths(measure: Extent
                      ) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """The exact lengths per QI of boxes given in ``measure``'s box points (hierarchy leaf
    codes over ``leaves - 1``, :meth:`republish.objectives.ReleaseCost.box_points`), or None
    when ``measure`` is not a tabulated perimeter (a :class:`TabulatedExtent` is used as
    it is, its tables not built again). Pricing on box points prunes by these:
    a hierarchy QI's extent (leaves under the common ancestor) is often several times the
    width of its leaf codes, and the width alone let tens of thousands of partial columns
    through that no reduced cost could keep."""
    table_measure = tabulated(measure)
    if not isinstance(table_measure, TabulatedExtent) or not table_measure.coded:
        return None
    scale = np.array([1.0 if t is None else float(max(len(t) - 1, 1))
                      for t in table_measure.tables])

    def lengths(low: np.ndarray, high: np.ndarray) -> np.ndarray:
        coded_low = np.asarray(low, dtype=np.float64).copy()
        coded_high = np.asarray(high, dtype=np.float64).copy()
        for q in table_measure.coded:
            coded_low[..., q] = np.rint(coded_low[..., q] * scale[q])
            coded_high[..., q] = np.rint(coded_high[..., q] * scale[q])
        return table_measure.lengths(coded_low, coded_high)

    return lengths
