"""The answer of a whole-release step: candidate releases, their objectives, and the
solution with its certificate (:mod:`republish.models.whole_release`).

Objective (a) is counterfeits + w·deferrals and (b) the perimeter of §4.3 of the
m-invariance paper (Xiao & Tao, SIGMOD 2007), ``Σ_G |σ(G)|·ext(R(G))``; a certificate
gives each its status, bound and gap (design notes, "Release objective and
certificates").
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from republish.models.whole_release_counts import Extent
from republish.models.whole_release_problem import (
    WholeReleaseProblem,
    WholeReleaseSolution,
    as_matrix,
    group_signature,
)

__all__ = ["Candidate", "certified_solution", "release_objectives"]


def release_objectives(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                       deferred: int, weight: Fraction, extent: Extent
                       ) -> tuple[Fraction, float]:
    """Objectives (a) and (b) of the release ``groups`` with ``deferred`` rows held back."""
    sigmas = np.array([len(group_signature(problem, g)) for g in groups], dtype=np.int64)
    counterfeits = int(sigmas.sum()) - sum(len(g) for g in groups)
    batch = getattr(extent, "batch", None)
    if batch is not None and len(groups):  # one vectorized call, not one per group
        spreads = np.asarray(batch(as_matrix(groups)), dtype=np.float64)
    else:
        spreads = np.array([float(extent(g)) for g in groups], dtype=np.float64)
    return counterfeits + weight * deferred, float((sigmas * spreads).sum())


@dataclass
class Candidate:
    """A valid release and where it came from (hint, count plan, model, ...)."""

    a: Fraction
    b: float
    groups: list[np.ndarray]
    deferred: np.ndarray
    source: str


def _gap(status: str, objective: float, bound: float) -> float | None:
    if status == "OPTIMAL":
        return 0.0
    if not math.isfinite(bound) or not math.isfinite(objective):
        return None
    return max(0.0, objective - bound) / max(abs(objective), 1.0)


def certified_solution(problem: WholeReleaseProblem, best: Candidate | None,
                       statuses: tuple[str, str], bounds: tuple[float, float], started: float,
                       columns: int, detail: str) -> WholeReleaseSolution:
    """The solution of ``best`` (None: no release) with its statuses and bounds."""
    groups = tuple(best.groups) if best else ()
    sigmas = tuple(group_signature(problem, g) for g in groups)
    fakes = tuple(s - set(problem.values[g].tolist()) for s, g in zip(sigmas, groups,
                                                                         strict=True))
    a = float(best.a) if best else math.inf
    b = best.b if best else math.inf
    return WholeReleaseSolution(
        groups, sigmas, fakes, best.deferred if best else np.zeros(0, np.int64),
        statuses[0], a, bounds[0], _gap(statuses[0], a, bounds[0]),
        statuses[1], b, bounds[1], _gap(statuses[1], b, bounds[1]),
        time.perf_counter() - started, columns, detail)
