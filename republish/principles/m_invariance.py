"""m-invariance (pairs of releases and whole sequences), on top of m-uniqueness.

* m-eligibility and m-uniqueness (one table, one release): see
  :mod:`republish.principles.m_uniqueness`.
* signature (Definition 16): the set of distinct sensitive values of a QI group.
* m-invariance (Definition 17): every release is m-unique, and every row keeps the
  signature of its hosting group over its lifespan. Lemma 4 reduces checking release
  ``n`` to ``T*(n)`` being m-unique plus every row of ``T(n-1) ∩ T(n)`` keeping its
  signature, which :func:`check_m_invariance_pair` implements.

The paper's tuples have one contiguous lifespan. The product also re-inserts rows after
an absence and then requires them to take back the signature they had when last
published; :func:`check_m_invariance_sequence` checks that too unless
``across_gaps=False``.

Identifiers and groups of real rows come from each release's private ``assignment``;
signatures come from the published ``T*(j)`` (counterfeits included). The names of
:mod:`republish.principles.m_uniqueness` are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from republish.errors import ParameterError, format_rows
from republish.principles.k_anonymity import group_label, require_positive_int
from republish.principles.m_uniqueness import _real_members as _real_members
from republish.principles.m_uniqueness import (
    _uniqueness_violations,
    check_m_eligibility,
    check_m_uniqueness,
    uniqueness_groups,
    uniqueness_violations,
)
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import LastPublication, ReleaseArrays, SignatureTable
from republish.release import GROUP, Release

__all__ = [
    "check_m_eligibility",
    "check_m_invariance_pair",
    "check_m_invariance_sequence",
    "check_m_uniqueness",
    "format_signature",
    "hosting_signatures",
    "pair_violations",
    "published_signatures",
    "require_same_columns",
    "uniqueness_groups",
    "uniqueness_violations",
]


def format_signature(signature: Iterable[str]) -> str:
    """``{a, b, c}`` with the values sorted, for messages."""
    return "{" + ", ".join(sorted(signature)) + "}"


def published_signatures(release: Release) -> dict[Any, frozenset[str]]:
    """Signature of every group of ``T*(j)`` (Definition 16), counterfeits included."""
    sensitive = release.schema.sensitive
    signatures: dict[Any, set[str]] = {}
    for group, value in zip(
        release.published[GROUP].tolist(), release.published[sensitive].astype(str), strict=True
    ):
        signatures.setdefault(group, set()).add(value)
    return {group: frozenset(values) for group, values in signatures.items()}


def hosting_signatures(release: Release) -> dict[str, tuple[Any, frozenset[str]]]:
    """Identifier -> (hosting group, its signature) for every real row of the release.

    A row assigned to a group that ``T*(j)`` does not publish gets the empty signature
    (:func:`republish.principles.counterfeits.check_counterfeits` reports that group).
    """
    signatures = published_signatures(release)
    identifiers = release.assignment[release.schema.identifier].astype(str).tolist()
    groups = release.assignment[GROUP].tolist()
    return {
        ident: (group, signatures.get(group, frozenset()))
        for ident, group in zip(identifiers, groups, strict=True)
    }


def _signature_violations(
    current: Release,
    now: dict[str, tuple[Any, frozenset[str]]],
    compare: Iterable[str],
    previous_signature: dict[str, tuple[int, Any, frozenset[str]]],
    prefix: str = "",
) -> list[Violation]:
    """Rows of ``compare`` whose signature in ``current`` differs from the recorded one.

    ``previous_signature[ident]`` is (release number, group, signature) of the last
    publication of ``ident``; ``now`` is :func:`hosting_signatures` of ``current``. One
    violation per (current group, old signature).
    """
    changed: dict[tuple[Any, frozenset[str], int], list[str]] = {}
    for ident in compare:
        number, _, before = previous_signature[ident]
        group, after = now[ident]
        if before != after:
            changed.setdefault((group, before, number), []).append(ident)
    violations = []
    for (group, before, number), idents in sorted(
        changed.items(), key=lambda item: (str(item[0][0]), format_signature(item[0][1]))
    ):
        after = now[idents[0]][1]
        violations.append(
            Violation(
                group=group_label(group),
                reason=(
                    f"{prefix}identifier(s) {format_rows(sorted(idents))} had signature "
                    f"{format_signature(before)} in release {number} but their group {group} "
                    f"of release {current.number} has signature {format_signature(after)}"
                ),
                rows=tuple(sorted(idents)),
            )
        )
    return violations


def require_same_columns(releases: Sequence[Release]) -> None:
    """Refuse releases naming different identifier/sensitive columns."""
    first = releases[0].schema
    for release in releases[1:]:
        if (release.schema.identifier, release.schema.sensitive) != (
            first.identifier,
            first.sensitive,
        ):
            raise ParameterError(
                f"release {release.number} names identifier/sensitive columns "
                f"{release.schema.identifier!r}/{release.schema.sensitive!r}, release "
                f"{releases[0].number} {first.identifier!r}/{first.sensitive!r}; releases of one "
                "sequence must share the schema."
            )


def _changed_signatures(
    release: Release,
    arrays: ReleaseArrays,
    table: SignatureTable,
    last: LastPublication,
    position: int,
    across_gaps: bool,
    prefix: str = "",
) -> list[Violation]:
    """Vectorized :func:`_signature_violations` against ``last``, then record ``release``.

    Only rows whose signature changed reach the detailed code, in assignment order (the
    order :func:`hosting_signatures` gives), so its report is unchanged.
    """
    signatures = table.row_signatures(arrays)
    where = last.lookup(arrays)
    groups = arrays.labels[arrays.assignment_group]
    violations: list[Violation] = []
    if len(last.identifiers):
        compare = where >= 0
        if not across_gaps:
            compare &= last.position[where] == position - 1
        changed = np.flatnonzero(compare & (last.signature[where] != signatures))
        if len(changed):
            idents = arrays.identifiers[changed].tolist()
            now = {
                ident: (group, table.signature(signature))
                for ident, group, signature in zip(
                    idents, groups[changed].tolist(), signatures[changed].tolist(), strict=True
                )
            }
            before = {
                ident: (number, group, table.signature(signature))
                for ident, number, group, signature in zip(
                    idents,
                    last.number[where[changed]].tolist(),
                    last.group[where[changed]].tolist(),
                    last.signature[where[changed]].tolist(),
                    strict=True,
                )
            }
            violations = _signature_violations(release, now, idents, before, prefix)
    last.record(where, arrays, release.number, groups, signatures, position)
    return violations


def _vectorizable(arrays: ReleaseArrays | None) -> bool:
    return arrays is not None and arrays.vectorizable and arrays.unique_identifiers


def pair_violations(
    previous: Release,
    current: Release,
    m: int,
    previous_arrays: ReleaseArrays | None = None,
    current_arrays: ReleaseArrays | None = None,
) -> list[Violation]:
    """Lemma 4's violations of ``current`` after ``previous`` (vectorized with arrays)."""
    if _vectorizable(previous_arrays) and _vectorizable(current_arrays):
        assert previous_arrays is not None and current_arrays is not None
        violations = uniqueness_violations(current, m, "", current_arrays)
        table, last = SignatureTable(), LastPublication()
        _changed_signatures(previous, previous_arrays, table, last, 0, True)
        violations.extend(_changed_signatures(current, current_arrays, table, last, 1, True))
        return violations
    violations = _uniqueness_violations(current, m)
    before = {
        ident: (previous.number, group, signature)
        for ident, (group, signature) in hosting_signatures(previous).items()
    }
    now = hosting_signatures(current)
    common = [ident for ident in now if ident in before]
    violations.extend(_signature_violations(current, now, common, before))
    return violations


def check_m_invariance_pair(
    previous: Release, current: Release, m: int, vectorized: bool = True
) -> VerificationReport:
    """Verify release ``current`` against ``previous`` by Lemma 4.

    ``current`` must be m-unique, and every identifier present in both assignments must
    have the same signature in both releases. Assuming the sequence up to ``previous`` is
    m-invariant, this is equivalent to the extended sequence being m-invariant. A
    violation names the group in ``current``, the identifiers (``rows``) and both
    signatures. ``vectorized=False`` runs the row-by-row code alone (same report).
    """
    m = require_positive_int("m", m)
    require_same_columns([previous, current])
    arrays = (ReleaseArrays(previous), ReleaseArrays(current)) if vectorized else (None, None)
    return VerificationReport(
        "m-invariance", tuple(pair_violations(previous, current, m, *arrays))
    )


def _sequence_violations(
    releases: Sequence[Release], m: int, across_gaps: bool
) -> list[Violation] | None:
    """The violations of the sequence, vectorized; None if a release cannot be."""
    violations: list[Violation] = []
    table, last = SignatureTable(), LastPublication()
    for position, release in enumerate(releases):
        arrays = ReleaseArrays(release)
        if not _vectorizable(arrays):
            return None
        prefix = f"release {release.number}: "
        violations.extend(uniqueness_violations(release, m, prefix, arrays))
        violations.extend(
            _changed_signatures(release, arrays, table, last, position, across_gaps, prefix)
        )
    return violations


def check_m_invariance_sequence(
    releases: Sequence[Release], m: int, across_gaps: bool = True, vectorized: bool = True
) -> VerificationReport:
    """Verify Definition 17 over a whole sequence of releases (in publication order).

    Every release must be m-unique; every row present in two consecutive releases of
    ``releases`` must keep its signature. With ``across_gaps`` (the product's
    re-insertion rule) a row published again after an absence must also take back the
    signature it had when last published. Each violation's reason starts with
    ``release N:``, ``N`` the number of the release where the violation appears.
    ``vectorized=False`` runs the row-by-row code alone (same report).
    """
    m = require_positive_int("m", m)
    releases = list(releases)
    if not releases:
        return VerificationReport("m-invariance", ())
    require_same_columns(releases)
    fast = _sequence_violations(releases, m, across_gaps) if vectorized else None
    if fast is not None:
        return VerificationReport("m-invariance", tuple(fast))
    violations: list[Violation] = []
    # identifier -> (release number, group, signature) of its last publication, and the
    # position in ``releases`` of that publication
    last: dict[str, tuple[int, Any, frozenset[str]]] = {}
    last_position: dict[str, int] = {}
    for position, release in enumerate(releases):
        prefix = f"release {release.number}: "
        violations.extend(_uniqueness_violations(release, m, prefix))
        now = hosting_signatures(release)
        compare = [
            ident
            for ident in now
            if ident in last and (across_gaps or last_position[ident] == position - 1)
        ]
        if position > 0:
            violations.extend(
                _signature_violations(release, now, compare, last, prefix)
            )
        for ident, (group, signature) in now.items():
            last[ident] = (release.number, group, signature)
            last_position[ident] = position
    return VerificationReport("m-invariance", tuple(violations))
