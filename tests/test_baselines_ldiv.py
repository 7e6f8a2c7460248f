"""Hilbert and TDS, the l-diversity paper's baselines (§6.1, §6.2): every output is
l-diverse by the project's verifier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import THREE_KIND_SCHEMA
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from republish.datasets import load_adult
from republish.errors import InputError, ParameterError
from republish.generalization import generalize
from republish.heuristics.hilbert import hilbert, hilbert_index, hilbert_table, tp_plus_hilbert
from republish.heuristics.tds import tds, tds_table
from republish.principles.l_diversity import check_l_diversity
from republish.tables import encode_qis


def _table(rows: list[tuple[int, str, str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["age", "edu", "place", "sa"])
    frame.insert(0, "id", [str(i) for i in range(len(frame))])
    return frame


def _assert_diverse(table: pd.DataFrame, groups: np.ndarray, l: int) -> None:  # noqa: E741
    assert (groups >= 0).all()
    published = generalize(table, groups, THREE_KIND_SCHEMA, "interval")
    assert check_l_diversity(published, THREE_KIND_SCHEMA, l).ok


ROWS = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.sampled_from(["x1", "x2", "y1", "y2"]),
              st.sampled_from(["flu", "hiv", "acne", "cold", "gout"])),
    min_size=2, max_size=60)


@pytest.mark.parametrize(("d", "bits"), [(1, 4), (2, 3), (3, 2), (4, 2)])
def test_hilbert_index_is_a_curve(d: int, bits: int) -> None:
    """A bijection of the grid onto 0 .. 2^(d*bits) - 1 whose steps move one cell."""
    axes = np.meshgrid(*[np.arange(2**bits)] * d, indexing="ij")
    points = np.stack([a.ravel() for a in axes], axis=1)
    index = hilbert_index(points, bits)
    assert sorted(index.tolist()) == list(range(2 ** (d * bits)))
    walk = points[np.argsort(index)]
    assert np.abs(np.diff(walk, axis=0)).sum(axis=1).max() == 1


def test_hilbert_index_rejects_bad_input() -> None:
    with pytest.raises(ParameterError):
        hilbert_index(np.zeros((2, 32)), 2)
    with pytest.raises(ParameterError):
        hilbert_index(np.array([[4, 0]]), 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(rows=ROWS, l=st.integers(2, 3))
def test_hilbert_and_tds_are_l_diverse(rows: list[tuple[int, str, str, str]], l: int) -> None:  # noqa: E741
    table = _table(rows)
    counts = table["sa"].value_counts()
    assume(l * int(counts.max()) <= len(table))
    codes = encode_qis(table, THREE_KIND_SCHEMA)
    result = hilbert(codes, table["sa"].to_numpy(), l)
    assert result.n_groups == len(np.unique(result.groups))
    _assert_diverse(table, result.groups, l)
    plus = tp_plus_hilbert(codes, table["sa"].to_numpy(), l)
    _assert_diverse(table, plus.groups, l)
    found = tds(codes, table["sa"].to_numpy(), l, THREE_KIND_SCHEMA)
    _assert_diverse(table, found.groups, l)


def test_hilbert_groups_have_l_rows_but_the_last() -> None:
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 100, size=(300, 3))
    sensitive = np.repeat(np.arange(10), 30)
    result = hilbert(codes, sensitive, 4)
    sizes = np.bincount(result.groups)
    assert (sizes[:-1] == 4).all() and sizes[-1] >= 4


def test_tds_specializes_a_hierarchy_and_an_interval() -> None:
    rows = [(20 + 2 * i, "a", "x1" if (i // 2) % 2 else "y1", v)
            for i, v in enumerate(["flu", "hiv"] * 20)]
    table = _table(rows)
    result = tds(encode_qis(table, THREE_KIND_SCHEMA), table["sa"].to_numpy(), 2,
                 THREE_KIND_SCHEMA)
    assert result.specializations >= 2 and result.n_groups >= 4
    _assert_diverse(table, result.groups, 2)


@pytest.mark.parametrize("method", [hilbert, tds])
def test_not_eligible_and_bad_l_are_refused(method) -> None:  # type: ignore[no-untyped-def]
    codes = np.zeros((4, 1))
    with pytest.raises(InputError):
        method(codes, np.array(["a", "a", "a", "b"]), 2)
    with pytest.raises(ParameterError):
        method(codes, np.array(["a", "b", "c", "d"]), 0)


def test_adult_occupation(adult_dir: Path) -> None:
    table, schema = load_adult("occupation", ["age", "sex", "education"],
                               directory=adult_dir.parent)
    table = table.iloc[:3000].reset_index(drop=True)
    for result in (hilbert_table(table, schema, 4), tds_table(table, schema, 4)):
        published = generalize(table, result.groups, schema, "interval")
        assert check_l_diversity(published, schema, 4).ok
