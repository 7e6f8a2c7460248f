"""What every group-formation model shares: the result type, input preparation, the
objective and validity of a grouping, and the set-partitioning MIP's answer against a
hint (:mod:`republish.models.grouping.formation`,
:mod:`republish.models.grouping.m_unique_partition`).

Costs. Rows are QI codes normalized to [0, 1] per QI (pass a :class:`Domain` to normalize
raw codes); a group's length on QI ``j`` is ``max - min`` over its *real* rows. Counterfeits
have no QI values: they take the group's box, so they add nothing to its lengths but
count in ``|G|``. Objectives: ``perimeter`` = ``Σ_G |G| · Σ_j length_j`` (m-invariance
paper, §4.3) and ``ncp`` = ``Σ_G real(G) · Σ_j length_j / (real rows · d)``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.generalization import Domain
from republish.models.grouping.mip import Columns, solve_set_partition
from republish.models.solve import certificate, check_solver_options

__all__ = [
    "GroupFormation",
    "Objective",
    "better_grouping",
    "finish_grouping",
    "grouping_objective",
    "grouping_problems",
    "prepare_points",
    "solve_columns",
]

Objective = Literal["perimeter", "ncp"]


@dataclass(frozen=True, eq=False)
class GroupFormation:
    """``groups[i]``: group (0..group_count-1) of row ``i``; objective, bound and status
    (``OPTIMAL``, ``FEASIBLE``, ``HEURISTIC``) of the grouping; ``method`` that made it;
    wall time; and the certificate of all that."""

    groups: np.ndarray
    group_count: int
    objective: float
    bound: float | None
    status: str
    method: str
    wall_time_s: float
    certificate: Certificate


def prepare_points(
    codes: np.ndarray,
    values: Sequence[str] | np.ndarray,
    is_counterfeit: np.ndarray | None,
    domain: Domain | None,
    objective: str,
    time_limit: float,
    num_workers: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    points = np.asarray(codes, dtype=np.float64)
    if points.ndim != 2:
        raise InputError(f"codes must be an (n, d) array, got shape {points.shape}.")
    labels = np.asarray(values, dtype=object).astype(str)
    if len(labels) != len(points):
        raise InputError(f"{len(points)} rows of codes but {len(labels)} sensitive values.")
    if is_counterfeit is None:
        fake = np.isnan(points).any(axis=1)
    else:
        fake = np.asarray(is_counterfeit, dtype=bool)
        if fake.shape != (len(points),):
            raise InputError(f"is_counterfeit must have one flag per row ({len(points)}).")
    if objective not in ("perimeter", "ncp"):
        raise ParameterError(f"objective must be 'perimeter' or 'ncp', got {objective!r}.")
    check_solver_options(time_limit, num_workers)
    if domain is not None:
        extent = np.where(domain.high > domain.low, domain.high - domain.low, 1.0)
        points = (points - domain.low) / extent
    points = np.where(fake[:, None], np.nan, points)
    real = points[~fake]
    if len(real) and (not np.isfinite(real).all() or real.min() < -1e-9 or real.max() > 1 + 1e-9):
        raise InputError(
            "QI codes of real rows must be finite and normalized to [0, 1]; pass domain= "
            "to normalize raw codes."
        )
    return np.clip(points, 0.0, 1.0), labels, fake


def grouping_objective(
    points: np.ndarray, is_counterfeit: np.ndarray, groups: np.ndarray, objective: Objective
) -> float:
    """Perimeter sum or NCP of a grouping of normalized points (see the module docstring)."""
    if len(groups) == 0:
        return 0.0
    labels, inverse = np.unique(groups, return_inverse=True)
    d = points.shape[1]
    real = ~np.asarray(is_counterfeit, dtype=bool)
    low = np.full((len(labels), d), np.inf)
    high = np.full((len(labels), d), -np.inf)
    np.minimum.at(low, inverse[real], points[real])
    np.maximum.at(high, inverse[real], points[real])
    length = np.where(np.isfinite(low), high - low, 0.0).sum(axis=1)
    if objective == "perimeter":
        return float((np.bincount(inverse, minlength=len(labels)) * length).sum())
    real_size = np.bincount(inverse[real], minlength=len(labels))
    total = int(real.sum()) * d
    return float((real_size * length).sum() / total) if total else 0.0


def grouping_problems(
    values: np.ndarray, is_counterfeit: np.ndarray, groups: np.ndarray, m: int,
    exact_signature: Sequence[str] | None = None,
) -> list[str]:
    """Why ``groups`` is not a valid grouping (empty when valid): every group holds at
    least ``m`` rows of distinct values and a real row; with ``exact_signature``, exactly
    one row of each of its values."""
    if len(groups) != len(values):
        return [f"{len(groups)} labels for {len(values)} rows"]
    if len(groups) == 0:
        return []
    labels, group_index = np.unique(np.asarray(groups), return_inverse=True)
    names, value_index = np.unique(np.asarray(values, dtype=object).astype(str),
                                   return_inverse=True)
    fake = np.asarray(is_counterfeit, dtype=bool)
    size = np.bincount(group_index, minlength=len(labels))
    real = np.bincount(group_index[~fake], minlength=len(labels))
    pairs = np.unique(group_index.astype(np.int64) * len(names) + value_index)
    distinct = np.bincount(pairs // len(names), minlength=len(labels))
    repeats = distinct < size
    small = size < m
    mismatch = np.zeros(len(labels), dtype=bool)
    if exact_signature is not None:
        wanted = set(exact_signature)
        inside = np.array([name in wanted for name in names.tolist()])
        outside = np.bincount(group_index[~inside[value_index]], minlength=len(labels))
        mismatch = repeats | (outside > 0) | (size != len(exact_signature))
    problems: list[str] = []
    for g in np.flatnonzero(repeats | small | (real == 0) | mismatch).tolist():
        label = labels[g]
        if repeats[g]:
            problems.append(f"group {label}: repeats a sensitive value")
        if small[g]:
            problems.append(f"group {label}: {size[g]} rows, fewer than {m}")
        if real[g] == 0:
            problems.append(f"group {label}: counterfeits only")
        if mismatch[g]:
            held = sorted(names[value_index[group_index == g]].tolist())
            problems.append(f"group {label}: values {held} != signature")
    return problems


def finish_grouping(
    step: str, points: np.ndarray, fake: np.ndarray, groups: np.ndarray, objective: Objective,
    status: str, method: str, bound: float | None, started: float,
    heuristic: float | None = None, detail: str = "",
) -> GroupFormation:
    value = grouping_objective(points, fake, groups, objective)
    elapsed = time.perf_counter() - started
    proof = certificate(step, status, value, bound, heuristic_objective=heuristic,
                        times={method: elapsed}, detail=detail)
    return GroupFormation(
        groups=groups, group_count=int(len(np.unique(groups))), objective=value,
        bound=proof.bound, status=status, method=method, wall_time_s=elapsed,
        certificate=proof,
    )


def better_grouping(
    step: str, points: np.ndarray, fake: np.ndarray, groups: np.ndarray, status: str,
    method: str, bound: float, hint: np.ndarray | None, hint_value: float | None,
    objective: Objective, started: float,
) -> GroupFormation:
    """The model's grouping, or the hint when it is better (rounded codes, early stop);
    the model's bound holds for either."""
    result = finish_grouping(step, points, fake, groups, objective, status, method,
                             None if status == "OPTIMAL" else bound, started, hint_value)
    if hint is None or result.objective <= cast(float, hint_value):
        return result
    return finish_grouping(step, points, fake, hint, objective, "FEASIBLE", "hint", bound, started,
                           hint_value)


def solve_columns(
    step: str, points: np.ndarray, fake: np.ndarray, columns: Columns, time_limit: float,
    hint: np.ndarray | None, hint_value: float | None, objective: Objective, started: float,
) -> GroupFormation | None:
    found = solve_set_partition(columns, len(fake), time_limit, hint)
    if found.groups is None or found.bound is None:
        return None
    return better_grouping(step, points, fake, found.groups, found.status, "set-partitioning MIP",
                           found.bound, hint, hint_value, objective, started)
