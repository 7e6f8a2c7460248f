"""``republish report``: the page, its plots and figures, the private deferred file, and
the page rendered in a real headless browser (Chromium, skipped only where it is absent)."""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from republish.cli.app import app

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
ROOT = Path(__file__).resolve().parents[1]
#: Release 2 adds three 'flu' rows to Table 1a: with m = 2 and --eligibility delete they are
#: deferred (at most half of the new rows may carry one value).
EXTRA = "Zed,30,15000,flu\nYan,31,16000,flu\nXi,33,17000,flu\n"
PLOT_NAMES = ("movements", "counterfeits", "certificates", "information_loss", "query_error",
              "k_l", "risk")

runner = CliRunner()


def cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A store of three releases (one deferring, one with counterfeits) and its report."""
    folder = tmp_path_factory.mktemp("report")
    store, out = folder / "s.db", folder / "out"
    second = folder / "t2.csv"
    second.write_text((HOSPITAL / "table1a.csv").read_text() + EXTRA)
    cli("init", "--store", str(store), "--schema", str(HOSPITAL / "schema.toml"), "--m", "2")
    cli("release", str(HOSPITAL / "table1a.csv"), "--store", str(store), "-o", str(out),
        "--seed", "1")
    cli("release", str(second), "--store", str(store), "-o", str(out), "--seed", "1",
        "--eligibility", "delete")
    cli("release", str(HOSPITAL / "table2a.csv"), "--store", str(store), "-o", str(out),
        "--seed", "1")
    history = json.loads(cli("history", "--store", str(store), "--json"))
    document = json.loads(cli("report", "--store", str(store), "-o", str(folder / "report"),
                              "--json"))
    names = set()
    for table in (HOSPITAL / "table1a.csv", second, HOSPITAL / "table2a.csv"):
        names |= set(pd.read_csv(table)["name"])
    return {"store": store, "folder": folder / "report", "history": history,
            "document": document, "names": names}


def test_files_and_figures(series: dict[str, object]) -> None:
    document = series["document"]
    assert isinstance(document, dict)
    folder = series["folder"]
    assert isinstance(folder, Path)
    assert document["html"] == str(folder / "report.html")
    assert sorted(Path(p).name for p in document["plots"]) == sorted(
        f"{n}.png" for n in PLOT_NAMES)
    for name in PLOT_NAMES:
        assert (folder / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(folder / "releases.csv")
    assert table["release"].tolist() == [1, 2, 3]
    for written, printed in zip(table.to_dict("records"), document["releases"], strict=True):
        assert set(written) == set(printed)
        for key, value in written.items():
            if isinstance(value, float) and value != value:  # NaN in the CSV, null in JSON
                assert printed[key] is None, key
            else:
                assert printed[key] == (pytest.approx(value) if isinstance(value, float)
                                        else value), key
    one, two, three = document["releases"]
    # deferrals: 3 of the 14 rows of T(2); counterfeits: 2 in T*(3) of 11 real rows
    assert (two["rows"], two["deferred"], two["published_rows"]) == (14, 3, 11)
    assert two["deferred_share"] == pytest.approx(3 / 14)
    assert three["counterfeits"] == 2
    assert three["counterfeit_share"] == pytest.approx(2 / 13)
    assert one["counterfeits"] == 0 and one["deferred_share"] == 0.0
    history = series["history"]
    assert isinstance(history, list)
    for row, past in zip(document["releases"], history, strict=True):
        for key in ("rows", "new", "deleted", "reinserted", "deferred", "counterfeits",
                    "groups", "status", "objective", "bound", "gap", "cost", "cost_bound"):
            assert row[key] == pytest.approx(past[key]), key
        # m = 2: every group holds >= 2 rows with distinct values; nobody is vulnerable
        assert row["k"] >= 2 and row["l"] >= 2 and row["l_distinct"] >= 2
        assert row["risk_highest"] == pytest.approx(1 / row["k"])
        assert row["risk_average"] == pytest.approx(row["groups"] / (row["published_rows"]
                                                                     + row["counterfeits"]))
        assert row["vulnerable"] == 0 and 0 < row["audit_highest_risk"] <= 0.5
        assert row["ncp"] == pytest.approx((row["width_age"] + row["width_zip"]) / 2)
        assert 0 < row["ncp"] < 1 and 0 <= row["query_error"] < 10
    assert [r["individuals"] for r in document["releases"]] == [11, 11, 16]


def test_deferred_identifiers_only_in_the_private_file(series: dict[str, object]) -> None:
    store = series["store"]
    assert isinstance(store, Path)
    private = store.with_name("s.db.deferred.csv")
    assert series["document"]["deferred_file"] == str(private)  # type: ignore[index]
    assert private.read_text() == "release,identifier\n2,Zed\n2,Yan\n2,Xi\n"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    folder = series["folder"]
    assert isinstance(folder, Path)
    page = (folder / "report.html").read_text()
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    names = series["names"]
    assert isinstance(names, set) and {"Zed", "Bob", "Vince"} <= names
    for public in (text, (folder / "releases.csv").read_text()):
        found = [n for n in names if re.search(rf"\b{re.escape(n)}\b", public)]
        assert found == []
    assert "s.db.deferred.csv" in text and "never publish" in text


def test_plots_are_embedded_and_written_beside(series: dict[str, object]) -> None:
    folder = series["folder"]
    assert isinstance(folder, Path)
    page = (folder / "report.html").read_text()
    for name in PLOT_NAMES:
        match = re.search(rf'id="plot-{name}" src="data:image/png;base64,([^"]+)"', page)
        assert match is not None, name
        assert base64.b64decode(match.group(1)) == (folder / f"{name}.png").read_bytes()
    assert "src=\"http" not in page and "<link" not in page  # self-contained


def test_bad_inputs_exit_2(series: dict[str, object], tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    cli("init", "--store", str(empty), "--schema", str(HOSPITAL / "schema.toml"), "--m", "2")
    store = str(series["store"])
    cases = [
        (["--store", str(tmp_path / "nope.db"), "-o", str(tmp_path / "r")], "not found"),
        (["--store", str(empty), "-o", str(tmp_path / "r")], "holds no release"),
        (["--store", store, "-o", str(tmp_path / "r"), "--risk-threshold", "2"],
         "--risk-threshold 2.0: must be at most 1"),
        (["--store", store, "-o", str(tmp_path / "r"), "--selectivity", "0"], "positive"),
        (["--store", store, "-o", str(empty)], "not a folder"),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["report", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
    assert not (tmp_path / "r").exists()


def test_cli_modules_import_nothing_heavy_at_top() -> None:
    """``republish --help`` must start fast: the report and check command modules import
    pandas, numpy, matplotlib and the store inside their command functions only."""
    light = {"__future__", "pathlib", "typing", "enum", "dataclasses", "typer",
             "republish.cli.app", "republish.errors"}
    for name in ("report", "check"):
        tree = ast.parse((ROOT / "republish" / "cli" / f"{name}.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.Import):
                assert {a.name for a in node.names} <= light, (name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom):
                assert node.module in light, (name, node.module)


# ---------------------------------------------------------------- a real browser

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def render(page: Path, profile: Path) -> tuple[dict[str, str], list[str]]:
    """Open ``page`` in headless Chromium: the root element's data attributes after the
    load event, and the console lines Chromium logged."""
    browser = next((b for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs the 'chromium' package)")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
               "--dump-dom", page.resolve().as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False,
                          env={**os.environ, "HOME": str(profile)})
    root = re.search(r"<html[^>]*>", done.stdout)
    assert root is not None, (done.returncode, done.stderr[-2000:])
    attributes = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', root.group(0)))
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return attributes, console


def test_page_renders_in_chromium(series: dict[str, object], tmp_path: Path) -> None:
    folder = series["folder"]
    assert isinstance(folder, Path)
    attributes, console = render(folder / "report.html", tmp_path / "profile")
    assert attributes == {"data-plots": f"{len(PLOT_NAMES)}/{len(PLOT_NAMES)}",
                          "data-errors": "0"}
    assert console == []
    # The same check on a broken copy fails: one plot that does not decode, one script error.
    page = (folder / "report.html").read_text()
    broken = re.sub(r'(id="plot-risk" src="data:image/png;base64,)[^"]+', r"\1AAAA", page)
    broken = broken.replace("</body>", "<script>undefinedFunction();</script></body>")
    (tmp_path / "broken.html").write_text(broken)
    attributes, console = render(tmp_path / "broken.html", tmp_path / "profile")
    assert attributes["data-plots"] == f"{len(PLOT_NAMES) - 1}/{len(PLOT_NAMES)}"
    assert int(attributes["data-errors"]) >= 2
    assert any("undefinedFunction" in line for line in console)
