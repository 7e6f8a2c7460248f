"""The joint adversary's constraint model of a release sequence (issue 20).

The per-record audits (the intersection attack, Lemma 1 of the m-invariance paper; the SUG
of the m-Distinct paper, §III) look at one record at a time. The joint adversary knows
every person's group in every release containing them (the publisher's worst case, as in
the m-Distinct paper's examples), the published multiset of every group, ``R(j)`` (or
``S(j)`` for ε-inclusion) and the public rule linking a person's values across releases.
A *possible world* (Definition 14 of the m-Distinct paper, extended from one record to all
of them) gives every *cell* -- a person present in a release -- one sensitive value so that

* **groups**: in each group the members' values, except at most ``free`` of them, form a
  sub-multiset of the group's published values. ``free`` is 0 for counterfeit
  publications (m-invariance, m-Distinct: the published multiset is the members' values
  plus ``R(j)[g]`` counterfeits, so exactly ``|published| - R(j)[g]`` members) and
  ``S(j)[g]`` for ε-inclusion (Definition 5: substituted members publish another value);
* **links**: consecutive cells of a person (across gaps too) hold values ``a`` then ``b``
  with ``b`` reachable from ``a``: ``b = a`` for m-invariance and ε-inclusion, ``b ∈
  CUS(a)`` for m-Distinct (Definition 12, reachability in the transition graph).

:class:`JointInstance` holds this model on value codes; :func:`joint_instance` builds it
from :class:`~republish.release.Release` objects (their private assignments give the
groups). Sound propagation is :mod:`republish.audit.joint_propagation`, the exact possible
sets :mod:`republish.audit.joint`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import InputError, ParameterError
from republish.release import COUNT, GROUP, Release
from republish.transitions import TransitionModel

__all__ = ["JOINT_PRINCIPLES", "JointGroup", "JointInstance", "component_labels",
           "joint_instance"]


def component_labels(size: int, tails: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """A label per node of the undirected graph on ``size`` nodes with edges ``tails[e]``
    -- ``heads[e]``: equal exactly within a connected component. Hooking and pointer
    jumping (Shiloach & Vishkin, *An O(log n) parallel connectivity algorithm*, J.
    Algorithms 3, 1982) in numpy: no scipy, which the product does not depend on."""
    label = np.arange(size, dtype=np.int64)
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    while True:
        low = np.minimum(label[tails], label[heads])
        hooked = label.copy()
        for ends in (tails, heads, label[tails], label[heads]):
            np.minimum.at(hooked, ends, low)
        while True:  # every node points to its root
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, label):
            return label
        label = hooked

JOINT_PRINCIPLES = ("m-invariance", "m-distinct", "eps-inclusion")


@dataclass(frozen=True)
class JointGroup:
    """One published group: its release number, label, member cells, the count of every
    value code in its published multiset, and how many members may be ``free``."""

    release: int
    label: str
    members: tuple[int, ...]
    counts: tuple[int, ...]
    free: int = 0


@dataclass(frozen=True, eq=False)
class JointInstance:
    """Every possible world of a release sequence as a constraint model.

    ``cell_person[c]``, ``cell_release[c]`` and ``cell_group[c]`` say whose value cell
    ``c`` is, in which release and group; cells of one person are sorted by release.
    ``reach[a, b]`` is True when a value ``a`` may be followed by ``b`` in a later
    release. ``truth[c]`` is the true value code (``-1`` unknown) when the publisher audits.
    """

    principle: str
    values: tuple[str, ...]
    persons: tuple[str, ...]
    cell_person: np.ndarray
    cell_release: np.ndarray
    cell_group: np.ndarray
    groups: tuple[JointGroup, ...]
    reach: np.ndarray
    truth: np.ndarray | None = None

    @property
    def cells(self) -> int:
        return len(self.cell_person)

    def links(self) -> tuple[np.ndarray, np.ndarray]:
        """(earlier cell, later cell) for consecutive cells of every person."""
        same = self.cell_person[1:] == self.cell_person[:-1]
        first = np.flatnonzero(same)
        return first, first + 1

    def group_counts(self) -> np.ndarray:
        """``(groups, values)`` published counts."""
        return np.array([g.counts for g in self.groups], dtype=np.int64).reshape(
            len(self.groups), len(self.values))

    def components(self) -> list[np.ndarray]:
        """Cells of every connected component of the person-group graph (largest first)."""
        n = self.cells
        if n == 0:
            return []
        persons = len(self.persons)
        rows = np.concatenate([np.arange(n), np.arange(n)])
        cols = np.concatenate([n + self.cell_person, n + persons + self.cell_group])
        size = n + persons + len(self.groups)
        cells = component_labels(size, rows, cols)[:n]
        order = np.argsort(cells, kind="stable")
        splits = np.flatnonzero(np.diff(cells[order])) + 1
        parts = np.split(order, splits)
        return sorted(parts, key=len, reverse=True)

    def is_world(self, assignment: np.ndarray) -> bool:
        """Whether ``assignment`` (a value code per cell) is a possible world."""
        values = np.asarray(assignment, dtype=np.int64)
        if len(values) != self.cells or (values < 0).any():
            return False
        earlier, later = self.links()
        if not self.reach[values[earlier], values[later]].all():
            return False
        for group in self.groups:
            held = np.bincount(values[list(group.members)], minlength=len(self.values))
            matched = int(np.minimum(held, np.array(group.counts)).sum())
            if matched < len(group.members) - group.free:
                return False
        return True


def _reach(principle: str, values: tuple[str, ...], model: TransitionModel | None) -> np.ndarray:
    if principle != "m-distinct":
        return np.eye(len(values), dtype=bool)
    if model is None:
        raise ParameterError("the joint model of an m-Distinct sequence needs its transition "
                             "model.")
    return np.array([[model.allows(a, b) for b in values] for a in values], dtype=bool)


def joint_instance(
    releases: Sequence[Release],
    principle: str,
    transitions: TransitionModel | None = None,
    with_truth: bool = True,
) -> JointInstance:
    """The joint model of ``releases`` (in publication order) under ``principle``.

    Persons are identifiers; their cells are their rows in the releases' private
    assignments. ``with_truth`` keeps the true values (the publisher's audit).
    """
    if principle not in JOINT_PRINCIPLES:
        raise ParameterError(f"principle {principle!r}: the joint audit supports "
                             f"{list(JOINT_PRINCIPLES)}.")
    if not releases:
        raise InputError("no release to audit.")
    numbers = [r.number for r in releases]
    if any(b <= a for a, b in zip(numbers, numbers[1:], strict=False)):
        raise InputError(f"releases must be in increasing order of number; got {numbers}.")
    sa = releases[0].schema.sensitive
    names: set[str] = set()
    for release in releases:
        names |= set(release.published[sa].astype(str).tolist())
    if transitions is not None and principle == "m-distinct":
        names |= set(transitions.values)
    values = tuple(sorted(names))
    code = {v: k for k, v in enumerate(values)}
    ids: list[np.ndarray] = []
    rel: list[np.ndarray] = []
    grp: list[np.ndarray] = []
    true: list[np.ndarray] = []
    groups: list[JointGroup] = []
    offset = 0
    for release in releases:
        schema = release.schema
        published = release.published
        labels = published[GROUP].astype(str).to_numpy(dtype=object)
        uniques, inverse = np.unique(labels, return_inverse=True)
        shown = published[sa].astype(str).map(code).to_numpy(dtype=np.int64)
        counts = np.zeros((len(uniques), len(values)), dtype=np.int64)
        np.add.at(counts, (inverse, shown), 1)
        extra = np.zeros(len(uniques), dtype=np.int64)
        second = release.counterfeits
        if len(second):
            where = np.searchsorted(uniques, second[GROUP].astype(str).to_numpy(dtype=object))
            if (where >= len(uniques)).any() or (uniques[np.minimum(where, len(uniques) - 1)]
                                                 != second[GROUP].astype(str).to_numpy()).any():
                raise InputError(f"release {release.number}: R/S names a group that T* lacks.")
            np.add.at(extra, where, second[COUNT].to_numpy(dtype=np.int64))
        assignment = release.assignment
        member_labels = assignment[GROUP].astype(str).to_numpy(dtype=object)
        position = np.searchsorted(uniques, member_labels)
        if len(position) and ((position >= len(uniques)).any() or (
                uniques[np.minimum(position, len(uniques) - 1)] != member_labels).any()):
            raise InputError(f"release {release.number}: a row's group is not published.")
        members = np.bincount(position, minlength=len(uniques))
        substitution = release.model == "exact"
        expected = counts.sum(axis=1) - (0 if substitution else extra)
        if (expected != members).any():
            bad = uniques[np.flatnonzero(expected != members)[0]]
            raise InputError(f"release {release.number}, group {bad}: the published rows and "
                             "counterfeits do not match the group's members.")
        order = np.argsort(position, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(members)])
        for g, label in enumerate(uniques.tolist()):
            cells = tuple(int(offset + c) for c in order[bounds[g]:bounds[g + 1]])
            groups.append(JointGroup(release.number, str(label), cells,
                                     tuple(int(x) for x in counts[g]),
                                     int(extra[g]) if substitution else 0))
        ids.append(assignment[schema.identifier].astype(str).to_numpy(dtype=object))
        rel.append(np.full(len(assignment), release.number, dtype=np.int64))
        grp.append(len(groups) - len(uniques) + position)
        true.append(assignment[sa].astype(str).map(lambda v: code.get(v, -1)).to_numpy(
            dtype=np.int64))
        offset += len(assignment)
    identifiers = np.concatenate(ids)
    persons, person = np.unique(identifiers.astype(str), return_inverse=True)
    release_of = np.concatenate(rel)
    order = np.lexsort((release_of, person))
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    groups = [JointGroup(g.release, g.label, tuple(int(back[c]) for c in g.members), g.counts,
                         g.free) for g in groups]
    return JointInstance(
        principle=principle, values=values, persons=tuple(str(p) for p in persons),
        cell_person=person[order].astype(np.int64), cell_release=release_of[order],
        cell_group=np.concatenate(grp)[order].astype(np.int64), groups=tuple(groups),
        reach=_reach(principle, values, transitions),
        truth=np.concatenate(true)[order] if with_truth else None,
    )
