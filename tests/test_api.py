"""The Python API: one import gives the publishing functions, with the CLI's defaults."""

from __future__ import annotations

import numpy as np

import republish
from republish.examples.hospital import load_hospital


def test_every_public_name_resolves() -> None:
    for name in republish.__all__:
        assert getattr(republish, name) is not None, name
    assert set(republish.__all__) <= set(dir(republish))


def test_a_release_sequence_through_the_facade(tmp_path) -> None:
    hospital = load_hospital()
    first = republish.publish_m_invariant(hospital.t1, hospital.schema, 2,
                                          rng=np.random.default_rng(0))
    # The library's default is the CLI's: auto (exact models on small releases).
    assert first.certificate.status == "OPTIMAL"
    with republish.ReleaseStore.init(tmp_path / "s.db", hospital.schema, 2) as store:
        step = republish.publish(hospital.t1, hospital.schema, "m-invariance",
                                 republish.principle("m-invariance").options_from_dict({"m": 2}),
                                 store.state(), solve=republish.SolveOptions("heuristic"),
                                 rng=np.random.default_rng(0))
        store.append_step(step)
        assert store.last_release == 1 and step.certificate.status == "HEURISTIC"


# ------------------------------------------------------------------ the pandas-style API

import inspect  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from typer.main import get_command  # noqa: E402

from republish.api import defaults  # noqa: E402
from republish.cli.app import app  # noqa: E402
from republish.solver.compare import compare_pipelines  # noqa: E402


def _census(n: int = 240, seed: int = 3) -> tuple[pd.DataFrame, republish.Schema]:
    return republish.synthetic_census(n, seed=seed)


def test_store_release_history_verify(tmp_path: Path) -> None:
    census, schema = _census()
    with republish.Store.create(tmp_path / "s.db", schema, m=4) as store:
        first = store.release(census.iloc[:160], output=tmp_path / "out", seed=1,
                              solver="heuristic")
        second = store.release(census.iloc[40:220], output=tmp_path / "out", seed=2,
                               solver="heuristic")
        assert (first.number, second.number) == (1, 2)
        assert list(second.published.columns) == ["group", *schema.qi_names, schema.sensitive]
        assert schema.identifier not in second.published.columns
        assert list(second.counterfeits.columns) == ["group", "count"]
        assert len(second.published) == 180 - second.summary["deferred"] \
            + second.summary["counterfeits"]
        assert second.certificate.status == "HEURISTIC"
        assert [p.name for p in second.files] == ["release-2.csv", "counterfeits-2.csv"]
        # The published DataFrame is the file, cell for cell.
        written = republish_read(tmp_path / "out" / "release-2.csv")
        assert written.astype(str).equals(second.published.astype(str))
        history = store.history()
        assert list(history["release"]) == [1, 2]
        assert {"rows", "ncp", "mean_perimeter", "status", "gap"} <= set(history.columns)
        assert store.verify(tmp_path / "out").ok
    (tmp_path / "out" / "release-1.csv").write_text("group,x\n")
    with republish.Store.open(tmp_path / "s.db") as reopened:
        assert reopened.last_release == 2 and reopened.m == 4
        report = reopened.verify(tmp_path / "out")
        assert not report.ok and "release-1.csv differs" in report.violations[0]


def republish_read(path: Path) -> pd.DataFrame:
    from republish.release import read_published

    return read_published(path)


def test_deferred_ids_stay_private(tmp_path: Path) -> None:
    census, schema = _census(200, 5)
    table = census.copy()
    table.loc[: 119, schema.sensitive] = "occupation-01"  # 60 % one value: not 4-eligible
    table[schema.identifier] = [f"secret-{i:04d}" for i in range(len(table))]
    with republish.Store.create(tmp_path / "s.db", schema, m=4) as store, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = store.release(table, eligibility="delete", seed=0, solver="heuristic")
    assert result.summary["deferred"] > 0
    assert "secret-" not in repr(result) and "secret-" not in str(result.summary)
    assert set(result.private_deferred_ids()) <= set(table[schema.identifier])
    private = tmp_path / "s.db.deferred.csv"
    listed = pd.read_csv(private, dtype=str)
    assert list(listed.columns) == ["release", "identifier"]
    assert sorted(listed["identifier"]) == sorted(result.private_deferred_ids())
    assert private.stat().st_mode & 0o077 == 0
    assert any(issubclass(w.category, republish.ReleaseWarning) for w in caught)


def test_the_api_and_the_cli_share_their_defaults() -> None:
    command = get_command(app)
    options = {p.name: p.default for p in command.commands["release"].params}  # type: ignore[attr-defined]
    signature = inspect.signature(republish.Store.release).parameters
    assert options["solver"] == signature["solver"].default == defaults.SOLVER == "auto"
    assert options["time_limit"] == signature["time_limit"].default == defaults.TIME_LIMIT
    assert options["eligibility"] == signature["eligibility"].default == defaults.ELIGIBILITY
    assert options["cost"] == signature["cost"].default == defaults.COST
    assert options["seed"] is None and signature["seed"].default is None  # fresh entropy
    assert options["warn_share"] == signature["warn_share"].default == defaults.WARN_SHARE
    assert options["workers"] == signature["workers"].default == 1
    ldiv = {p.name: p.default for p in command.commands["ldiv"].params}  # type: ignore[attr-defined]
    static = inspect.signature(republish.l_diverse).parameters
    for cli_name, api_name in (("method", "method"), ("time_limit", "time_limit"),
                               ("seed", "seed"), ("workers", "workers"),
                               ("rendering", "model")):
        assert ldiv[cli_name] == static[api_name].default, cli_name
    compare = {p.name: p.default for p in command.commands["compare"].params}  # type: ignore[attr-defined]
    assert compare["time_limit"] == defaults.TIME_LIMIT
    assert compare["workers"] == inspect.signature(
        compare_pipelines).parameters["workers"].default == 1


def test_the_cli_offers_every_principle() -> None:
    from republish.cli.store_commands import PRINCIPLES
    from republish.principles.catalog import principle_names

    assert set(PRINCIPLES) == set(principle_names())


def test_l_diverse_and_check_match_the_cli(tmp_path: Path) -> None:
    from helpers import run_cli  # noqa: F401 - the CLI runs in-process below

    census, schema = _census(120, 7)
    result = republish.l_diverse(census, schema, 3)
    assert republish.check(result.published, schema, l=3).ok
    assert not republish.check(result.published, schema, l=60).ok
    assert result.summary["stars"] >= 0 and result.summary["rows"] == 120
    with pytest.raises(republish.RepublishError, match="needs l"):
        republish.check(result.published, schema)


def test_run_audit_of_a_store(tmp_path: Path) -> None:
    census, schema = _census(160, 11)
    with republish.Store.create(tmp_path / "s.db", schema, m=4) as store:
        store.release(census.iloc[:120], seed=0, solver="heuristic")
        store.release(census.iloc[30:150], seed=0, solver="heuristic")
    report = republish.run_audit(store=tmp_path / "s.db")
    assert report.vulnerable == 0 and report.to_dict()["releases"] == 2


def test_store_errors_name_the_parameter(tmp_path: Path) -> None:
    census, schema = _census(60, 1)
    with pytest.raises(republish.RepublishError, match="m is required"):
        republish.Store.create(tmp_path / "a.db", schema)
    with republish.Store.create(tmp_path / "b.db", schema, m=3) as store:
        with pytest.raises(republish.RepublishError, match="warn_share"):
            store.release(census, warn_share=2)
        with pytest.raises(republish.RepublishError, match="time_limit"):
            store.release(census, time_limit=-1)
        with pytest.raises(republish.RepublishError, match="workers"):
            store.release(census, workers=0)
        with pytest.raises(republish.RepublishError, match="schema"):
            store.release(census.drop(columns=[schema.sensitive]))
        assert store.last_release == 0


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's ```python block, verbatim, in an empty folder."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) == 1, "the README has one Python example"
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})  # noqa: S102
    assert (tmp_path / "census.db").is_file() and (tmp_path / "out" / "release-2.csv").is_file()
