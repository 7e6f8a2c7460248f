"""The m-invariant release step on the hospital example and on random series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.datasets import dynamic_series, synthetic_census
from republish.errors import InputError, ParameterError
from republish.examples.hospital import load_hospital
from republish.principles import check_m_invariance_sequence, verify_release
from republish.release import COUNT, GROUP, Release
from republish.schema import QIAttribute, Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.m_invariance_rows import drop_redundant_counterfeits
from republish.state import PublisherState, group_signatures

SCHEMA = Schema(
    identifier="id",
    sensitive="disease",
    qis=(
        QIAttribute("age", "numeric"),
        QIAttribute("zip", "numeric"),
        QIAttribute("education", "ordered", order=("HS", "BSc", "MSc", "PhD")),
    ),
)
DISEASES = ("flu", "gastritis", "dyspepsia", "bronchitis", "asthma")


def _universe(seed: int, size: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # A skewed disease distribution makes new rows often not m-eligible.
    weights = np.array([0.4, 0.25, 0.15, 0.12, 0.08])
    return pd.DataFrame({
        "id": [f"p{i}" for i in range(size)],
        "age": rng.integers(20, 70, size).astype(float),
        "zip": rng.integers(10, 50, size).astype(float) * 1000,
        "education": rng.choice(["HS", "BSc", "MSc", "PhD"], size),
        "disease": rng.choice(DISEASES, size, p=weights),
    })


def _series(seed: int, releases: int) -> list[pd.DataFrame]:
    """T(1..releases) with deletions, fresh insertions and re-insertions."""
    rng = np.random.default_rng(seed + 1)
    universe = _universe(seed)
    universe.loc[: len(DISEASES) - 1, "disease"] = DISEASES  # every value is known
    current = set(range(int(rng.integers(10, 25)))) | set(range(len(DISEASES)))
    seen = set(current)
    tables = []
    for _ in range(releases):
        tables.append(universe.iloc[sorted(current)].sample(frac=1.0, random_state=int(
            rng.integers(1 << 30))))
        deleted = {i for i in current if rng.random() < 0.3}
        back = {i for i in seen - current if rng.random() < 0.3}
        fresh = set(rng.choice(np.setdiff1d(np.arange(len(universe)), sorted(seen)),
                               size=min(int(rng.integers(0, 8)), len(universe) - len(seen)),
                               replace=False).tolist())
        current = (current - deleted) | back | fresh
        seen |= fresh
        if not current:
            current = {next(iter(seen))}
    return tables


def _assert_release_consistent(release: Release, m: int) -> None:
    assert verify_release(release, m).ok
    sizes = release.published.groupby(GROUP).size()
    real = release.assignment.groupby(GROUP).size().reindex(sizes.index, fill_value=0)
    assert (real >= 1).all()  # every published group holds a real row
    fakes = (sizes - real)[sizes - real > 0]
    listed = release.counterfeits.set_index(GROUP)[COUNT].sort_index()
    assert listed.to_dict() == fakes.sort_index().to_dict()  # R(n) matches
    schema = release.schema
    assert schema.identifier not in release.published.columns


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 3),
    methods=st.lists(st.sampled_from(["counterfeit", "delete", "hybrid"]), min_size=5,
                     max_size=5),
)
def test_random_series_are_m_invariant(seed: int, m: int, methods: list[str]) -> None:
    state: PublisherState | None = None
    releases: list[Release] = []
    published_ever: set[str] = set()
    rng = np.random.default_rng(seed)
    for table, method in zip(_series(seed, 5), methods, strict=True):
        try:
            result = publish_m_invariant(table, SCHEMA, m, state, eligibility=method,  # type: ignore[arg-type]
                                         rng=rng, mode="heuristic")
        except InputError as exc:
            # Only a release whose every row is new and deferred may be refused.
            assert "nothing to publish" in str(exc)
            assert method == "delete" and not (set(table["id"]) & published_ever)
            continue
        release = result.release
        _assert_release_consistent(release, m)
        ids = set(release.assignment["id"])
        assert ids | set(release.deferred) == set(table["id"])
        # Deferred rows are new rows; previously published rows are never deferred.
        assert not set(release.deferred) & published_ever
        published_ever |= ids
        assert result.counterfeits == release.counterfeit_total()
        assert result.certificate.status == "HEURISTIC"
        assert result.certificate.objective == result.counterfeits + result.deferred
        releases.append(release)
        state = result.state
    if releases:
        assert check_m_invariance_sequence(releases, m, across_gaps=True).ok


def test_hospital_release_2_needs_exactly_two_counterfeits() -> None:
    hospital = load_hospital()
    state = PublisherState.from_releases([hospital.t1_star], 2)
    result = publish_m_invariant(hospital.t2, hospital.schema, 2, state,
                                 rng=np.random.default_rng(0))
    release = result.release
    assert result.counterfeits == 2
    assert (result.new, result.deleted, result.reinserted) == (5, 5, 0)
    _assert_release_consistent(release, 2)
    assert check_m_invariance_sequence([hospital.t1_star, release], 2).ok
    bob_group = release.assignment.set_index("name").loc["Bob", GROUP]
    assert group_signatures(release)[bob_group] == {"dyspepsia", "bronchitis"}


def test_hospital_from_the_first_release() -> None:
    hospital = load_hospital()
    first = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=np.random.default_rng(1))
    assert first.counterfeits == 0 and first.groups == 5
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, first.state,
                                 rng=np.random.default_rng(2))
    _assert_release_consistent(second.release, 2)
    assert check_m_invariance_sequence([first.release, second.release], 2).ok


def test_reinserted_row_takes_back_its_signature() -> None:
    hospital = load_hospital()
    state = PublisherState.from_releases([hospital.t1_star], 2)
    second = publish_m_invariant(hospital.t2, hospital.schema, 2, state,
                                 rng=np.random.default_rng(3))
    # Alice (bronchitis, group {dyspepsia, bronchitis} in T*(1)) comes back at release 3.
    alice = hospital.t1[hospital.t1["name"] == "Alice"]
    third_table = pd.concat([hospital.t2, alice], ignore_index=True)
    third = publish_m_invariant(third_table, hospital.schema, 2, second.state,
                                rng=np.random.default_rng(4))
    assert third.reinserted == 1
    group = third.release.assignment.set_index("name").loc["Alice", GROUP]
    assert group_signatures(third.release)[group] == {"dyspepsia", "bronchitis"}
    releases = [hospital.t1_star, second.release, third.release]
    assert check_m_invariance_sequence(releases, 2, across_gaps=True).ok


def test_deferred_rows_stay_new() -> None:
    hospital = load_hospital()
    first = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=np.random.default_rng(5))
    extra = pd.DataFrame({"name": ["Zoe", "Yan", "Xia"], "age": [30.0, 31.0, 32.0],
                          "zip": [15000.0, 15500.0, 16000.0], "disease": ["flu"] * 3})
    second = publish_m_invariant(pd.concat([hospital.t1, extra], ignore_index=True),
                                 hospital.schema, 2, first.state, eligibility="delete",
                                 rng=np.random.default_rng(6))
    assert second.deferred == 3 and set(second.release.deferred) == {"Zoe", "Yan", "Xia"}
    assert set(second.state.deferred) == {"Zoe", "Yan", "Xia"}
    third = publish_m_invariant(pd.concat([hospital.t1, extra], ignore_index=True),
                                hospital.schema, 2, second.state, eligibility="counterfeit",
                                rng=np.random.default_rng(7))
    assert third.new == 3 and third.deferred == 0 and third.counterfeits == 3
    _assert_release_consistent(third.release, 2)


def test_changed_values_are_refused() -> None:
    hospital = load_hospital()
    state = PublisherState.from_releases([hospital.t1_star], 2)
    changed = hospital.t2.copy()
    changed.loc[changed["name"] == "Bob", "disease"] = "flu"
    with pytest.raises(InputError, match="Bob.*m-Distinct"):
        publish_m_invariant(changed, hospital.schema, 2, state)


def test_parameters_are_checked() -> None:
    hospital = load_hospital()
    state = PublisherState.from_releases([hospital.t1_star], 2)
    with pytest.raises(ParameterError, match="differs"):
        publish_m_invariant(hospital.t2, hospital.schema, 3, state)
    with pytest.raises(ParameterError, match="eligibility"):
        publish_m_invariant(hospital.t2, hospital.schema, 2, state,
                            eligibility="magic")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="distinct sensitive"):
        publish_m_invariant(hospital.t1, hospital.schema, 5)


def test_everything_deferred_is_refused() -> None:
    hospital = load_hospital()
    first = publish_m_invariant(hospital.t1, hospital.schema, 2, rng=np.random.default_rng(8))
    only_new = pd.DataFrame({"name": ["Zoe", "Yan"], "age": [30.0, 31.0],
                             "zip": [15000.0, 15500.0], "disease": ["flu", "flu"]})
    with pytest.raises(InputError, match="nothing to publish"):
        publish_m_invariant(only_new, hospital.schema, 2, first.state, eligibility="delete")


def test_synthetic_series_with_reinsertions() -> None:
    """The shared generator's series (re-insertions included) stays m-invariant."""
    table, schema = synthetic_census(3_000, seed=4)
    series = dynamic_series(table, 1_000, 200, 4, seed=5, reinsert_fraction=0.5)
    state: PublisherState | None = None
    releases = []
    reinserted = 0
    for microdata in series:
        result = publish_m_invariant(microdata, schema, 10, state, rng=np.random.default_rng(6),
                                     mode="heuristic")
        state = result.state
        reinserted += result.reinserted
        releases.append(result.release)
    assert reinserted > 0
    assert check_m_invariance_sequence(releases, 10, across_gaps=True).ok


def test_first_release_makes_the_table_eligible() -> None:
    hospital = load_hospital()
    skewed = pd.concat([hospital.t1, pd.DataFrame({
        "name": [f"x{i}" for i in range(6)], "age": [30.0 + i for i in range(6)],
        "zip": [20000.0] * 6, "disease": ["flu"] * 6})], ignore_index=True)
    # 9 flu of 17 rows: 2-eligibility needs 1 counterfeit or 1 deferral.
    with_counterfeits = publish_m_invariant(skewed, hospital.schema, 2,
                                            rng=np.random.default_rng(9))
    assert with_counterfeits.counterfeits == 1 and with_counterfeits.deferred == 0
    with_deferrals = publish_m_invariant(skewed, hospital.schema, 2, eligibility="delete",
                                         rng=np.random.default_rng(9))
    assert with_deferrals.deferred == 1 and with_deferrals.counterfeits == 0
    for result in (with_counterfeits, with_deferrals):
        _assert_release_consistent(result.release, 2)


def test_full_counterfeit_sets_are_dropped() -> None:
    """A bucket holding a counterfeit of every value loses them: no all-fake group."""
    rows = np.array([0, 1, -1, -1, -1, -1])
    values = np.array([0, 1, 0, 1, 0, 1])
    buckets = np.zeros(6, dtype=np.int64)
    keep = drop_redundant_counterfeits(rows, values, buckets, 1, 2)
    assert keep.tolist() == [True, True, False, False, False, False]
    # One value without counterfeits: nothing to drop.
    keep = drop_redundant_counterfeits(np.array([0, 1, -1, 2]), np.array([0, 1, 0, 1]),
                                        np.zeros(4, dtype=np.int64), 1, 2)
    assert keep.all()
