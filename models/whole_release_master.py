"""The linear relaxation of the whole-release set-partitioning master, kept between column
generation rounds.

Column generation adds a few columns per round; rebuilding and re-solving the LP from
scratch every round costs a second at 20,000 columns. This master is one GLOP model
(``pywraplp``) that grows by columns, so every re-solve starts from the previous optimal
basis (the new columns enter as nonbasic at 0; primal simplex continues from there).
Its duals give the same :class:`~republish.models.whole_release_bound.Relaxation` as
:func:`~republish.models.whole_release_bound.relax`: every bound derived from them is
recomputed from the duals alone (weak duality), whatever the LP's accuracy.
"""

from __future__ import annotations

import math

import numpy as np
from ortools.linear_solver import (  # type: ignore[attr-defined]
    linear_solver_pb2,
    pywraplp,
)

from republish.models.whole_release_bound import (
    Master,
    Relaxation,
    partition_model,
    reduced_costs,
)

__all__ = ["IncrementalMaster"]


class IncrementalMaster:
    """``min cost·x`` over the columns added so far, ``Σ_{c∋i} x_c = 1`` (``<= 1`` where
    not ``exact``), ``a_coef·x <= rhs``, ``x >= 0`` (``x <= 1`` is implied), and the cuts
    added so far, each ``Σ_{c ∈ H} x_c <= 1`` over a set ``H`` of columns (the subset-row
    cuts of :mod:`republish.models.whole_release_subset_rows`)."""

    def __init__(self, master: Master, active: np.ndarray | None = None) -> None:
        """The LP over the columns ``active`` of ``master`` (default: all of them)."""
        solver = pywraplp.Solver.CreateSolver("GLOP")
        if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
            raise RuntimeError("OR-Tools GLOP is not available")
        active = np.arange(len(master.cost)) if active is None else \
            np.unique(np.asarray(active, dtype=np.int64))
        # The first columns, often thousands, go in as one model (model_builder builds it
        # in C++ about 8x faster than column-by-column calls); later columns one by one.
        model, _, _, _ = partition_model(master, active, integral=False)
        error = solver.LoadModelFromProto(model.export_to_proto())
        if error:  # pragma: no cover - the proto is built above
            raise RuntimeError(f"GLOP refused the master: {error}")
        # The first solve starts from scratch, where GLOP's dual simplex is 2-2.5x faster on
        # these masters (200 Adult rows, m = 3: 0.40 -> 0.17 s); re-solves after new
        # columns keep a primal feasible basis, where primal simplex continues from it.
        solver.SetSolverSpecificParametersAsString("use_dual_simplex: true")
        self.solver = solver
        constraints = solver.constraints()
        self.covers, self.spent = constraints[:len(master.exact)], constraints[len(master.exact)]
        self.objective = solver.Objective()
        self.x: list[pywraplp.Variable] = list(solver.variables())
        self.ids: list[int] = active.tolist()  # the column of master behind each variable
        self.variable_of = np.full(len(master.cost), -1, dtype=np.int64)
        self.variable_of[active] = np.arange(len(active))
        self.cuts: list[pywraplp.Constraint] = []
        self.hits: list[np.ndarray] = []  # each cut's columns of master, sorted

    @property
    def loaded(self) -> np.ndarray:
        """Whether each column of the master (as long as last seen) is in the LP."""
        return self.variable_of >= 0

    def add(self, master: Master, columns: np.ndarray) -> None:
        """Add the columns ``columns`` of ``master`` that are not present yet (to the cuts
        whose sets hold them too)."""
        if len(self.variable_of) < len(master.cost):
            self.variable_of = np.append(self.variable_of, np.full(
                len(master.cost) - len(self.variable_of), -1, dtype=np.int64))
        columns = np.asarray(columns, dtype=np.int64)
        fresh = np.unique(columns[self.variable_of[columns] < 0])
        if len(fresh):
            self.solver.SetSolverSpecificParametersAsString("use_dual_simplex: false")
        # plain lists: numpy scalars cost a conversion in every SWIG call
        new_var, set_cost, covers = self.solver.NumVar, self.objective.SetCoefficient, \
            self.covers
        for c, cost, a_coef, members in zip(fresh.tolist(), master.cost[fresh].tolist(),
                                            master.a_coef[fresh].tolist(),
                                            master.members[fresh].tolist(), strict=True):
            var = new_var(0.0, math.inf, "")  # x <= 1: implied (partition_model)
            set_cost(var, cost)
            for row in members:
                if row >= 0:
                    covers[row].SetCoefficient(var, 1.0)
            if a_coef:
                self.spent.SetCoefficient(var, float(a_coef))
            self.x.append(var)
            self.ids.append(c)
        self.variable_of[fresh] = np.arange(len(self.x) - len(fresh), len(self.x))
        for cut, hit in zip(self.cuts, self.hits, strict=True):
            for c in fresh[np.isin(fresh, hit, assume_unique=True)].tolist():
                cut.SetCoefficient(self.x[self.variable_of[c]], 1.0)

    def add_cut(self, hit: np.ndarray) -> None:
        """Add the cut ``Σ_{c ∈ hit} x_c <= 1`` over the columns ``hit`` of the master
        (present or added later)."""
        hit = np.unique(np.asarray(hit, dtype=np.int64))
        # the basis stays dual feasible under a new row: dual simplex continues from it
        self.solver.SetSolverSpecificParametersAsString("use_dual_simplex: true")
        cut = self.solver.Constraint(-math.inf, 1.0)
        present = hit[hit < len(self.variable_of)]
        for v in self.variable_of[present][self.variable_of[present] >= 0].tolist():
            cut.SetCoefficient(self.x[v], 1.0)
        self.cuts.append(cut)
        self.hits.append(hit)

    def relax(self, master: Master, time_limit: float, add: np.ndarray | None = None
              ) -> Relaxation | None:
        """Add the columns ``add`` of ``master`` (default: every column not present),
        re-solve from the last basis, and return the relaxation of
        :func:`~republish.models.whole_release_bound.relax`. Its reduced costs, ``x`` and
        bound are over every column of ``master``, present or not: the bound ``yᵀb +
        Σ_S σ_S + Σ_c min(rc_c, 0)`` is a Lagrangian bound for any duals (``σ <= 0`` the
        cuts', charged in ``rc`` to the columns of their sets), so a master holding only
        some columns of an enumerated set still bounds the whole set."""
        self.add(master, np.arange(len(master.cost)) if add is None else add)
        self.solver.SetTimeLimit(max(int(time_limit * 1000), 10))
        if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        # the values and duals in one response: reading 80,000 variables one call at a time
        # took 33 ms a round, the response 10 (constraints: covers, (a) row, cuts, in order)
        response = linear_solver_pb2.MPSolutionResponse()
        self.solver.FillSolutionResponseProto(response)
        duals = np.array(response.dual_value, dtype=np.float64)
        rows = len(self.covers)
        y = np.where(master.exact, duals[:rows], np.minimum(duals[:rows], 0.0))
        y_a = min(float(duals[rows]), 0.0)
        sigma = np.minimum(duals[rows + 1:rows + 1 + len(self.cuts)], 0.0)
        rc = reduced_costs(master.members, master.cost, master.a_coef, y, y_a)
        for s, hit in zip(sigma.tolist(), self.hits, strict=True):
            rc[hit] -= s
        bound = float(y.sum() + y_a * master.rhs + sigma.sum() + np.minimum(rc, 0.0).sum())
        pi = y + y_a * master.row_a
        # a missing column pays at least its cover rows' part: its cut duals only add
        missing = float(np.minimum(0.0, master.radius - pi).sum())
        x = np.zeros(len(master.cost), dtype=np.float64)
        x[self.ids] = np.array(response.variable_value, dtype=np.float64)
        return Relaxation(y, y_a, pi, rc, x, bound, bound + missing if math.isfinite(
            missing) else -math.inf, sigma)
