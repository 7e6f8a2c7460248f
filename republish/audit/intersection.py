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
QI point are found in rank space (per QI, the index among the distinct values) by a grid
join -- the cheapest of the grids over one to three QIs, its cost (candidate pairs plus
expanded cells) computed exactly with prefix sums -- followed by an exact containment
test; the masks of covering boxes are OR-ed per point and AND-ed across releases.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from republish.audit.knowledge import Knowledge
from republish.errors import InputError
from republish.generalization import parse_cell
from republish.release import GROUP, Release
from republish.schema import Schema

WORD = 64
#: Cells of a join grid; bounds the memory of the grid and the per-box expansion.
GRID_CELLS = 1 << 17
#: Candidate pairs tested per chunk of the join.
CHUNK = 1 << 22


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


def _codes_of(column: pd.Series, values: Sequence[str]) -> np.ndarray:
    """Positions in ``values`` of the (stripped) sensitive values of a column."""
    raw_codes, raw_uniques = pd.factorize(column.to_numpy(), use_na_sentinel=False)
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
        values.update(str(v).strip() for v in pd.unique(frame[schema.sensitive].to_numpy()))
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
        raw_codes, raw_uniques = pd.factorize(published[qi.name].to_numpy(), use_na_sentinel=False)
        cleaned = np.array([str(text).strip() for text in raw_uniques], dtype=object)
        clean_codes, clean_uniques = pd.factorize(cleaned)
        codes = clean_codes[raw_codes]
        columns.append(codes)
        parsed.append(np.array([parse_cell(qi, t) for t in clean_uniques]).reshape(-1, 2))
        radix *= max(1, len(clean_uniques))
        key = key * max(1, len(clean_uniques)) + codes
    if radix < 2**62:
        box_of_row, box_keys = pd.factorize(key)
        first = np.full(len(box_keys), len(key), dtype=np.int64)
        np.minimum.at(first, box_of_row, np.arange(len(key)))
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
        owner = pd.factorize(published[GROUP].to_numpy())[0]
    else:
        owner = box_of_row
    signature = np.zeros((int(owner.max(initial=-1)) + 1, words), dtype=np.uint64)
    for word in range(words):
        chosen = value_code // WORD == word
        np.bitwise_or.at(signature[:, word], owner[chosen], bits[chosen])
        np.bitwise_or.at(masks[:, word], box_of_row, signature[owner, word])
    return PublishedBoxes(low=low, high=high, masks=masks)


def _ranks(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rank space: per QI, a point's index among the distinct point values and every
    box's first and last covered index, so containment is an integer comparison.
    Also the number of distinct values per QI."""
    p, d = points.shape
    point_rank = np.empty((p, d), dtype=np.int32)
    box_low = np.empty(low.shape, dtype=np.int32)
    box_high = np.empty(high.shape, dtype=np.int32)
    distinct_counts = np.empty(d, dtype=np.int64)
    for j in range(d):
        distinct, inverse = np.unique(points[:, j], return_inverse=True)
        point_rank[:, j] = inverse.reshape(-1)
        box_low[:, j] = np.searchsorted(distinct, low[:, j], side="left")
        box_high[:, j] = np.searchsorted(distinct, high[:, j], side="right") - 1
        distinct_counts[j] = len(distinct)
    return point_rank, box_low, box_high, distinct_counts


def _grid_cost(
    point_bins: list[np.ndarray],
    box_low: list[np.ndarray],
    box_high: list[np.ndarray],
    shape: tuple[int, ...],
) -> float:
    """Exact candidate pairs plus expanded cells of a grid join (prefix sums)."""
    histogram = np.bincount(
        np.ravel_multi_index(tuple(point_bins), shape), minlength=int(np.prod(shape))
    ).reshape(shape)
    prefix = np.pad(histogram, [(1, 0)] * len(shape))
    for axis in range(len(shape)):
        prefix = np.cumsum(prefix, axis=axis)
    candidates = np.zeros(len(box_low[0]), dtype=np.int64)
    for corner in itertools.product((0, 1), repeat=len(shape)):
        index = tuple(
            hi + 1 if c else lo for c, lo, hi in zip(corner, box_low, box_high, strict=True)
        )
        sign = (-1) ** (len(shape) - sum(corner))
        candidates += sign * prefix[index]
    cells = np.prod([hi - lo + 1 for lo, hi in zip(box_low, box_high, strict=True)], axis=0)
    return float(np.sum(candidates) + np.sum(cells))


def _ragged_arange(lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(n)`` for every ``n`` in ``lengths``."""
    total = int(lengths.sum())
    starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)


@dataclass(frozen=True)
class _Grid:
    """The chosen join grid: its QIs, bins of points, per-QI bin ranges of boxes, and
    which QIs it resolves exactly (one bin per distinct value: no check needed)."""

    dims: tuple[int, ...]
    shape: tuple[int, ...]
    point_bins: list[np.ndarray]
    box_low: list[np.ndarray]
    box_high: list[np.ndarray]
    exact: tuple[bool, ...]


def _plan(
    point_rank: np.ndarray, box_low: np.ndarray, box_high: np.ndarray, distinct: np.ndarray
) -> _Grid:
    """The cheapest grid over one to three QIs (among the four best single QIs)."""
    d = point_rank.shape[1]
    binned: dict[tuple[int, int], tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

    def bin_dimension(j: int, bins: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        if (j, bins) not in binned:
            if distinct[j] <= bins:
                binned[j, bins] = (int(distinct[j]), point_rank[:, j], box_low[:, j],
                                   box_high[:, j])
            else:  # point-mass quantiles of the ranks
                quantiles = np.linspace(0.0, 1.0, bins + 1)[:-1]
                edges = np.unique(np.quantile(point_rank[:, j], quantiles, method="lower"))
                binned[j, bins] = (
                    len(edges),
                    np.searchsorted(edges, point_rank[:, j], side="right") - 1,
                    np.searchsorted(edges, box_low[:, j], side="right") - 1,
                    np.searchsorted(edges, box_high[:, j], side="right") - 1,
                )
        return binned[j, bins]

    def grid(dims: tuple[int, ...]) -> tuple[float, _Grid]:
        per_dim = max(2, int(round(GRID_CELLS ** (1.0 / len(dims)))))
        parts = [bin_dimension(j, per_dim) for j in dims]
        shape = tuple(part[0] for part in parts)
        plan = _Grid(
            dims=dims,
            shape=shape,
            point_bins=[part[1] for part in parts],
            box_low=[part[2] for part in parts],
            box_high=[part[3] for part in parts],
            exact=tuple(bool(distinct[j] == size) for j, size in zip(dims, shape, strict=True)),
        )
        return _grid_cost(plan.point_bins, plan.box_low, plan.box_high, shape), plan

    singles = sorted((grid((j,)) + (j,) for j in range(d)), key=lambda item: item[0])
    best_cost, best, _ = singles[0]
    chosen = sorted(item[2] for item in singles[:4])
    for k in (2, 3):
        for dims in itertools.combinations(chosen, k):
            cost, candidate = grid(dims)
            if cost < best_cost:
                best_cost, best = cost, candidate
    return best


def _covering_chunks(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs ``(point, box)`` with the box covering the point, in bounded chunks."""
    points = np.asarray(points, dtype=np.float64)
    if len(points) == 0 or len(low) == 0:
        return
    point_rank, rank_low, rank_high, distinct = _ranks(points, low, high)
    # Boxes covering no point value on some QI drop out here, so every bin range is valid.
    useful = np.flatnonzero(np.all(rank_low <= rank_high, axis=1))
    if not len(useful):
        return
    rank_low, rank_high = rank_low[useful], rank_high[useful]
    plan = _plan(point_rank, rank_low, rank_high, distinct)
    shape, k = plan.shape, len(plan.shape)
    point_cell = np.ravel_multi_index(tuple(plan.point_bins), shape)
    order = np.argsort(point_cell, kind="stable")
    population = np.bincount(point_cell, minlength=int(np.prod(shape)))
    start = np.cumsum(population) - population

    # Expand every box into the grid cells it overlaps, one QI at a time.
    box = np.arange(len(useful))
    cell_parts: list[np.ndarray] = []
    for axis in range(k):
        lo = plan.box_low[axis][box]
        span = plan.box_high[axis][box] - lo + 1
        offset = _ragged_arange(span)
        box = np.repeat(box, span)
        cell_parts = [np.repeat(part, span) for part in cell_parts]
        cell_parts.append(np.repeat(lo, span) + offset)
    cell = np.ravel_multi_index(tuple(cell_parts), shape)
    keep = population[cell] > 0
    box, cell = box[keep], cell[keep]

    checked = [j for j in range(points.shape[1])
               if not any(j == g and e for g, e in zip(plan.dims, plan.exact, strict=True))]
    lengths = population[cell]
    boundaries = np.searchsorted(np.cumsum(lengths), np.arange(CHUNK, int(lengths.sum()), CHUNK))
    for part_box, part_cell, part_len in zip(
        np.split(box, boundaries), np.split(cell, boundaries), np.split(lengths, boundaries),
        strict=True,
    ):
        candidate_box = np.repeat(part_box, part_len)
        candidate_point = order[np.repeat(start[part_cell], part_len) + _ragged_arange(part_len)]
        inside = np.ones(len(candidate_box), dtype=bool)
        for j in checked:
            rank = point_rank[candidate_point, j]
            inside &= (rank_low[candidate_box, j] <= rank) & (rank <= rank_high[candidate_box, j])
        yield candidate_point[inside], useful[candidate_box[inside]]


def covering_pairs(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(point, box)`` with ``low[box] <= points[point] <= high[box]``."""
    chunks = list(_covering_chunks(points, low, high))
    if not chunks:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return (np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]))


def candidate_sets(points: np.ndarray, boxes: PublishedBoxes) -> np.ndarray:
    """``t.CSS(j)`` of every point as a bitmask: OR of the masks of the covering boxes."""
    masks = np.zeros((len(points), boxes.masks.shape[1]), dtype=np.uint64)
    for point_index, box_index in _covering_chunks(points, boxes.low, boxes.high):
        for word in range(masks.shape[1]):
            np.bitwise_or.at(masks[:, word], point_index, boxes.masks[box_index, word])
    return masks


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
