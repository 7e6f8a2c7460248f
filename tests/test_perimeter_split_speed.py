"""The vectorized §4.3 split (Xiao & Tao, SIGMOD 2007, §4.3; issue 17, scale) gives exactly
the groups, group numbers and recursion depth of the implementation it replaced.

The previous :mod:`republish.heuristics.perimeter_split` is kept below, verbatim, as the
reference; hypothesis compares both on random balanced buckets (points with many ties,
counterfeits, several buckets of m = 2..5 values each, explicit QI ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import republish.heuristics.perimeter_split as fast
from republish.errors import InputError

# ---------------------------------------------------------------------------------------
# Reference: heuristics/perimeter_split.py before the speed-up (verbatim).
# ---------------------------------------------------------------------------------------

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
    # QI-major codes, so the per-chunk reductions run over contiguous memory.
    # Counterfeits are -1: they span no interval.
    sources, code_values = _value_codes(points, counterfeit, rank)
    value_count = int(value_codes.max()) + 1

    # Per bucket: s values, k rows each.
    bucket_count = int(bucket_codes.max()) + 1
    pair_counts = np.bincount(bucket_codes * value_count + value_codes,
                              minlength=bucket_count * value_count).reshape(bucket_count, -1)
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

    groups = np.full(n, -1, dtype=np.int64)
    # Segments (parts of buckets) are laid out contiguously, in the same sequence, in
    # every per-QI order; inside a segment, items are sorted by (value, QI rank).
    orders = []
    list_key = (bucket_codes * value_count + value_codes) * n
    for a in range(d):
        orders.append(np.argsort(list_key + rank[a]))
    seg_s = s_of.astype(np.int64)
    seg_k = k_of.astype(np.int64)
    next_group = 0
    levels = 0
    while True:
        orders, seg_s, seg_k, next_group = _close_finished(
            orders, seg_s, seg_k, groups, next_group
        )
        if len(seg_s) == 0:
            break
        levels += 1
        chosen_dim, chosen_p, p = _best_cuts(orders, seg_s, seg_k, sources, code_values)
        seg_size = seg_s * seg_k
        left = np.zeros(n, dtype=bool)
        at_left = p <= np.repeat(chosen_p, seg_size)
        dim_of_pos = np.repeat(chosen_dim, seg_size)
        for a in range(d):
            left[orders[a][at_left & (dim_of_pos == a)]] = True
        seg_start = np.concatenate(([0], np.cumsum(seg_size)[:-1]))
        left_size = seg_s * (chosen_p + 1)
        orders = [
            _stable_partition(order, left[order], seg_size, seg_start, left_size)
            for order in orders
        ]
        seg_s = np.repeat(seg_s, 2)
        seg_k = np.stack([chosen_p + 1, seg_k - chosen_p - 1], axis=1).reshape(-1)
    return SplitResult(groups=groups, group_count=next_group, levels=levels)


def _close_finished(
    orders: list[np.ndarray],
    seg_s: np.ndarray,
    seg_k: np.ndarray,
    groups: np.ndarray,
    next_group: int,
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, int]:
    """Turn segments of one row per value (k = 1) into groups; drop them from the orders."""
    finished = seg_k == 1
    if not finished.any():
        return orders, seg_s, seg_k, next_group
    seg_size = seg_s * seg_k
    seg_of_pos = np.repeat(np.arange(len(seg_s)), seg_size)
    closing = finished[seg_of_pos]
    group_of_segment = np.cumsum(finished) - 1 + next_group
    groups[orders[0][closing]] = group_of_segment[seg_of_pos[closing]]
    next_group += int(finished.sum())
    keep = ~closing
    return [order[keep] for order in orders], seg_s[~finished], seg_k[~finished], next_group


def _best_cuts(
    orders: list[np.ndarray],
    seg_s: np.ndarray,
    seg_k: np.ndarray,
    sources: np.ndarray,
    code_values: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cheapest scheme (QI, rows per list in the first half) of every segment.

    The ``s`` items at list position ``p`` of a segment form chunk ``(segment, p)``; the
    first half of the cut after ``p`` is the union of chunks ``0..p``, so its box is a
    prefix maximum over chunk boxes (and the second half a suffix maximum).

    Returns the chosen QI and last list position ``p`` of the first half per segment, and
    the list position of every position of the orders.
    """
    s, k = seg_s, seg_k
    size = s * k
    count = int(size.sum())
    segments = len(s)
    seg_start = np.concatenate(([0], np.cumsum(size)[:-1]))
    chunk_start = np.concatenate(([0], np.cumsum(k)[:-1]))
    start_pos = np.repeat(seg_start, size)
    local = np.arange(count) - start_pos
    k_pos = np.repeat(k, size)
    list_index = local // k_pos
    p = local - list_index * k_pos
    # Positions in (segment, p, list) order: the s items of one chunk are adjacent.
    slot = start_pos + p * np.repeat(s, size) + list_index
    by_slot = np.empty(count, dtype=np.int64)
    by_slot[slot] = np.arange(count)
    total_chunks = int(k.sum())
    chunk_seg = np.repeat(np.arange(segments), k)
    chunk_p = np.arange(total_chunks) - chunk_start[chunk_seg]
    chunk_first = seg_start[chunk_seg] + chunk_p * s[chunk_seg]
    segment_id = chunk_seg.astype(np.int64)
    reverse_id = segment_id[-1] - segment_id[::-1]
    width = len(code_values) + 1
    no_value = len(code_values) - 1
    # Cut after list position p: first half = chunks 0..p, second half = p+1..k-1.
    cut_index = np.flatnonzero(chunk_p < k[chunk_seg] - 1)
    cut_seg = chunk_seg[cut_index]
    cut_p = chunk_p[cut_index]
    best_cost = np.full(len(cut_index), np.inf)
    best_dim = np.zeros(len(cut_index), dtype=np.int64)
    for a, order in enumerate(orders):
        items = order[by_slot]
        # Chunk boxes per QI; then prefix (first half) and suffix (second half) boxes.
        taken = np.take(sources, items, axis=1)
        high = np.maximum.reduceat(taken, chunk_first, axis=1).astype(np.int64)
        taken[taken < 0] = no_value
        low = np.minimum.reduceat(taken, chunk_first, axis=1).astype(np.int64)
        first = _lengths(code_values, _segmented_cummax(high, segment_id, width),
                         _segmented_cummin(low, segment_id, width))
        second = _lengths(
            code_values,
            _segmented_cummax(high[:, ::-1], reverse_id, width)[:, ::-1],
            _segmented_cummin(low[:, ::-1], reverse_id, width)[:, ::-1],
        )
        cost = s[cut_seg] * (
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
    return chosen_dim, chosen_p, p


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


def _stable_partition(
    order: np.ndarray,
    left: np.ndarray,
    seg_size: np.ndarray,
    seg_start: np.ndarray,
    left_size: np.ndarray,
) -> np.ndarray:
    """Reorder every segment as (its first-half items, its second-half items), stably.

    With ``r`` the first-half items before position ``i`` (``b`` of them before the
    segment), a first-half item goes to ``start + r - b`` and a second-half one to
    ``start + left_size + (i - start) - (r - b)``.
    """
    left_int = left.astype(np.int64)
    running = np.cumsum(left_int) - left_int
    before_segment = running[seg_start]
    first_offset = np.repeat(seg_start - before_segment, seg_size)
    second_offset = np.repeat(left_size + before_segment, seg_size)
    target = np.where(
        left, running + first_offset, np.arange(len(order)) - running + second_offset
    )
    result = np.empty_like(order)
    result[target] = order
    return result


def split_bucket_min_perimeter(points: np.ndarray, values: np.ndarray) -> SplitResult:
    """Split one balanced bucket (see :func:`split_buckets_min_perimeter`)."""
    points = np.asarray(points, dtype=np.float64)
    return split_buckets_min_perimeter(points, values, np.zeros(len(points), dtype=np.int64))


# ---------------------------------------------------------------------------------------
# Tests.
# ---------------------------------------------------------------------------------------


@st.composite
def _bucket_sets(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Balanced buckets (m = 2..5 values, k rows per value), points on coarse grids (many
    ties), some counterfeit (NaN) rows, rows of all buckets shuffled together."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 4))
    bucket_count = draw(st.integers(1, 5))
    same_m = draw(st.booleans())
    m_all = draw(st.integers(2, 5))
    fake = draw(st.sampled_from([0.0, 0.05, 0.3]))
    grid = draw(st.sampled_from([1, 2, 5, 40]))
    points, values, buckets = [], [], []
    for bucket in range(bucket_count):
        s = m_all if same_m else int(rng.integers(2, 6))
        k = int(rng.integers(1, draw(st.sampled_from([3, 12, 40]))))
        n = s * k
        p = rng.integers(0, grid + 1, (n, d)) / grid
        p[rng.random(n) < fake] = np.nan
        points.append(p)
        values.append(np.repeat(rng.choice(20, s, replace=False), k))
        buckets.append(np.full(n, bucket * 7 + 3))
    order = rng.permutation(sum(len(v) for v in values))
    return (np.concatenate(points)[order], np.concatenate(values)[order],
            np.concatenate(buckets)[order])


def _same(new: fast.SplitResult, old: SplitResult) -> None:
    assert np.array_equal(new.groups, old.groups)
    assert new.groups.dtype == old.groups.dtype
    assert new.group_count == old.group_count
    assert new.levels == old.levels


@settings(max_examples=300, deadline=None)
@given(_bucket_sets())
def test_split_equals_the_reference(case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    points, values, buckets = case
    _same(fast.split_buckets_min_perimeter(points, values, buckets),
          split_buckets_min_perimeter(points, values, buckets))


@settings(max_examples=100, deadline=None)
@given(_bucket_sets(), st.integers(0, 2**32 - 1))
def test_split_with_given_ranks_equals_the_reference(
    case: tuple[np.ndarray, np.ndarray, np.ndarray], seed: int
) -> None:
    points, values, buckets = case
    rng = np.random.default_rng(seed)
    # Ranks of a larger table: distinct, any integers, counterfeits first.
    rank = qi_ranks(points) * 3 + rng.integers(0, 3, (points.shape[1], 1))
    rank = rank[:, rng.permutation(len(points))] if rng.random() < 0.3 else rank
    _same(fast.split_buckets_min_perimeter(points, values, buckets, rank),
          split_buckets_min_perimeter(points, values, buckets, rank))


@settings(max_examples=50, deadline=None)
@given(_bucket_sets())
def test_labels_of_any_type(case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    points, values, buckets = case
    values = np.array([f"v{v}" for v in values.tolist()], dtype=object)
    buckets = np.array([f"b{b}" for b in buckets.tolist()], dtype=object)
    _same(fast.split_buckets_min_perimeter(points, values, buckets),
          split_buckets_min_perimeter(points, values, buckets))
    one = buckets == buckets[0]
    _same(fast.split_bucket_min_perimeter(points[one], values[one]),
          split_bucket_min_perimeter(points[one], values[one]))


@pytest.mark.parametrize("m", [2, 3, 5, 10])
def test_census_like_buckets_of_many_rows(m: int) -> None:
    rng = np.random.default_rng(m)
    sizes = [1, 2, 7, 60, 700, 2500]
    points = np.column_stack([rng.integers(0, 79, m * sum(sizes)) / 78,
                              rng.integers(0, 2, m * sum(sizes)) / 1.0,
                              rng.integers(0, 17, m * sum(sizes)) / 16])
    points[rng.random(len(points)) < 0.02] = np.nan
    values = np.concatenate([np.repeat(rng.choice(40, m, replace=False), k) for k in sizes])
    buckets = np.repeat(np.arange(len(sizes)), [m * k for k in sizes])
    order = rng.permutation(len(points))
    points, values, buckets = points[order], values[order], buckets[order]
    _same(fast.split_buckets_min_perimeter(points, values, buckets),
          split_buckets_min_perimeter(points, values, buckets))


def test_empty_and_unbalanced_inputs_as_before() -> None:
    empty = np.zeros((0, 2))
    _same(fast.split_buckets_min_perimeter(empty, np.zeros(0), np.zeros(0)),
          split_buckets_min_perimeter(empty, np.zeros(0), np.zeros(0)))
    points = np.random.default_rng(0).random((5, 2))
    values, buckets = np.array([1, 1, 2, 3, 3]), np.zeros(5)
    with pytest.raises(InputError) as new:
        fast.split_buckets_min_perimeter(points, values, buckets)
    with pytest.raises(InputError) as old:
        split_buckets_min_perimeter(points, values, buckets)
    assert str(new.value) == str(old.value)
