"""Issue 18, item 3: strict inputs.

Unknown schema and manifest keys are errors that suggest the close match; non-finite
numbers and absurd parameters are refused; ``ldiv -o`` refuses to overwrite without
``--overwrite`` and never writes through a symbolic link; a trailing delimiter is blamed on
the right line.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli

from republish.batch.manifest import parse_manifest
from republish.errors import InputError, ParameterError, SchemaError
from republish.schema import Schema, load_schema
from republish.tables import load_table

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
SCHEMA = HOSPITAL / "schema.toml"


def write_schema(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "schema.toml"
    path.write_text(text)
    return path


BASE = 'id = "name"\nsensitive = "disease"\n'


@pytest.mark.parametrize(("text", "message"), [
    (BASE + 'delimeter = ";"\n[[qi]]\nname = "age"\n', "'delimeter' (did you mean 'delimiter'?)"),
    (BASE + '[[qi]]\nname = "age"\nknd = "numeric"\n', "'knd' (did you mean 'kind'?)"),
    (BASE + '[[qi]]\nname = "age"\norder = ["a"]\n', "applies to kind 'ordered' only"),
    (BASE + '[[qi]]\nname = "age"\ndomain = [0, inf]\n', "two finite numbers"),
    (BASE + '[[qi]]\nname = "age"\ndomain = [0, "x"]\n', "two finite numbers"),
    (BASE + '[[qi]]\nname = "age"\nkind = "ordered"\norder = [1.5]\n', "list of values"),
    (BASE + '[[qi]]\nname = "age"\nkind = 3\n', "kind '3' is unknown"),
    (BASE + 'delimiter = "\\""\n[[qi]]\nname = "age"\n', "single character"),
])
def test_schema_keys_and_types_are_strict(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=None) as info:
        load_schema(write_schema(tmp_path, text))
    assert message in str(info.value)


def test_stored_schema_round_trips(tmp_path: Path) -> None:
    schema = load_schema(SCHEMA)
    assert Schema.from_dict(schema.to_dict()).fingerprint() == schema.fingerprint()


def test_manifest_keys_suggest_the_close_match(tmp_path: Path) -> None:
    entry = {"problem": "eligibility", "counts": [3, 2, 1], "m": 2, "methd": "hybrid"}
    with pytest.raises(ParameterError, match="'methd'.*did you mean 'method'"):
        parse_manifest({"instance": [entry]}, tmp_path)
    with pytest.raises(ParameterError, match="did you mean 'instance'"):
        parse_manifest({"instances": [entry]}, tmp_path)
    with pytest.raises(ParameterError, match="did you mean 'eligibility'"):
        parse_manifest({"instance": [{**entry, "methd": None, "problem": "eligibilty"}]},
                       tmp_path)


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "1e16", "Infinity"])
def test_non_finite_and_huge_numeric_qis_are_refused(tmp_path: Path, value: str) -> None:
    data = tmp_path / "t.csv"
    data.write_text(f"name,age,zip,disease\np1,{value},12000,flu\np2,30,12000,flu\n")
    with pytest.raises(InputError, match="infinite or beyond|non-numeric"):
        load_table(data, load_schema(SCHEMA))


def test_trailing_delimiter_is_blamed_on_its_line(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("name,age,zip,disease\np1,30,12000,flu\np2,31,12000,flu,\n")
    with pytest.raises(InputError, match=r"line 3: 5 fields where the header has 4"):
        load_table(data, load_schema(SCHEMA))
    data.write_text("name,age,name,disease\np1,30,1,flu\n")
    with pytest.raises(InputError, match="appear twice in the header"):
        load_table(data, load_schema(SCHEMA))


@pytest.mark.parametrize(("args", "message"), [
    (("init", "--m", str(10**23)), "exceeds 1,000,000"),
    (("eligibility", "--m", "2", "--counts", "3,2", "--time-limit", "inf"), "finite"),
    (("eligibility", "--m", "2", "--counts", "3,2", "--counterfeit-cost", "nan"), "finite"),
    (("eligibility", "--m", "2", "--counts", "3,2,x"), "is not a non-negative integer"),
    (("ldiv", "--workers", "100000"), "--workers"),
    (("ldiv", "--time-limit", "nan"), "finite"),
    (("ldiv", "--seed", str(2**40)), "--seed"),
])
def test_absurd_parameters_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       args: tuple[str, ...], message: str) -> None:
    command, *rest = args
    base = {
        "init": ["init", "--store", str(tmp_path / "s.db"), "--schema", str(SCHEMA)],
        "eligibility": ["eligibility"],
        "ldiv": ["ldiv", str(HOSPITAL / "table1a.csv"), "--schema", str(SCHEMA), "--l", "2",
                 "-o", str(tmp_path / "l.csv")],
    }[command]
    code, _, err = run_cli(monkeypatch, capsys, *base, *rest)
    assert code == 2 and message in err, err
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "l.csv").exists()


def test_ldiv_refuses_to_overwrite_and_never_follows_links(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["ldiv", str(HOSPITAL / "table1a.csv"), "--schema", str(SCHEMA), "--l", "2",
            "--method", "tp"]
    existing = tmp_path / "published.csv"
    existing.write_text("keep me")
    code, _, err = run_cli(monkeypatch, capsys, *base, "-o", str(existing))
    assert code == 2 and "--overwrite" in err and existing.read_text() == "keep me"
    code, _, _ = run_cli(monkeypatch, capsys, *base, "-o", str(existing), "--overwrite")
    assert code == 0 and existing.read_text() != "keep me"
    assert len(pd.read_csv(existing)) == 11

    target = tmp_path / "elsewhere.txt"
    target.write_text("precious")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    code, _, err = run_cli(monkeypatch, capsys, *base, "-o", str(link))
    assert code == 2 and "symbolic link" in err and target.read_text() == "precious"
    code, _, _ = run_cli(monkeypatch, capsys, *base, "-o", str(link), "--overwrite")
    assert code == 0 and target.read_text() == "precious"
    assert not link.is_symlink() and len(pd.read_csv(link)) == 11
