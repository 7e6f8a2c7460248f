"""``republish init --principle eps-inclusion``, then release, verify, history and audit."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

from republish.cli import main
from republish.store import HISTORY_FIELDS

T1 = """name,age,zip,disease
Bob,21,12,dyspepsia
Alice,22,14,bronchitis
Andy,24,18,flu
David,23,25,gastritis
Gary,41,20,flu
Helen,36,27,gastritis
Jane,37,33,dyspepsia
Ken,40,35,flu
"""
T2 = """name,age,zip,disease
Bob,21,12,dyspepsia
David,23,25,gastritis
Mary,24,30,pneumonia
Emily,25,21,flu
Jane,37,33,dyspepsia
Gary,41,20,flu
Tom,60,44,gastritis
Vince,65,36,flu
Ray,22,27,colitis
Paul,52,34,pneumonia
Steve,56,40,gastritis
"""
SCHEMA = """id = "name"
sensitive = "disease"
[[qi]]
name = "age"
kind = "numeric"
[[qi]]
name = "zip"
kind = "numeric"
"""
CATEGORIES = """disease,category
dyspepsia,digestive
gastritis,digestive
colitis,digestive
bronchitis,respiratory
flu,respiratory
pneumonia,respiratory
"""


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["republish", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, " ".join(captured.err.split())


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in (("t1.csv", T1), ("t2.csv", T2), ("schema.toml", SCHEMA),
                       ("categories.csv", CATEGORIES)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _init(files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          *extra: str) -> tuple[int, str, str]:
    return run(monkeypatch, capsys, "init", "--store", str(files / "s.db"), "--schema",
               str(files / "schema.toml"), "--principle", "eps-inclusion", *extra)


def test_store_sequence(files: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _init(files, monkeypatch, capsys, "--lambda", "2", "--categories",
                         str(files / "categories.csv"))
    out = " ".join(out.split())  # rich wraps long lines
    assert code == 0 and "eps-inclusion" in out and "ε = λ·τ = 2·1 = 2" in out
    store, out_dir = str(files / "s.db"), str(files / "out")
    for number, seed in ((1, "1"), (2, "2")):
        code, out, _ = run(monkeypatch, capsys, "release", str(files / f"t{number}.csv"),
                           "--store", store, "-o", out_dir, "--seed", seed, "--json")
        assert code == 0 and json.loads(out)["release"] == number
    summary = json.loads(out)
    published = pd.read_csv(files / "out" / "release-2.csv")
    assert list(published.columns) == ["group", "age", "zip", "disease"]
    assert sorted(published["age"]) == sorted(pd.read_csv(files / "t2.csv")["age"])
    substitutions = pd.read_csv(files / "out" / "substitutions-2.csv")
    assert list(substitutions.columns) == ["group", "count"]
    assert int(substitutions["count"].sum()) == summary["substitutions"] == 1
    assert summary["counterfeits"] == 0 and not (files / "out" / "counterfeits-2.csv").exists()

    code, out, _ = run(monkeypatch, capsys, "history", "--store", store, "--json")
    history = json.loads(out)
    assert code == 0 and all(set(HISTORY_FIELDS) <= set(h) for h in history)
    assert [h["substitutions"] for h in history] == [0, 1]
    code, out, _ = run(monkeypatch, capsys, "verify", "--store", store)
    assert code == 0 and "OK" in out
    code, out, _ = run(monkeypatch, capsys, "verify", "--store", store, "--json")
    assert code == 0 and json.loads(out)["principle"] == "eps-inclusion"

    code, out, _ = run(monkeypatch, capsys, "audit", "--store", store, "--json")
    document = json.loads(out)
    assert code == 0 and document["vulnerable"] == 0
    assert min(int(k) for k in document["intersection_sizes"]) >= 2
    assert {leak["check"] for leak in document["leaks"]} == {"exact-qis"}


def test_verify_catches_a_dropped_value(files: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _init(files, monkeypatch, capsys, "--lambda", "2")
    store = str(files / "s.db")
    for number in (1, 2):
        run(monkeypatch, capsys, "release", str(files / f"t{number}.csv"), "--store", store,
            "-o", str(files / "out"), "--seed", "5")
    connection = sqlite3.connect(files / "s.db")
    blob = connection.execute("SELECT published FROM releases WHERE number = 2").fetchone()[0]
    frame = pd.read_parquet(io.BytesIO(blob))
    frame["disease"] = frame["disease"].replace({"bronchitis": "asthma"})
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    connection.execute("UPDATE releases SET published = ? WHERE number = 2",
                       (buffer.getvalue(),))
    connection.commit()
    connection.close()
    code, out, _ = run(monkeypatch, capsys, "verify", "--store", store, "--json")
    reasons = " ".join(v["reason"] for v in json.loads(out)["violations"])
    assert code == 1 and "signatures may only grow" in reasons and "bronchitis" in reasons


def test_bad_options_exit_2(files: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _init(files, monkeypatch, capsys)
    assert code == 2 and "--lambda" in err
    code, _, err = _init(files, monkeypatch, capsys, "--lambda", "2", "--m", "3")
    assert code == 2 and "differs" in err
    code, _, err = run(monkeypatch, capsys, "init", "--store", str(files / "m.db"), "--schema",
                       str(files / "schema.toml"), "--m", "2", "--lambda", "2")
    assert code == 2 and "eps-inclusion" in err
    code, _, err = _init(files, monkeypatch, capsys, "--lambda", "2", "--categories",
                         str(files / "t1.csv"))
    assert code == 2 and "two columns" in err
    assert not (files / "s.db").exists()
