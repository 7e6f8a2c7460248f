"""Tables as users have them: detected delimiters, a wrong delimiter named as such, row
numbers for a schema without an identifier, one rule for every input file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from republish.audit.knowledge import read_knowledge
from republish.errors import InputError
from republish.schema import ROW_NUMBER, QIAttribute, Schema, load_schema
from republish.tables import (
    load_table,
    read_frame,
    sniff_delimiter,
    validate_release_table,
    validate_table,
)

SCHEMA_BODY = """\
sensitive = "disease"
[[qi]]
name = "age"
kind = "numeric"
[[qi]]
name = "city"
kind = "ordered"
order = ["Oslo; North", "Rome, South", "Lima"]
"""


def people(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "name": [f"p{i}" for i in range(n)],
        "age": rng.integers(20, 60, size=n).astype(str),
        "city": rng.choice(["Oslo; North", "Rome, South", "Lima"], size=n),
        "disease": rng.choice(["flu", "cold", "hiv"], size=n),
    })


def write(path: Path, frame: pd.DataFrame, delimiter: str) -> Path:
    # csv quotes a cell holding the delimiter, so "Rome, South" survives a comma file.
    frame.to_csv(path, sep=delimiter, index=False, quoting=csv.QUOTE_MINIMAL,
                 lineterminator="\r\n" if delimiter == ";" else "\n")
    return path


def schema_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "schema.toml"
    path.write_text('id = "name"\n' + extra + SCHEMA_BODY, encoding="utf-8")
    return path


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_detected(tmp_path: Path, delimiter: str) -> None:
    frame = people()
    path = write(tmp_path / "t.csv", frame, delimiter)
    assert sniff_delimiter(path) == delimiter
    schema = load_schema(schema_file(tmp_path))
    assert schema.delimiter is None
    table = load_table(path, schema)
    assert table["city"].tolist() == frame["city"].tolist()
    assert table["age"].tolist() == frame["age"].astype(float).tolist()
    assert table["name"].tolist() == frame["name"].tolist()


def test_an_explicit_delimiter_is_used_as_given(tmp_path: Path) -> None:
    frame = people()
    path = write(tmp_path / "t.csv", frame, "|")
    schema = load_schema(schema_file(tmp_path, 'delimiter = "|"\n'))
    assert schema.delimiter == "|"
    assert load_table(path, schema)["city"].tolist() == frame["city"].tolist()
    tab = load_schema(schema_file(tmp_path, 'delimiter = "\\t"\n'))
    assert tab.delimiter == "\t"


def test_a_single_column_file_reads_as_comma(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("disease\nflu\ncold\n", encoding="utf-8")
    assert sniff_delimiter(path) == ","
    assert read_frame(path).columns.tolist() == ["disease"]


def test_a_wrong_delimiter_is_named_not_the_header(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", people().drop(columns=["city"]), ";")
    schema = load_schema(schema_file(tmp_path, 'delimiter = ","\n'))
    with pytest.raises(InputError) as info:
        load_table(path, schema)
    message = str(info.value)
    assert "looks ';'-separated" in message and 'delimiter = ";"' in message
    assert "name;age;disease" not in message  # the header is not shown as one column name
    # Without 'delimiter' the same file loads.
    detected = load_schema(schema_file(tmp_path))
    with pytest.raises(InputError, match="'city'"):  # the real problem: a missing column
        load_table(path, detected)


def test_a_wrong_delimiter_breaking_the_rows_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name;age;city;disease\np1;30;Rome, South;flu\np2;31;Lima;cold\n",
                    encoding="utf-8")
    schema = load_schema(schema_file(tmp_path, 'delimiter = ","\n'))
    with pytest.raises(InputError, match="looks ';'-separated"):
        load_table(path, schema)


def test_a_tab_file_read_with_commas_names_the_tab(tmp_path: Path) -> None:
    path = write(tmp_path / "t.tsv", people().drop(columns=["city"]), "\t")
    schema = load_schema(schema_file(tmp_path, 'delimiter = ","\n'))
    with pytest.raises(InputError, match=r"looks '\\\\t'-separated"):
        load_table(path, schema)


def test_a_schema_without_id_numbers_the_rows(tmp_path: Path) -> None:
    frame = people().drop(columns=["name"])
    path = write(tmp_path / "t.csv", frame, ";")
    schema_path = tmp_path / "schema.toml"
    schema_path.write_text(SCHEMA_BODY, encoding="utf-8")
    schema = load_schema(schema_path)
    assert schema.identifier == ROW_NUMBER and schema.row_ids
    table = load_table(path, schema)
    assert table[ROW_NUMBER].tolist() == [str(i) for i in range(len(frame))]
    assert table.columns.tolist() == [ROW_NUMBER, "age", "city", "disease"]
    # The explicit spelling means the same.
    schema_path.write_text(f'id = "{ROW_NUMBER}"\n' + SCHEMA_BODY, encoding="utf-8")
    explicit = load_schema(schema_path)
    assert explicit == schema and load_table(path, explicit).equals(table)
    # A DataFrame with a non-default index is numbered 0.. as well.
    shifted = frame.set_axis(range(100, 100 + len(frame)))
    assert validate_table(shifted, schema)[ROW_NUMBER].tolist() == table[ROW_NUMBER].tolist()


def test_row_numbers_never_make_a_release_series(tmp_path: Path) -> None:
    schema = Schema(identifier=ROW_NUMBER, sensitive="disease", qis=(QIAttribute("age"),))
    frame = people().drop(columns=["name", "city"])
    with pytest.raises(InputError, match="release series needs an 'id' column"):
        validate_release_table(frame, schema, None, pd.Index([]))


def test_the_delimiter_is_not_part_of_the_schema_identity(tmp_path: Path) -> None:
    detected = load_schema(schema_file(tmp_path))
    semicolon = load_schema(schema_file(tmp_path, 'delimiter = ";"\n'))
    assert detected.fingerprint() == semicolon.fingerprint()
    assert "delimiter" not in detected.to_dict()
    assert Schema.from_dict(detected.to_dict()).delimiter is None
    assert Schema.from_dict(semicolon.to_dict()).delimiter == ";"


def test_an_empty_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "schema.toml"
    path.write_text('id = ""\n' + SCHEMA_BODY, encoding="utf-8")
    with pytest.raises(Exception, match="row-number"):
        load_schema(path)


def knowledge_frame() -> pd.DataFrame:
    frame = people(6)[["name", "age", "city"]].copy()
    frame["releases"] = ["1,2", "1", "2", "1,2", "1", "2"]
    return frame


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_knowledge_follows_the_rule_of_the_data(tmp_path: Path, delimiter: str) -> None:
    frame = knowledge_frame()
    path = write(tmp_path / "knowledge.csv", frame, delimiter)
    detected = load_schema(schema_file(tmp_path))
    knowledge = read_knowledge(path, detected, release_count=2)
    assert knowledge.releases_of(0) == [1, 2] and knowledge.releases_of(2) == [2]
    assert knowledge.table["city"].tolist() == frame["city"].tolist()
    given = load_schema(schema_file(tmp_path, f'delimiter = "{delimiter}"\n'.replace(
        "\t", "\\t")))
    assert read_knowledge(path, given, release_count=2).presence.tolist() == \
        knowledge.presence.tolist()


def test_knowledge_with_a_wrong_delimiter_is_named(tmp_path: Path) -> None:
    frame = knowledge_frame().drop(columns=["city"])
    path = write(tmp_path / "knowledge.csv", frame, ";")
    schema = load_schema(schema_file(tmp_path, 'delimiter = ","\n'))
    with pytest.raises(InputError, match="looks ';'-separated"):
        read_knowledge(path, schema, release_count=2)


def test_static_commands_take_a_semicolon_table_without_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import run_cli

    frame = people(60).drop(columns=["name"])
    data = write(tmp_path / "t.csv", frame, ";")
    schema = tmp_path / "schema.toml"
    schema.write_text(SCHEMA_BODY, encoding="utf-8")  # no id, no delimiter
    out = tmp_path / "out.csv"
    code, _, stderr = run_cli(monkeypatch, capsys, "ldiv", str(data), "--schema", str(schema),
                              "--l", "2", "-o", str(out))
    assert code == 0, stderr
    published = pd.read_csv(out, dtype=str)
    assert published.columns.tolist() == ["group", "age", "city", "disease"]
    code, _, stderr = run_cli(monkeypatch, capsys, "check", str(out), "--schema", str(schema),
                              "--principle", "l-diversity", "--l", "2")
    assert code == 0, stderr
    code, stdout, stderr = run_cli(monkeypatch, capsys, "eligibility", "--m", "2", str(data),
                                   "--schema", str(schema), "--method", "counterfeit", "--json")
    assert code == 0, stderr
    counted = sum(json.loads(stdout)[0]["target_counts"].values())
    assert counted >= len(frame)
