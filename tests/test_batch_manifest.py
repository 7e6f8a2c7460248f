"""Batch manifests: expansion of sweeps, stable ids, validation before anything runs;
the results table, its journal and the report (no worker processes here)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.batch import problem as batch_runners
from republish.batch import registry
from republish.batch.manifest import load_manifest, parse_manifest
from republish.batch.problem import Param, Problem
from republish.batch.report import (
    comparison_summary,
    method_summary,
    optimum_comparison,
    plot_optimum_comparison,
    plot_time_vs_size,
)
from republish.batch.results import (
    COLUMNS,
    Journal,
    certificate_problems,
    frame_from_rows,
    read_results,
    write_results,
)
from republish.errors import ParameterError

ISSUE_EXAMPLE = """
[defaults]
time_limit = 5
[[instance]]
problem = "eligibility"
counts = [5, 3, 1, 1]
m = [2, 3]
method = ["counterfeit", "delete", "hybrid"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "manifest.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_issue_example_expands_to_six_instances(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, ISSUE_EXAMPLE))
    assert len(manifest.instances) == 6
    pairs = [(i.parameters["m"], i.parameters["method"]) for i in manifest.instances]
    assert pairs == [(2, "counterfeit"), (2, "delete"), (2, "hybrid"),
                     (3, "counterfeit"), (3, "delete"), (3, "hybrid")]
    assert all(i.time_limit == 5 for i in manifest.instances)
    assert all(i.parameters["counts"] == {"v1": 5, "v2": 3, "v3": 1, "v4": 1}
               for i in manifest.instances)
    assert len({i.instance_id for i in manifest.instances}) == 6
    # Methods of one input share a case; the two values of m are two cases.
    assert len({i.case_id for i in manifest.instances}) == 2


def test_ids_are_stable_and_depend_on_parameters(tmp_path: Path) -> None:
    first = load_manifest(write(tmp_path, ISSUE_EXAMPLE)).instances
    again = load_manifest(write(tmp_path, ISSUE_EXAMPLE)).instances
    assert [i.instance_id for i in first] == [i.instance_id for i in again]
    longer = load_manifest(write(tmp_path, ISSUE_EXAMPLE.replace("= 5", "= 6"))).instances
    assert {i.instance_id for i in first}.isdisjoint(i.instance_id for i in longer)
    assert [i.case_id for i in first] == [i.case_id for i in longer]


def test_defaults_layers_and_overrides(tmp_path: Path) -> None:
    text = """
[defaults]
time_limit = 7
seed = 3
[defaults.eligibility]
m = 4
counterfeit_cost = 2
[[instance]]
problem = "eligibility"
counts = {a = 4, b = 4, c = 1}
[[instance]]
problem = "eligibility"
counts = [[2, 2], [3, 1]]
m = 2
time_limit = 1
seed = [0, 1]
"""
    instances = load_manifest(write(tmp_path, text), time_limit=99).instances
    assert [i.parameters["m"] for i in instances] == [4, 2, 2, 2, 2]
    assert instances[0].parameters["counts"] == {"a": 4, "b": 4, "c": 1}
    assert instances[0].parameters["counterfeit_cost"] == 2.0
    assert [i.time_limit for i in instances] == [7, 1, 1, 1, 1]
    assert [i.seed for i in instances] == [3, 0, 1, 0, 1]
    assert [i.parameters["counts"]["v1"] for i in instances[1:]] == [2, 2, 3, 3]
    # The command line's --time-limit fills in where the manifest sets none.
    fallback = load_manifest(write(tmp_path, text.replace("time_limit = 7", "")), time_limit=9)
    assert fallback.instances[0].time_limit == 9


def test_duplicates_are_dropped(tmp_path: Path) -> None:
    text = ISSUE_EXAMPLE + ISSUE_EXAMPLE.split("[defaults]\ntime_limit = 5")[1]
    manifest = load_manifest(write(tmp_path, text))
    assert len(manifest.instances) == 6 and manifest.duplicates == 6


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ('problem = "nosuch"\nm = 2', "problem"),
        ('m = 2\ncounts = [1, 1]', "problem"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = 2\ncolour = 1', "colour"),
        ('problem = "eligibility"\ncounts = [1, 1]', "m"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = "two"', "m"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = 1', "m"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = []', "m"),
        ('problem = "eligibility"\ncounts = [1, -1]\nm = 2', "counts"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = 2\nmethod = "best"', "method"),
        ('problem = "eligibility"\ncounts = [1, 1]\nm = 2\ntime_limit = 0', "time_limit"),
        ('problem = "eligibility"\nm = 2', "data"),
        ('problem = "eligibility"\nm = 2\ndata = "missing.csv"', "schema"),
        ('problem = "ldiv"\nl = 2\ndataset = "synthetic"', "rows"),
        ('problem = "release-series"\ndataset = "synthetic"\nrows = 50\nm = 2\ninitial = 9'
         '\nreinsert_fraction = 1.5', "reinsert_fraction"),
        ('problem = "group-formation"\ndataset = "synthetic"\nrows = 50\nk = 2', "signature_size"),
    ],
)
def test_bad_entries_are_rejected_naming_entry_and_field(
    tmp_path: Path, entry: str, field: str
) -> None:
    first = '[[instance]]\nproblem = "eligibility"\ncounts = [2, 2]\nm = 2\n'
    text = f"{first}\n[[instance]]\n{entry}\n"
    with pytest.raises(ParameterError) as raised:
        load_manifest(write(tmp_path, text))
    message = str(raised.value)
    assert "[[instance]] 2" in message and f"field {field!r}" in message


def test_missing_data_file_is_rejected_before_running(tmp_path: Path) -> None:
    (tmp_path / "schema.toml").write_text("", encoding="utf-8")
    text = ('[[instance]]\nproblem = "eligibility"\nm = 2\ndata = "gone.csv"\n'
            'schema = "schema.toml"\n')
    with pytest.raises(ParameterError, match=r"\[\[instance\]\] 1 .*field 'data'.*gone.csv"):
        load_manifest(write(tmp_path, text))


def test_missing_adult_data_is_rejected_naming_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPUBLISH_DATASETS", str(tmp_path / "nowhere"))
    text = '[[instance]]\nproblem = "ldiv"\ndataset = "adult"\nl = 3\n'
    with pytest.raises(ParameterError) as info:
        load_manifest(write(tmp_path, text))
    message = str(info.value)
    assert "field 'dataset'" in message and "$REPUBLISH_DATASETS" in message
    assert str(tmp_path / "nowhere") in message and "'None'" not in message


def test_bad_defaults_and_structure(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"\[defaults\], field 'l'"):
        load_manifest(write(tmp_path, "[defaults]\nl = 2\n" + ISSUE_EXAMPLE.split("5", 1)[1]))
    with pytest.raises(ParameterError, match="no \\[\\[instance\\]\\]"):
        load_manifest(write(tmp_path, "[defaults]\ntime_limit = 1\n"))
    with pytest.raises(ParameterError, match="not valid TOML"):
        load_manifest(write(tmp_path, "[[instance]\n"))
    with pytest.raises(ParameterError, match="unknown top-level"):
        load_manifest(write(tmp_path, "instances = 1\n" + ISSUE_EXAMPLE))


def test_unavailable_problem_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = Problem(
        name="compare", summary="", params={"m": Param("int", "m")},
        run=batch_runners.run_selftest,
        requires=(("republish.solver.no_such_module", "compare"),),
    )
    catalogue = {**registry.problems(), "compare": missing}
    monkeypatch.setattr("republish.batch.manifest.problems", lambda: catalogue)
    with pytest.raises(ParameterError, match="problem 'compare' is not available in this "
                                             "version"):
        parse_manifest({"instance": [{"problem": "compare", "m": 2}]}, ".")


@settings(max_examples=25, deadline=None)
@given(
    ms=st.lists(st.integers(2, 9), min_size=1, max_size=4, unique=True),
    methods=st.lists(st.sampled_from(["counterfeit", "delete", "hybrid", "random"]),
                     min_size=1, max_size=4, unique=True),
    seeds=st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),
)
def test_sweep_is_the_cartesian_product(ms: list[int], methods: list[str], seeds: list[int]
                                        ) -> None:
    data = {"instance": [{"problem": "eligibility", "counts": [3, 2, 2], "m": ms,
                          "method": methods, "seed": seeds}]}
    instances = parse_manifest(data, ".").instances
    assert len(instances) == len(ms) * len(methods) * len(seeds)
    assert len({i.instance_id for i in instances}) == len(instances)
    assert {(i.parameters["m"], i.parameters["method"], i.seed) for i in instances} == {
        (m, method, seed) for m in ms for method in methods for seed in seeds
    }


def _row(**values: object) -> dict[str, object]:
    base: dict[str, object] = {
        "instance_id": "a", "case_id": "c", "problem": "eligibility", "method": "hybrid",
        "variant": "eligibility/hybrid", "status": "OPTIMAL", "objective": 4.0, "bound": 4.0,
        "gap": 0.0, "wall_time_s": 0.1, "size": 10,
    }
    base.update(values)
    certificate = {"step": "x", "status": base["status"], "objective": base["objective"],
                   "bound": base["bound"], "heuristic_objective": None, "times": {},
                   "detail": "", "gap": base["gap"], "wall_time_s": 0.0}
    base.setdefault("certificate", json.dumps(certificate))
    return base


def test_results_round_trip_and_journal(tmp_path: Path) -> None:
    rows = [_row(instance_id="a"), _row(instance_id="b", status="ERROR", objective=None,
                                        bound=None, gap=None, error="boom", certificate=None)]
    frame = frame_from_rows(rows)
    assert list(frame.columns) == list(COLUMNS)
    for name in ("out.csv", "out.parquet"):
        write_results(frame, tmp_path / name)
        back = read_results(tmp_path / name)
        assert list(back["instance_id"]) == ["a", "b"]
        assert list(back["status"]) == ["OPTIMAL", "ERROR"]
        assert math.isnan(back["objective"][1])
    journal = Journal(tmp_path / "j.jsonl")
    journal.append(rows[0])
    with journal.path.open("a", encoding="utf-8") as handle:
        handle.write('{"instance_id": "b", "stat')  # a crash in the middle of a line
    assert [r["instance_id"] for r in journal.read()] == ["a"]


def test_certificate_checks() -> None:
    assert certificate_problems(_row()) == []
    assert certificate_problems(_row(status="ERROR", error="x", certificate=None)) == []
    assert certificate_problems(_row(bound=5.0, status="FEASIBLE", gap=None))
    assert certificate_problems(_row(status="OPTIMAL", gap=0.5))
    assert certificate_problems(_row(verified=False))


def test_report_against_optimum(tmp_path: Path) -> None:
    frame = frame_from_rows([
        _row(instance_id="1", method="hybrid"),
        _row(instance_id="2", method="hybrid-greedy", status="HEURISTIC", objective=6.0,
             bound=None, gap=None),
        _row(instance_id="3", method="delete", variant="eligibility/delete", objective=5.0,
             bound=5.0),
        _row(instance_id="4", method="hybrid-greedy", case_id="other", status="HEURISTIC",
             objective=9.0, bound=None, gap=None),
        _row(instance_id="5", method="hybrid", case_id="other", status="ERROR",
             objective=None, bound=None, gap=None, error="x"),
    ])
    summary = method_summary(frame).set_index("method")
    assert summary.loc["hybrid", "optimal"] == 1 and summary.loc["hybrid", "error"] == 1
    comparison = optimum_comparison(frame)
    # Case "other" has no optimum; the delete variant is compared with itself only.
    greedy = comparison[comparison["method"] == "hybrid-greedy"]
    assert list(greedy["optimum"]) == [4.0] and list(greedy["ratio"]) == [1.5]
    table = comparison_summary(comparison).set_index("method")
    assert table.loc["hybrid-greedy", "at_optimum"] == 0
    assert table.loc["hybrid", "mean_ratio"] == 1.0
    for plot in (plot_optimum_comparison(comparison, tmp_path / "a.png"),
                 plot_time_vs_size(frame, tmp_path / "b.png")):
        assert plot.read_bytes()[:4] == b"\x89PNG"
    assert isinstance(frame, pd.DataFrame)


def test_resume_sources_and_retry_failed(tmp_path: Path) -> None:
    from republish.batch.results import journal_path, previous_rows

    output = tmp_path / "results.parquet"
    write_results(frame_from_rows([_row(instance_id="a"), _row(instance_id="b")]), output)
    journal = Journal(journal_path(output))
    journal.append(_row(instance_id="b", status="ERROR", error="crash", objective=None))
    journal.append(_row(instance_id="c"))
    rows = previous_rows(output)
    assert sorted(rows) == ["a", "b", "c"] and rows["b"]["status"] == "ERROR"  # journal wins
    assert sorted(previous_rows(output, retry_failed=True)) == ["a", "c"]
