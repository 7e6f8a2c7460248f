"""``republish audit --joint``: the joint adversary on a store or on files (issue 20).

The store gives everything the joint model of :mod:`republish.audit.joint_model` needs:
the releases with their private assignments (each person's group), the principle and,
for m-Distinct, the transition model. From files, each person's group in release ``j`` is
the group of the only published row whose QI cells cover the person's QIs in the
knowledge table (an adversary who cannot tell the group apart is weaker; such inputs are
refused with a pointer to ``--store``). The report adds the exact joint risk of the small
components (:mod:`republish.audit.joint_risk`) next to the per-record figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.audit.box_join import covering_pairs
from republish.audit.joint import JointAudit, joint_audit
from republish.audit.joint_model import JOINT_PRINCIPLES, joint_instance
from republish.audit.joint_risk import JointRisk, joint_risk
from republish.audit.knowledge import Knowledge
from republish.errors import InputError, ParameterError
from republish.generalization import parse_boxes
from republish.release import COUNT, GROUP, Release
from republish.transitions import TransitionModel

__all__ = ["JointReport", "joint_audit_files", "joint_audit_store"]


@dataclass(frozen=True, eq=False)
class JointReport:
    """The joint audit and, when asked, the exact joint risk; ``to_dict`` is ``--json``."""

    audit: JointAudit
    risk: JointRisk | None
    release_count: int

    @property
    def found(self) -> bool:
        return bool(self.audit.flagged.any() or self.audit.inconsistent.any())

    def to_dict(self) -> dict[str, Any]:
        audit = self.audit
        flagged_ids = audit.flagged_ids()
        return {
            "vulnerable": len(flagged_ids),
            "vulnerable_ids": flagged_ids,
            "intersection_sizes": {str(k): v for k, v in audit.size_distribution().items()},
            "max_exact_risk": None if self.risk is None else self.risk.to_dict()["max_risk"],
            "leaks": [],
            "releases": self.release_count,
            "joint": audit.to_dict(),
            "joint_risk": None if self.risk is None else self.risk.to_dict(),
        }

    def lines(self) -> list[str]:
        audit = self.audit
        data = audit.to_dict()
        limit = audit.m if audit.m is not None else 2
        out = [
            f"joint audit ({data['principle']}): {data['people']} people, {data['cells']} "
            f"person-releases over {self.release_count} release(s), {data['components']} "
            f"component(s)",
            f"people fully checked: {100 * data['checked_share']:.1f}%"
            + ("" if data["complete"] else
               f" (time limit {data['time_limit']:g} s reached: the others keep a superset)"),
            "possible-set sizes (size: person-releases): " + ", ".join(
                f"{k}: {v}" for k, v in data["possible_sizes"].items()),
            f"person-releases with fewer than {limit} possible values: {data['flagged']} "
            f"({data['forced']} forced), people: {len(data['flagged_ids'])}",
        ]
        for row in data["flagged_cells"][:20]:
            out.append(f"  - {row['id']} in release {row['release']}: {row['possible']}")
        if len(data["flagged_cells"]) > 20:
            out.append(f"  ... and {len(data['flagged_cells']) - 20} more")
        if self.risk is not None:
            risk = self.risk.to_dict()
            out.append(
                f"exact joint risk on {risk['cells_computed']} person-releases of small "
                f"components: max {risk['max_risk']}, mean {risk['mean_risk']}; per-record "
                f"figure: max {risk['max_per_record_risk']}, mean "
                f"{risk['mean_per_record_risk']}; riskier than per-record: "
                f"{risk['cells_riskier_than_per_record']}")
        out.append(f"CP-SAT calls: {data['cp_sat_calls']}, wall time {data['wall_time_s']:.2f} s")
        return out


def _report(releases: Sequence[Release], principle: str, transitions: TransitionModel | None,
            m: int | None, time_limit: float, risk: bool, with_truth: bool, workers: int,
            progress: Callable[[int, int], None] | None) -> JointReport:
    instance = joint_instance(releases, principle, transitions, with_truth=with_truth)
    audit = joint_audit(instance, m=m, time_limit=time_limit, workers=workers,
                        progress=progress)
    return JointReport(audit=audit, risk=joint_risk(instance) if risk else None,
                       release_count=len(releases))


def joint_audit_store(path: str | Path, m: int | None = None, time_limit: float = 300.0,
                      risk: bool = False, workers: int = 1,
                      progress: Callable[[int, int], None] | None = None) -> JointReport:
    """The joint audit of a store's whole history (its principle, ``m`` and transitions)."""
    from republish.store import ReleaseStore

    with ReleaseStore.open(path) as store:
        principle, options, store_m = store.principle, dict(store.options), store.m
        releases: list[Release] = store.releases()
    if not releases:
        raise InputError(f"the store {str(path)!r} holds no release yet; nothing to audit.")
    if principle not in JOINT_PRINCIPLES:
        raise ParameterError(f"the store's principle {principle!r} has no joint audit; "
                             f"it supports {list(JOINT_PRINCIPLES)}.")
    model = (TransitionModel.from_dict(options["transitions"])
             if principle == "m-distinct" and "transitions" in options else None)
    return _report(releases, principle, model, m if m is not None else store_m, time_limit,
                   risk, True, workers, progress)


def _groups_of(published: pd.DataFrame, points: np.ndarray, knowledge: Knowledge,
               number: int) -> np.ndarray:
    """The group of every point: the only group whose rows' cells cover it."""
    low, high = parse_boxes(published, knowledge.schema)
    point, row = covering_pairs(points, low, high)
    labels = published[GROUP].astype(str).to_numpy(dtype=object)
    pairs = pd.DataFrame({"point": point, "group": labels[row]}).drop_duplicates()
    counts = pairs["point"].value_counts()
    lost = np.setdiff1d(np.arange(len(points)), pairs["point"].to_numpy())
    if len(lost) or (counts > 1).any():
        raise InputError(
            f"release {number}: {len(lost)} person(s) are covered by no group and "
            f"{int((counts > 1).sum())} by several; the joint audit needs each person's group "
            "(audit the store with --store).")
    return pairs.set_index("point")["group"].reindex(np.arange(len(points))).to_numpy()


def joint_audit_files(
    frames: Sequence[pd.DataFrame], counterfeits: Sequence[pd.DataFrame | None],
    knowledge: Knowledge, principle: str, permuted: Sequence[bool],
    transitions: TransitionModel | None = None, m: int | None = None,
    time_limit: float = 300.0, risk: bool = False, workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> JointReport:
    """The joint audit of published files with the adversary's knowledge table."""
    schema = knowledge.schema
    codes = knowledge.codes()
    ids = knowledge.identifiers.astype(str)
    truth = knowledge.truth
    releases = []
    for j, published in enumerate(frames):
        present = np.flatnonzero(knowledge.presence[:, j])
        groups = _groups_of(published, codes[present], knowledge, j + 1)
        sa = (truth[present].astype(str) if truth is not None
              else np.full(len(present), str(published[schema.sensitive].iloc[0])))
        assignment = pd.DataFrame({schema.identifier: ids[present], GROUP: groups,
                                   schema.sensitive: sa})
        second = counterfeits[j]
        if second is None or GROUP not in second.columns:
            second = pd.DataFrame({GROUP: [], COUNT: []})
        releases.append(Release(
            number=j + 1, schema=schema,
            published=published.assign(**{GROUP: published[GROUP].astype(str)}),
            counterfeits=second.assign(**{GROUP: second[GROUP].astype(str)}),
            assignment=assignment,
            model="exact" if permuted[j] and principle == "eps-inclusion" else "interval"))
    return _report(releases, principle, transitions, m, time_limit, risk, truth is not None,
                   workers, progress)
