"""The m-Distinct release step (§V): phases, the exact model, whole sequences."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.audit.knowledge import knowledge_from_releases
from republish.audit.sug import sug_attack_groups
from republish.audit.sug_report import audit_releases_sug
from republish.errors import InputError, ParameterError
from republish.heuristics.m_distinct import balance_bucket, create_buckets
from republish.heuristics.m_distinct_split import split_distinct_buckets
from republish.models.m_distinct_assignment import FRESH, RecordClass, solve_assignment_counts
from republish.principles import check_m_invariance_sequence
from republish.principles.m_distinct import check_m_distinct_sequence
from republish.schema import QIAttribute, Schema
from republish.solver.m_distinct import publish_m_distinct
from republish.transitions import TransitionModel, canonical_uss, representable_values

SCHEMA = Schema("id", "sa", (QIAttribute("x"), QIAttribute("y")))
VALUES = [f"v{i}" for i in range(8)]


def _brute_delta(entries: tuple[frozenset[str], ...], counts: dict[str, int]) -> int:
    """Smallest δ: try δ groups, each a system of distinct representatives."""
    systems = [c for c in itertools.product(*[sorted(e) for e in entries])
               if len(set(c)) == len(c)]
    real = sum(counts.values())
    for delta in range(max(counts.values()), real + 1):
        for chosen in itertools.combinations_with_replacement(range(len(systems)), delta):
            covered: dict[str, int] = {}
            for k in chosen:
                for v in systems[k]:
                    covered[v] = covered.get(v, 0) + 1
            if all(covered.get(v, 0) >= c for v, c in counts.items()):
                return delta
    raise AssertionError("unbalanceable")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.frozensets(st.sampled_from("abcd"), min_size=1, max_size=3), min_size=2,
                max_size=3), st.data())
def test_balancing_finds_the_smallest_delta(sets: list[frozenset[str]],
                                            data: st.DataObject) -> None:
    entries = canonical_uss(sets)
    usable = sorted(representable_values(entries))
    if not usable:
        return
    counts = data.draw(st.dictionaries(st.sampled_from(usable), st.integers(1, 3), min_size=1))
    balance = balance_bucket(entries, counts)
    assert balance.delta == _brute_delta(entries, counts)
    for e, rows in enumerate(balance.rows):
        assert sum(rows.values()) == balance.delta and set(rows) <= entries[e]
    totals: dict[str, int] = {}
    for rows in balance.rows:
        for v, k in rows.items():
            totals[v] = totals.get(v, 0) + k
    assert all(k <= balance.delta for k in totals.values())
    assert all(totals.get(v, 0) >= c for v, c in counts.items())
    assert balance.counterfeit_total == len(entries) * balance.delta - sum(counts.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_split_gives_groups_of_distinct_values_one_per_entry(seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries = canonical_uss([{"a", "b"}, {"a", "b", "c"}, {"c", "d"}])
    counts = {v: int(rng.integers(1, 6)) for v in "abcd"}
    balance = balance_bucket(entries, counts)
    rows_values, rows_entries = [], []
    for e, rows in enumerate(balance.rows):
        for v, k in rows.items():
            rows_values += ["abcd".index(v)] * k
            rows_entries += [e] * k
    n = len(rows_values)
    points = rng.random((n, 2))
    points[rng.random(n) < 0.2] = np.nan
    split = split_distinct_buckets(points, np.array(rows_values), np.array(rows_entries),
                                   np.zeros(n, dtype=np.int64), np.array([False]))
    assert split.group_count == balance.delta
    for g in range(split.group_count):
        members = split.groups == g
        assert sorted(np.array(rows_entries)[members].tolist()) == [0, 1, 2]
        assert len(set(np.array(rows_values)[members].tolist())) == 3


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 60))
def test_flow_selection_meets_the_quotas(seed: int, delta: int) -> None:
    """Entries {0,1},{1,2},{2,3},{3,0}; every group is one of the two cyclic systems of
    representatives, so every value is tight (count δ): the first child must take exactly
    δ_1 rows of each entry and of each value, whatever the row order."""
    from republish.heuristics.m_distinct_split import _select_flow, _select_greedy

    rng = np.random.default_rng(seed)
    shifts = rng.integers(0, 2, delta)
    entries = np.tile(np.arange(4), delta)
    values = (entries + np.repeat(shifts, 4)) % 4
    frequency = np.bincount(values, minlength=4)
    first = delta // 2
    order = rng.permutation(len(values))
    chosen = _select_flow(order, entries, values, first, delta - first, frequency, 4)
    assert (np.bincount(entries[chosen], minlength=4) == first).all()
    assert (np.bincount(values[chosen], minlength=4) == first).all()
    greedy = _select_greedy(order, entries, values, first, delta - first, frequency, 4)
    if greedy is not None:
        assert (np.bincount(values[greedy], minlength=4) == first).all()
        assert order.argsort()[chosen].sum() <= order.argsort()[greedy].sum()


def test_flow_selection_regression_tight_values() -> None:
    """A bucket (δ = 9) from an Adult run whose QI order broke a big-M formulation of the
    lower quotas; the supplies formulation must meet them."""
    from republish.heuristics.m_distinct_split import _select_flow

    cells = {0: {3: 2, 4: 2, 10: 5}, 1: {1: 2, 3: 7}, 2: {7: 2, 9: 3, 12: 4}, 3: {0: 9},
             4: {8: 7, 11: 2}, 5: {6: 7, 8: 2}, 6: {5: 7, 6: 2}, 7: {2: 7, 5: 2}}
    entries = np.array([e for e, c in cells.items() for v, k in c.items() for _ in range(k)])
    values = np.array([v for e, c in cells.items() for v, k in c.items() for _ in range(k)])
    order = np.array([8, 32, 34, 40, 41, 42, 43, 51, 52, 53, 56, 57, 59, 60, 67, 68, 2, 5, 7,
                      9, 10, 11, 14, 16, 19, 20, 21, 22, 23, 25, 26, 27, 31, 36, 37, 39, 44, 46,
                      49, 55, 64, 69, 0, 1, 3, 4, 6, 12, 13, 15, 17, 18, 24, 28, 29, 30, 33, 35,
                      38, 45, 47, 48, 50, 54, 58, 61, 62, 63, 65, 66, 70, 71])
    frequency = np.bincount(values)
    chosen = _select_flow(order, entries, values, 4, 5, frequency, 8)
    taken = np.bincount(values[chosen], minlength=len(frequency))
    assert (np.bincount(entries[chosen]) == 4).all()
    assert (taken <= 4).all() and (frequency - taken <= 5).all()


def test_exact_counts_match_brute_force() -> None:
    buckets = [canonical_uss([{"a", "b"}, {"c"}]), canonical_uss([{"a"}, {"b", "c"}])]
    classes = [RecordClass("a", (0, 1, FRESH), 3, "a"), RecordClass("b", (0, 1, FRESH), 2, "b"),
               RecordClass("c", (0, FRESH), 1, "c"), RecordClass("c", (1,), 2, "c")]
    solution = solve_assignment_counts(classes, buckets, 2, time_limit=5, num_workers=1)
    best = None
    for split in itertools.product(*[
        [combo for combo in itertools.product(range(c.size + 1), repeat=len(c.options))
         if sum(combo) == c.size] for c in classes
    ]):
        fakes = 0
        for b, entries in enumerate(buckets):
            counts: dict[str, int] = {}
            for c, combo in zip(classes, split, strict=True):
                if b in c.options:
                    counts[c.value] = counts.get(c.value, 0) + combo[c.options.index(b)]
            if sum(counts.values()):
                fakes += balance_bucket(entries, counts).counterfeit_total
        pool: dict[str, int] = {}
        for c, combo in zip(classes, split, strict=True):
            if FRESH in c.options:
                pool[c.label] = pool.get(c.label, 0) + combo[c.options.index(FRESH)]
        fakes += max(0, 2 * max(pool.values(), default=0) - sum(pool.values()))
        best = fakes if best is None else min(best, fakes)
    assert solution.status == "OPTIMAL"
    assert solution.objective == best


def _random_model(rng: np.random.Generator) -> TransitionModel:
    edges = {(VALUES[a], VALUES[b]) for a, b in rng.integers(0, len(VALUES), (6, 2)) if a != b}
    return TransitionModel.from_edges(sorted(edges), VALUES)


def _series(rng: np.random.Generator, model: TransitionModel, releases: int) -> list[pd.DataFrame]:
    people = 40
    values = rng.choice(VALUES, people)
    x, y = rng.integers(0, 30, people), rng.integers(0, 30, people)
    tables = []
    for _ in range(releases):
        present = np.sort(rng.choice(people, int(rng.integers(20, 32)), replace=False))
        tables.append(pd.DataFrame({"id": [f"p{i}" for i in present], "x": x[present],
                                    "y": y[present], "sa": values[present]}))
        for i in range(people):  # internal updates within the model, QIs drift
            if rng.random() < 0.4:
                values[i] = rng.choice(sorted(model.cus(values[i])))
            x[i] += int(rng.integers(0, 2))
    return tables


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([2, 3]), st.booleans())
def test_every_sequence_is_m_distinct_and_resists_the_sug_attack(
    seed: int, m: int, strict: bool
) -> None:
    rng = np.random.default_rng(seed)
    model = _random_model(rng)
    if strict and len(set(model.conflict_components(VALUES).values())) < m:
        return
    state, releases = None, []
    for table in _series(rng, model, 3):
        result = publish_m_distinct(table, SCHEMA, m, model, state, strict=strict, rng=rng,
                                    time_limit=2, workers=1)
        state = result.state
        releases.append(result.release)
    report = check_m_distinct_sequence(releases, m, model, strict=strict)
    assert report.ok, report.summary()
    audit = sug_attack_groups(releases, model)
    assert not audit.vulnerable.any()
    assert audit.feasible_sizes.min() >= m  # Lemma 3
    boxes = audit_releases_sug(releases, knowledge_from_releases(releases), model)
    assert not boxes.sug.vulnerable.any() and not boxes.sug.inconsistent_ids
    if strict:  # Lemma 4: re-publication risk at most 1/m
        assert np.nanmax(audit.risk) <= 1 / m + 1e-9


def test_identity_model_is_m_invariance() -> None:
    rng = np.random.default_rng(11)
    model = TransitionModel.identity(VALUES)
    state, releases = None, []
    for table in _series(rng, model, 3):
        result = publish_m_distinct(table, SCHEMA, 3, model, state, rng=rng, time_limit=2)
        state = result.state
        releases.append(result.release)
    assert check_m_invariance_sequence(releases, 3).ok
    assert check_m_distinct_sequence(releases, 3, model).ok


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_identity_verifier_agrees_with_m_invariance(seed: int) -> None:
    from republish.release import build_release
    from republish.tables import validate_table

    rng = np.random.default_rng(seed)
    model = TransitionModel.identity(VALUES[:4])
    people = pd.DataFrame({"id": [f"p{i}" for i in range(12)], "x": rng.integers(0, 9, 12),
                           "y": rng.integers(0, 9, 12), "sa": rng.choice(VALUES[:4], 12)})
    releases = []
    for number in (1, 2, 3):
        chosen = np.sort(rng.choice(12, 8, replace=False))
        table = validate_table(people.iloc[chosen], SCHEMA)
        groups = rng.integers(0, 3, len(table))
        releases.append(build_release(number, table, groups, SCHEMA, rng=rng))
    assert (check_m_distinct_sequence(releases, 2, model).ok
            == check_m_invariance_sequence(releases, 2).ok)


def test_value_changes_outside_the_model_are_refused() -> None:
    model = TransitionModel.from_edges([("v0", "v1")], VALUES)
    table = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 2, 3], "y": [1, 2, 3],
                          "sa": ["v0", "v2", "v3"]})
    first = publish_m_distinct(table, SCHEMA, 3, model, rng=np.random.default_rng(0))
    changed = table.assign(sa=["v1", "v2", "v3"])  # v0 -> v1 is allowed
    publish_m_distinct(changed, SCHEMA, 3, model, first.state, rng=np.random.default_rng(1))
    backwards = table.assign(sa=["v0", "v4", "v3"])
    with pytest.raises(InputError, match="outside the public transition model"):
        publish_m_distinct(backwards, SCHEMA, 3, model, first.state)
    with pytest.raises(ParameterError, match="only"):
        publish_m_distinct(table, SCHEMA, 3, TransitionModel.from_edges(
            [(a, b) for a in VALUES for b in VALUES if a != b]), strict=True)


def test_buckets_include_scored_intersections() -> None:
    first = canonical_uss([{"a", "b"}, {"c", "d"}])
    second = canonical_uss([{"b", "e"}, {"d"}])
    buckets = create_buckets([first, second, first], ["a", "b", "c", "d", "e"])
    assert buckets == (first, second, canonical_uss([{"b"}, {"d"}]))
