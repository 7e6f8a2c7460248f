"""Whole-release model: one m-invariant release step decided jointly and exactly.

Given the previous state (old rows bucketed by the signature of their group in T*(n-1)),
one model decides which new rows join which bucket, which new rows form groups of new
signatures, which are deferred, where counterfeits go, and how every bucket splits into
m-unique groups (m-invariance, Xiao & Tao, SIGMOD 2007: division, balancing, assignment and
split of §4.1-4.3 are one optimization here; design notes, "Optimization view" and "Release
objective and certificates"). Old rows keep their signature but may change group.

Objective, lexicographic: (a) counterfeits + w·deferrals, then (b) the perimeter of §4.3,
``Σ_G |σ(G)| · extent(real rows of G)`` with the box extent ``Σ_q (max - min)`` on normalized
QIs by default (any extent >= 0 and monotone under inclusion may be passed).

Formulation. A column ``c`` is a set ``R_c`` of real rows of distinct values, either all new
(``σ_c`` = their values padded with counterfeits up to ``m``, taken in ``padding_order``) or
holding old rows of exactly one bucket ``b`` (``σ_c = σ_b ⊇`` values of ``R_c``). With
``cf_c = |σ_c| - |R_c|``, ``new_c`` its new rows, ``cost_c = |σ_c|·extent(R_c)`` and
``w = p/q`` (the deferral weight as a fraction, denominator <= 1000)::

    stage 1   A* = min (a)                        exactly, by the count model of
                                                  :mod:`republish.models.whole_release_bound`
    stage 2   minimize   Σ_c cost_c · x_c
              subject to Σ_{c ∋ i} x_c = 1        every old row i (and new rows without deferrals)
                         Σ_{c ∋ i} x_c <= 1       every new row i (uncovered = deferred)
                         Σ_c (q·cf_c - p·new_c) x_c <= q·A* - p·N_new     ((a) = A*)
                         x_c ∈ {0, 1}

Columns are left out only where provably useless: ``cf_c <= A* - Σ_{b'≠b} forced_{b'}``
(counterfeits never exceed (a); ``forced_b``: counterfeits bucket ``b`` needs anyway), and
all-new columns hold at most ``2m - 1`` rows (a larger one splits into two of ``>= m`` rows,
no counterfeits, extents no larger). Stage 2 is solved by LP-based price-and-fix: the linear
relaxation (GLOP) gives a dual bound ``D`` and reduced costs; a restricted MIP over the
columns of least reduced cost gives an incumbent ``UB``; SCIP then solves the model over
the columns of reduced cost ``<= UB - D``, which contain every cheaper solution
(Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, 1988, §II.2).

While all columns number at most ``max_columns`` they are enumerated. Past that, the
smallest column families are enumerated whole and the others up to a box-extent radius; for
the box extent, column generation then prices the missing columns exactly (enumeration
pruned by reduced cost, :func:`republish.models.whole_release_bound.enumerate_columns`);
each complete pricing round gives a valid bound, and the reduced-cost fixing enumerates
the columns of reduced cost ``<= UB - D`` the same way, so the answer can still be proven
optimal. When even pricing has too many candidates, columns of a growing radius are priced
instead (better columns, no bound). The count plan's release and the hint are always
columns, so the answer is never worse than either; whatever is not proven gets the best
valid bound found (LP duality or the cycle-cover bound of :func:`whole_release_bound`).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from republish.errors import ParameterError
from republish.models.whole_release_bound import (
    BoxExtent,
    CountPlan,
    Extent,
    ReleaseCounts,
    WholeReleaseBound,
    cycle_cover_bound,
    families,
    optimal_counts,
    rational_weight,
    whole_release_bound,
)
from republish.models.whole_release_columns import Columns, initial_columns, stage2
from republish.models.whole_release_pricing import nearest_columns

__all__ = [
    "BoxExtent",
    "WholeReleaseBound",
    "WholeReleaseProblem",
    "WholeReleaseSolution",
    "group_signature",
    "realize_counts",
    "release_problems",
    "solve_whole_release",
    "whole_release_bound",
]


def _error(owner: str, name: str, expected: str, got: object) -> ParameterError:
    return ParameterError(f"The '{name}' parameter of {owner} must be {expected}. "
                          f"Got {got} instead.")


def _int_array(name: str, data: Any, n: int | None) -> np.ndarray:
    array = np.asarray(data)
    if array.ndim != 1 or (n is not None and len(array) != n) or (
            array.size and array.dtype.kind not in "iu"):
        raise _error("WholeReleaseProblem", name, f"a 1-d int array of length n={n}",
                     f"dtype {array.dtype}, shape {array.shape}")
    return array.astype(np.int64)


@dataclass(frozen=True, eq=False)
class WholeReleaseProblem:
    """One release step: ``points`` (n, d) normalized QIs, ``values`` SA codes in
    ``[0, domain_size)``, ``bucket`` (``-1`` = new row, else an index into ``signatures``).
    ``padding_order`` is completed with the codes it omits, in code order."""

    points: np.ndarray
    values: np.ndarray
    bucket: np.ndarray
    signatures: tuple[frozenset[int], ...]
    m: int
    domain_size: int
    allow_deferrals: bool = False
    deferral_weight: float = 1.0
    counterfeits_in_new_groups: bool = True
    padding_order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        owner = "WholeReleaseProblem"
        for name in ("m", "domain_size"):
            value = getattr(self, name)
            low = 1 if name == "m" else self.m
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise _error(owner, name, f"an int in the range [{low}, inf)", repr(value))
        points = np.asarray(self.points, dtype=np.float64)
        if points.ndim != 2 or not np.isfinite(points).all():
            raise _error(owner, "points", "a finite float array of shape (n, d)",
                         f"shape {points.shape}")
        n = len(points)
        values = _int_array("values", self.values, n)
        bucket = _int_array("bucket", self.bucket, n)
        if len(values) and (values.min() < 0 or values.max() >= self.domain_size):
            raise _error(owner, "values", f"codes in [0, domain_size={self.domain_size})",
                         f"range [{values.min()}, {values.max()}]")
        try:
            signatures = tuple(frozenset(int(v) for v in s) for s in self.signatures)
        except (TypeError, ValueError) as exc:
            raise _error(owner, "signatures", "a tuple of sets of int codes",
                         repr(self.signatures)) from exc
        for b, sigma in enumerate(signatures):
            if len(sigma) < self.m or min(sigma) < 0 or max(sigma) >= self.domain_size:
                raise _error(owner, "signatures", f"sets of >= m={self.m} codes in "
                             f"[0, {self.domain_size})", f"{sorted(sigma)} at index {b}")
        if len(bucket) and (bucket.min() < -1 or bucket.max() >= len(signatures)):
            raise _error(owner, "bucket", f"-1 or an index in [0, {len(signatures)})",
                         f"range [{bucket.min()}, {bucket.max()}]")
        stray = [i for i in np.flatnonzero(bucket >= 0).tolist()
                 if int(values[i]) not in signatures[bucket[i]]]
        if stray:
            raise _error(owner, "values", "in the signature of the row's bucket for old rows",
                         f"row {stray[0]} with value {values[stray[0]]} in bucket "
                         f"{bucket[stray[0]]} of signature {sorted(signatures[bucket[stray[0]]])}")
        for name in ("allow_deferrals", "counterfeits_in_new_groups"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise _error(owner, name, "a bool", repr(getattr(self, name)))
        w = self.deferral_weight
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 <= w < math.inf:
            raise _error(owner, "deferral_weight", "a float in the range [0, inf)", repr(w))
        order = [int(v) for v in self.padding_order]
        if len(set(order)) != len(order) or any(not 0 <= v < self.domain_size for v in order):
            raise _error(owner, "padding_order", f"distinct codes in [0, {self.domain_size})",
                         repr(self.padding_order))
        order += [v for v in range(self.domain_size) if v not in set(order)]
        for name, array in (("points", points), ("values", values), ("bucket", bucket)):
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        object.__setattr__(self, "signatures", signatures)
        object.__setattr__(self, "padding_order", tuple(order))
        object.__setattr__(self, "m", int(self.m))
        object.__setattr__(self, "domain_size", int(self.domain_size))
        object.__setattr__(self, "deferral_weight", float(w))


@dataclass(frozen=True, eq=False)
class WholeReleaseSolution:
    """A release: groups (row indices), their signatures and counterfeit values, the
    deferred rows; per objective a status (OPTIMAL only when proven), the objective, a
    proven lower bound and the gap ``(objective - bound) / max(|objective|, 1)``."""

    groups: tuple[np.ndarray, ...]
    group_signatures: tuple[frozenset[int], ...]
    counterfeits_per_group: tuple[frozenset[int], ...]
    deferred: np.ndarray
    status_a: str
    objective_a: float
    bound_a: float
    gap_a: float | None
    status_b: str
    objective_b: float
    bound_b: float
    gap_b: float | None
    wall_time_s: float
    columns: int
    detail: str = ""

    @property
    def counterfeits(self) -> int:
        return sum(len(c) for c in self.counterfeits_per_group)

    @property
    def deferrals(self) -> int:
        return len(self.deferred)


Hint = tuple[Sequence[Sequence[int] | np.ndarray], Sequence[int] | np.ndarray]
#: Above this many rows (box extent) the set-partitioning model is not built: the release
#: is improved by large-neighbourhood search, and the cycle-cover bound is computed only
#: up to CYCLE_COVER_ROWS rows (above it, measured on Adult, it proves 0).
WHOLE_MODEL_ROWS = 2_000
CYCLE_COVER_ROWS = 5_000
#: With the box extent the missing columns are priced exactly, so the start can be small:
#: this many columns (a smaller LP, measured 10x faster at 200 rows and m = 3), plus each
#: row's nearest columns up to this many rows.
PRICED_START_COLUMNS = 20_000
NEAREST_START_ROWS = 3_000


def group_signature(problem: WholeReleaseProblem, rows: np.ndarray) -> frozenset[int]:
    """σ of a group: its bucket's signature, or (all new) its values padded up to ``m``."""
    old = problem.bucket[rows][problem.bucket[rows] >= 0]
    if len(old):
        return problem.signatures[int(old[0])]
    present = set(problem.values[rows].tolist())
    padding = [v for v in problem.padding_order if v not in present]
    return frozenset(present | set(padding[:max(0, problem.m - len(present))]))


def release_problems(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                     deferred: np.ndarray,
                     signatures: Sequence[frozenset[int]] | None = None) -> list[str]:
    """Every rule of a valid release the given one breaks (empty when valid)."""
    found: list[str] = []
    n, seen = len(problem.values), np.zeros(len(problem.values), dtype=np.int64)
    for g, group in enumerate(groups):
        rows = np.asarray(group, dtype=np.int64)
        if len(rows) == 0 or rows.min() < 0 or rows.max() >= n:
            found.append(f"group {g}: needs real rows in [0, {n})")
            continue
        np.add.at(seen, rows, 1)
        sigma = group_signature(problem, rows) if signatures is None else signatures[g]
        vals, buckets = problem.values[rows].tolist(), set(problem.bucket[rows].tolist()) - {-1}
        if len(set(vals)) != len(vals) or not set(vals) <= sigma or len(sigma) < problem.m:
            found.append(f"group {g}: values {vals} are not distinct values of a signature "
                         f"{sorted(sigma)} of >= m={problem.m} codes")
        if len(buckets) > 1 or (buckets and sigma != problem.signatures[buckets.pop()]):
            found.append(f"group {g}: old rows of one bucket must keep its signature")
        if (not (problem.bucket[rows] >= 0).any() and len(sigma) > len(rows)
                and not problem.counterfeits_in_new_groups):
            found.append(f"group {g}: counterfeits in a group without old rows")
        if min(sigma, default=0) < 0 or max(sigma, default=0) >= problem.domain_size:
            found.append(f"group {g}: signature outside the domain")
    late = np.asarray(deferred, dtype=np.int64)
    if len(late) and (late.min() < 0 or late.max() >= n):
        return [*found, f"deferred rows must be in [0, {n})"]
    np.add.at(seen, late, 1)
    if len(late) and ((problem.bucket[late] >= 0).any() or not problem.allow_deferrals):
        found.append("deferred rows must be new rows, and deferrals allowed")
    if (seen != 1).any():
        found.append(f"rows {np.flatnonzero(seen != 1)[:5].tolist()} are not in exactly one "
                     "group or deferred")
    return found


def _objectives(problem: WholeReleaseProblem, groups: Sequence[np.ndarray], deferred: int,
                weight: Fraction, extent: Extent) -> tuple[Fraction, float]:
    sigmas = [len(group_signature(problem, g)) for g in groups]
    counterfeits = sum(s - len(g) for s, g in zip(sigmas, groups, strict=True))
    cost = sum(s * float(extent(g)) for s, g in zip(sigmas, groups, strict=True))
    return counterfeits + weight * deferred, float(cost)


def realize_counts(problem: WholeReleaseProblem, plan: CountPlan
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    """A release with the count plan's (a). Bucket ``b``'s old rows of each value, in order
    of their coordinate sum, spread over its ``g_b`` groups (the ``j``-th of ``k`` to group
    ``⌊j·g_b/k⌋``: distinct groups), then groups without an old row take one from a group
    holding two (``o_b >= g_b``); each joining new row fills the nearest group lacking its
    value. The rest go round robin into new groups (a value's rows at consecutive positions
    land in distinct groups)."""
    assert plan.groups is not None and plan.joins is not None and plan.deferred is not None
    counts, points = ReleaseCounts.of(problem), problem.points
    key = points.sum(axis=1)
    free = {v: sorted(np.flatnonzero(counts.is_new & (problem.values == v)).tolist(),
                      key=lambda i: key[i]) for v in range(problem.domain_size)}
    groups: list[list[int]] = []
    for b, old in enumerate(counts.old_rows):
        mine: list[list[int]] = [[] for _ in range(int(plan.groups[b]))]
        for v in np.flatnonzero(counts.k[b]).tolist():
            rows = sorted(old[problem.values[old] == v].tolist(), key=lambda i: key[i])
            for j, i in enumerate(rows):
                mine[j * len(mine) // len(rows)].append(i)
        for group in mine:
            if not group:
                group.append(max(mine, key=len).pop())
        centre = points[old].mean(axis=0) if len(old) else np.zeros(points.shape[1])
        for v in np.flatnonzero(plan.joins[b]).tolist():
            free[v].sort(key=lambda i: np.abs(points[i] - centre).sum())
            joining, free[v] = free[v][:int(plan.joins[b, v])], free[v][int(plan.joins[b, v]):]
            for i in joining:
                open_ = [g for g in mine if v not in problem.values[g].tolist()]
                min(open_, key=lambda g: np.abs(points[g].mean(axis=0) - points[i]).sum()
                    ).append(i)
        groups.extend(mine)
    deferred = [i for v in free for i in free[v][:int(plan.deferred[v])]]
    left = [free[v][int(plan.deferred[v]):] for v in free]
    total, most = sum(len(r) for r in left), max((len(r) for r in left), default=0)
    if total:
        size = total // problem.m if problem.m * most <= total else most
        mine = [[] for _ in range(size)]
        for position, i in enumerate(i for rows in left for i in rows):
            mine[position % size].append(i)
        groups.extend(mine)
    return [np.array(sorted(g), dtype=np.int64) for g in groups], np.array(sorted(deferred),
                                                                           dtype=np.int64)


@dataclass
class _Candidate:
    a: Fraction
    b: float
    groups: list[np.ndarray]
    deferred: np.ndarray
    source: str


def _check_hint(problem: WholeReleaseProblem, hint: Hint | WholeReleaseSolution
                ) -> tuple[list[np.ndarray], np.ndarray]:
    try:
        groups, deferred = (hint.groups, hint.deferred) if isinstance(
            hint, WholeReleaseSolution) else hint
        rows = [np.sort(np.asarray(g, dtype=np.int64).ravel()) for g in groups]
        late = np.sort(np.asarray(deferred, dtype=np.int64).ravel())
    except (TypeError, ValueError) as exc:
        raise _error("solve_whole_release", "hint", "a pair (groups, deferred) of row-index "
                     "arrays", type(hint).__name__) from exc
    broken = release_problems(problem, rows, late)
    if broken:
        raise _error("solve_whole_release", "hint", "a valid release", "; ".join(broken[:3]))
    return rows, late


def _as_matrix(groups: Sequence[np.ndarray]) -> np.ndarray:
    width = max((len(g) for g in groups), default=1)
    matrix = np.full((len(groups), width), -1, dtype=np.int64)
    for c, g in enumerate(groups):
        matrix[c, :len(g)] = g
    return matrix


def _gap(status: str, objective: float, bound: float) -> float | None:
    if status == "OPTIMAL":
        return 0.0
    if not math.isfinite(bound) or not math.isfinite(objective):
        return None
    return max(0.0, objective - bound) / max(abs(objective), 1.0)


def _answer(problem: WholeReleaseProblem, best: _Candidate | None, statuses: tuple[str, str],
            bounds: tuple[float, float], started: float, columns: int, detail: str
            ) -> WholeReleaseSolution:
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


def _by_neighbourhoods(problem: WholeReleaseProblem, incumbent: _Candidate,
                       candidates: list[_Candidate], a_star: Fraction | None, bound_a: float,
                       weight: Fraction, measure: Extent, started: float, time_limit: float,
                       seed: int) -> WholeReleaseSolution:
    """A release too large for the set-partitioning model: the best start improved by
    large-neighbourhood search (:mod:`republish.models.whole_release_neighbourhoods`) for
    the rest of the budget; (b) keeps the cycle-cover bound where it is cheap."""
    from republish.models.whole_release_neighbourhoods import (
        GROUPS_PER_NEIGHBOURHOOD,
        improve_by_neighbourhoods,
    )

    bound_share = 0.1 if len(problem.values) <= CYCLE_COVER_ROWS else 0.0
    deadline = started + time_limit * (1 - bound_share)
    search = improve_by_neighbourhoods(problem, incumbent.groups, deadline=deadline,
                                       seed=seed)
    groups = list(search.groups)
    a, b = _objectives(problem, groups, len(incumbent.deferred), weight, measure)
    if search.improved:
        candidates.append(_Candidate(a, b, groups, incumbent.deferred, "model"))
    best = min(candidates, key=lambda c: (c.a, c.b))
    a_done = a_star is not None and best.a == a_star
    status_a = "OPTIMAL" if a_done else "FEASIBLE" if best.source == "model" else "HEURISTIC"
    status_b = "FEASIBLE" if best.source == "model" else "HEURISTIC"
    bound_b = 0.0
    if bound_share and a_done:
        bound_b = max(0.0, cycle_cover_bound(problem, measure, float(incumbent.a), weight,
                                             deadline=started + time_limit))
    detail = (f"large-neighbourhood search: {search.solved} neighbourhoods of "
              f"{GROUPS_PER_NEIGHBOURHOOD} groups solved, {search.improved} improved; answer "
              f"from the {best.source}")
    answer = _answer(problem, best, (status_a, status_b), (bound_a, bound_b), started, 0,
                     detail)
    broken = release_problems(problem, answer.groups, answer.deferred)
    if broken:
        raise RuntimeError(f"large-neighbourhood search produced an invalid release: {broken}")
    return answer


def solve_whole_release(problem: WholeReleaseProblem, *, time_limit: float, workers: int = 1,
                        seed: int = 0, hint: Hint | WholeReleaseSolution | None = None,
                        max_columns: int = 200_000, extent: Extent | None = None
                        ) -> WholeReleaseSolution:
    """Solve the release step of ``problem`` (module docstring): (a) exactly by the count
    model, then (b) by set partitioning.

    ``hint``: a valid release ``(groups, deferred)`` (or a solution); the answer is never
    lexicographically worse. ``workers``/``seed`` go to CP-SAT (count model), the seed to
    SCIP. ``max_columns`` caps the columns enumerated at once. ``extent``: ``extent(rows) ->
    float``, >= 0 and monotone under inclusion (default: the box extent of ``points``).
    Statuses: ``OPTIMAL`` (proven, up to the LP/MIP solvers' 1e-9 tolerances), ``FEASIBLE``
    (the model's answer, unproven), ``HEURISTIC`` (the hint or the count plan's release,
    unimproved), ``TIMEOUT`` (no release found), ``INFEASIBLE``. ``bound_a`` bounds (a);
    ``bound_b`` bounds (b) over the releases whose (a) is optimal.
    """
    started = time.perf_counter()
    owner = "solve_whole_release"
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not (
            0 < time_limit < math.inf):
        raise _error(owner, "time_limit", "a float in the range (0, inf)", repr(time_limit))
    for name, value, low in (("workers", workers, 1), ("seed", seed, 0),
                             ("max_columns", max_columns, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise _error(owner, name, f"an int in the range [{low}, inf)", repr(value))
    if extent is not None and not callable(extent):
        raise _error(owner, "extent", "a callable extent(rows) -> float or None", repr(extent))
    measure: Extent = extent if extent is not None else BoxExtent(problem.points)
    weight, counts = rational_weight(problem.deferral_weight), ReleaseCounts.of(problem)
    candidates = []
    if hint is not None:
        groups, late = _check_hint(problem, hint)
        candidates.append(_Candidate(*_objectives(problem, groups, len(late), weight, measure),
                                     groups, late, "hint"))
    if candidates and candidates[0].a == 0:  # (a) >= 0: the hint's (a) is proven optimal
        plan = CountPlan("OPTIMAL", weight, 0, 0)
    else:
        plan = optimal_counts(problem, time_limit=time_limit / 2, workers=workers, seed=seed)
    bound_a = plan.bound / weight.denominator
    if plan.status == "INFEASIBLE":
        return _answer(problem, None, ("INFEASIBLE", "INFEASIBLE"), (math.inf, math.inf),
                       started, 0, "count model infeasible")
    if plan.value is not None and plan.groups is not None:
        groups, late = realize_counts(problem, plan)
        candidates.append(_Candidate(*_objectives(problem, groups, len(late), weight, measure),
                                     groups, late, "count plan"))
    if not candidates:
        return _answer(problem, None, ("TIMEOUT", "TIMEOUT"), (bound_a, 0.0), started, 0,
                       "count model out of time")
    incumbent = min(candidates, key=lambda c: (c.a, c.b))
    a_star = Fraction(plan.value, weight.denominator) if plan.status == "OPTIMAL" and \
        plan.value is not None else None
    if len(problem.values) > WHOLE_MODEL_ROWS and (extent is None or
                                                   isinstance(extent, BoxExtent)):
        return _by_neighbourhoods(problem, incumbent, candidates, a_star, bound_a, weight,
                                  measure, started, time_limit, seed)
    fams = families(problem, counts, math.floor(incumbent.a))
    if time_limit - (time.perf_counter() - started) > 0.005:
        box_extent = extent is None or isinstance(extent, BoxExtent)
        parts, radius, detail = initial_columns(
            problem, fams, counts.is_new, max_columns, deadline=started + 0.6 * time_limit,
            partial_limit=PRICED_START_COLUMNS if box_extent else None)
        if box_extent and len(problem.values) <= NEAREST_START_ROWS and \
                not np.isposinf(radius).all():
            parts += [nearest_columns(problem, family) for family in fams]
    else:
        parts, radius, detail = [], np.full(len(problem.values), -math.inf), "out of time"
    box = extent is None or isinstance(extent, BoxExtent)
    if not box:  # a radius is a box extent: it says nothing of another extent
        radius = np.where(~np.isposinf(radius), -math.inf, radius)
    width = max([problem.m * 2 - 1, *counts.signature_size.tolist(),
                 *(len(g) for c in candidates for g in c.groups)])
    rhs = int(incumbent.a * weight.denominator) - (weight.numerator * int(counts.is_new.sum())
                                                   if problem.allow_deferrals else 0)
    columns = Columns(problem, counts, measure, weight, rhs, width)
    for part in parts:
        columns.add(part)
    start = columns.add(_as_matrix(incumbent.groups)).tolist() if incumbent.groups else []
    stage, scip_bound = "TIMEOUT", -math.inf
    if len(columns.cost) == 0 and np.isposinf(radius).all():  # no group: all deferred
        stage, scip_bound = "OPTIMAL", 0.0
    elif time_limit - (time.perf_counter() - started) > 0.005:
        result = stage2(columns, fams, radius, start, box,
                         time_limit - (time.perf_counter() - started), seed, max_columns)
        stage, scip_bound, detail = result.status, result.bound, f"{detail}; {result.note}"
        groups = [columns.members[c][columns.members[c] >= 0] for c in result.chosen]
        covered = np.zeros(len(problem.values), bool)
        for g in groups:
            covered[g] = True
        late = np.flatnonzero(~covered)
        candidates.append(_Candidate(*_objectives(problem, groups, len(late), weight, measure),
                                     groups, late, "model"))
    best = min(candidates, key=lambda c: (c.a, c.b))  # ties: the hint, the count plan
    a_done = a_star is not None and best.a == a_star
    status_a = "OPTIMAL" if a_done else "FEASIBLE" if best.source == "model" else "HEURISTIC"
    if a_done and stage == "OPTIMAL":
        status_b, bound_b = "OPTIMAL", min(best.b, scip_bound)
    else:
        status_b = "FEASIBLE" if best.source == "model" else "HEURISTIC"
        grace = started + time_limit + min(1.0, 0.1 * time_limit)
        bound_b = max(0.0, scip_bound, cycle_cover_bound(problem, measure, float(incumbent.a),
                                                         weight, deadline=grace))
    answer = _answer(problem, best, (status_a, status_b), (bound_a, bound_b), started,
                     len(columns.cost), f"{detail}; answer from the {best.source}")
    broken = release_problems(problem, answer.groups, answer.deferred)
    if broken:
        raise RuntimeError(f"whole-release model produced an invalid release: {broken}")
    return answer
