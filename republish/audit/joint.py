"""The joint audit: the exact set of values still possible for every person and release.

Issue 20. The adversary of :mod:`republish.audit.joint_model` reasons about everybody at
once; a value is *possible* for a cell when some possible world gives it. Per connected
component of the person-group graph:

1. propagation (:mod:`republish.audit.joint_propagation`) removes values no world gives;
2. witness worlds cover values that are possible: the true values (the publisher's audit),
   then worlds found by CP-SAT, each maximizing the number of still-uncovered
   (cell, value) pairs it gives, under the constraint that it gives at least one;
3. when CP-SAT proves that no world gives any uncovered pair, they are all impossible and
   every possible set of the component is exact.

A cell is *decided* when every value left in its domain is covered by a witness; a person
is *fully checked* when all their cells are. Within the time limit undecided cells keep
their propagated domain (a superset of the possible set, so a flag is never missed for a
decided cell and never invented for an undecided one). A set smaller than ``m`` is
flagged; a set of size 1 is a *forced* value (the m-invariance paper's Lemma 1 for one
record, here for the joint adversary). Lemmas 1 and 3 of the m-invariance paper say an
m-invariant sequence leaves every person their whole signature, so it is never flagged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from republish.audit.joint_model import JointInstance
from republish.audit.joint_propagation import initial_domains, propagate
from republish.errors import ParameterError

__all__ = ["JointAudit", "component_model", "joint_audit"]

#: CP-SAT time limit of one covering call, at most (seconds).
CALL_LIMIT = 60.0
#: Components above this many cells are first covered by neighbourhood solves.
LNS_CELLS = 2_000


@dataclass(frozen=True, eq=False)
class JointAudit:
    """Possible sets of every cell of ``instance`` (rows of ``possible``, value codes)."""

    instance: JointInstance
    possible: np.ndarray
    decided: np.ndarray
    m: int | None
    components: int
    complete_components: int
    cp_sat_calls: int
    wall_time_s: float
    time_limit: float
    audited: np.ndarray | None = None

    @property
    def sizes(self) -> np.ndarray:
        return self.possible.sum(axis=1)

    @property
    def flagged(self) -> np.ndarray:
        """Cells whose possible set is smaller than ``m`` (forced values included). An
        undecided cell counts when even its propagated domain, a superset, is too small."""
        limit = self.m if self.m is not None else 2
        audited = self.audited if self.audited is not None else True
        return audited & (self.sizes < limit)

    @property
    def forced(self) -> np.ndarray:
        return self.decided & (self.sizes == 1)

    @property
    def inconsistent(self) -> np.ndarray:
        """Cells without any possible value: the releases contradict themselves."""
        audited = self.audited if self.audited is not None else True
        return audited & (self.sizes == 0)

    @property
    def complete(self) -> bool:
        audited = self.audited if self.audited is not None else True
        return bool((self.decided | ~audited).all())

    def checked_share(self) -> float:
        """Share of the audited people all of whose cells are decided."""
        audited = self.audited if self.audited is not None else np.ones_like(self.decided)
        persons = np.unique(self.instance.cell_person[audited])
        if len(persons) == 0:
            return 1.0
        undecided = np.unique(self.instance.cell_person[audited & ~self.decided])
        return 1.0 - len(undecided) / len(persons)

    def cell_rows(self, mask: np.ndarray) -> list[dict[str, Any]]:
        inst = self.instance
        return [{"id": inst.persons[inst.cell_person[c]], "release": int(inst.cell_release[c]),
                 "possible": [inst.values[v] for v in np.flatnonzero(self.possible[c])]}
                for c in np.flatnonzero(mask).tolist()]

    def flagged_ids(self) -> list[str]:
        inst = self.instance
        return sorted({inst.persons[p] for p in inst.cell_person[self.flagged].tolist()})

    def possible_set(self, person: str, release: int) -> frozenset[str]:
        inst = self.instance
        where = np.flatnonzero((np.asarray(inst.persons, dtype=object)[inst.cell_person]
                                == person) & (inst.cell_release == release))
        if not len(where):
            raise ParameterError(f"{person!r} has no row in release {release}.")
        return frozenset(inst.values[v] for v in np.flatnonzero(self.possible[where[0]]))

    def size_distribution(self) -> dict[int, int]:
        sizes, counts = np.unique(self.sizes, return_counts=True)
        return {int(s): int(c) for s, c in zip(sizes, counts, strict=True)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "principle": self.instance.principle,
            "m": self.m,
            "people": len(self.instance.persons),
            "cells": self.instance.cells,
            "flagged": int(self.flagged.sum()),
            "flagged_ids": self.flagged_ids(),
            "forced": int(self.forced.sum()),
            "flagged_cells": self.cell_rows(self.flagged),
            "inconsistent": int(self.inconsistent.sum()),
            "possible_sizes": {str(k): v for k, v in self.size_distribution().items()},
            "complete": self.complete,
            "checked_share": self.checked_share(),
            "components": self.components,
            "complete_components": self.complete_components,
            "cp_sat_calls": self.cp_sat_calls,
            "wall_time_s": self.wall_time_s,
            "time_limit": self.time_limit,
        }


def component_model(instance: JointInstance, cells: np.ndarray, domains: np.ndarray,
                    links: tuple[np.ndarray, np.ndarray] | None = None,
                    groups: np.ndarray | None = None,
                    ) -> tuple[cp_model.CpModel, dict[tuple[int, int], cp_model.IntVar]]:
    """CP-SAT model of the worlds of one component: ``x[c, v]`` for ``v`` in ``D[c]``
    (``links``: the component's (earlier, later) cell pairs, found when omitted;
    ``groups``: the groups constrained, default those of ``cells``, whose members must
    all be in ``cells``)."""
    model = cp_model.CpModel()
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    for c in cells.tolist():
        literals = []
        for v in np.flatnonzero(domains[c]).tolist():
            x[c, v] = model.new_bool_var(f"x{c}_{v}")
            literals.append(x[c, v])
        model.add_exactly_one(literals)
    earlier, later = links if links is not None else _links_within(instance, cells)
    for a, b in zip(earlier.tolist(), later.tolist(), strict=True):
        for u in np.flatnonzero(domains[b]).tolist():
            sources = [x[a, v] for v in np.flatnonzero(domains[a] & instance.reach[:, u])]
            model.add_bool_or(sources).only_enforce_if(x[b, u])
    chosen = np.unique(instance.cell_group[cells]) if groups is None else groups
    for g in chosen.tolist():
        group = instance.groups[g]
        members = list(group.members)
        need = len(members) - group.free
        matched = []
        for v, capacity in enumerate(group.counts):
            holders = [x[c, v] for c in members if (c, v) in x]
            if not holders:
                continue
            if group.free == 0:
                if capacity < len(holders):
                    model.add(sum(holders) <= capacity)
            elif capacity > 0:
                y = model.new_int_var(0, min(capacity, len(holders)), f"y{g}_{v}")
                model.add(y <= sum(holders))
                matched.append(y)
        if group.free > 0 and need > 0:
            model.add(sum(matched) >= need)
    return model, x


def _links_within(instance: JointInstance, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inside = np.zeros(instance.cells, dtype=bool)
    inside[cells] = True
    earlier, later = instance.links()
    keep = inside[earlier]
    return earlier[keep], later[keep]


def _solver(time_limit: float, workers: int, seed: int) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit, 1e-3)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.log_search_progress = False
    return solver


def _cover(instance: JointInstance, cells: np.ndarray, domains: np.ndarray,
           covered: np.ndarray, deadline: float, workers: int, seed: int,
           links: tuple[np.ndarray, np.ndarray], symmetry: list[np.ndarray]
           ) -> tuple[bool, int]:
    """Decide one component: witness worlds until CP-SAT proves nothing else is possible.
    Returns (complete, CP-SAT calls)."""
    calls = 0
    if not (domains[cells] & ~covered[cells]).any():
        return True, calls
    if deadline - time.perf_counter() <= 0:  # not even the model is built
        return False, calls
    if len(cells) > LNS_CELLS and covered[cells].any():
        # Large component: cover values by neighbourhood solves around a known world.
        from republish.audit.joint_lns import lns_cover

        calls += lns_cover(instance, cells, domains, covered, deadline, workers, seed,
                           symmetry)
        if not (domains[cells] & ~covered[cells]).any():
            return True, calls
        if deadline - time.perf_counter() <= 0:
            return False, calls
    base, x = component_model(instance, cells, domains, links)
    hint: dict[tuple[int, int], int] | None = None
    while True:
        open_pairs = [(c, v) for c in cells.tolist()
                      for v in np.flatnonzero(domains[c] & ~covered[c]).tolist()]
        if not open_pairs:
            return True, calls
        left = deadline - time.perf_counter()
        if left <= 0:
            return False, calls
        model = base.clone()
        first = not covered[cells].any()
        if not first:  # a world giving as many uncovered values as it can, at least one
            literals = [model.get_bool_var_from_proto_index(x[p].index) for p in open_pairs]
            model.add_bool_or(literals)
            model.maximize(sum(literals))
        # else any world (pure feasibility): the symmetries then cover its orbit
        if hint is not None:
            for key, value in hint.items():
                model.add_hint(model.get_bool_var_from_proto_index(x[key].index), value)
        solver = _solver(min(left, CALL_LIMIT), workers, seed + calls)
        status = solver.solve(model)
        calls += 1
        if status == cp_model.INFEASIBLE:
            if first:  # no world at all: the releases contradict the knowledge
                domains[cells] = False
                return True, calls
            for c, v in open_pairs:
                domains[c, v] = False
            return True, calls
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return False, calls
        hint = {key: int(solver.boolean_value(var)) for key, var in x.items()}
        world = np.full(instance.cells, -1, dtype=np.int64)
        for (c, v), value in hint.items():
            if value:
                world[c] = v
        _cover_orbit(world, cells, symmetry, covered)


def _symmetries(instance: JointInstance, cells: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """Value permutations mapping every world of the component to a world: rotations
    within classes of values whose count columns agree in every group of the component
    (each group's published counts are kept), when they respect the links (``reach``)."""
    groups = np.unique(instance.cell_group[cells])
    columns = counts[groups].T  # (values, groups)
    used = np.flatnonzero(columns.any(axis=1))
    classes: dict[bytes, list[int]] = {}
    for v in used.tolist():
        classes.setdefault(columns[v].tobytes(), []).append(v)
    sizes = [len(c) for c in classes.values() if len(c) > 1]
    out = []
    for power in range(1, max(sizes, default=1)):
        permutation = np.arange(len(instance.values))
        for members in classes.values():
            if len(members) > 1:
                permutation[members] = np.roll(members, -(power % len(members)))
        reach = instance.reach
        if (reach[np.ix_(permutation, permutation)] == reach).all():
            out.append(permutation)
    return out


def _cover_orbit(world: np.ndarray, cells: np.ndarray, symmetry: list[np.ndarray],
                 covered: np.ndarray) -> None:
    """Cover a world of the component and its images under the symmetries."""
    values = world[cells]
    covered[cells, values] = True
    for permutation in symmetry:
        covered[cells, permutation[values]] = True


def _truth_witness(instance: JointInstance, cells: np.ndarray, domains: np.ndarray,
                   covered: np.ndarray, links: tuple[np.ndarray, np.ndarray],
                   symmetry: list[np.ndarray], counts: np.ndarray) -> None:
    """Cover the true values of a component (and their orbit) when they form a world."""
    truth = instance.truth
    if truth is None or (truth[cells] < 0).any():
        return
    if not domains[cells, truth[cells]].all():
        return
    earlier, later = links
    if not instance.reach[truth[earlier], truth[later]].all():
        return
    groups = instance.cell_group[cells]
    held = np.zeros((len(instance.groups), len(instance.values)), dtype=np.int64)
    np.add.at(held, (groups, truth[cells]), 1)
    unique = np.unique(groups)
    matched = np.minimum(held[unique], counts[unique]).sum(axis=1)
    sizes = np.array([len(instance.groups[g].members) - instance.groups[g].free
                      for g in unique.tolist()])
    if (matched < sizes).any():
        return
    _cover_orbit(truth, cells, symmetry, covered)


def joint_audit(
    instance: JointInstance,
    m: int | None = None,
    time_limit: float = 300.0,
    workers: int = 1,
    seed: int = 0,
    cells: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> JointAudit:
    """Possible sets of every cell (or of the components holding ``cells``).

    ``m`` flags sets smaller than ``m`` (default 2: forced values only); ``time_limit``
    bounds the whole audit (seconds), ``workers`` and ``seed`` are CP-SAT's;
    ``progress`` is called with (components done, components).
    """
    if m is not None and (not isinstance(m, int) or m < 1):
        raise ParameterError(f"m={m!r}: give a positive integer.")
    if not time_limit > 0:
        raise ParameterError(f"time_limit={time_limit!r}: give a positive number of seconds.")
    if not isinstance(workers, int) or workers < 1:
        raise ParameterError(f"workers={workers!r}: give a positive integer.")
    start = time.perf_counter()
    deadline = start + time_limit
    domains = initial_domains(instance)
    components = instance.components()
    if cells is not None:
        touched = np.zeros(instance.cells, dtype=bool)
        touched[np.asarray(cells, dtype=np.int64)] = True
        components = [part for part in components if touched[part].any()]
    active = np.zeros(instance.cells, dtype=bool)
    for part in components:
        active[part] = True
    propagate(instance, domains, np.flatnonzero(active) if cells is not None else None)
    covered = np.zeros_like(domains)
    calls = complete = 0
    counts = instance.group_counts()
    label = np.full(instance.cells, -1, dtype=np.int64)
    for k, part in enumerate(components):
        label[part] = k
    earlier, later = instance.links()
    by_component = label[earlier]
    order = np.argsort(by_component, kind="stable")
    starts = np.searchsorted(by_component[order], np.arange(len(components) + 1))
    # Small components first: the share of people checked grows fastest.
    for done_count, k in enumerate(sorted(range(len(components)),
                                          key=lambda i: len(components[i]))):
        part = components[k]
        chosen = order[starts[k]:starts[k + 1]]
        links = (earlier[chosen], later[chosen])
        symmetry = _symmetries(instance, part, counts)
        _truth_witness(instance, part, domains, covered, links, symmetry, counts)
        done, used = _cover(instance, part, domains, covered, deadline, workers, seed, links,
                            symmetry)
        calls += used
        complete += int(done)
        if progress is not None:
            progress(done_count + 1, len(components))
    decided = ~(domains & ~covered).any(axis=1) & active
    possible = np.where(decided[:, None], domains & covered, domains)
    return JointAudit(
        instance=instance, possible=possible, decided=decided, m=m, audited=active,
        components=len(components), complete_components=complete, cp_sat_calls=calls,
        wall_time_s=time.perf_counter() - start, time_limit=time_limit,
    )
