"""Adversary audits of release sequences (m-invariance paper, §2–3).

The adversary knows every individual's identity, exact QIs and which releases hold their
row (the knowledge table ``B(n)``, Definition 6), plus the published ``T*(j)`` and
``R(j)``. :func:`audit_releases` runs, on any sequence of releases:

* the intersection attack (:mod:`republish.audit.intersection`, Lemmas 1–2): the
  candidate values left for every tuple, and the *vulnerable* tuples with one value left;
* optionally the exact disclosure risk (:mod:`republish.audit.exact_risk`, Definition 14)
  for small sequences;
* checks of the files themselves (:mod:`republish.audit.leaks`).

The joint adversary (issue 20: every possible world of the whole sequence as one
constraint model, :mod:`republish.audit.joint`) is imported on first use
(``joint_audit``, ``joint_instance``, ``joint_risk``, ``JointAudit``): it loads OR-Tools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.audit.exact_risk import ExactRisk, Principle, exact_risk
from republish.audit.intersection import IntersectionAudit, intersection_attack
from republish.audit.knowledge import (
    Knowledge,
    knowledge_from_releases,
    make_knowledge,
    read_knowledge,
)
from republish.audit.leaks import LeakFinding, find_leaks, find_leaks_in_file
from republish.generalization import parse_boxes
from republish.release import COUNT, GROUP, Release
from republish.schema import Schema

__all__ = [
    "AuditReport",
    "JointAudit",
    "ExactRisk",
    "IntersectionAudit",
    "Knowledge",
    "LeakFinding",
    "audit_releases",
    "exact_risk",
    "find_leaks",
    "find_leaks_in_file",
    "intersection_attack",
    "joint_audit",
    "joint_instance",
    "joint_risk",
    "knowledge_from_releases",
    "make_knowledge",
    "read_knowledge",
]


_LAZY = {
    "JointAudit": "republish.audit.joint",
    "joint_audit": "republish.audit.joint",
    "joint_instance": "republish.audit.joint_model",
    "joint_risk": "republish.audit.joint_risk",
}


def __getattr__(name: str) -> Any:
    """The joint audit's names, imported on first use (they load OR-Tools)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class AuditReport:
    """Everything one audit found; :meth:`to_dict` is the ``audit --json`` document."""

    intersection: IntersectionAudit
    exact: ExactRisk | None
    leaks: tuple[LeakFinding, ...]
    release_count: int = 0
    exact_note: str = ""

    @property
    def vulnerable(self) -> int:
        return int(self.intersection.vulnerable.sum())

    @property
    def found(self) -> bool:
        """A vulnerable tuple, a tuple with no value left, or a leak (not a warning)."""
        return (
            self.vulnerable > 0
            or bool(self.intersection.inconsistent.any())
            or any(f.severity == "leak" for f in self.leaks)
        )

    def max_exact_risk(self) -> float | None:
        if self.exact is None:
            return None
        value = self.exact.max_risk()
        return None if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        audit = self.intersection
        document: dict[str, Any] = {  # the Contract's keys first, then extensions
            "vulnerable": self.vulnerable,
            "vulnerable_ids": audit.vulnerable_ids,
            "intersection_sizes": {str(k): v for k, v in audit.size_distribution().items()},
            "max_exact_risk": self.max_exact_risk(),
            "leaks": [f.to_dict() for f in self.leaks],
            "individuals": len(audit.identifiers),
            "releases": self.release_count,
            "inconsistent_ids": audit.inconsistent_ids,
            "revealed": audit.revealed_values(),
        }
        if self.exact is not None:
            exact = self.exact
            document["exact"] = {
                "principle": exact.principle,
                "surjections": str(exact.total),
                "truth_known": exact.truth is not None,
                "risks": {k: float(v) for k, v in exact.risks().items()},
                "max_posterior": (
                    None if exact.max_posterior() is None else float(exact.max_posterior() or 0)
                ),
                "note": exact.note,
            }
        elif self.exact_note:
            document["exact"] = {"note": self.exact_note}
        return document


def _knowledge_counts(
    releases: Sequence[pd.DataFrame],
    counterfeits: Sequence[pd.DataFrame | None],
    knowledge: Knowledge,
) -> list[LeakFinding]:
    """``|T*(j)| - |R(j)|`` must equal the tuples the knowledge table puts in release j."""
    findings = []
    for j, (published, fakes) in enumerate(zip(releases, counterfeits, strict=True)):
        counterfeit_rows = int(fakes[COUNT].sum()) if fakes is not None and len(fakes) else 0
        real = len(published) - counterfeit_rows
        alive = int(knowledge.presence[:, j].sum())
        if real != alive:
            findings.append(LeakFinding(
                j + 1, "knowledge-count", "leak",
                f"T*({j + 1}) has {len(published)} rows and R({j + 1}) {counterfeit_rows} "
                f"counterfeits, leaving {real} real rows, but {alive} individuals are in release "
                f"{j + 1}: undeclared counterfeits, missing rows or a wrong knowledge table."))
    return findings


def _permuted(release: pd.DataFrame | Release, schema: Schema) -> bool:
    """A permutation publication (ε-inclusion): exact QIs, rows of a group differ.

    Known from :attr:`Release.model`; for a bare table, every QI cell is a single value
    and some group shows several QI tuples (generalized groups share one box).
    """
    if isinstance(release, Release):
        return release.model == "exact"
    qis = [q for q in schema.qi_names if q in release.columns]
    if GROUP not in release.columns or not qis or not len(release):
        return False
    low, high = parse_boxes(release.drop_duplicates(qis), schema)
    if np.any(low != high):
        return False
    return bool((release.groupby(GROUP)[qis].nunique() > 1).any(axis=None))


def _permuted_findings(
    findings: list[LeakFinding], schema: Schema, release: int
) -> list[LeakFinding]:
    """Leak checks of a permutation publication: rows of a group differ by design, and
    exact QIs singling out rows are the principle's premise (a warning, not a leak)."""
    kept = [f for f in findings if f.check != "group-box" and not (
        f.check == "identifier-column" and any(repr(q) in f.message for q in schema.qi_names))]
    kept.append(LeakFinding(
        release, "exact-qis", "warning",
        "exact QI values are published (permutation publication): anyone who knows a "
        "person's QIs learns whether and in which group the person's row appears."))
    return kept


def audit_releases(
    releases: Sequence[pd.DataFrame | Release],
    knowledge: Knowledge,
    counterfeits: Sequence[pd.DataFrame | None] | None = None,
    exact: bool = False,
    principle: Principle = "auto",
    raw_texts: Sequence[str | None] | None = None,
    max_individuals: int = 60,
    max_states: int = 400_000,
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Audit ``T*(1), ..., T*(n)`` (with ``R(1), ..., R(n)``) against ``B(n)``.

    ``counterfeits[j]`` is ``R(j + 1)`` (None: no counterfeits), taken from
    :class:`Release` objects when omitted; ``raw_texts[j]`` the CSV text of release
    ``j + 1`` for the formatting checks. ``exact`` adds Definition 14's risk (small
    sequences only, see :func:`republish.audit.exact_risk.exact_risk`); ``progress``
    is called with (releases attacked, releases).
    """
    frames = [r.published if isinstance(r, Release) else r for r in releases]
    if counterfeits is None:
        counterfeits = [r.counterfeits if isinstance(r, Release) else None for r in releases]
    permuted = [_permuted(r, knowledge.schema) for r in releases]
    # A permutation publication's second table is S(j), substitutions of real rows.
    counterfeits = [None if p else c for p, c in zip(permuted, counterfeits, strict=True)]
    raw = list(raw_texts) if raw_texts is not None else [None] * len(frames)
    intersection = intersection_attack(frames, knowledge, progress=progress)
    findings: list[LeakFinding] = []
    for j, published in enumerate(frames):
        fakes = counterfeits[j]
        if fakes is not None and GROUP not in fakes.columns:
            fakes = None
        found = find_leaks(published, knowledge.schema, fakes, j + 1, raw[j])
        if permuted[j]:
            found = _permuted_findings(found, knowledge.schema, j + 1)
        findings += found
    count_findings = _knowledge_counts(frames, counterfeits, knowledge)
    findings += count_findings
    risk = None
    note = ""
    if exact and count_findings:
        note = "exact risk not computed: the row counts contradict the knowledge table."
    elif exact and any(permuted):
        note = ("exact risk not computed: Definition 14 counts surjections onto generalized "
                "rows; permutation-published releases (exact QIs) are not supported.")
    elif exact:
        risk = exact_risk(frames, knowledge, counterfeits, principle, max_individuals, max_states)
    return AuditReport(
        intersection=intersection,
        exact=risk,
        leaks=tuple(findings),
        release_count=len(frames),
        exact_note=note,
    )
