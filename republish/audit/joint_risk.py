"""Exact joint risk on small components: every possible world, counted (issue 20).

Definition 14 of the m-invariance paper measures a tuple's risk as the share of the
adversary's reasonable reconstructions that give its true value. Extended to the joint
adversary of :mod:`republish.audit.joint_model`, every *possible world* (one value per
cell meeting every group and link constraint) is equally likely, and the risk of a cell is
the share of worlds giving its true value. Worlds are enumerated person by person (each
person's chain of values along the links, groups checked as members are assigned), so
the enumeration is independent of the propagation and CP-SAT code of
:mod:`republish.audit.joint`; the tests use it as the oracle of the possible sets.

The per-record figure the audits gave before (the SUG of the m-Distinct paper, §III, and
the intersection attack for one record) is, under the same uniform model, one over the
size of the record's own feasible layer: :func:`per_record_sets` computes those layers
(each record alone, its groups' published values and its links only).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from republish.audit.joint_model import JointInstance
from republish.audit.joint_propagation import initial_domains
from republish.errors import ParameterError

__all__ = ["JointRisk", "enumerate_worlds", "joint_risk", "per_record_sets"]


def _chains(instance: JointInstance, cells: list[int], domains: np.ndarray
            ) -> list[tuple[int, ...]]:
    options = [np.flatnonzero(domains[c]).tolist() for c in cells]
    return [chain for chain in itertools.product(*options)
            if all(instance.reach[a, b] for a, b in zip(chain, chain[1:], strict=False))]


def enumerate_worlds(instance: JointInstance, cells: np.ndarray | None = None,
                     limit: int = 1_000_000) -> Iterator[np.ndarray]:
    """Every possible world restricted to ``cells`` (a union of components; default all),
    as an array over all cells (-1 outside). Raises after ``limit`` worlds."""
    chosen = np.arange(instance.cells) if cells is None else np.sort(np.asarray(cells))
    domains = initial_domains(instance)
    persons = list(dict.fromkeys(instance.cell_person[chosen].tolist()))
    person_cells = [chosen[instance.cell_person[chosen] == p].tolist() for p in persons]
    chains = [_chains(instance, c, domains) for c in person_cells]
    values = np.full(instance.cells, -1, dtype=np.int64)
    held = {g: np.zeros(len(instance.values), dtype=np.int64)
            for g in np.unique(instance.cell_group[chosen]).tolist()}
    assigned = dict.fromkeys(held, 0)
    counts = {g: np.array(instance.groups[g].counts) for g in held}
    found = 0

    def fits(g: int) -> bool:
        matched = int(np.minimum(held[g], counts[g]).sum())
        return matched >= assigned[g] - instance.groups[g].free

    def walk(k: int) -> Iterator[np.ndarray]:
        nonlocal found
        if k == len(persons):
            found += 1
            if found > limit:
                raise ParameterError(f"more than {limit} possible worlds; the component is "
                                     "too large to enumerate.")
            yield values.copy()
            return
        for chain in chains[k]:
            ok = True
            touched = []
            for c, v in zip(person_cells[k], chain, strict=True):
                g = int(instance.cell_group[c])
                held[g][v] += 1
                assigned[g] += 1
                touched.append((c, g, v))
                values[c] = v
                ok = ok and fits(g)
            if ok:
                yield from walk(k + 1)
            for c, g, v in touched:
                held[g][v] -= 1
                assigned[g] -= 1
                values[c] = -1

    yield from walk(0)


def per_record_sets(instance: JointInstance) -> np.ndarray:
    """Each record alone: the values of its groups kept along its links (its SUG's
    feasible layers, Definition 11 of the m-Distinct paper; the intersection of its
    candidate sets for m-invariance, Lemma 1)."""
    domains = initial_domains(instance)
    earlier, later = instance.links()
    reach = instance.reach.astype(np.int64)
    while len(earlier):
        new_later = domains[later] & ((domains[earlier].astype(np.int64) @ reach) > 0)
        same = bool((new_later == domains[later]).all())
        domains[later] = new_later
        new_earlier = domains[earlier] & ((domains[later].astype(np.int64) @ reach.T) > 0)
        same = same and bool((new_earlier == domains[earlier]).all())
        domains[earlier] = new_earlier
        if same:
            break
    return domains


@dataclass(frozen=True, eq=False)
class JointRisk:
    """Worlds counted on the components small enough: ``counts[c, v]`` worlds give cell
    ``c`` value ``v``; ``worlds[c]`` is the number of worlds of its component (0 when the
    component was not enumerated)."""

    instance: JointInstance
    counts: np.ndarray
    worlds: np.ndarray
    per_record: np.ndarray

    @property
    def computed(self) -> np.ndarray:
        return self.worlds > 0

    def risks(self) -> np.ndarray:
        """Probability of the true value of every computed cell (NaN elsewhere)."""
        truth = self.instance.truth
        out = np.full(self.instance.cells, np.nan)
        if truth is None:
            return out
        ok = self.computed & (truth >= 0)
        idx = np.flatnonzero(ok)
        out[idx] = self.counts[idx, truth[idx]] / self.worlds[idx]
        return out

    def per_record_risks(self) -> np.ndarray:
        """One over the size of each record's own feasible layer (uniform per record)."""
        sizes = self.per_record.sum(axis=1)
        return np.where(sizes > 0, 1.0 / np.maximum(sizes, 1), np.nan)

    def to_dict(self) -> dict[str, Any]:
        risks = self.risks()
        computed = self.computed
        joint = risks[computed & ~np.isnan(risks)]
        record = self.per_record_risks()[computed & ~np.isnan(risks)]
        return {
            "cells_computed": int(computed.sum()),
            "max_risk": None if not len(joint) else float(joint.max()),
            "mean_risk": None if not len(joint) else float(joint.mean()),
            "max_per_record_risk": None if not len(record) else float(record.max()),
            "mean_per_record_risk": None if not len(record) else float(record.mean()),
            "cells_riskier_than_per_record": int((joint > record + 1e-12).sum()),
        }


def joint_risk(instance: JointInstance, max_cells: int = 40,
               max_worlds: int = 200_000) -> JointRisk:
    """Count the worlds of every component of at most ``max_cells`` cells (components
    with more than ``max_worlds`` worlds are skipped)."""
    if max_cells < 1 or max_worlds < 1:
        raise ParameterError("max_cells and max_worlds must be positive.")
    counts = np.zeros((instance.cells, len(instance.values)), dtype=np.int64)
    worlds = np.zeros(instance.cells, dtype=np.int64)
    for part in instance.components():
        if len(part) > max_cells:
            continue
        local = np.zeros_like(counts[part])
        total = 0
        try:
            for world in enumerate_worlds(instance, part, limit=max_worlds):
                local[np.arange(len(part)), world[part]] += 1
                total += 1
        except ParameterError:
            continue
        counts[part] = local
        worlds[part] = total
    return JointRisk(instance=instance, counts=counts, worlds=worlds,
                     per_record=per_record_sets(instance))
