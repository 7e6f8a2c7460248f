"""Issue 18, item 6: SIGKILL of ``republish release`` at random points, 10 trials.

The trials and their checks are those of ``benchmarks/crash_safety.py`` (which runs 50+
and records them in benchmarks/RESULTS.md): after each kill the output folder holds no
file of an uncommitted release, the history is unchanged or one release longer,
``verify`` and ``verify --files`` pass (the next command finishes an interrupted
publication), no staging is left, and ``export`` re-creates missing files byte for byte.
The 10 trials cover every checkpoint, the window between the store commit and the file
moves twice, and three random times after launch.
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "crash_safety.py"


def load_benchmark():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("crash_safety", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["crash_safety"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_ten_kills_leave_a_consistent_store_and_recoverable_files(tmp_path: Path) -> None:
    crash = load_benchmark()
    trials, _ = crash.run_trials(10, tmp_path, rows=120, seed=18, parallel=2, delay=0.15,
                                 budget=1.6)
    failures = [f"trial {t.index} ({t.target}, after {t.reached}): {t.problems}"
                for t in trials if not t.ok]
    assert failures == []
    facts = crash.summary(trials)
    assert facts["killed"] >= 8
    # the kill landed after the commit and before the files were marked in place
    assert facts["killed_between_commit_and_files_marked"] >= 1
    assert any(t.after == t.before for t in trials)  # and before the commit


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_history_is_read_after_a_kill_that_left_a_hot_journal(tmp_path: Path) -> None:
    # A kill inside a write transaction leaves a hot rollback journal; the trials' history
    # count must roll it back (as the next command does) rather than fail on it.
    crash = load_benchmark()
    store = tmp_path / "s.db"
    writer = (
        "import os, signal, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('CREATE TABLE releases (number INTEGER PRIMARY KEY, blob BLOB)')\n"
        "c.execute('INSERT INTO releases (blob) VALUES (zeroblob(1000))')\n"
        "c.execute('PRAGMA cache_size = 1')\n"
        "c.execute('BEGIN')\n"
        "for _ in range(200):\n"
        "    c.execute('INSERT INTO releases (blob) VALUES (zeroblob(4000))')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(store)], check=False)
    journal = tmp_path / "s.db-journal"
    assert journal.is_file() and journal.stat().st_size > 0
    assert crash._history(store) == 1
