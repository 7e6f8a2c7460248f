"""m-Distinct release, phases 1 and 2: create buckets, assign records, balance (Li & Zhou, §V).

Phase 1 (Algorithm 2): one bucket per distinct update set signature ``USS(t_pre)`` of the
records published before, then, for every pair of intersectable bucket signatures, a
bucket whose entries are the pairwise intersections of the highest-scored plan (largest
summed overlap proportion). A bucket is identified by its USS; its *entries* are the
value sets of that USS. Intersections without a system of distinct representatives could
never form a group and are skipped.

Phase 2 (Algorithm 3): a record ``t`` may join bucket ``B`` when ``t[S]`` can sit in a
group of ``B`` (some system of distinct representatives of ``B``'s entries uses it) and,
for a record published before, ``USS(t_pre) ⊇ USS(B)``; with the §IV-B extension a new
record also needs ``B``'s entries to have pairwise disjoint closures. Records are taken
by increasing number of buckets (``CNT_buc``); each goes to the (bucket, entry) of highest
score (eq. 3): ``δ = max(F_max, |e_1|, ...)``, ``ε = -1`` when ``t[S]``'s frequency or the
entry's size already equals ``δ`` (the record forces counterfeits), else ``+1``;
``λ = Z_aft / Z_bef`` the growth of the bucket's QI volume; score ``1/λ`` if ``ε = 1``,
``-λ`` otherwise; equal scores in a bucket go to the entry with fewer records. The
volume of a box is ``Π_j (l_j + η_j)`` over normalized side lengths, ``η_j`` one cell of
QI ``j`` (a point has a positive volume). A *new* record whose best score has ``ε = -1``
goes to the first-release path instead (product rule: it would only add counterfeits).

Balancing (end of §V-B): every entry of a bucket ends with ``δ`` rows, no value with more
than ``δ``. Here ``δ`` is the smallest value for which a transportation problem (records
to entries containing their value, counterfeits of any entry value) is feasible, solved as
a min-cost flow; the paper keeps the greedy's entries and adds counterfeits, which this
never does worse than.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.graph.python import min_cost_flow

from republish.errors import InputError
from republish.transitions import (
    UpdateSetSignature,
    canonical_uss,
    has_representatives,
    implies,
    intersection_plan,
    representable_values,
)

__all__ = [
    "FRESH",
    "Assignment",
    "BucketBalance",
    "BucketTable",
    "assign_records",
    "balance_bucket",
    "bucket_options",
    "create_buckets",
]

#: Bucket label of a record sent to the first-release (m-unique) path.
FRESH = -1


def _words(sets: Sequence[Sequence[frozenset[Any]]], domain: Sequence[Any]) -> np.ndarray:
    """Bitmasks ``(len(sets), max entries, words)`` of value sets (padding: empty)."""
    index = {v: k for k, v in enumerate(domain)}
    width = max(1, -(-len(domain) // 64))
    longest = max((len(s) for s in sets), default=0)
    out = np.zeros((len(sets), max(longest, 1), width), dtype=np.uint64)
    for b, entries in enumerate(sets):
        for e, entry in enumerate(entries):
            for value in entry:
                k = index[value]
                out[b, e, k // 64] |= np.uint64(1) << np.uint64(k % 64)
    return out


def create_buckets(
    previous: Sequence[UpdateSetSignature], domain: Sequence[str]
) -> tuple[UpdateSetSignature, ...]:
    """Algorithm 2: the distinct ``previous`` signatures, then their intersections."""
    base = list(dict.fromkeys(canonical_uss(p) for p in previous))
    words = _words(base, domain)
    sizes = np.array([len(u) for u in base], dtype=np.int64)
    created: dict[UpdateSetSignature, None] = {}
    known = set(base)
    for i, first in enumerate(base):
        s = len(first)
        others = np.flatnonzero((sizes == s) & (np.arange(len(base)) > i))
        if not len(others) or s == 0:
            continue
        # Cheap necessary condition: every entry of each side meets an entry of the other.
        overlap = (words[others, None, :s, :] & words[i, :s, None, :][None]).any(axis=-1)
        maybe = others[overlap.any(axis=2).all(axis=1) & overlap.any(axis=1).all(axis=1)]
        for j in maybe.tolist():
            plan = intersection_plan(first, base[j])
            if plan is not None and plan not in known and has_representatives(plan):
                known.add(plan)
                created[plan] = None
    return (*base, *created)


@dataclass(frozen=True)
class BucketTable:
    """Buckets as arrays over the value domain: ``member[b, e, v]`` (entry ``e`` of
    bucket ``b`` holds value ``v``), ``valid[b, e]``, ``usable[b, v]`` (``v`` in some
    system of distinct representatives), ``open_to_new[b]`` (§IV-B rule for new rows)."""

    signatures: tuple[UpdateSetSignature, ...]
    member: np.ndarray
    valid: np.ndarray
    usable: np.ndarray
    open_to_new: np.ndarray
    domain: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        signatures: Sequence[UpdateSetSignature],
        domain: Sequence[str],
        closure: Mapping[str, frozenset[str]] | None = None,
    ) -> BucketTable:
        """``closure[v]`` is ``CUS(v)``; given, a new record may join a bucket only if the
        unions of the CUS of each entry's values are pairwise disjoint (strict mode)."""
        index = {v: k for k, v in enumerate(domain)}
        longest = max((len(s) for s in signatures), default=1)
        member = np.zeros((len(signatures), longest, len(domain)), dtype=bool)
        usable = np.zeros((len(signatures), len(domain)), dtype=bool)
        open_to_new = np.ones(len(signatures), dtype=bool)
        for b, entries in enumerate(signatures):
            for e, entry in enumerate(entries):
                member[b, e, [index[v] for v in entry]] = True
            usable[b, [index[v] for v in representable_values(tuple(entries))]] = True
            if closure is not None:
                reach = [frozenset().union(*(closure.get(v, frozenset({v})) for v in e))
                         for e in entries]
                total = sum(len(r) for r in reach)
                open_to_new[b] = total == len(frozenset().union(*reach))
        valid = member.any(axis=2)
        return cls(tuple(signatures), member, valid, usable, open_to_new, tuple(domain))


def bucket_options(
    table: BucketTable,
    values: np.ndarray,
    previous: np.ndarray,
    previous_uss: Sequence[UpdateSetSignature],
) -> list[np.ndarray]:
    """Buckets each record may join (Phase 2's rule; see the module docstring).

    ``values[i]`` is record ``i``'s value code, ``previous[i]`` the index of
    ``USS(t_pre)`` in ``previous_uss`` (-1 for a record never published).
    """
    domain = range(table.member.shape[2])
    words = _words([[frozenset(np.flatnonzero(table.member[b, e]).tolist())
                     for e in range(len(s))] for b, s in enumerate(table.signatures)], domain)
    index = {v: k for k, v in enumerate(table.domain)}
    sizes = np.array([len(s) for s in table.signatures], dtype=np.int64)
    implied: dict[int, np.ndarray] = {}
    for k in np.unique(previous[previous >= 0]).tolist():
        uss = previous_uss[k]
        mine = _words([[frozenset(index[v] for v in e) for e in uss]], domain)[0]
        same = np.flatnonzero(sizes == len(uss))
        # Cheap necessary condition: every entry of the bucket fits in some entry of uss.
        inside = ((words[same, :, None, :] & ~mine[None, None, :, :]) == 0).all(axis=-1)
        fits = inside.any(axis=2) | ~table.valid[same]
        chosen = same[fits.all(axis=1)]
        implied[k] = np.array([b for b in chosen.tolist() if implies(uss, table.signatures[b])],
                              dtype=np.int64)
    new_ok = table.usable & table.open_to_new[:, None]
    by_value = {v: np.flatnonzero(new_ok[:, v]) for v in np.unique(values).tolist()}
    options = []
    for value, k in zip(values.tolist(), previous.tolist(), strict=True):
        if k < 0:
            options.append(by_value[value])
        else:
            chosen = implied[k]
            options.append(chosen[table.usable[chosen, value]])
    return options


@dataclass(frozen=True)
class Assignment:
    """Phase 2's result: ``bucket[i]`` (``FRESH`` for the first-release path) and
    ``entry[i]`` of every record, and ``options[i]`` its ``CNT_buc``."""

    bucket: np.ndarray
    entry: np.ndarray
    options: np.ndarray


def _volume(low: np.ndarray, high: np.ndarray, cell: np.ndarray) -> np.ndarray:
    return np.prod(np.where(high >= low, high - low, 0.0) + cell, axis=-1)


def assign_records(
    table: BucketTable,
    values: np.ndarray,
    points: np.ndarray,
    options: Sequence[np.ndarray],
    is_new: np.ndarray,
    cell: np.ndarray,
) -> Assignment:
    """Algorithm 3 with eq. 3 (see the module docstring).

    ``points`` are the records' QIs normalized to [0, 1]; ``cell[j]`` the normalized
    width of one value of QI ``j``. Records are visited by increasing ``CNT_buc``, ties
    in input order (shuffle the input for a random order).
    """
    n, d = points.shape
    buckets, entries = table.valid.shape
    entry_count = np.zeros((buckets, entries), dtype=np.int64)
    value_count = np.zeros((buckets, table.usable.shape[1]), dtype=np.int64)
    delta = np.zeros(buckets, dtype=np.int64)
    low = np.full((buckets, d), np.inf)
    high = np.full((buckets, d), -np.inf)
    bucket = np.full(n, FRESH, dtype=np.int64)
    entry = np.full(n, -1, dtype=np.int64)
    counts = np.array([len(o) for o in options], dtype=np.int64)
    # Records published before with a single bucket: their bucket is forced, only the
    # entry is chosen (fewest records); boxes and δ are then updated at once.
    forced = np.flatnonzero(~is_new & (counts == 1))
    for i in forced.tolist():
        b, v = int(options[i][0]), int(values[i])
        candidates = np.flatnonzero(table.member[b, :, v])
        e = int(candidates[np.argmin(entry_count[b, candidates])])
        bucket[i], entry[i] = b, e
        entry_count[b, e] += 1
        value_count[b, v] += 1
    if len(forced):
        np.minimum.at(low, bucket[forced], points[forced])
        np.maximum.at(high, bucket[forced], points[forced])
        delta = np.maximum(entry_count.max(axis=1), value_count.max(axis=1))
    rest = np.setdiff1d(np.arange(n), forced)
    for i in rest[np.argsort(counts[rest], kind="stable")].tolist():
        choices = options[i]
        if not len(choices):
            if not is_new[i]:
                raise InputError(f"record {i} was published before but fits no bucket.")
            continue
        v = int(values[i])
        member = table.member[choices, :, v]
        tight = (value_count[choices, v] == delta[choices])[:, None] | (
            entry_count[choices] == delta[choices][:, None]
        )
        epsilon = np.where(tight, -1.0, 1.0)
        before = _volume(low[choices], high[choices], cell)
        after = _volume(np.minimum(low[choices], points[i]), np.maximum(high[choices], points[i]),
                        cell)
        growth = np.where(np.isfinite(before) & (before > 0), after / np.where(
            before > 0, before, 1.0), 1.0)
        score = np.where(epsilon > 0, 1.0 / growth[:, None], -growth[:, None])
        score = np.where(member, score, -np.inf)
        best = score.max()
        if is_new[i] and best < 0:
            continue  # only counterfeits would follow; the first-release path takes it
        row = int(np.flatnonzero((score == best).any(axis=1))[0])
        candidates = np.flatnonzero(score[row] == best)
        e = int(candidates[np.argmin(entry_count[choices[row], candidates])])
        b = int(choices[row])
        bucket[i], entry[i] = b, e
        entry_count[b, e] += 1
        value_count[b, v] += 1
        delta[b] = max(delta[b], entry_count[b, e], value_count[b, v])
        low[b] = np.minimum(low[b], points[i])
        high[b] = np.maximum(high[b], points[i])
    return Assignment(bucket=bucket, entry=entry, options=counts)


@dataclass(frozen=True)
class BucketBalance:
    """A balanced bucket: ``delta`` rows per entry; ``rows[e][v]`` rows of value ``v`` in
    entry ``e`` (real first, then counterfeits), ``counterfeits[e][v]`` of them fake."""

    delta: int
    rows: tuple[dict[str, int], ...]
    counterfeits: tuple[dict[str, int], ...]

    @property
    def counterfeit_total(self) -> int:
        return sum(sum(c.values()) for c in self.counterfeits)


def _transport(
    entries: UpdateSetSignature, counts: Mapping[str, int], delta: int
) -> list[dict[str, int]] | None:
    """Rows per (entry, value) with ``delta`` rows per entry and at most ``delta`` per
    value, ``counts[v]`` of value ``v`` real; None when infeasible."""
    values = sorted(frozenset().union(*entries))
    real = sum(counts.get(v, 0) for v in values)
    flow = min_cost_flow.SimpleMinCostFlow()
    source = 0
    value_node = {v: 1 + k for k, v in enumerate(values)}
    entry_node = [1 + len(values) + e for e in range(len(entries))]
    arcs: list[tuple[int, int, str]] = []
    for v in values:
        flow.add_arc_with_capacity_and_unit_cost(source, value_node[v], delta - counts.get(v, 0),
                                                 0)
        for e, entry in enumerate(entries):
            if v in entry:
                arc = flow.add_arc_with_capacity_and_unit_cost(value_node[v], entry_node[e],
                                                               delta, 0)
                arcs.append((arc, e, v))
    flow.set_node_supply(source, len(entries) * delta - real)
    for v in values:
        flow.set_node_supply(value_node[v], counts.get(v, 0))
    for node in entry_node:
        flow.set_node_supply(node, -delta)
    if flow.solve() != flow.OPTIMAL:
        return None
    rows: list[dict[str, int]] = [{} for _ in entries]
    for arc, e, v in arcs:
        amount = int(flow.flow(arc))
        if amount:
            rows[e][v] = amount
    return rows


def balance_bucket(entries: UpdateSetSignature, counts: Mapping[str, int]) -> BucketBalance:
    """The smallest ``δ`` balancing ``entries`` holding ``counts`` real rows per value.

    Raises
    ------
    InputError
        when a value of ``counts`` cannot sit in any group of these entries.
    """
    entries = tuple(entries)
    counts = {v: int(c) for v, c in counts.items() if int(c) > 0}
    real = sum(counts.values())
    if real == 0:
        return BucketBalance(0, tuple({} for _ in entries), tuple({} for _ in entries))
    outside = sorted(set(counts) - representable_values(entries))
    if outside:
        raise InputError(
            f"value(s) {outside} cannot sit in a group of the bucket "
            f"{[sorted(e) for e in entries]}."
        )
    low = max(max(counts.values()), -(-real // len(entries)))
    rows = _transport(entries, counts, low)
    if rows is None:
        high = low + 1
        while (rows := _transport(entries, counts, high)) is None:
            low, high = high, min(real, 2 * high)
            if low >= real:
                raise InputError(f"bucket {[sorted(e) for e in entries]} cannot be balanced.")
        while high - low > 1:  # low infeasible, high feasible
            middle = (low + high) // 2
            attempt = _transport(entries, counts, middle)
            if attempt is None:
                low = middle
            else:
                high, rows = middle, attempt
        low = high
    assert rows is not None
    left = dict(counts)
    fakes: list[dict[str, int]] = []
    for entry_rows in rows:
        fake = {}
        for v, amount in entry_rows.items():
            taken = min(amount, left.get(v, 0))
            left[v] = left.get(v, 0) - taken
            if amount > taken:
                fake[v] = amount - taken
        fakes.append(fake)
    return BucketBalance(delta=low, rows=tuple(rows), counterfeits=tuple(fakes))
