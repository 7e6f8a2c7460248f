"""Exact assignment phase of one ε-inclusive release, on counts (CP-SAT).

Algorithm 1 of the ε-inclusion paper (§"Algorithm", phase 2) completes the clusters of old
rows with new rows (rule 1) or substitution records (rule 2), forms new ε-distinct
clusters with the rest (rule 3) and puts what is left into clusters lacking its value.
This model takes those count decisions at once and optimizes them lexicographically.

Symbols: cluster type ``t`` (interchangeable clusters) has ``m[t]`` clusters with
``present[t] = S ∪ values`` and ``missing[t] = S − values``, ``a[t]`` old rows each;
``n[v]`` new rows of value ``v``; value ``v`` lies in category ``c(v)``.

* ``keep[t] <= m[t]`` clusters published (a dropped cluster's rows are deferred);
* ``fill[t,v] <= keep[t]``, ``v ∈ missing[t]``: clusters taking a new row of ``v``;
* ``sub[t,w] <= keep[t]``, ``w ∉ present[t]``: new rows of ``w`` used as substitutes,
  ``Σ_w sub[t,w] = |missing[t]|·keep[t] − Σ_v fill[t,v]`` (every open slot substituted;
  near-equal open slots per cluster make the per-cluster split exist, Gale-Ryser);
* ``extra[v] + Σ_t sub[t,v] <= Σ_{t: v ∉ present[t]} keep[t]``: rows joining old
  clusters lacking ``v`` (one per cluster);
* ``N`` new clusters with ``y[v] <= N`` rows of ``v``; category ``c`` gives ``τ``
  distinct values to ``z[c] <= N`` of them: ``Σ_{v ∈ c} min(y[v], z[c]) >= τ·z[c]``
  (``min`` through ``μ[v] <= y[v]``, ``μ[v] <= z[c]``) and ``Σ_c z[c] >= λ·N``, which
  is also sufficient (:func:`republish.heuristics.eps_inclusion.compose_new_clusters`);
* ``d[v]`` deferred: ``n[v] = Σ_t fill[t,v] + Σ_t sub[t,v] + extra[v] + y[v] + d[v]``.

Objectives, solved in this order, each fixed before the next: deferred rows
``D = Σ d + Σ_t (m[t] − keep[t])·a[t]``, substitutions ``S = Σ_t (|missing[t]|·keep[t] −
Σ_v fill[t,v])``, extras ``E = Σ extra`` (each grows a signature that every later release
must honour), then the number of new clusters ``N`` is maximized (smaller groups).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from republish.certificate import Certificate
from republish.errors import ParameterError
from republish.models.solve import Solved, certificate, check_solver_options, solve_cp_sat
from republish.problems.eps_plan import PlanCounts

__all__ = ["EpsAssignment", "TypeCounts", "solve_eps_assignment"]

STEP = "eps-assignment"


@dataclass(frozen=True)
class TypeCounts:
    """One cluster type: ``multiplicity`` clusters, ``members`` old rows each."""

    present: frozenset[int]
    missing: frozenset[int]
    multiplicity: int
    members: int


#: A hint: any plan of counts, e.g. the greedy ``AssignmentPlan``.
PlanLike = PlanCounts


@dataclass(frozen=True)
class EpsAssignment(PlanCounts):
    """Counts chosen by the model (the fields of :class:`PlanCounts`), status and proof.

    ``objective`` is (deferred rows, substitutions, extras, new clusters); ``status`` is
    ``OPTIMAL`` when every stage is proven optimal, ``FEASIBLE`` otherwise.
    """

    objective: tuple[int, int, int, int]
    status: str
    certificate: Certificate
    stages: dict[str, str] = field(default_factory=dict)

    @property
    def bound(self) -> float | None:
        """Proven lower bound of deferred rows + substitutions (the certificate's objective)."""
        return self.certificate.bound

    @property
    def wall_time_s(self) -> float:
        return self.certificate.wall_time_s


def _check(types: Sequence[TypeCounts], supply: Sequence[int], category: Sequence[int],
           lam: int, tau: int, time_limit: float, num_workers: int) -> None:
    for name, value in (("lambda", lam), ("tau", tau)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"{name} must be a positive integer, got {value!r}.")
    check_solver_options(time_limit, num_workers)
    if len(category) != len(supply) or any(int(s) < 0 for s in supply):
        raise ParameterError("supply and category need one non-negative entry per value.")
    for t in types:
        if not t.missing <= t.present or t.multiplicity < 1 or t.members < 1:
            raise ParameterError(
                f"cluster type {t} is inconsistent: missing ⊄ present, or no cluster or no "
                "old row (every cluster of the division holds an old row)."
            )


def solve_eps_assignment(
    types: Sequence[TypeCounts],
    supply: Sequence[int],
    category: Sequence[int],
    lam: int,
    tau: int,
    hint: PlanLike | None = None,
    time_limit: float = 10.0,
    num_workers: int = 2,
    random_seed: int = 0,
    allow_extras: bool = True,
) -> EpsAssignment | None:
    """Solve the model of the module docstring; ``None`` when no stage found a solution.

    ``hint`` (e.g. :func:`republish.heuristics.eps_inclusion.greedy_plan`) warm-starts
    every stage; ``time_limit`` is shared by the four stages. ``allow_extras=False``
    fixes ``extra = 0``.
    """
    start = time.perf_counter()
    _check(types, supply, category, lam, tau, time_limit, num_workers)
    n = [int(s) for s in supply]
    values = range(len(n))
    total = sum(n)
    model = cp_model.CpModel()
    keep: list[Any] = []
    fill: list[dict[int, Any]] = []
    sub: list[dict[int, Any]] = []
    for t, kind in enumerate(types):
        m = kind.multiplicity
        if not kind.missing:
            keep.append(m)
            fill.append({})
            sub.append({})
            continue
        keep.append(model.new_int_var(0, m, f"keep[{t}]"))
        fill.append({v: model.new_int_var(0, min(m, n[v]), f"fill[{t},{v}]")
                     for v in sorted(kind.missing) if n[v] > 0})
        sub.append({w: model.new_int_var(0, min(m, n[w]), f"sub[{t},{w}]")
                    for w in values if n[w] > 0 and w not in kind.present})
        for var in [*fill[t].values(), *sub[t].values()]:
            model.add(var <= keep[t])
        model.add(sum(sub[t].values()) == len(kind.missing) * keep[t] - sum(fill[t].values()))
    extra = {v: model.new_int_var(0, n[v] if allow_extras else 0, f"extra[{v}]")
             for v in values if n[v] > 0}
    for v in extra:
        room = sum(keep[t] for t, kind in enumerate(types) if v not in kind.present)
        model.add(extra[v] + sum(sub[t][v] for t in range(len(types)) if v in sub[t]) <= room)
    most = total // (lam * tau)
    clusters = model.new_int_var(0, most, "N")
    y = {v: model.new_int_var(0, min(n[v], most), f"y[{v}]") for v in extra}
    for v in y:
        model.add(y[v] <= clusters)
    categories = sorted({int(category[v]) for v in y})
    z = {c: model.new_int_var(0, most, f"z[{c}]") for c in categories}
    mu = {v: model.new_int_var(0, min(n[v], most), f"mu[{v}]") for v in y}
    for c in categories:
        model.add(z[c] <= clusters)
        mine = [v for v in y if int(category[v]) == c]
        for v in mine:
            model.add(mu[v] <= y[v])
            model.add(mu[v] <= z[c])
        model.add(sum(mu[v] for v in mine) >= tau * z[c])
    model.add(sum(z.values()) >= lam * clusters)
    deferred = {v: model.new_int_var(0, n[v], f"d[{v}]") for v in extra}
    for v in extra:
        used = sum(fill[t][v] for t in range(len(types)) if v in fill[t])
        used += sum(sub[t][v] for t in range(len(types)) if v in sub[t])
        model.add(used + extra[v] + y[v] + deferred[v] == n[v])
    objectives = {
        "deferred": sum(deferred.values()) + sum(
            (kind.multiplicity - keep[t]) * kind.members for t, kind in enumerate(types)
        ),
        "substitutions": sum(
            len(kind.missing) * keep[t] - sum(fill[t].values()) for t, kind in enumerate(types)
        ),
        "extras": sum(extra.values()),
        "new clusters": -clusters,
    }

    variables = _variables(keep, fill, sub, extra, y, z, mu, deferred, clusters)
    solution: Any = None
    proven: dict[str, int] = {}
    if hint is not None:
        get = _hint_values(hint, types, category, tau, keep, fill, sub, extra, y, z, mu,
                           deferred, clusters)
        solution = {var.index: get(var) for var in variables}
        proven = _proven_by_bounds(hint, types, n, lam * tau)
    built = time.perf_counter()
    stages: dict[str, str] = {}
    bounds: dict[str, float] = {}
    for position, (name, expression) in enumerate(objectives.items()):
        if name in proven and not stages.get("solved"):
            # The hint meets a simple bound: this stage is optimal without a search.
            stages[name] = "OPTIMAL"
            bounds[name] = float(proven[name])
            model.add(expression <= proven[name])
            continue
        left = time_limit - (time.perf_counter() - built)
        model.minimize(expression)
        stage: Solved = solve_cp_sat(
            model, time_limit=max(left / (len(objectives) - position), 0.05),
            workers=num_workers, seed=random_seed,
            hint=None if solution is None else [(var, solution[var.index]) for var in variables])
        stages[name] = stage.status
        stages["solved"] = "yes"
        if not stage.found or stage.objective is None:
            if solution is None:
                return None
            break
        bounds[name] = stage.bound if stage.bound is not None else -math.inf
        model.add(expression <= int(round(stage.objective)))
        solution = {var.index: stage.int_value(var) for var in variables}
    stages.pop("solved", None)
    solved = time.perf_counter()

    def value(var: Any) -> int:
        return int(var) if isinstance(var, int) else int(solution[var.index])

    result_fills = tuple({v: value(x) for v, x in f.items() if value(x)} for f in fill)
    result_subs = tuple({w: value(x) for w, x in s.items() if value(x)} for s in sub)
    kept = tuple(value(k) for k in keep)
    objective = (
        sum(value(d) for d in deferred.values())
        + sum((kind.multiplicity - k) * kind.members for kind, k in zip(types, kept, strict=True)),
        sum(len(kind.missing) * k - sum(f.values())
            for kind, k, f in zip(types, kept, result_fills, strict=True)),
        sum(value(e) for e in extra.values()),
        value(clusters),
    )
    optimal = all(stages.get(name) == "OPTIMAL" for name in objectives)
    status = "OPTIMAL" if optimal else "FEASIBLE"
    cost = objective[0] + objective[1]
    # OPTIMAL is lexicographic (deferred rows, then substitutions, ...); otherwise the
    # deferred-rows bound is still a valid lower bound of deferred rows + substitutions.
    bound = float(cost) if optimal else (
        max(float(bounds["deferred"]), 0.0) if "deferred" in bounds else None)
    return EpsAssignment(
        kept=kept, fills=result_fills, substitutes=result_subs,
        extras={v: value(x) for v, x in extra.items() if value(x)},
        new_rows={v: value(x) for v, x in y.items() if value(x)},
        new_clusters=value(clusters),
        deferred={v: value(x) for v, x in deferred.items() if value(x)},
        objective=objective, status=status, stages=stages,
        certificate=certificate(
            STEP, status, float(cost), bound,
            times={"build": built - start, "solve": solved - built},
            detail=(f"{len(types)} cluster types, {total} new rows; stages "
                    + ", ".join(f"{k} {v}" for k, v in stages.items())
                    + f"; extras {objective[2]}, new clusters {objective[3]}"),
        ),
    )


def _proven_by_bounds(hint: PlanLike, types: Sequence[TypeCounts], supply: Sequence[int],
                      epsilon: int) -> dict[str, int]:
    """Stages whose optimum the hint meets by a simple bound (value of the stage).

    No deferral is optimal; then every cluster is kept, each value ``v`` misses in
    ``demand[v]`` clusters and at least ``Σ_v max(0, demand[v] − n[v])`` slots need a
    substitute; no extra is optimal; with no deferral the rows left for new clusters are
    fixed by the extras, so ``N <= ⌊left / ε⌋``.
    """
    proven: dict[str, int] = {}
    dropped = sum((t.multiplicity - k) * t.members for t, k in zip(types, hint.kept, strict=True))
    if dropped + sum(hint.deferred.values()):
        return proven
    proven["deferred"] = 0
    demand = [0] * len(supply)
    for t in types:
        for v in t.missing:
            demand[v] += t.multiplicity
    lower = sum(max(0, d - int(n)) for d, n in zip(demand, supply, strict=True))
    slots = sum(len(t.missing) * t.multiplicity for t in types)
    substitutions = slots - sum(sum(f.values()) for f in hint.fills)
    if substitutions != lower:
        return proven
    proven["substitutions"] = lower
    extras = sum(hint.extras.values())
    if extras:
        return proven
    proven["extras"] = 0
    if hint.new_clusters == (sum(int(n) for n in supply) - slots) // epsilon:
        proven["new clusters"] = -int(hint.new_clusters)
    return proven


def _variables(keep: list[Any], fill: list[dict[int, Any]], sub: list[dict[int, Any]],
               *groups: Any) -> list[Any]:
    out = [k for k in keep if not isinstance(k, int)]
    for part in (*fill, *sub):
        out.extend(part.values())
    for group in groups:
        out.extend(group.values() if isinstance(group, dict) else [group])
    return out


def _hint_values(hint: PlanLike, types: Sequence[TypeCounts], category: Sequence[int],
                 tau: int, keep: list[Any], fill: list[dict[int, Any]],
                 sub: list[dict[int, Any]], extra: dict[int, Any], y: dict[int, Any],
                 z: dict[int, Any], mu: dict[int, Any], deferred: dict[int, Any],
                 clusters: Any) -> Any:
    """Value of every variable in the plan ``hint`` (``z``/``μ`` derived from ``y``)."""
    known: dict[int, int] = {}
    for t in range(len(types)):
        if not isinstance(keep[t], int):
            known[keep[t].index] = int(hint.kept[t])
        for v, var in fill[t].items():
            known[var.index] = int(hint.fills[t].get(v, 0))
        for w, var in sub[t].items():
            known[var.index] = int(hint.substitutes[t].get(w, 0))
    for v in extra:
        known[extra[v].index] = int(hint.extras.get(v, 0))
        known[y[v].index] = int(hint.new_rows.get(v, 0))
        known[deferred[v].index] = int(hint.deferred.get(v, 0))
    known[clusters.index] = int(hint.new_clusters)
    for c in z:
        counts = [int(hint.new_rows.get(v, 0)) for v in y if int(category[v]) == c]
        low, high = 0, int(hint.new_clusters)
        while low < high:  # Σ min(count, z) − τz is concave and 0 at 0
            middle = (low + high + 1) // 2
            if sum(min(count, middle) for count in counts) >= tau * middle:
                low = middle
            else:
                high = middle - 1
        known[z[c].index] = low
        for v in y:
            if int(category[v]) == c:
                known[mu[v].index] = min(int(hint.new_rows.get(v, 0)), low)
    return lambda var: known[var.index]
