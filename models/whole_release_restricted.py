"""Restricted set-partitioning models of the whole-release master
(:mod:`republish.models.whole_release_columns`), solved by SCIP: the incumbent searches
(columns of least reduced cost), the last run after reduced-cost fixing, and the pool
fixing over a table's columns (:func:`fix_by_pool`), with the time rules that keep them
inside the release's budget."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from ortools.linear_solver.python import model_builder

from republish.models.whole_release_bound import Master, partition_model, reduced_costs
from republish.models.whole_release_pricing import stack_columns

if TYPE_CHECKING:
    from republish.models.whole_release_bound import Relaxation
    from republish.models.whole_release_columns import Columns
    from republish.models.whole_release_tables import TabledPricing

__all__ = ["BUILD_SECONDS_PER_COLUMN", "FIXING_COLUMNS_PER_SECOND", "PoolFixing",
           "cheapest_per_row", "fix_by_pool", "is_feasible", "solve_restricted"]

#: Columns per second of time left that the last SCIP run (after reduced-cost fixing) may
#: hold. Measured on 200 Adult rows at m = 4: 37,000 columns proven in 2.4 s, while 89,000
#: and 164,000 columns given 4.1-4.4 s proved nothing and overran their limit by 0.6-0.8 s
#: (SCIP's presolve and root LP do not stop at the limit).
FIXING_COLUMNS_PER_SECOND = 15_000
#: Seconds to build a model per column (measured: 200 Adult rows, m = 3-4, 6-9 µs for the
#: LP master, more on a loaded core): a model that cannot be built in the time left is not
#: started.
BUILD_SECONDS_PER_COLUMN = 1e-5
#: SCIP's primal heuristics, off when a run is there to prove: the incumbent is already the
#: best known and branch-and-bound still finds any cheaper solution.
_HEURISTICS = [
    "actconsdiving", "adaptivediving", "alns", "bound", "clique", "coefdiving",
    "completesol", "conflictdiving", "crossover", "dins", "distributiondiving", "dualval",
    "farkasdiving", "feaspump", "fixandinfer", "fracdiving", "gins", "guideddiving",
    "indicator", "intshifting", "linesearchdiving", "localbranching", "locks", "lpface",
    "mpec", "multistart", "mutation", "objpscostdiving", "octane", "ofins", "oneopt",
    "proximity", "pscostdiving", "randrounding", "rens", "repair", "rins", "rootsoldiving",
    "rounding", "shiftandpropagate", "shifting", "simplerounding", "subnlp", "trivial",
    "trustregion", "trysol", "twoopt", "undercover", "veclendiving", "zirounding"]
#: A proving run's settings: no primal heuristics, one presolve round, at most five
#: separation rounds at the root and none below. On the pools left by the subset-row cuts
#: (200 Adult rows, m = 3, three samples): 14 s against 69 s, 5.6 s against 11.4 s, and
#: 2.4 s against 2.2 s with SCIP's defaults.
PROVING_PARAMETERS = "".join(f"heuristics/{name}/freq = -1\n" for name in _HEURISTICS) + (
    "presolving/maxrounds = 1\nseparating/maxrounds = 0\nseparating/maxroundsroot = 5\n")


def solve_restricted(master: Master, keep: np.ndarray, start: list[int], time_limit: float,
                     seed: int, cuts: Sequence[np.ndarray] = (), proving: bool = False
                     ) -> tuple[str, list[int] | None, float, float]:
    """SCIP over the columns ``keep`` from the solution ``start`` (global column indices):
    status, chosen columns (global), objective, bound of the restricted problem. ``cuts``:
    per subset-row inequality the columns (global ids) holding two rows of its triple
    (``SubsetRowBound.cut_columns`` of :mod:`republish.models.whole_release_subset_rows`):
    at most one of those in ``keep`` is chosen. Valid for every solution, they only speed
    SCIP up (200 Adult rows at m = 3: 72,000 columns proven in 12 s with 85 cuts, 28 s
    without). ``proving``: SCIP runs with PROVING_PARAMETERS (SCIP's defaults when this
    SCIP rejects them)."""
    if time_limit < BUILD_SECONDS_PER_COLUMN * len(keep):  # building alone would overrun
        return "TIMEOUT", None, math.inf, -math.inf
    building = time.perf_counter()
    model, x, _, _ = partition_model(master, keep)
    sorter = np.argsort(keep, kind="stable")
    for columns in cuts:  # each cut's columns, found by the cut LP, located in `keep`
        at = np.minimum(np.searchsorted(keep, columns, sorter=sorter), len(keep) - 1)
        hit = sorter[at][keep[sorter[at]] == columns]
        if len(hit) > 1:
            model.add(model_builder.LinearExpr.sum([x[k] for k in hit.tolist()]) <= 1)
    chosen = set(start)
    for c, var in zip(keep.tolist(), x, strict=True):
        model.add_hint(var, 1.0 if c in chosen else 0.0)
    settings = f"limits/gap = 0\nlimits/absgap = 1e-9\nrandomization/randomseedshift = {seed}\n"
    for extra in ((PROVING_PARAMETERS, "") if proving else ("",)):
        solver = model_builder.Solver("scip")
        # the build came out of the same budget; SCIP's presolve and root LP overrun a little
        solver.set_time_limit_in_seconds(
            max(0.9 * (time_limit - (time.perf_counter() - building)), 0.01))
        solver.set_solver_specific_parameters(settings + extra)
        outcome = solver.solve(model)
        if outcome != model_builder.SolveStatus.INVALID_SOLVER_PARAMETERS:
            break
    status = {model_builder.SolveStatus.OPTIMAL: "OPTIMAL",
              model_builder.SolveStatus.FEASIBLE: "FEASIBLE",
              model_builder.SolveStatus.INFEASIBLE: "INFEASIBLE"}.get(outcome, "TIMEOUT")
    if status not in ("OPTIMAL", "FEASIBLE"):
        return status, None, math.inf, -math.inf
    picked = keep[np.asarray(solver.values(x), dtype=np.float64) > 0.5].tolist()
    return status, picked, float(solver.objective_value), float(solver.best_objective_bound)


def cheapest_per_row(members: np.ndarray, rc: np.ndarray, ids: np.ndarray, k: int
                     ) -> np.ndarray:
    """The ids of the ``k`` columns of least ``rc`` holding each row."""
    column, slot = np.nonzero(members >= 0)
    row = members[column, slot]
    order = np.lexsort((rc[column], row))
    row, column = row[order], column[order]
    rank = np.arange(len(row)) - np.searchsorted(row, row)
    return np.unique(ids[column[rank < k]])


def is_feasible(master: Master, chosen: np.ndarray) -> bool:
    """Whether the columns ``chosen`` are a solution of ``master``."""
    rows = master.members[chosen]
    covered = np.bincount(rows[rows >= 0], minlength=len(master.exact))
    return bool((covered <= 1).all() and (covered[master.exact] == 1).all()
                and int(master.a_coef[chosen].sum()) <= master.rhs)


@dataclass(frozen=True)
class PoolFixing:
    """A SCIP run over the cheapest columns by reduced cost: its solution, and whether it is
    proven optimal for the whole model."""

    proven: bool
    chosen: list[int] | None
    value: float
    pool: int


def fix_by_pool(columns: Columns, pricer: TabledPricing, duals: Relaxation, floor: float,
                best: list[int], size: int, time_limit: float, seed: int) -> PoolFixing:
    """SCIP over the ``size`` columns of least reduced cost (under ``duals``, whose
    Lagrangian bound is ``floor``) of the table and of ``columns``, plus ``best``.

    Reduced-cost fixing without knowing the incumbent first: a solution using a column of
    reduced cost ``rc >= 0`` costs ``>= floor + rc`` (the argument of
    :func:`~republish.models.whole_release_columns.stage2`), so when every column left out
    has ``rc >= t >= 0`` and SCIP proves the pool's optimum ``v <= floor + t``, ``v`` is
    optimal over all columns. This merges the restricted MIP, which finds the incumbent,
    with the fixing run, which proves it: the first release of 200 rows at m = 2 spent
    0.15 s on each.

    Families priced by extension add their columns of reduced cost below ``t`` (at most
    ``size``; ``t`` falls to the least left out); an extension cut short proves nothing."""
    assert pricer.table is not None and pricer.prices_all
    started = time.perf_counter()
    table = pricer.table
    rc = pricer.table_reduced_costs(duals)
    size = max(1, min(size, len(rc)))
    if size < len(rc):
        parted = np.argpartition(rc, size)
        pool, outside = parted[:size], float(rc[parted[size]])
    else:
        pool, outside = np.arange(len(rc)), math.inf
    blocks = [table.members[pool].astype(np.int64)]
    for extension in pricer.extensions:
        if not math.isfinite(outside):
            outside = -math.inf  # every larger column would be needed: no proof
            break
        extended, extended_rc, least = extension.price(columns, duals, max(outside, 0.0),
                                                       deadline=started + time_limit / 2)
        if np.isneginf(least).any():  # cut short: some column under t may be missing
            outside = -math.inf
        if len(extended) > size:
            order = np.argsort(extended_rc, kind="stable")
            outside = min(outside, float(extended_rc[order[size]]))
            extended = extended[order[:size]]
        blocks.append(extended)
    ids = columns.add(stack_columns(blocks))
    master = columns.master(np.full(len(columns.problem.values), -math.inf))
    present = reduced_costs(master.members, master.cost, master.a_coef, duals.y, duals.y_a)
    keep = np.union1d(ids, best).astype(np.int64)
    left_out = np.ones(len(present), bool)
    left_out[keep] = False
    outside = min(outside, float(present[left_out].min(initial=math.inf)))
    status, chosen, value, _ = solve_restricted(
        master, keep, best, time_limit - (time.perf_counter() - started), seed)
    tolerance = 1e-9 * max(1.0, abs(floor))
    proven = status == "OPTIMAL" and outside >= 0 and value <= floor + outside + tolerance
    return PoolFixing(proven, chosen, value, len(keep))
