"""m-Distinct (Li & Zhou, internal updates): Definition 15 and the §IV-B extension.

Sensitive values may change between releases, but only along the public transition
model; each release is m-unique and every record's group is a legal update instance of
its previous update set signature (:mod:`republish.principles.m_distinct`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.parameters import validate_m
from republish.principles.m_distinct import (
    check_m_distinct_against_state,
    verify_m_distinct_store,
)
from republish.principles.release_checks import verify_release
from republish.principles.report import VerificationReport
from republish.release import Release
from republish.state import PublisherState
from republish.transitions import TransitionModel

__all__ = ["PRINCIPLE", "MDistinct", "MDistinctOptions"]


@dataclass(frozen=True)
class MDistinctOptions:
    """``transitions``: the public model of how sensitive values may change; ``strict``:
    the §IV-B extension (re-publication risk at most 1/m)."""

    m: int
    transitions: TransitionModel
    strict: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "m", validate_m(self.m))

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "transitions": self.transitions.to_dict(),
                "strict": bool(self.strict)}


class MDistinct:
    name = "m-distinct"
    audit: Literal["intersection", "sug"] = "sug"
    value_changes = True
    counts_file = "counterfeits"

    def options_from_dict(self, data: Mapping[str, Any]) -> MDistinctOptions:
        return MDistinctOptions(m=data["m"],
                                transitions=TransitionModel.from_dict(data["transitions"]),
                                strict=bool(data.get("strict", False)))

    def check_changes(self, state: PublisherState, table: pd.DataFrame,
                      positions: np.ndarray, options: Any) -> None:
        """Refuse sensitive values that changed outside the transition model."""
        schema = state.schema
        model: TransitionModel = options.transitions
        known = positions >= 0
        before = state.rows[schema.sensitive].astype(str).to_numpy()[positions[known]]
        after = table[schema.sensitive].astype(str).to_numpy()[known]
        bad = [i for i, (a, b) in enumerate(zip(before, after, strict=True))
               if not model.allows(a, b)]
        if bad:
            idents = table[schema.identifier].to_numpy()[known][bad]
            changes = [f"{i}: {before[k]!r} -> {after[k]!r}"
                       for i, k in zip(idents[:5], bad[:5], strict=False)]
            raise InputError(
                f"{len(bad)} identifier(s) changed their sensitive value outside the public "
                f"transition model ({'; '.join(changes)}); fix the data or add the "
                "transitions."
            )

    def check_step(self, release: Release, state: PublisherState, options: Any,
                   positions: np.ndarray | None = None) -> VerificationReport:
        return verify_release(release, options.m).merge(
            check_m_distinct_against_state(release, state, options.transitions,
                                           options.strict, positions),
            principle=f"release {release.number}",
        )

    def check_sequence(self, releases: Sequence[Release], options: Any) -> VerificationReport:
        return verify_m_distinct_store(releases, options.m, options.to_dict())


PRINCIPLE = MDistinct()
