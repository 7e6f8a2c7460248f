"""Solve a built model and say what was proven: the one helper every model of ``models/`` uses.

A model function builds variables, constraints and an objective, then calls
:func:`solve_cp_sat` (OR-Tools CP-SAT) or :func:`solve_mip` (OR-Tools model builder:
SCIP, GLOP, ...). Both set the solver's parameters explicitly (time limit; CP-SAT also
workers and seed, so that a one-worker run is reproducible), map the solver's status to
one vocabulary and return a :class:`Solved`:

* ``OPTIMAL`` -- a solution proven optimal (``bound == objective``, gap 0);
* ``FEASIBLE`` -- a solution without proof (``bound`` is the solver's proven bound);
* ``INFEASIBLE`` -- proven to have no solution;
* ``TIMEOUT`` -- the limit ran out before a solution was found (CP-SAT ``UNKNOWN``,
  model builder ``NOT_SOLVED``); ``bound`` may still hold a proven bound;
* ``ERROR`` -- the solver rejected the model (CP-SAT ``MODEL_INVALID``, an unavailable
  solver, invalid parameters, ...).

Every status mapping of the package is here (:data:`CP_SAT_STATUS`, :data:`MIP_STATUS`).
Objectives are minimized; ``objective`` and ``bound`` are in the model's own (often scaled)
units, which the model converts before it builds its :class:`~republish.certificate.Certificate`
with :func:`certificate`.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

import numpy as np
from ortools.linear_solver.python import model_builder
from ortools.sat.python import cp_model

from republish.certificate import STATUSES, Certificate, SolveStatus, Status
from republish.errors import ParameterError

__all__ = [
    "CP_SAT_STATUS",
    "MIP_STATUS",
    "Hint",
    "SolveStatus",
    "Solved",
    "certificate",
    "check_solver_options",
    "solve_cp_sat",
    "solve_mip",
]

#: CP-SAT status -> the one vocabulary (read-only). Anything else reads as ``ERROR``.
CP_SAT_STATUS: Mapping[Any, SolveStatus] = MappingProxyType({
    cp_model.OPTIMAL: "OPTIMAL",
    cp_model.FEASIBLE: "FEASIBLE",
    cp_model.INFEASIBLE: "INFEASIBLE",
    cp_model.UNKNOWN: "TIMEOUT",
    cp_model.MODEL_INVALID: "ERROR",
})

#: Model-builder status -> the one vocabulary (read-only). Anything else reads as ``ERROR``.
MIP_STATUS: Mapping[Any, SolveStatus] = MappingProxyType({
    model_builder.SolveStatus.OPTIMAL: "OPTIMAL",
    model_builder.SolveStatus.FEASIBLE: "FEASIBLE",
    model_builder.SolveStatus.INFEASIBLE: "INFEASIBLE",
    model_builder.SolveStatus.NOT_SOLVED: "TIMEOUT",
    model_builder.SolveStatus.UNKNOWN_STATUS: "TIMEOUT",
    model_builder.SolveStatus.CANCELLED_BY_USER: "TIMEOUT",
})

#: A warm start: variable -> value, or (variable, value) pairs.
Hint = Mapping[Any, float] | Iterable[tuple[Any, float]]

_FOUND = ("OPTIMAL", "FEASIBLE")


@dataclass(frozen=True)
class Solved:
    """The answer of one solve, in the model's units.

    ``objective`` is ``None`` without a solution; ``bound`` is a proven lower bound of the
    (minimized) objective, ``objective`` itself when ``OPTIMAL``, ``None`` when nothing is
    proven. Read the solution with :meth:`value`, :meth:`int_value`, :meth:`bool_value`
    or :meth:`values` (only when :attr:`found`).
    """

    status: SolveStatus
    objective: float | None
    bound: float | None
    wall_time_s: float
    #: The OR-Tools solver that answered (values, reduced costs); not compared.
    solver: Any = field(default=None, repr=False, compare=False)

    @property
    def found(self) -> bool:
        """Whether a solution is available (``OPTIMAL`` or ``FEASIBLE``)."""
        return self.status in _FOUND

    @property
    def gap(self) -> float | None:
        """``(objective - bound) / max(|objective|, 1)``; 0 when optimal, ``None`` when
        there is no solution or no bound."""
        if self.status == "OPTIMAL":
            return 0.0
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1.0)

    def _solution(self) -> Any:
        if not self.found:
            raise ValueError(f"no solution to read: the solve ended {self.status}.")
        return self.solver

    def value(self, expression: Any) -> float:
        """Value of a variable or linear expression in the solution."""
        return float(self._solution().value(expression))

    def int_value(self, expression: Any) -> int:
        """Value rounded to the nearest integer (MIP solvers answer in floats)."""
        return int(round(self.value(expression)))

    def bool_value(self, variable: Any) -> bool:
        return self.value(variable) > 0.5

    def values(self, variables: list[Any]) -> np.ndarray:
        """Values of many variables at once (float array, in order)."""
        solver = self._solution()
        if isinstance(solver, model_builder.Solver):
            return np.asarray(solver.values(variables), dtype=np.float64)
        return np.array([solver.value(v) for v in variables], dtype=np.float64)

    def reduced_costs(self, variables: list[Any]) -> np.ndarray:
        """Reduced costs of a linear program's variables (``solve_mip`` with GLOP)."""
        solver = self._solution()
        if not isinstance(solver, model_builder.Solver):
            raise TypeError("reduced costs exist only for linear programs (solve_mip).")
        return np.asarray(solver.reduced_costs(variables), dtype=np.float64)


def check_solver_options(time_limit: object, num_workers: object = 1) -> None:
    """Raise :class:`ParameterError` unless ``time_limit`` is a positive number of seconds
    and ``num_workers`` a positive integer (the check every model runs first)."""
    if isinstance(time_limit, bool) or not (
            isinstance(time_limit, numbers.Real) and float(time_limit) > 0):
        raise ParameterError(
            f"time_limit must be a positive number of seconds, got {time_limit!r}."
        )
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) \
            or int(num_workers) < 1:
        raise ParameterError(f"num_workers must be a positive integer, got {num_workers!r}.")


def _number(value: Any) -> float | None:
    """A finite float, or ``None`` (model builder answers ``pd.NA`` without a solution)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _set_hint(model: Any, hint: Hint | None) -> None:
    if hint is None:
        return
    model.clear_hints()
    pairs = hint.items() if isinstance(hint, Mapping) else hint
    for variable, value in pairs:
        model.add_hint(variable, value)


def _solved(status: SolveStatus, objective: Any, bound: Any, wall: float, solver: Any) -> Solved:
    """The objective only with a solution; the bound also after a time-out (still proven)."""
    value = _number(objective) if status in _FOUND else None
    proven = _number(bound) if status in (*_FOUND, "TIMEOUT") else None
    if status == "OPTIMAL":
        proven = value
    return Solved(status, value, proven, wall, solver)


def solve_cp_sat(
    model: cp_model.CpModel,
    *,
    time_limit: float,
    workers: int = 1,
    seed: int = 0,
    hint: Hint | None = None,
) -> Solved:
    """Solve ``model`` with CP-SAT: ``max_time_in_seconds``, ``num_workers`` and
    ``random_seed`` set explicitly. ``hint`` (when given) replaces the model's hints."""
    check_solver_options(time_limit, workers)
    _set_hint(model, hint)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    started = time.perf_counter()
    code = solver.solve(model)
    wall = time.perf_counter() - started
    return _solved(CP_SAT_STATUS.get(code, "ERROR"), solver.objective_value,
                   solver.best_objective_bound, wall, solver)


def solve_mip(
    model: model_builder.Model,
    *,
    time_limit: float,
    solver: str = "scip",
    parameters: str = "",
    hint: Hint | None = None,
) -> Solved:
    """Solve ``model`` with the model builder's ``solver`` (``scip``, ``glop``, ...) under
    ``time_limit`` seconds; ``parameters`` are solver-specific (SCIP's ``limits/gap = 0``).
    An unavailable solver answers ``ERROR``. ``hint`` (when given) replaces the hints."""
    check_solver_options(time_limit)
    _set_hint(model, hint)
    backend = model_builder.Solver(solver)
    if not backend.solver_is_supported():
        return Solved("ERROR", None, None, 0.0, backend)
    backend.set_time_limit_in_seconds(float(time_limit))
    if parameters:
        backend.set_solver_specific_parameters(parameters)
    started = time.perf_counter()
    code = backend.solve(model)
    wall = time.perf_counter() - started
    return _solved(MIP_STATUS.get(code, "ERROR"), backend.objective_value,
                   backend.best_objective_bound, wall, backend)


def certificate(
    step: str,
    status: Status | str,
    objective: float | None,
    bound: float | None = None,
    *,
    heuristic_objective: float | None = None,
    times: Mapping[str, float] | None = None,
    detail: str = "",
) -> Certificate:
    """The :class:`Certificate` of a model's answer, in the result's units: no solution
    (``objective`` ``None``) is an infinite objective; ``OPTIMAL`` without a bound is
    bounded by its objective; a bound above the objective (rounding) is lowered to it."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {list(STATUSES)}, got {status!r}.")
    value = math.inf if objective is None else float(objective)
    if status == "OPTIMAL" and bound is None:
        bound = value
    if bound is not None and math.isfinite(value):
        bound = min(float(bound), value)
    return Certificate(step=step, status=cast(Status, status), objective=value,
                       bound=None if bound is None else float(bound),
                       heuristic_objective=heuristic_objective, times=dict(times or {}),
                       detail=detail)
