"""docs/formats.md against the real outputs: every documented field of each file or
``--json`` document is present ("always" fields in every output), and, for the tables
this repository fixes (history, compare, batch results, published files, the deferred
file), every field the real output holds is documented."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli
from typer.testing import CliRunner

import republish
from republish.cli.app import app
from republish.solver.compare import COLUMNS

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "republish" / "examples" / "hospital"
MARK = re.compile(r"<!-- fields: ([a-z-]+) -->\n((?:\|.*\n)+)")


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` is a pipe inside a cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def documented() -> dict[str, list[tuple[str, str]]]:
    """{document: [(field, present)]}; a field is ``name`` for a backticked cell, else the
    cell's words (a schema-dependent column such as 'the QI columns')."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    found: dict[str, list[tuple[str, str]]] = {}
    for name, table in MARK.findall(text):
        rows = [_cells(line) for line in table.splitlines()]
        assert rows[0] == ["field", "present", "meaning"], name
        fields = []
        for cells in rows[2:]:
            match = re.fullmatch(r"`([^`]+)`", cells[0])
            fields.append((match.group(1) if match else cells[0], cells[1]))
        found[name] = fields
    return found


DOCS = documented()


def always(name: str, *also: str) -> set[str]:
    return {f for f, present in DOCS[name] if present == "always" or present in also
            or any(a in present for a in also)}


def listed(name: str) -> set[str]:
    return {f for f, _ in DOCS[name]}


def test_every_document_is_described() -> None:
    assert set(DOCS) == {"knowledge", "release", "counterfeits", "substitutions", "deferred",
                         "history", "compare", "results", "ldiv", "check", "audit", "verify",
                         "eligibility"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/formats.md" in readme


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An m-invariance store (hospital, two releases), an ε-inclusion store and a store
    with deferrals, with their published files."""
    folder = tmp_path_factory.mktemp("stores")
    census, schema = republish.synthetic_census(240, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with republish.Store.create(folder / "eps.db", schema, principle="eps-inclusion",
                                    lam=3) as store:
            store.release(census.iloc[:160], output=folder / "eps", seed=0)
            store.release(census.iloc[40:220], output=folder / "eps", seed=0)
        skewed = census.copy()
        skewed.loc[:140, schema.sensitive] = "occupation-03"
        with republish.Store.create(folder / "deferring.db", schema, m=4) as store:
            store.release(skewed, eligibility="delete", solver="heuristic", seed=0)
    return {"folder": folder, "eps": folder / "eps.db", "deferring": folder / "deferring.db"}


@pytest.fixture(scope="module")
def hospital(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hospital")
    runner = CliRunner()
    store = folder / "s.db"
    assert runner.invoke(app, ["init", "--store", str(store), "--schema",
                               str(HOSPITAL / "schema.toml"), "--m", "2"]).exit_code == 0
    for n, name in ((1, "table1a.csv"), (2, "table2a.csv")):
        outcome = runner.invoke(app, ["release", str(HOSPITAL / name), "--store", str(store),
                                      "-o", str(folder / "out"), "--seed", str(n)])
        assert outcome.exit_code == 0, outcome.output
    return store


def test_history_fields(hospital: Path, stores: dict[str, Path], monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    for store, principle in ((hospital, "m-invariance"), (stores["eps"], "ε-inclusion")):
        code, text, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")
        assert code == 0
        for record in json.loads(text):
            assert always("history", principle) <= set(record), principle
            assert set(record) <= listed("history"), set(record) - listed("history")
        code, table, _ = run_cli(monkeypatch, capsys, "history", "--store", str(store),
                                 "--format", "csv")
        assert set(table.splitlines()[0].split(",")) <= listed("history")
    fresh = hospital.parent / "fresh.db"
    run_cli(monkeypatch, capsys, "init", "--store", str(fresh), "--schema",
            str(HOSPITAL / "schema.toml"), "--m", "2")
    code, text, _ = run_cli(monkeypatch, capsys, "release", str(HOSPITAL / "table1a.csv"),
                            "--store", str(fresh), "-o", str(hospital.parent / "fresh"),
                            "--json")
    assert code == 0 and always("history", "m-invariance") <= set(json.loads(text))


def test_published_files(hospital: Path, stores: dict[str, Path]) -> None:
    schema = republish.load_schema(HOSPITAL / "schema.toml")
    out = hospital.parent / "out"
    release = pd.read_csv(out / "release-1.csv")
    assert listed("release") == {"group", "the QI columns, in schema order",
                                 "the sensitive column"}
    assert list(release.columns) == ["group", *schema.qi_names, schema.sensitive]
    assert list(pd.read_csv(out / "counterfeits-2.csv").columns) == [
        f for f, _ in DOCS["counterfeits"]]
    eps = stores["folder"] / "eps"
    assert list(pd.read_csv(eps / "substitutions-2.csv").columns) == [
        f for f, _ in DOCS["substitutions"]]


def test_deferred_file(stores: dict[str, Path]) -> None:
    private = stores["deferring"].with_name("deferring.db.deferred.csv")
    frame = pd.read_csv(private, dtype=str)
    assert list(frame.columns) == [f for f, _ in DOCS["deferred"]] and len(frame) > 0


def test_compare_columns(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    assert [f for f, _ in DOCS["compare"]] == list(COLUMNS)
    census, schema = republish.synthetic_census(120, seed=9)
    data = tmp_path / "census.parquet"
    census.to_parquet(data)
    schema_file = tmp_path / "schema.toml"
    schema_file.write_text(
        f'id = "{schema.identifier}"\nsensitive = "{schema.sensitive}"\n' + "".join(
            f'[[qi]]\nname = "{qi.name}"\nkind = "{qi.kind}"\n'
            + (f"order = {json.dumps([str(c) for c in qi.categories or ()])}\n"
               if qi.kind != "numeric" else "")
            for qi in schema.qis))
    code, text, err = run_cli(monkeypatch, capsys, "compare", str(data), "--schema",
                              str(schema_file), "--m", "3", "--series",
                              "initial=80,r=8,releases=1", "--time-limit", "1", "-o",
                              str(tmp_path), "--json")
    assert code == 0, err
    assert list(pd.read_csv(tmp_path / "compare.csv").columns) == list(COLUMNS)
    assert all(list(record) == list(COLUMNS) for record in json.loads(text))


def test_batch_results_columns(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('[defaults]\ntime_limit = 5\n\n[[instance]]\nproblem = "eligibility"'
                        '\ncounts = [[5, 3, 1, 1]]\nm = 3\nmethod = "counterfeit"\n')
    output = tmp_path / "results.parquet"
    outcome = CliRunner().invoke(app, ["batch", str(manifest), "-o", str(output),
                                       "--workers", "1"])
    assert outcome.exit_code == 0, outcome.output
    assert list(pd.read_parquet(output).columns) == [f for f, _ in DOCS["results"]]


def test_the_other_json_documents(hospital: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    schema = str(HOSPITAL / "schema.toml")
    published = tmp_path / "p.csv"
    outputs = {
        "ldiv": ["ldiv", str(HOSPITAL / "table1a.csv"), "--schema", schema, "--l", "2", "-o",
                 str(published), "--json"],
        "check": ["check", str(published), "--schema", schema, "--principle", "l-diversity",
                  "--l", "2", "--json"],
        "audit": ["audit", "--store", str(hospital), "--json"],
        "verify": ["verify", "--store", str(hospital), "--json"],
        "eligibility": ["eligibility", "--counts", "5,3,1,1", "--m", "3", "--method", "all",
                        "--json"],
    }
    for name, args in outputs.items():
        code, text, err = run_cli(monkeypatch, capsys, *args)
        assert code in (0, 1), (name, err)
        document = json.loads(text)
        for record in document if isinstance(document, list) else [document]:
            assert always(name) <= set(record), (name, always(name) - set(record))
