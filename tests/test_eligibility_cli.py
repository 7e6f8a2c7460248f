"""``republish eligibility``: JSON contract, data files, and exit code 2 on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from republish.cli import main


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["republish", "eligibility", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_all_methods_on_table_i(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(monkeypatch, capsys, "--counts", "5,3,1,1", "--m", "3", "--method",
                        "all", "--json")
    assert code == 0
    document = json.loads(out)
    assert [item["method"] for item in document] == ["counterfeit", "delete", "hybrid",
                                                     "hybrid-greedy"]
    assert [item["objective"] for item in document] == [5, 4, 3, 3]
    for item in document:
        assert {"method", "objective", "counterfeits", "deletions", "target_counts",
                "status"} <= set(item)
    assert document[0]["counterfeits"] == 5 and document[1]["deletions"] == 4
    assert document[1]["target_counts"] == {"v1": 2, "v2": 2, "v3": 1, "v4": 1}


def test_named_counts_and_single_method(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(monkeypatch, capsys, "--counts", "a=10,b=2", "--m", "2", "--method",
                        "delete", "--json")
    assert code == 0
    (item,) = json.loads(out)
    assert item["target_counts"] == {"a": 2, "b": 2} and item["objective"] == 8
    code, out, _ = _run(monkeypatch, capsys, "--counts", "a=10,b=2", "--m", "2", "--method",
                        "random", "--seed", "3", "--json")
    assert code == 0 and json.loads(out)[0]["counterfeits"] >= 8
    code, out, _ = _run(monkeypatch, capsys, "--counts", "10,9,7,1", "--m", "3")
    assert code == 0 and "hybrid" in out and "OPTIMAL" in out


def test_data_file_counts_the_sensitive_column(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               data_dir: Path, tmp_path: Path) -> None:
    people = (data_dir / "people.csv").read_text().splitlines()
    # Make flu dominant: 4 flu, 2 cold, 2 ulcer -> 3-eligible needs changes.
    extra = ["Gus,33,HS,France,flu", "Hal,38,Master,Japan,flu"]
    (tmp_path / "people.csv").write_text("\n".join([*people, *extra]) + "\n")
    code, out, _ = _run(monkeypatch, capsys, str(tmp_path / "people.csv"), "--schema",
                        str(data_dir / "schema.toml"), "--m", "3", "--method", "hybrid",
                        "--json")
    assert code == 0
    (item,) = json.loads(out)
    assert item["original_counts"] == {"flu": 4, "cold": 2, "ulcer": 2}
    # 3 * 4 > 8: {2, 2, 2} (two deletions) beats {3, 3, 3} (3 changes), {4, 4, 4} (4).
    assert item["objective"] == 2 and item["deletions_by_value"] == {"flu": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--counts", "5,3,1,1", "--m", "1"], "m must be at least 2"),
        (["--counts", "5,3,1,1", "--m", "5"], "--allow-new-values"),
        (["--counts", "5,-3", "--m", "2"], "negative"),
        (["--counts", "5,2.5", "--m", "2"], "not a non-negative integer"),
        (["--counts", "", "--m", "2"], "comma-separated"),
        (["--counts", "0,0", "--m", "2"], "empty"),
        (["--counts", "5,3", "--m", "2", "--method", "both"], "--method"),
        (["--m", "2"], "either DATA"),
    ],
)
def test_bad_input_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                           args: list[str], message: str) -> None:
    code, out, err = _run(monkeypatch, capsys, *args)
    assert code == 2
    assert message in " ".join(err.split())
    assert out == ""


def test_new_values_flag(monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(monkeypatch, capsys, "--counts", "flu=4,cold=1", "--m", "3",
                        "--method", "counterfeit", "--allow-new-values", "--json")
    assert code == 0
    (item,) = json.loads(out)
    assert item["counterfeits"] == 4 * 3 - 5
    assert "counterfeit-value-1" in item["target_counts"]


def test_empty_data_file_exits_2(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], data_dir: Path,
                                 tmp_path: Path) -> None:
    header = (data_dir / "people.csv").read_text().splitlines()[0]
    (tmp_path / "empty.csv").write_text(header + "\n")
    code, _, err = _run(monkeypatch, capsys, str(tmp_path / "empty.csv"), "--schema",
                        str(data_dir / "schema.toml"), "--m", "2")
    assert code == 2 and "empty" in err


def test_counts_of_billions_of_rows_end_quickly(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Algorithm 3 changes one row per step: on 10^10 rows (accepted by --counts) it once
    ran for hours. ``hybrid`` now starts from Algorithm 2 and answers; ``hybrid-greedy``
    says which methods take any size, with exit code 2."""
    code, out, _ = _run(monkeypatch, capsys, "--counts", "10000000000,1,1", "--m", "3",
                        "--method", "hybrid", "--time-limit", "1", "--json")
    assert code == 0
    document = json.loads(out)
    assert document[0]["objective"] == 10**10 - 1  # delete all but one row of v1
    assert document[0]["target_counts"] == {"v1": 1, "v2": 1, "v3": 1}
    code, _, err = _run(monkeypatch, capsys, "--counts", "10000000000,1,1", "--m", "3",
                        "--method", "hybrid-greedy")
    assert code == 2
    assert "hybrid-greedy" in err and "'counterfeit', 'delete' or 'hybrid'" in err
