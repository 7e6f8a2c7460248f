"""Identifiers that cannot silently re-key a population (hardening issue, item 1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.datasets import synthetic_census
from republish.errors import InputError
from republish.identifiers import (
    WHITESPACE,
    canonical_identifiers,
    check_population_continuity,
    edge_space,
    infer_identifier_kind,
)
from republish.solver.m_invariance import publish_m_invariant
from republish.store import ReleaseStore

SCHEMA_TOML = """
id = "id"
sensitive = "occupation"
[[qi]]
name = "age"
kind = "numeric"
"""


def _people(n: int, seed: int) -> pd.DataFrame:
    table, _ = synthetic_census(n, seed)
    return pd.DataFrame({"id": np.arange(1000, 1000 + n), "age": table["age"],
                         "occupation": table["occupation"]})


def test_infer_and_canonicalize_integer_forms() -> None:
    assert infer_identifier_kind(pd.Series([1, 2, 3])) == "integer"
    assert infer_identifier_kind(pd.Series([1.0, 2.0])) == "integer"
    assert infer_identifier_kind(pd.Series(["12", "-3", "0"], dtype=object)) == "integer"
    # Leading zeros, '+' or '.0' in text would be lost as integers: keep them as text.
    assert infer_identifier_kind(pd.Series(["0123", "5"], dtype=object)) == "text"
    assert infer_identifier_kind(pd.Series(["a1", "2"], dtype=object)) == "text"
    assert infer_identifier_kind(pd.Series([1.5, 2.0])) == "text"
    same = [pd.Series([123, 7]), pd.Series([123.0, 7.0]),
            pd.Series(["0123", " 7 "], dtype=object), pd.Series(["123.0", "+7"], dtype=object)]
    for column in same:
        assert canonical_identifiers(column, "integer", "id").tolist() == ["123", "7"]


def test_mismatched_kinds_are_refused_with_the_rows() -> None:
    with pytest.raises(InputError, match=r"'id' is numeric \(float64\).*text"):
        canonical_identifiers(pd.Series([1.0, 2.0]), "text", "id")
    with pytest.raises(InputError, match=r"row\(s\) 1 that are not integers"):
        canonical_identifiers(pd.Series(["1", "x2"], dtype=object), "integer", "id")
    with pytest.raises(InputError, match=r"non-integer value\(s\) 2.5"):
        canonical_identifiers(pd.Series([1.0, 2.5]), "integer", "id")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=30, unique=True))
def test_every_integer_form_maps_to_one_identifier(values: list[int]) -> None:
    """An integer published as int, float (when exact), padded text or '.0' text is one
    person; so a store's integer history never re-keys its people."""
    canonical = [str(v) for v in values]
    forms = [pd.Series(values), pd.Series([f"{v:+d}" for v in values], dtype=object),
             pd.Series([f"{v}.0" for v in values], dtype=object)]
    if all(abs(v) < 2**53 for v in values):
        forms.append(pd.Series([float(v) for v in values]))
    for form in forms:
        assert canonical_identifiers(form, "integer", "id").tolist() == canonical
    assert infer_identifier_kind(pd.Series(canonical, dtype=object)) == "integer"


def test_population_continuity() -> None:
    before = pd.Index([str(i) for i in range(100)])
    check_population_continuity(before, pd.Index([str(i) for i in range(50, 150)]))
    check_population_continuity(before, pd.Index([f"{i}.0" for i in range(100)]),
                                new_population=True)
    with pytest.raises(InputError, match="shares 0 of its 100 'id'.*--new-population"):
        check_population_continuity(before, pd.Index([f"{i}.0" for i in range(100)]),
                                    identifier="id")
    # A much larger or smaller table is not a re-keying signature.
    check_population_continuity(before, pd.Index([f"x{i}" for i in range(1000)]))


def test_csv_integers_then_parquet_floats_keep_the_people(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reproduction of the issue: release 1 from a CSV of integer ids, release 2 of
    the same people from a Parquet file whose id column is float. The store recognizes
    the returning people (no re-keying) and the whole history verifies."""
    schema = tmp_path / "schema.toml"
    schema.write_text(SCHEMA_TOML)
    people = _people(300, seed=3)
    people.to_csv(tmp_path / "t1.csv", index=False)
    second = people.iloc[40:].copy()
    second["id"] = second["id"].astype(float)
    second.to_parquet(tmp_path / "t2.parquet")
    store, out = tmp_path / "s.db", tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                   str(schema), "--m", "3")[0] == 0
    assert run_cli(monkeypatch, capsys, "release", str(tmp_path / "t1.csv"), "--store",
                   str(store), "-o", str(out), "--seed", "1", "--solver", "heuristic")[0] == 0
    code, output, err = run_cli(monkeypatch, capsys, "release", str(tmp_path / "t2.parquet"),
                                "--store", str(store), "-o", str(out), "--seed", "2",
                                "--solver", "heuristic", "--json")
    assert code == 0, err
    summary = pd.read_json(__import__("io").StringIO(output), typ="series")
    assert summary["new"] == 0 and summary["deleted"] == 40
    with ReleaseStore.open(store) as opened:
        assert opened.identifier_kind == "integer"
        state = opened.state()
        assert set(state.rows.index) == {str(i) for i in people["id"]}
    assert run_cli(monkeypatch, capsys, "verify", "--store", str(store))[0] == 0


def test_text_store_refuses_numeric_ids_and_re_keyed_population(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "schema.toml"
    schema.write_text(SCHEMA_TOML)
    people = _people(200, seed=4)
    padded = people.assign(id=[f"{i:07d}" for i in people["id"]])  # text: leading zeros
    padded.to_csv(tmp_path / "t1.csv", index=False)
    people.to_parquet(tmp_path / "t2.parquet")  # the same people, zeros lost, integers
    people.assign(id=people["id"].astype(str)).to_csv(tmp_path / "t3.csv", index=False)
    store, out = tmp_path / "s.db", tmp_path / "out"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema", str(schema),
            "--m", "3")
    assert run_cli(monkeypatch, capsys, "release", str(tmp_path / "t1.csv"), "--store",
                   str(store), "-o", str(out), "--solver", "heuristic")[0] == 0
    before = store.read_bytes()
    code, _, err = run_cli(monkeypatch, capsys, "release", str(tmp_path / "t2.parquet"),
                           "--store", str(store), "-o", str(out))
    assert code == 2 and "is numeric (int64)" in err and "text" in err
    # Text again, but without the zeros: same size, no shared identifier -> refused.
    code, _, err = run_cli(monkeypatch, capsys, "release", str(tmp_path / "t3.csv"),
                           "--store", str(store), "-o", str(out))
    assert code == 2 and "shares 0 of its 200" in err and "--new-population" in err
    assert store.read_bytes() == before
    assert not (out / "release-2.csv").exists()
    code, _, err = run_cli(monkeypatch, capsys, "release", str(tmp_path / "t3.csv"),
                           "--store", str(store), "-o", str(out), "--new-population",
                           "--solver", "heuristic")
    assert code == 0, err


def test_init_records_the_kind_and_old_stores_infer_it(tmp_path: Path) -> None:
    from republish.schema import load_schema

    (tmp_path / "schema.toml").write_text(SCHEMA_TOML)
    schema = load_schema(tmp_path / "schema.toml")
    ReleaseStore.init(tmp_path / "a.db", schema, 3, identifier_kind="text").close()
    with ReleaseStore.open(tmp_path / "a.db") as opened:
        assert opened.identifier_kind == "text"
        assert opened.state().identifier_kind == "text"
    # A store written before identifier kinds: inferred from the identifiers it holds.
    people = _people(60, seed=5)
    with ReleaseStore.init(tmp_path / "b.db", schema, 3) as opened:
        result = publish_m_invariant(people, schema, 3, opened.state(),
                                     rng=np.random.default_rng(0))
        opened.append_release(result.release, result.report, result.summary())
    connection = sqlite3.connect(tmp_path / "b.db")
    connection.execute("DELETE FROM meta WHERE key = 'identifier_kind'")
    connection.commit()
    connection.close()
    with ReleaseStore.open(tmp_path / "b.db") as opened:
        assert opened.state().identifier_kind == "integer"


def test_library_state_carries_the_kind() -> None:
    """Without a store, the state returned by a release carries the kind, so a later
    float id column is still the same person."""
    people = _people(80, seed=6)
    from republish.datasets import census_schema
    from republish.schema import QIAttribute, Schema

    base = census_schema()
    schema = Schema(identifier="id", sensitive="occupation",
                    qis=(QIAttribute("age", "numeric", domain=base.qis[0].domain),))
    first = publish_m_invariant(people, schema, 3, rng=np.random.default_rng(0))
    assert first.state.identifier_kind == "integer"
    again = people.iloc[10:].assign(id=people["id"].iloc[10:].astype(float))
    second = publish_m_invariant(again, schema, 3, first.state, rng=np.random.default_rng(1))
    assert second.new == 0 and second.deleted == 10


def test_listed_whitespace_is_what_str_strip_removes() -> None:
    """The listed code points are exactly Python's whitespace, and the fast path flags a
    value exactly when ``str.strip()`` would change it."""
    import pyarrow as pa

    assert set(WHITESPACE) == {c for c in range(0x110000) if chr(c).isspace()}
    values = [f"{chr(c)}7" for c in range(0x3001)] + [f"7{chr(c)}" for c in range(0x3001)]
    flagged = edge_space(pa.array(values))
    assert flagged.tolist() == [value.strip() != value for value in values]
