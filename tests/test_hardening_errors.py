"""Issue 18, item 2: no traceback for bad input or a bad environment.

Every case the issue listed gets a one-paragraph message and exit code 2; an unexpected
internal error exits 3 with a short message, and prints its traceback only with
``republish --debug``. Exit 1 stays "a verification or audit found a violation".
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
from helpers import run_cli

import republish.cli.store_commands as store_commands
from republish.store import ReleaseStore

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
SCHEMA = HOSPITAL / "schema.toml"
T1, T2 = HOSPITAL / "table1a.csv", HOSPITAL / "table2a.csv"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    def run(*args: str) -> tuple[int, str, str]:
        code, out, err = run_cli(monkeypatch, capsys, *args)
        assert "Traceback" not in err, err
        return code, out, err

    return run


@pytest.fixture
def store(tmp_path: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    path = tmp_path / "s.db"
    assert cli("init", "--store", str(path), "--schema", str(SCHEMA), "--m", "2")[0] == 0
    assert cli("release", str(T1), "--store", str(path), "-o", str(tmp_path / "out"),
               "--seed", "1", "--solver", "heuristic")[0] == 0
    return path


def release_args(store: Path, data: Path, out: Path, *extra: str) -> tuple[str, ...]:
    return ("release", str(data), "--store", str(store), "-o", str(out), "--solver",
            "heuristic", *extra)


def one_paragraph(err: str) -> bool:
    return err.startswith("error: ") and "\n\n" not in err


def test_issue_cases_exit_2_with_a_message(tmp_path: Path, store: Path, cli) -> None:  # type: ignore[no-untyped-def]
    before = store.read_bytes()
    out = tmp_path / "out2"
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    fake_parquet = tmp_path / "x.parquet"
    fake_parquet.write_text("name,age\n1,2\n")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    cases = [
        (release_args(store, empty, out), "the file is empty"),
        (release_args(store, fake_parquet, out), "not a readable Parquet file"),
        (release_args(store, T2, a_file), "is not a folder"),
        (release_args(store, T2, out, "--seed", "-1"), "--seed"),
        (release_args(store, T2, out, "--time-limit", "nan"), "finite"),
        (release_args(store, T2, out, "--workers", "0"), "--workers"),
        (("eligibility", "--counts", f"{2**70},1", "--m", "2"), "exceeds"),
        (("eligibility", "--counts", "3,3,3", "--m", str(10**23)), "exceeds 1,000,000"),
    ]
    for args, message in cases:
        code, _, err = cli(*args)
        assert code == 2 and message in err, (args, err)
    assert store.read_bytes() == before
    assert not out.exists() or not list(out.iterdir())


def test_bad_hierarchy_and_store_paths(tmp_path: Path, store: Path, cli) -> None:  # type: ignore[no-untyped-def]
    binary = tmp_path / "h.csv"
    binary.write_bytes(bytes(range(256)))
    schema = tmp_path / "schema.toml"
    schema.write_text('id = "name"\nsensitive = "disease"\n[[qi]]\nname = "zip"\n'
                      'kind = "hierarchy"\nhierarchy = "h.csv"\n')
    code, _, err = cli("init", "--store", str(tmp_path / "n.db"), "--schema", str(schema),
                       "--m", "2")
    assert code == 2 and "not UTF-8 text" in err and not (tmp_path / "n.db").exists()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    code, _, err = cli("init", "--store", str(blocker / "s.db"), "--schema", str(SCHEMA),
                       "--m", "2")
    assert code == 2 and "cannot create the store" in err
    # a store missing its tables: refused, file untouched
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(store.read_bytes())
    connection = sqlite3.connect(damaged)
    connection.execute("DROP TABLE state")
    connection.commit()
    connection.close()
    before = damaged.read_bytes()
    for command in (("verify",), ("history",), ("release", str(T2), "-o", str(tmp_path / "o"))):
        code, _, err = cli(command[0], "--store", str(damaged), *command[1:])
        assert code == 2 and "damaged" in err and one_paragraph(err), err
    assert damaged.read_bytes() == before
    random_bytes = tmp_path / "random.db"
    random_bytes.write_bytes(bytes(range(256)) * 20)
    code, _, err = cli("verify", "--store", str(random_bytes))
    assert code == 2 and "not a readable republish store" in err


def test_full_disk_in_the_store_is_named_and_leaves_it_unchanged(
        tmp_path: Path, store: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """SQLite's "database or disk is full" (a page limit stands in for the disk) used to be
    hidden behind "cannot rollback - no transaction is active"."""
    before = store.read_bytes()
    connect = sqlite3.connect

    def small_disk(path: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        connection = connect(path, *args, **kwargs)  # type: ignore[arg-type]
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages + 1}")
        return connection

    monkeypatch.setattr(sqlite3, "connect", small_disk)
    out = tmp_path / "out2"
    code, _, err = cli(*release_args(store, T2, out, "--seed", "2"))
    assert code == 2 and "disk is full" in err and "no transaction" not in err, err
    monkeypatch.undo()
    assert store.read_bytes() == before
    assert not out.exists() or not list(out.iterdir())
    assert not (tmp_path / ".s.db.staging").exists()


def test_full_disk_while_staging_files(tmp_path: Path, store: Path, cli,
                                       monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    before = store.read_bytes()

    def no_space(self: object, files: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "staging/release-2.csv")

    monkeypatch.setattr(store_commands.StagedRelease, "write", no_space)
    code, _, err = cli(*release_args(store, T2, tmp_path / "out2"))
    assert code == 2 and "the disk is full" in err and one_paragraph(err)
    assert store.read_bytes() == before


def test_permission_denied_on_the_output_folder(tmp_path: Path, store: Path, cli,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import republish.cli.publication as publication

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "ro"))

    monkeypatch.setattr(publication.tempfile, "mkstemp", denied)
    before = store.read_bytes()
    code, _, err = cli(*release_args(store, T2, tmp_path / "ro"))
    assert code == 2 and "not writable" in err
    assert store.read_bytes() == before


def test_interrupt_exits_2_and_leaves_the_store(tmp_path: Path, store: Path, cli,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_commands, "publish", interrupted)
    before = store.read_bytes()
    code, _, err = cli(*release_args(store, T2, tmp_path / "out2"))
    assert code == 2 and "interrupted" in err and store.read_bytes() == before


def test_locked_store(tmp_path: Path, store: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ReleaseStore, "append_step", lambda *a, **k: (_ for _ in ()).throw(
        sqlite3.OperationalError("database is locked")))
    code, _, err = cli(*release_args(store, T2, tmp_path / "out2"))
    assert code == 2 and "locked by another process" in err
    assert not list((tmp_path / "out2").iterdir())


def test_internal_error_exits_3_with_a_short_message(
        store: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def broken(self: object) -> list[object]:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(ReleaseStore, "history", broken)
    code, _, err = cli("history", "--store", str(store))
    assert code == 3 and "internal error (ZeroDivisionError: a bug)" in err
    assert "--debug" in err and one_paragraph("error: " + err)


def test_debug_prints_the_traceback(store: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    def broken(self: object) -> list[object]:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(ReleaseStore, "history", broken)
    code, _, err = run_cli(monkeypatch, capsys, "--debug", "history", "--store", str(store))
    assert code == 3 and "Traceback" in err and "ZeroDivisionError" in err
    code, _, err = run_cli(monkeypatch, capsys, "history", "--store", str(store))
    assert code == 3 and "Traceback" not in err  # --debug does not stick


def test_values_are_printed_literally(tmp_path: Path, store: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Rich markup and emoji codes in user values are not interpreted."""
    data = tmp_path / "t.csv"
    data.write_text("name,age,zip,disease\n[bold]x[/bold],:smile:,12000,flu\n")
    code, _, err = cli(*release_args(store, data, tmp_path / "o"))
    assert code == 2 and "':smile:'" in err and "\U0001f604" not in err
    schema = tmp_path / "schema.toml"
    schema.write_text('id = "name"\nsensitive = "disease"\n[[qi]]\nname = "age"\n'
                      'kind = "ordered"\norder = ["a"]\n')
    data.write_text("name,age,disease\np1,[red]:smile:[/red],flu\n")
    code, _, err = cli("ldiv", str(data), "--schema", str(schema), "--l", "1", "-o",
                       str(tmp_path / "l.csv"))
    assert code == 2 and "[red]:smile:[/red]" in err


def test_messages_quote_short_escaped_excerpts(tmp_path: Path, store: Path, cli) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "t.csv"
    secret = "S" * 5000
    data.write_text(f"name,age,zip,disease\np1,{secret}\x1b[2J,12000,flu\n")
    code, _, err = cli(*release_args(store, data, tmp_path / "o"))
    assert code == 2 and secret not in err and "\x1b" not in err and len(err) < 600
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text(f"a;{'P' * 3000};*\nb;*\n")
    schema = tmp_path / "schema.toml"
    schema.write_text('id = "name"\nsensitive = "disease"\n[[qi]]\nname = "age"\n'
                      'kind = "hierarchy"\nhierarchy = "h.csv"\n')
    code, _, err = cli("init", "--store", str(tmp_path / "n.db"), "--schema", str(schema),
                       "--m", "2")
    assert code == 2 and "P" * 100 not in err and "levels" in err


def test_batch_into_a_missing_folder(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[instance]]\nproblem = "eligibility"\ncounts = [3, 2, 1]\nm = 2\n'
                        "time_limit = 2\n")
    code, _, err = cli("batch", str(manifest), "-o", str(tmp_path / "no" / "such" / "r.csv"),
                       "--workers", "1")
    assert code == 2 and "non-existent directory" in err and one_paragraph(err[err.index(
        "error: "):])
