"""``republish init --principle m-distinct``, release, verify, history, audit --store."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli
from test_m_distinct_paper import CLASSES, T1, T2

from republish.store import ReleaseStore

SCHEMA_TEXT = """id = "name"
sensitive = "disease"
[[qi]]
name = "zip"
kind = "numeric"
[[qi]]
name = "hours"
kind = "numeric"
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "schema.toml").write_text(SCHEMA_TEXT)
    lines = ["from,to"] + [f"{a},{b}" for members in CLASSES for a in members for b in members
                           if a != b]
    (tmp_path / "T.csv").write_text("\n".join(lines) + "\n")
    T1.to_csv(tmp_path / "t1.csv", index=False)
    T2.to_csv(tmp_path / "t2.csv", index=False)
    # Release 3: Ken's dyspepsia turns into gastritis, Julia leaves, Ann arrives.
    third = pd.concat([T2[T2.name != "Julia"],
                       pd.DataFrame([("Ann", 20000, 40, "Cataract")], columns=T2.columns)])
    third.loc[third.name == "Ken", "disease"] = "Gastritis"
    third.to_csv(tmp_path / "t3.csv", index=False)
    return {name: tmp_path / f"{name}" for name in ("schema.toml", "T.csv", "t1.csv", "t2.csv",
                                                       "t3.csv", "s.db", "out")}


def test_store_workflow(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    store = str(files["s.db"])
    code, out, _ = run_cli(monkeypatch, capsys, "init", "--store", store, "--schema",
                           str(files["schema.toml"]), "--m", "2", "--principle", "m-distinct",
                           "--transitions", str(files["T.csv"]))
    assert code == 0 and "m-distinct" in out
    for k, name in enumerate(("t1.csv", "t2.csv", "t3.csv"), start=1):
        code, out, err = run_cli(monkeypatch, capsys, "release", str(files[name]), "--store", store,
                                 "-o", str(files["out"]), "--seed", str(k), "--json")
        assert code == 0, err
        assert json.loads(out)["release"] == k
    assert (files["out"] / "release-3.csv").is_file()
    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", store, "--json")
    assert code == 0 and json.loads(out)["ok"] and json.loads(out)["principle"] == "m-distinct"
    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", store, "--json")
    assert [row["release"] for row in json.loads(out)] == [1, 2, 3]
    code, out, _ = run_cli(monkeypatch, capsys, "audit", "--store", store, "--json")
    document = json.loads(out)
    assert code == 0 and document["vulnerable"] == 0
    assert document["sug"]["group_adversary"]["vulnerable_versions"] == 0
    assert document["max_exact_risk"] <= 0.5 + 1e-9
    code, out, _ = run_cli(monkeypatch, capsys, "audit", "--store", store)
    assert code == 0 and "SUG attack" in out


def test_store_refuses_illegal_updates(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = str(files["s.db"])
    run_cli(monkeypatch, capsys, "init", "--store", store, "--schema", str(files["schema.toml"]),
            "--m", "2", "--principle", "m-distinct", "--transitions", str(files["T.csv"]),
            "--strict")
    assert run_cli(monkeypatch, capsys, "release", str(files["t1.csv"]), "--store", store, "-o",
                   str(files["out"]))[0] == 0
    jumped = T2.copy()
    jumped.loc[jumped.name == "Ken", "disease"] = "Flu"  # dyspepsia cannot become flu
    jumped.to_csv(files["t2.csv"], index=False)
    code, _, err = run_cli(monkeypatch, capsys, "release", str(files["t2.csv"]), "--store", store,
                           "-o", str(files["out"]))
    assert code == 2 and "transition model" in err
    with ReleaseStore.open(files["s.db"]) as opened:
        assert opened.last_release == 1 and opened.options["strict"] is True


@pytest.mark.parametrize("extra, message", [
    (["--transitions", "T.csv"], "need --principle m-distinct"),
    (["--principle", "m-distinct"], "needs --transitions"),
])
def test_init_usage_errors(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str], extra: list[str],
                           message: str) -> None:
    extra = [str(files["T.csv"]) if e == "T.csv" else e for e in extra]
    code, _, err = run_cli(monkeypatch, capsys, "init", "--store", str(files["s.db"]), "--schema",
                           str(files["schema.toml"]), "--m", "2", *extra)
    assert code == 2 and message in err


def test_store_checks_legal_updates_itself(tmp_path: Path) -> None:
    from test_m_distinct_paper import MODEL, SCHEMA, paper_releases

    from republish.errors import StoreError
    from republish.principles.catalog.m_distinct import MDistinctOptions
    from republish.principles.report import VerificationReport

    tables = paper_releases()
    passed = VerificationReport("test")  # the store must not trust it blindly
    with ReleaseStore.init(tmp_path / "s.db", SCHEMA, 2, "m-distinct",
                           MDistinctOptions(2, MODEL).to_dict()) as store:
        store.append_release(tables["table3"], passed)
        with pytest.raises(StoreError, match="legal update instance"):
            store.append_release(tables["table4"], passed)
        store.append_release(tables["table5"], passed)  # values changed, legally
        assert store.last_release == 2
