"""m-invariance (Xiao & Tao, SIGMOD 2007): Definitions 16-17 and Lemma 4.

A release is m-unique (every group at least m rows, all with distinct sensitive values),
its counterfeits and layout are consistent (``verify_release``), and every row published
before keeps the signature it last had (Lemma 4's second condition, extended across gaps
to re-inserted rows: :func:`check_against_state`). Rows never change values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Literal

import numpy as np
import pandas as pd

from republish.errors import format_rows
from republish.parameters import validate_m
from republish.principles.m_invariance import check_m_invariance_sequence
from republish.principles.release_checks import verify_release
from republish.principles.report import VerificationReport, Violation
from republish.release import GROUP, Release
from republish.state import (
    LAST_RELEASE,
    SIGNATURE,
    PublisherState,
    check_unchanged,
    group_signatures,
)

__all__ = ["PRINCIPLE", "MInvariance", "MInvarianceOptions", "check_against_state"]


@dataclass(frozen=True)
class MInvarianceOptions:
    m: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "m", validate_m(self.m))

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m}


class MInvariance:
    name = "m-invariance"
    audit: Literal["intersection", "sug"] = "intersection"
    value_changes = False
    counts_file = "counterfeits"

    def options_from_dict(self, data: Mapping[str, Any]) -> MInvarianceOptions:
        return MInvarianceOptions(m=data["m"])

    def check_changes(self, state: PublisherState, table: pd.DataFrame,
                      positions: np.ndarray, options: Any) -> None:
        check_unchanged(state, table, positions)

    def check_step(self, release: Release, state: PublisherState, options: Any,
                   positions: np.ndarray | None = None) -> VerificationReport:
        return verify_release(release, options.m).merge(
            check_against_state(release, state, positions),
            principle=f"release {release.number}",
        )

    def check_sequence(self, releases: Sequence[Release], options: Any) -> VerificationReport:
        violations: list[Violation] = []
        for previous, release in zip([None, *releases[:-1]], releases, strict=True):
            report = verify_release(release, options.m, previous)
            violations += [Violation(v.group, f"release {release.number}: {v.reason}", v.rows)
                           for v in report.violations]
        sequence = check_m_invariance_sequence(releases, options.m, across_gaps=True)
        return VerificationReport("m-invariance", (*violations, *sequence.violations))


PRINCIPLE = MInvariance()


def check_against_state(
    release: Release, state: PublisherState, positions: np.ndarray | None = None
) -> VerificationReport:
    """Every previously published row keeps its last published signature.

    This is Lemma 4's second condition extended across gaps (re-insertions): it compares
    each row of ``release`` with its record in ``state`` (the state *before* the release).
    ``positions`` are :meth:`PublisherState.positions` of the assignment's identifiers,
    when already known. One violation per (group, previous signature).
    """
    schema = release.schema
    assignment = release.assignment
    ids: pd.Series | None = None
    if positions is None:
        ids = assignment[schema.identifier].astype(str)
        positions = state.positions(ids)
    known = positions >= 0
    if not known.any():
        return VerificationReport("m-invariance", ())
    by_group = group_signatures(release)
    rows = positions[known]
    groups = assignment[GROUP].to_numpy()[known]
    # only the state's signature column is read (its last releases only for messages)
    codes = state.rows[SIGNATURE].to_numpy()[rows]
    # Compare signatures as ids: one per distinct set among the state's table and the
    # groups' signatures (a group T*(j) does not publish has the empty one). Only the
    # (group, previous signature) pairs that differ reach the detailed loop below.
    set_ids: dict[frozenset[str], int] = {}
    state_ids = np.array(
        [set_ids.setdefault(s, len(set_ids)) for s in state.signatures] or [-1], dtype=np.int64)
    row_group, distinct_groups = pd.factorize(pd.Series(groups), use_na_sentinel=False)
    # the groups' signatures are shared frozensets (one per distinct set): hash them in
    # C (a set caches its hash) and give each distinct one its id
    hosted = np.empty(len(distinct_groups), dtype=object)
    hosted[:] = list(map(by_group.get, distinct_groups.tolist(), repeat(frozenset())))
    signature_of, distinct_signatures = pd.factorize(hosted)
    distinct_ids = np.array(
        [set_ids.setdefault(s, len(set_ids)) for s in distinct_signatures.tolist()] or [-1],
        dtype=np.int64)
    group_ids = distinct_ids[signature_of]
    bad = group_ids[row_group] != state_ids[codes]
    if not bad.any():
        return VerificationReport("m-invariance", ())
    if ids is None:
        ids = assignment[schema.identifier].astype(str)
    last_releases = state.rows[LAST_RELEASE].to_numpy()[rows]
    pairs = pd.DataFrame({"group": groups, "code": codes})
    pairs = pairs[bad].drop_duplicates()
    violations = []
    for group, code in zip(pairs["group"].tolist(), pairs["code"].tolist(), strict=True):
        now = by_group.get(group, frozenset())
        if now == state.signatures[code]:
            continue
        mask = (assignment[GROUP].to_numpy()[known] == group) & (codes == code)
        idents = ids[known].to_numpy()[mask].tolist()
        numbers = sorted(set(last_releases[mask].tolist()))
        violations.append(
            Violation(
                group=group,
                reason=(
                    f"identifier(s) {format_rows(idents)} last published (release(s) "
                    f"{numbers}) with signature {sorted(state.signatures[code])} sit in group "
                    f"{group} of release {release.number} with signature {sorted(now)}"
                ),
                rows=tuple(idents),
            )
        )
    return VerificationReport("m-invariance", tuple(violations))
