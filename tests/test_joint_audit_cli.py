"""``republish audit --joint`` on a store and on files (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli
from test_joint_audit import CASE_MODEL, case_releases
from test_m_distinct_cli import files  # noqa: F401  (fixture)

from republish.audit.knowledge import knowledge_from_releases


def test_joint_audit_of_an_m_distinct_store(files: dict[str, Path],  # noqa: F811
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    store = str(files["s.db"])
    run_cli(monkeypatch, capsys, "init", "--store", store, "--schema", str(files["schema.toml"]),
            "--m", "2", "--principle", "m-distinct", "--transitions", str(files["T.csv"]))
    for k, name in enumerate(("t1.csv", "t2.csv", "t3.csv"), start=1):
        code, _, err = run_cli(monkeypatch, capsys, "release", str(files[name]), "--store",
                               store, "-o", str(files["out"]), "--seed", str(k))
        assert code == 0, err
    code, out, err = run_cli(monkeypatch, capsys, "audit", "--store", store, "--joint",
                             "--risk", "--json")
    document = json.loads(out)
    assert code == (1 if document["vulnerable"] else 0), err
    joint = document["joint"]
    assert joint["principle"] == "m-distinct" and joint["m"] == 2 and joint["complete"]
    assert joint["checked_share"] == 1.0 and joint["people"] == 7
    assert document["joint_risk"]["cells_computed"] > 0
    code, out, _ = run_cli(monkeypatch, capsys, "audit", "--store", store, "--joint")
    assert "people fully checked: 100.0%" in out
    code, _, err = run_cli(monkeypatch, capsys, "audit", "--store", store, "--joint", "--exact")
    assert code == 2 and "--joint and --exact" in err
    code, _, err = run_cli(monkeypatch, capsys, "audit", "--store", store, "--m", "3")
    assert code == 2 and "go with --joint" in err


def _write_case(tmp_path: Path, boxes: bool) -> list[str]:
    """The issue's case as files: T*(j), R(j), knowledge.csv (x = person number)."""
    releases = case_releases()
    args = []
    for release in releases:
        published = release.published.copy()
        if boxes:  # exact x per row (counterfeits: a member's), so each group is known
            first = release.assignment.groupby("group")["x"].min()
            real = len(release.assignment)
            published["x"] = [f"{v:g}" for v in release.assignment["x"]] + [
                f"{first[g]:g}" for g in published["group"].iloc[real:]]
        path = tmp_path / f"release-{release.number}.csv"
        published.to_csv(path, index=False)
        args += ["--release", str(path)]
        if len(release.counterfeits):
            fakes = tmp_path / f"counterfeits-{release.number}.csv"
            release.counterfeits.to_csv(fakes, index=False)
            args += ["--counterfeits", f"{release.number}:{fakes}"]
    knowledge_from_releases(releases).write(tmp_path / "knowledge.csv")
    (tmp_path / "schema.toml").write_text(
        'id = "id"\nsensitive = "sa"\n[[qi]]\nname = "x"\nkind = "numeric"\n')
    pd.DataFrame({"from": ["a", "b", "d"], "to": ["d", "c", "b"]}).to_csv(
        tmp_path / "T.csv", index=False)
    return [*args, "--knowledge", str(tmp_path / "knowledge.csv"), "--schema",
            str(tmp_path / "schema.toml")]


def test_joint_audit_from_files_needs_each_persons_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    args = _write_case(tmp_path, boxes=False)
    code, _, err = run_cli(monkeypatch, capsys, "audit", *args, "--joint", "--transitions",
                           str(tmp_path / "T.csv"))
    assert code == 2 and "--store" in err
    assert CASE_MODEL.allows("a", "c")


def test_joint_audit_from_files_flags_the_issue_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    args = _write_case(tmp_path, boxes=True)
    code, out, err = run_cli(monkeypatch, capsys, "audit", *args, "--joint", "--transitions",
                             str(tmp_path / "T.csv"), "--json")
    document = json.loads(out)
    assert code == 1 and "p2" in document["vulnerable_ids"]
    forced = {(c["id"], c["release"]): c["possible"] for c in document["joint"]["flagged_cells"]}
    assert forced[("p2", 1)] == ["c"]
