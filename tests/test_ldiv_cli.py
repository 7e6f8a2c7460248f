"""``republish ldiv`` and the solver: verified outputs (ours and pycanon), JSON, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import run_cli
from pycanon import anonymity

from republish.datasets import load_adult
from republish.heuristics.mondrian import mondrian_generalization
from republish.principles.l_diversity import check_l_diversity
from republish.schema import SUPPRESSED, QIAttribute, Schema
from republish.solver.ldiversity import publish_l_diverse, solve_l_diversity

SCHEMA_TOML = """\
id = "id"
sensitive = "disease"
[[qi]]
name = "age"
kind = "numeric"
[[qi]]
name = "zip"
kind = "ordered"
order = ["z1", "z2", "z3", "z4"]
[[qi]]
name = "sex"
kind = "ordered"
order = ["F", "M"]
"""


def make_table(n: int, seed: int, diseases: str = "abcdefg") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "age": rng.integers(20, 30, size=n),
        "zip": rng.choice(["z1", "z2", "z3", "z4"], size=n),
        "sex": rng.choice(["F", "M"], size=n),
        "disease": rng.choice(list(diseases), size=n),
    })


SCHEMA = Schema(
    identifier="id", sensitive="disease",
    qis=(QIAttribute("age"), QIAttribute("zip", "ordered", order=("z1", "z2", "z3", "z4")),
         QIAttribute("sex", "ordered", order=("F", "M"))),
)


def assert_l_diverse(published: pd.DataFrame, schema: Schema, l: int) -> None:  # noqa: E741
    assert list(published.columns) == schema.published_columns
    assert check_l_diversity(published, schema, l).ok
    # pycanon, with the group column among the QIs so its classes are our QI-groups:
    # (alpha, k)-anonymity's alpha is the largest share of one SA value in a class.
    columns = ["group", *schema.qi_names]
    frame = published.astype(str).reset_index(drop=True)
    alpha, _ = anonymity.alpha_k_anonymity(frame, columns, [schema.sensitive])
    assert alpha * l <= 1 + 1e-9
    assert anonymity.l_diversity(frame, columns, [schema.sensitive]) >= l


@pytest.mark.parametrize("method", ["tp", "tp+", "mondrian", "exact", "auto"])
def test_methods_publish_verified_tables(method: str) -> None:
    table = make_table(600, seed=1)
    l = 4  # noqa: E741
    solution = solve_l_diversity(table, SCHEMA, l, method, time_limit=10, num_workers=1)
    published = publish_l_diverse(table, SCHEMA, solution, seed=3)
    assert_l_diverse(published, SCHEMA, l)
    cells = published[SCHEMA.qi_names].astype(str) == SUPPRESSED
    assert int(cells.to_numpy().sum()) == solution.stars
    assert int(cells.any(axis=1).sum()) == solution.suppressed_tuples
    assert solution.lower_bound <= solution.suppressed_tuples
    assert solution.status in ("OPTIMAL", "FEASIBLE")
    if method in ("exact", "auto"):
        assert solution.status == "OPTIMAL"
    # same multiset of SA values, random order, groups numbered 1..G
    assert sorted(published["disease"]) == sorted(table["disease"])
    assert sorted(published["group"].unique()) == list(range(1, published["group"].nunique() + 1))


def test_exact_never_suppresses_more_than_tp_and_tp_plus_never_more_stars() -> None:
    table = make_table(400, seed=8, diseases="aabbccdef")
    tp = solve_l_diversity(table, SCHEMA, 3, "tp", num_workers=1)
    plus = solve_l_diversity(table, SCHEMA, 3, "tp+", num_workers=1)
    exact = solve_l_diversity(table, SCHEMA, 3, "exact", num_workers=1)
    assert exact.suppressed_tuples <= tp.suppressed_tuples
    assert plus.stars <= tp.stars
    assert exact.lower_bound == exact.suppressed_tuples


def test_small_tables_use_exact_stars_and_matching() -> None:
    table = make_table(12, seed=2, diseases="xy")
    table["disease"] = ["x", "y"] * 6
    auto = solve_l_diversity(table, SCHEMA, 2, "auto", num_workers=1)
    stars = solve_l_diversity(table, SCHEMA, 2, "exact-stars", num_workers=1)
    assert auto.method == "matching" and auto.objective == "stars" and auto.status == "OPTIMAL"
    assert stars.status == "OPTIMAL" and stars.stars == auto.stars
    assert_l_diverse(publish_l_diverse(table, SCHEMA, auto), SCHEMA, 2)


def test_mondrian_renders_both_models() -> None:
    table = make_table(300, seed=6)
    for model in ("suppression", "interval"):
        published = mondrian_generalization(table, SCHEMA, 3, model)
        assert_l_diverse(published, SCHEMA, 3)
        cells = published[SCHEMA.qi_names].astype(str)
        has_interval = cells.apply(lambda column: column.str.startswith("[")).to_numpy().any()
        has_star = (cells == SUPPRESSED).to_numpy().any()
        assert (has_interval, has_star) == ((False, True) if model == "suppression" else
                                            (True, False))


def run(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``republish ldiv *args``: exit code, stdout, stderr (words joined by single spaces)."""
    return run_cli(monkeypatch, capsys, "ldiv", *args)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    schema = tmp_path / "schema.toml"
    schema.write_text(SCHEMA_TOML)
    data = tmp_path / "data.csv"
    make_table(500, seed=4).to_csv(data, index=False)
    return data, schema


def test_cli_json_contract_and_output(monkeypatch, capsys, files, tmp_path) -> None:
    data, schema = files
    out = tmp_path / "out.csv"
    code, stdout, _ = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "3",
                          "--method", "tp", "-o", str(out), "--json", "--seed", "5")
    assert code == 0
    document = json.loads(stdout)
    assert {"stars", "suppressed_tuples", "lower_bound", "status", "phase", "time_s"} <= set(
        document)
    assert document["phase"] in (1, 2, 3)
    published = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert "id" not in published.columns
    assert_l_diverse(published, SCHEMA, 3)
    # the row order is random but reproducible with the seed
    again = tmp_path / "again.csv"
    run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "3", "--method", "tp",
        "-o", str(again), "--seed", "5")
    assert again.read_text() == out.read_text()


def test_cli_human_output_and_parquet(monkeypatch, capsys, files, tmp_path) -> None:
    data, schema = files
    out = tmp_path / "out.parquet"
    code, stdout, _ = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "4",
                          "-o", str(out), "--model", "interval")
    assert code == 0
    # The interval rendering reports its own metrics, never star counts as its result.
    for label in ("objective          generalized tuples", "generalized cells",
                  "generalized tuples", "NCP", "lower bound", "status", "time"):
        assert label in stdout
    assert "stars" not in stdout and "suppressed" not in stdout
    published = pd.read_parquet(out)
    assert check_l_diversity(published, SCHEMA, 4).ok
    ranges = published[SCHEMA.qi_names].astype(str).apply(lambda c: c.str.startswith("["))
    assert ranges.to_numpy().any()
    # The suppression rendering names its objective and prints stars.
    code, stdout, _ = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "4",
                          "-o", str(tmp_path / "s.csv"), "--method", "tp")
    assert code == 0
    assert "objective          suppressed tuples (minimized by method tp)" in stdout
    assert "stars" in stdout and "NCP" not in stdout


def test_cli_objective_and_interval_metrics_in_json(monkeypatch, capsys, files,
                                                     tmp_path) -> None:
    data, schema = files
    code, stdout, _ = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "4",
                          "-o", str(tmp_path / "i.csv"), "--model", "interval", "--json")
    assert code == 0
    document = json.loads(stdout)
    assert document["model"] == "interval" and document["objective"] in ("tuples", "stars")
    assert document["generalized_tuples"] == document["suppressed_tuples"]
    assert document["generalized_cells"] == document["stars"]
    assert 0 < document["ncp"] <= 1
    code, stdout, _ = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "4",
                          "-o", str(tmp_path / "s.csv"), "--json")
    suppression = json.loads(stdout)
    # NCP of the suppression rendering: one per star over every cell.
    assert suppression["ncp"] == pytest.approx(suppression["stars"] / (500 * 3), abs=1e-6)
    assert "generalized_cells" not in suppression


def test_cli_method_has_no_short_m(monkeypatch, capsys, files, tmp_path) -> None:
    data, schema = files
    code, _, stderr = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "3",
                          "-m", "tp", "-o", str(tmp_path / "x.csv"))
    assert code == 2 and "-m" in stderr


def test_cli_rejects_ineligible_table(monkeypatch, capsys, files, tmp_path) -> None:
    data, schema = files
    code, stdout, stderr = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l",
                               "8", "-o", str(tmp_path / "x.csv"))
    assert code == 2 and stdout == ""
    assert "not 8-eligible" in stderr and "republish eligibility" in stderr
    assert not (tmp_path / "x.csv").exists()
    code, _, stderr = run(monkeypatch, capsys, str(data), "--schema", str(schema), "--l", "3",
                          "--method", "matching", "-o", str(tmp_path / "x.csv"))
    assert code == 2 and "matching" in stderr


def test_adult_occupation(adult_dir: Path) -> None:
    table, schema = load_adult("occupation", ["age", "sex", "race", "education"],
                               directory=adult_dir.parent)
    table = table.iloc[:8000].reset_index(drop=True)  # pycanon is slow on many classes
    for method in ("tp", "tp+"):
        solution = solve_l_diversity(table, schema, 5, method, num_workers=1)
        published = publish_l_diverse(table, schema, solution)
        assert_l_diverse(published, schema, 5)
        assert solution.phase in (1, 2)
