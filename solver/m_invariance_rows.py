"""Rows for the count decisions of an m-invariant release, and the groups they form.

The phases of :mod:`republish.solver.m_invariance` decide counts (how many new rows of a
value join a bucket, how many counterfeits); this module turns those counts into concrete
rows of ``T(n)`` placed in buckets, then splits the buckets into QI groups
(:mod:`republish.heuristics.perimeter_split`). An exact model that decides the counts
instead of the greedy phases reuses it unchanged.

Counterfeits never form a group on their own: a bucket holding ``q`` counterfeits of
*every* value of its signature drops ``q`` of each (the bucket stays balanced), after
which some value of each bucket holds only real rows, so every group of the split (one
row per value) holds a real row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from republish.errors import InputError
from republish.heuristics.balancing import Balancing
from republish.heuristics.perimeter_split import SplitResult, split_buckets_min_perimeter

__all__ = [
    "Workspace",
    "drop_redundant_counterfeits",
    "form_groups",
    "place_assignment",
    "place_balancing",
    "place_old_rows",
]


@dataclass
class Workspace:
    """Rows and counterfeits placed in buckets so far, and the new rows not yet placed.

    ``rows[i]`` is a row of ``T(n)`` (-1 for a counterfeit); ``pool[v]`` the unplaced new
    rows of value ``v`` in random order.
    """

    domain: list[str]
    signatures: list[frozenset[str]]
    pool: dict[str, np.ndarray]
    rows: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    buckets: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.code = {v: i for i, v in enumerate(self.domain)}
        self.bucket_of = {signature: b for b, signature in enumerate(self.signatures)}

    def bucket(self, signature: frozenset[str]) -> int:
        """The bucket with ``signature``, created when missing."""
        if signature not in self.bucket_of:
            self.bucket_of[signature] = len(self.signatures)
            self.signatures.append(signature)
        return self.bucket_of[signature]

    def bucket_sizes(self) -> dict[frozenset[str], int]:
        """Items (rows and counterfeits) placed so far per signature (the reuse policy's
        tie-break, :func:`republish.heuristics.assign_reuse.assign_reusing`)."""
        sizes: dict[frozenset[str], int] = {}
        for rows, buckets in zip(self.rows, self.buckets, strict=True):
            if len(rows):
                signature = self.signatures[int(buckets[0])]
                sizes[signature] = sizes.get(signature, 0) + len(rows)
        return sizes

    def add(self, rows: np.ndarray, value: int, bucket: int) -> None:
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.values.append(np.full(len(rows), value, dtype=np.int64))
        self.buckets.append(np.full(len(rows), bucket, dtype=np.int64))

    def take_new(self, value: str, count: int, bucket: int) -> int:
        """Move up to ``count`` new rows of ``value`` into ``bucket``; returns how many."""
        rows = self.pool.get(value, np.zeros(0, dtype=np.int64))[:count]
        if len(rows):
            self.add(rows, self.code[value], bucket)
            self.pool[value] = self.pool[value][len(rows):]
        return len(rows)

    def add_counterfeits(self, value: str, count: int, bucket: int) -> None:
        self.add(np.full(count, -1, dtype=np.int64), self.code[value], bucket)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        def join(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

        return join(self.rows), join(self.values), join(self.buckets)


def drop_redundant_counterfeits(
    rows: np.ndarray, values: np.ndarray, buckets: np.ndarray, bucket_count: int, width: int
) -> np.ndarray:
    """Keep-mask that drops ``q`` counterfeits of every value of a bucket holding ``q`` of each.

    Afterwards some value of each bucket holds real rows only, so each group of the split
    (one row per value) holds a real row.
    """
    keep = np.ones(len(rows), dtype=bool)
    fake = rows < 0
    if not fake.any():
        return keep
    signature_size = np.bincount(
        np.unique(buckets * width + values) // width, minlength=bucket_count
    )
    fake_pairs, fake_counts = np.unique(buckets[fake] * width + values[fake], return_counts=True)
    fake_buckets = fake_pairs // width
    for bucket in np.unique(fake_buckets).tolist():
        mine = fake_buckets == bucket
        if mine.sum() < signature_size[bucket]:
            continue  # some value of the bucket has no counterfeit
        q = int(fake_counts[mine].min())
        for value in (fake_pairs[mine] % width).tolist():
            positions = np.flatnonzero(fake & (buckets == bucket) & (values == value))
            keep[positions[:q]] = False
    return keep


def place_old_rows(work: Workspace, old: np.ndarray, bucket_of_row: np.ndarray,
                    codes_sa: np.ndarray) -> None:
    """Division: previously published rows go to the bucket of their last signature."""
    if not len(old):
        return
    width = len(work.domain)
    order = np.lexsort((codes_sa[old], bucket_of_row))
    rows = old[order]
    pair = bucket_of_row[order] * width + codes_sa[rows]
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    for first, last in zip(starts.tolist(), [*starts[1:].tolist(), len(rows)], strict=True):
        bucket, value = divmod(int(pair[first]), width)
        work.add(rows[first:last], value, bucket)


def place_balancing(work: Workspace, balancing: Balancing) -> None:
    """Balancing's counts become rows: new rows of the value, then counterfeits."""
    for bucket, (taken, faked) in enumerate(
        zip(balancing.from_new, balancing.counterfeits, strict=True)
    ):
        for value, count in taken.items():
            work.take_new(value, count, bucket)
        for value, count in faked.items():
            work.add_counterfeits(value, count, bucket)


def place_assignment(work: Workspace, moves: tuple[tuple[tuple[str, ...], int], ...]) -> None:
    """Assign's moves become rows; a value's counterfeits go to its last moves."""
    for values, alpha in moves:
        bucket = work.bucket(frozenset(values))
        for value in values:
            real = work.take_new(value, alpha, bucket)
            if alpha > real:
                work.add_counterfeits(value, alpha - real, bucket)


def form_groups(
    work: Workspace,
    normalized: np.ndarray,
    splitter: Callable[[np.ndarray, np.ndarray, np.ndarray], SplitResult] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Split every bucket into groups; returns item rows, values, buckets, groups, levels.

    ``splitter`` replaces the §4.3 split (same arguments and result), e.g. the exact group
    formation of :func:`republish.solver.m_invariance_exact.exact_splitter`.
    """
    item_rows, item_values, item_buckets = work.arrays()
    keep = drop_redundant_counterfeits(
        item_rows, item_values, item_buckets, len(work.signatures), len(work.domain)
    )
    item_rows, item_values, item_buckets = item_rows[keep], item_values[keep], item_buckets[keep]
    real = item_rows >= 0
    if not real.any():
        raise InputError(
            "nothing to publish: every row of T(n) is new and was deferred to make the new "
            "rows m-eligible; use eligibility 'counterfeit' or 'hybrid', or a lower m."
        )
    points = np.full((len(item_rows), normalized.shape[1]), np.nan)
    points[real] = normalized[item_rows[real]]
    split = (splitter or split_buckets_min_perimeter)(points, item_values, item_buckets)
    return item_rows, item_values, item_buckets, split.groups, split.levels
