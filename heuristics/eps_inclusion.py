"""The ε-inclusion algorithm (ε-inclusion paper, §"Algorithm", Algorithm 1).

Release ``n`` from ``T(n)``, the last signature of every row published before and the
sensitive values, in three phases:

1. Division (lines 1-2): rows published before (``S_old``; the product also counts rows
   re-inserted after an absence) are bucketed by their last signature; a bucket holding
   ``k`` rows of its most repeated value becomes ``k`` clusters, each with at most one
   row per value. A cluster is *balanced* when every value of its signature is held by
   one of its rows.
2. Assignment (lines 3-16, the four rules): a cluster missing value ``v`` takes a new row
   of ``v`` (rule 1), else an "appropriate" new row as a *substitution record* published
   with ``v`` (rule 2; here the new row of the most frequent value the cluster can take,
   which keeps the rest eligible); the remaining new rows form new ε-distinct clusters
   (rule 3), the rows that fit no new cluster join a cluster lacking their value (rule 3,
   second part), and every cluster ends with distinct values (rule 4). When neither is
   possible the product defers the row (partial publication); a cluster that can find no
   substitute is deferred with its rows (the paper assumes this never happens).
3. Permutation (lines 17-23, Definition 2): within each group the published sensitive
   values are randomly permuted (:func:`permute_within_groups`).

The assignment is decided on counts (:func:`greedy_plan`, an :class:`AssignmentPlan`,
which the exact model of :mod:`republish.models.eps_assignment` can replace) and then
realized row by row (:func:`realize_plan`), choosing among interchangeable new rows the
ones nearest in a k-d order of the QIs so that groups stay compact in QI space.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import ParameterError

__all__ = [
    "AssignmentPlan",
    "ClusterType",
    "Clusters",
    "Placement",
    "cluster_types",
    "compose_new_clusters",
    "divide",
    "greedy_plan",
    "locality_rank",
    "max_new_clusters",
    "permute_within_groups",
    "realize_plan",
]


@dataclass(frozen=True)
class Clusters:
    """Division result: per cluster the old rows (positions in ``T(n)``), the required
    signature ``S_k``, ``present`` (``S_k`` and the rows' true values) and ``missing``
    (values of ``S_k`` no row publishes), value codes, and a locality rank (mean rank of
    its rows). ``kept_substitutes[k]`` maps an old row whose true value lies outside its
    signature (a substitution record before) to the value of ``S_k`` it keeps publishing.
    """

    rows: tuple[np.ndarray, ...]
    signature: tuple[frozenset[int], ...]
    present: tuple[frozenset[int], ...]
    missing: tuple[frozenset[int], ...]
    rank: np.ndarray
    kept_substitutes: tuple[dict[int, int], ...] = ()

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class ClusterType:
    """Interchangeable clusters: same ``present`` and ``missing`` sets, ``members`` old
    rows each."""

    present: frozenset[int]
    missing: frozenset[int]
    clusters: tuple[int, ...]
    members: int = 1

    @property
    def multiplicity(self) -> int:
        return len(self.clusters)


@dataclass(frozen=True)
class AssignmentPlan:
    """Counts of the assignment phase (per cluster type ``t`` and value ``v``).

    ``kept[t]`` clusters of type ``t`` are published (the others' rows deferred);
    ``fills[t][v]`` of them take a new row of missing value ``v``; ``substitutes[t][w]``
    new rows of value ``w`` are substitution records in them; ``extras[v]`` new rows join
    old clusters lacking ``v``; ``new_rows[v]`` rows form ``new_clusters`` new clusters;
    ``deferred[v]`` new rows are held back.
    """

    kept: tuple[int, ...]
    fills: tuple[Mapping[int, int], ...]
    substitutes: tuple[Mapping[int, int], ...]
    extras: Mapping[int, int]
    new_rows: Mapping[int, int]
    new_clusters: int
    deferred: Mapping[int, int]

    def substitutions(self, types: Sequence[ClusterType]) -> int:
        return sum(
            len(t.missing) * k - sum(f.values())
            for t, k, f in zip(types, self.kept, self.fills, strict=True)
        )

    def deferred_rows(self, types: Sequence[ClusterType]) -> int:
        dropped = sum((t.multiplicity - k) * t.members
                      for t, k in zip(types, self.kept, strict=True))
        return dropped + sum(self.deferred.values())

    def objective(self, types: Sequence[ClusterType]) -> tuple[int, int, int, int]:
        """Lexicographic cost: (deferred rows, substitutions, extras, −new clusters)."""
        return (self.deferred_rows(types), self.substitutions(types),
                sum(self.extras.values()), -self.new_clusters)


@dataclass(frozen=True)
class Placement:
    """Per row of ``T(n)``: its cluster (``-1`` deferred; old clusters first, then new
    ones) and the value code it is published with (its own unless a substitute)."""

    cluster: np.ndarray
    published: np.ndarray
    substituted: np.ndarray
    new_clusters: int


def locality_rank(points: np.ndarray, leaf_size: int = 32) -> np.ndarray:
    """Rank of every point in a k-d order (median splits on the widest side), so that
    points close in rank are close in QI space."""
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    order = np.empty(n, dtype=np.int64)
    filled = 0
    stack = [np.arange(n)]
    while stack:
        index = stack.pop()
        sub = points[index]
        spread = sub.max(axis=0) - sub.min(axis=0) if len(index) else np.zeros(1)
        widest = int(np.argmax(spread)) if len(spread) else 0
        if len(index) <= leaf_size or spread[widest] <= 0:
            leaf = index[np.argsort(sub[:, widest], kind="stable")] if len(index) else index
            order[filled:filled + len(leaf)] = leaf
            filled += len(leaf)
            continue
        half = len(index) // 2
        split = np.argpartition(sub[:, widest], half)
        stack.append(index[split[half:]])
        stack.append(index[split[:half]])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def divide(
    rows: np.ndarray,
    signature_of_row: np.ndarray,
    signatures: Sequence[frozenset[int]],
    values: np.ndarray,
    rank: np.ndarray,
    keep_substitutes: bool = True,
) -> Clusters:
    """Division (Algorithm 1, lines 1-2) of the old rows ``rows`` of ``T(n)``.

    ``signature_of_row[i]`` indexes ``signatures`` (value codes) for ``rows[i]``;
    ``values`` and ``rank`` are indexed by position in ``T(n)``. Rows of one signature
    and value are spread over the bucket's clusters in rank order.

    A row whose true value is outside its signature was a substitution record; published
    truthfully now, its value would be the only one a group adds to its old signature and
    the old members would give it away (docs/eps_inclusion.md). It stays a substitution
    record instead: it takes a missing value of a cluster of its bucket (a new cluster of
    its own when none is left). ``keep_substitutes=False`` is the paper's division (such a
    row is clustered by its true value like any other).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return Clusters((), (), (), (), np.zeros(0), ())
    signature_of_row = np.asarray(signature_of_row, dtype=np.int64)
    row_values = values[rows]
    floating = np.array([keep_substitutes and int(v) not in signatures[int(s)]
                         for v, s in zip(row_values, signature_of_row, strict=True)], dtype=bool)
    fixed = ~floating
    order = np.lexsort((rank[rows][fixed], row_values[fixed], signature_of_row[fixed]))
    bucket, value = signature_of_row[fixed][order], row_values[fixed][order]
    run_start = np.r_[True, (bucket[1:] != bucket[:-1]) | (value[1:] != value[:-1])]
    starts = np.flatnonzero(run_start)
    position = np.arange(len(order)) - starts[np.cumsum(run_start) - 1]
    key = bucket * (int(position.max(initial=0)) + 1) + position
    labels, cluster_of = np.unique(key, return_inverse=True)
    sorted_rows = rows[fixed][order]
    by_cluster = np.argsort(cluster_of, kind="stable")
    bounds = np.searchsorted(cluster_of[by_cluster], np.arange(len(labels) + 1))
    members: list[list[int]] = []
    required: list[frozenset[int]] = []
    true_values: list[set[int]] = []
    open_values: list[set[int]] = []
    kept: list[dict[int, int]] = []
    of_bucket: dict[int, list[int]] = {}
    for c in range(len(labels)):
        mine = sorted_rows[by_cluster[bounds[c]:bounds[c + 1]]]
        code = int(bucket[by_cluster[bounds[c]]])
        held = set(values[mine].tolist())
        members.append(mine.tolist())
        required.append(signatures[code])
        true_values.append(held)
        open_values.append(set(signatures[code]) - held)
        kept.append({})
        of_bucket.setdefault(code, []).append(c)
    for row, code in sorted(zip(rows[floating].tolist(), signature_of_row[floating].tolist(),
                                strict=True), key=lambda item: rank[item[0]]):
        value_code = int(values[row])
        host = next((c for c in of_bucket.get(code, [])
                     if open_values[c] and value_code not in true_values[c]), None)
        if host is None:
            host = len(members)
            members.append([])
            required.append(signatures[code])
            true_values.append(set())
            open_values.append(set(signatures[code]))
            kept.append({})
            of_bucket.setdefault(code, []).append(host)
        shown = min(open_values[host])
        members[host].append(row)
        true_values[host].add(value_code)
        open_values[host].discard(shown)
        kept[host][row] = shown
    arrays = tuple(np.asarray(m, dtype=np.int64) for m in members)
    return Clusters(
        rows=arrays,
        signature=tuple(required),
        present=tuple(frozenset(r | t) for r, t in zip(required, true_values, strict=True)),
        missing=tuple(frozenset(o) for o in open_values),
        rank=np.array([float(rank[m].mean()) for m in arrays]),
        kept_substitutes=tuple(kept),
    )


def cluster_types(clusters: Clusters) -> list[ClusterType]:
    """Group the clusters by (present, missing, old rows); unbalanced types first."""
    kinds: dict[tuple[frozenset[int], frozenset[int], int], list[int]] = {}
    for k in range(len(clusters)):
        key = (clusters.present[k], clusters.missing[k], len(clusters.rows[k]))
        kinds.setdefault(key, []).append(k)
    types = [ClusterType(p, m, tuple(ks), size) for (p, m, size), ks in kinds.items()]
    return sorted(types, key=lambda t: (-len(t.missing), sorted(t.present), t.clusters[0]))


def _category_capacity(remaining: np.ndarray, category: np.ndarray, tau: int) -> np.ndarray:
    """Per category, the largest ``z`` with ``Σ_v min(r_v, z) ≥ τ z``: how many clusters the
    category can give ``τ`` distinct values each."""
    capacity = np.zeros(int(category.max()) + 1 if len(category) else 0, dtype=np.int64)
    for c in range(len(capacity)):
        counts = remaining[category == c]
        low, high = 0, int(counts.sum()) // tau
        while low < high:  # Σ min(r, z) − τz is concave and 0 at 0
            mid = (low + high + 1) // 2
            if int(np.minimum(counts, mid).sum()) >= tau * mid:
                low = mid
            else:
                high = mid - 1
        capacity[c] = low
    return capacity


def max_new_clusters(remaining: np.ndarray, category: np.ndarray, lam: int, tau: int) -> int:
    """Largest ``N`` such that rows ``remaining`` (per value) fill ``N`` ε-distinct
    clusters, each value at most once per cluster: ``Σ_c min(N, z_c) ≥ λN``."""
    remaining = np.asarray(remaining, dtype=np.int64)
    if remaining.sum() == 0:
        return 0
    capacity = _category_capacity(remaining, np.asarray(category), tau)
    low, high = 0, int(remaining.sum()) // (lam * tau)
    while low < high:
        mid = (low + high + 1) // 2
        if int(np.minimum(capacity, mid).sum()) >= lam * mid:
            low = mid
        else:
            high = mid - 1
    return low


def _take_substitutes(
    after: np.ndarray, allowed: list[int], needed: int, per_value: int
) -> dict[int, int] | None:
    """``needed`` rows, at most ``per_value`` per value, from the most frequent values."""
    heap = [(-int(after[w]), w) for w in allowed if after[w] > 0]
    heapq.heapify(heap)
    taken: dict[int, int] = {}
    for _ in range(needed):
        while heap and taken.get(heap[0][1], 0) >= per_value:
            heapq.heappop(heap)
        if not heap:
            return None
        count, w = heapq.heappop(heap)
        taken[w] = taken.get(w, 0) + 1
        if count + 1 < 0:
            heapq.heappush(heap, (count + 1, w))
    return taken


def greedy_plan(
    types: Sequence[ClusterType],
    supply: np.ndarray,
    category: np.ndarray,
    lam: int,
    tau: int,
    allow_extras: bool = True,
) -> AssignmentPlan:
    """Algorithm 1's assignment on counts (rules 1-4, see the module docstring).

    ``supply[v]`` counts the new rows of value ``v``; ``category[v]`` is its category.
    ``allow_extras=False`` defers the rows that fit no new cluster instead of adding them
    to old clusters (line 15), whose old rows may expose them (docs/eps_inclusion.md).
    """
    if lam < 1 or tau < 1:
        raise ParameterError(f"lambda={lam}, tau={tau}: both must be at least 1.")
    remaining = np.asarray(supply, dtype=np.int64).copy()
    values = len(remaining)
    kept = [t.multiplicity for t in types]
    fills: list[dict[int, int]] = [{} for _ in types]
    substitutes: list[dict[int, int]] = [{} for _ in types]
    # Rule 1 for every cluster first: a substitute must not take a row another cluster
    # could have used to fill its missing value.
    for index, kind in enumerate(types):
        for v in sorted(kind.missing):
            count = min(kind.multiplicity, int(remaining[v]))
            if count:
                fills[index][v] = count
                remaining[v] -= count
    for index, kind in enumerate(types):
        if not kind.missing:
            continue
        allowed = [w for w in range(values) if w not in kind.present]
        for keep in range(kind.multiplicity, -1, -1):
            # Dropping clusters (their rows deferred) gives their fills back.
            fill = {v: min(keep, c) for v, c in fills[index].items() if min(keep, c) > 0}
            after = remaining.copy()
            for v, c in fills[index].items():
                after[v] += c - fill.get(v, 0)
            needed = len(kind.missing) * keep - sum(fill.values())
            taken = _take_substitutes(after, allowed, needed, keep) if needed else {}
            if taken is not None:
                for w, c in taken.items():
                    after[w] -= c
                kept[index], fills[index], substitutes[index] = keep, fill, taken
                remaining = after
                break
    clusters = max_new_clusters(remaining, category, lam, tau)
    new_rows = np.minimum(remaining, clusters)
    excess = remaining - new_rows
    room = np.zeros(values, dtype=np.int64)
    for kind, keep, taken in zip(types, kept, substitutes, strict=True):
        for v in range(values):
            if v not in kind.present:
                room[v] += keep - taken.get(v, 0)
    extras = np.minimum(excess, room) if allow_extras else np.zeros_like(excess)
    deferred = excess - extras
    return AssignmentPlan(
        kept=tuple(kept),
        fills=tuple(fills),
        substitutes=tuple(substitutes),
        extras={v: int(c) for v, c in enumerate(extras) if c},
        new_rows={v: int(c) for v, c in enumerate(new_rows) if c},
        new_clusters=int(clusters),
        deferred={v: int(c) for v, c in enumerate(deferred) if c},
    )


def compose_new_clusters(
    new_rows: Mapping[int, int], clusters: int, category: np.ndarray, lam: int, tau: int
) -> list[list[int]]:
    """Values of each of ``clusters`` new ε-distinct clusters holding ``new_rows[v]`` rows
    of every value ``v`` (each at most ``clusters``).

    Category ``c`` qualifies in a window of ``z_c`` consecutive clusters (mod ``N``), dealt
    one after another around the circle, so every cluster lies in at least ``λ`` windows
    when ``Σ z_c ≥ λN``; a window gets the category's values cyclically (``≥ τ`` distinct
    each), copies beyond the window go to the smallest clusters lacking the value.
    """
    if clusters == 0:
        if any(new_rows.values()):
            raise ParameterError("rows for new clusters but no new cluster.")
        return []
    counts = np.zeros(len(category), dtype=np.int64)
    for v, c in new_rows.items():
        counts[v] = c
    if counts.max(initial=0) > clusters:
        raise ParameterError("a value has more rows than there are new clusters.")
    capacity = np.minimum(_category_capacity(counts, np.asarray(category), tau), clusters)
    if int(capacity.sum()) < lam * clusters:
        raise ParameterError("the rows cannot fill that many ε-distinct clusters.")
    if tau == 1 and len(np.unique(category)) == len(category):
        return _blocks(counts, clusters, lam)
    members: list[set[int]] = [set() for _ in range(clusters)]
    sizes = np.zeros(clusters, dtype=np.int64)
    leftover: list[tuple[int, int]] = []
    pointer = 0
    for c in np.argsort(-capacity, kind="stable").tolist():
        z = int(capacity[c])
        own = [v for v in np.argsort(-counts, kind="stable").tolist()
               if category[v] == c and counts[v] > 0]
        if z == 0:
            leftover.extend((v, int(counts[v])) for v in own)
            continue
        window = [(pointer + i) % clusters for i in range(z)]
        pointer = (pointer + z) % clusters
        dealt = 0
        for v in own:
            inside = min(int(counts[v]), z)
            for _ in range(inside):
                target = window[dealt % z]
                members[target].add(v)
                sizes[target] += 1
                dealt += 1
            if counts[v] > inside:
                leftover.append((v, int(counts[v]) - inside))
    for v, count in leftover:
        lacking = np.array([v not in m for m in members])
        candidates = np.flatnonzero(lacking)
        chosen = candidates[np.argsort(sizes[candidates], kind="stable")[:count]]
        for target in chosen.tolist():
            members[target].add(v)
            sizes[target] += 1
    return [sorted(m) for m in members]


def _blocks(counts: np.ndarray, clusters: int, epsilon: int) -> list[list[int]]:
    """Compositions in blocks of clusters sharing one signature (every value its own
    category, ``τ = 1``), as the m-invariance paper's assignment (Fig. 3) builds buckets.

    Blocks of one signature absorb later deletions: a bucket that loses a row of every
    value shrinks by a cluster instead of needing fills or substitutions. Each step
    takes the ``g = ⌈Σ/N⌉`` most frequent values for ``α`` clusters, the largest ``α``
    keeping every value at most once per remaining cluster and ``Σ >= ε·N``.
    """
    counts = counts.copy()
    out: list[list[int]] = []
    left = clusters
    while left:
        total = int(counts.sum())
        size = -(-total // left)
        order = np.argsort(-counts, kind="stable")
        chosen, others = order[:size], order[size:]
        alpha = min(int(counts[chosen].min()), left - int(counts[others].max(initial=0)), left)
        if size > epsilon:
            alpha = min(alpha, (total - epsilon * left) // (size - epsilon))
        alpha = max(alpha, 1)
        signature = sorted(chosen.tolist())
        out.extend([signature] * alpha)
        counts[chosen] -= alpha
        left -= alpha
    return [list(s) for s in out]


class _NearestPool:
    """Items sorted by key; :meth:`take` removes the free item with the nearest key."""

    def __init__(self, keys: np.ndarray, items: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = np.asarray(keys, dtype=np.float64)[order].tolist()
        self.items = np.asarray(items)[order].tolist()
        n = len(self.items)
        self.right = list(range(n + 1))  # next free position >= i (n: none)
        self.left = list(range(n + 1))  # position p stands for item p - 1; 0: none
        self.free = n

    def _find(self, parent: list[int], i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def take(self, key: float) -> int:
        if self.free == 0:
            raise ParameterError("no item left in the pool.")
        position = bisect.bisect_left(self.keys, key)
        right = self._find(self.right, position)
        left = self._find(self.left, position) - 1  # shifted: index i+1 stands for item i
        n = len(self.items)
        if right == n or (left >= 0 and key - self.keys[left] <= self.keys[right] - key):
            chosen = left
        else:
            chosen = right
        self.right[chosen] = chosen + 1
        self.left[chosen + 1] = chosen
        self.free -= 1
        return int(self.items[chosen])

    def remaining(self) -> list[int]:
        out, i, n = [], self._find(self.right, 0), len(self.items)
        while i < n:
            out.append(int(self.items[i]))
            i = self._find(self.right, i + 1)
        return out


def realize_plan(
    clusters: Clusters,
    types: Sequence[ClusterType],
    plan: AssignmentPlan,
    new_rows: np.ndarray,
    values: np.ndarray,
    rank: np.ndarray,
    category: np.ndarray,
    lam: int,
    tau: int,
    rng: np.random.Generator,
) -> Placement:
    """Turn ``plan`` into row decisions; ``values``/``rank`` are indexed by row of ``T(n)``."""
    n = len(values)
    cluster = np.full(n, -1, dtype=np.int64)
    published = np.asarray(values, dtype=np.int64).copy()
    substituted = np.zeros(n, dtype=bool)
    new_rows = np.asarray(new_rows, dtype=np.int64)
    pools = {int(v): _NearestPool(rank[new_rows[values[new_rows] == v]],
                                  new_rows[values[new_rows] == v])
             for v in np.unique(values[new_rows]).tolist()}
    kept_clusters: list[int] = []
    substituted_in: list[set[int]] = [set() for _ in range(len(clusters))]
    for kind, keep, fill, taken in zip(types, plan.kept, plan.fills, plan.substitutes,
                                       strict=True):
        mine = list(kind.clusters[:keep])
        kept_clusters.extend(mine)
        for k in mine:
            cluster[clusters.rows[k]] = k
            for row, shown in clusters.kept_substitutes[k].items():
                published[row] = shown
                substituted[row] = True
        if not kind.missing or keep == 0:
            continue
        open_slots = {k: set(kind.missing) for k in mine}
        for v in sorted(fill, key=lambda v: -fill[v]):
            by_need = sorted(mine, key=lambda k: -len(open_slots[k]))
            for k in by_need[: fill[v]]:
                row = pools[v].take(clusters.rank[k])
                cluster[row] = k
                open_slots[k].discard(v)
        for w in sorted(taken, key=lambda w: -taken[w]):
            by_need = sorted(mine, key=lambda k: -len(open_slots[k]))[: taken[w]]
            for k in by_need:
                if not open_slots[k]:
                    raise ParameterError("substitutes do not match the open slots (bug).")
                row = pools[w].take(clusters.rank[k])
                cluster[row] = k
                published[row] = min(open_slots[k])
                open_slots[k].discard(int(published[row]))
                substituted[row] = True
                substituted_in[k].add(w)
    selected: list[int] = []
    first_new = len(clusters)
    for v, pool in pools.items():
        rest = np.asarray(pool.remaining(), dtype=np.int64)  # in rank order
        count = plan.new_rows.get(v, 0)
        spread = np.unique(np.round(np.linspace(0, len(rest) - 1, count)).astype(np.int64))
        chosen = np.zeros(len(rest), dtype=bool)
        chosen[spread[:count]] = True
        selected.extend(rest[chosen].tolist())
        others = rng.permutation(rest[~chosen])
        extra = plan.extras.get(v, 0)
        if extra:
            hosts = np.array([k for k in kept_clusters
                              if v not in clusters.present[k] and v not in substituted_in[k]],
                             dtype=np.int64)
            host_pool = _NearestPool(clusters.rank[hosts], hosts)
            for row in others[:extra].tolist():
                cluster[row] = host_pool.take(float(rank[row]))
    compositions = compose_new_clusters(plan.new_rows, plan.new_clusters, category, lam, tau)
    selected_rows = np.asarray(sorted(selected, key=lambda r: rank[r]), dtype=np.int64)
    chosen_values = values[selected_rows]
    new_pools = {int(v): _NearestPool(rank[selected_rows[chosen_values == v]],
                                      selected_rows[chosen_values == v])
                 for v in np.unique(chosen_values).tolist()}
    hosting: dict[int, list[int]] = {}
    for c, composition in enumerate(compositions):
        for v in composition:
            hosting.setdefault(v, []).append(c)
    done = np.zeros(len(compositions), dtype=bool)
    for row in selected_rows.tolist():
        if cluster[row] >= 0:
            continue
        v = int(values[row])
        while done[hosting[v][-1]]:
            hosting[v].pop()
        c = hosting[v].pop()
        done[c] = True
        for u in compositions[c]:
            # For the seed's own value the nearest free row is the seed itself.
            cluster[new_pools[u].take(float(rank[row]))] = first_new + c
    return Placement(cluster=cluster, published=published, substituted=substituted,
                     new_clusters=len(compositions))


def permute_within_groups(
    groups: np.ndarray, values: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Permutation phase (Definition 2): ``values`` randomly permuted within each group."""
    groups = np.asarray(groups)
    values = np.asarray(values)
    by_group = np.argsort(groups, kind="stable")
    shuffled = np.lexsort((rng.random(len(groups)), groups))
    out = values.copy()
    out[by_group] = values[shuffled]
    return out
