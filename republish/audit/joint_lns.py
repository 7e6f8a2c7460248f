"""Covering a large component of the joint model by neighbourhood solves (issue 20).

Whole-component CP-SAT solves (:mod:`republish.audit.joint`) are slow on components of
tens of thousands of person-releases without value symmetries (m-Distinct on Adult).
Large-neighbourhood search around a known world ``w`` (the true values): pick a value not
yet covered, take the person-group neighbourhood of its cell (breadth first, a few hundred
cells), fix every other cell to ``w`` and ask CP-SAT for a world of the neighbourhood that
gives the value and as many other uncovered values as it can. A solution joined with
``w`` outside is a world of the whole component (every constraint touching the
neighbourhood is in the small model, the others keep their values in ``w``), so every
value it gives is possible. A value no neighbourhood gives is left to the whole-component
proof. This only *covers* values; it never removes one.
"""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

from republish.audit.joint_model import JointInstance

__all__ = ["lns_cover"]

#: Cells of a neighbourhood, CP-SAT seconds per neighbourhood solve.
NEIGHBOURHOOD = 300
SOLVE_LIMIT = 2.0


def _known_world(instance: JointInstance, cells: np.ndarray) -> np.ndarray | None:
    """The true values when they form a world of the component."""
    truth = instance.truth
    if truth is None or (truth[cells] < 0).any():
        return None
    earlier, later = instance.links()
    inside = np.zeros(instance.cells, dtype=bool)
    inside[cells] = True
    keep = inside[earlier]
    if not instance.reach[truth[earlier[keep]], truth[later[keep]]].all():
        return None
    for g in np.unique(instance.cell_group[cells]).tolist():
        group = instance.groups[g]
        held = np.bincount(truth[list(group.members)], minlength=len(instance.values))
        if int(np.minimum(held, np.array(group.counts)).sum()) < len(group.members) - group.free:
            return None
    return truth.copy()


def _neighbourhood(instance: JointInstance, start: int, size: int,
                   person_cells: list[np.ndarray]) -> np.ndarray:
    """Breadth-first cells around ``start`` through groups and persons."""
    seen = {start}
    frontier = [start]
    while frontier and len(seen) < size:
        nxt = []
        for c in frontier:
            for d in (*instance.groups[int(instance.cell_group[c])].members,
                      *person_cells[int(instance.cell_person[c])].tolist()):
                if d not in seen:
                    seen.add(d)
                    nxt.append(d)
        frontier = nxt
    return np.array(sorted(seen), dtype=np.int64)


def lns_cover(instance: JointInstance, cells: np.ndarray, domains: np.ndarray,
              covered: np.ndarray, deadline: float, workers: int, seed: int,
              symmetry: list[np.ndarray]) -> int:
    """Cover values of the component ``cells`` by neighbourhood solves until none is
    left, the deadline passes, or every uncovered value failed once; returns the solves."""
    from republish.audit.joint import _cover_orbit, _solver, component_model

    world = _known_world(instance, cells)
    if world is None:
        return 0
    order = np.argsort(instance.cell_person, kind="stable")
    bounds = np.searchsorted(instance.cell_person[order], np.arange(len(instance.persons) + 1))
    person_cells = [order[bounds[p]:bounds[p + 1]] for p in range(len(instance.persons))]
    earlier, later = instance.links()
    rng = np.random.default_rng(seed)
    failed = np.zeros_like(covered)
    calls = 0
    while time.perf_counter() < deadline:
        open_mask = domains[cells] & ~covered[cells] & ~failed[cells]
        rows, values = np.nonzero(open_mask)
        if not len(rows):
            return calls
        pick = int(rng.integers(len(rows)))
        target, value = int(cells[rows[pick]]), int(values[pick])
        hood = _neighbourhood(instance, target, NEIGHBOURHOOD, person_cells)
        inside = np.zeros(instance.cells, dtype=bool)
        inside[hood] = True
        groups = np.unique(instance.cell_group[hood])
        touching = (inside[earlier] | inside[later])
        link_a, link_b = earlier[touching], later[touching]
        members = np.concatenate([np.array(instance.groups[g].members, dtype=np.int64)
                                  for g in groups.tolist()])
        model_cells = np.unique(np.concatenate([hood, members, link_a, link_b]))
        fixed = model_cells[~inside[model_cells]]  # outside: their value in the world
        saved = domains[fixed].copy()
        domains[fixed] = False
        domains[fixed, world[fixed]] = True
        try:
            model, x = component_model(instance, model_cells, domains, (link_a, link_b),
                                       groups)
        finally:
            domains[fixed] = saved
        if (target, value) not in x:
            failed[target, value] = True
            continue
        model.add(x[target, value] == 1)
        wanted = [var for (c, v), var in x.items()
                  if inside[c] and domains[c, v] and not covered[c, v]]
        model.maximize(sum(wanted))
        for (c, v), var in x.items():
            model.add_hint(var, int(world[c] == v))
        solver = _solver(min(SOLVE_LIMIT, max(deadline - time.perf_counter(), 1e-3)),
                         workers, seed + calls)
        status = solver.solve(model)
        calls += 1
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            failed[target, value] = True
            continue
        for (c, v), var in x.items():
            if inside[c] and solver.boolean_value(var):
                world[c] = v
        _cover_orbit(world, cells, symmetry, covered)
    return calls
