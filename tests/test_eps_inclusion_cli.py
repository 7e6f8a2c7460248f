"""``republish init --principle eps-inclusion``, then release, verify, history and audit."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import EPS_COLUMNS, EPS_TABLE_1A, EPS_TABLE_2A, csv_text, rewrite_published, run_cli

from republish.store import HISTORY_FIELDS

# The ε-inclusion paper's Tables 1a and 2a.
T1 = csv_text(EPS_COLUMNS, EPS_TABLE_1A)
T2 = csv_text(EPS_COLUMNS, EPS_TABLE_2A)
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


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in (("t1.csv", T1), ("t2.csv", T2), ("schema.toml", SCHEMA),
                       ("categories.csv", CATEGORIES)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _init(files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          *extra: str) -> tuple[int, str, str]:
    return run_cli(monkeypatch, capsys, "init", "--store", str(files / "s.db"), "--schema",
                   str(files / "schema.toml"), "--principle", "eps-inclusion", *extra)


def test_store_sequence(files: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _init(files, monkeypatch, capsys, "--lambda", "2", "--categories",
                         str(files / "categories.csv"))
    out = " ".join(out.split())  # rich wraps long lines
    assert code == 0 and "eps-inclusion" in out and "ε = λ·τ = 2·1 = 2" in out
    store, out_dir = str(files / "s.db"), str(files / "out")
    for number, seed in ((1, "1"), (2, "2")):
        code, out, _ = run_cli(monkeypatch, capsys, "release", str(files / f"t{number}.csv"),
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

    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", store, "--json")
    history = json.loads(out)
    assert code == 0 and all(set(HISTORY_FIELDS) <= set(h) for h in history)
    assert [h["substitutions"] for h in history] == [0, 1]
    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", store)
    assert code == 0 and "OK" in out
    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", store, "--json")
    assert code == 0 and json.loads(out)["principle"] == "eps-inclusion"

    code, out, _ = run_cli(monkeypatch, capsys, "audit", "--store", store, "--json")
    document = json.loads(out)
    assert code == 0 and document["vulnerable"] == 0
    assert min(int(k) for k in document["intersection_sizes"]) >= 2
    assert {leak["check"] for leak in document["leaks"]} == {"exact-qis"}


def test_verify_catches_a_dropped_value(files: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _init(files, monkeypatch, capsys, "--lambda", "2")
    store = str(files / "s.db")
    for number in (1, 2):
        run_cli(monkeypatch, capsys, "release", str(files / f"t{number}.csv"), "--store", store,
                "-o", str(files / "out"), "--seed", "5")

    def drop_bronchitis(frame: pd.DataFrame) -> None:
        frame["disease"] = frame["disease"].replace({"bronchitis": "asthma"})

    rewrite_published(files / "s.db", 2, drop_bronchitis)
    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", store, "--json")
    reasons = " ".join(v["reason"] for v in json.loads(out)["violations"])
    assert code == 1 and "signatures may only grow" in reasons and "bronchitis" in reasons


def test_bad_options_exit_2(files: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _init(files, monkeypatch, capsys)
    assert code == 2 and "--lambda" in err
    code, _, err = _init(files, monkeypatch, capsys, "--lambda", "2", "--m", "3")
    assert code == 2 and "differs" in err
    code, _, err = run_cli(monkeypatch, capsys, "init", "--store", str(files / "m.db"), "--schema",
                           str(files / "schema.toml"), "--m", "2", "--lambda", "2")
    assert code == 2 and "eps-inclusion" in err
    code, _, err = _init(files, monkeypatch, capsys, "--lambda", "2", "--categories",
                         str(files / "t1.csv"))
    assert code == 2 and "two columns" in err
    assert not (files / "s.db").exists()
