"""The intersection attack on a sequence of releases (m-invariance paper, §3.2).

For a tuple ``t`` of ``U(n)`` and a release ``j`` containing it, the candidate sensitive
set ``t.CSS(j)`` is the union of the sensitive values of the QI groups of ``T*(j)``
whose generalized QIs cover ``t``'s exact QIs (Definition 15). Every reasonable
surjection reconstructs a value in the intersection of ``t.CSS(j)`` over the releases
containing ``t`` (Lemma 2; with re-insertions the lifespan is the set of releases holding
the row, Condition 1.2 of Definition 13 applies to each of them); a single value left
means ``risk(t) = 1`` whatever the principle (Lemma 1): ``t`` is *vulnerable*.

Vectorized for large series: per release, every distinct published box carries its
sensitive values as a bitmask over the sensitive domain; the boxes covering each distinct
QI point are found by a grid join in rank space (:mod:`republish.audit.box_join`); the
masks of covering boxes are OR-ed per point and AND-ed across releases.

When the distinct point values span a small grid (the product over the QIs of their
distinct values, as in census data with coded QIs), ``t.CSS(j)`` is computed without
listing the covering pairs: per sensitive value, every box holding it adds +1/-1 at the
2^d corners of its rank range in a difference array over that grid, prefix sums along
every QI count the boxes covering each cell, and a point's value is a candidate when its
cell's count is positive. That is linear in boxes and cells, whereas the pairs grow with
how much the boxes overlap (about 20 covering boxes per point for m-invariant releases).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from republish.audit.box_join import CHUNK, GRID_CELLS, _covering_chunks, _ranks, covering_pairs
from republish.audit.knowledge import Knowledge
from republish.errors import InputError
from republish.generalization import parse_cell
from republish.release import GROUP, Release
from republish.schema import Schema

__all__ = [
    "CHUNK",
    "DENSE_CELLS",
    "GRID_CELLS",
    "WORD",
    "IntersectionAudit",
    "PublishedBoxes",
    "candidate_sets",
    "covering_pairs",
    "decode_mask",
    "intersection_attack",
    "published_boxes",
    "sensitive_domain",
]

WORD = 64
#: Largest grid (distinct point values per QI, plus one, multiplied) of the dense join.
DENSE_CELLS = 1 << 22
#: Most QIs for the dense join (every box touches 2^d corners).
DENSE_QIS = 8
#: Counters (sensitive values x grid cells) of the dense join held at once.
DENSE_BLOCK = 1 << 23


@dataclass(frozen=True)
class PublishedBoxes:
    """Distinct published boxes of one release and the sensitive values under each."""

    low: np.ndarray
    high: np.ndarray
    masks: np.ndarray  # (boxes, words) uint64 over the sensitive domain


@dataclass(frozen=True)
class IntersectionAudit:
    """Outcome of the intersection attack, one entry per tuple of ``U(n)``.

    ``rows`` indexes the knowledge table (tuples in no release are left out), ``masks``
    are the intersections as bitmasks over ``values``, ``sizes`` their sizes,
    ``releases`` how many releases contain each tuple. ``per_release[j]`` (when kept)
    holds ``t.CSS(j)`` for every tuple, zero where the tuple is absent from release j.
    """

    identifiers: np.ndarray
    rows: np.ndarray
    values: tuple[str, ...]
    masks: np.ndarray
    sizes: np.ndarray
    releases: np.ndarray
    per_release: tuple[np.ndarray, ...] = field(default=(), repr=False)

    @property
    def vulnerable(self) -> np.ndarray:
        """Lemma 1: a single value left."""
        return self.sizes == 1

    @property
    def inconsistent(self) -> np.ndarray:
        """No value left: the releases contradict the knowledge table."""
        return self.sizes == 0

    @property
    def vulnerable_ids(self) -> list[str]:
        return [str(i) for i in self.identifiers[self.vulnerable]]

    @property
    def inconsistent_ids(self) -> list[str]:
        return [str(i) for i in self.identifiers[self.inconsistent]]

    def size_distribution(self) -> dict[int, int]:
        """Intersection size -> number of tuples."""
        sizes, counts = np.unique(self.sizes, return_counts=True)
        return {int(s): int(c) for s, c in zip(sizes, counts, strict=True)}

    def candidate_set(self, index: int) -> frozenset[str]:
        """The intersection of tuple ``index`` (position in this result) as values."""
        return decode_mask(self.masks[index], self.values)

    def revealed_values(self) -> dict[str, str]:
        """Identifier -> the single value left, for every vulnerable tuple."""
        chosen = np.flatnonzero(self.vulnerable)
        masks = self.masks[chosen]
        word = np.argmax(masks != 0, axis=1)
        bits = masks[np.arange(len(chosen)), word]
        # popcount(2**k - 1) == k locates the single set bit.
        position = word * WORD + np.bitwise_count(bits - np.uint64(1)).astype(np.int64)
        return {
            str(self.identifiers[i]): self.values[p]
            for i, p in zip(chosen, position, strict=True)
        }


def decode_mask(mask: np.ndarray, values: Sequence[str]) -> frozenset[str]:
    """Values whose bits are set in one mask row."""
    found = []
    for word_index, word in enumerate(np.asarray(mask, dtype=np.uint64)):
        word = int(word)
        while word:
            low_bit = word & -word
            found.append(values[word_index * WORD + low_bit.bit_length() - 1])
            word ^= low_bit
    return frozenset(found)


def _published_frame(release: pd.DataFrame | Release) -> pd.DataFrame:
    return release.published if isinstance(release, Release) else release


def _factorized(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct values of a column (missing values get a code too).

    A categorical column gives its codes directly, with its unused categories dropped:
    no hashing of the rows' values. The order of the distinct values may differ from
    :func:`pandas.factorize`'s; callers only use the partition into equal values.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.int64)
        categories = column.cat.categories.to_numpy(dtype=object)
        if len(codes) and codes.min() < 0:  # missing values: the same code for all of them
            codes = np.where(codes < 0, len(categories), codes)
            categories = np.append(categories, np.array([np.nan], dtype=object))
        used = np.bincount(codes, minlength=len(categories)) > 0
        if not used.all():
            renumber = np.cumsum(used) - 1
            codes, categories = renumber[codes], categories[used]
        return codes, categories
    codes, uniques = pd.factorize(column.to_numpy(), use_na_sentinel=False)
    return codes, np.asarray(uniques, dtype=object)


def _distinct(column: pd.Series) -> np.ndarray:
    """The distinct values of a column, as :func:`pandas.unique` gives them; a categorical
    column gives its used categories (and NaN when values are missing)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return _factorized(column)[1]
    return np.asarray(pd.unique(column.to_numpy()), dtype=object)


def _first_rows(codes: np.ndarray, count: int) -> np.ndarray:
    """First row of every code of a :func:`pandas.factorize` result (codes numbered in
    order of first appearance: a code appears first where the running maximum grows)."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(codes)
    first = np.flatnonzero(np.diff(running, prepend=-1) > 0)
    assert len(first) == count
    return first


def _codes_of(column: pd.Series, values: Sequence[str]) -> np.ndarray:
    """Positions in ``values`` of the (stripped) sensitive values of a column."""
    raw_codes, raw_uniques = _factorized(column)
    lookup = {value: code for code, value in enumerate(values)}
    mapped = [lookup.get(str(text).strip(), -1) for text in raw_uniques]
    if -1 in mapped:
        unknown = sorted(str(t).strip() for t, c in zip(raw_uniques, mapped, strict=True) if c < 0)
        raise InputError(f"sensitive values {unknown[:5]} are outside the audited domain.")
    return np.asarray(mapped, dtype=np.int64)[raw_codes]


def sensitive_domain(releases: Sequence[pd.DataFrame | Release], schema: Schema) -> tuple[str, ...]:
    """Sorted union of the published sensitive values."""
    values: set[str] = set()
    for release in releases:
        frame = _published_frame(release)
        if schema.sensitive not in frame.columns:
            raise InputError(
                f"published table lacks the sensitive column {schema.sensitive!r}; it has "
                f"{list(frame.columns)[:12]}."
            )
        values.update(str(v).strip() for v in _distinct(frame[schema.sensitive]))
    return tuple(sorted(values))


def published_boxes(
    published: pd.DataFrame, schema: Schema, values: Sequence[str]
) -> PublishedBoxes:
    """Distinct boxes of ``T*(j)`` with the union of the sensitive values under each.

    Rows are grouped by their QI cells rather than by Group-ID: a surjection may map a
    tuple to any row whose cells cover it (Definition 10), which equals Definition 15
    when the rows of a group share their cells (Definition 2, Property 4).
    """
    missing = [c for c in schema.qi_names if c not in published.columns]
    if missing:
        raise InputError(
            f"published table lacks QI column(s) {missing}; it has {list(published.columns)[:12]}."
        )
    # Factorize first and clean only the distinct texts: 200k-row tables, few boxes.
    key = np.zeros(len(published), dtype=np.int64)
    radix = 1
    columns = []
    parsed = []
    for qi in schema.qis:
        raw_codes, raw_uniques = _factorized(published[qi.name])
        cleaned = np.array([str(text).strip() for text in raw_uniques], dtype=object)
        clean_codes, clean_uniques = pd.factorize(cleaned)
        codes = clean_codes[raw_codes]
        columns.append(codes)
        parsed.append(np.array([parse_cell(qi, t) for t in clean_uniques]).reshape(-1, 2))
        radix *= max(1, len(clean_uniques))
        key = key * max(1, len(clean_uniques)) + codes
    if radix < 2**62:
        box_of_row, box_keys = pd.factorize(key)
        first = _first_rows(box_of_row, len(box_keys))
    else:
        stacked = np.stack(columns, axis=1)
        _, first, box_of_row = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    box_of_row = box_of_row.reshape(-1)
    count = len(first)
    d = len(schema.qis)
    low = np.empty((count, d))
    high = np.empty((count, d))
    for j in range(d):
        chosen = columns[j][first]
        low[:, j] = parsed[j][chosen, 0]
        high[:, j] = parsed[j][chosen, 1]
    value_code = _codes_of(published[schema.sensitive], values)
    words = max(1, -(-len(values) // WORD))
    masks = np.zeros((count, words), dtype=np.uint64)
    bits = np.left_shift(np.uint64(1), (value_code % WORD).astype(np.uint64))
    # Under a row's cells lies its group's whole signature (Definition 15). With
    # generalization a group's rows share their cells, so this equals the rows' own values;
    # a permutation-published group (exact QIs, ε-inclusion) needs it explicitly.
    if GROUP in published.columns:
        group = published[GROUP]
        owner = (group.cat.codes.to_numpy() if isinstance(group.dtype, pd.CategoricalDtype)
                 else pd.factorize(group.to_numpy())[0])
    else:
        owner = box_of_row
    signature = np.zeros((int(owner.max(initial=-1)) + 1, words), dtype=np.uint64)
    for word in range(words):
        chosen = value_code // WORD == word
        np.bitwise_or.at(signature[:, word], owner[chosen], bits[chosen])
        np.bitwise_or.at(masks[:, word], box_of_row, signature[owner, word])
    return PublishedBoxes(low=low, high=high, masks=masks)


def candidate_sets(points: np.ndarray, boxes: PublishedBoxes) -> np.ndarray:
    """``t.CSS(j)`` of every point as a bitmask: OR of the masks of the covering boxes."""
    dense = _dense_candidate_sets(points, boxes)
    if dense is not None:
        return dense
    masks = np.zeros((len(points), boxes.masks.shape[1]), dtype=np.uint64)
    for point_index, box_index in _covering_chunks(points, boxes.low, boxes.high):
        for word in range(masks.shape[1]):
            np.bitwise_or.at(masks[:, word], point_index, boxes.masks[box_index, word])
    return masks


def _dense_candidate_sets(points: np.ndarray, boxes: PublishedBoxes) -> np.ndarray | None:
    """:func:`candidate_sets` by corner counting on the grid of the distinct point values
    (module docstring); ``None`` when that grid is too large."""
    points = np.asarray(points, dtype=np.float64)
    words = boxes.masks.shape[1]
    d = points.shape[1] if points.ndim == 2 else 0
    if len(points) == 0 or len(boxes.low) == 0 or not 1 <= d <= DENSE_QIS:
        return None
    point_rank, rank_low, rank_high, distinct = _ranks(points, boxes.low, boxes.high)
    shape = tuple(int(n) + 1 for n in distinct)  # one more cell per QI: the upper corners
    cells = math.prod(shape)
    if cells > DENSE_CELLS:
        return None
    # Boxes covering no point value on some QI cover nothing.
    useful = np.all(rank_low <= rank_high, axis=1)
    low, high = rank_low[useful].astype(np.int64), rank_high[useful].astype(np.int64) + 1
    bits = np.unpackbits(
        np.ascontiguousarray(boxes.masks[useful].astype("<u8")).view(np.uint8),
        axis=1, bitorder="little",
    )
    box_of, value_of = np.nonzero(bits)
    del bits
    point_cell = np.ravel_multi_index(tuple(point_rank.T.astype(np.int64)), shape)
    stride = np.cumprod((1, *shape[:0:-1]))[::-1]  # C order: the last QI varies fastest
    covered = np.zeros((len(points), words * WORD), dtype=bool)
    block = max(1, DENSE_BLOCK // cells)
    top = int(value_of.max(initial=-1)) + 1
    for start in range(0, top, block):
        size = min(block, top - start)
        chosen = (value_of >= start) & (value_of < start + size)
        box, offset = box_of[chosen], (value_of[chosen] - start) * cells
        ends = [(low[box, j] * stride[j], high[box, j] * stride[j]) for j in range(d)]
        count = np.zeros(size * cells, dtype=np.int32)
        # +1 at the corners with an even number of upper ends, -1 at the others: the
        # prefix sums then count the boxes covering each cell (inclusion-exclusion).
        for corner in itertools.product((0, 1), repeat=d):
            flat = offset.copy()
            for j, c in enumerate(corner):
                flat += ends[j][c]
            np.add.at(count, flat, np.int32(-1 if sum(corner) % 2 else 1))
        grid = count.reshape((size, *shape))
        for axis in range(1, d + 1):
            np.cumsum(grid, axis=axis, out=grid)
        covered[:, start:start + size] = (grid.reshape(size, cells)[:, point_cell] > 0).T
    packed = np.packbits(covered, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64)


def _distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row -> distinct-row index, and the first row of each distinct row (hashing)."""
    key = np.zeros(len(codes), dtype=np.int64)
    radix = 1
    for j in range(codes.shape[1]):
        column, uniques = pd.factorize(codes[:, j])
        radix *= max(1, len(uniques))
        key = key * max(1, len(uniques)) + column
    if radix >= 2**62:
        _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
        return inverse.reshape(-1), first
    inverse, uniques = pd.factorize(key)
    first = np.full(len(uniques), len(key), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(key)))
    return inverse, first


def intersection_attack(
    releases: Sequence[pd.DataFrame | Release],
    knowledge: Knowledge,
    keep_per_release: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> IntersectionAudit:
    """Run the intersection attack of Lemmas 1–2 on ``T*(1), ..., T*(n)``.

    ``releases[j]`` is the published table of release ``j + 1`` (a DataFrame with the
    published columns, or a :class:`Release`); ``knowledge`` is ``B(n)``; ``progress``
    is called with (releases done, releases) after each release.
    """
    schema = knowledge.schema
    if len(releases) != knowledge.release_count:
        raise InputError(
            f"{len(releases)} release(s) given but the knowledge table describes "
            f"{knowledge.release_count}; give one published table per release number."
        )
    values = sensitive_domain(releases, schema)
    words = max(1, -(-len(values) // WORD))
    present = knowledge.presence.any(axis=1)
    rows = np.flatnonzero(present)
    presence = knowledge.presence[rows]
    codes = knowledge.codes()[rows]
    point_of, first = _distinct_rows(codes)
    points = codes[first]
    full = np.uint64(np.iinfo(np.uint64).max)
    intersection = np.full((len(rows), words), full, dtype=np.uint64)
    kept: list[np.ndarray] = []
    for j, release in enumerate(releases):
        boxes = published_boxes(_published_frame(release), schema, values)
        members = np.flatnonzero(presence[:, j])
        used = np.zeros(len(points), dtype=bool)
        used[point_of[members]] = True
        rank = np.cumsum(used) - 1
        css = candidate_sets(points[used], boxes)[rank[point_of[members]]]
        intersection[members] &= css
        if keep_per_release:
            per = np.zeros((len(rows), words), dtype=np.uint64)
            per[members] = css
            kept.append(per)
        if progress is not None:
            progress(j + 1, len(releases))
    sizes = np.bitwise_count(intersection).sum(axis=1).astype(np.int64)
    return IntersectionAudit(
        identifiers=knowledge.identifiers[rows],
        rows=rows,
        values=values,
        masks=intersection,
        sizes=sizes,
        releases=presence.sum(axis=1).astype(np.int64),
        per_release=tuple(kept),
    )
