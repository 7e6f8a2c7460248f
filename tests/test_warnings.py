"""A release that defers or counterfeits more than a share of its rows says so, with the
cause; the deferred identifiers go to the private file beside the store only."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from helpers import run_cli

import republish
from republish.api.shares import ShareWarning, deferred_path, validate_share
from republish.errors import ParameterError


def _skewed(tmp_path: Path) -> tuple[Path, Path, republish.Schema]:
    """A census table where one occupation holds 60 % of the rows (m = 4 allows 25 %)."""
    census, schema = republish.synthetic_census(200, seed=5)
    census.loc[:119, schema.sensitive] = "occupation-07"
    census[schema.identifier] = [f"person-{i:04d}" for i in range(len(census))]
    data = tmp_path / "t1.csv"
    census.to_csv(data, index=False)
    schema_file = tmp_path / "schema.toml"
    schema_file.write_text(
        f'id = "{schema.identifier}"\nsensitive = "{schema.sensitive}"\n' + "".join(
            f'[[qi]]\nname = "{qi.name}"\nkind = "{qi.kind}"\n'
            + (f"order = {json.dumps([str(c) for c in qi.categories or ()])}\n"
               if qi.kind != "numeric" else "")
            for qi in schema.qis))
    return data, schema_file, schema


def test_a_deferring_release_warns_naming_the_value(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    data, schema_file, _ = _skewed(tmp_path)
    store = tmp_path / "s.db"
    assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                   str(schema_file), "--m", "4")[0] == 0
    code, out, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                             "-o", str(tmp_path / "out"), "--eligibility", "delete",
                             "--solver", "heuristic", "--seed", "1")
    assert code == 0, err
    assert "warning: release 1:" in err and "deferred" in err
    assert "'occupation-07' holds 120 of 200 (60.0%), above 1/m = 25.0% (m = 4)" in err
    # The identifiers are in the private file only: not on stdout, stderr, the published
    # files, nor the history.
    private = deferred_path(store)
    assert private == tmp_path / "s.db.deferred.csv" and str(private) in out
    listed = pd.read_csv(private, dtype=str)
    assert len(listed) > 0 and set(listed["release"]) == {"1"}
    first = listed["identifier"].iloc[0]
    published = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    history = run_cli(monkeypatch, capsys, "history", "--store", str(store), "--json")[1]
    assert first not in out + err + published + history
    assert int(json.loads(history)[0]["deferred"]) == len(listed)


def test_the_threshold_is_configurable(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    data, schema_file, _ = _skewed(tmp_path)
    store = tmp_path / "s.db"
    run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema", str(schema_file),
            "--m", "4")
    code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                           "-o", str(tmp_path / "out"), "--eligibility", "delete",
                           "--solver", "heuristic", "--warn-share", "0.9")
    assert code == 0 and "warning" not in err
    code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                           "-o", str(tmp_path / "out2"), "--warn-share", "1.5")
    assert code == 2 and "warn-share" in err


def test_the_python_warning(tmp_path: Path) -> None:
    census, schema = republish.synthetic_census(200, seed=5)
    census.loc[:119, schema.sensitive] = "occupation-07"
    with republish.Store.create(tmp_path / "s.db", schema, m=4) as store:
        with pytest.warns(republish.ReleaseWarning, match="occupation-07"):
            result = store.release(census, eligibility="counterfeit", solver="heuristic")
        assert result.summary["counterfeits"] > 0.05 * result.summary["rows"]
        assert any("counterfeits" in w for w in result.warnings)
    plain, _ = republish.synthetic_census(200, seed=5)
    with republish.Store.create(tmp_path / "t.db", schema, m=4) as store, \
            warnings.catch_warnings():
        warnings.simplefilter("error")  # a first release of an eligible table: no warning
        quiet = store.release(plain, solver="heuristic")
        assert quiet.warnings == () and quiet.summary["counterfeits"] == 0


def test_the_message_and_the_share() -> None:
    warning = ShareWarning(3, "deferred", 1979, 5000, 0.05, ("a cause",))
    assert warning.share == pytest.approx(0.3958)
    assert warning.message() == (
        "release 3: 1,979 of 5,000 rows deferred (39.6%; held back, not published in this "
        "release; warning threshold 5.0%, --warn-share / warn_share). Cause: a cause.")
    fakes = ShareWarning(2, "counterfeits", 840, 4900, 0.05, ())
    assert fakes.message() == ("release 2: 840 counterfeits for 4,900 real rows published "
                               "(17.1%; warning threshold 5.0%, --warn-share / warn_share).")
    for bad in (-0.1, 1.5, float("nan"), True, "0.1"):
        with pytest.raises(ParameterError, match="warn_share"):
            validate_share(bad)
