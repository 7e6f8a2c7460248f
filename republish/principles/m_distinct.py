"""m-Distinct (Li & Zhou, Definition 15) and its extension (§IV-B), as verifiers.

A sequence ``T*(1), ..., T*(n)`` is m-Distinct when

1. every ``T*(i)`` is m-unique, and
2. for every record ``t`` and two neighbouring releases ``i < j`` containing it, the
   candidate sensitive set ``C_j`` of ``t`` (the distinct values of its group in ``T*(j)``,
   counterfeits included) is a legal update instance (Definition 14) of ``USS(t_i)``, the
   multiset of the CUS of the values of its group in ``T*(i)``.

"Neighbouring releases which both contain t" skips releases where ``t`` is absent, so a
re-inserted record is compared with its most recent version (``across_gaps``). The
extension (``strict``) also asks that the CUS of the values of the group hosting a
record's *first* release be pairwise disjoint; Lemma 4 then bounds the re-publication
risk by ``1/m``.

The public transition model must also describe the data: a record whose own value changed
to one outside ``CUS(old value)`` is reported, since the adversary's update graph would
rule out its true history.

Identifiers, groups and true values come from each release's private ``assignment``;
group values from the published ``T*(j)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from republish.errors import format_rows
from republish.principles.counterfeits import check_counterfeits
from republish.principles.hygiene import DEFAULT_ALPHA, check_hygiene
from republish.principles.k_anonymity import group_label, require_positive_int
from republish.principles.m_invariance import format_signature
from republish.principles.m_uniqueness import check_m_uniqueness
from republish.principles.report import VerificationReport, Violation
from republish.release import GROUP, Release
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.transitions import (
    TransitionModel,
    UpdateSetSignature,
    legal_update_problems,
    pairwise_disjoint,
)

__all__ = [
    "PRINCIPLE",
    "check_m_distinct_against_state",
    "check_m_distinct_pair",
    "check_m_distinct_sequence",
    "group_values",
    "verify_m_distinct_release",
    "verify_m_distinct_store",
]

PRINCIPLE = "m-distinct"

#: What the previous version of a record contributes: release number, the values of its
#: group (with multiplicity), its own value.
Version = tuple[int, tuple[str, ...], str]


def group_values(release: Release) -> dict[Any, tuple[str, ...]]:
    """Published sensitive values of every group (counterfeits included, sorted)."""
    sensitive = release.schema.sensitive
    values: dict[Any, list[str]] = {}
    for group, value in zip(
        release.published[GROUP].tolist(), release.published[sensitive].astype(str), strict=True
    ):
        values.setdefault(group, []).append(value)
    return {group: tuple(sorted(v)) for group, v in values.items()}


def _members(release: Release) -> list[tuple[str, Any, str]]:
    """(identifier, group, own sensitive value) of every real row."""
    schema = release.schema
    return list(zip(
        release.assignment[schema.identifier].astype(str).tolist(),
        release.assignment[GROUP].tolist(),
        release.assignment[schema.sensitive].astype(str).tolist(),
        strict=True,
    ))


def _update_violations(
    current: Release,
    before: dict[str, Version],
    model: TransitionModel,
    prefix: str = "",
) -> list[Violation]:
    """Condition 2 of Definition 15 (and the model's own transitions) for every row of
    ``current`` whose identifier has a previous version in ``before``."""
    now = group_values(current)
    uss_of: dict[tuple[str, ...], UpdateSetSignature] = {}
    verdict: dict[tuple[UpdateSetSignature, Any], list[str]] = {}
    illegal: dict[tuple[Any, int, tuple[str, ...]], tuple[list[str], list[str]]] = {}
    outside: dict[tuple[Any, str, str], list[str]] = {}
    for ident, group, value in _members(current):
        if ident not in before:
            continue
        number, previous_values, previous_value = before[ident]
        if not model.allows(previous_value, value):
            outside.setdefault((group, previous_value, value), []).append(ident)
        uss = uss_of.get(previous_values)
        if uss is None:
            uss = uss_of[previous_values] = model.uss(previous_values)
        key = (uss, group)
        if key not in verdict:
            verdict[key] = legal_update_problems(now.get(group, ()), uss)
        if verdict[key]:
            slot = illegal.setdefault((group, number, previous_values), ([], verdict[key]))
            slot[0].append(ident)
    violations = []
    for (group, number, previous_values), (idents, problems) in sorted(
        illegal.items(), key=lambda item: (str(item[0][0]), item[0][1], item[0][2])
    ):
        violations.append(Violation(
            group=group_label(group),
            reason=(
                f"{prefix}identifier(s) {format_rows(sorted(idents))} sat in release {number} "
                f"in a group with values {format_signature(previous_values)}; the values "
                f"{format_signature(now.get(group, ()))} of their group {group} in release "
                f"{current.number} are not a legal update instance of that group's update "
                f"set signature ({'; '.join(problems)})"
            ),
            rows=tuple(sorted(idents)),
        ))
    for (group, old, new), idents in sorted(outside.items(), key=lambda item: str(item[0])):
        violations.append(Violation(
            group=group_label(group),
            reason=(
                f"{prefix}identifier(s) {format_rows(sorted(idents))} changed sensitive value "
                f"{old!r} -> {new!r}, which the public transition model does not allow "
                f"(CUS({old!r}) = {format_signature(model.cus(old))})"
            ),
            rows=tuple(sorted(idents)),
        ))
    return violations


def _strict_violations(
    release: Release, first: Iterable[str], model: TransitionModel, prefix: str = ""
) -> list[Violation]:
    """§IV-B: the group of a record's first release has pairwise disjoint CUS."""
    wanted = set(first)
    if not wanted:
        return []
    values = group_values(release)
    hosts: dict[Any, list[str]] = {}
    for ident, group, _ in _members(release):
        if ident in wanted:
            hosts.setdefault(group, []).append(ident)
    violations = []
    for group, idents in sorted(hosts.items(), key=lambda item: str(item[0])):
        sets = [model.cus(v) for v in values.get(group, ())]
        if pairwise_disjoint(sets):
            continue
        violations.append(Violation(
            group=group_label(group),
            reason=(
                f"{prefix}group {group} of release {release.number} hosts the first release "
                f"of {format_rows(sorted(idents))} but the candidate update sets of its values "
                f"{format_signature(values.get(group, ()))} overlap (the m-Distinct extension "
                "needs them pairwise disjoint)"
            ),
            rows=tuple(sorted(idents)),
        ))
    return violations


def check_m_distinct_pair(
    previous: Release,
    current: Release,
    m: int,
    model: TransitionModel,
    strict: bool = False,
) -> VerificationReport:
    """Verify ``current`` against ``previous``: m-uniqueness plus Definition 15's condition 2
    for every identifier in both releases (with ``strict``, §IV-B for identifiers absent
    from ``previous``; re-insertions need :func:`check_m_distinct_sequence`)."""
    m = require_positive_int("m", m)
    values = group_values(previous)
    before = {ident: (previous.number, values.get(group, ()), value)
              for ident, group, value in _members(previous)}
    violations = list(check_m_uniqueness(current, m).violations)
    violations += _update_violations(current, before, model)
    if strict:
        fresh = [ident for ident, _, _ in _members(current) if ident not in before]
        violations += _strict_violations(current, fresh, model)
    return VerificationReport(PRINCIPLE, tuple(violations))


def check_m_distinct_sequence(
    releases: Sequence[Release],
    m: int,
    model: TransitionModel,
    strict: bool = False,
    across_gaps: bool = True,
) -> VerificationReport:
    """Verify Definition 15 (and §IV-B with ``strict``) over a whole sequence.

    Every reason starts with ``release N:``. With ``across_gaps`` a record is compared with
    its most recent version even when it skipped releases (the paper's "neighbouring
    releases which both contain t"); without, only consecutive releases are compared.
    """
    m = require_positive_int("m", m)
    violations: list[Violation] = []
    last: dict[str, Version] = {}
    last_position: dict[str, int] = {}
    for position, release in enumerate(releases):
        prefix = f"release {release.number}: "
        violations += [
            Violation(v.group, prefix + v.reason, v.rows)
            for v in check_m_uniqueness(release, m).violations
        ]
        members = _members(release)
        compare = {
            ident: last[ident] for ident, _, _ in members
            if ident in last and (across_gaps or last_position[ident] == position - 1)
        }
        violations += _update_violations(release, compare, model, prefix)
        if strict:
            fresh = [ident for ident, _, _ in members if ident not in last]
            violations += _strict_violations(release, fresh, model, prefix)
        values = group_values(release)
        for ident, group, value in members:
            last[ident] = (release.number, values.get(group, ()), value)
            last_position[ident] = position
    return VerificationReport(PRINCIPLE, tuple(violations))


def check_m_distinct_against_state(
    release: Release,
    state: PublisherState,
    model: TransitionModel,
    strict: bool = False,
    positions: np.ndarray | None = None,
) -> VerificationReport:
    """Condition 2 against the publisher's state *before* ``release`` (most recent version
    of every identifier, across gaps); with ``strict``, §IV-B for identifiers never
    published before. ``positions`` are :meth:`PublisherState.positions` of the
    assignment's identifiers, when known. m-uniqueness is not checked here."""
    schema = release.schema
    ids = release.assignment[schema.identifier].astype(str).to_numpy(dtype=object)
    if positions is None:
        positions = state.positions(ids)
    known = positions >= 0
    before: dict[str, Version] = {}
    if known.any():
        rows = state.rows.iloc[positions[known]]
        signatures = [tuple(sorted(s)) for s in state.signatures]
        for ident, number, code, value in zip(
            ids[known].tolist(), rows[LAST_RELEASE].tolist(), rows[SIGNATURE].tolist(),
            rows[schema.sensitive].astype(str).tolist(), strict=True,
        ):
            before[ident] = (int(number), signatures[int(code)], value)
    violations = _update_violations(release, before, model)
    if strict:
        violations += _strict_violations(release, ids[~known].tolist(), model)
    return VerificationReport(PRINCIPLE, tuple(violations))


def verify_m_distinct_release(
    release: Release,
    m: int,
    model: TransitionModel,
    previous: Release | None = None,
    strict: bool = False,
    alpha: float = DEFAULT_ALPHA,
) -> VerificationReport:
    """Every check of a release before it is written, m-Distinct flavour.

    m-uniqueness, or with ``previous`` :func:`check_m_distinct_pair`; counterfeits;
    hygiene. Each reason starts with the name of its part. Without ``previous`` and with
    ``strict`` every row is a first release and gets the §IV-B check.
    """
    first = check_m_uniqueness(release, m)
    if previous is not None:
        first = check_m_distinct_pair(previous, release, m, model, strict)
    elif strict:
        everyone = release.assignment[release.schema.identifier].astype(str).tolist()
        first = first.merge(VerificationReport(
            PRINCIPLE, tuple(_strict_violations(release, everyone, model))))
    parts = [
        first,
        check_counterfeits(release),
        check_hygiene(release, alpha=alpha),
    ]
    violations = tuple(
        Violation(v.group, f"{part.principle}: {v.reason}", v.rows)
        for part in parts for v in part.violations
    )
    return VerificationReport(f"release {release.number}", violations)


def verify_m_distinct_store(
    releases: Sequence[Release], m: int, options: Mapping[str, Any]
) -> VerificationReport:
    """Every stored release (counterfeits, hygiene) and the whole sequence (Definition 15,
    §IV-B when the store's ``strict`` option is set), with the store's transition model.
    Every reason starts with ``release N:``."""
    model = TransitionModel.from_dict(options["transitions"])
    strict = bool(options.get("strict", False))
    violations: list[Violation] = []
    for release in releases:
        for part in (check_counterfeits(release), check_hygiene(release)):
            violations += [Violation(v.group, f"release {release.number}: {part.principle}: "
                                     f"{v.reason}", v.rows) for v in part.violations]
    violations += check_m_distinct_sequence(releases, m, model, strict).violations
    return VerificationReport(PRINCIPLE, tuple(violations))
