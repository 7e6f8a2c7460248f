"""``auto`` runs the whole-release model on releases of up to WHOLE_MODEL_ROWS rows, as
``exact`` does, and under the default first-release policy keeps the paper's buckets for a
first release above AUTO_FREE_ROWS rows (``keep-signatures``): free partitions there cost the
next releases several times the counterfeits (benchmarks/RESULTS.md, session 18)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import republish
from republish.models.whole_release import WHOLE_MODEL_ROWS, WholeReleaseProblem
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.m_invariance_whole import (
    AUTO_FREE_ROWS,
    AUTO_LOCAL_ROWS,
    AUTO_WHOLE_ROWS,
    _auto_policy,
)
from republish.solver.options import SolveOptions


def problem_of(rows: int, old: bool, domain: int = 3) -> WholeReleaseProblem:
    rng = np.random.default_rng(rows)
    values = np.arange(rows) % domain
    bucket = np.full(rows, -1)
    signatures: tuple[frozenset[int], ...] = ()
    if old:
        bucket[:3] = 0
        signatures = (frozenset({0, 1, 2}),)
    return WholeReleaseProblem(rng.random((rows, 2)), values, bucket, signatures, 3, domain)


def test_auto_runs_the_model_as_far_as_exact_does() -> None:
    assert AUTO_WHOLE_ROWS == WHOLE_MODEL_ROWS
    assert AUTO_FREE_ROWS < AUTO_WHOLE_ROWS


@pytest.mark.parametrize(("mode", "policy", "rows", "old", "domain", "expected"), [
    ("auto", "buckets", AUTO_FREE_ROWS + 1, False, 10, "keep-signatures"),
    ("auto", "buckets", AUTO_LOCAL_ROWS - 1, False, 10, "keep-signatures"),
    ("auto", "buckets", AUTO_LOCAL_ROWS, False, 10, "local-signatures"),  # large: locality
    ("auto", "buckets", AUTO_LOCAL_ROWS, False, 4, "keep-signatures"),  # slack 0.25: scarce
    ("auto", "buckets", AUTO_LOCAL_ROWS, True, 10, "buckets"),
    ("exact", "buckets", AUTO_LOCAL_ROWS, False, 10, "buckets"),
    ("auto", "buckets", AUTO_FREE_ROWS, False, 3, "buckets"),  # small: partitioned freely
    ("auto", "buckets", AUTO_FREE_ROWS + 1, True, 3, "buckets"),  # a later release
    ("exact", "buckets", AUTO_FREE_ROWS + 1, False, 3, "buckets"),  # exact: what was asked
    ("auto", "compact", AUTO_FREE_ROWS + 1, False, 3, "compact"),  # an explicit policy stays
])
def test_policy_of_a_first_release(mode: str, policy: str, rows: int, old: bool, domain: int,
                                   expected: str) -> None:
    solve = SolveOptions(mode=mode, first_release=policy)  # type: ignore[arg-type]
    problem = problem_of(rows, old, domain)
    assert _auto_policy(solve, problem).first_release == expected
    assert dataclasses.replace(solve, first_release=expected) == _auto_policy(solve, problem)


def test_auto_improves_a_first_release_of_several_hundred_rows_within_the_signatures(
        ) -> None:
    """450 rows, m = 3: ``auto`` runs the model (it did not above 400 rows), keeping the
    paper's signatures, so the answer is no worse than the heuristic's and keeps its
    signatures; ``exact`` partitions freely and is cheaper still."""
    table, schema = republish.synthetic_census(450, seed=3)
    steps = {mode: publish_m_invariant(table, schema, 3, mode=mode, time_limit=2.0,  # type: ignore[arg-type]
                                       rng=np.random.default_rng(1))
             for mode in ("heuristic", "auto", "exact")}
    details = {mode: step.certificate.detail for mode, step in steps.items()}
    assert "whole-release model" not in details["heuristic"]
    assert "whole-release model" in details["auto"] and "slot trades" in details["auto"]
    assert "whole-release model" in details["exact"] and "slot trades" not in details["exact"]
    cost = {mode: step.summary()["cost"] for mode, step in steps.items()}
    assert cost["auto"] <= cost["heuristic"] + 1e-9
    assert cost["exact"] <= cost["auto"] + 1e-9
    signatures = {mode: len(step.state.signatures) for mode, step in steps.items()}
    assert signatures["auto"] == signatures["heuristic"] <= signatures["exact"]


@pytest.mark.parametrize(("slot_rows", "budget", "improved"), [
    (10**9, 2.0, True),  # within AUTO_SLOT_ROWS
    (1_000, 2.0, False),  # above it, and 2 s < 2,500 rows x 1 ms
    (1_000, 4.0, True),  # above it, but 4 s >= 2,500 rows x 1 ms
])
def test_auto_improves_a_large_release_where_the_budget_gives_each_row_its_time(
        monkeypatch: pytest.MonkeyPatch, slot_rows: int, budget: float,
        improved: bool) -> None:
    """Above WHOLE_MODEL_ROWS rows ``auto`` runs the large-release search (slot trades)
    up to AUTO_SLOT_ROWS rows, and beyond where the budget gives each row
    AUTO_SLOT_SECONDS_PER_ROW (here 1 ms, so that 2,500 rows stand for a census); else
    each bucket is grouped by the per-bucket steps, which gain far less."""
    import republish.solver.m_invariance_whole as whole_step

    table, schema = republish.synthetic_census(2_500, seed=5)
    assert len(table) > WHOLE_MODEL_ROWS
    monkeypatch.setattr(whole_step, "AUTO_SLOT_SECONDS_PER_ROW", 1e-3)
    monkeypatch.setattr(whole_step, "AUTO_SLOT_ROWS", 1_000)
    buckets_only = publish_m_invariant(table, schema, 4, mode="auto", time_limit=2.0,
                                       rng=np.random.default_rng(1))
    assert "slot trades" not in buckets_only.certificate.detail
    monkeypatch.setattr(whole_step, "AUTO_SLOT_ROWS", slot_rows)
    step = publish_m_invariant(table, schema, 4, mode="auto", time_limit=budget,
                               rng=np.random.default_rng(1))
    assert ("slot trades" in step.certificate.detail) == improved
    if improved:
        assert step.summary()["cost"] < 0.95 * buckets_only.summary()["cost"]
