"""Generalization of QI groups: boxes, rendering, interval lengths, perimeter, NCP, stars.

A QI group's generalization is its *box*: per QI the smallest and largest code of its
rows (codes as in :mod:`republish.schema`). Rendering turns a box into published cells:

* interval model: numeric ``[lo, hi]``, ordered ``[first, last]`` in the declared order,
  hierarchy the label of the lowest common ancestor; ``v`` alone when the group agrees;
* suppression model (static l-diversity, Definition 1 of the l-diversity paper): the value
  when every row agrees, else ``*``.

Interval lengths are normalized to [0, 1] per QI (m-invariance paper, §4.3): numeric by
the domain's range, ordered by the number of positions minus one, hierarchy by
(leaves under the ancestor - 1) / (leaves - 1). The perimeter of a group is
``|G| * sum of normalized lengths`` (§4.3); NCP is the mean normalized length over rows
and QIs (the normalized certainty penalty of Xu et al., with the same per-QI lengths).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.schema import SUPPRESSED, QIAttribute, Schema
from republish.tables import encode_qis

Model = Literal["interval", "suppression", "exact"]  # exact: permutation publication


@dataclass(frozen=True)
class Domain:
    """Per-QI code range used to normalize lengths: ``low[j]`` .. ``high[j]``."""

    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, schema: Schema, codes: np.ndarray | None = None) -> Domain:
        """The declared domains, completed by the range of ``codes`` for numeric QIs."""
        low = np.zeros(len(schema.qis))
        high = np.zeros(len(schema.qis))
        for j, qi in enumerate(schema.qis):
            if qi.kind != "numeric":
                high[j] = len(qi.categories or ()) - 1
            elif qi.domain is not None:
                low[j], high[j] = qi.domain
            elif codes is not None and len(codes):
                low[j], high[j] = float(np.min(codes[:, j])), float(np.max(codes[:, j]))
        return cls(low=low, high=high)

    def to_list(self) -> list[list[float]]:
        return [[float(a), float(b)] for a, b in zip(self.low, self.high, strict=True)]

    @classmethod
    def from_list(cls, pairs: Sequence[Sequence[float]]) -> Domain:
        array = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
        return cls(low=array[:, 0], high=array[:, 1])


@dataclass(frozen=True)
class Boxes:
    """Boxes of a set of groups: ``groups[g]`` spans ``low[g, j]`` .. ``high[g, j]``."""

    groups: np.ndarray
    sizes: np.ndarray
    low: np.ndarray
    high: np.ndarray


def group_extremes(
    codes: np.ndarray, inverse: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the smallest and largest code of its rows: ``(low, high)``, each
    ``(groups, d)`` float64; ``inverse[i]`` in ``0..groups-1`` is the group of row ``i``.

    A group without rows gets ``inf`` / ``-inf`` and a NaN code makes its group's side NaN,
    exactly as ``np.minimum.at`` / ``np.maximum.at`` into ``inf`` / ``-inf`` give (one
    stable sort by group, then ``reduceat`` over each group's run of rows: linear memory
    traffic instead of an unbuffered scatter per row).
    """
    codes = np.asarray(codes, dtype=np.float64)
    inverse = np.asarray(inverse, dtype=np.int64)
    d = codes.shape[1] if codes.ndim == 2 else 1
    low = np.full((groups, d), np.inf)
    high = np.full((groups, d), -np.inf)
    if not len(inverse):
        return low, high
    codes = codes.reshape(len(inverse), d)
    if len(inverse) > 1 and bool((inverse[1:] >= inverse[:-1]).all()):
        ordered, runs = codes, inverse
    else:
        order = np.argsort(inverse, kind="stable")
        ordered, runs = codes[order], inverse[order]
    starts = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]])
    owners = runs[starts]
    low[owners] = np.minimum.reduceat(ordered, starts, axis=0)
    high[owners] = np.maximum.reduceat(ordered, starts, axis=0)
    return low, high


def group_boxes(codes: np.ndarray, groups: np.ndarray | Sequence[object]) -> Boxes:
    """Box of every group; ``groups[i]`` is the group of row ``i``."""
    array = np.asarray(groups)
    if array.dtype.kind in "iu" and array.ndim == 1:
        # one stable sort gives both the sorted labels (np.unique's) and the runs
        order = np.argsort(array, kind="stable")
        ordered = array[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(
            ordered) else np.zeros(0, dtype=np.int64)
        labels = ordered[starts]
        runs = np.zeros(len(ordered), dtype=np.int64)
        if len(starts) > 1:
            runs[starts[1:]] = 1
        runs = np.cumsum(runs)
        sorted_codes = np.asarray(codes, dtype=np.float64)[order]
        low, high = group_extremes(sorted_codes, runs, len(labels))
        sizes = np.diff(np.r_[starts, len(ordered)]).astype(np.int64)
        return Boxes(groups=labels, sizes=sizes, low=low, high=high)
    labels, inverse = np.unique(array, return_inverse=True)
    inverse = inverse.reshape(-1)
    low, high = group_extremes(codes, inverse, len(labels))
    sizes = np.bincount(inverse, minlength=len(labels))
    return Boxes(groups=labels, sizes=sizes, low=low, high=high)


def normalized_lengths(
    schema: Schema, low: np.ndarray, high: np.ndarray, domain: Domain, model: Model = "interval"
) -> np.ndarray:
    """Normalized length in [0, 1] of every box side, shape ``(groups, d)``."""
    low = np.atleast_2d(low)
    high = np.atleast_2d(high)
    lengths = np.zeros(low.shape)
    for j, qi in enumerate(schema.qis):
        if model == "suppression":
            lengths[:, j] = (high[:, j] > low[:, j]).astype(float)
        elif qi.kind == "hierarchy":
            assert qi.hierarchy is not None
            leaves = len(qi.hierarchy.leaves)
            covered = qi.hierarchy.covered_leaves(
                low[:, j].astype(np.int64), high[:, j].astype(np.int64)
            )
            lengths[:, j] = (covered - 1) / (leaves - 1) if leaves > 1 else 0.0
        else:
            extent = domain.high[j] - domain.low[j]
            lengths[:, j] = (high[:, j] - low[:, j]) / extent if extent > 0 else 0.0
    return lengths


def perimeters(schema: Schema, boxes: Boxes, domain: Domain) -> np.ndarray:
    """Perimeter ``|G| * sum_i l_i`` of every group (m-invariance paper, §4.3)."""
    return boxes.sizes * normalized_lengths(schema, boxes.low, boxes.high, domain).sum(axis=1)


def ncp(schema: Schema, boxes: Boxes, domain: Domain) -> float:
    """Normalized certainty penalty of a partition: mean normalized length per row and QI."""
    total_rows = int(boxes.sizes.sum())
    if total_rows == 0:
        return 0.0
    lengths = normalized_lengths(schema, boxes.low, boxes.high, domain)
    return float((boxes.sizes[:, None] * lengths).sum() / (total_rows * len(schema.qis)))


def star_count(boxes: Boxes) -> int:
    """Stars of the suppression model: one per row and QI on which its group disagrees."""
    return int((boxes.sizes[:, None] * (boxes.high > boxes.low)).sum())


def format_number(value: float) -> str:
    """Render a numeric code without a spurious ``.0``."""
    if float(value).is_integer():
        return str(int(value))
    return np.format_float_positional(float(value), trim="-")


def render_cell(qi: QIAttribute, low: float, high: float, model: Model = "interval") -> str:
    """Published text of one box side."""
    if low == high:
        if qi.kind == "numeric":
            return format_number(low)
        categories = qi.categories or ()
        return categories[int(low)]
    if model == "suppression":
        return SUPPRESSED
    if qi.kind == "numeric":
        return f"[{format_number(low)}, {format_number(high)}]"
    if qi.kind == "ordered":
        order = qi.order or ()
        return f"[{order[int(low)]}, {order[int(high)]}]"
    assert qi.hierarchy is not None
    return qi.hierarchy.label(int(low), int(high))


def render_boxes(schema: Schema, boxes: Boxes, model: Model = "interval") -> pd.DataFrame:
    """One row per group: ``group`` and the rendered QI cells."""
    data: dict[str, object] = {"group": list(boxes.groups)}
    for j, qi in enumerate(schema.qis):
        # few distinct (low, high) sides: render each once, then spread to the groups
        sides = np.stack([np.asarray(boxes.low[:, j], dtype=np.float64),
                          np.asarray(boxes.high[:, j], dtype=np.float64)], axis=1)
        distinct, inverse = np.unique(sides, axis=0, return_inverse=True)
        texts = np.empty(len(distinct), dtype=object)
        texts[:] = [render_cell(qi, lo, hi, model) for lo, hi in distinct.tolist()]
        data[qi.name] = texts[inverse.reshape(-1)]
    return pd.DataFrame(data)


def generalize(
    table: pd.DataFrame,
    groups: np.ndarray | Sequence[object],
    schema: Schema,
    model: Model = "interval",
) -> pd.DataFrame:
    """Generalized table: ``group``, rendered QIs, SA, one row per input row, same order."""
    codes = encode_qis(table, schema)
    boxes = group_boxes(codes, groups)
    rendered = render_boxes(schema, boxes, model).set_index("group")
    group_array = np.asarray(groups)
    out = rendered.loc[group_array].reset_index()
    out[schema.sensitive] = table[schema.sensitive].to_numpy()
    return out[schema.published_columns]


_INTERVAL = re.compile(r"^\[\s*(.+?)\s*,\s*(.+?)\s*\]$")


def parse_cell(qi: QIAttribute, text: str) -> tuple[float, float]:
    """Code range ``(low, high)`` covered by a published cell (inverse of :func:`render_cell`)."""
    text = str(text).strip()
    categories = qi.categories
    if text == SUPPRESSED:
        if categories is not None:
            return 0.0, float(len(categories) - 1)
        return -np.inf, np.inf
    match = _INTERVAL.match(text)
    try:
        if qi.kind == "numeric":
            if match:
                return float(match.group(1)), float(match.group(2))
            value = float(text)
            return value, value
        if qi.kind == "ordered":
            lookup = {v: i for i, v in enumerate(qi.order or ())}
            if match:
                return float(lookup[match.group(1)]), float(lookup[match.group(2)])
            return float(lookup[text]), float(lookup[text])
        assert qi.hierarchy is not None
        low, high = qi.hierarchy.label_ranges()[text]
        return float(low), float(high)
    except (KeyError, ValueError) as exc:
        raise InputError(
            f"QI {qi.name!r}: published cell {text!r} is not a value, interval, label or '*' "
            "of this QI; check the schema matches the published table."
        ) from exc


def parse_boxes(published: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """Per published row, the code box ``(low, high)`` its QI cells cover, each ``(n, d)``."""
    n, d = len(published), len(schema.qis)
    low = np.empty((n, d))
    high = np.empty((n, d))
    for j, qi in enumerate(schema.qis):
        cache: dict[str, tuple[float, float]] = {}
        for i, text in enumerate(published[qi.name].astype(str)):
            if text not in cache:
                cache[text] = parse_cell(qi, text)
            low[i, j], high[i, j] = cache[text]
    return low, high
