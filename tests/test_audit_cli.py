"""``republish audit`` on files: the Contract's JSON keys and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli

from republish.audit.knowledge import knowledge_from_releases
from republish.examples.hospital import load_hospital
from republish.release import write_release

SCHEMA = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital" / "schema.toml"


def run(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``republish audit *args``: exit code, stdout, stderr (words joined by single spaces)."""
    return run_cli(monkeypatch, capsys, "audit", *args)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    hospital = load_hospital()
    paths: dict[str, Path] = {}
    for name, release in (("1b", hospital.t1_star), ("2b", hospital.t2_star),
                          ("3a", hospital.t3_star)):
        published, counterfeits = write_release(release, tmp_path / name)
        paths[name] = published
        paths[f"R{name}"] = counterfeits
    knowledge = knowledge_from_releases((hospital.t1_star, hospital.t2_star))
    paths["knowledge"] = knowledge.write(tmp_path / "knowledge.csv")
    return paths


def test_tables_1b_2b_exit_1_with_bob(monkeypatch, capsys, files) -> None:
    code, out, _ = run(monkeypatch, capsys, "--release", str(files["1b"]), "--release",
                       str(files["2b"]), "--knowledge", str(files["knowledge"]),
                       "--schema", str(SCHEMA), "--exact", "--json")
    document = json.loads(out)
    assert code == 1
    assert {"vulnerable", "vulnerable_ids", "intersection_sizes", "max_exact_risk",
            "leaks"} <= set(document)
    assert "Bob" in document["vulnerable_ids"]
    assert document["vulnerable"] == len(document["vulnerable_ids"]) == 2
    assert document["intersection_sizes"] == {"1": 2, "2": 10, "3": 4}
    # Without true values the exact figure is the largest posterior share, here 1.
    assert document["max_exact_risk"] == 1.0


def test_tables_1b_3a_exit_0(monkeypatch, capsys, files) -> None:
    code, out, _ = run(monkeypatch, capsys, "--release", str(files["1b"]), "--release",
                       str(files["3a"]), "--counterfeits", f"2:{files['R3a']}",
                       "--knowledge", str(files["knowledge"]), "--schema", str(SCHEMA),
                       "--exact", "--json")
    document = json.loads(out)
    assert code == 0, document
    assert document["vulnerable"] == 0 and document["vulnerable_ids"] == []
    assert document["max_exact_risk"] == 0.5
    assert [f for f in document["leaks"] if f["severity"] == "leak"] == []


def test_human_output(monkeypatch, capsys, files) -> None:
    code, out, _ = run(monkeypatch, capsys, "--release", str(files["1b"]), "--release",
                       str(files["2b"]), "--knowledge", str(files["knowledge"]),
                       "--schema", str(SCHEMA))
    assert code == 1
    assert "vulnerable individuals (one value left, Lemma 1): 2" in out
    assert "Bob: dyspepsia" in out
    assert "intersection sizes" in out


def test_missing_counterfeit_table_is_a_finding(monkeypatch, capsys, files) -> None:
    code, out, _ = run(monkeypatch, capsys, "--release", str(files["1b"]), "--release",
                       str(files["3a"]), "--knowledge", str(files["knowledge"]),
                       "--schema", str(SCHEMA), "--json")
    assert code == 1
    assert "knowledge-count" in {f["check"] for f in json.loads(out)["leaks"]}


@pytest.mark.parametrize(
    "args",
    [
        ("--release", "{1b}", "--schema", "{schema}"),  # no knowledge
        ("--release", "{1b}", "--knowledge", "{knowledge}", "--schema", "{schema}"),  # 2 vs 1
        ("--release", "{1b}", "--release", "{2b}", "--knowledge", "{knowledge}", "--schema",
         "{schema}", "--counterfeits", "3:{R3a}"),
        ("--release", "{1b}", "--release", "{2b}", "--knowledge", "{knowledge}", "--schema",
         "{schema}", "--principle", "k-anonymity"),
        ("--release", "{missing}", "--knowledge", "{knowledge}", "--schema", "{schema}"),
    ],
)
def test_bad_input_exit_2(monkeypatch, capsys, files, tmp_path, args) -> None:
    names = {k: str(v) for k, v in files.items()}
    names["schema"] = str(SCHEMA)
    names["missing"] = str(tmp_path / "nope.csv")
    code, out, err = run(monkeypatch, capsys, *(a.format(**names) for a in args))
    assert code == 2
    assert out == ""
    assert "error" in err


def test_store_history_is_audited_with_its_own_knowledge(monkeypatch, capsys, tmp_path) -> None:
    import numpy as np

    from republish.datasets import dynamic_series, synthetic_census
    from republish.solver.m_invariance import publish_m_invariant
    from republish.store import ReleaseStore

    table, schema = synthetic_census(60, 5)
    series = dynamic_series(table, 12, 4, 3, seed=5, reinsert_fraction=0.5)
    path = tmp_path / "history.db"
    rng = np.random.default_rng(5)
    with ReleaseStore.init(path, schema, 2) as store:
        state = None
        for microdata in series:
            # The store's own schema (as stored) keeps the fingerprints equal.
            step = publish_m_invariant(microdata, store.schema, 2, previous=state, rng=rng)
            store.append_release(step.release, step.report, step.summary())
            state = step.state
    code, out, _ = run(monkeypatch, capsys, "--store", str(path), "--exact", "--json")
    document = json.loads(out)
    assert code == 0, document
    assert document["vulnerable"] == 0
    assert document["releases"] == 3
    assert document["exact"]["truth_known"] is True
    assert document["max_exact_risk"] is not None and document["max_exact_risk"] <= 0.5
    code, _, err = run(monkeypatch, capsys, "--store", str(tmp_path / "none.db"))
    assert code == 2 and "not found" in " ".join(err.split())
