"""TP, the three-phase algorithm for tuple minimization (l-diversity paper, §5).

The microdata is cut into QI-groups of rows with identical QI values. TP removes tuples
from the QI-groups into the residue set ``R`` until every QI-group and ``R`` are
l-eligible (at most ``|S| / l`` tuples of ``S`` share an SA value). Published in the
suppression model (Definition 1), a QI-group keeps all its QI values, so the suppressed
tuples are exactly the rows of ``R``:

* phase one (§5.2): every QI-group loses tuples of its pillars until it is l-eligible. If
  ``R`` is then l-eligible the partition is optimal (Corollary 5.9); in any case
  ``OPT >= l * h(Ṙ)`` (Corollary 5.10) and ``OPT >= |Ṙ|`` (its proof);
* phase two (§5.3): alive QI-groups give ``R`` tuples of the alive SA value least frequent
  in ``R`` (a thin group gives one tuple of each of its pillars); ends within ``l - 1`` of
  the bound (Corollary 5.13), and always for ``l = 2`` (Theorem 5.16);
* phase three (§5.4): rounds of a greedy set cover over the pillars of ``R``, then each
  QI-group that came alive gives tuples until it is dead again; an l-approximation
  (Theorem 5.19).

Implementation (§5.5): QI-groups and ``R`` are multisets of SA values held in the
inverted lists of :mod:`republish.heuristics._inverted_lists`. Phase one is computed for
all QI-groups at once: the pillar removals of a group stop at the largest height ``H``
with ``sum_v min(h(Q, v), H) >= l * H``, and the result does not depend on the order of
the removals (§5.2); as ``sum_v min(h, H) = min_k (k * H + tail_k)`` over the counts sorted
in decreasing order (``tail_k`` the sum after the first ``k``), that height is
``min(h(Q), min_{k < l} floor(tail_k / (l - k)))``
(:func:`republish.ldiversity_bounds.phase_one_heights`). Ties are broken towards the smallest
SA value code and the smallest QI-group number, which reproduces the choices made in the
paper's worked examples. Which concrete rows of a (QI-group, SA value) pair go to ``R`` does
not matter (§5.1); the first rows in table order are taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.heuristics._inverted_lists import CandidateList, PillarLists
from republish.heuristics._pairs import (
    check_l_eligible,
    encode_sensitive,
    qi_classes,
    residue_mask,
)
from republish.ldiversity_bounds import phase_one_heights
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = [
    "CountsResult", "Snapshot", "ThreePhaseResult", "check_l_eligible", "encode_sensitive",
    "phase_one_heights", "qi_classes", "residue_mask", "three_phase", "three_phase_counts",
    "three_phase_table",
]


@dataclass(frozen=True)
class Snapshot:
    """The state after one step: QI-group and residue count vectors (paper's notation)."""

    phase: int
    step: str
    groups: tuple[tuple[int, ...], ...]
    residue: tuple[int, ...]


@dataclass(frozen=True)
class CountsResult:
    """TP on count vectors: what each QI-group keeps, the residue ``R``, where TP ended."""

    kept: tuple[tuple[int, ...], ...]
    residue: tuple[int, ...]
    phase: int
    pillar_bound: int
    lower_bound: int
    trace: tuple[Snapshot, ...] = ()


@dataclass(frozen=True)
class ThreePhaseResult:
    """TP on a table.

    Attributes
    ----------
    groups:
        Per row, its QI-group number (rows with identical QI codes share one), or ``-1``
        for the rows of the residue set ``R``.
    residue:
        Row indices of ``R`` (the suppressed tuples), increasing.
    phase:
        1, 2 or 3: the phase in which ``R`` became l-eligible.
    pillar_bound:
        ``l * h(Ṙ)``, the lower bound of Corollary 5.10 on the optimal ``|R|``.
    lower_bound:
        ``max(l * h(Ṙ), |Ṙ|)``; equals ``|R|`` when phase one ends TP (Corollary 5.9).
    """

    groups: np.ndarray
    residue: np.ndarray
    phase: int
    pillar_bound: int
    lower_bound: int
    l: int  # noqa: E741

    @property
    def suppressed_tuples(self) -> int:
        return len(self.residue)

    @property
    def optimal(self) -> bool:
        """True when ``|R|`` is proven minimal (phase one, or ``|R|`` meets the bound)."""
        return self.phase == 1 or self.suppressed_tuples == self.lower_bound


class _Engine:
    """The three phases on (QI-group, SA value) pairs sorted by group, then value."""

    def __init__(
        self,
        pair_group: np.ndarray,
        pair_value: np.ndarray,
        pair_count: np.ndarray,
        n_groups: int,
        m: int,
        l: int,  # noqa: E741
        initial_residue: Sequence[int] | None = None,
        trace: bool = False,
    ) -> None:
        self.pair_group = pair_group
        self.pair_value = pair_value
        self.kept = pair_count.astype(np.int64).copy()
        self.n_groups = n_groups
        self.m = m
        self.l = l
        self.starts = np.searchsorted(pair_group, np.arange(n_groups + 1))
        self.lists: dict[int, PillarLists] = {}
        self.residue = PillarLists(enumerate(initial_residue or ()))
        self.candidates: CandidateList | None = None
        self.trace: list[Snapshot] | None = [] if trace else None
        #: Pillar height of every QI-group after phase one.
        self.heights = np.zeros(n_groups, dtype=np.int64)
        self.pillar_bound = 0
        self.dot_size = 0

    # -- state ------------------------------------------------------------------------
    def group(self, g: int) -> PillarLists:
        lists = self.lists.get(g)
        if lists is None:
            lo, hi = self.starts[g], self.starts[g + 1]
            lists = PillarLists(
                zip(self.pair_value[lo:hi].tolist(), self.kept[lo:hi].tolist(), strict=True)
            )
            self.lists[g] = lists
        return lists

    def final_kept(self) -> np.ndarray:
        kept = self.kept.copy()
        for g, lists in self.lists.items():
            lo, hi = self.starts[g], self.starts[g + 1]
            kept[lo:hi] = [lists[v] for v in self.pair_value[lo:hi].tolist()]
        return kept

    def record(self, phase: int, step: str) -> None:
        if self.trace is None:
            return
        dense = np.zeros((self.n_groups, self.m), dtype=np.int64)
        dense[self.pair_group, self.pair_value] = self.final_kept()
        groups = tuple(tuple(int(x) for x in row) for row in dense)
        self.trace.append(Snapshot(phase, step, groups, self.residue.vector(self.m)))

    def move(self, g: int, value: int) -> None:
        """Move one tuple of ``value`` from QI-group ``g`` to ``R``."""
        self.lists[g].remove(value)
        self.residue.add(value)
        if self.candidates is not None:
            self.candidates.raise_value(value)

    def done(self) -> bool:
        return self.residue.is_eligible(self.l)

    def conflicting_pillars(self, lists: PillarLists) -> set[int]:
        top = self.residue.height
        return {v for v in lists.pillars() if top and self.residue[v] == top}

    def alive(self, lists: PillarLists) -> bool:
        if lists.size == 0:
            return False
        return lists.is_fat(self.l) or not self.conflicting_pillars(lists)

    # -- phases -----------------------------------------------------------------------
    def run(self) -> int:
        self.phase_one()
        if self.done():
            return 1
        if self.phase_two():
            return 2
        self.phase_three()
        return 3

    def phase_one(self) -> None:
        heights = phase_one_heights(self.pair_group, self.kept, self.n_groups, self.l)
        kept = np.minimum(self.kept, heights[self.pair_group])
        removed = np.bincount(self.pair_value, weights=self.kept - kept, minlength=self.m)
        start = self.residue.vector(self.m)
        self.residue = PillarLists(
            (v, start[v] + int(removed[v])) for v in range(self.m)
        )
        self.kept = kept
        self.heights = heights
        self.pillar_bound = self.l * self.residue.height
        self.dot_size = self.residue.size
        self.record(1, "phase one")

    def phase_two(self) -> bool:
        l = self.l  # noqa: E741
        heights = self.heights
        pair_height = heights[self.pair_group]
        size = np.bincount(self.pair_group, weights=self.kept, minlength=self.n_groups)
        residue_pillar = np.zeros(self.m, dtype=bool)
        residue_pillar[list(self.residue.pillars())] = True
        conflict = (self.kept == pair_height) & (pair_height > 0) & residue_pillar[self.pair_value]
        conflicting = np.bincount(self.pair_group, weights=conflict, minlength=self.n_groups) > 0
        thin = size == l * heights
        alive = (size > 0) & ~(thin & conflicting)
        keep = alive[self.pair_group] & (self.kept > 0)
        order = np.lexsort((self.pair_group[keep], self.pair_value[keep]))
        self.candidates = CandidateList(
            self.pair_value[keep][order], self.pair_group[keep][order], self.residue
        )
        candidates = self.candidates
        iteration = 0
        while True:
            value = candidates.lowest_value()
            if value is None:
                self.candidates = None
                return False
            g = candidates.first_group(value)
            if g is None:
                candidates.discard(value)
                continue
            lists = self.group(g)
            if lists[value] == 0 or not self.alive(lists):
                candidates.drop_first_group(value)
                continue
            if lists.is_fat(l):
                self.move(g, value)
            else:
                for pillar in sorted(lists.pillars()):
                    self.move(g, pillar)
            iteration += 1
            self.record(2, f"iteration {iteration}")
            if self.done():
                self.candidates = None
                return True

    def phase_three(self) -> None:
        l = self.l  # noqa: E741
        groups = [g for g in range(self.n_groups) if self.group(g).size > 0]
        # Lemma 5.18: at most h(R̈) rounds; one more guards against a broken invariant.
        for round_number in range(1, self.residue.height + 2):
            # An emptied QI-group has no pillar to give: it would "cover" every pillar.
            groups = [g for g in groups if self.lists[g].size > 0]
            uncovered = set(self.residue.pillars())
            chosen: list[int] = []
            while uncovered:
                best = min(
                    (g for g in groups if g not in chosen),
                    key=lambda g: (len(self.lists[g].pillars() & uncovered), g),
                )
                remaining = self.lists[best].pillars() & uncovered
                if len(remaining) == len(uncovered):
                    raise RuntimeError(
                        "phase three: no QI-group covers a pillar of R (Lemma 5.14 needs an "
                        "l-eligible table)."
                    )
                chosen.append(best)
                uncovered = remaining
            for g in chosen:
                for pillar in sorted(self.lists[g].pillars()):
                    self.move(g, pillar)
                if self.done():
                    self.record(3, f"round {round_number} step one")
                    return
            self.record(3, f"round {round_number} step one")
            for g in groups:
                lists = self.lists[g]
                while self.alive(lists):
                    if lists.is_fat(l):
                        top = self.residue.height
                        value = min(v for v in lists.count if self.residue[v] < top)
                        self.move(g, value)
                    else:
                        for pillar in sorted(lists.pillars()):
                            self.move(g, pillar)
                    self.record(3, f"round {round_number} step two")
                    if self.done():
                        return
        raise RuntimeError("phase three did not end within h(R) rounds (Lemma 5.18).")


def _check_l(l: int) -> None:  # noqa: E741
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")


def three_phase_counts(
    groups: Sequence[Sequence[int]],
    l: int,  # noqa: E741
    *,
    residue: Sequence[int] | None = None,
    trace: bool = False,
) -> CountsResult:
    """TP on QI-groups given as count vectors ``h(Q, v)`` over SA values ``0 .. m-1``.

    ``residue`` starts ``R`` with the given counts (to replay a stated intermediate state).
    With ``trace`` every step's state is recorded in :attr:`CountsResult.trace`.
    """
    _check_l(l)
    dense = np.asarray(groups, dtype=np.int64)
    if dense.ndim != 2 or (dense < 0).any():
        raise ParameterError("groups must be a list of equally long count vectors >= 0.")
    n_groups, m = dense.shape
    start = np.zeros(m, dtype=np.int64) if residue is None else np.asarray(residue, np.int64)
    if start.shape != (m,) or (start < 0).any():
        raise ParameterError(f"residue must be {m} counts >= 0, one per SA value.")
    totals = dense.sum(axis=0) + start
    if l * totals.max(initial=0) > totals.sum():
        raise InputError(
            f"the counts are not {l}-eligible: value {int(totals.argmax())} has "
            f"{int(totals.max())} of {int(totals.sum())} tuples."
        )
    pair_group, pair_value = np.nonzero(dense)
    engine = _Engine(
        pair_group, pair_value, dense[pair_group, pair_value], n_groups, m, l,
        start.tolist(), trace,
    )
    phase = engine.run()
    final = np.zeros_like(dense)
    final[pair_group, pair_value] = engine.final_kept()
    return CountsResult(
        kept=tuple(tuple(int(x) for x in row) for row in final),
        residue=engine.residue.vector(m),
        phase=phase,
        pillar_bound=engine.pillar_bound,
        lower_bound=max(engine.pillar_bound, engine.dot_size),
        trace=tuple(engine.trace or ()),
    )


def three_phase(
    qi_codes: np.ndarray, sensitive: np.ndarray | Sequence[object], l: int  # noqa: E741
) -> ThreePhaseResult:
    """TP on rows given by their QI codes ``(n, d)`` and SA values ``(n,)``."""
    _check_l(l)
    codes = np.asarray(qi_codes)
    sa = np.asarray(sensitive)
    if codes.ndim != 2 or len(codes) != len(sa):
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    check_l_eligible(sa, l)
    n = len(sa)
    group_of_row = qi_classes(codes)
    value_of_row, uniques = encode_sensitive(sa)
    m = max(len(uniques), 1)
    n_groups = int(group_of_row.max()) + 1 if n else 0
    key = group_of_row * m + value_of_row
    pair_key, pair_of_row, pair_count = np.unique(key, return_inverse=True, return_counts=True)
    engine = _Engine(pair_key // m, pair_key % m, pair_count, n_groups, m, l)
    phase = engine.run()
    in_residue = residue_mask(pair_of_row, pair_count - engine.final_kept())
    groups = np.where(in_residue, -1, group_of_row)
    return ThreePhaseResult(
        groups=groups,
        residue=np.flatnonzero(in_residue),
        phase=phase,
        pillar_bound=engine.pillar_bound,
        lower_bound=max(engine.pillar_bound, engine.dot_size),
        l=int(l),
    )


def three_phase_table(table: pd.DataFrame, schema: Schema, l: int) -> ThreePhaseResult:  # noqa: E741
    """TP on a validated table (see :func:`republish.tables.load_table`)."""
    return three_phase(encode_qis(table, schema), table[schema.sensitive].to_numpy(), l)
