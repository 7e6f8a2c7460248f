"""Generalization: rendering, parsing back, normalized lengths, perimeter, NCP, stars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.generalization import (
    Domain,
    generalize,
    group_boxes,
    ncp,
    normalized_lengths,
    parse_boxes,
    perimeters,
    star_count,
)
from republish.schema import Schema, load_schema
from republish.tables import encode_qis, load_table


@pytest.fixture
def schema(data_dir: Path) -> Schema:
    return load_schema(data_dir / "schema.toml")


@pytest.fixture
def people(data_dir: Path, schema: Schema) -> pd.DataFrame:
    return load_table(data_dir / "people.csv", schema)


def test_interval_rendering(people: pd.DataFrame, schema: Schema) -> None:
    # Ann+Ben (Europe), Cid+Dee (Asia), Eve+Fay (America)
    published = generalize(people, [1, 1, 2, 2, 3, 3], schema)
    assert list(published.columns) == ["group", "age", "education", "country", "disease"]
    assert published.loc[0, "age"] == "[30, 35]"
    assert published.loc[0, "education"] == "[HS, Bachelor]"
    assert published.loc[0, "country"] == "Europe"
    assert published.loc[2, "country"] == "Asia"
    assert published.loc[2, "education"] == "[HS, Master]"
    assert published["disease"].tolist() == people["disease"].tolist()


def test_suppression_rendering(people: pd.DataFrame, schema: Schema) -> None:
    table = people.assign(education=["HS", "HS", "Master", "Master", "HS", "Master"])
    published = generalize(table, [1, 1, 2, 2, 3, 3], schema, model="suppression")
    assert published.loc[0].tolist()[1:4] == ["*", "HS", "*"]
    assert published.loc[2].tolist()[1:4] == ["*", "Master", "*"]
    codes = encode_qis(table, schema)
    # Two stars per row in groups 1 and 2, three in group 3.
    assert star_count(group_boxes(codes, [1, 1, 2, 2, 3, 3])) == 2 * 2 + 2 * 2 + 3 * 2


def test_single_row_groups_render_exact_values(people: pd.DataFrame, schema: Schema) -> None:
    published = generalize(people, list(range(6)), schema)
    assert published["age"].tolist() == ["30", "35", "41", "29", "52", "47"]
    assert published["country"].tolist() == people["country"].tolist()


def test_perimeter_and_ncp_by_hand(people: pd.DataFrame, schema: Schema) -> None:
    codes = encode_qis(people, schema)
    domain = Domain.of(schema, codes)  # age 29..52, education 0..2, country 6 leaves
    boxes = group_boxes(codes, [1, 1, 2, 2, 3, 3])
    lengths = normalized_lengths(schema, boxes.low, boxes.high, domain)
    assert lengths[0] == pytest.approx([5 / 23, 1 / 2, 1 / 5])  # Europe covers 2 of 6 leaves
    assert lengths[1] == pytest.approx([12 / 23, 1.0, 1 / 5])
    assert perimeters(schema, boxes, domain)[0] == pytest.approx(2 * (5 / 23 + 0.5 + 0.2))
    assert ncp(schema, boxes, domain) == pytest.approx(lengths.sum() * 2 / (6 * 3))
    whole = group_boxes(codes, [0] * 6)
    assert normalized_lengths(schema, whole.low, whole.high, domain)[0] == pytest.approx([1, 1, 1])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_published_cells_parse_back_to_covering_boxes(data: st.DataObject) -> None:
    schema = load_schema(Path(__file__).parent / "data" / "schema.toml")
    n = data.draw(st.integers(1, 12))
    table = pd.DataFrame(
        {
            "name": [f"p{i}" for i in range(n)],
            "age": data.draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)),
            "education": data.draw(
                st.lists(st.sampled_from(["HS", "Bachelor", "Master"]), min_size=n, max_size=n)
            ),
            "country": data.draw(
                st.lists(
                    st.sampled_from(["France", "Germany", "Japan", "USA", "China", "Canada"]),
                    min_size=n,
                    max_size=n,
                )
            ),
            "disease": ["x"] * n,
        }
    )
    table = load_table(table, schema)
    groups = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    codes = encode_qis(table, schema)
    published = generalize(table, groups, schema)
    low, high = parse_boxes(published, schema)
    # Every row lies inside the parsed box of its group, and the box is the tightest
    # one the rendering can express (exact for intervals, the subtree for hierarchies).
    assert np.all(low <= codes) and np.all(codes <= high)
    boxes = group_boxes(codes, groups)
    index = {g: i for i, g in enumerate(boxes.groups)}
    rows = [index[g] for g in groups]
    assert np.array_equal(low[:, :2], boxes.low[rows, :2])
    assert np.array_equal(high[:, :2], boxes.high[rows, :2])
