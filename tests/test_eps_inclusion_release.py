"""The ε-inclusive release step: Algorithm 1, the CP-SAT assignment model, publication."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from helpers import EPS_COLUMNS, EPS_SCHEMA, EPS_TABLE_1A, EPS_TABLE_2A
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.categories import SACategories
from republish.errors import InputError, ParameterError
from republish.generalization import Domain
from republish.heuristics.eps_inclusion import (
    ClusterType,
    compose_new_clusters,
    greedy_plan,
    locality_rank,
    max_new_clusters,
    permute_within_groups,
)
from republish.metrics import estimate_from_permuted, generate_queries
from republish.models.eps_assignment import TypeCounts, solve_eps_assignment
from republish.principles.eps_inclusion import check_eps_inclusion_sequence, last_signatures
from republish.release import COUNT
from republish.solver.eps_inclusion import publish_eps_inclusive
from republish.tables import encode_qis, validate_table

SCHEMA = EPS_SCHEMA
IDENTITY = SACategories.identity()
T1 = pd.DataFrame(EPS_TABLE_1A, columns=list(EPS_COLUMNS))
T2 = pd.DataFrame(EPS_TABLE_2A, columns=list(EPS_COLUMNS))


def test_paper_series_through_the_pipeline() -> None:
    rng = np.random.default_rng(7)
    first = publish_eps_inclusive(T1, SCHEMA, 2, 1, rng=rng, workers=1)
    second = publish_eps_inclusive(T2, SCHEMA, 2, 1, previous=first.state, rng=rng,
                                   workers=1)
    releases = [first.release, second.release]
    assert check_eps_inclusion_sequence(releases, IDENTITY, 2, 1).ok
    # Nobody new has bronchitis: Bob's old group-mate Alice must be replaced by one
    # substitution, and one is enough.
    assert second.extra["substitutions"] == 1 == int(second.release.counterfeits[COUNT].sum())
    assert second.certificate.status == "OPTIMAL" and second.deferred == 0
    bob_before = last_signatures(first.release)["Bob"][1]
    assert bob_before <= last_signatures(second.release)["Bob"][1]
    published = second.release.published
    assert list(published.columns) == ["group", "age", "zip", "disease"]
    assert sorted(published["age"].astype(int)) == sorted(T2["age"])  # exact QIs
    summary = second.summary()
    assert summary["counterfeits"] == 0 and summary["substitutions"] == 1


def test_parameters_are_checked() -> None:
    with pytest.raises(ParameterError, match="at least 2 rows"):
        publish_eps_inclusive(T1, SCHEMA, 1, 1)
    first = publish_eps_inclusive(T1, SCHEMA, 2, 1, rng=np.random.default_rng(0),
                                  mode="heuristic")
    with pytest.raises(ParameterError, match="differs"):
        publish_eps_inclusive(T2, SCHEMA, 3, 1, previous=first.state)
    with pytest.raises(InputError, match="without a category"):
        publish_eps_inclusive(T1, SCHEMA, 2, 1, SACategories.from_pairs([("flu", "r")]))
    with pytest.raises(InputError, match="nothing to publish"):
        publish_eps_inclusive(T1.assign(disease="flu"), SCHEMA, 2, 1, mode="heuristic")


# -- brute force against the model ---------------------------------------------------------


def _brute_force(clusters: list[tuple[frozenset[int], frozenset[int]]], new: list[int],
                 lam: int, tau: int) -> tuple[int, int, int, int]:
    """Lexicographic optimum (deferred, substitutions, extras, -new clusters) row by row.

    ``clusters[k] = (S_k, V_k)``; categories are the identity, so ε-distinct means at
    least ``λ·τ`` distinct values when ``τ = 1`` (the instances below use τ = 1).
    """
    epsilon = lam * tau
    slots = len(new) // epsilon
    best = None
    for kept in itertools.product((True, False), repeat=len(clusters)):
        options: list[tuple[str, int, int]] = [("defer", -1, -1)]
        for k, (signature, _) in enumerate(clusters):
            if kept[k]:
                options.append(("old", k, -1))
                options.extend(("old", k, v) for v in sorted(signature))
        options.extend(("new", i, -1) for i in range(slots))
        for choice in itertools.product(options, repeat=len(new)):
            cost = _cost(clusters, kept, new, choice, epsilon)
            if cost is not None and (best is None or cost < best):
                best = cost
    assert best is not None
    return best


def _cost(clusters, kept, new, choice, epsilon):  # type: ignore[no-untyped-def]
    deferred = sum(len(v) for (_, v), k in zip(clusters, kept, strict=True) if not k)
    substitutions = extras = 0
    true = {k: list(v) for k, (_, v) in enumerate(clusters)}
    shown = {k: list(v) for k, (_, v) in enumerate(clusters)}
    fresh: dict[int, list[int]] = {}
    for value, (kind, where, publish) in zip(new, choice, strict=True):
        if kind == "defer":
            deferred += 1
        elif kind == "new":
            fresh.setdefault(where, []).append(value)
        else:
            true[where].append(value)
            shown[where].append(value if publish < 0 else publish)
            signature, members = clusters[where]
            if publish >= 0 and publish != value:
                substitutions += 1
            elif publish < 0 and value not in signature | members:
                extras += 1
            elif publish >= 0:
                return None  # "publish v" with v its own value: counted as a fill below
    for k, (signature, _) in enumerate(clusters):
        if not kept[k]:
            continue
        if len(set(true[k])) < len(true[k]) or len(set(shown[k])) < len(shown[k]):
            return None
        if not signature <= set(shown[k]) or len(shown[k]) < epsilon:
            return None
    for values in fresh.values():
        if len(set(values)) < len(values) or len(values) < epsilon:
            return None
    return (deferred, substitutions, extras, -len(fresh))


instances = st.tuples(
    st.lists(st.tuples(st.sets(st.integers(0, 4), min_size=2, max_size=3),
                       st.integers(0, 2)), min_size=1, max_size=2),
    st.lists(st.integers(0, 4), min_size=1, max_size=4),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances)
def test_model_matches_brute_force(instance: tuple[list[tuple[set[int], int]], list[int]]) -> None:
    raw_clusters, new = instance
    clusters = []
    for signature, held in raw_clusters:
        members = frozenset(sorted(signature)[:min(held + 1, len(signature))])
        clusters.append((frozenset(signature), members))
    types = [TypeCounts(s | v, s - v, 1, len(v)) for s, v in clusters]
    supply = np.bincount(new, minlength=5)
    category = np.arange(5)
    solution = solve_eps_assignment(types, supply.tolist(), category.tolist(), 2, 1,
                                    time_limit=5, num_workers=1)
    assert solution is not None and solution.status == "OPTIMAL"
    deferred, substitutions, extras, clusters_made = solution.objective
    assert (deferred, substitutions, extras, -clusters_made) == _brute_force(clusters, new, 2, 1)
    kinds = [ClusterType(t.present, t.missing, (k,), t.members) for k, t in enumerate(types)]
    heuristic = greedy_plan(kinds, supply, category, 2, 1)
    assert heuristic.objective(kinds) >= (deferred, substitutions, extras, -clusters_made)
    # Warm-started (stages proven by bounds are skipped), the optimum is the same.
    hinted = solve_eps_assignment(types, supply.tolist(), category.tolist(), 2, 1,
                                  hint=heuristic, time_limit=5, num_workers=1)
    assert hinted is not None and hinted.status == "OPTIMAL"
    assert hinted.objective == solution.objective


# -- building blocks ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=2, max_size=9), st.integers(1, 3),
       st.integers(1, 2), st.integers(1, 4))
def test_new_clusters_are_epsilon_distinct(counts: list[int], lam: int, tau: int,
                                           width: int) -> None:
    category = np.arange(len(counts)) // width
    supply = np.asarray(counts)
    clusters = max_new_clusters(supply, category, lam, tau)
    rows = {v: min(c, clusters) for v, c in enumerate(counts) if min(c, clusters)}
    compositions = compose_new_clusters(rows, clusters, category, lam, tau)
    assert len(compositions) == clusters
    used = np.zeros(len(counts), dtype=int)
    for composition in compositions:
        assert len(set(composition)) == len(composition) >= lam * tau
        per_category = np.bincount(category[composition], minlength=category.max() + 1)
        assert (per_category >= tau).sum() >= lam
        used[composition] += 1
    assert used.tolist() == [rows.get(v, 0) for v in range(len(counts))]
    # One more cluster is impossible (maximality).
    more = {v: min(c, clusters + 1) for v, c in enumerate(counts) if min(c, clusters + 1)}
    with pytest.raises(ParameterError):
        compose_new_clusters(more, clusters + 1, category, lam, tau)


def test_permutation_and_locality() -> None:
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(50), 4)
    values = np.arange(200)
    permuted = permute_within_groups(groups, values, rng)
    for g in range(50):
        assert sorted(permuted[groups == g]) == sorted(values[groups == g])
    assert (permuted != values).mean() > 0.5
    points = rng.random((500, 2))
    rank = locality_rank(points)
    assert sorted(rank) == list(range(500))
    order = np.argsort(rank)
    step = np.linalg.norm(np.diff(points[order], axis=0), axis=1).mean()
    assert step < 0.2  # a random order steps about 0.52 on average


# -- every produced sequence passes the verifier ---------------------------------------------


VALUES = [f"v{i}" for i in range(7)]
PAIRS = SACategories.from_pairs([(v, f"c{i % 3}") for i, v in enumerate(VALUES)])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(2, 1, None), (3, 1, None), (2, 2, PAIRS),
                                                (3, 1, PAIRS)]), st.booleans())
def test_every_produced_sequence_verifies(seed: int, parameters: tuple, use_model: bool) -> None:
    lam, tau, categories = parameters
    categories = categories or IDENTITY
    rng = np.random.default_rng(seed)
    size = 60
    universe = pd.DataFrame({
        "name": [f"p{i}" for i in range(size)],
        "age": rng.integers(20, 70, size).astype(float),
        "zip": rng.integers(0, 30, size).astype(float),
        "disease": rng.choice(VALUES, size, p=rng.dirichlet(np.ones(len(VALUES)) * 2)),
    })
    current = set(range(int(rng.integers(8, 35))))
    seen = set(current)
    state, releases = None, []
    for _ in range(4):
        try:
            step = publish_eps_inclusive(universe.iloc[sorted(current)], SCHEMA, lam, tau,
                                         categories, previous=state, rng=rng,
                                         mode="auto" if use_model else "heuristic",
                                         time_limit=2, workers=1)
        except InputError as error:
            assert "nothing to publish" in str(error)
            break
        state = step.state
        releases.append(step.release)
        assert step.release.counterfeits[COUNT].sum() == step.extra["substitutions"]
        deleted = {i for i in current if rng.random() < 0.3}
        back = {i for i in seen - current if rng.random() < 0.3}
        fresh = set(rng.choice(np.setdiff1d(np.arange(size), sorted(seen)),
                               size=min(int(rng.integers(0, 12)), size - len(seen)),
                               replace=False).tolist())
        current = (current - deleted) | back | fresh
        seen |= current
        if not current:
            break
    report = check_eps_inclusion_sequence(releases, categories, lam, tau)
    assert report.ok, report.summary()


def test_a_substitution_record_stays_one() -> None:
    """Published truthfully later, a substitute's value would be the only one its group
    adds to the old signature; it keeps publishing a signature value instead."""
    rng = np.random.default_rng(7)
    state, releases = None, []
    for table in (T1, T2, T2, T2):
        step = publish_eps_inclusive(table, SCHEMA, 2, 1, previous=state, rng=rng,
                                     workers=1)
        state = step.state
        releases.append(step.release)
    assert check_eps_inclusion_sequence(releases, IDENTITY, 2, 1).ok
    second = releases[1]
    own = second.assignment.set_index("name")
    signatures = last_signatures(second)
    (substitute,) = [p for p in own.index if own.loc[p, "disease"] not in signatures[p][1]]
    for later in releases[2:]:
        assert int(later.counterfeits[COUNT].sum()) == 1
        assert last_signatures(later)[substitute][1] == signatures[substitute][1]


def test_query_estimate_of_a_permuted_release() -> None:
    """The estimate is the expected answer over the random permutation within groups."""
    step = publish_eps_inclusive(T2, SCHEMA, 2, 1, rng=np.random.default_rng(1), workers=1)
    published = step.release.published
    table = validate_table(T2, SCHEMA)
    workload = generate_queries(SCHEMA, table, 40, 0.3, seed=2)
    domain = Domain.of(SCHEMA, encode_qis(table, SCHEMA))
    grid = estimate_from_permuted(published, SCHEMA, workload, domain, method="grid")
    blocks = estimate_from_permuted(published, SCHEMA, workload, domain, method="blocks")
    values = workload.sensitive_values
    expected = np.zeros(workload.count)
    for q in range(workload.count):
        wanted = set(values[workload.sensitive_low[q]:workload.sensitive_high[q] + 1])
        for _, group in published.groupby("group"):
            share = group["disease"].isin(wanted).mean()
            ages, zips = group["age"].astype(float), group["zip"].astype(float)
            inside = ((ages >= workload.low[q, 0]) & (ages <= workload.high[q, 0])
                      & (zips >= workload.low[q, 1]) & (zips <= workload.high[q, 1]))
            expected[q] += inside.sum() * share
    assert np.allclose(grid, expected) and np.allclose(blocks, expected)
