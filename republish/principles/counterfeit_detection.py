"""Vectorized detection for :func:`republish.principles.counterfeits.check_counterfeits`.

Each detector returns exactly the groups (``None`` for a table-wide violation) that the
matching row-by-row rule of :mod:`republish.principles.counterfeits` reports, computed on
the integer codes of :class:`~republish.principles.vectorized.ReleaseArrays`; the
verifier runs a rule's detailed code only when its detector finds something. ``None``
instead of a set means the detector cannot run on this release (then the rule runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from republish.errors import RepublishError
from republish.generalization import parse_cell, render_cell
from republish.principles.vectorized import (
    ReleaseArrays,
    counts_in,
    integer_column,
)
from republish.release import COUNT, GROUP, Release
from republish.schema import QIAttribute
from republish.tables import encode_qis

__all__ = ["column_extremes", "counterfeit_groups", "uncovered_cells"]


def uncovered_cells(
    release: Release, cells: tuple[str, ...], box: tuple[np.ndarray, np.ndarray]
) -> list[str]:
    """Descriptions of the published cells whose range misses some real row's value."""
    schema = release.schema
    low, high = box
    problems = []
    for j, (qi, cell) in enumerate(zip(schema.qis, cells, strict=True)):
        tight = render_cell(qi, low[j], high[j], release.model)
        try:
            cell_low, cell_high = parse_cell(qi, cell)
        except RepublishError:
            problems.append(f"{qi.name}: published {cell!r} is not a cell of this QI")
            continue
        if cell_low > low[j] or cell_high < high[j]:
            problems.append(f"{qi.name}: published {cell!r}, real rows need {tight!r}")
    return problems


def _count_groups(arrays: ReleaseArrays) -> set[Any] | None:
    """Groups of rules 1-2 (``_count_violations``); None when ``R(j)`` is not integer."""
    frame = arrays.release.counterfeits
    listed_groups = np.zeros(0, dtype=np.int64)
    listed_counts = np.zeros(0, dtype=np.int64)
    if len(frame):
        found_groups, found_counts = integer_column(frame, GROUP), integer_column(frame, COUNT)
        if found_groups is None or found_counts is None:
            return None
        listed_groups, listed_counts = found_groups, found_counts
    labels = arrays.labels
    published, real = arrays.group_sizes()
    bad = (published > 0) != (real > 0)
    position = np.searchsorted(labels, listed_groups)
    inside = position < len(labels)
    inside[inside] = labels[position[inside]] == listed_groups[inside]
    # listed, neither published nor holding real rows: "absent from T*(j)"
    flagged = set(listed_groups[~inside].tolist())
    position = position[inside]
    bad |= np.bincount(position, minlength=len(labels)) > 1
    listed = np.zeros(len(labels), dtype=bool)
    listed[position] = True
    count = np.zeros(len(labels), dtype=np.int64)
    count[position] = listed_counts[inside]
    bad |= listed & ((count <= 0) | (published == 0))
    expected = published - real
    bad |= (published > 0) & (
        (expected < 0) | ((expected > 0) & ~listed) | (listed & (count > 0) & (count != expected))
    )
    return flagged | set(arrays.label_list(np.flatnonzero(bad)))


def column_extremes(
    codes: np.ndarray, inverse: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`republish.generalization.group_extremes` of NaN-free ``codes``, one column
    at a time with ``np.minimum.at`` / ``np.maximum.at`` on contiguous 1-d arrays (a
    buffered scatter per column, several times faster than its stable sort by group).
    Minima and maxima do not depend on the order the rows are visited in."""
    codes = np.asarray(codes, dtype=np.float64)
    inverse = np.asarray(inverse, dtype=np.int64)
    d = codes.shape[1] if codes.ndim == 2 else 1
    codes = codes.reshape(len(inverse), d)
    low = np.full((d, groups), np.inf)
    high = np.full((d, groups), -np.inf)
    for j in range(d):
        column = np.ascontiguousarray(codes[:, j])
        np.minimum.at(low[j], inverse, column)
        np.maximum.at(high[j], inverse, column)
    return np.ascontiguousarray(low.T), np.ascontiguousarray(high.T)


def _parsed_cells(qi: QIAttribute, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Code range of each distinct cell text; (inf, -inf), covering nothing, when unparsable."""
    low = np.full(len(texts), np.inf)
    high = np.full(len(texts), -np.inf)
    for index, text in enumerate(texts.tolist()):
        try:
            low[index], high[index] = parse_cell(qi, text)
        except Exception:  # noqa: BLE001 - the detailed check re-parses and decides
            continue
    return low, high


def _box_groups(arrays: ReleaseArrays) -> set[Any] | None:
    """Groups of rule 3 (``_box_violations``; None: table-wide); None if QIs are missing.

    Published cells are parsed once per distinct text and compared with the real rows'
    box; only a group whose cells miss part of it is rendered and checked in detail.
    """
    release = arrays.release
    schema = release.schema
    published = release.published
    if any(name not in published.columns for name in schema.qi_names):
        return None
    groups = len(arrays.labels)
    published_group = arrays.published_group
    if not len(published_group):
        assignment_codes = encode_qis(release.assignment, schema)
        return {None} if np.isnan(assignment_codes).any() else set()
    present = np.bincount(published_group, minlength=groups) > 0
    # any one row of each group stands for it: the others must carry the same cells
    representative = np.zeros(groups, dtype=np.int64)
    representative[published_group] = np.arange(len(published_group))
    mixed = np.zeros(groups, dtype=bool)
    shown: list[np.ndarray] = []
    cell_codes: list[np.ndarray] = []
    cell_texts: list[np.ndarray] = []
    for name in schema.qi_names:
        text = arrays.published_text(name)
        # a row differs from its group's representative exactly when its text does
        # (object comparison is string equality); only the representatives are factorized
        shown_text = text[representative]
        differs = text != shown_text[published_group]
        mixed |= np.bincount(published_group[differs], minlength=groups) > 0
        cell, uniques = pd.factorize(shown_text, use_na_sentinel=False)
        shown.append(shown_text)
        cell_codes.append(np.asarray(cell, dtype=np.int64))
        cell_texts.append(np.asarray(uniques, dtype=object))
    flagged: set[Any] = set(arrays.label_list(np.flatnonzero(mixed)))
    assignment = release.assignment
    if not len(assignment):
        return flagged
    codes = encode_qis(assignment, schema)
    unknown = np.isnan(codes).any(axis=1)
    if unknown.any():
        flagged.add(None)
    known = ~unknown
    if not known.any():
        return flagged
    # the real rows' box of each group, as group_boxes computes it
    low, high = column_extremes(codes[known], arrays.assignment_group[known], groups)
    held = np.bincount(arrays.assignment_group[known], minlength=groups) > 0
    boxes = np.flatnonzero(held & present & ~mixed)
    uncovered = np.zeros(len(boxes), dtype=bool)
    for j, qi in enumerate(schema.qis):
        cell_low, cell_high = _parsed_cells(qi, cell_texts[j])
        cell = cell_codes[j][boxes]
        uncovered |= (cell_low[cell] > low[boxes, j]) | (cell_high[cell] < high[boxes, j])
    for group in boxes[uncovered].tolist():
        cells = tuple(str(column[group]) for column in shown)
        want = tuple(
            render_cell(qi, low[group, j], high[group, j], release.model)
            for j, qi in enumerate(schema.qis)
        )
        if cells != want and uncovered_cells(release, cells, (low[group], high[group])):
            flagged.add(arrays.labels[group].item())
    return flagged


def _sensitive_groups(arrays: ReleaseArrays) -> set[Any]:
    """Groups rule 4 (``_sensitive_violations``) reports."""
    shown_keys, shown_counts = arrays.cell_counts()
    held_keys, held_counts = arrays.cell_counts(real=True)
    short = held_counts > counts_in(held_keys, shown_keys, shown_counts)
    groups, _ = arrays.split_cell_keys(held_keys[short])
    published, _ = arrays.group_sizes()
    return set(arrays.label_list(np.unique(groups[published[groups] > 0])))


def counterfeit_groups(arrays: ReleaseArrays) -> tuple[set[Any] | None, ...]:
    """Groups reported by rules 1-2, 3 and 4 (None: detection impossible, run the rule)."""
    if not arrays.vectorizable:
        return None, None, None
    return _count_groups(arrays), _box_groups(arrays), _sensitive_groups(arrays)
