"""Records to m-Distinct bucket entries with the fewest counterfeits (CP-SAT), §V-B.

Records are grouped into classes ``c`` of equal value ``v_c`` and equal set ``O_c`` of
buckets they may join (Phase 2's rule), where ``FRESH`` stands for the first-release
(m-unique) path of new records. Symbols, after the paper: bucket ``B`` has entries
``e_1..e_s`` (value sets), ``δ_B`` rows per entry after balancing.

* ``n[c,o]`` records of class ``c`` join option ``o ∈ O_c``; ``Σ_o n[c,o] = |c|``;
* ``f[B,v] = Σ_{c: v_c = v} n[c,B]`` real rows of value ``v`` in ``B``;
* ``r[B,e,v]`` rows (real or counterfeit) of value ``v ∈ e`` in entry ``e``:
  ``Σ_v r[B,e,v] = δ_B`` (balanced), ``Σ_e r[B,e,v] <= δ_B`` (no value above ``δ_B``,
  so ``B`` splits into ``δ_B`` groups of distinct values) and ``Σ_e r[B,e,v] >= f[B,v]``
  (room for the real rows); ``B`` then needs ``s·δ_B - Σ_v f[B,v]`` counterfeits;
* the first-release pool holds ``p[l]`` records of eligibility label ``l`` (the value,
  or its CUS-overlap component under §IV-B) and needs ``K >= m·max_l p[l] - Σ_l p[l]``
  counterfeits to be m-eligible (Algorithm 1 of the m-eligibility paper's optimum).

Objective: total counterfeits. Secondary (lexicographic, second solve with the
counterfeits fixed at the first solve's value): ``Σ cost[c,o]·n[c,o]``, a generalization
proxy (distance of the class to the option's records). :func:`distribute_records` then
turns the counts into records with a min-cost flow on that distance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.sat.python import cp_model

from republish.certificate import Certificate
from republish.models.solve import certificate, check_solver_options, solve_cp_sat
from republish.parameters import validate_m

__all__ = ["FRESH", "STEP", "AssignmentCounts", "RecordClass", "distribute_records",
           "solve_assignment_counts"]

FRESH = -1
STEP = "m-distinct-assignment"


@dataclass(frozen=True)
class RecordClass:
    """Records of one value with the same options; ``label`` their eligibility label
    on the first-release path (only used when ``FRESH`` is an option)."""

    value: str
    options: tuple[int, ...]
    size: int
    label: str = ""


@dataclass(frozen=True)
class AssignmentCounts:
    """The model's answer: ``counts[(c, o)]`` records of class ``c`` to option ``o``,
    ``delta[b]``, counterfeits in buckets and on the first-release path.

    ``status`` is a solve status, or ``SKIPPED`` when the model was too large to build
    (its certificate then says ``HEURISTIC``: the caller's heuristic answers).
    """

    status: str
    counts: dict[tuple[int, int], int] = field(default_factory=dict)
    delta: dict[int, int] = field(default_factory=dict)
    bucket_counterfeits: int = 0
    fresh_counterfeits: int = 0
    bound: float | None = None
    secondary: float | None = None
    wall_time_s: float = 0.0
    variables: int = 0

    @property
    def objective(self) -> int:
        return self.bucket_counterfeits + self.fresh_counterfeits

    @property
    def found(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE")

    @property
    def certificate(self) -> Certificate:
        """Counterfeits (the primary objective), the proven bound and the wall time."""
        skipped = self.status == "SKIPPED"
        return certificate(
            STEP, "HEURISTIC" if skipped else self.status,
            self.objective if self.found else None, self.bound,
            times={"model": self.wall_time_s},
            detail=f"{self.variables} variables" + (" (model skipped)" if skipped else ""),
        )


def solve_assignment_counts(
    classes: Sequence[RecordClass],
    buckets: Sequence[Sequence[frozenset[str]]],
    m: int,
    *,
    hint: Mapping[tuple[int, int], int] | None = None,
    costs: Mapping[tuple[int, int], int] | None = None,
    time_limit: float = 10.0,
    num_workers: int = 1,
    random_seed: int = 0,
    max_variables: int = 60_000,
) -> AssignmentCounts:
    """Minimize counterfeits over the classes' choices (see the module docstring).

    Returns status ``SKIPPED`` without solving when the model would exceed
    ``max_variables`` integer variables.
    """
    m = validate_m(m)
    check_solver_options(time_limit, num_workers)
    start = time.perf_counter()
    used = sorted({o for c in classes for o in c.options if o != FRESH})
    variables = sum(len(c.options) for c in classes) + sum(
        1 + sum(len(e) for e in buckets[b]) for b in used
    )
    if variables > max_variables:
        return AssignmentCounts(status="SKIPPED", variables=variables,
                                wall_time_s=time.perf_counter() - start)
    model = cp_model.CpModel()
    n: dict[tuple[int, int], cp_model.IntVar] = {}
    for k, c in enumerate(classes):
        for o in c.options:
            n[k, o] = model.new_int_var(0, c.size, f"n[{k},{o}]")
        model.add(sum(n[k, o] for o in c.options) == c.size)
    delta: dict[int, cp_model.IntVar] = {}
    bucket_fakes = []
    for b in used:
        entries = [frozenset(e) for e in buckets[b]]
        members = [(k, c) for k, c in enumerate(classes) if b in c.options]
        most = sum(c.size for _, c in members)
        delta[b] = model.new_int_var(0, most, f"delta[{b}]")
        values = sorted(frozenset().union(*entries))
        r = {(e, v): model.new_int_var(0, most, f"r[{b},{e},{v}]")
             for e, entry in enumerate(entries) for v in sorted(entry)}
        for e, entry in enumerate(entries):
            model.add(sum(r[e, v] for v in entry) == delta[b])
        real_total = []
        for v in values:
            real = sum(n[k, b] for k, c in members if c.value == v)
            placed = sum(r[e, v] for e, entry in enumerate(entries) if v in entry)
            model.add(placed <= delta[b])
            model.add(placed >= real)
            real_total.append(real)
        bucket_fakes.append(len(entries) * delta[b] - sum(real_total))
    labels = sorted({c.label for c in classes if FRESH in c.options})
    pool = {label: sum(n[k, FRESH] for k, c in enumerate(classes)
                       if FRESH in c.options and c.label == label) for label in labels}
    fresh_fakes = model.new_int_var(0, m * sum(c.size for c in classes), "K")
    if labels:
        largest = model.new_int_var(0, max(c.size for c in classes) * len(classes), "F")
        model.add_max_equality(largest, [pool[label] for label in labels])
        model.add(fresh_fakes >= m * largest - sum(pool.values()))
    else:
        model.add(fresh_fakes == 0)
    total_fakes = sum(bucket_fakes) + fresh_fakes
    model.minimize(total_fakes)
    first = solve_cp_sat(
        model, time_limit=time_limit, workers=num_workers, seed=random_seed,
        hint=[(var, int(hint.get(key, 0))) for key, var in n.items()] if hint else None)
    if not first.found or first.objective is None:
        return AssignmentCounts(status=first.status, wall_time_s=time.perf_counter() - start,
                                variables=variables)
    bound = max(0.0, first.bound if first.bound is not None else 0.0)
    best = int(round(first.objective))
    values_of = {key: first.int_value(var) for key, var in n.items()}
    deltas = {b: first.int_value(var) for b, var in delta.items()}
    secondary = None
    if costs:
        # Lexicographic second criterion: keep the counterfeits, spread records less.
        model.add(total_fakes <= best)
        model.minimize(sum(int(costs.get(key, 0)) * var for key, var in n.items()))
        again = solve_cp_sat(model, time_limit=max(time_limit / 2, 0.1), workers=num_workers,
                             seed=random_seed,
                             hint=[(var, values_of[key]) for key, var in n.items()])
        if again.found and again.objective is not None:
            values_of = {key: again.int_value(var) for key, var in n.items()}
            deltas = {b: again.int_value(var) for b, var in delta.items()}
            secondary = again.objective
    fresh_used = {label: sum(values_of[k, FRESH] for k, c in enumerate(classes)
                             if FRESH in c.options and c.label == label) for label in labels}
    fresh = max(0, m * max(fresh_used.values(), default=0) - sum(fresh_used.values()))
    return AssignmentCounts(
        status=first.status,
        counts={key: v for key, v in values_of.items() if v},
        delta=deltas,
        bucket_counterfeits=best - fresh,
        fresh_counterfeits=fresh,
        bound=bound,
        secondary=secondary,
        wall_time_s=time.perf_counter() - start,
        variables=variables,
    )


def distribute_records(
    class_of: np.ndarray,
    counts: Mapping[tuple[int, int], int],
    cost: Callable[[np.ndarray, Sequence[int]], np.ndarray],
) -> np.ndarray:
    """Concrete records for the counts: a min-cost flow per class.

    ``class_of[i]`` is record ``i``'s class; ``cost(rows, options)`` the
    ``(len(rows), len(options))`` cost of those records taking those options (a
    generalization proxy). Returns the option of every record.
    """
    chosen = np.full(len(class_of), FRESH - 1, dtype=np.int64)
    for k in np.unique(class_of).tolist():
        rows = np.flatnonzero(class_of == k)
        options = sorted(o for (c, o), v in counts.items() if c == k and v > 0)
        if len(options) == 1:
            chosen[rows] = options[0]
            continue
        matrix = np.round(np.asarray(cost(rows, options), dtype=np.float64) * 1000)
        flow = min_cost_flow.SimpleMinCostFlow()
        sink = len(rows) + len(options)
        tails = np.concatenate([np.tile(np.arange(len(rows)), len(options)),
                                len(rows) + np.arange(len(options))])
        heads = np.concatenate([np.repeat(len(rows) + np.arange(len(options)), len(rows)),
                                np.full(len(options), sink)])
        capacities = np.concatenate([np.ones(len(rows) * len(options), dtype=np.int64),
                                     np.array([counts[k, o] for o in options], dtype=np.int64)])
        unit = np.concatenate([matrix.T.reshape(-1).astype(np.int64),
                               np.zeros(len(options), dtype=np.int64)])
        arcs = flow.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, unit)
        flow.set_nodes_supplies(np.arange(len(rows)), np.ones(len(rows), dtype=np.int64))
        flow.set_node_supply(sink, -len(rows))
        if flow.solve() != flow.OPTIMAL:  # pragma: no cover - counts sum to the class size
            raise RuntimeError("the counts do not match the class sizes.")
        used = (flow.flows(arcs) > 0) & (heads < sink)
        chosen[rows[tails[used]]] = np.array(options)[heads[used] - len(rows)]
    return chosen
