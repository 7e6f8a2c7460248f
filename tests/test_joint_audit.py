"""The joint adversary (issue 20): possible sets of every person and release, the guard.

* the issue's concrete m = 2 case: p2's release-1 value is forced although both releases
  pass the m-Distinct verifier; the guard gives the same inputs a release without one;
* the constraint model (propagation + witnesses + CP-SAT) equals an exhaustive enumeration
  of the worlds on tiny random series, for m-invariance, m-Distinct and ε-inclusion;
* property: sequences of ``publish_m_invariant`` never leave anybody fewer than m values
  (Lemmas 1 and 3 of the m-invariance paper).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from republish.audit.joint import joint_audit
from republish.audit.joint_model import joint_instance
from republish.audit.joint_propagation import max_matching
from republish.audit.joint_risk import enumerate_worlds, joint_risk
from republish.errors import InputError, ParameterError, VerificationError
from republish.principles.m_distinct import check_m_distinct_sequence
from republish.release import Release
from republish.schema import make_schema
from republish.solver.eps_inclusion import publish_eps_inclusive
from republish.solver.joint_guard import check_release, guarded_release
from republish.solver.m_distinct import publish_m_distinct
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState
from republish.transitions import TransitionModel

SCHEMA = make_schema("id", "sa", ["x"])
VALUES = list("abcde")
CASE_MODEL = TransitionModel.from_edges([("a", "d"), ("b", "c"), ("d", "b")], "abcd")
CASE = [  # (person group value; ...), counterfeits {group: value}
    ("p6 2 d; p1 3 d; p2 3 c; p4 2 c; p3 1 a; p5 1 d", {}),
    ("p4 1 c; p6 3 c; p1 3 d; p5 1 d; p3 2 d; p0 2 c", {}),
    ("p0 5 c; p2 2 c; p3 4 c; p4 1 c; p6 3 c; p1 1 d", {2: "b", 3: "b", 4: "b", 5: "b"}),
]


def make_release(number: int, rows: list[tuple[str, int, str]], fakes: dict[int, str],
                 shown: dict[str, str] | None = None, exact: bool = False) -> Release:
    """A release from (person, group, true value) rows; ``fakes`` are counterfeits (or,
    with ``exact``, ``shown`` gives substituted published values, counted in S)."""
    assignment = pd.DataFrame({"id": [r[0] for r in rows], "group": [r[1] for r in rows],
                               "x": [float(r[0][1:]) for r in rows],
                               "sa": [r[2] for r in rows]})
    shown = shown or {}
    published = pd.DataFrame({"group": assignment["group"], "x": "1",
                              "sa": [shown.get(p, v) for p, v in zip(
                                  assignment["id"], assignment["sa"], strict=True)]})
    if fakes:
        published = pd.concat([published, pd.DataFrame(
            {"group": list(fakes), "x": "1", "sa": list(fakes.values())})], ignore_index=True)
    counts: dict[int, int] = {}
    for p, g in zip(assignment["id"], assignment["group"], strict=True):
        if p in shown:
            counts[g] = counts.get(g, 0) + 1
    for g in fakes:
        counts[g] = counts.get(g, 0) + 1
    second = pd.DataFrame({"group": list(counts), "count": list(counts.values())},
                          dtype=np.int64)
    return Release(number=number, schema=SCHEMA, published=published, counterfeits=second,
                   assignment=assignment, model="exact" if exact else "interval")


def case_releases() -> list[Release]:
    out = []
    for n, (text, fakes) in enumerate(CASE, start=1):
        rows = [(p, int(g), v) for p, g, v in (r.split() for r in text.split(";"))]
        out.append(make_release(n, rows, fakes))
    return out


# ------------------------------------------------------------------ the issue's case


def test_issue_case_passes_the_verifier_but_forces_p2() -> None:
    releases = case_releases()
    assert check_m_distinct_sequence(releases, 2, CASE_MODEL).ok
    audit = joint_audit(joint_instance(releases, "m-distinct", CASE_MODEL), m=2)
    assert audit.complete and audit.checked_share() == 1.0
    assert audit.possible_set("p2", 1) == {"c"}
    assert {"p1", "p2", "p6"} <= set(audit.flagged_ids())
    assert audit.to_dict()["forced"] >= 3
    risk = joint_risk(audit.instance)
    assert risk.computed.all()
    assert risk.to_dict()["max_risk"] == 1.0 and risk.to_dict()["max_per_record_risk"] == 0.5


def test_the_guard_detects_the_case_and_publishes_release_3_without_a_forced_value() -> None:
    releases = case_releases()
    check = check_release(releases[:2], releases[2], "m-distinct", 2, CASE_MODEL)
    assert not check.ok and "p2" in check.exposed and check.complete
    state = PublisherState.from_releases(releases[:2], 2)
    table = releases[2].assignment[["id", "x", "sa"]]
    result = publish_m_distinct(table, SCHEMA, 2, CASE_MODEL, state,
                                rng=np.random.default_rng(0), history=releases[:2],
                                time_limit=2)
    assert result.extra["joint_check"] == "complete"
    assert "joint check complete" in result.certificate.detail
    assert result.release.metadata["joint_check"]["joint_exposed"] == 0
    audit = joint_audit(joint_instance([*releases[:2], result.release], "m-distinct",
                                       CASE_MODEL), m=2)
    assert not audit.forced.any() and not audit.flagged.any()


def test_the_guard_repairs_with_another_candidate_or_refuses() -> None:
    releases = case_releases()
    state = PublisherState.from_releases(releases[:2], 2)
    table = releases[2].assignment[["id", "x", "sa"]]
    genuine = publish_m_distinct(table, SCHEMA, 2, CASE_MODEL, state,
                                 rng=np.random.default_rng(1), time_limit=2)
    leaking = dataclasses.replace(genuine, release=releases[2])
    calls: list[int] = []

    def first_leaks(rng: np.random.Generator) -> object:
        calls.append(1)
        return leaking if len(calls) == 1 else genuine

    kept = guarded_release(first_leaks, releases[:2], "m-distinct", 2,  # type: ignore[arg-type]
                           np.random.default_rng(0), CASE_MODEL)
    assert kept.extra["joint_attempts"] == 2 and kept.release is not releases[2]
    with pytest.raises(VerificationError, match="p2"):
        guarded_release(lambda rng: leaking, releases[:2], "m-distinct", 2,
                        np.random.default_rng(0), CASE_MODEL, attempts=3)
    with pytest.raises(ParameterError):
        guarded_release(lambda rng: leaking, releases[:2], "m-distinct", 2,
                        np.random.default_rng(0), CASE_MODEL, attempts=0)


# ------------------------------------------------------------------ model == enumeration


def random_series(rng: np.random.Generator, principle: str
                  ) -> tuple[list[Release], TransitionModel | None]:
    """≤ 7 people, 3 releases, random groups, counterfeits (or substitutions)."""
    people = int(rng.integers(3, 8))
    model = None
    if principle == "m-distinct":
        edges = {(VALUES[a], VALUES[b]) for a, b in rng.integers(0, 5, (4, 2)) if a != b}
        model = TransitionModel.from_edges(sorted(edges), VALUES)
    values = rng.choice(VALUES, people)
    releases = []
    for number in (1, 2, 3):
        present = np.flatnonzero(rng.random(people) < 0.8)
        if len(present) < 2:
            present = np.arange(people)
        groups = rng.integers(1, max(2, len(present) // 2) + 1, len(present))
        rows = [(f"p{i}", int(g), str(values[i])) for i, g in zip(present, groups, strict=True)]
        fakes: dict[int, str] = {}
        shown: dict[str, str] = {}
        if principle == "eps-inclusion":
            for person, _, value in rows:
                if rng.random() < 0.15:
                    shown[person] = str(rng.choice([v for v in VALUES if v != value]))
        else:
            for g in sorted(set(groups.tolist())):
                if rng.random() < 0.3:
                    fakes[g] = str(rng.choice(VALUES))
        releases.append(make_release(number, rows, fakes, shown,
                                     exact=principle == "eps-inclusion"))
        if model is not None:
            values = np.array([str(rng.choice(sorted(model.cus(v)))) if rng.random() < 0.5
                               else v for v in values], dtype=object)
    return releases, model


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100_000), st.sampled_from(["m-invariance", "m-distinct",
                                                 "eps-inclusion"]), st.booleans())
def test_possible_sets_equal_exhaustive_enumeration(seed: int, principle: str,
                                                    truth: bool) -> None:
    releases, model = random_series(np.random.default_rng(seed), principle)
    instance = joint_instance(releases, principle, model, with_truth=truth)
    audit = joint_audit(instance, m=2, time_limit=30)
    assert audit.complete
    possible = np.zeros_like(audit.possible)
    for world in enumerate_worlds(instance):
        assert instance.is_world(world)
        possible[np.arange(instance.cells), world] = True
    assert (possible == audit.possible).all()
    if truth:  # the true values are a world
        assert possible[np.arange(instance.cells), instance.truth].all()


def test_max_matching_respects_capacities() -> None:
    domains = [np.array([True, False]), np.array([True, False]), np.array([True, True])]
    assert max_matching(domains, np.array([1, 1])) == 2
    assert max_matching(domains, np.array([2, 1])) == 3


# ------------------------------------------------------------------ publishers


def published_series(rng: np.random.Generator, releases: int = 3, people: int = 24
                     ) -> list[pd.DataFrame]:
    values = rng.choice(VALUES, people)
    x = rng.integers(0, 40, people)
    tables = []
    for _ in range(releases):
        present = np.sort(rng.choice(people, int(rng.integers(people // 2, people)),
                                     replace=False))
        tables.append(pd.DataFrame({"id": [f"p{i}" for i in present], "x": x[present],
                                    "sa": values[present]}))
    return tables


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([2, 3]))
def test_m_invariant_sequences_never_leave_fewer_than_m_values(seed: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    state, releases = None, []
    for table in published_series(rng):
        result = publish_m_invariant(table, SCHEMA, m, state, rng=rng, time_limit=2)
        state, releases = result.state, [*releases, result.release]
    audit = joint_audit(joint_instance(releases, "m-invariance"), m=m, time_limit=60)
    assert audit.complete
    assert audit.sizes.min() >= m and not audit.flagged.any()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
@example(seed=9355)
def test_guarded_eps_inclusion_with_extras_exposes_nobody(seed: int) -> None:
    rng = np.random.default_rng(seed)
    state, releases = None, []
    for table in published_series(rng, people=12):
        try:
            result = publish_eps_inclusive(table, SCHEMA, 2, previous=state, rng=rng,
                                           allow_extras=True, history=releases,
                                           time_limit=2)
        except VerificationError as exc:  # a refusal names the people
            assert "refused by the joint guard" in str(exc)
            return
        except InputError as exc:  # e.g. seed 9355: T(3) has no two values to group
            assert "nothing to publish" in str(exc)
            return
        state, releases = result.state, [*releases, result.release]
        assert result.extra["joint_check"] == "complete"
    audit = joint_audit(joint_instance(releases, "eps-inclusion"), m=2, time_limit=60)
    assert not audit.flagged.any()


def test_guarded_publish_is_publish_with_the_guard() -> None:
    from republish.principles.catalog.m_distinct import MDistinctOptions
    from republish.solver.joint_guard import guarded_publish, joint_guard_applies

    releases = case_releases()
    options = MDistinctOptions(2, CASE_MODEL, False)
    assert joint_guard_applies("m-distinct", options)
    assert not joint_guard_applies("m-invariance", options)
    state = PublisherState.from_releases(releases[:2], 2)
    table = releases[2].assignment[["id", "x", "sa"]]
    result = guarded_publish(table, SCHEMA, "m-distinct", options, state,
                             history=releases[:2], rng=np.random.default_rng(0))
    assert result.extra["joint_check"] == "complete" and result.extra["joint_exposed"] == 0
    plain = guarded_publish(table, SCHEMA, "m-distinct", options, state,
                            rng=np.random.default_rng(0))
    assert "joint_check" not in plain.extra
    from republish.audit import joint_audit as lazy

    assert lazy is joint_audit


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([2, 3]))
def test_guarded_m_distinct_sequences_expose_nobody(seed: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    edges = {(VALUES[a], VALUES[b]) for a, b in rng.integers(0, 5, (4, 2)) if a != b}
    model = TransitionModel.from_edges(sorted(edges), VALUES)
    state, releases = None, []
    for table in published_series(rng, people=9):
        try:
            result = publish_m_distinct(table, SCHEMA, m, model, state, rng=rng,
                                        history=releases, time_limit=2)
        except VerificationError as exc:  # refused: names the people it would expose
            assert "refused by the joint guard" in str(exc)
            return
        state, releases = result.state, [*releases, result.release]
    audit = joint_audit(joint_instance(releases, "m-distinct", model), m=m, time_limit=60)
    assert audit.complete and not audit.flagged.any()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100_000), st.sampled_from(["m-invariance", "m-distinct",
                                                 "eps-inclusion"]))
def test_neighbourhood_covering_keeps_the_exact_sets(seed: int, principle: str) -> None:
    import republish.audit.joint as joint
    import republish.audit.joint_lns as lns

    releases, model = random_series(np.random.default_rng(seed), principle)
    instance = joint_instance(releases, principle, model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(joint, "LNS_CELLS", 3)  # every component goes through the LNS
        patch.setattr(lns, "NEIGHBOURHOOD", 4)
        audit = joint_audit(instance, m=2, time_limit=30)
    possible = np.zeros_like(audit.possible)
    for world in enumerate_worlds(instance):
        possible[np.arange(instance.cells), world] = True
    assert audit.complete and (possible == audit.possible).all()
