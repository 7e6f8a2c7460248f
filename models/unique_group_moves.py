"""Local search on a partition into m-unique groups: rows move and swap between groups.

A release without old rows (the first release of the m-invariance paper, Xiao & Tao,
SIGMOD 2007, §4) is a partition of its rows into m-unique groups (§3: at least ``m`` rows,
all of distinct sensitive values), costing ``Σ_G |G|·ext(G)`` (the perimeter of §4.3;
NCP is the same number when no group holds a counterfeit). The paper builds it with the
steps of every release, and :mod:`republish.heuristics.compact_groups` by locality; both
leave rows in groups far from them. The slot trades of
:mod:`republish.models.whole_release_slots` keep every group's set of values (what the
next release inherits from a later release); here the values are free, as they are in a
first release, and two moves are tried per row ``x`` of group ``A`` against the groups
``B`` holding its nearest rows (not in the paper; a first-improvement descent in the
neighbourhoods of the vehicle-routing *relocate* and *exchange* moves):

* **relocate** ``x`` to ``B`` (``|A| > m``, ``|B| < 2m - 1``, ``v_x ∉ B``). A group of
  ``2m`` rows or more splits into two m-unique groups of no larger cost (each extent is at
  most the whole group's and the sizes add up), so no group needs more than ``2m - 1``;
* **swap** ``x`` with ``y ∈ B`` (``v_x ∉ B - y``, ``v_y ∉ A - x``).

The best move of ``x`` (largest decrease of the cost, computed for every candidate at
once from each group's box without each of its rows) is made when it lowers the cost.
Rows are visited from a queue in random order; a move puts back the rows whose best move
it may change (its two groups' rows and the rows that have one of them among their
nearest), so the descent ends in a local optimum of both moves (don't-look bits, Bentley,
*Fast algorithms for geometric traveling salesman problems*, ORSA J. Computing 4, 1992).
Random swaps then restart it (iterated local search, Lourenço, Martin & Stützle, 2003),
keeping the cheapest partition. The cost never rises and every group stays m-unique.
Measured on the first release of 200 Adult rows (``benchmarks/RESULTS.md``, session 9),
from compact groups of cost 108.4 at m = 3: one descent 71.4-75.2 in 0.06 s, 66.3-67.6
in 5 s with kicks, where the set-partitioning model's best in 60 s is 65.1 (within 3 % of
its proven bound).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import ParameterError

__all__ = ["UniqueGroupSearch", "improve_unique_groups"]

Lengths = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Nearest rows whose groups are a row's candidates.
NEAREST_ROWS = 24
#: Rows per block of the nearest-row search (a block holds ``block × n`` pair extents).
BLOCK = 512
#: A move is made when it lowers the cost by more than this share of the total.
TOLERANCE = 1e-12
#: A kick swaps one row in this many (at least two) with a row of a nearby group (200
#: Adult rows, m = 3, 1 s: 68.1-69.6 against 66.5-70.7 with one in 20); the
#: iterated search stops after this many kicks per group in a row without a gain.
KICK_SHARE = 60
KICK_PATIENCE_PER_GROUP = 2


@dataclass(frozen=True)
class UniqueGroupSearch:
    """The groups after the search, their cost before and after, the passes made and the
    moves that lowered the cost; ``local_optimum``: the last pass changed nothing."""

    groups: tuple[np.ndarray, ...]
    cost_before: float
    cost_after: float
    evaluations: int
    moves: int
    kicks: int
    local_optimum: bool


def _widths(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return high - low


def _validate(points: np.ndarray, values: np.ndarray, groups: Sequence[np.ndarray], m: int
              ) -> list[np.ndarray]:
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ParameterError(f"The 'm' parameter of improve_unique_groups must be an int in "
                             f"the range [1, inf). Got {m!r} instead.")
    if points.ndim != 2 or len(values) != len(points):
        raise ParameterError(f"points must be (n, d) and values of length n; got shapes "
                             f"{points.shape} and {values.shape}.")
    out, seen = [], np.zeros(len(points), dtype=bool)
    for g, group in enumerate(groups):
        rows = np.asarray(group, dtype=np.int64)
        if len(rows) < m or len(np.unique(values[rows])) != len(rows) or seen[rows].any():
            raise ParameterError(f"group {g} is not an m-unique group of rows not used "
                                 f"before (m={m}): rows {rows.tolist()}, values "
                                 f"{values[rows].tolist()}.")
        seen[rows] = True
        out.append(rows)
    return out


def _nearest(points: np.ndarray, rows: np.ndarray, lengths: Lengths, k: int) -> np.ndarray:
    """Per row of ``rows``, its ``k`` nearest other rows of ``rows`` by the extent of the
    pair (``-1`` pads)."""
    near = np.full((len(rows), k), -1, dtype=np.int64)
    x = points[rows]
    take = min(k, len(rows) - 1)
    if take <= 0:
        return near
    for start in range(0, len(rows), BLOCK):
        part = x[start:start + BLOCK]
        pair = lengths(np.minimum(part[:, None], x[None]), np.maximum(part[:, None], x[None])
                       ).sum(axis=2)
        pair[np.arange(len(part)), start + np.arange(len(part))] = np.inf
        chosen = np.argpartition(pair, take - 1, axis=1)[:, :take]
        near[start:start + len(part), :take] = rows[chosen]
    return near


class _Search:
    """The partition being searched: each group's rows, values and cost, each row's group."""

    def __init__(self, points: np.ndarray, values: np.ndarray, lengths: Lengths, m: int,
                 groups: list[np.ndarray], near_of: np.ndarray) -> None:
        self.points, self.values, self.lengths, self.m = points, values, lengths, m
        self.hi = max(2 * m - 1, max(len(g) for g in groups))
        self.near_of = near_of
        # watchers[y]: the rows with y among their nearest rows (whose candidates hold y)
        tail = np.repeat(np.arange(len(points)), near_of.shape[1])
        head = near_of.ravel()
        keep = head >= 0
        order = np.argsort(head[keep], kind="stable")
        starts = np.searchsorted(head[keep][order], np.arange(len(points) + 1))
        self.watchers = np.split(tail[keep][order], starts[1:-1])
        self.members_of = [g.tolist() for g in groups]
        self.label = np.full(len(points), -1, dtype=np.int64)
        self.has = np.zeros((len(groups), int(values.max()) + 1), dtype=bool)
        self.costs = np.zeros(len(groups))
        # per group, kept with it: its rows (-1 pads), size, box, and box without each row
        count, d = len(groups), points.shape[1]
        self.member = np.full((count, self.hi), -1, dtype=np.int64)
        self.size = np.zeros(count, dtype=np.int64)
        self.low, self.high = np.zeros((count, d)), np.zeros((count, d))
        self.low_without = np.zeros((count, self.hi, d))
        self.high_without = np.zeros((count, self.hi, d))
        for g in range(count):
            self._refresh(g)
        self.moves = 0
        self.dirty: set[int] = set()  # groups changed since the last snapshot

    def _refresh(self, g: int) -> None:
        rows = self.members_of[g]
        self.label[rows] = g
        self.has[g] = False
        self.has[g, self.values[rows]] = True
        k = len(rows)
        self.member[g] = -1
        self.member[g, :k] = rows
        self.size[g] = k
        if not k:
            self.costs[g] = 0.0
            return
        chosen = self.points[rows]
        self.low[g], self.high[g] = chosen.min(axis=0), chosen.max(axis=0)
        self.costs[g] = k * float(self.lengths(self.low[g], self.high[g]).sum())
        # the box without row j: the rows before j and after j (prefix and suffix extremes)
        inf = np.full((1, chosen.shape[1]), np.inf)
        before_low = np.vstack([inf, np.minimum.accumulate(chosen[:-1])])
        after_low = np.vstack([np.minimum.accumulate(chosen[::-1][:-1])[::-1], inf])
        before_high = np.vstack([-inf, np.maximum.accumulate(chosen[:-1])])
        after_high = np.vstack([np.maximum.accumulate(chosen[::-1][:-1])[::-1], -inf])
        self.low_without[g, :k] = np.minimum(before_low, after_low)
        self.high_without[g, :k] = np.maximum(before_high, after_high)

    def snapshot(self) -> tuple[list[list[int]], np.ndarray]:
        """The partition now; later moves mark the groups they change (``dirty``)."""
        self.dirty = set()
        return [list(g) for g in self.members_of], self.costs.copy()

    def restore(self, saved: tuple[list[list[int]], np.ndarray]) -> None:
        """Back to the last snapshot, which is ``saved``: only the groups changed since."""
        for g in sorted(self.dirty):
            self.members_of[g] = list(saved[0][g])
        for g in sorted(self.dirty):
            self._refresh(g)
        self.dirty = set()

    def _apply(self, a: int, x: int, b: int, y: int) -> None:
        """``x`` from ``a`` to ``b``; ``y`` (``-1``: none) from ``b`` to ``a``."""
        self.members_of[a] = [r for r in self.members_of[a] if r != x] + ([] if y < 0 else [y])
        self.members_of[b] = [r for r in self.members_of[b] if r != y] + [x]
        self._refresh(a)
        self._refresh(b)
        self.dirty.update((a, b))

    def _candidates(self, x: int, a: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The groups of ``x``'s nearest rows but ``a``, their sizes and rows (``-1`` pads)."""
        near = self.near_of[x]
        candidates = np.unique(self.label[near[near >= 0]])
        candidates = candidates[candidates != a]
        return candidates, self.size[candidates], self.member[candidates]

    def _swappable(self, x: int, a: int, candidates: np.ndarray, member: np.ndarray
                   ) -> np.ndarray:
        """Where ``x`` and ``member[i, j]`` may trade groups: both stay m-unique."""
        used = member >= 0
        y_values = self.values[np.where(used, member, 0)]
        vx = self.values[x]
        return used & ((y_values == vx) | ~self.has[candidates, vx][:, None]) & \
            ((y_values == vx) | ~self.has[a, y_values])

    def best_move(self, x: int) -> tuple[float, int, int] | None:
        """The largest decrease of the cost by a move of ``x``: (gain, group, partner row
        or ``-1`` for a relocation); None without a candidate."""
        a = int(self.label[x])
        candidates, size, member = self._candidates(x, a)
        if not len(candidates):
            return None
        points, lengths, px = self.points, self.lengths, self.points[x]
        # a's box without x, kept with the group (infinite when x is alone in a)
        at_x = int(np.flatnonzero(self.member[a] == x)[0])
        low_a, high_a = self.low_without[a, at_x], self.high_without[a, at_x]
        best: tuple[float, int, int] = (-math.inf, -1, -1)
        if self.size[a] > self.m:  # relocate x to b
            fits = candidates[(size < self.hi) & ~self.has[candidates, self.values[x]]]
            if len(fits):
                rest_cost = (self.size[a] - 1) * float(lengths(low_a, high_a).sum())
                grown = (self.size[fits] + 1) * lengths(
                    np.minimum(self.low[fits], px), np.maximum(self.high[fits], px)).sum(axis=1)
                gain = self.costs[a] + self.costs[fits] - rest_cost - grown
                top = int(np.argmax(gain))
                best = (float(gain[top]), int(fits[top]), -1)
        allowed = self._swappable(x, a, candidates, member)
        if allowed.any():  # swap x with y in b, from b's boxes without each of its rows
            at = np.where(member >= 0, member, 0)
            into_b = size[:, None] * lengths(
                np.minimum(self.low_without[candidates], px),
                np.maximum(self.high_without[candidates], px)).sum(axis=2)
            y_points = points[at]
            into_a = self.size[a] * lengths(
                np.minimum(low_a, y_points), np.maximum(high_a, y_points)).sum(axis=2)
            gain = np.where(allowed, self.costs[a] + self.costs[candidates][:, None]
                            - into_a - into_b, -np.inf)
            at_b, at_y = np.unravel_index(int(np.argmax(gain)), gain.shape)
            if gain[at_b, at_y] > best[0]:
                best = (float(gain[at_b, at_y]), int(candidates[at_b]), int(member[at_b, at_y]))
        return None if best[1] < 0 else best

    def _affected(self, groups: list[int]) -> np.ndarray:
        """The rows whose best move may differ after ``groups`` changed: their rows and
        every row with one of those among its nearest rows."""
        rows = np.array([r for g in groups for r in self.members_of[g]], dtype=np.int64)
        return np.unique(np.concatenate([rows, *(self.watchers[r] for r in rows.tolist())]))

    def descend(self, rows: np.ndarray, rng: np.random.Generator, deadline: float,
                max_evaluations: int) -> tuple[int, bool]:
        """Rows in random order make their best move when it lowers the cost; a move puts
        the rows it may affect back in the queue (don't-look bits), so an empty queue is a
        local optimum. (evaluations, the queue emptied)."""
        queue = deque(rng.permutation(rows).tolist())
        queued = np.zeros(len(self.label), dtype=bool)
        queued[rows] = True
        evaluations = 0
        while queue:
            if evaluations >= max_evaluations or (
                    evaluations % 32 == 0 and time.perf_counter() >= deadline):
                return evaluations, False
            x = queue.popleft()
            queued[x] = False
            evaluations += 1
            move = self.best_move(x)
            if move is None or move[0] <= TOLERANCE * max(float(self.costs.sum()), 1.0):
                continue
            a = int(self.label[x])
            self._apply(a, x, move[1], move[2])
            self.moves += 1
            for r in self._affected([a, move[1]]).tolist():
                if not queued[r]:
                    queued[r] = True
                    queue.append(r)
        return evaluations, True

    def kick(self, rows: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` random swaps of a row with a row of a nearby group (any cost); the
        rows whose best move they may change."""
        changed: list[int] = []
        for x in rng.choice(rows, size=min(count, len(rows)), replace=False).tolist():
            a = int(self.label[x])
            candidates, _, member = self._candidates(x, a)
            if not len(candidates):
                continue
            allowed = np.argwhere(self._swappable(x, a, candidates, member))
            if len(allowed):
                i, j = allowed[rng.integers(len(allowed))]
                self._apply(a, x, int(candidates[i]), int(member[i, j]))
                changed += [a, int(candidates[i])]
        return self._affected(sorted(set(changed)))


def improve_unique_groups(points: np.ndarray, values: np.ndarray,
                          groups: Sequence[np.ndarray], m: int, *,
                          lengths: Lengths | None = None, deadline: float = math.inf,
                          seed: int = 0, max_passes: int = 50, max_kicks: int = 0
                          ) -> UniqueGroupSearch:
    """Relocate and swap rows between the m-unique ``groups`` (module docstring) until a
    descent ends by itself, after ``max_passes × rows`` row evaluations or at ``deadline``
    (``time.perf_counter()``);
    then up to ``max_kicks`` times (iterated local search) swap one row in KICK_SHARE at
    random with rows of nearby groups and descend again, keeping the cheapest partition,
    until ``2 × groups`` kicks in a row gain nothing.

    ``points`` (n, d) and ``lengths(low, high)`` (per-QI extent of boxes, shape ``(...,
    d)``; default: the widths) define ``ext``; ``values`` the rows' sensitive codes. Rows
    in no group stay out. The groups returned hold the same rows, each group m-unique with
    at most ``max(2m - 1, its size)`` rows, and cost no more than the input."""
    points = np.asarray(points, dtype=np.float64)
    values = np.asarray(values, dtype=np.int64)
    start_groups = _validate(points, values, groups, m)
    for name, value in (("max_passes", max_passes), ("max_kicks", max_kicks)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ParameterError(f"The '{name}' parameter of improve_unique_groups must be "
                                 f"an int in the range [0, inf). Got {value!r} instead.")
    lengths = lengths or _widths
    placed = np.concatenate(start_groups) if start_groups else np.zeros(0, np.int64)
    if len(start_groups) < 2 or time.perf_counter() >= deadline:
        before = sum(len(g) * float(lengths(points[g].min(axis=0), points[g].max(axis=0))
                                    .sum()) for g in start_groups)
        return UniqueGroupSearch(tuple(start_groups), before, before, 0, 0, 0,
                                 len(start_groups) < 2)
    near_of = np.full((len(points), NEAREST_ROWS), -1, dtype=np.int64)
    near_of[placed] = _nearest(points, placed, lengths, NEAREST_ROWS)
    search = _Search(points, values, lengths, m, start_groups, near_of)
    before = float(search.costs.sum())
    rng = np.random.default_rng(seed)
    evaluations, local_optimum = search.descend(placed, rng, deadline,
                                                max_passes * len(placed))
    best, kicks, stalled = search.snapshot(), 0, 0
    patience = KICK_PATIENCE_PER_GROUP * len(start_groups)
    while kicks < max_kicks and stalled < patience and time.perf_counter() < deadline:
        kicks += 1
        shaken = search.kick(placed, rng, max(2, len(placed) // KICK_SHARE))
        more, finished = search.descend(shaken, rng, deadline, max_passes * len(placed))
        evaluations += more
        if search.costs.sum() < best[1].sum() - TOLERANCE * max(float(best[1].sum()), 1.0):
            best, local_optimum, stalled = search.snapshot(), finished, 0
        else:
            search.restore(best)
            stalled += 1
    result = tuple(np.array(sorted(g), dtype=np.int64) for g in best[0] if g)
    return UniqueGroupSearch(result, before, float(best[1].sum()), evaluations,
                             search.moves, kicks, local_optimum)
