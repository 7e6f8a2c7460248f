"""Progress on stderr for long work (plain lines when piped), and tables as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

from helpers import run_cli

import republish
from republish.cli.progress import PlainProgress

HOSPITAL = Path(republish.__file__).parent / "examples" / "hospital"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_only_for_long_work() -> None:
    lines: list[str] = []
    clock = Clock()
    plain = PlainProgress(lines.append, "release 3", quiet=2.0, gap=1.0, every=3600.0,
                          clock=clock)
    try:
        plain.update("validate")
        clock.now += 0.5
        plain.update("eligibility")
        assert lines == []  # quick phases: nothing
        plain.update("heuristic release 1/6", announce=True)
        assert lines == ["release 3: heuristic release 1/6 … 0.5 s"]
        clock.now += 11.8
        plain.update("counts model")
        assert lines[-1] == "release 3: counts model … 12.3 s"
        clock.now += 0.4
        plain.update("grouping")  # within a second of the last line: not yet
        assert len(lines) == 2
    finally:
        plain.close()


def test_a_heartbeat_during_a_long_phase() -> None:
    lines: list[str] = []
    plain = PlainProgress(lines.append, "compare", quiet=0.05, gap=0.05, every=0.05)
    try:
        plain.update("exact release 2/3: counts model")
        time.sleep(0.4)
    finally:
        plain.close()
    assert len(lines) >= 2 and all(line.startswith("compare: exact release 2/3: counts model … ")
                                   for line in lines)
    count = len(lines)
    time.sleep(0.15)
    assert len(lines) == count  # closed: silent


def _store(tmp_path: Path, monkeypatch, capsys) -> Path:  # type: ignore[no-untyped-def]
    store = tmp_path / "s.db"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
            str(HOSPITAL / "schema.toml"), "--m", "2")
    for n, name in ((1, "table1a.csv"), (2, "table2a.csv")):
        code, _, err = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / name), "--store",
                               str(store), "-o", str(tmp_path / "out"), "--seed", str(n),
                               "--solver", "heuristic")
        assert code == 0, err
    return store


def test_history_as_csv_and_json(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    store = _store(tmp_path, monkeypatch, capsys)
    code, text, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--format",
                            "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(text)))
    code, document, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store),
                                "--format", "json")
    assert code == 0 and json.loads(document) == json.loads(
        run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")[1])
    records = json.loads(document)
    assert [r["release"] for r in rows] == ["1", "2"]
    assert set(rows[0]) == set().union(*records)  # every field, none cut
    assert rows[1]["ncp"] == str(records[1]["ncp"])
    code, table, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store))
    assert "mean perimeter" in table and "NCP" in table and "perim." not in table


def test_compare_shows_progress_when_piped(tmp_path: Path) -> None:
    data = tmp_path / "census.csv"
    census, schema = republish.synthetic_census(400, seed=2)
    census.to_csv(data, index=False)
    schema_file = tmp_path / "schema.toml"
    schema_file.write_text(
        f'id = "{schema.identifier}"\nsensitive = "{schema.sensitive}"\n' + "".join(
            f'[[qi]]\nname = "{qi.name}"\nkind = "{qi.kind}"\n'
            + (f"order = {json.dumps([str(c) for c in qi.categories or ()])}\n"
               if qi.kind != "numeric" else "")
            for qi in schema.qis))
    done = subprocess.run(
        [sys.executable, "-c", "from republish.cli import main; main()", "compare", str(data),
         "--schema", str(schema_file), "--m", "4", "--series", "initial=200,r=20,releases=2",
         "--time-limit", "1", "-o", str(tmp_path / "cmp"), "--format", "csv"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for pipeline in ("heuristic", "exact"):
        for k in (1, 2):
            assert f"compare: {pipeline} release {k}/2 … " in done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 4 and rows[0]["pipeline"] == "heuristic"
    assert (tmp_path / "cmp" / "compare.csv").read_text().splitlines()[0] == \
        done.stdout.splitlines()[0]
