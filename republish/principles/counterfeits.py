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

from republish.errors import format_rows
from republish.generalization import group_boxes, render_boxes
from republish.principles.counterfeit_detection import counterfeit_groups, uncovered_cells
from republish.principles.k_anonymity import group_label
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import ReleaseArrays
from republish.release import COUNT, GROUP, Release
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
            uncovered = uncovered_cells(release, distinct[0], real_box[group])
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
