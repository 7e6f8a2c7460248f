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
from typing import Any

import pandas as pd

from republish.errors import ParameterError, format_rows
from republish.principles.report import VerificationReport, Violation
from republish.release import GROUP, Release

__all__ = ["DEFAULT_ALPHA", "check_hygiene", "counterfeit_excess"]

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


def _column_violations(release: Release) -> list[Violation]:
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
    identifiers = set(release.assignment[schema.identifier].astype(str))
    if len(identifiers) >= 2:
        for column in columns:
            if column in (GROUP, schema.identifier):
                continue
            if identifiers <= set(release.published[column].astype(str)):
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
    if log_probability > log_alpha:
        return None
    where = "last" if at_end else "first"
    return Violation(
        group=None,
        reason=(
            f"the {where} {total} rows of T*(j) are exactly its counterfeits (probability "
            f"{math.exp(log_probability):.3g} under a random row order); shuffle the "
            "published rows"
        ),
        rows=tuple(positions),
    )


def _per_group_violation(
    sensitive: list[str],
    groups: list[Any],
    published: Counter[tuple[Any, str]],
    excess: Counter[tuple[Any, str]],
    last: bool,
    log_alpha: float,
) -> Violation | None:
    """Every group with counterfeits has one as its last (or first) row."""
    sizes = Counter(groups)
    compatible: Counter[Any] = Counter()
    for (group, value), count in excess.items():
        if count > 0:
            compatible[group] += published[(group, value)]
    if len(compatible) < 3:
        return None
    edge: dict[Any, int] = {}
    order = range(len(groups) - 1, -1, -1) if last else range(len(groups))
    for position in order:
        edge.setdefault(groups[position], position)
    if any(excess[(g, sensitive[edge[g]])] == 0 for g in compatible):
        return None
    log_probability = sum(math.log(compatible[g] / sizes[g]) for g in compatible)
    if log_probability > log_alpha:
        return None
    where = "last" if last else "first"
    rows = sorted(edge[g] for g in compatible)
    return Violation(
        group=None,
        reason=(
            f"each of the {len(compatible)} groups holding counterfeits has a counterfeit as "
            f"its {where} row (rows {format_rows(rows)}; probability "
            f"{math.exp(log_probability):.3g} under a random row order); shuffle the "
            "published rows"
        ),
        rows=tuple(rows),
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
    if log_probability > log_alpha:
        return None
    return Violation(
        group=None,
        reason=(
            "T*(j) is sorted by group with every group's counterfeits after its real rows "
            f"(probability {math.exp(log_probability):.3g} under a random row order); shuffle "
            "the published rows"
        ),
        rows=tuple(sorted(tail_rows)),
    )


def check_hygiene(release: Release, alpha: float = DEFAULT_ALPHA) -> VerificationReport:
    """Verify the hygiene rules of the module docstring on ``release``.

    Parameters
    ----------
    release:
        The release; its private assignment locates the counterfeits.
    alpha:
        Layout patterns are flagged only when their probability under a uniformly random
        row order is at most ``alpha`` (``0 < alpha < 1``).

    Returns
    -------
    VerificationReport
        Principle ``hygiene``; table-wide violations (``group=None``); for layout patterns
        ``rows`` are the 0-based positions of the revealing rows in ``T*(j)``.
    """
    if not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha must lie strictly between 0 and 1, got {alpha!r}.")
    violations = _column_violations(release)
    columns = release.published.columns
    if GROUP in columns and release.schema.sensitive in columns:
        published, excess = counterfeit_excess(release)
        groups = release.published[GROUP].tolist()
        sensitive = release.published[release.schema.sensitive].astype(str).tolist()
        log_alpha = math.log(float(alpha))
        candidates = [
            _block_violation(sensitive, groups, published, excess, True, log_alpha),
            _block_violation(sensitive, groups, published, excess, False, log_alpha),
            _per_group_violation(sensitive, groups, published, excess, True, log_alpha),
            _per_group_violation(sensitive, groups, published, excess, False, log_alpha),
            _sorted_violation(sensitive, groups, published, excess, log_alpha),
        ]
        violations.extend(v for v in candidates if v is not None)
    return VerificationReport("hygiene", tuple(violations))

