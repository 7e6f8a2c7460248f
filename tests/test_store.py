"""The release store: round trips, checksums, refusals and all-or-nothing writes."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import tamper

from republish.errors import StoreError
from republish.examples.hospital import load_hospital
from republish.principles.report import VerificationReport, Violation
from republish.schema import QIAttribute, Schema
from republish.solver.m_invariance import StepResult, publish_m_invariant
from republish.store import HISTORY_FIELDS, ReleaseStore


def _dump(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def _append(store: ReleaseStore, result: StepResult) -> None:
    store.append_release(result.release, result.report, result.summary(),
                         result.certificate.to_dict())


@pytest.fixture
def hospital_store(tmp_path: Path) -> tuple[ReleaseStore, StepResult]:
    hospital = load_hospital()
    store = ReleaseStore.init(tmp_path / "s.db", hospital.schema, 2)
    first = publish_m_invariant(hospital.t1, hospital.schema, 2, store.state(),
                                rng=np.random.default_rng(0), mode="heuristic")
    _append(store, first)
    return store, first


def test_round_trip_and_history(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, first = hospital_store
    hospital = load_hospital()
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, store.state(),
                                 rng=np.random.default_rng(1), mode="heuristic")
    _append(store, second)
    reopened = ReleaseStore.open(store.path)
    assert reopened.revision == 2 and reopened.last_release == 2
    stored = reopened.release(2)
    pd.testing.assert_frame_equal(stored.published, second.release.published)
    pd.testing.assert_frame_equal(stored.counterfeits, second.release.counterfeits)
    pd.testing.assert_frame_equal(stored.assignment, second.release.assignment)
    history = reopened.history()
    assert [h["release"] for h in history] == [1, 2]
    assert set(HISTORY_FIELDS) <= set(history[1])
    assert history[1]["counterfeits"] == second.counterfeits == second.release.counterfeit_total()
    # a heuristic release: its (a) bound is at most the forced-counterfeit floor
    assert history[1]["status"] == "HEURISTIC"
    assert history[1]["bound"] == second.certificate.bound
    state = reopened.state()
    expected = second.state
    assert set(state.rows.index) == set(expected.rows.index)
    for ident in expected.rows.index:
        a, b = state.rows.loc[ident], expected.rows.loc[ident]
        assert state.signatures[a["signature"]] == expected.signatures[b["signature"]]
        assert a["last_release"] == b["last_release"] and a["age"] == b["age"]
    assert reopened.checksum_problems() == []
    reopened.close()


def test_tampering_breaks_the_checksum(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, _ = hospital_store
    assert ReleaseStore.open(store.path).checksum_problems() == []
    tamper(store.path, 1)
    assert "release 1" in ReleaseStore.open(store.path).checksum_problems()[0]


def test_init_refuses_existing_file_and_bad_m(tmp_path: Path) -> None:
    hospital = load_hospital()
    path = tmp_path / "s.db"
    ReleaseStore.init(path, hospital.schema, 2).close()
    with pytest.raises(StoreError, match="already exists"):
        ReleaseStore.init(path, hospital.schema, 2)
    with pytest.raises(StoreError, match="m must be"):
        ReleaseStore.init(tmp_path / "t.db", hospital.schema, 1)
    with pytest.raises(StoreError, match="not found"):
        ReleaseStore.open(tmp_path / "missing.db")


def test_refuses_other_schema(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, _ = hospital_store
    other = Schema(identifier="name", sensitive="disease",
                   qis=(QIAttribute("age", "numeric"),))
    before = _dump(store.path)
    with pytest.raises(StoreError, match="schema differs"):
        store.check_schema(other)
    hospital = load_hospital()
    table = hospital.t2.drop(columns=["zip"])
    result = publish_m_invariant(table, other, 2, rng=np.random.default_rng(2))
    with pytest.raises(StoreError, match="schema differs"):
        _append(store, result)
    assert _dump(store.path) == before


def test_refuses_other_m(tmp_path: Path) -> None:
    hospital = load_hospital()
    store = ReleaseStore.init(tmp_path / "s.db", hospital.schema, 3)
    result = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=np.random.default_rng(3))
    before = _dump(store.path)
    with pytest.raises(StoreError, match="m=2.*m=3"):
        _append(store, result)
    assert _dump(store.path) == before


def test_refuses_changed_values(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, first = hospital_store
    hospital = load_hospital()
    # Compute on a state that does not know release 1, then change Bob's age.
    table = hospital.t2.copy()
    table.loc[table["name"] == "Bob", "age"] = 99.0
    release = publish_m_invariant(table, hospital.schema, 2, rng=np.random.default_rng(4))
    moved = dataclasses.replace(release.release, number=2)
    before = _dump(store.path)
    with pytest.raises(StoreError, match=r"Bob.*age.*m-Distinct"):
        store.append_release(moved, release.report, release.summary())
    assert _dump(store.path) == before


def test_refuses_unverified_release(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, _ = hospital_store
    hospital = load_hospital()
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, store.state(),
                                 rng=np.random.default_rng(5))
    failed = VerificationReport("release 2", (Violation(1, "made up"),))
    before = _dump(store.path)
    for report in (None, failed):
        with pytest.raises(StoreError, match="not passed verification"):
            store.append_release(second.release, report, second.summary())
    assert _dump(store.path) == before


def test_refuses_concurrent_release(hospital_store: tuple[ReleaseStore, StepResult]) -> None:
    store, _ = hospital_store
    hospital = load_hospital()
    other = ReleaseStore.open(store.path)
    mine = publish_m_invariant(hospital.t2, hospital.schema, 2, store.state(),
                               rng=np.random.default_rng(6))
    theirs = publish_m_invariant(hospital.t2, hospital.schema, 2, other.state(),
                                 rng=np.random.default_rng(7))
    _append(other, theirs)
    after_theirs = _dump(store.path)
    with pytest.raises(StoreError, match="modified since it was read"):
        _append(store, mine)
    assert _dump(store.path) == after_theirs
    other.close()


def test_crash_inside_the_transaction_leaves_the_store_unchanged(
    hospital_store: tuple[ReleaseStore, StepResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = hospital_store
    hospital = load_hospital()
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, store.state(),
                                 rng=np.random.default_rng(8))
    before = _dump(store.path)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash after the release rows were written")

    # The release rows are written first; the crash hits while writing the private state.
    monkeypatch.setattr(ReleaseStore, "_write_state", crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _append(store, second)
    assert _dump(store.path) == before
    monkeypatch.undo()
    reopened = ReleaseStore.open(store.path)
    assert reopened.last_release == 1 and reopened.revision == 1
    _append(reopened, second)  # the same release goes through once the fault is gone
    assert reopened.last_release == 2
    reopened.close()
