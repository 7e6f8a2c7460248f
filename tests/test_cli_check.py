"""``republish check``: exit codes, human and --json output, CSV and Parquet input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from republish.cli.app import app
from republish.release import build_release, write_release
from republish.schema import load_schema
from republish.tables import validate_table

SCHEMA_TOML = """\
id = "name"
sensitive = "disease"

[[qi]]
name = "age"
kind = "numeric"

[[qi]]
name = "education"
kind = "ordered"
order = ["HS", "Bachelor", "Master"]
"""

ROWS = [
    ("Ann", 30, "HS", "flu"),
    ("Ben", 35, "Bachelor", "cold"),
    ("Cid", 41, "Master", "flu"),
    ("Dee", 29, "HS", "ulcer"),
    ("Eve", 52, "Bachelor", "cold"),
    ("Fay", 47, "Master", "flu"),
    ("Gus", 44, "Master", "ulcer"),
]
#: groups of sizes 3, 2, 2; group 0 holds 'flu' twice (not 2-diverse)
GROUPS = [0, 0, 0, 1, 1, 2, 2]

runner = CliRunner()


def flat(text: str) -> str:
    """Messages on stderr may be wrapped by the console; compare them on one line."""
    return " ".join(text.split())


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    schema_path = tmp_path / "schema.toml"
    schema_path.write_text(SCHEMA_TOML)
    schema = load_schema(schema_path)
    frame = pd.DataFrame(ROWS, columns=["name", "age", "education", "disease"])
    table = validate_table(frame, schema)
    release = build_release(1, table, GROUPS, schema, rng=np.random.default_rng(3))
    csv_path, _ = write_release(release, tmp_path / "csv")
    parquet_path, _ = write_release(release, tmp_path / "parquet", fmt="parquet")
    no_group = tmp_path / "no_group.csv"
    release.published.drop(columns="group").to_csv(no_group, index=False)
    with_id = tmp_path / "with_id.csv"
    release.published.assign(name="x").to_csv(with_id, index=False)
    no_sa = tmp_path / "no_sa.csv"
    release.published.drop(columns="disease").to_csv(no_sa, index=False)
    return {
        "schema": schema_path, "csv": csv_path, "parquet": parquet_path,
        "no_group": no_group, "with_id": with_id, "no_sa": no_sa,
    }


def invoke(files: dict[str, Path], table: str, *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["check", str(files[table]), "--schema", str(files["schema"]), *args])


@pytest.mark.parametrize("table", ["csv", "parquet", "no_group"])
def test_k_anonymity_exit_codes(files: dict[str, Path], table: str) -> None:
    ok = invoke(files, table, "--principle", "k-anonymity", "--k", "2")
    assert ok.exit_code == 0, ok.output
    assert "OK" in ok.stdout
    bad = invoke(files, table, "--principle", "k-anonymity", "--k", "3")
    assert bad.exit_code == 1, bad.output
    assert "2 violation(s)" in bad.stdout
    assert "fewer than k = 3" in bad.stdout


def test_l_diversity_json(files: dict[str, Path]) -> None:
    result = invoke(files, "csv", "--principle", "l-diversity", "--l", "2", "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is False and document["principle"] == "l-diversity"
    (violation,) = document["violations"]
    assert isinstance(violation["group"], int)
    assert "'flu' fills 2 of 3 rows" in violation["reason"]
    result = invoke(files, "csv", "-p", "l-diversity", "-l", "1", "--json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert {key: document[key] for key in ("ok", "principle", "violations")} == {
        "ok": True, "principle": "l-diversity", "violations": []}


def test_json_groups_without_group_column(files: dict[str, Path]) -> None:
    result = invoke(files, "no_group", "-p", "k-anonymity", "-k", "3", "--json")
    assert result.exit_code == 1
    groups = [v["group"] for v in json.loads(result.stdout)["violations"]]
    assert len(groups) == 2 and all(isinstance(g, list) and len(g) == 2 for g in groups)


@pytest.mark.parametrize(
    ("table", "args", "message"),
    [
        ("csv", ["-p", "k-anonymity"], "needs --k"),
        ("csv", ["-p", "l-diversity"], "needs --l"),
        ("csv", ["-p", "k-anonymity", "-k", "0"], "k must be an integer >= 1"),
        ("csv", ["-p", "l-diversity", "-l", "-2"], "l must be an integer >= 1"),
        ("csv", ["-p", "k-anonymity", "-k", "2", "-l", "2"], "--l applies"),
        ("no_sa", ["-p", "k-anonymity", "-k", "2"], "disease"),
        ("schema", ["-p", "k-anonymity", "-k", "2"], "cannot be read"),
    ],
)
def test_bad_input_exits_2(
    files: dict[str, Path], table: str, args: list[str], message: str
) -> None:
    result = invoke(files, table, *args)
    assert result.exit_code == 2, result.output
    assert message in flat(result.stderr)
    assert result.stdout == ""


def test_unknown_principle_and_missing_files(files: dict[str, Path], tmp_path: Path) -> None:
    assert invoke(files, "csv", "-p", "t-closeness", "-k", "2").exit_code == 2
    missing = runner.invoke(
        app, ["check", str(tmp_path / "nope.csv"), "--schema", str(files["schema"]),
              "-p", "k-anonymity", "-k", "2"]
    )
    assert missing.exit_code == 2 and "not found" in flat(missing.stderr)
    no_schema = runner.invoke(
        app, ["check", str(files["csv"]), "--schema", str(tmp_path / "nope.toml"),
              "-p", "k-anonymity", "-k", "2"]
    )
    assert no_schema.exit_code == 2 and "schema file" in flat(no_schema.stderr)


def test_identifier_column_warns_on_stderr(files: dict[str, Path]) -> None:
    result = invoke(files, "with_id", "-p", "k-anonymity", "-k", "2", "--json")
    assert result.exit_code == 0
    assert "identifier column 'name'" in flat(result.stderr)
    assert json.loads(result.stdout)["ok"] is True


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from republish.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_console_entry_point(files: dict[str, Path]) -> None:
    common = ["check", str(files["csv"]), "--schema", str(files["schema"])]
    violated = _main(*common, "--principle", "k-anonymity", "--k", "3", "--json")
    assert violated.returncode == 1, violated.stderr
    document = json.loads(violated.stdout)
    assert document["ok"] is False and len(document["violations"]) == 2
    assert _main(*common, "--principle", "k-anonymity", "--k", "2").returncode == 0
    bad = _main(*common, "--principle", "k-anonymity")
    assert bad.returncode == 2 and "needs --k" in bad.stderr and bad.stdout == ""


# ---------------------------------------------------------------- achieved k, l and risk
# The fixture's groups: {flu, cold, flu}, {ulcer, cold}, {flu, ulcer}: sizes 3, 2, 2, so
# k = 2; group 0 has 'flu' twice, so l = min(3 // 2, 2 // 1, 2 // 1) = 1; distinct l = 2;
# prosecutor risk 1/3 (3 rows) and 1/2 (4 rows): highest 1/2, average 3 groups / 7 rows.


@pytest.mark.parametrize("table", ["csv", "parquet", "no_group"])
def test_measures_without_principle(files: dict[str, Path], table: str) -> None:
    result = invoke(files, table, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is True and document["principle"] is None
    assert document["violations"] == []
    assert (document["rows"], document["groups"], document["classes"]) == (7, 3, 3)
    assert (document["k"], document["l"], document["l_distinct"]) == (2, 1, 2)
    risk = document["risk"]
    assert risk["highest"] == pytest.approx(0.5)
    assert risk["average"] == pytest.approx(3 / 7)
    assert risk["records_at_risk"] == pytest.approx(1.0)  # every risk is above 0.2
    assert risk["threshold"] == pytest.approx(0.2)


@pytest.mark.parametrize(("threshold", "share"), [("0.4", 4 / 7), ("0.5", 0.0), ("0", 1.0)])
def test_risk_threshold(files: dict[str, Path], threshold: str, share: float) -> None:
    """Records at risk are those strictly above the threshold (ARX's definition)."""
    result = invoke(files, "csv", "--risk-threshold", threshold, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["risk"]["records_at_risk"] == pytest.approx(share)


def test_human_output_reports_k_l_and_risk(files: dict[str, Path]) -> None:
    result = invoke(files, "csv", "-p", "k-anonymity", "-k", "3")
    assert result.exit_code == 1
    assert "achieved: k = 2, l = 1 (distinct l = 2); 3 groups by the group column, 7 rows" \
        in result.stdout
    assert "prosecutor risk: highest 50.0 %, average 42.9 %, records above 0.2: 100.0 %" \
        in result.stdout
    plain = invoke(files, "no_group")
    assert plain.exit_code == 0 and "groups by identical QI cells" in plain.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--risk-threshold", "1.5"], "--risk-threshold 1.5: must be at most 1"),
        (["--risk-threshold", "nan"], "must be a finite number"),
        (["-k", "2"], "--k and --l need --principle"),
    ],
)
def test_bad_measure_options_exit_2(files: dict[str, Path], args: list[str],
                                    message: str) -> None:
    result = invoke(files, "csv", *args)
    assert result.exit_code == 2, result.output
    assert message in flat(result.stderr) and result.stdout == ""
