"""UCI Adult as a user has it (';'-separated, no identifier, ARX hierarchies) with the
shipped example schema, and where the shared data is looked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli

import republish
from republish import datasets
from republish.errors import InputError, SchemaError
from republish.schema import ROW_NUMBER, load_schema
from republish.tables import load_table

EXAMPLE = Path(republish.__file__).resolve().parent / "examples" / "adult" / "schema.toml"


def test_the_example_schema_reads_the_datasets_hierarchies(adult_dir: Path) -> None:
    schema = load_schema(EXAMPLE)
    assert schema.row_ids and schema.sensitive == "occupation" and schema.delimiter == ";"
    assert schema.qi_names == ["sex", "age", "race", "marital-status", "education",
                               "native-country", "workclass", "salary-class"]
    country = schema.qi("native-country").hierarchy
    assert country is not None and len(country.leaves) == 41 and country.height == 3


def test_adult_loads_with_the_example_schema(adult_dir: Path) -> None:
    schema = load_schema(EXAMPLE)
    table = load_table(adult_dir / "adult.csv", schema)
    assert len(table) == 30162
    assert table.columns.tolist() == [ROW_NUMBER, *schema.qi_names, "occupation"]
    assert table[ROW_NUMBER].iloc[-1] == "30161"
    # The same table as the Python loader's (which names its row numbers 'id').
    reference, reference_schema = datasets.load_adult(directory=adult_dir)
    assert reference_schema.qi_names == schema.qi_names
    assert (table.drop(columns=[ROW_NUMBER]).to_numpy()
            == reference.drop(columns=["id"]).to_numpy()).all()


def test_adult_without_the_delimiter_key(adult_dir: Path, tmp_path: Path) -> None:
    schema_path = tmp_path / "schema.toml"
    schema_path.write_text(EXAMPLE.read_text(encoding="utf-8").replace('delimiter = ";"\n', ""),
                           encoding="utf-8")
    schema = load_schema(schema_path)
    assert schema.delimiter is None
    assert len(load_table(adult_dir / "adult.csv", schema)) == 30162


def test_ldiv_on_adult_with_the_example_schema(adult_dir: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "adult-l5.csv"
    code, stdout, stderr = run_cli(monkeypatch, capsys, "ldiv", str(adult_dir / "adult.csv"),
                                   "--schema", str(EXAMPLE), "--l", "5", "-o", str(out),
                                   "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert document["rows"] == 30162 and document["status"] in ("OPTIMAL", "FEASIBLE")
    header = out.read_text(encoding="utf-8").splitlines()[0]
    assert header == "group,sex,age,race,marital-status,education,native-country," \
        "workclass,salary-class,occupation"  # no identifier, no row numbers
    code, stdout, stderr = run_cli(monkeypatch, capsys, "check", str(out), "--schema",
                                   str(EXAMPLE), "--principle", "l-diversity", "--l", "5")
    assert code == 0, stderr


# ------------------------------------------------------------ where the data is looked for


def fake_adult(folder: Path) -> Path:
    (folder / "adult").mkdir(parents=True)
    (folder / "adult" / "adult.csv").write_text("age;sex;occupation\n30;Male;Sales\n",
                                                 encoding="utf-8")
    return folder


def test_the_data_is_found_beside_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The README's layout: a clone next to shared/datasets, whatever the install.
    monkeypatch.delenv(datasets.ENVIRONMENT_VARIABLE, raising=False)
    fake_adult(tmp_path / "shared" / "datasets")
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.chdir(clone)
    assert datasets.datasets_dir() == tmp_path / "shared" / "datasets"
    assert datasets._adult_directory(None) == tmp_path / "shared" / "datasets" / "adult"
    # ./datasets comes first.
    fake_adult(clone / "datasets")
    assert datasets._adult_directory(None) == clone / "datasets" / "adult"


def test_the_variable_wins_and_the_message_says_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(datasets.ENVIRONMENT_VARIABLE, str(tmp_path / "nowhere"))
    assert datasets.datasets_dir() is None
    with pytest.raises(InputError) as info:
        datasets.load_adult()
    message = str(info.value)
    assert "$REPUBLISH_DATASETS" in message and str(tmp_path / "nowhere") in message
    assert "None" not in message
    monkeypatch.delenv(datasets.ENVIRONMENT_VARIABLE)
    locations = dict(datasets.dataset_locations())
    assert locations["./datasets"] == tmp_path / "datasets"
    assert locations["../shared/datasets"] == tmp_path.parent / "shared" / "datasets"
    message = datasets.where_looked()
    assert message.startswith("$REPUBLISH_DATASETS (unset), ./datasets (")


def test_a_release_series_of_adult_with_the_series_schema(
        adult_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    series_schema = EXAMPLE.parent / "series.toml"
    table, _ = datasets.load_adult(directory=adult_dir)
    tables = datasets.dynamic_series(table, initial=400, r=40, releases=2, seed=0)
    paths = []
    for number, frame in enumerate(tables, start=1):
        paths.append(tmp_path / f"adult-T{number}.csv")
        frame.to_csv(paths[-1], index=False)
    store = str(tmp_path / "adult.db")
    code, _, stderr = run_cli(monkeypatch, capsys, "init", "--store", store, "--schema",
                              str(series_schema), "--m", "4")
    assert code == 0, stderr
    for path in paths:
        code, _, stderr = run_cli(monkeypatch, capsys, "release", "--store", store, str(path),
                                  "-o", str(tmp_path / "published"), "--solver", "heuristic")
        assert code == 0, stderr
    code, stdout, stderr = run_cli(monkeypatch, capsys, "verify", "--store", store)
    assert code == 0 and "2 release(s) verified" in stdout, stderr
    # The static schema (row numbers) is refused for a series, with the reason.
    code, _, stderr = run_cli(monkeypatch, capsys, "init", "--store", str(tmp_path / "x.db"),
                              "--schema", str(EXAMPLE), "--m", "4")
    if code == 0:  # init does not check yet; the first release does
        code, _, stderr = run_cli(monkeypatch, capsys, "release", "--store",
                                  str(tmp_path / "x.db"), str(adult_dir / "adult.csv"),
                                  "-o", str(tmp_path / "x"))
    assert code == 2 and "needs an 'id' column" in stderr


def test_a_dataset_hierarchy_without_the_data_names_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(datasets.ENVIRONMENT_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(SchemaError, match="shared data directory.*REPUBLISH_DATASETS"):
        load_schema(EXAMPLE)
