"""``republish audit`` for m-Distinct: the SUG attack plus the file checks (Li & Zhou, §III).

:func:`audit_releases_sug` attacks published tables with the adversary's knowledge table
(candidate values from the QI boxes covering each version, as the intersection attack);
:func:`audit_store_sug` audits a store with the store's own transition model and also
reports the stronger adversary who knows every version's QI group (the paper's examples).
The JSON document keeps the Contract's keys (``vulnerable`` counts individuals with a
version of risk 1, ``intersection_sizes`` the smallest feasible layer of each individual,
``max_exact_risk`` eq. 2 at the true values) and adds a ``sug`` section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from republish.audit.intersection import sensitive_domain
from republish.audit.knowledge import Knowledge, knowledge_from_releases
from republish.audit.leaks import LeakFinding, find_leaks
from republish.audit.sug import SugAudit, Weighting, sug_attack, sug_attack_groups
from republish.errors import InputError
from republish.release import Release
from republish.transitions import TransitionModel

__all__ = ["SugAuditReport", "audit_releases_sug", "audit_store_sug", "store_principle"]


def _summary(audit: SugAudit) -> dict[str, Any]:
    return {
        "versions": len(audit.identifiers),
        "vulnerable_versions": int(audit.vulnerable.sum()),
        "vulnerable_ids": audit.vulnerable_ids,
        "vulnerable_by_release": {str(k): v for k, v in audit.vulnerable_by_release().items()},
        "max_risk": audit.max_risk(),
        "max_share": float(audit.max_share.max()) if len(audit.max_share) else None,
    }


@dataclass(frozen=True)
class SugAuditReport:
    """The SUG attack plus the file leak checks; :meth:`to_dict` is ``audit --json``."""

    sug: SugAudit
    leaks: tuple[LeakFinding, ...]
    release_count: int
    groups: SugAudit | None = None

    @property
    def vulnerable(self) -> int:
        return len(self.sug.vulnerable_ids)

    @property
    def found(self) -> bool:
        return (
            self.vulnerable > 0
            or bool(self.sug.inconsistent_ids)
            or any(f.severity == "leak" for f in self.leaks)
        )

    def to_dict(self) -> dict[str, Any]:
        sug = self.sug
        return {
            "vulnerable": self.vulnerable,
            "vulnerable_ids": sug.vulnerable_ids,
            "intersection_sizes": {str(k): v for k, v in sug.size_distribution().items()},
            "max_exact_risk": sug.max_risk(),
            "leaks": [f.to_dict() for f in self.leaks],
            "principle": "m-distinct",
            "individuals": sug.individuals(),
            "releases": self.release_count,
            "inconsistent_ids": sug.inconsistent_ids,
            "sug": {
                "weighting": sug.weighting,
                **{k: v for k, v in _summary(sug).items() if k != "vulnerable_ids"},
                "group_adversary": None if self.groups is None else _summary(self.groups),
            },
        }

    def lines(self) -> list[str]:
        """Human-readable summary for the CLI."""
        sug = self.sug
        out = [
            f"{sug.individuals()} individuals, {len(sug.identifiers)} versions over "
            f"{self.release_count} release(s); SUG attack with {sug.weighting} weights",
            f"vulnerable versions (one feasible value, Lemma 2): {int(sug.vulnerable.sum())}, "
            f"of {self.vulnerable} individual(s)",
        ]
        out += [f"  - {i}" for i in sug.vulnerable_ids[:20]]
        if sug.inconsistent_ids:
            out.append(f"individuals with no feasible path: {sug.inconsistent_ids[:5]}")
        distribution = ", ".join(f"{k}: {v}" for k, v in sug.size_distribution().items())
        out.append(f"smallest feasible layer per individual (size: individuals): {distribution}")
        risk = sug.max_risk()
        out.append("maximum disclosure risk (eq. 2): "
                   + ("n/a (no true values)" if risk is None else f"{risk:.4g}"))
        if self.groups is not None:
            out.append(
                f"adversary knowing every QI group: {int(self.groups.vulnerable.sum())} "
                f"vulnerable version(s), maximum risk {self.groups.max_risk() or 0:.4g}")
        out.append(f"leak findings: {sum(f.severity == 'leak' for f in self.leaks)} leak(s), "
                   f"{sum(f.severity == 'warning' for f in self.leaks)} warning(s)")
        out += [f"  - [{f.severity}] release {f.release}, {f.check}: {f.message}"
                for f in self.leaks]
        return out


def audit_releases_sug(
    releases: Sequence[pd.DataFrame | Release],
    knowledge: Knowledge,
    model: TransitionModel,
    counterfeits: Sequence[pd.DataFrame | None] | None = None,
    weighting: Weighting = "random-world",
) -> SugAuditReport:
    """The SUG attack and the leak checks of every ``T*(j)`` (with ``R(j)``)."""
    frames = [r.published if isinstance(r, Release) else r for r in releases]
    if counterfeits is None:
        counterfeits = [r.counterfeits if isinstance(r, Release) else None for r in releases]
    sensitive_domain(frames, knowledge.schema)  # fails early on a missing sensitive column
    findings: list[LeakFinding] = []
    for j, published in enumerate(frames):
        findings += find_leaks(published, knowledge.schema, counterfeits[j], j + 1)
    return SugAuditReport(
        sug=sug_attack(frames, knowledge, model, weighting),
        leaks=tuple(findings),
        release_count=len(frames),
    )


def store_principle(path: str | Path) -> str:
    """The principle a store was created with."""
    from republish.store import ReleaseStore

    with ReleaseStore.open(path) as store:
        return store.principle


def audit_store_sug(path: str | Path, weighting: Weighting = "random-world") -> SugAuditReport:
    """Audit an m-Distinct store with its own transition model (both adversaries)."""
    from republish.store import ReleaseStore

    with ReleaseStore.open(path) as store:
        if "transitions" not in store.options:
            raise InputError(f"the store {str(path)!r} has no transition model (principle "
                             f"{store.principle}); the SUG audit needs an m-distinct store.")
        model = TransitionModel.from_dict(store.options["transitions"])
        releases: list[Release] = store.releases()
    if not releases:
        raise InputError(f"the store {str(path)!r} holds no release yet; nothing to audit.")
    report = audit_releases_sug(releases, knowledge_from_releases(releases), model,
                                weighting=weighting)
    return SugAuditReport(sug=report.sug, leaks=report.leaks, release_count=len(releases),
                          groups=sug_attack_groups(releases, model, weighting))
