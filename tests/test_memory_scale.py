"""Copy-free replacements of issue 17 (release 2 at 10M rows) against the pandas code they
replace.

Each reference is the old implementation, kept literally: the new function must give the
same frame (values, dtypes, index, column order) or the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.arrow_memory import release_arrow_memory
from republish.release import (
    GROUP,
    _canonical,
    _shuffled_rows,
    _shuffled_rows_frames,
    canonical_parquet,
    frame_bytes,
)
from republish.schema import QIAttribute, Schema
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState, changed_rows, stack_rows

WORDS = ["a", "b", "c", "=x", ""]


def _schema() -> Schema:
    return Schema(
        identifier="id",
        qis=(QIAttribute("age", "numeric", domain=(0.0, 99.0)),
             QIAttribute("edu", "ordered", order=("a", "b", "c"))),
        sensitive="sa",
    )


@st.composite
def stacked(draw: Any) -> tuple[pd.DataFrame, np.ndarray, dict[str, np.ndarray], pd.Index]:
    n = draw(st.integers(0, 12))
    m = draw(st.integers(0, 12))
    first = pd.DataFrame({
        "age": np.array(draw(st.lists(st.floats(0, 99), min_size=n, max_size=n))),
        "edu": np.array(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)),
                        dtype=object),
        LAST_RELEASE: np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)),
                               dtype=np.int64),
    }, index=pd.Index([f"p{i}" for i in range(n)], dtype=object, name="id"))
    keep = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    age_type = draw(st.sampled_from([np.float64, np.int64]))  # a differing dtype: pandas
    second = {
        "age": np.array(draw(st.lists(st.integers(0, 99), min_size=m, max_size=m)),
                        dtype=age_type),
        "edu": np.array(draw(st.lists(st.sampled_from(WORDS), min_size=m, max_size=m)),
                        dtype=object),
        LAST_RELEASE: np.full(m, 6, dtype=np.int64),
    }
    if draw(st.booleans()):  # another column order: pandas decides
        second = {k: second[k] for k in reversed(list(second))}
    index = pd.Index([f"q{i}" for i in range(m)], dtype=object, name="id")
    return first, keep, second, index


@settings(max_examples=300, deadline=None)
@given(stacked())
def test_stack_rows_equals_concat(data: Any) -> None:
    first, keep, second, index = data
    fresh = pd.DataFrame({k: v.copy() for k, v in second.items()}, index=index)
    kept = first.loc[keep]
    expected = pd.concat([kept, fresh]) if len(kept) else fresh
    got = stack_rows(first, keep, second, index)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    for name in second:  # never a view of the caller's arrays
        assert not np.shares_memory(got[name].to_numpy(), second[name])


@st.composite
def shuffles(draw: Any) -> tuple[pd.DataFrame, np.ndarray, pd.Series, list[int], list[str]]:
    groups = draw(st.integers(1, 8))
    labels = draw(st.permutations(list(range(1, groups + 1))))
    rendered = pd.DataFrame({
        GROUP: labels,
        "age": np.array([f"[{g}-{g + 3}]" for g in labels], dtype=object),
        "edu": np.array(draw(st.lists(st.sampled_from(WORDS), min_size=groups,
                                      max_size=groups)), dtype=object),
    })
    n = draw(st.integers(0, 15))
    rows = np.array(draw(st.lists(st.sampled_from(labels), min_size=n, max_size=n)),
                    dtype=np.int64)
    sensitive = pd.Series(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)),
                          dtype=object)
    fakes = draw(st.lists(st.sampled_from(labels), max_size=6))
    values = draw(st.lists(st.sampled_from(WORDS), min_size=len(fakes), max_size=len(fakes)))
    return rendered, rows, sensitive, fakes, values


@settings(max_examples=300, deadline=None)
@given(shuffles(), st.integers(0, 2**32))
def test_shuffled_rows_equals_frames(data: Any, seed: int) -> None:
    rendered, rows, sensitive, fakes, values = data
    schema = Schema(identifier="id", qis=(QIAttribute("age", "numeric", domain=(0.0, 99.0)),
                                          QIAttribute("edu", "ordered", order=("a", "b", "c"))),
                    sensitive="sa")
    sensitive = sensitive.rename("sa")
    first, second = np.random.default_rng(seed), np.random.default_rng(seed)
    expected = _shuffled_rows_frames(schema, rendered, rows, sensitive, fakes, values, first)
    got = _shuffled_rows(schema, rendered, rows, sensitive, fakes, values, second)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert first.integers(2**32) == second.integers(2**32)  # the same draws


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 30), st.integers(0, 2**32), st.booleans())
def test_canonical_parquet_equals_round_trip(n: int, seed: int, nulls: bool) -> None:
    rng = np.random.default_rng(seed)
    sa = rng.choice(np.array(WORDS, dtype=object), n)
    if nulls and n:
        sa[0] = None
    frame = pd.DataFrame({GROUP: rng.integers(1, 5, n), "age": rng.random(n), "sa": sa})
    assert canonical_parquet(frame) == frame_bytes(_canonical(frame), "parquet")
    release_arrow_memory()


def reference_changed_rows(state: PublisherState, table: pd.DataFrame,
                           positions: np.ndarray) -> pd.DataFrame:
    schema = state.schema
    known = positions >= 0
    if not known.any():
        return table.iloc[:0].assign(changed=pd.Series([], dtype=object))
    current = table.loc[known]
    before = state.rows.iloc[positions[known]]
    columns = [*schema.qi_names, schema.sensitive]
    masks = {c: current[c].to_numpy() != before[c].to_numpy() for c in columns}
    differs = np.logical_or.reduce(list(masks.values()))
    rows = np.flatnonzero(differs)
    out = current.iloc[rows].copy()
    out["changed"] = [
        "; ".join(
            f"{c}: {before[c].iloc[i]!r} -> {current[c].iloc[i]!r}" for c in columns if masks[c][i]
        )
        for i in rows.tolist()
    ]
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_changed_rows_equals_frames(data: Any) -> None:
    schema = _schema()
    n = data.draw(st.integers(0, 10))
    rows = pd.DataFrame({
        "age": np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                        dtype=float),
        "edu": np.array(data.draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n)),
                        dtype=object),
        "sa": np.array(data.draw(st.lists(st.sampled_from("xy"), min_size=n, max_size=n)),
                       dtype=object),
        LAST_RELEASE: np.ones(n, dtype=np.int64), SIGNATURE: np.zeros(n, dtype=np.int64),
    }, index=pd.Index([str(i) for i in range(n)], dtype=object, name="id"))
    state = PublisherState(schema=schema, m=2, last_release=1, rows=rows)
    k = data.draw(st.integers(0, 10))
    ids = data.draw(st.lists(st.integers(0, 14), min_size=k, max_size=k, unique=True))
    table = pd.DataFrame({
        "id": np.array([str(i) for i in ids], dtype=object),
        "age": np.array(data.draw(st.lists(st.integers(0, 3), min_size=k, max_size=k)),
                        dtype=float),
        "edu": np.array(data.draw(st.lists(st.sampled_from("abc"), min_size=k, max_size=k)),
                        dtype=object),
        "sa": np.array(data.draw(st.lists(st.sampled_from("xy"), min_size=k, max_size=k)),
                       dtype=object),
    }, index=pd.RangeIndex(k) + data.draw(st.integers(0, 3)))
    positions = state.positions(table["id"])
    pd.testing.assert_frame_equal(changed_rows(state, table, positions),
                                  reference_changed_rows(state, table, positions),
                                  check_exact=True)


identifier_texts = st.one_of(
    st.integers(-10**6, 10**6).map(str),                     # canonical integers
    st.sampled_from(["007", "-0", "+5", "1.0", " 3", "9" * 25, "-" + "9" * 19, "x"]),
    st.text(max_size=3),
)


some_integers = st.lists(st.integers(-40, 40).map(str), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(identifier_texts, max_size=30), some_integers),
       st.one_of(st.lists(identifier_texts, max_size=30), some_integers))
def test_integer_identifier_paths_equal_text(index_values: list[str],
                                             wanted: list[str]) -> None:
    import republish.identifiers as identifiers

    saved = identifiers._FEW_IDS
    identifiers._FEW_IDS = 0  # the int64 detour at any size
    try:
        numbers = identifiers.integer_values(np.array(index_values, dtype=object))
        if numbers is not None:  # the texts are canonical: str(int) gives them back
            assert [str(v) for v in numbers.tolist()] == index_values
        index = pd.Index(np.array(index_values, dtype=object))
        distinct = identifiers.surely_distinct(index)
        assert not distinct or index.is_unique  # never claims a repeat is distinct
        if len(index_values) >= 2 and numbers is not None:
            assert distinct == index.is_unique  # integers decide exactly
        if index.is_unique:
            ids = np.array(wanted, dtype=object)
            np.testing.assert_array_equal(identifiers.locate(index, ids),
                                          index.get_indexer(ids))
    finally:
        identifiers._FEW_IDS = saved


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 30), st.integers(0, 2**32),
       st.sampled_from(["plain", "nulls", "nan", "ints", "mixed"]))
def test_canonical_parquet_blob_equals_pandas(n: int, seed: int, kind: str) -> None:
    """The blob kept for the store is ``to_parquet``'s, whichever path made the file."""
    from republish import release as module

    rng = np.random.default_rng(seed)
    sa: Any = rng.choice(np.array(WORDS, dtype=object), n)
    if kind == "nulls" and n:
        sa[0] = None
    if kind == "nan" and n:
        sa[0] = float("nan")
    if kind == "ints":
        sa = rng.integers(0, 3, n).astype(np.int32)  # not a round-trip type: the old path
    if kind == "mixed" and n:
        sa[0] = 7
    frame = pd.DataFrame({GROUP: rng.integers(1, 5, n), "age": rng.random(n), "sa": sa})
    buffer = __import__("io").BytesIO()
    try:
        frame.to_parquet(buffer, index=False)
        expected = frame_bytes(_canonical(frame), "parquet")
    except Exception:  # noqa: BLE001 - a frame pandas cannot write: neither can we
        return
    module._PARQUET.clear()
    assert canonical_parquet(frame) == expected
    assert module.parquet_bytes(frame) == buffer.getvalue()


def test_release_free_memory_is_harmless() -> None:
    from republish.arrow_memory import LARGE_TABLE, release_free_memory

    release_free_memory(0)  # small: nothing done
    release_free_memory(LARGE_TABLE)  # trims the heap; the process goes on as before
    assert np.arange(3).sum() == 3


def test_group_signatures_cached_per_frame() -> None:
    from republish.release import Release
    from republish.state import _group_signatures, group_signatures

    schema = _schema()
    published = pd.DataFrame({GROUP: [1, 1, 2, 2], "age": ["1-2"] * 4, "edu": ["a"] * 4,
                              "sa": ["x", "y", "x", "z"]})
    release = Release(number=1, schema=schema, published=published,
                      counterfeits=pd.DataFrame({GROUP: [], "count": []}),
                      assignment=published.iloc[:0], deferred=(), model="interval",
                      metadata={})
    first = group_signatures(release)
    assert first == _group_signatures(release) == {1: frozenset("xy"), 2: frozenset("xz")}
    first[1] = frozenset()  # a caller's change stays its own
    assert group_signatures(release) == _group_signatures(release)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 60), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_pool_by_value_equals_a_pass_per_value(n: int, k: int, seed: int) -> None:
    # the old form: one boolean pass over the new rows per sensitive value
    from republish.solver.m_invariance import _pool_by_value

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, n + 5)
    shuffled = rng.permutation(n + 5)[:n]
    domain = [f"v{i}" for i in range(k)]
    pool = _pool_by_value(shuffled, codes, domain)
    old = {domain[c]: shuffled[codes[shuffled] == c]
           for c in np.unique(codes[shuffled]).tolist()}
    assert list(pool) == list(old)
    for value, rows in old.items():
        np.testing.assert_array_equal(pool[value], rows)


def test_ncp_from_the_middles_boxes_equals_the_releases() -> None:
    # the m-invariance middle hands its boxes' NCP to the step instead of a second pass
    from republish.datasets import dynamic_series, synthetic_census
    from republish.generalization import Domain, group_boxes, ncp
    from republish.release import GROUP
    from republish.solver.m_invariance import publish_m_invariant
    from republish.tables import encode_qis

    table, schema = synthetic_census(3_000, seed=4)
    state = None
    rng = np.random.default_rng(4)
    for microdata in dynamic_series(table, 2_000, 500, 3, seed=4):
        result = publish_m_invariant(microdata, schema, 4, state, rng=rng, mode="heuristic")
        state = result.state
        assignment = result.release.assignment
        codes = encode_qis(assignment, schema)
        expected = ncp(schema, group_boxes(codes, assignment[GROUP].to_numpy()),
                       Domain.of(schema, encode_qis(microdata, schema)))
        assert result.ncp is not None and result.ncp > 0
        assert abs(result.ncp - expected) <= 1e-12 * max(1.0, expected)
