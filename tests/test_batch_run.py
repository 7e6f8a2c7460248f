"""Batch runs in worker processes: 20 small instances on 2 local workers, interrupted and
resumed; the same manifest on a Dask LocalCluster; failing and timing-out instances."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from republish.batch.execute import BatchProgress, run_batch
from republish.batch.manifest import Manifest, load_manifest
from republish.batch.results import (
    Journal,
    certificate_problems,
    journal_path,
    read_results,
)
from republish.cli.app import app

MANIFEST = """
[defaults]
time_limit = 1
num_workers = 1

[[instance]]                       # 2 x 2 x 3 = 12
problem = "eligibility"
counts = [[5, 3, 1, 1], [4, 4, 1]]
m = [2, 3]
method = ["counterfeit", "hybrid", "hybrid-greedy"]

[[instance]]                       # 2
problem = "ldiv"
dataset = "synthetic"
rows = 40
l = 2
method = ["tp", "exact"]

[[instance]]                       # 2
problem = "group-formation"
dataset = "synthetic"
rows = 300
signature_size = 2
k = 6
counterfeits = 2
method = ["heuristic", "exact"]

[[instance]]                       # 2
problem = "eligibility"
data = "people.csv"
schema = "schema.toml"
m = 2
method = ["delete", "algorithm-2"]

[[instance]]                       # 2
problem = "release-series"
dataset = "synthetic"
rows = 200
initial = 60
r = 10
releases = 2
m = [2, 3]
queries = 50
"""

SCHEMA = 'id = "id"\nsensitive = "disease"\n[[qi]]\nname = "age"\nkind = "numeric"\n'
DISEASES = ["flu"] * 6 + ["cold"] * 3 + ["ulcer"] * 2 + ["rash"]


def write_inputs(folder: Path, manifest: str = MANIFEST) -> Path:
    (folder / "schema.toml").write_text(SCHEMA, encoding="utf-8")
    people = pd.DataFrame({"id": [f"p{i}" for i in range(len(DISEASES))],
                           "age": [20 + 3 * i for i in range(len(DISEASES))],
                           "disease": DISEASES})
    people.to_csv(folder / "people.csv", index=False)
    path = folder / "manifest.toml"
    path.write_text(manifest, encoding="utf-8")
    return path


class Interrupt:
    """on_progress callback that interrupts the batch once ``after`` instances are done."""

    def __init__(self, after: int) -> None:
        self.after = after

    def __call__(self, progress: BatchProgress) -> None:
        if progress.done >= self.after:
            raise KeyboardInterrupt


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Manifest, pd.DataFrame]:
    """The 20-instance manifest, interrupted after 7 instances, then resumed."""
    folder = tmp_path_factory.mktemp("local")
    manifest = load_manifest(write_inputs(folder))
    assert len(manifest.instances) == 20
    output = folder / "results.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_batch(manifest, output, workers=2, on_progress=Interrupt(7))
    journaled = Journal(journal_path(output)).read()
    assert len(journaled) >= 7
    partial = read_results(output)
    assert set(partial["instance_id"]) == {row["instance_id"] for row in journaled}

    resumed = run_batch(manifest, output, workers=2, resume=True)
    assert resumed.skipped == len(journaled)
    assert resumed.computed == 20 - len(journaled)
    final = read_results(output)
    by_id = final.set_index("instance_id")
    for row in journaled:  # nothing finished before the interruption ran again
        kept = by_id.loc[row["instance_id"]]
        assert kept["finished_at"] == row["finished_at"]
        assert kept["worker"] == row["worker"]
    assert not journal_path(output).exists()  # consolidated: every instance has its row
    again = run_batch(manifest, output, workers=2, resume=True)
    assert again.computed == 0 and again.skipped == 20
    return manifest, final


def test_local_batch_has_every_row_with_a_valid_certificate(
    local_run: tuple[Manifest, pd.DataFrame],
) -> None:
    manifest, frame = local_run
    assert list(frame["instance_id"]) == [i.instance_id for i in manifest.instances]
    assert set(frame["worker"]) <= {"local-1", "local-2"}
    for row in records(frame):
        assert row["status"] not in ("ERROR", "TIMEOUT"), row["error"]
        assert certificate_problems(row) == [], row
        assert row["objective"] is not None and row["wall_time_s"] > 0
        assert row["verified"] in (True, None)
    eligibility = frame[frame["problem"] == "eligibility"]
    assert (eligibility["verified"] == True).all()  # noqa: E712
    exact = eligibility[eligibility["method"].isin(["counterfeit", "hybrid", "delete"])]
    assert (exact["status"] == "OPTIMAL").all()
    # The exact optimum never exceeds the greedy answer on the same input.
    hybrid = frame[frame["variant"] == "eligibility/hybrid"].pivot(
        index="case_id", columns="method", values="objective")
    assert (hybrid["hybrid"] <= hybrid["hybrid-greedy"]).all()
    grouping = frame[frame["problem"] == "group-formation"].set_index("method")
    assert grouping.loc["exact", "status"] == "OPTIMAL"
    assert grouping.loc["exact", "objective"] <= grouping.loc["heuristic", "objective"] + 1e-9
    assert (grouping["verified"] == True).all()  # noqa: E712
    series = frame[frame["problem"] == "release-series"]
    assert (series["verified"] == True).all() and (series["counterfeits"] >= 0).all()  # noqa: E712
    assert series["query_error"].between(0, 10).all() and series["perimeter"].gt(0).all()


def test_dask_cluster_gives_the_same_objectives(
    local_run: tuple[Manifest, pd.DataFrame], tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    manifest, local = local_run
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=40,
    )
    try:
        result = run_batch(manifest, tmp_path / "dask.csv", scheduler=cluster.scheduler_address)
    finally:
        cluster.close()
    frame = result.frame
    assert result.computed == 20 and set(frame["status"]) <= {"OPTIMAL", "FEASIBLE",
                                                              "HEURISTIC"}
    assert frame["worker"].str.startswith("tcp://").all()
    # Runs are deterministic given the seed and one CP-SAT worker, unless a time limit
    # stops the search (FEASIBLE): compare every other instance.
    left = local.set_index("instance_id").sort_index()
    right = frame.set_index("instance_id").sort_index()
    assert list(left.index) == list(right.index)
    same = (left["status"] != "FEASIBLE") & (right["status"] != "FEASIBLE")
    assert same.sum() >= 18
    assert list(left["status"][same]) == list(right["status"][same])
    pd.testing.assert_series_equal(left["objective"][same], right["objective"][same].astype(float),
                                   check_names=False)
    assert all(certificate_problems(row) == [] for row in records(frame))


FAILING = """
[defaults]
time_limit = 0.5

[[instance]]
problem = "eligibility"
counts = [3, 1, 1]
m = 2
method = "hybrid"

[[instance]]
problem = "eligibility"                 # bad data: no 'disease' column
data = "broken.csv"
schema = "schema.toml"
m = 2

[[instance]]
problem = "selftest"
fail = ["raise", "exit"]

[[instance]]
problem = "selftest"                    # a solver that ignores its time limit
sleep = 60
ignore_time_limit = true
objective = 7

[[instance]]
problem = "eligibility"
counts = [2, 2, 1]
m = 3
method = "counterfeit"

[[instance]]
problem = "compare"                     # heuristic vs exact pipelines on one series
dataset = "synthetic"
rows = 200
initial = 40
r = 5
m = 2
queries = 10
time_limit = 10
"""


def test_failing_and_timing_out_instances_are_recorded(tmp_path: Path) -> None:
    manifest = write_inputs(tmp_path, FAILING)
    (tmp_path / "broken.csv").write_text("id,age\na,30\nb,31\n", encoding="utf-8")
    output = tmp_path / "failing.csv"
    runner = CliRunner()
    outcome = runner.invoke(app, ["batch", str(manifest), "-o", str(output), "--workers", "2",
                                  "--kill-margin", "0.5", "--json"])
    assert outcome.exit_code == 1, outcome.output  # ERROR instances: exit 1, rows kept
    summary = json.loads(outcome.stdout)
    assert summary["instances"] == 7 and summary["statuses"]["ERROR"] == 3
    frame = read_results(output).set_index("index")
    assert list(frame["status"])[:6] == ["OPTIMAL", "ERROR", "ERROR", "ERROR", "TIMEOUT",
                                         "OPTIMAL"]
    assert frame.loc[6, "status"] in ("OPTIMAL", "FEASIBLE"), frame.loc[6, "error"]
    assert frame.loc[6, "heuristic_objective"] >= 0 and frame.loc[6, "query_error"] >= 0
    assert "disease" in frame.loc[1, "error"]  # the table's missing column is named
    assert "SelftestFailure" in frame.loc[2, "error"]
    assert "worker process died (exit code 17)" in frame.loc[3, "error"]
    assert "killed after" in frame.loc[4, "error"]
    assert frame.loc[4, "objective"] == 7  # the best answer reported before the kill
    assert frame.loc[4, "wall_time_s"] < 10
    assert all(certificate_problems(row) == [] for row in records(frame.reset_index()))

    report = runner.invoke(app, ["batch-report", str(output), "--figures", str(tmp_path),
                                 "--json"])
    assert report.exit_code == 0, report.output
    document = json.loads(report.stdout)
    assert {m["method"] for m in document["methods"]} >= {"hybrid", "counterfeit", "selftest"}
    for figure in document["figures"]:
        assert Path(figure).read_bytes()[:4] == b"\x89PNG"

    # An existing output is not overwritten by accident; a bad manifest runs nothing.
    again = runner.invoke(app, ["batch", str(manifest), "-o", str(output)])
    assert again.exit_code == 2 and "--resume" in again.output
