"""ε-inclusion (permutation re-publication): Definitions 2-8 and Lemma 3.

Exact QIs, sensitive values permuted within ε-distinct groups (λ categories of τ values,
ε = λ·τ), signatures that may only grow across releases, substitutions counted in
``S(j)`` (:mod:`republish.principles.eps_inclusion`). Rows never change values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.errors import ParameterError
from republish.principles.eps_inclusion import (
    LastSignatures,
    check_eps_inclusion_sequence,
    verify_eps_release,
)
from republish.principles.report import VerificationReport
from republish.release import Release
from republish.state import PublisherState, check_unchanged

__all__ = ["PRINCIPLE", "EpsInclusion", "EpsInclusionOptions"]


@dataclass(frozen=True)
class EpsInclusionOptions:
    """``lam`` categories per group of ``tau`` values each (ε = λ·τ, the store's ``m``);
    ``categories`` maps sensitive values to categories; ``extras`` allows Algorithm 1's
    line 15 (extra rows in old groups, which can expose them)."""

    lam: int
    tau: int = 1
    categories: SACategories = field(default_factory=SACategories.identity)
    extras: bool = False

    def __post_init__(self) -> None:
        for name, value in (("lambda", self.lam), ("tau", self.tau)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ParameterError(f"{name} must be a positive integer, got {value!r}.")
        object.__setattr__(self, "lam", int(self.lam))
        object.__setattr__(self, "tau", int(self.tau))
        if self.m < 2:
            raise ParameterError(
                f"ε = λ·τ = {self.m}: every group needs at least 2 rows; raise λ.")

    @property
    def m(self) -> int:
        return self.lam * self.tau

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "lambda": self.lam, "tau": self.tau,
                "categories": self.categories.to_dict(), "extras": bool(self.extras)}


class EpsInclusion:
    name = "eps-inclusion"
    audit: Literal["intersection", "sug"] = "intersection"
    value_changes = False
    counts_file = "substitutions"

    def options_from_dict(self, data: Mapping[str, Any]) -> EpsInclusionOptions:
        try:
            options = EpsInclusionOptions(
                lam=int(data["lambda"]), tau=int(data["tau"]),
                categories=SACategories.from_dict(data.get("categories") or {}),
                extras=bool(data.get("extras", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"the eps-inclusion options are incomplete: {exc}") from exc
        if "m" in data and int(data["m"]) != options.m:
            raise ParameterError(f"m={data['m']} differs from ε = λ·τ = {options.m}.")
        return options

    def check_changes(self, state: PublisherState, table: pd.DataFrame,
                      positions: np.ndarray, options: Any) -> None:
        check_unchanged(state, table, positions)

    def check_step(self, release: Release, state: PublisherState, options: Any,
                   positions: np.ndarray | None = None) -> VerificationReport:
        return verify_eps_release(release, options.categories, options.lam, options.tau,
                                  LastSignatures.from_state(state))

    def check_sequence(self, releases: Sequence[Release], options: Any) -> VerificationReport:
        return check_eps_inclusion_sequence(releases, options.categories, options.lam,
                                            options.tau, across_gaps=True)


PRINCIPLE = EpsInclusion()
