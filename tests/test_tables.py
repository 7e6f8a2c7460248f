"""Table loading and validation: each bad input is a clear error naming what to fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import InputError
from republish.schema import load_schema
from republish.tables import encode_qis, load_table


@pytest.fixture
def schema(data_dir: Path):  # type: ignore[no-untyped-def]
    return load_schema(data_dir / "schema.toml")


@pytest.fixture
def people(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "people.csv", dtype=str)


def test_csv_and_parquet_load_the_same(schema, people, data_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from_csv = load_table(data_dir / "people.csv", schema)
    people.to_parquet(tmp_path / "people.parquet")
    from_parquet = load_table(tmp_path / "people.parquet", schema)
    pd.testing.assert_frame_equal(from_csv, from_parquet)
    assert from_csv["age"].dtype == float
    codes = encode_qis(from_csv, schema)
    assert codes.shape == (6, 3)
    # Country codes follow the hierarchy's depth-first order.
    assert codes[:, 2].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert codes[:, 1].tolist() == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda df: df.drop(columns=["education"]), r"column\(s\) \['education'\] missing"),
        (lambda df: df.iloc[0:0], "table is empty"),
        (
            lambda df: df.assign(disease=["flu", "", "flu", "cold", "flu", "x"]),
            r"column 'disease' has missing or empty values in row\(s\) 1",
        ),
        (lambda df: df.assign(age=["30", None, "1", "2", "3", "4"]), "column 'age' has missing"),
        (lambda df: df.assign(name=["A", "B", "A", "C", "D", "E"]), "repeats the value"),
        (
            lambda df: df.assign(education=["HS", "PhD", "HS", "HS", "HS", "HS"]),
            r"value\(s\) 'PhD' absent from its order",
        ),
        (
            lambda df: df.assign(country=["France"] * 5 + ["Mars"]),
            r"'Mars' absent from its hierarchy \(row\(s\) 5\)",
        ),
        (
            lambda df: df.assign(age=["30", "old", "1", "2", "3", "4"]),
            r"non-numeric value\(s\) \['old'\] in row\(s\) 1",
        ),
    ],
)
def test_bad_input_is_named(schema, people, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=message):
        load_table(mutate(people), schema)


def test_missing_file_is_named(schema, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="not found"):
        load_table(tmp_path / "absent.csv", schema)


def test_extra_columns_are_dropped(schema, people) -> None:  # type: ignore[no-untyped-def]
    table = load_table(people.assign(secret=np.arange(6)), schema)
    assert list(table.columns) == ["name", "age", "education", "country", "disease"]


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(st.sampled_from(["a", " a ", "b", "", "  ", "nan", "NaN", "None", "none",
                                       None, float("nan"), 3, 2.5]), min_size=1, max_size=30))
def test_missing_cells_match_their_definition(cells: list[object]) -> None:
    """Missing = NA, empty after stripping, or the text nan/none in any case (the
    per-distinct-value shortcut must flag exactly these rows)."""
    from republish.tables import _is_missing, _stripped_text

    series = pd.Series(cells, dtype=object)

    def missing(cell: object) -> bool:
        if cell is None or (isinstance(cell, float) and np.isnan(cell)):
            return True
        return str(cell).strip() == "" or str(cell).strip().lower() in ("nan", "none")

    assert _is_missing(series).tolist() == [missing(c) for c in cells]
    present = [c for c in cells if not missing(c)]
    if present:
        kept = pd.Series(present, dtype=object)
        assert _stripped_text(kept).tolist() == [str(c).strip() for c in present]
