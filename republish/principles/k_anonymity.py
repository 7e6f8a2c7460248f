"""k-anonymity of a published table, and the QI groups every table-level verifier shares.

A published table is k-anonymous when every QI group holds at least ``k`` rows, so each
row is indistinguishable on its quasi-identifiers from at least ``k - 1`` others
(Samarati and Sweeney; the m-invariance paper, §1, uses it as the baseline principle).

QI groups are read from the table itself: by the ``group`` column when the table has one,
else by the tuple of published QI cells. With a ``group`` column the rows of one group
must also carry the same QI cells, otherwise they are not indistinguishable and the
group is reported as a violation whatever its size.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError, format_rows
from republish.principles.report import VerificationReport, Violation
from republish.schema import Schema

__all__ = ["QIGroups", "check_k_anonymity", "published_groups", "require_positive_int"]


def require_positive_int(name: str, value: object) -> int:
    """``value`` as an int if it is an integer >= 1, else :class:`ParameterError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}.")
    if int(value) < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value}.")
    return int(value)


@dataclass(frozen=True)
class QIGroups:
    """The QI groups of a published table.

    ``positions[key]`` lists the 0-based row positions of group ``key``; ``key`` is the
    ``group`` label, or the tuple of QI cells when the table has no group column.
    ``mixed_cells[key]`` holds the distinct QI-cell tuples of a group whose rows disagree
    (only possible with a group column).
    """

    by_group_column: bool
    positions: dict[Any, np.ndarray]
    mixed_cells: dict[Any, list[tuple[str, ...]]]

    def sizes(self) -> dict[Any, int]:
        return {key: len(rows) for key, rows in self.positions.items()}


def _sorted_keys(keys: Sequence[Any]) -> list[Any]:
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=str)


def published_groups(
    published: pd.DataFrame, schema: Schema, group_column: str | None = "group"
) -> QIGroups:
    """Group the rows of a published table (see the module docstring).

    Raises :class:`InputError` when a QI or the sensitive column is missing.
    """
    needed = [*schema.qi_names, schema.sensitive]
    missing = [c for c in needed if c not in published.columns]
    if missing:
        raise InputError(
            f"column(s) {missing} missing from the published table; it has "
            f"{list(published.columns)[:12]}. The schema's QIs and sensitive column must be "
            "published."
        )
    cells = list(zip(*(published[q].astype(str).tolist() for q in schema.qi_names), strict=True))
    by_group = group_column is not None and group_column in published.columns
    labels: list[Any] = published[group_column].tolist() if by_group else cells
    members: dict[Any, list[int]] = {}
    for position, label in enumerate(labels):
        members.setdefault(label, []).append(position)
    positions = {
        key: np.asarray(members[key], dtype=np.int64) for key in _sorted_keys(list(members))
    }
    mixed: dict[Any, list[tuple[str, ...]]] = {}
    if by_group:
        for key, rows in positions.items():
            distinct = list(dict.fromkeys(cells[i] for i in rows))
            if len(distinct) > 1:
                mixed[key] = distinct
    return QIGroups(by_group_column=by_group, positions=positions, mixed_cells=mixed)


def describe_group(key: Any, by_group_column: bool, schema: Schema) -> str:
    """Human name of a QI group for violation messages."""
    if by_group_column:
        return f"group {key}"
    cells = ", ".join(f"{name}={cell}" for name, cell in zip(schema.qi_names, key, strict=True))
    return f"QI group ({cells})"


def group_label(key: Any) -> Any:
    """The ``Violation.group`` value of a group key (a QI-cell tuple becomes a JSON list)."""
    return key.item() if hasattr(key, "item") else key


def mixed_cell_violations(groups: QIGroups, schema: Schema) -> list[Violation]:
    """One violation per group whose rows carry different QI cells."""
    violations = []
    for key, distinct in groups.mixed_cells.items():
        shown = "; ".join(
            "(" + ", ".join(f"{n}={c}" for n, c in zip(schema.qi_names, cell, strict=True)) + ")"
            for cell in distinct[:3]
        )
        violations.append(
            Violation(
                group=group_label(key),
                reason=(
                    f"group {key}: its rows carry {len(distinct)} different QI-cell tuples "
                    f"({shown}); rows of one QI group must be identical on every QI"
                ),
                rows=tuple(int(i) for i in groups.positions[key]),
            )
        )
    return violations


def check_k_anonymity(
    published: pd.DataFrame,
    schema: Schema,
    k: int,
    group_column: str | None = "group",
) -> VerificationReport:
    """Verify that every QI group of ``published`` has at least ``k`` rows.

    Parameters
    ----------
    published:
        A published table ``T*(j)`` (QI cells and sensitive column; a ``group`` column is
        optional; an identifier column is ignored).
    schema:
        Names the QI and sensitive columns.
    k:
        Minimum group size, an integer >= 1.
    group_column:
        Column holding the group ids; ``None`` (or a column the table lacks) groups rows
        by their QI cells instead.

    Returns
    -------
    VerificationReport
        Principle ``k-anonymity``; a violation per group that is too small (naming its
        size and ``k``) or whose rows disagree on a QI cell. ``rows`` are 0-based row
        positions in ``published``.
    """
    k = require_positive_int("k", k)
    groups = published_groups(published, schema, group_column)
    violations = mixed_cell_violations(groups, schema)
    for key, rows in groups.positions.items():
        if len(rows) < k:
            name = describe_group(key, groups.by_group_column, schema)
            violations.append(
                Violation(
                    group=group_label(key),
                    reason=(
                        f"{name} has {len(rows)} row(s), fewer than k = {k} "
                        f"(rows {format_rows(rows.tolist())})"
                    ),
                    rows=tuple(int(i) for i in rows),
                )
            )
    return VerificationReport("k-anonymity", tuple(violations))
