"""Split: balanced buckets into QI groups of one row per value (m-invariance paper, §4.3).

Xiao & Tao (SIGMOD 2007), §4.3. A balanced bucket with signature ``{v_1..v_s}`` and
``s·k`` rows is split in two balanced halves until every part holds exactly ``s`` rows
(one per value); the parts are the QI groups. To split a bucket, the rows of each value
``v_j`` form a list ``L_j`` sorted on one QI (counterfeits first: they have no QI value);
taking the first ``p`` rows of every list for one half (``p = 1..k-1``) gives ``k - 1``
schemes per QI, ``d·(k - 1)`` in all, and the scheme with the smallest perimeter sum wins.
The perimeter of a part is ``|part| · Σ_i l_i``, ``l_i`` the length of its smallest
interval on QI ``i`` with every QI domain normalized to [0, 1]; counterfeits count in
``|part|`` but span no interval.

Ties between schemes of equal perimeter go to the most even split (then the lower QI),
which keeps the recursion shallow on rows with equal QIs.

The implementation splits every bucket of one level of the recursion at once: per QI one
sort of all rows by (bucket, value, QI rank), done once (the order of a list survives the
splits: a split is a stable partition of every list); per level, chunk boxes are
elementwise reductions over the ``s`` lists (buckets of equal ``s`` are split together,
lists stored ``(list, chunk)``), then segmented prefix/suffix minima and maxima
(cumulative maxima over integer value codes offset per segment), so the cost per level is
``O(n·d²)`` numpy work whatever the number of buckets. Group numbers do not depend on
this layout: groups are numbered by (level, bucket, position in the bucket).

The split of a bucket depends on its own rows only (and on the order of their QI ranks):
box ends are exact integer codes of the QI values, never shifted floats, so a bucket
split alone, with other buckets, or in another process gives the same groups. Pass
``rank`` (the QI ranks of a larger table the rows came from) to break ties between equal
QI values exactly as a split of that table does (:mod:`republish.solver.bucket_tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError

__all__ = ["SplitResult", "qi_ranks", "split_bucket_min_perimeter", "split_buckets_min_perimeter"]

@dataclass(frozen=True)
class SplitResult:
    """``groups[i]``: the QI group (0..G-1) of item ``i``; ``levels``: recursion depth."""

    groups: np.ndarray
    group_count: int
    levels: int


def _segmented_cummax(values: np.ndarray, segment: np.ndarray, width: int) -> np.ndarray:
    """Cumulative maximum along the last axis, restarting at every segment.

    ``values`` are integer codes in ``[-1, width - 2]``; segments are contiguous with
    increasing ids, and adding ``width * id`` puts every segment above all earlier ones,
    so one plain cumulative maximum serves them all (exactly: integers).
    """
    offset = segment * width
    shifted = values + offset
    np.maximum.accumulate(shifted, axis=-1, out=shifted)
    shifted -= offset
    return shifted


def _segmented_cummin(values: np.ndarray, segment: np.ndarray, width: int) -> np.ndarray:
    """Cumulative minimum along the last axis, restarting at every segment (codes in
    ``[0, width - 2]``)."""
    offset = segment * width
    shifted = values - offset
    np.minimum.accumulate(shifted, axis=-1, out=shifted)
    shifted += offset
    return shifted


def _value_codes(points: np.ndarray, counterfeit: np.ndarray, rank: np.ndarray) -> tuple[
    np.ndarray, np.ndarray
]:
    """Every QI value as an integer code, increasing with the value, unique across QIs
    (QI ``a``'s codes follow QI ``a - 1``'s), -1 for counterfeits; and the value of each
    code, with NaN last (the code of "no value")."""
    d, n = rank.shape
    codes = np.empty((d, n), dtype=np.int64)
    values = []
    base = 0
    for a in range(d):
        order = np.empty(n, dtype=np.int64)
        order[rank[a]] = np.arange(n)
        ordered = points[order, a]
        real = ~counterfeit[order]
        fresh = np.r_[True, ordered[1:] != ordered[:-1]] & real
        code = np.cumsum(fresh) - 1 + base
        code[~real] = -1
        codes[a, order] = code
        values.append(ordered[fresh])
        base += int(fresh.sum())
    table = np.concatenate([*values, [np.nan]])
    small = np.int32 if base < 2**31 - 2 else np.int64
    return codes.astype(small), table


def _check_inputs(
    points: np.ndarray, values: np.ndarray, buckets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2:
        raise InputError(f"points must be an (n, d) array, got shape {points.shape}.")
    n = points.shape[0]
    value_codes = pd.factorize(np.asarray(values, dtype=object))[0].astype(np.int64)
    bucket_codes = pd.factorize(np.asarray(buckets))[0].astype(np.int64)
    if len(value_codes) != n or len(bucket_codes) != n:
        raise InputError(
            f"{n} points, {len(value_codes)} values and {len(bucket_codes)} bucket labels; "
            "give one of each per row."
        )
    finite = points[~np.isnan(points).any(axis=1)]
    if len(finite) and (finite.min() < -1e-9 or finite.max() > 1 + 1e-9):
        raise InputError("points must be normalized to [0, 1] (NaN rows are counterfeits).")
    return points, value_codes, bucket_codes


def split_buckets_min_perimeter(
    points: np.ndarray,
    values: np.ndarray,
    buckets: np.ndarray,
    rank: np.ndarray | None = None,
) -> SplitResult:
    """Split every balanced bucket into groups of one row per signature value (§4.3).

    Parameters
    ----------
    points:
        ``(n, d)`` QI values normalized to [0, 1]; a row of NaN marks a counterfeit.
    values:
        Sensitive value of every row.
    buckets:
        Bucket label of every row. Every bucket must be balanced: each of its values held
        by the same number of rows.
    rank:
        Optional ``(d, n)`` QI ranks of the rows (distinct per QI, any integers; only their
        order counts; counterfeits first): how rows with equal QI values are ordered.
        Default: the ranks of these rows alone.

    Returns
    -------
    SplitResult
        Group of every row; each group holds exactly one row per value of its bucket.
        Groups are numbered in the order they are formed: by recursion level, then bucket,
        then position in the bucket (first halves before second halves).

    Raises
    ------
    InputError
        on malformed input or an unbalanced bucket.
    """
    points, value_codes, bucket_codes = _check_inputs(points, values, buckets)
    n, d = points.shape
    if n == 0:
        return SplitResult(groups=np.zeros(0, dtype=np.int64), group_count=0, levels=0)
    counterfeit = np.isnan(points).any(axis=1)
    points = np.where(counterfeit[:, None], np.nan, points)
    rank = qi_ranks(points) if rank is None else _local_ranks(rank, n)
    # Counterfeits are -1: they span no interval.
    sources, code_values = _value_codes(points, counterfeit, rank)
    value_count = int(value_codes.max()) + 1

    # Per bucket: s values, k rows each.
    bucket_count = int(bucket_codes.max()) + 1
    list_key = bucket_codes * value_count + value_codes
    present = np.bincount(list_key, minlength=bucket_count * value_count) > 0
    pair_counts = np.bincount(list_key, minlength=bucket_count * value_count).reshape(
        bucket_count, -1)
    s_of = (pair_counts > 0).sum(axis=1)
    k_of = pair_counts.max(axis=1)
    unbalanced = np.flatnonzero(((pair_counts != 0) & (pair_counts != k_of[:, None])).any(axis=1))
    if len(unbalanced):
        bucket = int(unbalanced[0])
        per_value = pair_counts[bucket][pair_counts[bucket] > 0].tolist()
        raise InputError(
            f"bucket {bucket} is not balanced (rows per value {per_value}); balance it "
            "before splitting."
        )

    index = np.int32 if n < 2**31 - 1 else np.int64
    # Per QI, the items sorted by (bucket, value, QI rank): bucket b's s lists of k items.
    list_id = (np.cumsum(present) - 1)[list_key]
    sorted_items = _list_orders(list_id, int(present.sum()), rank, index)
    # Renumber the items in the order of QI 0, so that the items of a segment are close in
    # memory; ``rows[i]`` holds the codes of item ``i`` on every QI.
    original = sorted_items[0].copy()
    renumber = np.empty(n, dtype=index)
    renumber[original] = np.arange(n, dtype=index)
    sorted_items = renumber[sorted_items]
    rows = np.ascontiguousarray(sources[:, original].T)
    del renumber, sources

    bucket_start = np.zeros(bucket_count, dtype=np.int64)
    np.cumsum((s_of * k_of)[:-1], out=bucket_start[1:])
    # Buckets of equal s are split together (splits of buckets are independent).
    runs = [_split_class(np.flatnonzero(s_of == s), int(s), k_of, bucket_start,
                         sorted_items, rows, code_values, n)
            for s in np.unique(s_of).tolist()]
    levels = max(run.levels for run in runs)
    # Group numbers: in order of (level, bucket, position in the bucket at that level),
    # as if all buckets were split together.
    level = np.concatenate([run.level for run in runs])
    bucket_of = np.concatenate([run.bucket for run in runs])
    position = np.concatenate([run.position for run in runs])
    number = np.empty(len(level), dtype=np.int64)
    number[np.lexsort((position, bucket_of, level))] = np.arange(len(level))
    groups = np.empty(n, dtype=np.int64)
    offset = 0
    for run in runs:
        groups[original[run.items]] = number[offset + run.local]
        offset += len(run.level)
    return SplitResult(groups=groups, group_count=len(level), levels=levels)


@dataclass(frozen=True)
class _ClassRun:
    """The groups of the buckets of one signature size: item ``items[i]`` is in local group
    ``local[i]``; local group ``g`` was closed at recursion level ``level[g]``, from bucket
    ``bucket[g]``, at segment ``position[g]`` of that level."""

    items: np.ndarray
    local: np.ndarray
    level: np.ndarray
    bucket: np.ndarray
    position: np.ndarray
    levels: int


def _split_class(
    bucket_ids: np.ndarray,
    s: int,
    k_of: np.ndarray,
    bucket_start: np.ndarray,
    sorted_items: np.ndarray,
    rows: np.ndarray,
    code_values: np.ndarray,
    n: int,
) -> _ClassRun:
    """The §4.3 recursion over buckets of ``s`` values each, all segments of one level at
    once.

    ``orders[a, j, c]``: in the order of QI ``a``, the item of list ``j`` (value ``j`` of
    the segment) at chunk ``c``; the chunks of a segment (its list positions ``p``) are
    contiguous, segments in sequence. A chunk's box is then an elementwise reduction over
    the ``s`` lists, and a split is a stable partition of every list of every segment.
    """
    seg_k = k_of[bucket_ids].astype(np.int64)
    seg_bucket = bucket_ids.astype(np.int64)
    chunk_seg = np.repeat(np.arange(len(seg_k)), seg_k)
    chunk_p = np.arange(len(chunk_seg)) - np.repeat(np.cumsum(seg_k) - seg_k, seg_k)
    where = (bucket_start[bucket_ids][chunk_seg] + chunk_p)[None, :] + (
        np.arange(s)[:, None] * seg_k[chunk_seg][None, :])
    orders = sorted_items[:, where]
    items, local, level, bucket, position = [], [], [], [], []
    closed = 0
    levels = 0
    while True:
        finished = seg_k == 1
        if finished.any():
            closing = finished[chunk_seg]
            done = np.flatnonzero(finished)
            items.append(orders[0][:, closing].reshape(-1))
            local.append(np.tile(np.arange(closed, closed + len(done)), s))
            level.append(np.full(len(done), levels))
            bucket.append(seg_bucket[done])
            position.append(done)
            closed += len(done)
            keep = np.flatnonzero(~closing)
            orders = np.take(orders, keep, axis=2)
            seg_k, seg_bucket = seg_k[~finished], seg_bucket[~finished]
            chunk_seg = np.repeat(np.arange(len(seg_k)), seg_k)
        if len(seg_k) == 0:
            break
        levels += 1
        chunk_start = np.cumsum(seg_k) - seg_k
        chunk_p = np.arange(len(chunk_seg)) - chunk_start[chunk_seg]
        chosen_dim, chosen_p = _best_cuts(orders, s, seg_k, chunk_seg, chunk_p, rows,
                                          code_values)
        orders = _split_orders(orders, seg_k, chunk_seg, chunk_p, chunk_start, chosen_dim,
                               chosen_p, n)
        seg_k = np.stack([chosen_p + 1, seg_k - chosen_p - 1], axis=1).reshape(-1)
        seg_bucket = np.repeat(seg_bucket, 2)
        chunk_seg = np.repeat(np.arange(len(seg_k)), seg_k)

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    return _ClassRun(items=joined(items), local=joined(local), level=joined(level),
                     bucket=joined(bucket), position=joined(position), levels=levels)


def _list_orders(
    list_id: np.ndarray, list_count: int, rank: np.ndarray, index: type[np.integer]
) -> np.ndarray:
    """``(d, n)``: per QI, the items sorted by (list, QI rank), lists numbered in
    (bucket, value) order.

    The keys are distinct (ranks are a permutation of ``0..n-1``), so this is *the* sorted
    order: the items in rank order (inverse permutation of the ranks), then a stable
    least-significant-digit radix sort on the list number, 16 bits a pass.
    """
    d, n = rank.shape
    orders = np.empty((d, n), dtype=index)
    positions = np.arange(n, dtype=index)
    digits = max(1, (max(list_count - 1, 1).bit_length() + 15) // 16)
    for a in range(d):
        order = np.empty(n, dtype=index)
        order[rank[a]] = positions
        for digit in range(digits):
            key = ((list_id[order] >> (16 * digit)) & 0xFFFF).astype(np.uint16)
            order = order[np.argsort(key, kind="stable")]
        orders[a] = order
    return orders


def _best_cuts(
    orders: np.ndarray,
    s: int,
    k: np.ndarray,
    chunk_seg: np.ndarray,
    chunk_p: np.ndarray,
    rows: np.ndarray,
    code_values: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Cheapest scheme (QI, rows per list in the first half) of every segment (§4.3).

    The ``s`` items at list position ``p`` of a segment form chunk ``(segment, p)``; the
    first half of the cut after ``p`` is the union of chunks ``0..p``, so its box is a
    prefix maximum over chunk boxes (and the second half a suffix maximum).

    Returns the chosen QI and last list position ``p`` of the first half per segment.
    """
    width = len(code_values) + 1
    # Box ends as codes offset by segment (see _segmented_cummax): int32 when they fit.
    box = np.int32 if (len(k) + 1) * width < 2**31 - 1 else np.int64
    segment_id = chunk_seg.astype(box)
    reverse_id = segment_id[-1] - segment_id[::-1]
    no_value = len(code_values) - 1
    unsigned = np.uint32 if rows.dtype == np.int32 else np.uint64
    # Cut after list position p: first half = chunks 0..p, second half = p+1..k-1.
    cut_index = np.flatnonzero(chunk_p < k[chunk_seg] - 1)
    cut_seg = chunk_seg[cut_index]
    cut_p = chunk_p[cut_index]
    best_cost = np.full(len(cut_index), np.inf)
    best_dim = np.zeros(len(cut_index), dtype=np.int64)
    for a in range(len(orders)):
        # Chunk boxes per QI (over the s lists); then prefix (first half) and suffix
        # (second half) boxes.
        # Unsigned, a counterfeit (-1) is above every code: the minimum is the lowest
        # real code, or the top value if the chunk holds counterfeits only.
        taken = np.take(rows, orders[a, 0], axis=0)
        high = taken.copy()
        low = taken.view(unsigned).copy()
        for j in range(1, s):
            np.take(rows, orders[a, j], axis=0, out=taken)
            np.maximum(high, taken, out=high)
            np.minimum(low, taken.view(unsigned), out=low)
        high = np.ascontiguousarray(high.T, dtype=box)
        low = low.T
        empty = low == np.iinfo(unsigned).max
        low = np.ascontiguousarray(low, dtype=box)
        low[empty] = no_value
        first = _lengths(code_values, _segmented_cummax(high, segment_id, width),
                         _segmented_cummin(low, segment_id, width))
        second = _lengths(
            code_values,
            _segmented_cummax(high[:, ::-1], reverse_id, width)[:, ::-1],
            _segmented_cummin(low[:, ::-1], reverse_id, width)[:, ::-1],
        )
        cost = s * (
            (cut_p + 1) * first[cut_index] + (k[cut_seg] - cut_p - 1) * second[cut_index + 1]
        )
        better = cost < best_cost
        best_cost[better] = cost[better]
        best_dim[better] = a
    # Per segment: the cheapest cut, ties to the most even one, then the lowest p.
    cut_start = np.concatenate(([0], np.cumsum(k - 1)[:-1]))
    segment_min = np.minimum.reduceat(best_cost, cut_start)
    tolerance = 1e-9 * np.maximum(segment_min, 1.0)
    near = best_cost <= (segment_min + tolerance)[cut_seg]
    imbalance = np.abs(2 * (cut_p + 1) - k[cut_seg])
    span = int(k.max()) + 1
    score = np.where(near, imbalance, span) * span + cut_p
    chosen_p = np.minimum.reduceat(score, cut_start) % span
    chosen_dim = best_dim[cut_start + chosen_p]
    return chosen_dim, chosen_p


def _split_orders(
    orders: np.ndarray,
    k: np.ndarray,
    chunk_seg: np.ndarray,
    chunk_p: np.ndarray,
    chunk_start: np.ndarray,
    chosen_dim: np.ndarray,
    chosen_p: np.ndarray,
    n: int,
) -> np.ndarray:
    """Reorder every list of every segment, in every per-QI order, as (its first-half
    items, its second-half items), stably: the segments of the next level.

    The first half of segment ``j`` is the first ``chosen_p[j] + 1`` items of every list
    in the order of QI ``chosen_dim[j]``; every list holds that many first-half items in
    every order. With ``r`` the first-half items of a list before chunk ``c`` (``b`` of
    them before the segment), a first-half item goes to chunk ``start + r - b`` and a
    second-half one to ``start + left_k + (c - start) - (r - b)``.
    """
    d, s, chunks = orders.shape
    at_left = np.flatnonzero(chunk_p <= chosen_p[chunk_seg])
    chosen = orders[chosen_dim[chunk_seg[at_left]][None, :], np.arange(s)[:, None],
                    at_left[None, :]]
    left = np.zeros(n, dtype=bool)
    left[chosen.reshape(-1)] = True
    del chosen
    index = orders.dtype.type
    left_k = chosen_p + 1
    before = np.cumsum(left_k) - left_k
    first_offset = np.repeat((chunk_start - before).astype(index), k)
    second_base = np.repeat((left_k + before).astype(index), k)
    second_base += np.arange(chunks, dtype=index)
    list_base = (np.arange(s, dtype=np.int64) * chunks).astype(index)[:, None]
    result = np.empty_like(orders)
    for a in range(d):
        left_a = left[orders[a]]
        running = np.cumsum(left_a, axis=1, dtype=index)
        running -= left_a
        target = second_base - running
        np.copyto(target, running + first_offset, where=left_a)
        target += list_base
        result[a].reshape(-1)[target.reshape(-1)] = orders[a].reshape(-1)
    return result


def _lengths(code_values: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Sum over QIs of box lengths (box ends as codes); a box of counterfeits only (codes
    -1 and "no value", both NaN) has length 0."""
    return np.fmax(code_values[high] - code_values[low], 0.0).sum(axis=0)


def qi_ranks(points: np.ndarray) -> np.ndarray:
    """``(d, n)`` rank of every row per QI, counterfeits (rows with a NaN) first: the order
    :func:`split_buckets_min_perimeter` uses for rows with equal values."""
    points = np.asarray(points, dtype=np.float64)
    counterfeit = np.isnan(points).any(axis=1)
    n, d = points.shape
    rank = np.empty((d, n), dtype=np.int64)
    for a in range(d):
        key = np.where(counterfeit, -np.inf, points[:, a])
        rank[a, np.argsort(key)] = np.arange(n)
    return rank


def _local_ranks(rank: np.ndarray, n: int) -> np.ndarray:
    """Given ranks (distinct per QI, any integers) as ranks ``0..n-1`` in the same order."""
    rank = np.asarray(rank)
    if rank.ndim != 2 or rank.shape[1] != n:
        raise InputError(f"rank must be a (d, {n}) array, got shape {rank.shape}.")
    local = np.empty(rank.shape, dtype=np.int64)
    for a in range(rank.shape[0]):
        row = rank[a]
        if n and row.dtype.kind in "iu" and row.min() >= 0 and row.max() < n and (
                np.bincount(row, minlength=n) == 1).all():
            local[a] = row  # already ranks 0..n-1
        else:
            local[a, np.argsort(row, kind="stable")] = np.arange(n)
    return local


def split_bucket_min_perimeter(points: np.ndarray, values: np.ndarray) -> SplitResult:
    """Split one balanced bucket (see :func:`split_buckets_min_perimeter`)."""
    points = np.asarray(points, dtype=np.float64)
    return split_buckets_min_perimeter(points, values, np.zeros(len(points), dtype=np.int64))
