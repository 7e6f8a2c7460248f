"""The CP-SAT solver every model runs: its three parameters set explicitly, nothing else.

``max_time_in_seconds``, ``num_workers`` and ``random_seed`` are always set, so that a
run is bounded in time and, with one worker, reproducible.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

__all__ = ["cp_sat_solver"]


def cp_sat_solver(*, time_limit: float, num_workers: int, random_seed: int) -> cp_model.CpSolver:
    """A CP-SAT solver with ``max_time_in_seconds``, ``num_workers`` and ``random_seed``."""
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = num_workers
    solver.parameters.random_seed = random_seed
    return solver
