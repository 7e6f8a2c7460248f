"""Solve certificates: what a publication step can prove about its answer.

Every step (eligibility, bucket assignment, group formation, ...) returns a
:class:`Certificate` that is stored with the release and shown by ``republish history``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: What one solve can say (the one vocabulary of :mod:`republish.models.solve`).
SolveStatus = Literal["OPTIMAL", "FEASIBLE", "INFEASIBLE", "TIMEOUT", "ERROR"]
#: What a step can say: a solve's status, or ``HEURISTIC`` (only a heuristic's answer).
Status = Literal["OPTIMAL", "FEASIBLE", "HEURISTIC", "TIMEOUT", "INFEASIBLE", "ERROR"]
#: Every :data:`Status`, strongest first (the order :func:`combine` uses).
STATUSES: tuple[Status, ...] = ("OPTIMAL", "FEASIBLE", "HEURISTIC", "TIMEOUT", "INFEASIBLE",
                                "ERROR")


@dataclass(frozen=True)
class Certificate:
    """Status, objective, best bound and gap of one solve, with the wall time of each part.

    ``status`` is ``OPTIMAL`` when the objective is proven minimal, ``FEASIBLE`` when a
    model improved on or confirmed the heuristic without proof, ``HEURISTIC`` when only the
    heuristic's answer is available (model skipped, too large, or out of time).
    ``bound`` is a proven lower bound on the objective (``None`` when nothing is proven).
    ``objective`` is infinite when there is no answer (``INFEASIBLE``, ``TIMEOUT``, ``ERROR``).
    """

    step: str
    status: Status
    objective: float
    bound: float | None = None
    heuristic_objective: float | None = None
    times: dict[str, float] = field(default_factory=dict)
    detail: str = ""
    #: What ``objective`` measures (e.g. ``counterfeits + 1·deferrals``).
    objective_name: str = ""
    #: The stages of a lexicographic objective (:func:`lexicographic`), first stage first.
    stages: tuple[Certificate, ...] = ()
    #: The same objective over a restricted set of releases, named by its ``step`` (e.g.
    #: ``m-invariance (b) within the paper's buckets``): what the solve proved of the
    #: releases a policy allows, beside what it proved of all releases. Never the release's
    #: status: a release proven optimal within its policy may be far from the optimum.
    restricted: Certificate | None = None

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective - bound) / max(|objective|, 1)``; 0 when optimal."""
        if self.status == "OPTIMAL":
            return 0.0
        if self.bound is None or not math.isfinite(self.bound):
            return None
        if not math.isfinite(self.objective):
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1.0)

    @property
    def wall_time_s(self) -> float:
        return float(sum(self.times.values()))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["gap"] = self.gap
        data["wall_time_s"] = self.wall_time_s
        data["stages"] = [stage.to_dict() for stage in self.stages]
        data["restricted"] = None if self.restricted is None else self.restricted.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Certificate:
        fields = {k: v for k, v in data.items()
                  if k not in ("gap", "wall_time_s", "stages", "restricted")}
        stages = tuple(cls.from_dict(stage) for stage in data.get("stages") or ())
        restricted = data.get("restricted")
        return cls(**fields, stages=stages,
                   restricted=None if restricted is None else cls.from_dict(restricted))


def lexicographic(step: str, first: Certificate, second: Certificate) -> Certificate:
    """The certificate of a lexicographic objective: ``first`` (e.g. counterfeits +
    deferrals), then ``second`` (e.g. the generalization cost given the first's value).

    The status is ``OPTIMAL`` only when both stages are proven optimal; ``FEASIBLE`` when
    the first is proven or bounded and the second has a valid bound; ``HEURISTIC``
    otherwise. The top-level objective, bound and gap are the first stage's (the
    history's ``objective`` column); both stages are in :attr:`Certificate.stages`.
    """
    if first.status == "OPTIMAL" and second.status == "OPTIMAL":
        status: Status = "OPTIMAL"
    elif first.bound is not None and second.bound is not None:
        status = "FEASIBLE"
    else:
        status = "HEURISTIC"
    times: dict[str, float] = {}
    for stage in (first, second):
        times.update(stage.times)
    return Certificate(
        step=step, status=status, objective=first.objective, bound=first.bound,
        heuristic_objective=first.heuristic_objective, times=times,
        detail="; ".join(d for d in (first.detail, second.detail) if d),
        objective_name=f"{first.objective_name}, then {second.objective_name}",
        stages=(first, second),
    )


def combine(step: str, parts: list[Certificate]) -> Certificate:
    """One certificate for a release made of several solves: objectives and bounds add up.

    The combined status is the weakest of the parts (OPTIMAL only if every part is).
    """
    if not parts:
        return Certificate(step=step, status="OPTIMAL", objective=0.0, bound=0.0)
    status = max((p.status for p in parts), key=STATUSES.index)
    bounds = [p.bound for p in parts]
    bound = (
        None if any(b is None for b in bounds) else float(sum(b for b in bounds if b is not None))
    )
    times: dict[str, float] = {}
    for p in parts:
        for key, value in p.times.items():
            times[f"{p.step}.{key}"] = times.get(f"{p.step}.{key}", 0.0) + value
    return Certificate(
        step=step,
        status=status,
        objective=float(sum(p.objective for p in parts)),
        bound=bound,
        times=times,
    )
