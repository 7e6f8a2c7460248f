"""The scaled intersection attack equals its earlier form (issue 17, item 5).

:func:`republish.audit.intersection.candidate_sets` now counts covering boxes on a dense
grid when the distinct point values allow it, and categorical columns are read through
their codes. The earlier forms are kept below as the reference: the covering-pair join
with ``bitwise_or.at`` and the factorizing of every column as objects.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.audit import intersection
from republish.audit.box_join import _covering_chunks
from republish.audit.intersection import (
    WORD,
    PublishedBoxes,
    candidate_sets,
    intersection_attack,
    published_boxes,
    sensitive_domain,
)
from republish.audit.knowledge import Knowledge, make_knowledge, release_lists
from republish.generalization import parse_cell, render_cell
from republish.release import GROUP
from republish.schema import QIAttribute, Schema, make_schema

# --- the reference: the module's code before the dense join -------------------------


def reference_published_boxes(
    published: pd.DataFrame, schema: Schema, values: Sequence[str]
) -> PublishedBoxes:
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
    raw_codes, raw_uniques = pd.factorize(published[schema.sensitive].to_numpy(),
                                          use_na_sentinel=False)
    lookup = {value: code for code, value in enumerate(values)}
    value_code = np.asarray([lookup[str(t).strip()] for t in raw_uniques], dtype=np.int64)[
        raw_codes]
    words = max(1, -(-len(values) // WORD))
    masks = np.zeros((count, words), dtype=np.uint64)
    bits = np.left_shift(np.uint64(1), (value_code % WORD).astype(np.uint64))
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


def reference_candidate_sets(points: np.ndarray, boxes: PublishedBoxes) -> np.ndarray:
    masks = np.zeros((len(points), boxes.masks.shape[1]), dtype=np.uint64)
    for point_index, box_index in _covering_chunks(points, boxes.low, boxes.high):
        for word in range(masks.shape[1]):
            np.bitwise_or.at(masks[:, word], point_index, boxes.masks[box_index, word])
    return masks


def reference_attack(
    releases: Sequence[pd.DataFrame], knowledge: Knowledge
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(values, masks, sizes) of the intersection attack, computed per tuple."""
    schema = knowledge.schema
    values = sensitive_domain(releases, schema)
    words = max(1, -(-len(values) // WORD))
    rows = np.flatnonzero(knowledge.presence.any(axis=1))
    presence = knowledge.presence[rows]
    codes = knowledge.codes()[rows]
    result = np.full((len(rows), words), np.uint64(np.iinfo(np.uint64).max), dtype=np.uint64)
    for j, release in enumerate(releases):
        boxes = reference_published_boxes(release, schema, values)
        members = np.flatnonzero(presence[:, j])
        result[members] &= reference_candidate_sets(codes[members], boxes)
    return values, result, np.bitwise_count(result).sum(axis=1).astype(np.int64)


# --- random series -------------------------------------------------------------------

ORDER = tuple(f"level-{k:02d}" for k in range(6))


def random_schema(numeric: int, ordered: int) -> Schema:
    qis = [QIAttribute(f"n{k}") for k in range(numeric)]
    qis += [QIAttribute(f"o{k}", kind="ordered", order=ORDER) for k in range(ordered)]
    return make_schema("id", "sa", qis)


def random_release(rng: np.random.Generator, schema: Schema, people: pd.DataFrame,
                   sa_values: Sequence[str]) -> pd.DataFrame:
    """Random groups of the rows present, each published with a random box around its
    rows' values (sometimes missing some rows, sometimes '*'), the rows' SA values and,
    at random, counterfeits; as a generalized table is, with a Group-ID."""
    groups = rng.integers(0, max(1, len(people) // 3), size=len(people))
    frames = []
    for label in np.unique(groups):
        members = people[groups == label]
        cells: dict[str, str] = {}
        for qi in schema.qis:
            column = members[qi.name]
            if qi.kind == "numeric":
                low, high = float(column.min()), float(column.max())
            else:
                code = column.map({v: i for i, v in enumerate(ORDER)})
                low, high = float(code.min()), float(code.max())
            low -= float(rng.integers(0, 3) * (rng.random() < 0.3))
            high += float(rng.integers(-1, 3) * (rng.random() < 0.3))
            if qi.kind != "numeric":
                low, high = max(low, 0.0), min(high, len(ORDER) - 1.0)
            high = max(high, low)
            cells[qi.name] = ("*" if rng.random() < 0.05
                              else render_cell(qi, low, high, "interval"))
        size = len(members) + int(rng.integers(0, 2))
        frames.extend({GROUP: int(label) * 7 + 1, **cells,
                       "sa": sa_values[int(rng.integers(0, len(sa_values)))]}
                      for _ in range(size))
    frame = pd.DataFrame(frames, columns=[GROUP, *schema.qi_names, "sa"])
    return frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)


def as_categoricals(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Text columns as categoricals, some with unused categories, some in odd order."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype != object:
            continue
        categories = list(pd.unique(out[column]))
        if rng.random() < 0.5:
            categories.append("unused-" + column)
        rng.shuffle(categories)
        out[column] = pd.Categorical(out[column], categories=categories)
    if rng.random() < 0.3:
        out[GROUP] = out[GROUP].astype("category")
    return out


@st.composite
def series(draw: st.DrawFn) -> tuple[Schema, list[pd.DataFrame], Knowledge]:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    numeric = draw(st.integers(0, 3))
    ordered = draw(st.integers(0 if numeric else 1, 2))
    schema = random_schema(numeric, ordered)
    people_count = draw(st.integers(2, 60))
    span = draw(st.sampled_from([3, 10, 1000]))  # few or many distinct numeric values
    data: dict[str, object] = {"id": [f"p{i}" for i in range(people_count)]}
    for qi in schema.qis:
        data[qi.name] = (rng.integers(0, span, size=people_count).astype(float)
                         if qi.kind == "numeric"
                         else rng.choice(np.array(ORDER, dtype=object), size=people_count))
    people = pd.DataFrame(data)
    release_count = draw(st.integers(1, 4))
    presence = rng.random((people_count, release_count)) < 0.7
    presence[np.arange(people_count), rng.integers(0, release_count, size=people_count)] = True
    sa_count = draw(st.sampled_from([2, 5, 70, 130]))  # one word, or several
    sa_values = [f"v{k:03d}" for k in range(sa_count)]
    releases = [random_release(rng, schema, people[presence[:, j]], sa_values)
                for j in range(release_count)]
    knowledge = make_knowledge(people, presence, schema)
    return schema, releases, knowledge


@settings(max_examples=60, deadline=None)
@given(case=series(), seed=st.integers(0, 1000), dense_cells=st.sampled_from([1 << 22, 8]))
def test_attack_equals_reference(case, seed: int, dense_cells: int) -> None:
    schema, releases, knowledge = case
    values, masks, sizes = reference_attack(releases, knowledge)
    rng = np.random.default_rng(seed)
    old_cells = intersection.DENSE_CELLS
    intersection.DENSE_CELLS = dense_cells  # the dense grid, or the pair join
    try:
        for frames in (releases, [as_categoricals(f, rng) for f in releases]):
            audit = intersection_attack(frames, knowledge)
            assert audit.values == values
            assert np.array_equal(audit.masks, masks)
            assert np.array_equal(audit.sizes, sizes)
            assert int(audit.vulnerable.sum()) == int((sizes == 1).sum())
    finally:
        intersection.DENSE_CELLS = old_cells


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 5),
    points=st.integers(1, 80),
    boxes=st.integers(1, 50),
    values=st.sampled_from([1, 3, 64, 65, 150]),
)
def test_candidate_sets_equal_pair_join(seed: int, d: int, points: int, boxes: int,
                                        values: int) -> None:
    rng = np.random.default_rng(seed)
    coordinates = rng.integers(0, 6, size=(points, d)).astype(float)
    a = rng.integers(-1, 7, size=(boxes, d)).astype(float) + rng.choice([0.0, 0.5], (boxes, d))
    b = rng.integers(-1, 7, size=(boxes, d)).astype(float)
    low, high = np.minimum(a, b), np.maximum(a, b)
    low[rng.random((boxes, d)) < 0.1] = -np.inf  # '*' on a numeric QI
    high[rng.random((boxes, d)) < 0.1] = np.inf
    inverted = rng.random(boxes) < 0.1  # boxes covering nothing
    low[inverted, 0], high[inverted, 0] = 9.0, 8.5
    words = max(1, -(-values // WORD))
    bits = rng.random((boxes, words * WORD)) < rng.choice([0.05, 0.5])
    bits[:, values:] = False
    masks = np.packbits(bits, axis=1, bitorder="little").view("<u8").astype(np.uint64)
    published = PublishedBoxes(low=low, high=high, masks=masks)
    assert np.array_equal(candidate_sets(coordinates, published),
                          reference_candidate_sets(coordinates, published))


def test_dense_join_is_used_and_exact_on_census_like_points() -> None:
    # Few distinct values per QI (a census): the dense grid runs (not the pair join).
    rng = np.random.default_rng(5)
    points = np.stack([rng.integers(0, 79, 3000), rng.integers(0, 2, 3000),
                       rng.integers(0, 17, 3000), rng.integers(0, 57, 3000)], axis=1)
    corner = rng.integers(0, [79, 2, 17, 57], size=(400, 4))
    low = corner.astype(float)
    high = (corner + rng.integers(0, [30, 2, 8, 20], size=(400, 4))).astype(float)
    masks = rng.integers(0, 2**50, size=(400, 1), dtype=np.uint64)
    boxes = PublishedBoxes(low=low, high=high, masks=masks)
    assert intersection._dense_candidate_sets(points.astype(float), boxes) is not None
    expected = reference_candidate_sets(points.astype(float), boxes)
    assert np.array_equal(candidate_sets(points.astype(float), boxes), expected)


def test_published_boxes_of_categoricals_cover_the_same() -> None:
    schema = random_schema(1, 1)
    frame = pd.DataFrame({
        GROUP: [1, 1, 2, 2, 3],
        "n0": ["[1, 3]", "[1, 3]", "5", "5", "[1, 3]"],
        "o0": ["level-01", "level-01", "[level-00, level-02]", "[level-00, level-02]",
               "level-01"],
        "sa": ["a", "b", "a", "c", "c"],
    })
    values = sensitive_domain([frame], schema)
    expected = reference_published_boxes(frame, schema, values)
    categorical = as_categoricals(frame, np.random.default_rng(1))
    for candidate in (frame, categorical):
        got = published_boxes(candidate, schema, values)
        got_boxes = {(tuple(lo), tuple(hi), int(m[0])) for lo, hi, m in
                     zip(got.low, got.high, got.masks, strict=True)}
        want = {(tuple(lo), tuple(hi), int(m[0])) for lo, hi, m in
                zip(expected.low, expected.high, expected.masks, strict=True)}
        assert got_boxes == want


@pytest.mark.parametrize("missing", [False, True])
def test_sensitive_domain_of_categoricals(missing: bool) -> None:
    schema = random_schema(1, 0)
    sa = ["a", "b", None if missing else "a"]
    frame = pd.DataFrame({GROUP: [1, 1, 1], "n0": ["1", "1", "1"], "sa": sa})
    categorical = frame.assign(sa=pd.Categorical(sa, categories=["z", "b", "a"]))
    # the earlier form: the distinct values of the column as an array ('nan' if missing)
    expected = tuple(sorted({str(v).strip() for v in pd.unique(categorical["sa"].to_numpy())}))
    assert sensitive_domain([categorical], schema) == expected
    assert ("nan" in expected) == missing


def reference_release_lists(presence: np.ndarray) -> np.ndarray:
    """The earlier ``Knowledge.to_frame``: one string per (row, release) pair, joined."""
    rows, releases = np.nonzero(presence)
    joined = (
        pd.Series((releases + 1).astype(str)).groupby(rows).agg(",".join)
        if len(rows)
        else pd.Series(dtype=str)
    )
    return joined.reindex(range(len(presence)), fill_value="").to_numpy()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(0, 40),
       releases=st.sampled_from([1, 3, 20, 62, 63, 70]), density=st.sampled_from([0.0, 0.2, 0.9]))
def test_release_lists_equal_reference(seed: int, rows: int, releases: int,
                                       density: float) -> None:
    rng = np.random.default_rng(seed)
    presence = rng.random((rows, releases)) < density
    got = release_lists(presence)
    assert got.dtype == object
    assert list(got) == list(reference_release_lists(presence))
