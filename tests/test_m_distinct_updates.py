"""The §VI-A generator of internal updates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from republish.datasets import load_adult, synthetic_census
from republish.errors import ParameterError
from republish.updates import (
    ADULT_EDUCATION_ORDER,
    adult_occupation_order,
    adult_qi_updates,
    block_transitions,
    census_qi_updates,
    releases_possible,
    update_series,
)


def test_census_series_follows_the_rules() -> None:
    table, schema = synthetic_census(900, seed=3)
    values = [f"occupation-{i:02d}" for i in range(1, 51)]
    model = block_transitions(values, 5)
    series = update_series(table, schema, model, initial=500, deleted=50, inserted=100,
                           releases=4, sa_updates=200, seed=9, qi_updates=census_qi_updates(
                               schema, rate=0.3))
    assert [len(t) for t in series] == [500, 550, 600, 650]
    education = list(schema.qi("education").order or ())
    for before, after in zip(series, series[1:], strict=False):
        old = before.set_index("id")
        new = after.set_index("id")
        staying = old.index.intersection(new.index)
        assert len(staying) == len(before) - 50
        assert len(new.index.difference(old.index)) == 100
        a, b = old.loc[staying], new.loc[staying]
        assert (b["age"] == np.minimum(a["age"] + 1, 95)).all()
        assert (b["gender"] == a["gender"]).all() and (b["birthplace"] == a["birthplace"]).all()
        assert all(education.index(y) >= education.index(x)
                   for x, y in zip(a["education"], b["education"], strict=True))
        assert all(model.allows(x, y) for x, y in zip(a["occupation"], b["occupation"],
                                                      strict=True))
        assert 0 < (a["occupation"] != b["occupation"]).sum() <= 200
    again = update_series(table, schema, model, initial=500, deleted=50, inserted=100,
                          releases=4, sa_updates=200, seed=9,
                          qi_updates=census_qi_updates(schema, rate=0.3))
    assert all(x.equals(y) for x, y in zip(series, again, strict=True))


def test_series_sizes_are_validated() -> None:
    table, schema = synthetic_census(100, seed=1)
    model = block_transitions([f"occupation-{i:02d}" for i in range(1, 51)], 10)
    assert releases_possible(100, 60, 20) == 3
    with pytest.raises(ParameterError, match="distinct rows"):
        update_series(table, schema, model, initial=60, deleted=5, inserted=20, releases=4,
                      sa_updates=5, seed=0)
    with pytest.raises(ParameterError, match="shrinks"):
        update_series(table, schema, model, initial=30, deleted=25, inserted=5, releases=3,
                      sa_updates=5, seed=0)


def test_adult_series(adult_dir: Path) -> None:
    table, schema = load_adult(qis=["age", "sex", "marital-status", "education"],
                               directory=adult_dir)
    order = adult_occupation_order(adult_dir)
    assert len(order) == 14 and order[0] == "Tech-support"
    model = block_transitions(order, 5)
    series = update_series(table, schema, model, initial=2000, deleted=200, inserted=500,
                           releases=3, sa_updates=500, seed=1, qi_updates=adult_qi_updates(0.5))
    first, second = series[0].set_index("id"), series[1].set_index("id")
    staying = first.index.intersection(second.index)
    moved = first.loc[staying, "marital-status"] != second.loc[staying, "marital-status"]
    assert moved.any()
    assert not (second.loc[staying][moved]["marital-status"] == "Never-married").any()
    levels = list(ADULT_EDUCATION_ORDER)
    assert all(levels.index(b) >= levels.index(a) for a, b in zip(
        first.loc[staying, "education"], second.loc[staying, "education"], strict=True))
