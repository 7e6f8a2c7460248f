"""The whole-release model inside the m-invariant release step: the paper's running example
reproduced and beaten, proven optimal for every seed, never worse than its warm start, and
certificates that claim only what was proven."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import random_hospital_table
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.examples.hospital import load_hospital
from republish.objectives import ReleaseCost, release_cost
from republish.principles import verify_release
from republish.release import Release
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState


def _cost_of(release: Release, table: pd.DataFrame) -> float:
    return release_cost(release, table)


def test_paper_tables_costs() -> None:
    """The yardsticks: the paper's Table 1b and Table 3a (with R(2)) under objective (b)."""
    hospital = load_hospital()
    assert _cost_of(hospital.t1_star, hospital.t1) == pytest.approx(3.795, abs=1e-3)
    assert _cost_of(hospital.t3_star, hospital.t2) == pytest.approx(3.264, abs=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_hospital_releases_are_proven_optimal_for_every_seed(seed: int) -> None:
    hospital = load_hospital()
    table_1b = _cost_of(hospital.t1_star, hospital.t1)
    table_3a = _cost_of(hospital.t3_star, hospital.t2)
    first = publish_m_invariant(hospital.t1, hospital.schema, 2,
                                rng=np.random.default_rng(seed), mode="exact")
    assert first.certificate.status == "OPTIMAL"
    assert [s.status for s in first.certificate.stages] == ["OPTIMAL", "OPTIMAL"]
    assert first.summary()["cost"] == pytest.approx(_cost_of(first.release, hospital.t1))
    assert first.summary()["cost"] <= table_1b + 1e-9
    assert first.summary()["cost"] == pytest.approx(3.2348, abs=1e-3)  # seed-independent
    # Release 2 after the paper's own Table 1b: Table 3a's counterfeits, at most its cost.
    paper = PublisherState.from_releases([hospital.t1_star], 2)
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, paper,
                                 rng=np.random.default_rng(seed), mode="exact")
    assert second.certificate.status == "OPTIMAL" and second.counterfeits == 2
    assert second.summary()["cost"] <= table_3a + 1e-9
    assert second.summary()["cost"] == pytest.approx(_cost_of(second.release, hospital.t2))
    # And after our own release 1: proven too.
    chained = publish_m_invariant(hospital.t2, hospital.schema, 2, first.state,
                                  rng=np.random.default_rng(seed), mode="exact")
    assert chained.certificate.status == "OPTIMAL"


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 3]),
       eligibility=st.sampled_from(["counterfeit", "delete", "hybrid"]))
def test_exact_is_verified_and_never_worse_than_its_warm_start(
        seed: int, m: int, eligibility: str) -> None:
    """Random two-release series of ~20 rows: the exact release passes the verifier and is
    lexicographically no worse than the heuristic pipeline from the same state, and a
    stage marked OPTIMAL has its bound equal to its objective."""
    schema = load_hospital().schema
    universe = random_hospital_table(seed, 30, 4)
    first = publish_m_invariant(universe.iloc[:18], schema, m, rng=np.random.default_rng(seed),
                                mode="heuristic", eligibility=eligibility)  # type: ignore[arg-type]
    second_table = universe.iloc[6:26]
    runs = {}
    for mode in ("heuristic", "exact"):
        step = publish_m_invariant(second_table, schema, m, first.state, mode=mode,  # type: ignore[arg-type]
                                   rng=np.random.default_rng(seed), time_limit=5.0,
                                   eligibility=eligibility)  # type: ignore[arg-type]
        assert verify_release(step.release, m, first.release).ok
        runs[mode] = (step.certificate.objective, step.summary()["cost"])
        for stage in step.certificate.stages:
            if stage.status == "OPTIMAL":
                assert stage.bound == pytest.approx(stage.objective)
            if stage.bound is not None:
                assert stage.bound <= stage.objective + 1e-9
    assert runs["exact"][0] < runs["heuristic"][0] or (
        runs["exact"][0] == runs["heuristic"][0] and runs["exact"][1] <= runs["heuristic"][1]
        + 1e-9)


def test_a_too_short_budget_still_returns_a_valid_release_and_says_so() -> None:
    schema = load_hospital().schema
    table = random_hospital_table(7, 150, 5)
    step = publish_m_invariant(table, schema, 3, rng=np.random.default_rng(0), mode="exact",
                               time_limit=0.01)
    assert verify_release(step.release, 3).ok
    assert step.certificate.status in ("HEURISTIC", "FEASIBLE")
    for stage in step.certificate.stages:
        assert stage.bound is None or stage.bound <= stage.objective + 1e-9


def test_heuristic_mode_claims_nothing() -> None:
    hospital = load_hospital()
    step = publish_m_invariant(hospital.t1, hospital.schema, 2, mode="heuristic",
                               rng=np.random.default_rng(0))
    assert step.certificate.status == "HEURISTIC"
    first, second = step.certificate.stages
    assert second.bound is None and second.status == "HEURISTIC"
    # (a) is claimed only where the forced-counterfeit floor meets it (0 counterfeits here)
    assert first.objective == 0 and first.bound == 0 and first.status == "OPTIMAL"
    names = step.summary()["objective_name"]
    assert "counterfeits + 1·deferrals" in names and "perimeter" in names


def test_ncp_objective_is_optimized_and_named() -> None:
    """With cost='ncp', (b) sums over real rows: the NCP-optimal release is no worse in NCP
    than the perimeter-optimal one, and both are proven."""
    hospital = load_hospital()
    paper = PublisherState.from_releases([hospital.t1_star], 2)
    runs = {cost: publish_m_invariant(hospital.t2, hospital.schema, 2, paper, mode="exact",
                                      rng=np.random.default_rng(0), cost=cost)  # type: ignore[arg-type]
            for cost in ("perimeter", "ncp")}
    def ncp_of(release: Release) -> float:
        return release_cost(release, hospital.t2, "ncp")

    assert runs["ncp"].summary()["cost"] == pytest.approx(ncp_of(runs["ncp"].release))
    assert ncp_of(runs["ncp"].release) <= ncp_of(runs["perimeter"].release) + 1e-9
    assert runs["ncp"].certificate.status == "OPTIMAL"
    assert runs["ncp"].summary()["cost_name"].startswith("NCP")


def test_cli_release_and_history_print_both_stages(tmp_path, monkeypatch, capsys) -> None:
    from helpers import run_cli

    from republish.examples import hospital as example_module

    folder = __import__("pathlib").Path(example_module.__file__).parent / "hospital"
    store, out = tmp_path / "s.db", tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                   str(folder / "schema.toml"), "--m", "2")[0] == 0
    code, text, _ = run_cli(monkeypatch, capsys, "release", str(folder / "table1a.csv"),
                            "--store", str(store), "-o", str(out), "--solver", "exact")
    assert code == 0
    assert "release OPTIMAL; (a) counterfeits + 1·deferrals = 0.00 (OPTIMAL" in " ".join(
        text.split())
    code, text, _ = run_cli(monkeypatch, capsys, "release", str(folder / "table2a.csv"),
                            "--store", str(store), "-o", str(out), "--solver", "heuristic",
                            "--cost", "ncp")
    assert code == 0 and "(b) NCP" in " ".join(text.split())
    code, text, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store))
    flat = " ".join(text.split())
    assert code == 0 and "(b) status" in flat and "HEURISTIC" in flat and "OPTIMAL" in flat


def test_vectorized_extents_equal_the_plain_extent() -> None:
    """ReleaseCost.batch / pairwise (used by the model on hierarchy QIs) agree with
    extent() row by row, on a schema with a hierarchy QI."""
    from republish.schema import Hierarchy, QIAttribute, Schema

    hierarchy = Hierarchy.from_rows([["a1", "A", "*"], ["a2", "A", "*"], ["b1", "B", "*"],
                                     ["b2", "B", "*"], ["b3", "B", "*"]])
    schema = Schema(identifier="id", sensitive="s", qis=(
        QIAttribute("x", "numeric"), QIAttribute("h", "hierarchy", hierarchy=hierarchy)))
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.uniform(0, 50, 30), rng.integers(0, 5, 30)]).astype(float)
    cost = ReleaseCost.of(schema, codes)
    members = rng.integers(-1, 30, size=(40, 4))
    members[:, 0] = rng.integers(0, 30, size=40)
    expected = [cost.extent(row[row >= 0]) for row in members]
    assert np.allclose(cost.batch(members), expected)
    a, b = np.arange(10), np.arange(10, 30)
    pairs = cost.pairwise(a, b)
    assert np.allclose(pairs, [[cost.extent(np.array([i, j])) for j in b] for i in a])


def test_piped_output_is_not_cut_to_80_columns(tmp_path) -> None:
    """Logs and CI read piped output: the certificate line (> 80 characters) stays whole."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from republish.examples import hospital as example_module

    folder = Path(example_module.__file__).parent / "hospital"
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    command = [sys.executable, "-c", "from republish.cli import main; main()"]
    subprocess.run([*command, "init", "--store", str(tmp_path / "s.db"), "--schema",
                    str(folder / "schema.toml"), "--m", "2"], check=True, capture_output=True,
                   env=environment)
    done = subprocess.run([*command, "release", str(folder / "table1a.csv"), "--store",
                           str(tmp_path / "s.db"), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, env=environment, check=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("certificate:")]
    assert len(lines) == 1 and len(lines[0]) > 80 and "(a)" in lines[0] and "(b)" in lines[0]


@pytest.mark.parametrize("seed", [0, 3])
def test_keep_buckets_regroups_the_first_release_within_the_papers_signatures(
        seed: int) -> None:
    """``keep-buckets``: the first release keeps the pipeline's (Assign's) signatures, is
    no worse than the pipeline within them, and its certificate bounds it against every
    partition -- on the hospital table the exact partition is cheaper, so not OPTIMAL."""
    hospital = load_hospital()
    rng = np.random.default_rng
    pipeline = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=rng(seed),
                                   mode="heuristic")
    kept = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=rng(seed), mode="exact",
                               first_release="keep-buckets")
    free = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=rng(seed), mode="exact")
    signatures = {frozenset(s) for s in pipeline.state.signatures}
    assert {frozenset(s) for s in kept.state.signatures} <= signatures
    assert verify_release(kept.release, 2).ok
    assert kept.summary()["cost"] <= pipeline.summary()["cost"] + 1e-9
    assert kept.summary()["cost"] > free.summary()["cost"] + 1e-6
    (counts, cost) = kept.certificate.stages
    assert cost.status != "OPTIMAL" and cost.bound is not None
    assert cost.bound <= free.summary()["cost"] + 1e-9  # a bound over every partition


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 3]),
       eligibility=st.sampled_from(["counterfeit", "delete", "hybrid"]))
def test_keep_buckets_first_release_is_verified_and_never_worse_than_the_pipeline(
        seed: int, m: int, eligibility: str) -> None:
    """Random first releases of ~20 rows under ``keep-buckets``: verified, within the
    pipeline's signatures, lexicographically no worse than the pipeline, and every bound
    below its objective (the bounds are over every partition)."""
    schema = load_hospital().schema
    table = random_hospital_table(seed, 22, 4)
    runs = {}
    for mode in ("heuristic", "exact"):
        step = publish_m_invariant(table, schema, m, rng=np.random.default_rng(seed),
                                   mode=mode, time_limit=3.0,  # type: ignore[arg-type]
                                   eligibility=eligibility,  # type: ignore[arg-type]
                                   first_release="keep-buckets")
        assert verify_release(step.release, m).ok
        runs[mode] = (step.certificate.objective, step.summary()["cost"],
                      {frozenset(s) for s in step.state.signatures})
        for stage in step.certificate.stages:
            if stage.bound is not None:
                assert stage.bound <= stage.objective + 1e-9
    assert runs["exact"][2] <= runs["heuristic"][2]
    assert runs["exact"][:2] <= (runs["heuristic"][0], runs["heuristic"][1] + 1e-9)
