"""Issue 18, items 4 and 5: safe published files, crash-safe publication and recovery.

* Cells a spreadsheet would run are written with a leading apostrophe; the mapping is
  exact (docs/formats.md) and the readers (``check``, ``audit``, every verifier reading a
  published CSV) undo it.
* Files are staged beside the store, recorded with their SHA-256 in the release's
  transaction, then moved into place; the next command finishes an interrupted
  publication and removes uncommitted staging folders, saying so.
* ``export`` re-creates any release's files byte for byte; ``verify --files`` checks a
  published folder against the recorded checksums.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers import EPS_COLUMNS, EPS_TABLE_1A, EPS_TABLE_2A, csv_text, run_cli
from hypothesis import given
from hypothesis import strategies as st

import republish.cli.store_commands as store_commands
from republish.release import (
    FORMULA_TRIGGERS,
    neutralize_cell,
    read_published,
    restore_cell,
)
from republish.store import ReleaseStore

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
DOCS = Path(__file__).resolve().parents[1] / "docs"
T1, T2 = HOSPITAL / "table1a.csv", HOSPITAL / "table2a.csv"

# --------------------------------------------------------------------- formula injection

PLACES = ["=HYPERLINK(\"http://x\")", "+1", "@SUM(A1)", "plain", "'quoted", "-x"]
DISEASES = ["=1+1", "-2+3", "@cmd", "'q", "flu", "\uff1dfull"]
INJECTION_SCHEMA = (
    'id = "name"\nsensitive = "disease"\n[[qi]]\nname = "age"\nkind = "numeric"\n'
    '[[qi]]\nname = "place"\nkind = "ordered"\norder = ['
    + ", ".join(json.dumps(p) for p in PLACES) + "]\n"
)


def injection_table(path: Path) -> Path:
    rows = [{"name": f"p{i}", "age": -5 + 3 * i, "place": PLACES[i % len(PLACES)],
             "disease": DISEASES[i % len(DISEASES)]} for i in range(24)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@given(st.text(max_size=8))
def test_neutralizing_is_exact_and_leaves_no_formula(value: str) -> None:
    written = neutralize_cell(value)
    assert restore_cell(written) == value
    if written and written[0] in FORMULA_TRIGGERS - {"-"}:
        assert written[0] == "'" and written != value or value.startswith("'")
    if written.startswith("-"):
        assert all(c.isdigit() or c in "-." for c in written)  # a plain negative number


def test_documented_mapping_matches_the_code() -> None:
    text = (DOCS / "formats.md").read_text()
    for example in ("=HYPERLINK", "'=", "U+FF1D"):
        assert example in text
    assert restore_cell("''q") == "'q" and neutralize_cell("-12.5") == "-12.5"


def test_published_csv_is_neutralized_and_read_back_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "schema.toml"
    schema.write_text(INJECTION_SCHEMA)
    data = injection_table(tmp_path / "t.csv")
    store, out = tmp_path / "s.db", tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema", str(schema),
                   "--m", "2")[0] == 0
    code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                           "-o", str(out), "--seed", "4", "--solver", "heuristic")
    assert code == 0, err
    text = (out / "release-1.csv").read_text()
    for line in text.splitlines()[1:]:
        for cell in line.split(","):
            cell = cell.strip('"')
            assert not cell or cell[0] not in "=+@\uff1d\t\r", line
            assert not cell.startswith("-") or cell[1:].replace(".", "").isdigit(), line
    published = read_published(out / "release-1.csv")
    with ReleaseStore.open(store) as opened:
        stored = opened.release(1).published
    pd.testing.assert_frame_equal(published.reset_index(drop=True),
                                  stored.astype({"group": "int64"}).reset_index(drop=True),
                                  check_dtype=False)
    assert set(published["disease"]) == set(DISEASES)
    code, out_text, err = run_cli(monkeypatch, capsys, "check", str(out / "release-1.csv"),
                                  "--schema", str(schema), "-p", "l-diversity", "-l", "2")
    assert code == 0 and "OK" in out_text, err
    knowledge = pd.read_csv(data, dtype=str, keep_default_na=False).drop(columns=["disease"])
    knowledge["releases"] = "1"
    knowledge.to_csv(tmp_path / "k.csv", index=False)
    code, out_text, err = run_cli(
        monkeypatch, capsys, "audit", "--release", str(out / "release-1.csv"), "--knowledge",
        str(tmp_path / "k.csv"), "--schema", str(schema), "--counterfeits",
        f"1:{out / 'counterfeits-1.csv'}", "--json")
    assert code == 0, err
    assert json.loads(out_text)["vulnerable"] == 0

    ldiv_out = tmp_path / "l.csv"
    code, _, err = run_cli(monkeypatch, capsys, "ldiv", str(data), "--schema", str(schema),
                           "--l", "2", "-o", str(ldiv_out), "--method", "tp")
    assert code == 0, err
    assert "'=1+1" in ldiv_out.read_text() and "\n=1+1" not in ldiv_out.read_text()
    code, _, err = run_cli(monkeypatch, capsys, "check", str(ldiv_out), "--schema",
                           str(schema), "-p", "l-diversity", "-l", "2")
    assert code == 0, err


# --------------------------------------------------------------------- export, verify --files


@pytest.fixture
def series(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """An m-invariance store with release 1 in CSV and release 2 in Parquet."""
    store, out = tmp_path / "s.db", tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                   str(HOSPITAL / "schema.toml"), "--m", "2")[0] == 0
    for data, fmt in ((T1, "csv"), (T2, "parquet")):
        code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                               "-o", str(out), "--format", fmt, "--seed", "5")
        assert code == 0, err
    return store, out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_export_recreates_every_file_byte_for_byte(
        series: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store, out = series
    published = snapshot(out)
    assert sorted(published) == ["counterfeits-1.csv", "counterfeits-2.parquet",
                                 "release-1.csv", "release-2.parquet"]
    again = tmp_path / "again"
    code, text, err = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o",
                              str(again), "--json")
    assert code == 0, err
    assert snapshot(again) == published
    assert all(item["recorded"] and item["status"] == "wrote" for item in json.loads(text))
    # a lost file comes back; identical files are left alone; other content is refused
    (out / "release-2.parquet").unlink()
    code, text, _ = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o",
                            str(out), "--release", "2")
    assert code == 0 and "unchanged" in text and snapshot(out) == published
    (out / "counterfeits-1.csv").write_text("group,count\n1,1\n")
    code, _, err = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o", str(out))
    assert code == 2 and "--overwrite" in err
    code, _, _ = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o", str(out),
                         "--overwrite")
    assert code == 0 and snapshot(out) == published
    # another format on request (no checksum recorded for it)
    code, text, _ = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o",
                            str(tmp_path / "csv"), "--format", "csv", "--release", "2")
    assert code == 0 and "no checksum recorded" in " ".join(text.split())
    assert len(read_published(tmp_path / "csv" / "release-2.csv")) == 13  # 2 counterfeits


def test_eps_inclusion_substitutions_round_trip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "schema.toml"
    schema.write_text('id = "name"\nsensitive = "disease"\n[[qi]]\nname = "age"\n'
                      '[[qi]]\nname = "zip"\n')
    store, out = tmp_path / "s.db", tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema", str(schema),
                   "--principle", "eps-inclusion", "--lambda", "2")[0] == 0
    for number, rows in ((1, EPS_TABLE_1A), (2, EPS_TABLE_2A)):
        (tmp_path / f"t{number}.csv").write_text(csv_text(EPS_COLUMNS, rows))
        code, _, err = run_cli(monkeypatch, capsys, "release", str(tmp_path / f"t{number}.csv"),
                               "--store", str(store), "-o", str(out), "--seed", "1")
        assert code == 0, err
    assert (out / "substitutions-2.csv").is_file()
    code, _, _ = run_cli(monkeypatch, capsys, "export", "--store", str(store), "-o",
                         str(tmp_path / "again"))
    assert code == 0 and snapshot(tmp_path / "again") == snapshot(out)
    assert run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                   str(out))[0] == 0


def test_verify_files_against_the_recorded_checksums(
        series: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store, out = series
    code, text, _ = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                            str(out))
    assert code == 0 and "published files" in text
    original = (out / "release-1.csv").read_bytes()
    (out / "release-1.csv").write_bytes(original.replace(b"\n", b"\r\n"))
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                           str(out))
    assert code == 1 and "release-1.csv differs" in err
    (out / "release-1.csv").write_bytes(original)
    (out / "release-3.csv").write_text("group,age,zip,disease\n")
    code, text, _ = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                            str(out), "--json")
    reasons = [v["reason"] for v in json.loads(text)["violations"]]
    assert code == 1 and any("release-3.csv is not a file of any release" in r for r in reasons)
    (out / "release-3.csv").unlink()
    (out / "counterfeits-2.parquet").unlink()
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                           str(out))
    assert code == 1 and "is missing" in err and "republish export" in err
    # the store's own record of the files is checked too
    connection = sqlite3.connect(store)
    connection.execute("UPDATE files SET sha256 = 'x' WHERE name = 'release-1.csv'")
    connection.commit()
    connection.close()
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store))
    assert code == 1 and "no longer renders to the recorded release-1.csv" in err


# --------------------------------------------------------------------- crash recovery


def test_a_crash_between_commit_and_move_is_finished_by_the_next_command(
        series: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store, out = series
    schema_only = pd.read_csv(T2).iloc[:9]
    data = tmp_path / "t3.csv"
    schema_only.to_csv(data, index=False)

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # stands for a kill right after the commit

    monkeypatch.setattr(store_commands, "move_into_place", crash)
    code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                           "-o", str(out), "--seed", "3")
    monkeypatch.undo()
    assert code == 2 and "interrupted" in err
    with ReleaseStore.open(store) as opened:
        assert opened.last_release == 3 and not (out / "release-3.csv").exists()
        assert [f.name for f in opened.unpublished_files()] == ["counterfeits-3.csv",
                                                                "release-3.csv"]
    code, text, err = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")
    assert code == 0 and len(json.loads(text)) == 3
    assert "release 3 was recorded but its files were not all in place" in err
    assert (out / "release-3.csv").is_file() and (out / "counterfeits-3.csv").is_file()
    assert run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                   str(out))[0] == 0
    assert not (tmp_path / ".s.db.staging").exists()


def test_uncommitted_staging_is_removed_saying_so(
        series: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store, out = series
    staging = tmp_path / ".s.db.staging" / "release-3-abc"
    staging.mkdir(parents=True)
    (staging / "release-3.csv").write_text("group,age,zip,disease\n1,20,1,flu\n")
    before = snapshot(out)
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store))
    assert code == 0 and "never recorded" in err and "release-3.csv" in err
    assert not staging.exists() and snapshot(out) == before


def test_release_staging_is_outside_the_output_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """No complete uncommitted release is ever inside OUT: the commit happens while the
    files are only in the store's staging folder."""
    store, out = tmp_path / "s.db", tmp_path / "out"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
            str(HOSPITAL / "schema.toml"), "--m", "2")
    seen: list[list[str]] = []
    append = ReleaseStore.append_step

    def watch(self: ReleaseStore, result: object, files: object = ()) -> None:
        seen.append(sorted(p.name for p in out.iterdir()) if out.exists() else [])
        staged = sorted(p.name for p in (tmp_path / ".s.db.staging").rglob("*.csv"))
        assert staged == ["counterfeits-1.csv", "release-1.csv"]
        append(self, result, files)  # type: ignore[arg-type]

    monkeypatch.setattr(ReleaseStore, "append_step", watch)
    assert run_cli(monkeypatch, capsys, "release", str(T1), "--store", str(store), "-o",
                   str(out))[0] == 0
    assert seen == [[]]
    assert sorted(p.name for p in out.iterdir()) == ["counterfeits-1.csv", "release-1.csv"]


def test_old_store_without_the_files_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A store written before file checksums: readable, verifiable, upgraded by the next
    release; its old files are compared with a fresh rendering."""
    store, out = tmp_path / "s.db", tmp_path / "out"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
            str(HOSPITAL / "schema.toml"), "--m", "2")
    run_cli(monkeypatch, capsys, "release", str(T1), "--store", str(store), "-o", str(out),
            "--seed", "1")
    connection = sqlite3.connect(store)
    connection.execute("DROP TABLE files")
    connection.commit()
    connection.close()
    before = store.read_bytes()
    code, _, err = run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                           str(out))
    assert code == 0, err
    assert run_cli(monkeypatch, capsys, "history", "--store", str(store))[0] == 0
    assert store.read_bytes() == before  # reading never upgrades the file
    code, _, err = run_cli(monkeypatch, capsys, "release", str(T2), "--store", str(store),
                           "-o", str(out), "--seed", "2")
    assert code == 0, err
    with ReleaseStore.open(store) as opened:
        assert [f.release for f in opened.published_files()] == [2, 2]
    assert run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                   str(out))[0] == 0


def test_output_on_another_file_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A rename across file systems fails (EXDEV): the files are copied durably instead."""
    import errno
    import os

    store, out = tmp_path / "s.db", tmp_path / "out"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
            str(HOSPITAL / "schema.toml"), "--m", "2")
    rename = os.replace

    def cross_device(source: object, target: object) -> None:
        if ".staging" in str(source):
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(source))
        rename(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", cross_device)
    code, _, err = run_cli(monkeypatch, capsys, "release", str(T1), "--store", str(store),
                           "-o", str(out), "--seed", "1")
    assert code == 0, err
    monkeypatch.undo()
    assert sorted(p.name for p in out.iterdir()) == ["counterfeits-1.csv", "release-1.csv"]
    assert run_cli(monkeypatch, capsys, "verify", "--store", str(store), "--files",
                   str(out))[0] == 0
    assert not (tmp_path / ".s.db.staging").exists()
