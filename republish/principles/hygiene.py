"""Publication hygiene: what ``T*(j)`` must not reveal beyond its cells.

Three rules, the last one a *heuristic* leak check rather than a proof:

1. Columns. ``T*(j)`` has exactly ``schema.published_columns`` (``group``, the QIs in
   schema order, the sensitive attribute): no identifier, no private or unknown column.
2. Identifier values. No published column other than ``group`` holds every identifier
   of the release's real rows (a renamed identifier column), when there are at least two.
3. Row order. The design publishes rows in random order, so positions must not reveal
   which rows are counterfeits. Counterfeits are located with the private assignment:
   in group ``g`` a sensitive value ``v`` published ``p`` times but held by only ``r < p``
   real rows marks ``e = p - r`` of those rows as counterfeits. With m-unique groups
   (``p <= 1``) this is exact; otherwise the ``p`` rows are identical on every published
   column, so any ``e`` of them may be taken as the counterfeits and the patterns below
   use the choice that fits them. The patterns are:

   * all counterfeits (at least 2) occupy the first, or the last, positions of the table;
   * every group holding a counterfeit (at least 3 groups) has one as its last row, or
     every one has one as its first row;
   * the table is sorted by ``group`` and in every group the counterfeits follow the real
     rows.

   A pattern also occurs by chance in a shuffled table, so it is flagged only when its
   probability under a uniformly random row order is at most ``alpha`` (default
   ``1e-6``, so that a correctly shuffled release is refused about once in a million
   and the verifier can gate writes). Small tables therefore pass even when laid out
   badly: the check catches systematic layouts on tables large enough to show them, it
   does not prove that the order is random.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import ParameterError, format_rows
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import ReleaseArrays, counts_in, text_array
from republish.release import GROUP, Release

__all__ = ["DEFAULT_ALPHA", "check_hygiene", "counterfeit_excess", "hygiene_violations"]

#: Probability (under a random row order) at or below which a layout pattern is flagged.
DEFAULT_ALPHA = 1e-6


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


Cells = Counter[tuple[Any, str]]


def counterfeit_excess(release: Release) -> tuple[Cells, Cells]:
    """Published counts ``p`` and counterfeit excess ``e = max(p - r, 0)`` per (group, value)."""
    schema = release.schema
    published = Counter(
        zip(
            release.published[GROUP].tolist(),
            release.published[schema.sensitive].astype(str),
            strict=True,
        )
    )
    real = Counter(
        zip(
            release.assignment[GROUP].tolist(),
            release.assignment[schema.sensitive].astype(str),
            strict=True,
        )
    )
    excess = Counter(
        {key: count - real[key] for key, count in published.items() if count > real[key]}
    )
    return published, excess


def _vectorized_excess(arrays: ReleaseArrays) -> tuple[Cells, Cells]:
    """:func:`counterfeit_excess` restricted to the cells with an excess.

    The layout checks read ``p`` only where ``e > 0``; the cells keep the order of their
    first published row, as in :func:`counterfeit_excess`, so sums run in the same order.
    """
    published_keys = arrays.cell_keys()[0]
    keys, counts = arrays.cell_counts()
    real_keys, real_counts = arrays.cell_counts(real=True)
    extra = counts - counts_in(keys, real_keys, real_counts)
    chosen = np.flatnonzero(extra > 0)
    if len(chosen):
        rows = np.flatnonzero(np.isin(published_keys, keys[chosen]))
        _, first = np.unique(published_keys[rows], return_index=True)
        chosen = chosen[np.argsort(rows[first], kind="stable")]
    groups, values = arrays.split_cell_keys(keys[chosen])
    cells = list(
        zip(arrays.label_list(groups), arrays.values[values].tolist(), strict=True)
    )
    published = Counter(dict(zip(cells, counts[chosen].tolist(), strict=True)))
    excess = Counter(dict(zip(cells, extra[chosen].tolist(), strict=True)))
    return published, excess


def _holds_all(column: pd.Series | np.ndarray, identifiers: np.ndarray) -> bool:
    """Whether ``column`` (as text) holds every one of the distinct ``identifiers``."""
    values = column if isinstance(column, np.ndarray) else text_array(column)
    if len(identifiers) > len(values) or not (values == identifiers[0]).any():
        return False
    return bool(pd.Index(identifiers).isin(values).all())


def _holds_every_identifier(arrays: ReleaseArrays, column: str) -> bool:
    """``_holds_all(column, arrays.distinct_identifiers())`` without deduplicating the
    identifiers unless they outnumber the column's rows: repeats change neither the
    first identifier nor whether all of them are in the column."""
    values = arrays.published_text(column)
    identifiers = arrays.identifiers
    if len(identifiers) > len(values):
        identifiers = arrays.distinct_identifiers()
    return _holds_all(values, identifiers)


def _several_identifiers(arrays: ReleaseArrays) -> bool:
    """At least two distinct identifiers (``len(distinct_identifiers()) >= 2``)."""
    identifiers = arrays.identifiers
    if len(identifiers) < 2:
        return False
    return bool(identifiers[1] != identifiers[0]) or bool(
        (identifiers[2:] != identifiers[0]).any())


def _column_violations(release: Release, arrays: ReleaseArrays | None = None) -> list[Violation]:
    schema = release.schema
    columns = [str(c) for c in release.published.columns]
    expected = schema.published_columns
    violations = []
    if schema.identifier in columns:
        violations.append(
            Violation(
                group=None,
                reason=(
                    f"the identifier column {schema.identifier!r} is published; T*(j) must "
                    f"hold only {expected}"
                ),
            )
        )
    extra = [c for c in columns if c not in expected and c != schema.identifier]
    if extra:
        violations.append(
            Violation(
                group=None,
                reason=(
                    f"column(s) {extra} are not part of T*(j) (private or unknown); publish "
                    f"only {expected}"
                ),
            )
        )
    missing = [c for c in expected if c not in columns]
    if missing:
        violations.append(
            Violation(group=None, reason=f"column(s) {missing} of T*(j) are missing")
        )
    if not extra and not missing and schema.identifier not in columns and columns != expected:
        violations.append(
            Violation(group=None, reason=f"columns are in the order {columns}, expected {expected}")
        )
    if arrays is not None and arrays.vectorizable:
        several = _several_identifiers(arrays)

        def holds_all(column: str) -> bool:
            return _holds_every_identifier(arrays, column)
    else:
        identifiers = set(release.assignment[schema.identifier].astype(str))
        several = len(identifiers) >= 2

        def holds_all(column: str) -> bool:
            return identifiers <= set(release.published[column].astype(str))
    if several:
        for column in columns:
            if column in (GROUP, schema.identifier):
                continue
            if holds_all(column):
                violations.append(
                    Violation(
                        group=None,
                        reason=(
                            f"published column {column!r} holds every identifier of the "
                            "release's real rows"
                        ),
                    )
                )
    return violations


#: Rows per group, and the position of each group's first and last row.
GroupEdges = tuple[Mapping[Any, int], Mapping[Any, int], Mapping[Any, int]]


def _group_edges(groups: list[Any]) -> GroupEdges:
    first: dict[Any, int] = {}
    last: dict[Any, int] = {}
    for position, group in enumerate(groups):
        first.setdefault(group, position)
        last[group] = position
    return Counter(groups), first, last


def _vectorized_edges(arrays: ReleaseArrays) -> GroupEdges:
    """:func:`_group_edges` of ``T*(j)`` from the group codes."""
    codes = arrays.published_group
    present, first = np.unique(codes, return_index=True)
    _, from_end = np.unique(codes[::-1], return_index=True)
    sizes = np.bincount(codes, minlength=len(arrays.labels))[present]
    labels = arrays.label_list(present)
    return (
        dict(zip(labels, sizes.tolist(), strict=True)),
        dict(zip(labels, first.tolist(), strict=True)),
        dict(zip(labels, (len(codes) - 1 - from_end).tolist(), strict=True)),
    )


def _layout_violation(
    pattern: str, detail: str, log_probability: float, log_alpha: float, rows: Iterable[int]
) -> Violation | None:
    """A layout pattern's violation, if its probability under a random order is at most alpha.

    The reason reads ``<pattern> (<detail>probability p under a random row order); ...``.
    """
    if log_probability > log_alpha:
        return None
    return Violation(
        group=None,
        reason=(
            f"{pattern} ({detail}probability {math.exp(log_probability):.3g} under a random "
            "row order); shuffle the published rows"
        ),
        rows=tuple(rows),
    )


def _block_violation(
    sensitive: list[str],
    groups: list[Any],
    published: Counter[tuple[Any, str]],
    excess: Counter[tuple[Any, str]],
    at_end: bool,
    log_alpha: float,
) -> Violation | None:
    """All counterfeits in the first (or last) ``C`` positions."""
    total = sum(excess.values())
    size = len(sensitive)
    if total < 2 or total >= size:
        return None
    positions = range(size - total, size) if at_end else range(total)
    block = Counter((groups[i], sensitive[i]) for i in positions)
    if any(block[key] < count for key, count in excess.items()):
        return None
    log_probability = sum(_log_comb(published[k], e) for k, e in excess.items()) - _log_comb(
        size, total
    )
    where = "last" if at_end else "first"
    return _layout_violation(
        f"the {where} {total} rows of T*(j) are exactly its counterfeits", "",
        log_probability, log_alpha, positions,
    )


def _per_group_violation(
    sensitive: list[str],
    groups: list[Any],
    published: Counter[tuple[Any, str]],
    excess: Counter[tuple[Any, str]],
    last: bool,
    log_alpha: float,
    edges: GroupEdges | None = None,
) -> Violation | None:
    """Every group with counterfeits has one as its last (or first) row."""
    compatible: Counter[Any] = Counter()
    for (group, value), count in excess.items():
        if count > 0:
            compatible[group] += published[(group, value)]
    if len(compatible) < 3:
        return None
    if edges is None:
        edges = _group_edges(groups)
    sizes, edge = edges[0], edges[2 if last else 1]
    if any(excess[(g, sensitive[edge[g]])] == 0 for g in compatible):
        return None
    log_probability = sum(math.log(compatible[g] / sizes[g]) for g in compatible)
    if log_probability > log_alpha:  # before the rows are sorted and formatted
        return None
    where = "last" if last else "first"
    rows = sorted(edge[g] for g in compatible)
    return _layout_violation(
        f"each of the {len(compatible)} groups holding counterfeits has a counterfeit as "
        f"its {where} row", f"rows {format_rows(rows)}; ", log_probability, log_alpha, rows,
    )


def _sorted_violation(
    sensitive: list[str],
    groups: list[Any],
    published: Counter[tuple[Any, str]],
    excess: Counter[tuple[Any, str]],
    log_alpha: float,
) -> Violation | None:
    """Rows sorted by group, counterfeits after the real rows of their group."""
    if not sum(excess.values()) or not pd.Series(groups).is_monotonic_increasing:
        return None
    rows_of: dict[Any, list[int]] = {}
    for position, group in enumerate(groups):
        rows_of.setdefault(group, []).append(position)
    per_group: Counter[Any] = Counter()
    for (group, _), count in excess.items():
        per_group[group] += count
    log_probability = sum(math.lgamma(len(r) + 1) for r in rows_of.values()) - math.lgamma(
        len(groups) + 1
    )
    tail_rows: list[int] = []
    for group, count in per_group.items():
        tail = rows_of[group][-count:]
        block = Counter(sensitive[i] for i in tail)
        if any(block[v] < e for (g, v), e in excess.items() if g == group):
            return None
        tail_rows.extend(tail)
        log_probability += sum(
            _log_comb(published[(g, v)], e) for (g, v), e in excess.items() if g == group
        ) - _log_comb(len(rows_of[group]), count)
    return _layout_violation(
        "T*(j) is sorted by group with every group's counterfeits after its real rows", "",
        log_probability, log_alpha, sorted(tail_rows),
    )


def hygiene_violations(
    release: Release, alpha: float = DEFAULT_ALPHA, arrays: ReleaseArrays | None = None
) -> list[Violation]:
    """The violations of :func:`check_hygiene`; counted on ``arrays`` when given."""
    if not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha must lie strictly between 0 and 1, got {alpha!r}.")
    violations = _column_violations(release, arrays)
    columns = release.published.columns
    if GROUP in columns and release.schema.sensitive in columns:
        edges: GroupEdges | None = None
        if arrays is not None and arrays.vectorizable:
            published, excess = _vectorized_excess(arrays)
            if not excess:  # no counterfeit, so no layout can reveal one
                return violations
            edges = _vectorized_edges(arrays)
        else:
            published, excess = counterfeit_excess(release)
        groups = release.published[GROUP].tolist()
        sensitive = release.published[release.schema.sensitive].astype(str).tolist()
        log_alpha = math.log(float(alpha))
        candidates = [
            _block_violation(sensitive, groups, published, excess, True, log_alpha),
            _block_violation(sensitive, groups, published, excess, False, log_alpha),
            _per_group_violation(sensitive, groups, published, excess, True, log_alpha, edges),
            _per_group_violation(sensitive, groups, published, excess, False, log_alpha, edges),
            _sorted_violation(sensitive, groups, published, excess, log_alpha),
        ]
        violations.extend(v for v in candidates if v is not None)
    return violations


def check_hygiene(
    release: Release, alpha: float = DEFAULT_ALPHA, vectorized: bool = True
) -> VerificationReport:
    """Verify the hygiene rules of the module docstring on ``release``.

    Parameters
    ----------
    release:
        The release; its private assignment locates the counterfeits.
    alpha:
        Layout patterns are flagged only when their probability under a uniformly random
        row order is at most ``alpha`` (``0 < alpha < 1``).
    vectorized:
        Count cells and identifiers with numpy (``False``: the row-by-row reference
        code; the report is the same).

    Returns
    -------
    VerificationReport
        Principle ``hygiene``; table-wide violations (``group=None``); for layout patterns
        ``rows`` are the 0-based positions of the revealing rows in ``T*(j)``.
    """
    if not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha must lie strictly between 0 and 1, got {alpha!r}.")
    arrays = ReleaseArrays(release) if vectorized else None
    return VerificationReport("hygiene", tuple(hygiene_violations(release, alpha, arrays)))
