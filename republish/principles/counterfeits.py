"""Consistency of a release's counterfeits with ``T*(j)``, ``R(j)`` and the real rows.

Counterfeited generalization (m-invariance paper, §2 Definition 3 and §4): a counterfeit
is a fake row with no QI values of its own; it takes its group's generalized QIs, and
``R(j)`` publishes how many counterfeits each group holds. The design adds that every
published group holds at least one real row. :func:`check_counterfeits` verifies, with
the publisher's private assignment:

1. every published group holds at least one real row, and every real row's group is
   published;
2. ``R(j)`` lists each group with counterfeits once, with count = published rows - real
   rows; groups without counterfeits are absent, counts are positive, and every group of
   ``R(j)`` is published;
3. every published row of a group carries the same QI cells, and they cover the raw QI
   values of the group's real rows (a generalization may be wider than the tightest box:
   Table 3a of the paper publishes Bob alone with his Table 1b box; releases built by
   :func:`republish.release.build_release` are always tight);
4. the sensitive values of a group's real rows are contained (as a multiset) in the
   published sensitive values of the group.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import RepublishError, format_rows
from republish.generalization import group_boxes, parse_cell, render_boxes, render_cell
from republish.principles.k_anonymity import group_label
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import ReleaseArrays, counts_in, integer_column
from republish.release import COUNT, GROUP, Release
from republish.schema import QIAttribute
from republish.tables import encode_qis

__all__ = ["check_counterfeits", "counterfeit_groups", "counterfeit_violations"]


def _cells_text(names: list[str], cells: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"{n}={c}" for n, c in zip(names, cells, strict=True)) + ")"


def _count_violations(
    release: Release, published_sizes: Counter[Any], real_ids: dict[Any, list[str]]
) -> list[Violation]:
    """Rules 1 and 2: real rows per group and the ``R(j)`` counts."""
    violations = []
    for group in sorted(published_sizes):
        if not real_ids.get(group):
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"group {group} publishes {published_sizes[group]} row(s) but holds no "
                        "real row; every published group needs at least one real row"
                    ),
                )
            )
    for group in sorted(set(real_ids) - set(published_sizes), key=str):
        idents = real_ids[group]
        violations.append(
            Violation(
                group=group_label(group),
                reason=(
                    f"real row(s) {format_rows(idents)} are assigned to group {group}, "
                    "which T*(j) does not publish"
                ),
                rows=tuple(idents),
            )
        )
    listed: dict[Any, int] = {}
    groups = release.counterfeits[GROUP].tolist() if len(release.counterfeits) else []
    counts = release.counterfeits[COUNT].tolist() if len(release.counterfeits) else []
    for group, count in zip(groups, counts, strict=True):
        if group in listed:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=f"R(j) lists group {group} more than once",
                )
            )
        listed[group] = int(count)
    for group, count in sorted(listed.items(), key=lambda item: str(item[0])):
        if count <= 0:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"R(j) gives group {group} the count {count}; counts must be positive "
                        "and groups without counterfeits omitted"
                    ),
                )
            )
        if group not in published_sizes:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=f"R(j) lists group {group} ({count} counterfeits), absent from T*(j)",
                )
            )
    for group in sorted(published_sizes):
        real = len(real_ids.get(group, []))
        expected = published_sizes[group] - real
        if expected < 0:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"group {group} publishes {published_sizes[group]} row(s), fewer than "
                        f"its {real} real rows"
                    ),
                    rows=tuple(real_ids.get(group, [])),
                )
            )
        elif expected > 0 and group not in listed:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"group {group} publishes {published_sizes[group]} row(s) for {real} "
                        f"real row(s), so {expected} counterfeit(s), but R(j) omits it"
                    ),
                )
            )
        elif group in listed and listed[group] > 0 and listed[group] != expected:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"R(j) gives group {group} {listed[group]} counterfeit(s), but it "
                        f"publishes {published_sizes[group]} row(s) for {real} real row(s), "
                        f"i.e. {expected} counterfeit(s)"
                    ),
                )
            )
    return violations


def _box_violations(release: Release, real_ids: dict[Any, list[str]]) -> list[Violation]:
    """Rule 3: one QI-cell tuple per group, covering the box of the group's real rows."""
    schema = release.schema
    names = schema.qi_names
    published = release.published
    cells = list(zip(*(published[q].astype(str).tolist() for q in names), strict=True))
    rows_of: dict[Any, list[int]] = {}
    for position, group in enumerate(published[GROUP].tolist()):
        rows_of.setdefault(group, []).append(position)

    expected: dict[Any, tuple[str, ...]] = {}
    real_box: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
    violations = []
    assignment = release.assignment
    if len(assignment):
        codes = encode_qis(assignment, schema)
        unknown = np.isnan(codes).any(axis=1)
        if unknown.any():
            idents = assignment.loc[unknown, schema.identifier].astype(str).tolist()
            violations.append(
                Violation(
                    group=None,
                    reason=(
                        f"real row(s) {format_rows(idents)} have QI values outside the schema's "
                        "orders or hierarchies; their boxes cannot be checked"
                    ),
                    rows=tuple(idents),
                )
            )
        known = ~unknown
        if known.any():
            boxes = group_boxes(codes[known], assignment[GROUP].to_numpy()[known])
            rendered = render_boxes(schema, boxes, release.model)
            for index, row in enumerate(rendered.itertuples(index=False)):
                values = tuple(row)
                expected[values[0]] = tuple(str(c) for c in values[1:])
                real_box[values[0]] = (boxes.low[index], boxes.high[index])

    for group in sorted(rows_of):
        positions = rows_of[group]
        distinct = list(dict.fromkeys(cells[i] for i in positions))
        want = expected.get(group)
        if len(distinct) > 1:
            shown = "; ".join(_cells_text(names, c) for c in distinct[:3])
            reason = (
                f"group {group}: its published rows carry {len(distinct)} different QI-cell "
                f"tuples ({shown}); a counterfeit must take its group's generalized QIs"
            )
            if want is not None:
                bad = [i for i in positions if cells[i] != want]
                reason += f"; rows {format_rows(bad)} differ from {_cells_text(names, want)}"
            violations.append(Violation(group_label(group), reason, tuple(positions)))
        elif want is not None and distinct[0] != want:
            uncovered = _uncovered_cells(release, distinct[0], real_box[group])
            if uncovered:
                violations.append(
                    Violation(
                        group=group_label(group),
                        reason=(
                            f"group {group}: published box does not cover its real rows "
                            f"({'; '.join(uncovered)})"
                        ),
                        rows=tuple(real_ids.get(group, [])),
                    )
                )
    return violations


def _uncovered_cells(
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


def _sensitive_violations(release: Release) -> list[Violation]:
    """Rule 4: real sensitive values are a sub-multiset of the published ones."""
    schema = release.schema
    published: dict[Any, Counter[str]] = {}
    for group, value in zip(
        release.published[GROUP].tolist(), release.published[schema.sensitive].astype(str),
        strict=True,
    ):
        published.setdefault(group, Counter())[value] += 1
    real: dict[Any, dict[str, list[str]]] = {}
    for ident, group, value in zip(
        release.assignment[schema.identifier].astype(str),
        release.assignment[GROUP].tolist(),
        release.assignment[schema.sensitive].astype(str),
        strict=True,
    ):
        real.setdefault(group, {}).setdefault(value, []).append(ident)
    violations = []
    for group in sorted(set(real) & set(published)):
        for value, idents in sorted(real[group].items()):
            shown = published[group][value]
            if len(idents) > shown:
                violations.append(
                    Violation(
                        group=group_label(group),
                        reason=(
                            f"group {group}: {len(idents)} real row(s) have sensitive value "
                            f"{value!r} but the group publishes it {shown} time(s)"
                        ),
                        rows=tuple(idents),
                    )
                )
    return violations


def _count_groups(arrays: ReleaseArrays) -> set[Any] | None:
    """Groups :func:`_count_violations` reports; None when ``R(j)`` is not integer."""
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
    """Groups :func:`_box_violations` reports (None: table-wide); None if QIs are missing.

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
        text = published[name].astype(str).to_numpy(dtype=object)
        codes, uniques = pd.factorize(text, use_na_sentinel=False)
        codes = np.asarray(codes, dtype=np.int64)
        cell = codes[representative]
        differs = codes != cell[published_group]
        mixed |= np.bincount(published_group[differs], minlength=groups) > 0
        shown.append(text[representative])
        cell_codes.append(cell)
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
    low = np.full((groups, codes.shape[1]), np.inf)
    high = np.full((groups, codes.shape[1]), -np.inf)
    np.minimum.at(low, arrays.assignment_group[known], codes[known])
    np.maximum.at(high, arrays.assignment_group[known], codes[known])
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
        if cells != want and _uncovered_cells(release, cells, (low[group], high[group])):
            flagged.add(arrays.labels[group].item())
    return flagged


def _sensitive_groups(arrays: ReleaseArrays) -> set[Any]:
    """Groups :func:`_sensitive_violations` reports."""
    published_keys, real_keys = arrays.cell_keys()
    shown_keys, shown_counts = np.unique(published_keys, return_counts=True)
    held_keys, held_counts = np.unique(real_keys, return_counts=True)
    short = held_counts > counts_in(held_keys, shown_keys, shown_counts)
    groups, _ = arrays.split_cell_keys(held_keys[short])
    published, _ = arrays.group_sizes()
    return set(arrays.label_list(np.unique(groups[published[groups] > 0])))


def counterfeit_groups(arrays: ReleaseArrays) -> tuple[set[Any] | None, ...]:
    """Groups reported by rules 1-2, 3 and 4 (None: detection impossible, run the rule)."""
    if not arrays.vectorizable:
        return None, None, None
    return _count_groups(arrays), _box_groups(arrays), _sensitive_groups(arrays)


def counterfeit_violations(
    release: Release, arrays: ReleaseArrays | None = None
) -> list[Violation]:
    """The violations of :func:`check_counterfeits`; rules that ``arrays`` clears are skipped."""
    flagged = counterfeit_groups(arrays) if arrays is not None else (None, None, None)
    if all(groups == set() for groups in flagged):
        return []
    schema = release.schema
    published_sizes: Counter[Any] = Counter(release.published[GROUP].tolist())
    real_ids: dict[Any, list[str]] = {}
    for ident, group in zip(
        release.assignment[schema.identifier].astype(str),
        release.assignment[GROUP].tolist(),
        strict=True,
    ):
        real_ids.setdefault(group, []).append(ident)
    count_groups, box_groups, sensitive_groups = flagged
    violations = []
    if count_groups != set():
        violations.extend(_count_violations(release, published_sizes, real_ids))
    if box_groups != set():
        violations.extend(_box_violations(release, real_ids))
    if sensitive_groups != set():
        violations.extend(_sensitive_violations(release))
    return violations


def check_counterfeits(release: Release, vectorized: bool = True) -> VerificationReport:
    """Verify the counterfeits of ``release`` (rules 1-4 of the module docstring).

    Returns
    -------
    VerificationReport
        Principle ``counterfeits``. ``rows`` are identifiers of real rows, except for
        groups whose published rows disagree on their QI cells, where they are 0-based row
        positions in ``T*(j)``. ``vectorized=False`` skips the vectorized detection and
        runs the row-by-row code alone (same report).
    """
    arrays = ReleaseArrays(release) if vectorized else None
    return VerificationReport("counterfeits", tuple(counterfeit_violations(release, arrays)))
