"""The objective of a release, stated once.

A release of a dynamic principle is compared lexicographically (design notes, "Release
objective and certificates"):

(a) **counterfeits + w · deferrals** (``w``: the deferral weight, 1 by default), then
(b) the **generalization cost** given (a):

    perimeter:  Σ over groups |G| · Σ over QIs  extent_q(G) / range_q
    ncp:        Σ over groups |R(G)| · Σ over QIs  extent_q(G) / range_q

where ``|G|`` counts the group's counterfeits and ``|R(G)|`` only its real rows. A numeric or
ordered QI's extent is the width of the group's interval and its range the width of the
QI's values in the table being released ``T(n)``; a hierarchy QI's normalized extent is
``(leaves under the lowest common ancestor - 1) / (leaves - 1)``
(:mod:`republish.generalization`). The perimeter is the m-invariance paper's (§4.3); NCP,
the normalized certainty penalty, is the usual alternative (Σ over rows instead of over
group slots). :data:`OBJECTIVES` names them as printed in every output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import pandas as pd

from republish.errors import ParameterError
from republish.generalization import group_extremes
from republish.release import COUNT, GROUP, Release
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["COUNTS_NAME", "OBJECTIVES", "CostName", "ReleaseCost", "counts_name", "member_boxes",
           "member_ranges", "release_cost", "validate_cost"]

CostName = Literal["perimeter", "ncp"]


def member_ranges(points: np.ndarray, members: np.ndarray
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per QI of ``points``, the lowest and highest coordinate of each row of ``members``
    (``(C, k)`` row indices, ``-1`` = none): two flat ``(C,)`` arrays, ``inf``/``-inf``
    for a row without members. One QI and member slot at a time, ``-1`` reading an
    appended sentinel: on a million candidate groups this is ten times faster than
    masking a ``(C, k, d)`` gather."""
    members = np.asarray(members, dtype=np.int64)
    points = np.asarray(points, dtype=np.float64)
    slots = np.ascontiguousarray(members.T if members.ndim == 2 else members[:, None].T)
    if slots.size < len(points) // 4:
        # few members against many points (a slot trade's 128 groups among 200,000 rows):
        # copying each column with its sentinel would cost more than a masked gather
        present = slots >= 0
        gathered = np.maximum(slots, 0)
        for q in range(points.shape[1]):
            values = points[gathered, q]
            yield (np.where(present, values, np.inf).min(axis=0, initial=np.inf),
                   np.where(present, values, -np.inf).max(axis=0, initial=-np.inf))
        return
    for q in range(points.shape[1]):
        below, above = np.append(points[:, q], np.inf), np.append(points[:, q], -np.inf)
        low, high = np.full(len(members), np.inf), np.full(len(members), -np.inf)
        for at in slots:
            np.minimum(low, below[at], out=low)
            np.maximum(high, above[at], out=high)
        yield low, high


def member_boxes(points: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``members`` (``(C, k)`` row indices into ``points``, ``-1`` = none) the
    lowest and highest coordinates of its rows: ``(C, d)`` each, ``inf``/``-inf`` for a
    row without members (:func:`member_ranges`, stacked)."""
    ranges = list(member_ranges(points, members))
    shape = (len(members), np.shape(points)[1])
    return (np.stack([low for low, _ in ranges], axis=1) if ranges else np.empty(shape),
            np.stack([high for _, high in ranges], axis=1) if ranges else np.empty(shape))


#: The name of each generalization cost (b), as printed beside its value.
OBJECTIVES: dict[str, str] = {
    "perimeter": "perimeter Σ|G|·Σ extent/range",
    "ncp": "NCP Σ|R(G)|·Σ extent/range",
}
COUNTS_NAME = "counterfeits + {w}·deferrals"


def counts_name(deferral_weight: float = 1.0) -> str:
    """The name of objective (a) with its deferral weight."""
    return COUNTS_NAME.format(w=f"{deferral_weight:g}")


def validate_cost(cost: object) -> CostName:
    if cost not in OBJECTIVES:
        raise ParameterError(f"cost (--cost) must be one of {list(OBJECTIVES)}, got {cost!r}.")
    return cast(CostName, cost)


@dataclass(frozen=True, eq=False)
class ReleaseCost:
    """Objective (b) of the releases of one table ``T(n)``: QI codes normalized per QI by
    the table's range (hierarchies: by their leaves), and the extent of any set of rows."""

    schema: Schema
    points: np.ndarray  # (n, d): numeric/ordered QIs in [0, 1]; hierarchy QIs as leaf codes
    name: CostName = "perimeter"

    @classmethod
    def of(cls, schema: Schema, codes: np.ndarray, name: CostName = "perimeter") -> ReleaseCost:
        points = np.array(codes, dtype=np.float64, copy=True)
        for j, qi in enumerate(schema.qis):
            if qi.kind == "hierarchy" or not len(points):
                continue
            low, high = points[:, j].min(), points[:, j].max()
            points[:, j] = (points[:, j] - low) / (high - low) if high > low else 0.0
        return cls(schema=schema, points=points, name=validate_cost(name))

    @property
    def box_only(self) -> bool:
        """True when every QI's extent is the width of a box in :attr:`points`."""
        return all(qi.kind != "hierarchy" for qi in self.schema.qis)

    def extent(self, rows: np.ndarray) -> float:
        """Σ over QIs of the normalized extent of ``rows`` (0 for no row)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return 0.0
        chosen = self.points[rows]
        return float(self._lengths(chosen.min(axis=0), chosen.max(axis=0)).sum())

    def group_cost(self, rows: np.ndarray, slots: int) -> float:
        """Cost of one group: ``slots`` (|G|, counterfeits included) for the perimeter,
        the real rows for NCP, times the extent."""
        size = slots if self.name == "perimeter" else len(rows)
        return size * self.extent(rows)

    def total(self, groups: Sequence[np.ndarray], slots: Sequence[int]) -> float:
        """Objective (b) of a release given each group's real rows and slot count."""
        return float(sum(self.group_cost(r, s) for r, s in zip(groups, slots, strict=True)))

    def total_labelled(self, rows: np.ndarray, labels: np.ndarray, slots: np.ndarray) -> float:
        """Objective (b) with each group given by a label: ``rows[i]`` sits in group
        ``labels[i]`` (labels ``0..G-1``), ``slots[g]`` is |G| (counterfeits included).
        Vectorized: a census-sized release costs milliseconds."""
        rows = np.asarray(rows, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        count = len(slots)
        if not len(rows):
            return 0.0
        chosen = self.points[rows]
        d = chosen.shape[1]
        low, high = group_extremes(chosen, labels, count)  # linear, not a scatter per row
        present = np.bincount(labels, minlength=count) > 0
        lengths = np.zeros((count, d))
        lengths[present] = self._lengths(low[present], high[present])
        sizes = (np.asarray(slots, dtype=np.float64) if self.name == "perimeter"
                 else np.bincount(labels, minlength=count).astype(np.float64))
        return float((sizes * lengths.sum(axis=1)).sum())

    def lengths(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Normalized length per QI of boxes ``low..high`` (shape ``(..., d)``)."""
        return self._lengths(np.asarray(low, dtype=np.float64),
                             np.asarray(high, dtype=np.float64))

    def _lengths(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Normalized length per QI of boxes ``low..high`` (shape ``(..., d)``)."""
        lengths = high - low
        for j, qi in enumerate(self.schema.qis):
            if qi.kind == "hierarchy":
                assert qi.hierarchy is not None
                leaves = len(qi.hierarchy.leaves)
                flat_low = low[..., j].reshape(-1).astype(np.int64)
                flat_high = high[..., j].reshape(-1).astype(np.int64)
                covered = qi.hierarchy.covered_leaves(flat_low, flat_high).reshape(
                    low.shape[:-1])
                lengths[..., j] = (covered - 1) / (leaves - 1) if leaves > 1 else 0.0
        return lengths

    def box_points(self) -> np.ndarray | None:
        """:attr:`points` with each hierarchy QI's leaf codes divided by ``leaves - 1``, so
        that the box extent of any rows is at most their :meth:`extent`, or None when a
        hierarchy's cells are not contiguous in leaf order. (A cell's leaves are consecutive
        codes, so the lowest common ancestor of codes ``lo..hi`` covers ``>= hi - lo + 1``
        leaves.) The whole-release model prices and bounds its missing columns with it."""
        points = np.array(self.points, dtype=np.float64, copy=True)
        for j, qi in enumerate(self.schema.qis):
            if qi.kind != "hierarchy" or qi.hierarchy is None:
                continue
            hierarchy, leaves = qi.hierarchy, len(qi.hierarchy.leaves)
            codes = np.arange(leaves)
            for ids, sizes in zip(hierarchy.node_ids, hierarchy.node_sizes, strict=True):
                low = np.full(int(ids.max(initial=0)) + 1, leaves)
                high = np.full(len(low), -1)
                np.minimum.at(low, ids, codes)
                np.maximum.at(high, ids, codes)
                if ((high - low + 1)[ids] != sizes).any():
                    return None
            points[:, j] = points[:, j] / max(leaves - 1, 1)
        return points

    def batch(self, members: np.ndarray) -> np.ndarray:
        """:meth:`extent` of every row of ``members`` (``(C, k)`` row indices, ``-1`` =
        none), vectorized (the whole-release model's column enumeration calls this)."""
        low, high = member_boxes(self.points, members)
        some = (np.asarray(members) >= 0).any(axis=1)
        low[~some], high[~some] = 0.0, 0.0
        return np.where(some, self._lengths(low, high).sum(axis=1), 0.0)

    def joined(self, members: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``extent(members[b] ∪ {rows[a]})`` for every ``a``, ``b`` (``members``: ``(B, k)``
        row indices, ``-1`` = none): the cost matrix of a slot trade
        (:mod:`republish.models.whole_release_slots`)."""
        low, high = member_boxes(self.points, members)
        x = self.points[np.asarray(rows, dtype=np.int64)][:, None, :]
        return self._lengths(np.minimum(low[None], x), np.maximum(high[None], x)).sum(axis=2)

    def pairwise(self, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        """``extent({i, j})`` for ``i`` in ``rows_a``, ``j`` in ``rows_b`` (a matrix)."""
        a = self.points[np.asarray(rows_a, dtype=np.int64)][:, None, :]
        b = self.points[np.asarray(rows_b, dtype=np.int64)][None, :, :]
        return self._lengths(np.minimum(a, b), np.maximum(a, b)).sum(axis=2)

    def model_extent(self, signature_size: Callable[[np.ndarray], int]
                     ) -> Callable[[np.ndarray], float]:
        """The ``extent(rows)`` a model multiplies by |σ|: the extent itself for the
        perimeter; for NCP ``|R|/|σ| · extent`` (monotone under inclusion, since |R|/|σ|
        grows with R), so that ``|σ| · extent' = |R| · extent``."""
        if self.name == "perimeter":
            return _Measure(self)
        return _NcpMeasure(self, signature_size)


class _Measure:
    """The perimeter's extent as the model's ``Extent``: a call, and the vectorized
    ``batch`` and ``pairwise`` the model uses when they exist. ``separable``: the extent is
    a sum over QIs of a function of each QI's interval (what
    :mod:`republish.models.whole_release_row_bound` needs for its exact row minima)."""

    separable = True

    def __init__(self, cost: ReleaseCost) -> None:
        self.cost = cost

    def __call__(self, rows: np.ndarray) -> float:
        return self.cost.extent(rows)

    def batch(self, members: np.ndarray) -> np.ndarray:
        return self.cost.batch(members)

    def pairwise(self, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        return self.cost.pairwise(rows_a, rows_b)

    def joined(self, members: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.cost.joined(members, rows)

    @property
    def box_points(self) -> np.ndarray | None:
        """Points whose box extent bounds this extent from below (None: none known)."""
        return self.cost.box_points()


class _NcpMeasure:
    """NCP's extent as the model's ``Extent``: ``|R|/|σ| · extent(R)``. ``cost`` lets the
    pair bound of :mod:`republish.models.whole_release_pair_bound` read the QIs; not
    ``separable`` (the row bound's exact minima are for the perimeter)."""

    separable = False

    def __init__(self, cost: ReleaseCost, signature_size: Callable[[np.ndarray], int]) -> None:
        self.cost = cost
        self.signature_size = signature_size

    def __call__(self, rows: np.ndarray) -> float:
        return len(rows) / max(self.signature_size(rows), 1) * self.cost.extent(rows)


def release_cost(release: Release, table: pd.DataFrame, name: CostName = "perimeter") -> float:
    """Objective (b) of a release of ``table`` (its ``T(n)``), recomputed from the private
    assignment and the counterfeit counts ``R(n)``: how a hand-made release (the paper's
    Tables 1b and 3a) is compared with a computed one."""
    schema = release.schema
    cost = ReleaseCost.of(schema, encode_qis(table, schema), name)
    position = {ident: i for i, ident in enumerate(table[schema.identifier].tolist())}
    fakes = dict(zip(release.counterfeits[GROUP], release.counterfeits[COUNT], strict=True))
    groups, slots = [], []
    for group, members in release.assignment.groupby(GROUP):
        groups.append(np.array([position[i] for i in members[schema.identifier]]))
        slots.append(len(members) + int(fakes.get(group, 0)))
    return cost.total(groups, slots)
