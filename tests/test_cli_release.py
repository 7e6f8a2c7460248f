"""``republish init | release | verify | history`` on the hospital files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli, tamper

from republish.store import HISTORY_FIELDS

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
SCHEMA = HOSPITAL / "schema.toml"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "s.db"
    code, out, _ = run_cli(monkeypatch, capsys, "init", "--store", str(path), "--schema",
                           str(SCHEMA), "--m", "2")
    assert code == 0 and "created" in out
    return path


def test_release_sequence(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, _, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store",
                         str(store), "-o", str(out_dir), "--seed", "1")
    assert code == 0
    code, out, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table2a.csv"), "--store",
                           str(store), "-o", str(out_dir), "--seed", "2", "--json",
                           "--solver", "heuristic")
    assert code == 0 and json.loads(out)["release"] == 2
    published = pd.read_csv(out_dir / "release-2.csv")
    assert list(published.columns) == ["group", "age", "zip", "disease"]  # no identifier
    counterfeits = pd.read_csv(out_dir / "counterfeits-2.csv")
    assert list(counterfeits.columns) == ["group", "count"]
    assert int(counterfeits["count"].sum()) == json.loads(out)["counterfeits"]
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")]  # no staging left

    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")
    history = json.loads(out)
    assert code == 0 and [h["release"] for h in history] == [1, 2]
    assert all(set(HISTORY_FIELDS) <= set(h) for h in history)
    assert history[1]["new"] == 5 and history[1]["deleted"] == 5
    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store))
    assert code == 0 and "HEURISTIC" in out

    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", str(store))
    assert code == 0 and "OK" in out


def test_release_solver_modes_and_their_certificates(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The default (auto) and exact releases carry proven certificates; a bad time limit
    exits 2 and leaves the store as it was."""
    out_dir = tmp_path / "out"
    code, out, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"),
                           "--store", str(store), "-o", str(out_dir), "--seed", "1", "--json")
    first = json.loads(out)
    assert code == 0 and first["status"] == "OPTIMAL" and first["bound"] == first["objective"]
    assert first["grouping_status"] in ("OPTIMAL", "FEASIBLE", "HEURISTIC")
    code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table2a.csv"),
                           "--store", str(store), "-o", str(out_dir), "--time-limit", "0")
    assert code == 2 and "time_limit" in err
    assert not (out_dir / "release-2.csv").exists()
    code, out, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table2a.csv"),
                           "--store", str(store), "-o", str(out_dir), "--seed", "2", "--json",
                           "--solver", "exact", "--time-limit", "5")
    second = json.loads(out)
    assert code == 0 and second["release"] == 2 and second["status"] == "OPTIMAL"
    assert second["bound"] == second["objective"] == second["counterfeits"] + second["deferred"]
    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")
    history = json.loads(out)
    assert [h["status"] for h in history] == ["OPTIMAL", "OPTIMAL"]
    assert history[1]["grouping_status"] == second["grouping_status"]


def test_seed_makes_releases_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    texts = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.db"
        run_cli(monkeypatch, capsys, "init", "--store", str(path), "--schema", str(SCHEMA), "--m",
                "2")
        run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store", str(path),
                "-o", str(tmp_path / name), "--seed", "7")
        texts.append((tmp_path / name / "release-1.csv").read_text())
    assert texts[0] == texts[1]


def test_verify_reports_tampering(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store", str(store),
            "-o", str(tmp_path / "out"), "--seed", "3")
    tamper(store, 1)
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store))
    assert code == 1 and "release 1" in err
    code, out, _ = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--json")
    assert code == 1 and json.loads(out)["ok"] is False


def test_parquet_output(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store",
                         str(store), "-o", str(tmp_path / "out"), "--format", "parquet")
    assert code == 0
    frame = pd.read_parquet(tmp_path / "out" / "release-1.parquet")
    assert len(frame) == 11 and "name" not in frame.columns


def test_bad_inputs_exit_2(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    bad = tmp_path / "bad.csv"
    pd.read_csv(HOSPITAL / "table1a.csv").drop(columns=["zip"]).to_csv(bad, index=False)
    code, out, err = run_cli(monkeypatch, capsys, "release", str(bad), "--store", str(store), "-o",
                             str(out_dir))
    assert code == 2 and "schema" in err and "zip" in err and out == ""
    other_schema = tmp_path / "schema.toml"
    other_schema.write_text(SCHEMA.read_text().replace('name = "zip"', 'name = "zipcode"'))
    code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store",
                           str(store), "-o", str(out_dir), "--schema", str(other_schema))
    assert code == 2 and "schema differs" in err
    code, _, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"), "--store",
                         str(store), "-o", str(out_dir))
    assert code == 0
    changed = tmp_path / "changed.csv"
    table = pd.read_csv(HOSPITAL / "table2a.csv")
    table.loc[table["name"] == "Bob", "disease"] = "flu"
    table.to_csv(changed, index=False)
    code, _, err = run_cli(monkeypatch, capsys, "release", str(changed), "--store", str(store),
                           "-o", str(tmp_path / "out2"))
    assert code == 2 and "Bob" in err and "m-Distinct" in err
    code, _, err = run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                           str(SCHEMA), "--m", "2")
    assert code == 2 and "already exists" in err
    code, _, err = run_cli(monkeypatch, capsys, "history", "--store", str(tmp_path / "none.db"))
    assert code == 2 and "not found" in err
    # Release 2 again into a directory that already holds release-2 files is refused.
    (tmp_path / "out3").mkdir()
    (tmp_path / "out3" / "release-2.csv").write_text("x")
    code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table2a.csv"), "--store",
                           str(store), "-o", str(tmp_path / "out3"))
    assert code == 2 and "already exist" in err


def test_release_scheduler_gives_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``--scheduler local`` splits the buckets as tasks: the files are byte-identical to a
    run without it; a bad scheduler is refused with exit 2 and nothing recorded."""
    files = []
    for name, extra in (("plain", []), ("tasks", ["--scheduler", "local"])):
        path = tmp_path / f"{name}.db"
        assert run_cli(monkeypatch, capsys, "init", "--store", str(path), "--schema",
                       str(SCHEMA), "--m", "2")[0] == 0
        for table in ("table1a.csv", "table2a.csv"):
            code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / table),
                                   "--store", str(path), "-o", str(tmp_path / name),
                                   "--seed", "3", "--solver", "heuristic", *extra)
            assert code == 0, err
        files.append([(tmp_path / name / f"release-{n}.csv").read_bytes() for n in (1, 2)])
    assert files[0] == files[1]
    code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"),
                           "--store", str(tmp_path / "bad.db"), "-o", str(tmp_path / "bad"),
                           "--scheduler", "nonsense")
    assert code == 2 and "scheduler" in err


def test_a_first_release_above_400_rows_prints_what_was_proven_within_its_policy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """450 rows (``auto``: the paper's signatures kept): ``release`` prints the bound within
    them after the release's own certificate, ``history`` shows its status and gap in the
    certificates table, and ``history --json`` carries the four fields."""
    from helpers import random_hospital_table

    table = tmp_path / "t1.csv"
    random_hospital_table(3, 450, 5).to_csv(table, index=False)
    store = tmp_path / "s.db"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                   str(SCHEMA), "--m", "2")[0] == 0
    code, out, _ = run_cli(monkeypatch, capsys, "release", str(table), "--store", str(store),
                           "-o", str(tmp_path / "out"), "--time-limit", "2", "--seed", "1")
    words = " ".join(out.split())
    assert code == 0 and "certificate: release FEASIBLE" in words
    assert words.index("(b) perimeter") < words.index("within the paper's signatures, (b)")
    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store))
    assert code == 0 and "(b) gap within policy" in out
    code, out, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")
    (row,) = json.loads(out)
    assert row["within"] == "within the paper's signatures"
    assert row["within_status"] in ("OPTIMAL", "FEASIBLE")
    assert row["within_bound"] <= row["cost"] + 1e-9
    assert row["within_gap"] == pytest.approx((row["cost"] - row["within_bound"]) / row["cost"])
