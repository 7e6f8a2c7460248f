"""Data set loaders: Adult (shared data), the census-like generator, dynamic series."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish import datasets
from republish.errors import InputError, ParameterError
from republish.tables import load_table


def _ids(frame: pd.DataFrame) -> set[str]:
    return set(frame["id"])


def _shared() -> Path:
    directory = datasets.datasets_dir()
    if directory is None or not (directory / "adult" / "adult.csv").is_file():
        pytest.skip("shared datasets (../shared/datasets/adult) not present")
    return directory


def test_datasets_dir_honours_the_environment(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("REPUBLISH_DATASETS", str(tmp_path))
    assert datasets.datasets_dir() == tmp_path
    monkeypatch.setenv("REPUBLISH_DATASETS", str(tmp_path / "missing"))
    assert datasets.datasets_dir() is None


def test_missing_adult_data_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="REPUBLISH_DATASETS"):
        datasets.load_adult(directory=tmp_path)


def test_load_adult_with_hierarchies() -> None:
    directory = _shared()
    table, schema = datasets.load_adult()
    assert len(table) == 30162
    assert list(table.columns) == ["id", *schema.qi_names, "occupation"]
    assert schema.identifier == "id" and schema.sensitive == "occupation"
    assert schema.qi_names == ["sex", "age", "race", "marital-status", "education",
                               "native-country", "workclass", "salary-class"]
    kinds = {qi.name: qi.kind for qi in schema.qis}
    assert kinds.pop("age") == "numeric" and set(kinds.values()) == {"hierarchy"}
    country = schema.qi("native-country").hierarchy
    assert country is not None and country.height == 3 and len(country.leaves) == 41
    assert table["id"].tolist()[:3] == ["0", "1", "2"] and table["id"].is_unique
    assert table["age"].min() == 17 and table["age"].max() == 90
    assert load_table(table, schema).equals(table)
    # The adult/ folder itself is accepted too, and QIs can be chosen.
    small, small_schema = datasets.load_adult("salary-class", ["age", "education"],
                                              directory=directory / "adult")
    assert list(small.columns) == ["id", "age", "education", "salary-class"]
    assert small_schema.qi("education").kind == "hierarchy"


def test_load_adult_rejects_bad_columns() -> None:
    _shared()
    with pytest.raises(ParameterError, match="not an Adult column"):
        datasets.load_adult("disease")
    with pytest.raises(ParameterError, match="qis"):
        datasets.load_adult("occupation", ["age", "occupation"])
    with pytest.raises(ParameterError, match="qis"):
        datasets.load_adult("occupation", ["height"])


def test_synthetic_census_domains_and_validation() -> None:
    table, schema = datasets.synthetic_census(5000, seed=3)
    assert load_table(table, schema).equals(table)
    assert schema.qi_names == ["age", "gender", "education", "birthplace"]
    assert schema.qi("age").domain == (17, 95)
    for name in ("gender", "education", "birthplace"):
        assert len(schema.qi(name).order or ()) == datasets.CENSUS_DOMAINS[name]
    assert table["age"].between(17, 95).all()
    shares = table["occupation"].value_counts(normalize=True)
    assert table["occupation"].nunique() == 50
    assert shares.max() <= 0.06  # well under the 1/10 that m = 10 allows
    again, _ = datasets.synthetic_census(5000, seed=3)
    assert again.equals(table)
    other, _ = datasets.synthetic_census(5000, seed=4)
    assert not other.equals(table)
    income, income_schema = datasets.synthetic_census(200, seed=1, sensitive="income")
    assert income_schema.sensitive == "income" and income["income"].str.startswith("income").all()
    with pytest.raises(ParameterError, match="sensitive"):
        datasets.synthetic_census(10, seed=1, sensitive="disease")
    with pytest.raises(ParameterError, match="n="):
        datasets.synthetic_census(0, seed=1)


def test_synthetic_census_is_fast_at_paper_scale() -> None:
    import time

    start = time.perf_counter()
    table, _ = datasets.synthetic_census(600_000, seed=0)
    assert len(table) == 600_000
    assert time.perf_counter() - start < 10  # about 1 s on an idle 2-core machine


def _consecutive_checks(series: list[pd.DataFrame], initial: int, r: int) -> None:
    for previous, current in zip(series, series[1:], strict=False):
        assert len(current) == initial and current["id"].is_unique
        assert len(_ids(previous) - _ids(current)) == r
        assert len(_ids(current) - _ids(previous)) == r


@settings(max_examples=15, deadline=None)
@given(initial=st.integers(1, 30), r=st.integers(0, 10), releases=st.integers(1, 6),
       seed=st.integers(0, 1000))
def test_dynamic_series_sizes_and_updates(initial: int, r: int, releases: int, seed: int) -> None:
    r = min(r, initial)
    table = pd.DataFrame({"id": [str(i) for i in range(100)], "x": np.arange(100)})
    if initial + (releases - 1) * r > len(table):
        with pytest.raises(ParameterError):
            datasets.dynamic_series(table, initial, r, releases, seed)
        return
    series = datasets.dynamic_series(table, initial, r, releases, seed)
    assert len(series) == releases and len(series[0]) == initial
    _consecutive_checks(series, initial, r)
    # Without re-insertions a deleted row never comes back.
    seen: set[str] = set()
    for previous, current in zip(series, series[1:], strict=False):
        seen |= _ids(previous)
        assert not ((_ids(current) - _ids(previous)) & seen)
    again = datasets.dynamic_series(table, initial, r, releases, seed)
    assert all(a.equals(b) for a, b in zip(series, again, strict=True))
    # Rows keep their values.
    for frame in series:
        assert (frame["id"].astype(int) == frame["x"]).all()


def test_dynamic_series_reinsertions() -> None:
    table, _ = datasets.synthetic_census(400, seed=2)
    series = datasets.dynamic_series(table, 100, 20, 8, seed=5, reinsert_fraction=0.5)
    _consecutive_checks(series, 100, 20)
    published: set[str] = set()
    reinserted_total = 0
    for j in range(1, len(series)):
        published |= _ids(series[j - 1])
        inserted = _ids(series[j]) - _ids(series[j - 1])
        reinserted = inserted & published
        # Re-inserted rows were published before and are absent from the previous table.
        assert not reinserted & _ids(series[j - 1])
        # T(2) has no earlier deletions to draw from; later, 10 of the 20 insertions.
        assert len(reinserted) == (0 if j == 1 else 10)
        reinserted_total += len(reinserted)
    assert reinserted_total == 60
    # Re-insertions draw fewer rows from the pool, so a smaller table suffices.
    needed = 100 + 7 * 20
    with pytest.raises(ParameterError, match="distinct rows"):
        datasets.dynamic_series(table.iloc[: needed - 1], 100, 20, 8, seed=5)
    assert len(datasets.dynamic_series(table.iloc[: needed - 1], 100, 20, 8, seed=5,
                                       reinsert_fraction=0.5)) == 8


def test_dynamic_series_validates_parameters() -> None:
    table = pd.DataFrame({"id": [str(i) for i in range(10)]})
    with pytest.raises(ParameterError, match="initial"):
        datasets.dynamic_series(table, 11, 0, 1, 0)
    with pytest.raises(ParameterError, match="r="):
        datasets.dynamic_series(table, 3, 4, 2, 0)
    with pytest.raises(ParameterError, match="reinsert_fraction"):
        datasets.dynamic_series(table, 3, 1, 2, 0, reinsert_fraction=1.5)
    with pytest.raises(ParameterError, match="releases"):
        datasets.dynamic_series(table, 3, 1, 0, 0)
    with pytest.raises(InputError, match="identifier"):
        datasets.dynamic_series(table, 3, 1, 2, 0, identifier="name")
    with pytest.raises(InputError, match="repeats"):
        datasets.dynamic_series(pd.DataFrame({"id": ["a", "a"]}), 1, 0, 1, 0)
