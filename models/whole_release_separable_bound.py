"""A lower bound on objective (b) of one release step from one relaxation per QI.

Objective (b) of :mod:`republish.models.whole_release` is ``Σ_G c(G)·Σ_q ext_q(G)`` (the
perimeter of the m-invariance paper, Xiao & Tao 2007, §4.3: ``c(G) = |σ(G)|``; NCP: ``c(G)
= |R(G)|``), where ``ext_q`` depends on QI ``q``'s interval of the group only (numeric QIs
on ``[0, 1]``; hierarchy QIs: the covered leaves of the interval of leaf codes, monotone
under inclusion). So for any release ``P`` whose (a) is optimal, ``(b)(P) = Σ_q (b)_q(P)``
and ``(b) >= Σ_q min_P (b)_q(P)``: each QI alone is a release problem in one dimension,
over the same rules (§4.1-4.2, the columns of
:func:`~republish.models.whole_release_counts.families`, the (a) row). Not in the paper.

**One dimension aggregates.** Rows of the same coordinate on ``q``, the same value and the
same bucket (or new) are interchangeable in QI ``q``'s problem, so its set-partitioning LP
over such *types* (cover rows ``= multiplicity``, ``<=`` for deferrable new rows; the (a)
row ``a·λ <= rhs``) has the LP value of the row-wise one, and stays small where the table
does not (a numeric QI of ``P`` distinct values: at most ``P·V·(B + 1)`` types).

**Exact pricing by intervals.** A column of a family (bucket ``b``: one row per value of
``σ_b``, ``lo..|σ_b|`` rows; all new: ``lo..2m - 1`` rows, ``|σ| = max(m, k)``) lies in an
interval ``[x_p, x_t]`` of the QI's distinct coordinates, and its reduced cost is at most
``c(k)·f(x_p, x_t) - y_a·q·|σ| - Σ_rows w`` (equal for its own interval), with ``w`` each
type's dual part: :mod:`republish.models.whole_release_bound`'s reduced cost, the (a) row's
``q`` per filled slot folded into ``w`` (``-p`` per new row where rows may be deferred).
For every ``p``, ``t`` and anchor value ``v`` at ``x_p``, the best column takes value
``v``'s best type at ``x_p`` and the best ``k - 1`` other values' best types in ``[x_p,
x_t]``: ``O(P²·V·k)`` per family, whatever the number of rows
(:mod:`republish.models.whole_release_interval_pricing`, families of one shape at once).
A bucket family's columns are priced, and enter the LP, without the rule that they hold an
old row: the relaxation is of a problem with more columns, so its bounds are only lower
(such a column of ``k = |σ_b|`` rows is an all-new group of that signature anyway).

**The Lagrangian bound** of a round with duals ``(y, y_a)``: ``yᵀb + y_a·rhs +`` the least
reduced costs a solution's columns can sum to. A column's *class* is the value and
coordinate of a row at its least coordinate; a solution holds at most ``mult(p, v)``
columns of class ``(p, v)`` (disjoint columns, each with its own row of that class) and at
most :meth:`~republish.models.whole_release_columns.Columns.most_groups` columns in all,
so the ``most_groups`` least of the classes' least reduced costs, each repeated up to its
class's rows, bound the rest (Nemhauser & Wolsey, *Integer and Combinatorial
Optimization*, 1988, §II.3.6). Every round bounds, at any deadline.

**Where it helps.** Where buckets hold the old rows, the QIs cannot each regroup freely,
and the sum comes close to the release: later releases of 200 Adult rows at m = 7, whose
groups of seven rows no table holds, converge in 0.7-1.0 s to 237-343 against releases of
359-417, where the pair bound gave 56-163. In a first release each QI alone sorts its rows
as it likes, and the sum is loose (m = 3: 23 against 65); from m = 6 it still beats the
relaxation over four-row groups (173 against 101 at m = 6). On 20,000 Adult rows (m = 3)
it converges in 6 s to 12,465 on release 2 (the pair bound: 12,405) and in 19 s to 11,046
on release 4 (10,614), GLOP re-solving without presolve (``WARM_PARAMETERS``); with two
workers and 1.5 ms a row a large release's second process runs it before the pair bound
(:mod:`republish.models.whole_release_large`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from ortools.linear_solver import (  # type: ignore[attr-defined]
    linear_solver_pb2,
    pywraplp,
)

from republish.models.whole_release_columns import a_row_rhs, least_of_solution, most_groups
from republish.models.whole_release_counts import ReleaseCounts, families
from republish.models.whole_release_interval_pricing import IntervalFamily, price_families
from republish.objectives import ReleaseCost

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["SeparableBound", "separable_bound"]

#: Columns entering the LP per round at most (the most negative).
ROUND_COLUMNS = 4_000
#: GLOP's parameters for every solve but an ABNORMAL one's repetition: primal simplex from
#: the last basis (new columns keep it primal feasible), without presolve, which otherwise
#: transforms the LP anew and leaves little of the basis (session 25 measured primal simplex
#: with presolve at 11.2 s a solve against 3.2 s for dual simplex from scratch on 3,772 types
#: of a release of 20,000 Adult rows, and solved such LPs by the latter). Without presolve
#: the relaxations of that release (m = 3, release 4) converge in 19 s instead of 200 s
#: (GLOP 12 s of it instead of 175 s), release 2's in 6 s instead of 20 s; on later releases
#: of 200 rows the times are the same (0.5-1.0 s).
WARM_PARAMETERS = "use_dual_simplex: false, use_preprocessing: false"
#: Relative tolerance under which a round's least reduced costs count as converged.
CONVERGED = 1e-7


@dataclass(frozen=True)
class SeparableBound:
    """``bound``: ``Σ_q`` of each QI's best Lagrangian bound (0 where it is below: each
    QI's part of (b) is ``>= 0``); ``per_qi``: those bounds; ``rounds``: pricing rounds
    per QI; ``converged``: whether every QI's LP converged (its bound is then its LP
    value)."""

    bound: float
    per_qi: tuple[float, ...]
    rounds: tuple[int, ...]
    converged: bool


@dataclass(frozen=True)
class _Types:
    """Rows aggregated for one QI: the type of each row, each type's coordinate index
    (``position`` in ``coordinates``, the QI's sorted distinct values), value, bucket
    (``-1`` new) and multiplicity."""

    of_row: np.ndarray
    position: np.ndarray
    value: np.ndarray
    bucket: np.ndarray
    multiplicity: np.ndarray
    coordinates: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, values: np.ndarray, bucket: np.ndarray) -> _Types:
        coordinates, position = np.unique(x, return_inverse=True)
        key = np.stack([position.reshape(-1), values, bucket], axis=1)
        unique, of_row, multiplicity = np.unique(key, axis=0, return_inverse=True,
                                                 return_counts=True)
        return cls(of_row.reshape(-1), unique[:, 0], unique[:, 1], unique[:, 2],
                   multiplicity, coordinates)


class _Master:
    """``min cost·λ`` s.t. ``A λ = mult`` (``<=`` where deferrable), ``a·λ <= rhs``,
    ``λ >= 0``; columns are sets of types (GLOP, re-solved from the last basis,
    ``WARM_PARAMETERS``)."""

    def __init__(self, types: _Types, exact: np.ndarray, rhs: int) -> None:
        self.multiplicity = types.multiplicity.astype(np.float64)
        self.exact, self.rhs = exact, rhs
        self.keys: dict[tuple[int, tuple[int, ...]], int] = {}
        self.columns: list[tuple[tuple[int, ...], float, int]] = []  # (types, cost, a)
        self._build()

    def _build(self) -> None:
        """A GLOP model of the columns so far (it solves from scratch)."""
        solver = pywraplp.Solver.CreateSolver("GLOP")
        if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
            raise RuntimeError("OR-Tools GLOP is not available")
        self.solver = solver
        self.covers = [solver.Constraint(float(m) if e else -math.inf, float(m))
                       for m, e in zip(self.multiplicity.tolist(), self.exact.tolist(),
                                       strict=True)]
        self.spent = solver.Constraint(-math.inf, float(self.rhs))
        self.objective = solver.Objective()
        solver.SetSolverSpecificParametersAsString(WARM_PARAMETERS)
        for key, cost, a_coef in self.columns:
            self._variable(key, cost, a_coef)

    def _variable(self, key: tuple[int, ...], cost: float, a_coef: int) -> None:
        var = self.solver.NumVar(0.0, math.inf, "")
        self.objective.SetCoefficient(var, cost)
        for t in key:
            self.covers[t].SetCoefficient(var, 1.0)
        if a_coef:
            self.spent.SetCoefficient(var, float(a_coef))

    def add(self, members: Sequence[tuple[int, ...]], signature: Sequence[int],
            cost: Sequence[float], a_coef: Sequence[int]) -> int:
        """Add the columns not present yet (a column: its types and its family's ``|σ|``,
        0 for all new); how many were new."""
        fresh = 0
        for key, s, c, a in zip(members, signature, cost, a_coef, strict=True):
            if (s, key) in self.keys:
                continue
            self.keys[s, key] = len(self.keys)
            self.columns.append((key, float(c), int(a)))
            self._variable(key, float(c), int(a))
            fresh += 1
        return fresh

    def duals(self, time_limit: float) -> tuple[np.ndarray, float] | None:
        """The LP's duals ``(y, y_a)`` (``y <= 0`` on ``<=`` rows, ``y_a <= 0``), or None."""
        started = time.perf_counter()
        self.solver.SetTimeLimit(max(int(time_limit * 1000), 10))
        if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
            # primal simplex from the last basis can end ABNORMAL (a later release of 200
            # Adult rows at m = 7, education, round 6, 629 columns): once more from scratch
            left = time_limit - (time.perf_counter() - started)
            if left <= 0:
                return None
            self._build()
            self.solver.SetSolverSpecificParametersAsString("use_dual_simplex: true")
            self.solver.SetTimeLimit(max(int(left * 1000), 10))
            if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
                return None
        response = linear_solver_pb2.MPSolutionResponse()
        self.solver.FillSolutionResponseProto(response)
        dual = np.array(response.dual_value, dtype=np.float64)
        rows = len(self.covers)
        y = np.where(self.exact, dual[:rows], np.minimum(dual[:rows], 0.0))
        self.solver.SetSolverSpecificParametersAsString(WARM_PARAMETERS)  # after a repeat
        return y, min(float(dual[rows]), 0.0)


def _family_types(problem: WholeReleaseProblem, counts: ReleaseCounts, cf_max: int,
                  types: _Types) -> list[IntervalFamily]:
    found = []
    for family in families(problem, counts, cf_max):
        pools = tuple(np.unique(types.of_row[pool]) for pool in family.pools if len(pool))
        if pools and family.lo <= min(family.hi, len(pools)):  # else it has no column
            positions = len(np.unique(types.position[np.concatenate(pools)]))
            found.append(IntervalFamily(pools, family.lo, min(family.hi, len(pools)),
                                        family.signature, positions))
    return found


def _sorted_groups(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                   position: np.ndarray) -> list[np.ndarray]:
    """The groups of each bucket in ``groups`` regrouped along one QI: each value's rows
    there, in coordinate order, spread over the bucket's groups in order (the ``i``-th of
    ``c`` to group ``⌊i·g/c⌋``), as sorting solves an assignment with a Monge cost. Only
    start columns: the bounds hold whatever the LP starts from (they are computed from
    its duals and an exact pricing), and the start's own columns, a joint release's,
    leave the LP degenerate for many rounds (seven-value buckets: 9 rounds at the start's
    value before it moved)."""
    by_bucket: dict[int, list[np.ndarray]] = {}
    for group in groups:
        bucket = int(problem.bucket[group].max())
        if bucket >= 0:
            by_bucket.setdefault(bucket, []).append(group)
    regrouped: list[np.ndarray] = []
    for own in by_bucket.values():
        rows = np.concatenate(own)
        mine: list[list[int]] = [[] for _ in own]
        for v in np.unique(problem.values[rows]).tolist():
            held = rows[problem.values[rows] == v]
            held = held[np.argsort(position[held], kind="stable")]
            for i, row in enumerate(held.tolist()):
                mine[i * len(own) // len(held)].append(row)
        regrouped += [np.array(g) for g in mine if g]
    return regrouped


def _column_attributes(key: tuple[int, ...], types: _Types, lengths: np.ndarray,
                       signature: int, m: int, ncp: bool, deferrals: bool,
                       weight: Fraction) -> tuple[float, int]:
    rows = np.asarray(key)
    k = len(rows)
    sigma = signature or max(m, k)
    extent = float(lengths[types.position[rows].min(), types.position[rows].max()])
    new = int((types.bucket[rows] < 0).sum())
    a_coef = weight.denominator * (sigma - k) - (weight.numerator * new if deferrals else 0)
    return (k if ncp else sigma) * extent, a_coef


def _qi_bound(problem: WholeReleaseProblem, counts: ReleaseCounts, types: _Types,
              lengths: np.ndarray, start: Sequence[np.ndarray], cf_max: int, rhs: int,
              weight: Fraction, most_groups: int, ncp: bool, deadline: float
              ) -> tuple[float, int, bool]:
    """A QI's best Lagrangian bound, its pricing rounds, and whether it converged."""
    deferrals = problem.allow_deferrals
    master = _Master(types, ~((types.bucket < 0) & deferrals), rhs)
    fams = _family_types(problem, counts, cf_max, types)

    def add(columns: Sequence[tuple[tuple[int, ...], int]]) -> int:
        attributes = [_column_attributes(key, types, lengths, s, problem.m, ncp, deferrals,
                                         weight) for key, s in columns]
        return master.add([key for key, _ in columns], [s for _, s in columns],
                          [c for c, _ in attributes], [a for _, a in attributes])

    signature = np.append(counts.signature_size, 0)
    start = [np.asarray(group) for group in start]
    add([(tuple(sorted(types.of_row[group].tolist())),
          int(signature[problem.bucket[group].max()]))
         for group in [*start, *_sorted_groups(problem, start,
                                                     types.position[types.of_row])]])
    # class (p, v): its rows, and at most that many of a solution's columns
    capacity = np.zeros(problem.domain_size * len(types.coordinates), np.int64)
    np.add.at(capacity, types.value * len(types.coordinates) + types.position,
              types.multiplicity)
    best, rounds, converged = -math.inf, 0, False
    while time.perf_counter() < deadline:
        solved = master.duals(deadline - time.perf_counter())
        if solved is None:
            break
        y, y_a = solved
        # w: each type's share of a column's reduced cost; the (a) row's charge per slot,
        # -y_a·q, is the column's constant (``slot``)
        w = y - y_a * weight.denominator - y_a * (weight.numerator if deferrals else 0) * (
            types.bucket < 0)
        least = np.full(len(capacity), np.inf)
        priced = price_families(fams, types.position, types.value, len(types.coordinates),
                                w, lengths, -y_a * weight.denominator, problem.m, ncp)
        np.minimum.at(least, priced.classes, priced.least)
        found: list[tuple[float, tuple[int, ...], int]] = []
        for c in np.flatnonzero(priced.least < -1e-9).tolist():
            row = priced.members[c]
            found.append((float(priced.least[c]), tuple(sorted(row[row >= 0].tolist())),
                          int(priced.signature[c])))
        rounds += 1
        rest = _solution_least(least, capacity, most_groups)
        best = max(best, float(y @ master.multiplicity + y_a * rhs) + rest)
        if not found or -rest <= CONVERGED * max(1.0, abs(best)):
            converged = True
            break
        found.sort(key=lambda f: f[0])
        if not add([(key, s) for _, key, s in found[:ROUND_COLUMNS]]):
            break  # nothing new: the LP cannot move
    return best, rounds, converged


def _solution_least(least: np.ndarray, capacity: np.ndarray, most_groups: int) -> float:
    """The least reduced costs a solution's columns sum to: at most ``capacity[c]``
    columns of class ``c``, each costing ``>= least[c]``, and ``most_groups`` in all."""
    finite = np.isfinite(least)
    return least_of_solution(np.repeat(np.minimum(least[finite], 0.0), capacity[finite]),
                             most_groups)


def _lengths(cost: ReleaseCost, at: int, coordinates: np.ndarray) -> np.ndarray:
    """QI ``at``'s normalized extent of ``[x_p, x_t]`` for every pair of its coordinates."""
    single = ReleaseCost(schema=dataclasses.replace(cost.schema, qis=(cost.schema.qis[at],)),
                         points=cost.points[:, [at]], name=cost.name)
    x = coordinates
    return single.lengths(np.repeat(x, len(x))[:, None], np.tile(x, len(x))[:, None]
                          ).reshape(len(x), len(x))


def separable_bound(problem: WholeReleaseProblem, cost: Any, a_star: Fraction | float,
                    weight: Fraction, groups: Sequence[np.ndarray], *, deadline: float,
                    report: Callable[[SeparableBound], object] | None = None
                    ) -> SeparableBound:
    """Bound (b) over the releases of ``problem`` whose (a) is at most ``a_star`` (module
    docstring). ``cost``: a :class:`~republish.objectives.ReleaseCost` (its QIs and
    normalization); ``groups``: a release of that (a), the LPs' start (deferred rows left
    out). The QIs of fewest values go first, each until its LP converges or ``deadline``;
    ``report`` receives the bound so far after each QI (a bound computed in a second
    process sends it through its pipe)."""
    if not isinstance(cost, ReleaseCost):
        raise TypeError(f"separable_bound needs a ReleaseCost, got {type(cost).__name__}")
    counts = ReleaseCounts.of(problem)
    rhs = a_row_rhs(problem, counts, a_star, weight)
    groups_at_most = most_groups(problem, counts, weight, rhs)
    qis = len(cost.schema.qis)
    per_qi, rounds, converged = [-math.inf] * qis, [0] * qis, True
    # QIs of few values first, each until its LP converges: their LPs converge in fewer,
    # cheaper rounds, and a deadline too short for every QI still leaves them bounded
    # (equal shares left none bounded on a later release of 200 Adult rows at m = 6 in
    # 0.5 s, where sex, education and native-country converge, 201 of its 257)
    order = sorted(range(qis), key=lambda at: len(np.unique(cost.points[:, at])))
    for at in order:
        types = _Types.of(cost.points[:, at], problem.values, problem.bucket)
        per_qi[at], rounds[at], done = _qi_bound(
            problem, counts, types, _lengths(cost, at, types.coordinates), groups,
            math.floor(a_star), rhs, weight, groups_at_most, cost.name != "perimeter",
            deadline)
        converged = converged and done
        if report is not None:
            report(_total(per_qi, rounds, converged and at == order[-1]))
    return _total(per_qi, rounds, converged)


def _total(per_qi: list[float], rounds: list[int], converged: bool) -> SeparableBound:
    # (b)_q >= 0: a QI whose LP has not bounded yet counts 0
    return SeparableBound(float(sum(max(bound, 0.0) for bound in per_qi)), tuple(per_qi),
                          tuple(rounds), converged)
