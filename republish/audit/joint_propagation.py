"""Sound propagation on the joint model (issue 20): values no possible world can give.

Two rules, run to a fixpoint on the domains ``D[c]`` (a boolean row of value codes per
cell) of a :class:`~republish.audit.joint_model.JointInstance`:

* **links** (vectorized over every pair of consecutive cells of a person): the later
  cell keeps the values reachable from some earlier value, the earlier one the values
  reaching some later value (the SUG pruning of the m-Distinct paper, §III, Definition 11,
  on every person at once);
* **groups** (matching / cardinality reasoning): a member may hold ``v`` only if the other
  members can still be matched to the remaining published values so that at least
  ``|members| - free`` members are matched (a b-matching of members to values with the
  published counts as capacities, augmenting paths). Groups in which every member may
  still take every published value are skipped: by symmetry nothing is pruned there.

Propagation removes only impossible values; whether every remaining value is possible is
decided by :mod:`republish.audit.joint` (witness worlds and CP-SAT).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from republish.audit.joint_model import JointGroup, JointInstance

__all__ = ["initial_domains", "max_matching", "propagate"]


def initial_domains(instance: JointInstance) -> np.ndarray:
    """``(cells, values)``: the values of a cell's group (every value when it has free
    members)."""
    counts = instance.group_counts() > 0
    free = np.array([g.free > 0 for g in instance.groups], dtype=bool)
    domains = counts[instance.cell_group].copy()
    domains[free[instance.cell_group]] = True
    return domains


def max_matching(domains: Sequence[np.ndarray], capacity: np.ndarray) -> int:
    """Largest number of members matched to values they may hold, value ``v`` at most
    ``capacity[v]`` times (augmenting paths; groups are small)."""
    owner: dict[int, list[int]] = {}
    matched = 0
    choices = [np.flatnonzero(d & (capacity > 0)).tolist() for d in domains]

    def augment(i: int, seen: set[int]) -> bool:
        for v in choices[i]:
            if v in seen:
                continue
            seen.add(v)
            holders = owner.setdefault(v, [])
            if len(holders) < capacity[v]:
                holders.append(i)
                return True
            for k, other in enumerate(holders):
                if augment(other, seen):
                    holders[k] = i
                    return True
        return False

    for i in range(len(domains)):
        if augment(i, set()):
            matched += 1
    return matched


def _group_support(group: JointGroup, domains: np.ndarray) -> np.ndarray:
    """Supported values of every member of ``group`` (rows in member order)."""
    members = list(group.members)
    capacity = np.array(group.counts, dtype=np.int64)
    need = len(members) - group.free
    rows = [domains[c] for c in members]
    out = np.zeros((len(members), len(capacity)), dtype=bool)
    for i, row in enumerate(rows):
        others = rows[:i] + rows[i + 1:]
        loose = group.free > 0 and max_matching(others, capacity) >= need
        if loose:
            out[i] = row
            continue
        for v in np.flatnonzero(row & (capacity > 0)).tolist():
            capacity[v] -= 1
            if max_matching(others, capacity) >= need - 1:
                out[i, v] = True
            capacity[v] += 1
    return out


def _propagate_links(instance: JointInstance, domains: np.ndarray, earlier: np.ndarray,
                     later: np.ndarray) -> np.ndarray:
    """Links to a fixpoint; returns the cells whose domain shrank."""
    reach = instance.reach.astype(np.int64)
    changed = np.zeros(len(domains), dtype=bool)
    if not len(earlier):
        return changed
    while True:
        # Each cell is the earlier end of at most one link and the later end of at most
        # one, so the fancy-indexed writes are intersections with the current domains.
        forward = (domains[earlier].astype(np.int64) @ reach) > 0
        new_later = domains[later] & forward
        shrink_later = (new_later != domains[later]).any(axis=1)
        domains[later] = new_later
        backward = (domains[later].astype(np.int64) @ reach.T) > 0
        new_earlier = domains[earlier] & backward
        shrink_earlier = (new_earlier != domains[earlier]).any(axis=1)
        domains[earlier] = new_earlier
        if not shrink_later.any() and not shrink_earlier.any():
            return changed
        changed[later[shrink_later]] = True
        changed[earlier[shrink_earlier]] = True


def propagate(instance: JointInstance, domains: np.ndarray,
              cells: np.ndarray | None = None) -> np.ndarray:
    """Prune ``domains`` in place to a fixpoint of both rules; returns it.

    ``cells`` restricts the work to those cells' links and groups (a component).
    """
    earlier, later = instance.links()
    groups = np.arange(len(instance.groups))
    if cells is not None:
        inside = np.zeros(instance.cells, dtype=bool)
        inside[cells] = True
        keep = inside[earlier]
        earlier, later = earlier[keep], later[keep]
        groups = np.unique(instance.cell_group[cells])
    counts = instance.group_counts() > 0
    free = np.array([g.free for g in instance.groups], dtype=np.int64)
    dirty = groups
    while True:
        # Skip groups where every member may still take every published value.
        member_cells = (np.flatnonzero(np.isin(instance.cell_group, dirty)) if len(dirty)
                        else np.zeros(0, dtype=np.int64))
        if len(member_cells):
            g_of = instance.cell_group[member_cells]
            lacking = (counts[g_of] & ~domains[member_cells]).any(axis=1) | (free[g_of] > 0)
            work = np.unique(g_of[lacking])
        else:
            work = np.zeros(0, dtype=np.int64)
        shrunk = np.zeros(len(domains), dtype=bool)
        for g in work.tolist():
            group = instance.groups[g]
            members = list(group.members)
            support = _group_support(group, domains)
            new = domains[members] & support
            diff = (new != domains[members]).any(axis=1)
            if diff.any():
                domains[members] = new
                shrunk[np.array(members)[diff]] = True
        shrunk |= _propagate_links(instance, domains, earlier, later)
        if not shrunk.any():
            return domains
        dirty = np.unique(instance.cell_group[shrunk])
