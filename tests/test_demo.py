"""``republish demo``: the paper's verdicts and the releases republish computes."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from republish.cli.app import app


def test_demo_json_verdicts_and_computed_releases() -> None:
    result = CliRunner().invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    verdicts = {v["check"]: v for v in document["verdicts"]}
    assert verdicts["Table 1b is 2-unique"]["ok"] is True
    assert verdicts["Tables 1b and 2b are each 2-diverse"]["ok"] is True
    leak = verdicts["Tables 1b -> 2b are 2-invariant"]
    assert leak["ok"] is False
    # The report names Bob's group (group 1 of Table 2b).
    bob = [v for v in leak["violations"] if "Bob" in v["rows"]]
    assert bob and bob[0]["group"] == 1
    assert verdicts["Tables 1b -> 3a (with R(2) = Table 3b) are 2-invariant"]["ok"] is True
    computed = {c["step"]: c for c in document["computed"]}
    assert all(c["verified"] for c in computed.values())
    after_paper = computed["release 2 after Table 1b"]
    assert after_paper["counterfeits"] == 2
    assert after_paper["status"] == "OPTIMAL" and after_paper["bound"] == 2


def test_demo_console_script_prints_tables_and_verdicts() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "from republish.cli import main; main()", "demo"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "Table 1a: microdata T(1)" in out and "Table 3b: R(2)" in out
    assert "Tables 1b -> 2b are 2-invariant: NO" in out
    assert "Computed T*(1) -> T*(2) are 2-invariant: yes" in out
