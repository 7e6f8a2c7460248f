"""Query workload error (m-invariance paper, §5.2) and KL-divergence (l-diversity paper, eq. 2)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish import metrics
from republish.errors import InputError, ParameterError
from republish.examples import load_hospital
from republish.generalization import Domain, generalize, parse_boxes
from republish.release import build_release
from republish.schema import Hierarchy, QIAttribute, Schema
from republish.tables import encode_qis, load_table

HIERARCHY = Hierarchy.from_rows(
    [["a1", "A", "*"], ["a2", "A", "*"], ["b1", "B", "*"], ["b2", "B", "*"], ["b3", "B", "*"]]
)
MIXED = Schema(
    identifier="id",
    sensitive="sa",
    qis=(
        QIAttribute("age", "numeric"),
        QIAttribute("level", "ordered", order=("low", "mid", "high")),
        QIAttribute("place", "hierarchy", hierarchy=HIERARCHY),
    ),
)
AGE_ONLY = Schema(identifier="id", sensitive="sa", qis=(QIAttribute("age", "numeric"),))


def _mixed_table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return load_table(pd.DataFrame({
        "id": [str(i) for i in range(n)],
        "age": rng.integers(20, 30, size=n),
        "level": rng.choice(["low", "mid", "high"], size=n),
        "place": rng.choice(list(HIERARCHY.leaves), size=n),
        "sa": rng.choice(["s1", "s2", "s3", "s4"], size=n),
    }), MIXED)


def _brute_force(table: pd.DataFrame, schema: Schema, workload: metrics.QueryWorkload) -> list[int]:
    codes = encode_qis(table, schema)
    values = table[schema.sensitive].tolist()
    answers = []
    for q in range(workload.count):
        allowed = set(workload.sensitive_values[workload.sensitive_low[q]:
                                                workload.sensitive_high[q] + 1])
        answers.append(sum(
            values[i] in allowed and all(
                workload.low[q, j] <= codes[i, j] <= workload.high[q, j]
                for j in range(codes.shape[1])
            )
            for i in range(len(table))
        ))
    return answers


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), selectivity=st.floats(0.01, 1.0))
def test_exact_answers_equal_brute_force(seed: int, n: int, selectivity: float) -> None:
    table = _mixed_table(np.random.default_rng(seed), n)
    workload = metrics.generate_queries(MIXED, table, 30, selectivity, seed)
    expected = _brute_force(table, MIXED, workload)
    for method in ("grid", "blocks"):
        assert metrics.answer_exact(table, MIXED, workload, method=method).tolist() == expected


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), size=st.integers(1, 5))
def test_grid_and_block_estimates_agree(seed: int, n: int, size: int) -> None:
    rng = np.random.default_rng(seed)
    table = _mixed_table(rng, n)
    groups = rng.integers(0, max(1, n // size), size=n)
    counterfeits = {int(groups[0]): ["s9"]}
    release = build_release(1, table, groups, MIXED, counterfeit_values=counterfeits, rng=rng)
    workload = metrics.generate_queries(MIXED, table, 40, 0.2, seed,
                                        sensitive_values=["s1", "s2", "s3", "s4", "s9"])
    domain = Domain.of(MIXED, encode_qis(table, MIXED))
    grid, blocks = (
        metrics.estimate_from_release(release.published, release.counterfeits, MIXED, workload,
                                      domain, method=method)
        for method in ("grid", "blocks")
    )
    np.testing.assert_allclose(grid, blocks, rtol=1e-9, atol=1e-9)


def test_workload_ranges_have_the_papers_length() -> None:
    table = _mixed_table(np.random.default_rng(0), 50)
    workload = metrics.generate_queries(MIXED, table, 200, 0.1, seed=3)
    domain = Domain.of(MIXED, encode_qis(table, MIXED))
    fraction = 0.1 ** (1 / 4)
    sizes = domain.high - domain.low + 1
    lengths = workload.high - workload.low + 1
    for j, size in enumerate(sizes):
        assert np.all(lengths[:, j] == max(1, round(size * fraction)))
        assert np.all(workload.low[:, j] >= domain.low[j])
        assert np.all(workload.high[:, j] <= domain.high[j])
    sensitive_length = workload.sensitive_high - workload.sensitive_low + 1
    assert np.all(sensitive_length == round(len(workload.sensitive_values) * fraction))
    again = metrics.generate_queries(MIXED, table, 200, 0.1, seed=3)
    assert np.array_equal(again.low, workload.low)
    assert np.array_equal(again.sensitive_low, workload.sensitive_low)


def test_workload_parameters_are_validated() -> None:
    table = _mixed_table(np.random.default_rng(0), 5)
    with pytest.raises(ParameterError, match="selectivity"):
        metrics.generate_queries(MIXED, table, 10, 0.0, 0)
    with pytest.raises(ParameterError, match="count"):
        metrics.generate_queries(MIXED, table, 0, 0.1, 0)
    with pytest.raises(ParameterError, match="sensitive"):
        metrics.generate_queries(MIXED, Domain.of(MIXED, encode_qis(table, MIXED)), 10, 0.1, 0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40))
def test_single_row_groups_without_counterfeits_give_zero_error(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    table = _mixed_table(rng, n)
    release = build_release(1, table, np.arange(n), MIXED, rng=rng)
    workload = metrics.generate_queries(MIXED, table, 50, 0.3, seed)
    domain = Domain.of(MIXED, encode_qis(table, MIXED))
    exact = metrics.answer_exact(table, MIXED, workload)
    estimate = metrics.estimate_from_release(release.published, release.counterfeits, MIXED,
                                             workload, domain)
    np.testing.assert_allclose(estimate, exact, atol=1e-9)
    error = metrics.query_error(table, release.published, release.counterfeits, MIXED,
                                count=50, selectivity=0.3, seed=seed)
    # nan only when every query misses every row (all skipped).
    assert error == pytest.approx(0.0, abs=1e-12) or (math.isnan(error) and not exact.any())


def _two_groups() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Group 1: ages 20, 21 (a, b); group 2: ages 30, 33 (a, b) plus a counterfeit a."""
    table = load_table(pd.DataFrame({
        "id": ["p", "q", "r", "s"], "age": [20, 21, 30, 33], "sa": ["a", "b", "a", "b"],
    }), AGE_ONLY)
    published = pd.DataFrame({
        "group": [1, 1, 2, 2, 2],
        "age": ["[20, 21]", "[20, 21]", "[30, 33]", "[30, 33]", "[30, 33]"],
        "sa": ["a", "b", "a", "b", "a"],
    })
    counterfeits = pd.DataFrame({"group": [2], "count": [1]})
    return table, published, counterfeits


def _workload(ranges: list[tuple[int, int, int, int]]) -> metrics.QueryWorkload:
    """Queries ``(age_low, age_high, first_value, last_value)`` over values (a, b)."""
    array = np.array(ranges)
    return metrics.QueryWorkload(
        low=array[:, :1].astype(float), high=array[:, 1:2].astype(float),
        sensitive_low=array[:, 2], sensitive_high=array[:, 3], sensitive_values=("a", "b"),
        units=np.ones(1), selectivity=0.5,
    )


def test_hand_computed_two_group_example() -> None:
    table, published, counterfeits = _two_groups()
    domain = Domain.from_list([[20, 33]])
    # Query 1: age in [20, 30], value a. Group 1: (2 - 0) * 1 * 1/2 = 1; group 2: the box
    # [30, 33] holds 4 ages, one inside, so (3 - 1) * 1/4 * 2/3 = 1/3.
    # Query 2: age in [21, 31], values a and b: (2 * 1/2 * 1) + (2 * 2/4 * 1) = 2.
    workload = _workload([(20, 30, 0, 0), (21, 31, 0, 1)])
    for method in ("grid", "blocks"):
        estimate = metrics.estimate_from_release(published, counterfeits, AGE_ONLY, workload,
                                                 domain, method=method)
        np.testing.assert_allclose(estimate, [4 / 3, 2.0])
        ignored = metrics.estimate_from_release(published, None, AGE_ONLY, workload, domain,
                                                method=method)
        np.testing.assert_allclose(ignored, [1 + 3 * 1 / 4 * 2 / 3, 1 + 3 * 2 / 4])
    assert metrics.answer_exact(table, AGE_ONLY, workload).tolist() == [2, 2]
    errors = metrics.relative_errors(np.array([2, 2]), np.array([4 / 3, 2.0]))
    np.testing.assert_allclose(errors, [1 / 3, 0.0])


def test_queries_with_zero_actual_answer_are_skipped() -> None:
    errors = metrics.relative_errors(np.array([0, 4, 0, 2]), np.array([5.0, 3.0, 0.0, 2.0]))
    np.testing.assert_allclose(errors, [0.25, 0.0])


def test_counterfeits_inflate_the_estimate_only_when_r_is_ignored() -> None:
    hospital = load_hospital()
    schema, release = hospital.schema, hospital.t3_star
    values = sorted(set(release.published[schema.sensitive]))
    domain = Domain.of(schema, encode_qis(hospital.t2, schema))
    everything = metrics.QueryWorkload(
        low=domain.low[None, :], high=domain.high[None, :], sensitive_low=np.array([0]),
        sensitive_high=np.array([len(values) - 1]), sensitive_values=tuple(values),
        units=np.ones(2), selectivity=1.0,
    )
    with_r = metrics.estimate_from_release(release.published, release.counterfeits, schema,
                                           everything, domain)
    without_r = metrics.estimate_from_release(release.published, None, schema, everything,
                                              domain)
    assert with_r[0] == pytest.approx(len(hospital.t2))  # 11 real rows
    assert without_r[0] == pytest.approx(len(release.published))  # 13 with c1 and c2
    workload = metrics.generate_queries(schema, hospital.t2, 300, 0.3, 1,
                                        sensitive_values=values)
    with_r = metrics.estimate_from_release(release.published, release.counterfeits, schema,
                                           workload, domain)
    without_r = metrics.estimate_from_release(release.published, None, schema, workload, domain)
    assert np.all(without_r >= with_r - 1e-12)
    assert np.any(without_r > with_r + 1e-9)
    assert metrics.query_error(hospital.t2, release.published, release.counterfeits, schema,
                               count=300, selectivity=0.3, seed=1) < metrics.query_error(
        hospital.t2, release.published, None, schema, count=300, selectivity=0.3, seed=1)


def test_counterfeits_of_an_unknown_group_are_rejected() -> None:
    table, published, _ = _two_groups()
    with pytest.raises(InputError, match="group 7"):
        metrics.estimate_from_release(published, pd.DataFrame({"group": [7], "count": [1]}),
                                      AGE_ONLY, _workload([(20, 33, 0, 1)]),
                                      Domain.from_list([[20, 33]]))


def test_kl_of_the_identity_publication_is_zero_and_positive_otherwise() -> None:
    rng = np.random.default_rng(5)
    table = _mixed_table(rng, 60)
    identity = generalize(table, np.arange(len(table)), MIXED)
    assert metrics.kl_divergence(table, identity, MIXED) == pytest.approx(0.0, abs=1e-12)
    coarse = generalize(table, np.arange(len(table)) % 6, MIXED)
    assert metrics.kl_divergence(table, coarse, MIXED) > 0.01
    suppressed = generalize(table, np.arange(len(table)) % 6, MIXED, model="suppression")
    assert metrics.kl_divergence(table, suppressed, MIXED) > 0.01


def test_kl_hand_computed() -> None:
    # Ages 20 and 22 in one group: each published row is uniform over {20, 21, 22}, so
    # f*(20, a) = f*(22, a) = 1/3 against f = 1/2: KL = ln(3/2).
    table = load_table(pd.DataFrame({"id": ["p", "q"], "age": [20, 22], "sa": ["a", "a"]}),
                       AGE_ONLY)
    published = generalize(table, [1, 1], AGE_ONLY)
    assert metrics.kl_divergence(table, published, AGE_ONLY) == pytest.approx(math.log(1.5))
    # A star on an ordered QI of three values spreads each row over all three.
    schema = Schema("id", "sa", (QIAttribute("level", "ordered", order=("x", "y", "z")),))
    table = load_table(pd.DataFrame({"id": ["p", "q"], "level": ["x", "y"], "sa": ["a", "a"]}),
                       schema)
    published = generalize(table, [1, 1], schema, model="suppression")
    assert list(published["level"]) == ["*", "*"]
    assert metrics.kl_divergence(table, published, schema) == pytest.approx(math.log(1.5))


def test_kl_non_integer_numeric_uses_the_active_domain() -> None:
    table = load_table(pd.DataFrame({
        "id": ["p", "q", "r"], "age": [1.5, 2.25, 9.0], "sa": ["a", "a", "b"],
    }), AGE_ONLY)
    published = generalize(table, [1, 1, 2], AGE_ONLY)
    # The box [1.5, 2.25] holds two distinct values of the table: f* = f on every point.
    assert metrics.kl_divergence(table, published, AGE_ONLY) == pytest.approx(0.0, abs=1e-12)
    assert metrics.kl_divergence(table, generalize(table, [1, 1, 1], AGE_ONLY), AGE_ONLY) > 0


def test_kl_is_infinite_when_the_publication_misses_a_point() -> None:
    table, _, _ = _two_groups()
    published = generalize(table, [1, 1, 2, 2], AGE_ONLY).iloc[:2]
    assert metrics.kl_divergence(table, published, AGE_ONLY) == float("inf")


def test_continuous_numeric_qi_estimates() -> None:
    table = load_table(pd.DataFrame({
        "id": ["p", "q", "r"], "age": [1.5, 2.5, 4.0], "sa": ["a", "b", "a"],
    }), AGE_ONLY)
    published = generalize(table, [1, 1, 2], AGE_ONLY)
    workload = metrics.generate_queries(AGE_ONLY, table, 50, 0.5, 0)
    assert workload.units.tolist() == [0.0]
    domain = Domain.of(AGE_ONLY, encode_qis(table, AGE_ONLY))
    estimate = metrics.estimate_from_release(published, None, AGE_ONLY, workload, domain)
    # Group 2 is the point 4.0: it counts fully when inside the range, else not at all.
    for q in range(workload.count):
        share = np.clip(min(2.5, workload.high[q, 0]) - max(1.5, workload.low[q, 0]), 0, None)
        values = workload.sensitive_values[workload.sensitive_low[q]:
                                           workload.sensitive_high[q] + 1]
        group1 = share * (("a" in values) + ("b" in values))
        group2 = float(workload.low[q, 0] <= 4.0 <= workload.high[q, 0] and "a" in values)
        assert estimate[q] == pytest.approx(group1 + group2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), suppress=st.booleans())
def test_kl_equals_brute_force(seed: int, n: int, suppress: bool) -> None:
    rng = np.random.default_rng(seed)
    table = _mixed_table(rng, n)
    published = generalize(table, rng.integers(0, max(1, n // 3), size=n), MIXED,
                           model="suppression" if suppress else "interval")
    codes = encode_qis(table, MIXED)
    low, high = parse_boxes(published, MIXED)
    domain = Domain.of(MIXED, codes)
    low = np.where(np.isinf(low), domain.low, low)
    high = np.where(np.isinf(high), domain.high, high)
    points: dict[tuple[tuple[float, ...], str], int] = {}
    for i in range(n):
        key = (tuple(codes[i]), table["sa"][i])
        points[key] = points.get(key, 0) + 1
    expected = 0.0
    for (point, value), copies in points.items():
        f_star = sum(
            1 / np.prod(high[r] - low[r] + 1)
            for r in range(len(published))
            if published["sa"][r] == value
            and all(low[r, j] <= point[j] <= high[r, j] for j in range(len(point)))
        ) / len(published)
        expected += copies / n * math.log(copies / n / f_star)
    assert metrics.kl_divergence(table, published, MIXED) == pytest.approx(expected, abs=1e-9)
