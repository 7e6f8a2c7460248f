"""Issue 19 item 1: the exact pipeline's per-release proof and the counterfeits the state
forces (the paper-size run is ``benchmarks/m_invariance_counterfeit_gap.py --policies
exact``; these are seconds-long checks of what its records rely on)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from republish.datasets import synthetic_census

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from m_invariance_common import deficit_bound, run_series  # noqa: E402


def test_deficit_bound_by_hand() -> None:
    signatures = [frozenset("abc"), frozenset("ab"), frozenset("cd"), frozenset()]
    counts = [{"a": 5, "b": 3, "c": 5},  # deficits: b 2
              {"a": 2, "b": 2},          # none
              {"c": 1, "d": 4},          # c 3
              {}]
    # b: 2 slots, 1 new row -> 1 forced; c: 3 slots, 5 new rows -> 0
    assert deficit_bound(signatures, counts, {"b": 1, "c": 5, "e": 7}) == {
        "demand": 5, "forced": 1, "supply": 13}
    # no new row at all: every slot is a counterfeit
    assert deficit_bound(signatures, counts, {})["forced"] == 5


def test_exact_series_records_the_counts_proof_and_respects_the_forced_bound() -> None:
    table, schema = synthetic_census(6000, seed=4, sensitive_distribution="adult-occupation-50")
    records = run_series(table, schema, 2000, 200, 4, seed=4, policy="exact",
                         max_releases=6, time_limit=0.5)
    assert len(records) == 6
    assert all(r["counts_status"] in ("OPTIMAL", "FEASIBLE", "HEURISTIC") for r in records)
    forced = [int(r["forced"]) for r in records]  # type: ignore[call-overload]
    assert sum(forced) > 0, "the series must need counterfeits for the check to mean anything"
    for record, bound in zip(records, forced, strict=True):
        # no policy publishes fewer counterfeits than the state forces
        assert int(record["counterfeits"]) >= bound  # type: ignore[call-overload]
        assert int(record["counts_counterfeits"]) >= bound  # type: ignore[call-overload]
        if record["counts_status"] == "OPTIMAL":
            assert float(record["counts_bound"]) == pytest.approx(  # type: ignore[arg-type]
                float(record["counts_objective"]))  # type: ignore[arg-type]
            assert float(record["counts_bound"]) >= bound  # type: ignore[arg-type]
    # the heuristic pipeline does not call the counts model: nothing recorded
    assign = run_series(table, schema, 2000, 200, 4, seed=4, policy="assign", max_releases=2)
    assert [r["counts_status"] for r in assign] == ["", ""]
    assert [r["forced"] for r in assign] == [-1, -1]
