"""The store keeps the private state as columnar blobs that reuse the last release's
assignment (store format 2, :mod:`republish.state_columns`); format-1 stores still open
and move to format 2 at their next release; ``verify_history`` streams the history."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from republish.datasets import dynamic_series, synthetic_census
from republish.errors import StoreError
from republish.solver.m_invariance import publish_m_invariant
from republish.state import LAST_RELEASE, PublisherState
from republish.store import ReleaseStore
from republish.store_verify import verify_history
from republish.store_writing import to_parquet


def _series() -> tuple[list[pd.DataFrame], object]:
    table, schema = synthetic_census(4_000, seed=21)
    return dynamic_series(table, 2_500, 500, 4, seed=21, reinsert_fraction=0.4), schema


def _same_state(a: PublisherState, b: PublisherState) -> None:
    pd.testing.assert_frame_equal(a.rows, b.rows)
    assert a.signatures == b.signatures
    assert a.deferred == b.deferred and a.last_release == b.last_release


def _publish(store: ReleaseStore, microdata: pd.DataFrame, schema: object,
             seed: int) -> PublisherState:
    result = publish_m_invariant(microdata, schema, 10, store.state(),  # type: ignore[arg-type]
                                 rng=np.random.default_rng(seed), validated=True,
                                 mode="heuristic")
    store.append_step(result)
    return result.state


def _format_of(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        return str(connection.execute(
            "SELECT value FROM meta WHERE key = 'format'").fetchone()[0])


def test_state_round_trips_through_columnar_blobs(tmp_path: Path) -> None:
    series, schema = _series()
    path = tmp_path / "s.db"
    store = ReleaseStore.init(path, schema, 10)  # type: ignore[arg-type]
    for number, microdata in enumerate(series, start=1):
        expected = _publish(store, microdata, schema, number)
        with ReleaseStore.open(path) as reopened:
            _same_state(reopened.state(), expected)
    store.close()
    assert _format_of(path) == "republish-store/2"
    with sqlite3.connect(path) as connection:
        blobs = dict(connection.execute("SELECT name, data FROM state_columns").fetchall())
        (old_blob,) = connection.execute("SELECT rows FROM state").fetchone()
    kept = pd.read_parquet(io.BytesIO(blobs["kept"]))
    # Only the identifiers absent from the last release are stored apart from it.
    assert len(kept) == int((expected.rows[LAST_RELEASE] < expected.last_release).sum()) > 0
    assert len(pd.read_parquet(io.BytesIO(blobs["signatures"]))) == int(
        (expected.rows[LAST_RELEASE] == expected.last_release).sum())
    assert old_blob == b""
    with ReleaseStore.open(path) as reopened:
        assert verify_history(reopened) == []


def _downgrade(path: Path, state: PublisherState) -> None:
    """Rewrite a store as format 1: the whole state in one blob, no state_columns."""
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE state SET rows = ?", (to_parquet(state.rows.reset_index()),))
        connection.execute("DROP TABLE state_columns")
        connection.execute("UPDATE meta SET value = 'republish-store/1' WHERE key = 'format'")


def test_format_1_store_opens_and_migrates_at_its_next_release(tmp_path: Path) -> None:
    series, schema = _series()
    path = tmp_path / "old.db"
    with ReleaseStore.init(path, schema, 10) as store:  # type: ignore[arg-type]
        first = _publish(store, series[0], schema, 1)
        second = _publish(store, series[1], schema, 2)
    _downgrade(path, second)
    assert _format_of(path) == "republish-store/1"
    with ReleaseStore.open(path) as old:
        _same_state(old.state(), second)
        assert verify_history(old) == []
        third = _publish(old, series[2], schema, 3)
    assert first.last_release == 1
    assert _format_of(path) == "republish-store/2"
    with ReleaseStore.open(path) as migrated:
        _same_state(migrated.state(), third)
        assert verify_history(migrated) == []


def test_verify_history_finds_tampering(tmp_path: Path) -> None:
    series, schema = _series()
    path = tmp_path / "t.db"
    with ReleaseStore.init(path, schema, 10) as store:  # type: ignore[arg-type]
        for number, microdata in enumerate(series[:3], start=1):
            _publish(store, microdata, schema, number)
    with sqlite3.connect(path) as connection:
        (blob,) = connection.execute(
            "SELECT data FROM state_columns WHERE name = 'signatures'").fetchone()
        codes = pd.read_parquet(io.BytesIO(blob))
        codes["signature"] = (codes["signature"] + 1) % max(int(codes["signature"].max()) + 1, 2)
        connection.execute("UPDATE state_columns SET data = ? WHERE name = 'signatures'",
                           (to_parquet(codes),))
        connection.execute("UPDATE releases SET stats = '{}' WHERE number = 2")
    with ReleaseStore.open(path) as tampered:
        problems = verify_history(tampered)
    assert any("release 2: stored content does not match" in p for p in problems)
    assert any("last signature differs" in p for p in problems)


def test_missing_state_columns_is_a_store_error(tmp_path: Path) -> None:
    series, schema = _series()
    path = tmp_path / "d.db"
    with ReleaseStore.init(path, schema, 10) as store:  # type: ignore[arg-type]
        _publish(store, series[0], schema, 1)
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM state_columns")
    with ReleaseStore.open(path) as damaged, pytest.raises(StoreError, match="damaged"):
        damaged.state()
