"""Compact first releases (heuristics/compact_groups.py, the ``first_release="compact"``
policy): every row in one group of >= m distinct values, cheaper than the paper's steps on
clustered data, and the release step with the policy verifies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import ParameterError
from republish.examples.hospital import load_hospital
from republish.heuristics.compact_groups import compact_groups
from republish.objectives import ReleaseCost
from republish.principles import verify_release
from republish.solver.m_invariance import publish_m_invariant
from republish.tables import encode_qis


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 4), n=st.integers(0, 60),
       values=st.integers(2, 7))
def test_groups_partition_the_rows_into_m_unique_groups(seed: int, m: int, n: int,
                                                        values: int) -> None:
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 5, size=(n, 2)).astype(float)
    codes = rng.integers(0, values, size=n)
    groups = compact_groups(points, codes, m)
    counts = np.bincount(codes, minlength=values) if n else np.zeros(1, int)
    if groups is None:  # the greedy may give up (the caller keeps the paper's release)
        return
    assert counts.max() * m <= n  # groups of distinct values exist only on eligible tables
    seen = np.concatenate(groups) if groups else np.zeros(0, int)
    assert sorted(seen.tolist()) == list(range(n))
    for g in groups:
        assert len(g) >= m and len(set(codes[g].tolist())) == len(g)


def test_eligible_tables_are_mostly_grouped() -> None:
    rng = np.random.default_rng(5)
    done = tried = 0
    for _ in range(100):
        n, m = int(rng.integers(20, 80)), int(rng.integers(2, 5))
        codes = rng.integers(0, m + 2, size=n)
        if np.bincount(codes).max() * m > n:
            continue
        tried += 1
        done += compact_groups(rng.random((n, 2)), codes, m) is not None
    assert tried >= 50 and done >= 0.8 * tried


def test_clusters_are_grouped_inside_their_cluster() -> None:
    """Three far-apart clusters of m rows of distinct values each: every group is one
    cluster, so the total extent is 0."""
    points = np.repeat(np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]]), 3, axis=0)
    codes = np.tile(np.arange(3), 3)
    groups = compact_groups(points, codes, 3)
    assert groups is not None and len(groups) == 3
    assert all(np.ptp(points[g], axis=0).sum() == 0 for g in groups)


def _clustered(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    centre = rng.integers(0, 4, size=rows)
    return pd.DataFrame({
        "name": [f"p{i}" for i in range(rows)],
        "age": (20 + 10 * centre + rng.integers(0, 3, size=rows)).astype(float),
        "zip": (10_000 + 8_000 * centre + 100 * rng.integers(0, 3, size=rows)).astype(float),
        "disease": np.array(["flu", "gastritis", "dyspepsia", "bronchitis"]
                            )[rng.integers(0, 4, size=rows)],
    })


@pytest.mark.parametrize("seed", [0, 1])
def test_compact_policy_verifies_and_lowers_the_first_releases_cost(seed: int) -> None:
    schema = load_hospital().schema
    table = _clustered(seed, 60)
    costs = {}
    for policy in ("buckets", "compact"):
        step = publish_m_invariant(table, schema, 2, rng=np.random.default_rng(seed),
                                   mode="exact", time_limit=1.0, first_release=policy)
        assert verify_release(step.release, 2).ok
        costs[policy] = (step.certificate.stages[0].objective, step.summary()["cost"])
    assert costs["compact"][0] == costs["buckets"][0] == 0
    assert costs["compact"][1] <= costs["buckets"][1] + 1e-9


def test_unknown_policy_is_refused_by_name() -> None:
    schema = load_hospital().schema
    with pytest.raises(ParameterError, match="first_release"):
        publish_m_invariant(_clustered(0, 10), schema, 2, first_release="tight")


def test_cli_takes_the_policy(tmp_path, monkeypatch, capsys) -> None:
    """`release --first-release compact` records a verified release no costlier than the
    default's; an unknown policy exits 2 and leaves the store untouched."""
    from helpers import run_cli

    from republish import Store
    from republish.examples import hospital as example_module

    folder = __import__("pathlib").Path(example_module.__file__).parent / "hospital"
    data = tmp_path / "t.csv"
    _clustered(3, 40).to_csv(data, index=False)
    costs = {}
    for policy in ("buckets", "compact"):
        store = tmp_path / f"{policy}.db"
        assert run_cli(monkeypatch, capsys, "init", "--store", str(store), "--schema",
                       str(folder / "schema.toml"), "--m", "2")[0] == 0
        code, _, _ = run_cli(monkeypatch, capsys, "release", str(data), "--store", str(store),
                             "-o", str(tmp_path / policy), "--solver", "exact",
                             "--time-limit", "2", "--first-release", policy, "--seed", "1")
        assert code == 0
        assert run_cli(monkeypatch, capsys, "verify", "--store", str(store))[0] == 0
        costs[policy] = Store.open(store).history()["cost"].iloc[-1]
    assert costs["compact"] <= costs["buckets"] + 1e-9
    before = (tmp_path / "compact.db").read_bytes()
    code, _, err = run_cli(monkeypatch, capsys, "release", str(data), "--store",
                           str(tmp_path / "compact.db"), "-o", str(tmp_path / "x"),
                           "--first-release", "tight")
    assert code == 2 and "first_release" in err
    assert (tmp_path / "compact.db").read_bytes() == before


@pytest.mark.parametrize("seed", [0, 1])
def test_default_policy_starts_a_free_first_release_from_compact_groups(seed: int) -> None:
    """Under the default ``buckets`` policy a first release small enough for the model to
    partition every row is never costlier than the compact groups, even when the model
    is cut short (they are its start whenever they beat the paper's release)."""
    schema = load_hospital().schema
    table = _clustered(seed, 240)
    cost = ReleaseCost.of(schema, encode_qis(table, schema))
    codes = pd.factorize(table["disease"])[0]
    groups = compact_groups(cost.points, codes, 3, lengths=cost.lengths)
    assert groups is not None
    compact = cost.total(groups, [len(g) for g in groups])
    step = publish_m_invariant(table, schema, 3, rng=np.random.default_rng(seed),
                               mode="exact", time_limit=0.3, first_release="buckets")
    assert verify_release(step.release, 3).ok
    assert step.summary()["cost"] <= compact + 1e-9
