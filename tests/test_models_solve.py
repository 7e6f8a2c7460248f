"""The solve-and-certify helper (republish.models.solve) and the certificates of every model.

The helper maps every OR-Tools status to OPTIMAL / FEASIBLE / INFEASIBLE / TIMEOUT / ERROR;
every model's result carries a Certificate that agrees with it: same status, objective and
bound, the bound never above the objective, and a gap of 0 when optimal.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.linear_solver.python import model_builder
from ortools.sat.python import cp_model

from republish.certificate import STATUSES, Certificate
from republish.errors import ParameterError
from republish.models.bucket_assignment import solve_bucket_assignment
from republish.models.eps_assignment import TypeCounts, solve_eps_assignment
from republish.models.grouping.cpsat import solve_bucket_grouping
from republish.models.grouping.formation import form_groups, partition_m_unique
from republish.models.grouping.mip import bucket_columns, solve_set_partition
from republish.models.m_distinct_assignment import FRESH, RecordClass, solve_assignment_counts
from republish.models.matching import solve_two_value_matching
from republish.models.solve import (
    CP_SAT_STATUS,
    MIP_STATUS,
    Solved,
    certificate,
    check_solver_options,
    solve_cp_sat,
    solve_mip,
)
from republish.models.star_minimization import solve_star_minimization
from republish.models.tuple_minimization import pair_counts, solve_tuple_minimization
from republish.problems.buckets import BucketCounts
from republish.uss import canonical_uss

VOCABULARY = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "TIMEOUT", "ERROR")

# --- the helper ---------------------------------------------------------------------------


def _subset_sum(api: Any, items: int = 60, seed: int = 1) -> Any:
    """Pick items whose weights sum to exactly half the total plus one, fewest first: an
    equality knapsack no solver settles in a millisecond."""
    rng = random.Random(seed)
    weights = [rng.randint(10**5, 10**6) for _ in range(items)]
    model = api()
    x = [model.new_bool_var(f"x{i}") for i in range(items)]
    model.add(sum(w * v for w, v in zip(weights, x, strict=True)) == sum(weights) // 2 + 1)
    model.minimize(sum(x))
    return model


def _small(api: Any, infeasible: bool = False) -> tuple[Any, Any, Any]:
    model = api()
    x = model.new_int_var(0, 10, "x")
    y = model.new_int_var(0, 10, "y")
    model.add(x + y >= 7)
    model.add(y - x <= 1)
    if infeasible:
        model.add(x + y <= 3)
    model.minimize(3 * x + 2 * y)
    return model, x, y


def _assert_consistent(solved: Solved) -> None:
    assert solved.status in VOCABULARY
    assert solved.found == (solved.status in ("OPTIMAL", "FEASIBLE"))
    assert solved.wall_time_s >= 0
    if solved.found:
        assert solved.objective is not None
        if solved.bound is not None:
            assert solved.bound <= solved.objective + 1e-6
    else:
        assert solved.objective is None and solved.gap is None
        with pytest.raises(ValueError, match="no solution"):
            solved.value(0)
    if solved.status == "OPTIMAL":
        assert solved.gap == 0 and solved.bound == solved.objective
    if solved.status in ("INFEASIBLE", "ERROR"):
        assert solved.bound is None


def test_every_or_tools_status_has_one_name() -> None:
    for code in cp_model.CpSolverStatus.__members__.values():
        assert CP_SAT_STATUS.get(code, "ERROR") in VOCABULARY
    assert CP_SAT_STATUS[cp_model.UNKNOWN] == "TIMEOUT"
    assert CP_SAT_STATUS[cp_model.MODEL_INVALID] == "ERROR"
    for code in model_builder.SolveStatus.__members__.values():
        assert MIP_STATUS.get(code, "ERROR") in VOCABULARY
    assert MIP_STATUS[model_builder.SolveStatus.NOT_SOLVED] == "TIMEOUT"
    assert set(VOCABULARY) <= set(STATUSES)


@pytest.mark.parametrize("engine", ["cp-sat", "scip"])
def test_optimal_has_gap_zero_and_readable_values(engine: str) -> None:
    if engine == "cp-sat":
        model, x, y = _small(cp_model.CpModel)
        solved = solve_cp_sat(model, time_limit=5, workers=1, seed=3)
    else:
        model, x, y = _small(model_builder.Model)
        solved = solve_mip(model, time_limit=5)
    _assert_consistent(solved)
    assert solved.status == "OPTIMAL"
    assert solved.objective == pytest.approx(17.0)  # x = 3, y = 4
    assert (solved.int_value(x), solved.int_value(y)) == (3, 4)
    assert solved.value(3 * x + 2 * y) == pytest.approx(17.0)
    assert solved.values([x, y]).tolist() == pytest.approx([3.0, 4.0])
    assert solved.bool_value(x) and solved.gap == 0.0


@pytest.mark.parametrize("engine", ["cp-sat", "scip"])
def test_infeasible(engine: str) -> None:
    if engine == "cp-sat":
        solved = solve_cp_sat(_small(cp_model.CpModel, infeasible=True)[0], time_limit=5)
    else:
        solved = solve_mip(_small(model_builder.Model, infeasible=True)[0], time_limit=5)
    _assert_consistent(solved)
    assert solved.status == "INFEASIBLE"


@pytest.mark.parametrize("engine", ["cp-sat", "scip"])
def test_a_millisecond_on_a_hard_instance_is_a_timeout_or_a_bounded_solution(
        engine: str) -> None:
    if engine == "cp-sat":
        solved = solve_cp_sat(_subset_sum(cp_model.CpModel), time_limit=1e-3, workers=1)
    else:
        solved = solve_mip(_subset_sum(model_builder.Model), time_limit=1e-3)
    _assert_consistent(solved)
    assert solved.status in ("TIMEOUT", "FEASIBLE")
    if solved.bound is not None:
        assert solved.bound >= 0  # every objective (a count of items) is >= 0
        assert math.isfinite(solved.bound)


def test_invalid_model_and_missing_solver_are_errors() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 5, "x")
    model.add_modulo_equality(x, x, 0)  # modulo 0: MODEL_INVALID
    model.minimize(x)
    _assert_consistent(invalid := solve_cp_sat(model, time_limit=1))
    assert invalid.status == "ERROR"
    missing = solve_mip(_small(model_builder.Model)[0], time_limit=1, solver="no-such-solver")
    _assert_consistent(missing)
    assert missing.status == "ERROR"


def test_hint_replaces_the_model_hints() -> None:
    model, x, y = _small(cp_model.CpModel)
    model.add_hint(x, 9)
    solved = solve_cp_sat(model, time_limit=5, hint={x: 3, y: 4})
    assert solved.status == "OPTIMAL"
    hints = dict(zip(model.proto.solution_hint.vars, model.proto.solution_hint.values,
                     strict=True))
    assert hints == {x.index: 3, y.index: 4}


def test_solver_options_are_checked() -> None:
    model = _small(cp_model.CpModel)[0]
    for bad in (0, -1.0, float("nan"), True, "10"):
        with pytest.raises(ParameterError, match="time_limit"):
            solve_cp_sat(model, time_limit=bad)  # type: ignore[arg-type]
    for workers in (0, 1.5, False):
        with pytest.raises(ParameterError, match="num_workers"):
            check_solver_options(1.0, workers)
    check_solver_options(np.float64(0.5), np.int64(2))


def test_certificate_of_an_answer() -> None:
    assert certificate("s", "OPTIMAL", 4.0).bound == 4.0
    assert certificate("s", "FEASIBLE", 4.0, 4.5).bound == 4.0  # rounding above: lowered
    none = certificate("s", "TIMEOUT", None, 2.0)
    assert math.isinf(none.objective) and none.bound == 2.0 and none.gap is None
    with pytest.raises(ValueError, match="status"):
        certificate("s", "UNKNOWN", 1.0)


# --- every model's certificate agrees with its result ---------------------------------------


_OWN = object()


def _agrees(result: Any, proof: Certificate, objective: Any = _OWN) -> None:
    """The certificate says what the result says (``objective``: the result's scalar
    objective when its ``objective`` field is something else, ``None`` for no answer)."""
    assert proof.status in STATUSES
    status = result.status if result.status != "SKIPPED" else "HEURISTIC"
    assert proof.status == status
    value = result.objective if objective is _OWN else objective
    found = value is not None and math.isfinite(value)
    if found:
        assert proof.objective == pytest.approx(value)
    else:
        assert math.isinf(proof.objective)
    bound = getattr(result, "bound", proof.bound)
    if bound is not None and found:
        assert proof.bound == pytest.approx(min(bound, value))
    if proof.bound is not None and found:
        assert proof.bound <= proof.objective + 1e-9
    if proof.status == "OPTIMAL":
        assert proof.gap == 0.0 and proof.bound == pytest.approx(proof.objective)
        if hasattr(result, "gap"):
            assert result.gap == 0.0
    assert proof.wall_time_s >= 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    old=st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=1, max_size=3),
    new=st.lists(st.integers(0, 4), min_size=4, max_size=4),
    deferrals=st.booleans(),
    engine=st.sampled_from(["mip", "cp-sat"]),
)
def test_bucket_assignment_certificate(old: list[list[int]], new: list[int], deferrals: bool,
                                       engine: str) -> None:
    values = ("a", "b", "c", "d")
    buckets = [BucketCounts(values[i:i + 3] if i < 2 else values[:3],
                            dict(zip(values[i:i + 3] if i < 2 else values[:3], c, strict=True)))
               for i, c in enumerate(old)]
    result = solve_bucket_assignment(buckets, dict(zip(values, new, strict=True)), 2,
                                     allow_deferrals=deferrals, deferral_weight=0.5,
                                     time_limit=5, engine=engine)  # type: ignore[arg-type]
    assert result.status in VOCABULARY
    _agrees(result, result.certificate)
    assert result.wall_time_s > 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sets(st.integers(0, 4), min_size=2, max_size=3),
                          st.integers(0, 2)), min_size=1, max_size=2),
       st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_eps_assignment_certificate(raw: list[tuple[set[int], int]], new: list[int]) -> None:
    types = []
    for signature, held in raw:
        members = frozenset(sorted(signature)[:min(held + 1, len(signature))])
        types.append(TypeCounts(frozenset(signature) | members,
                                frozenset(signature) - members, 1, len(members)))
    supply = np.bincount(new, minlength=5).tolist()
    result = solve_eps_assignment(types, supply, list(range(5)), 2, 1, time_limit=5,
                                  num_workers=1)
    assert result is not None and result.status in VOCABULARY
    deferred, substitutions, _, _ = result.objective
    _agrees(result, result.certificate, objective=float(deferred + substitutions))
    assert result.bound == result.certificate.bound
    assert result.wall_time_s == result.certificate.wall_time_s


def test_m_distinct_assignment_certificate() -> None:
    buckets = [canonical_uss([{"a", "b"}, {"c"}]), canonical_uss([{"a"}, {"b", "c"}])]
    classes = [RecordClass("a", (0, 1, FRESH), 3, "a"), RecordClass("b", (0, 1, FRESH), 2, "b"),
               RecordClass("c", (0, FRESH), 1, "c"), RecordClass("c", (1,), 2, "c")]
    solved = solve_assignment_counts(classes, buckets, 2, time_limit=5, num_workers=1)
    assert solved.status == "OPTIMAL"
    _agrees(solved, solved.certificate, objective=float(solved.objective))
    skipped = solve_assignment_counts(classes, buckets, 2, time_limit=5, max_variables=1)
    assert skipped.status == "SKIPPED" and skipped.certificate.status == "HEURISTIC"
    _agrees(skipped, skipped.certificate, objective=None)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(4, 9))
def test_ldiversity_model_certificates(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=(n, 2)).astype(float)
    sensitive = np.array(list("abc" * n)[:n])
    stars = solve_star_minimization(codes, sensitive, 2, time_limit=10, num_workers=1)
    assert stars.status in VOCABULARY
    _agrees(stars, stars.certificate)
    classes = np.unique(codes, axis=0, return_inverse=True)[1].ravel()
    values = np.unique(sensitive, return_inverse=True)[1]
    tuples = solve_tuple_minimization(*pair_counts(classes, values)[:3], 2, time_limit=10,
                                      num_workers=1)
    assert tuples.status in VOCABULARY
    _agrees(tuples, tuples.certificate)
    pairs = n - n % 2
    matching = solve_two_value_matching(codes[:pairs], np.array(list("ab" * n)[:pairs]))
    assert matching.status == "OPTIMAL"
    _agrees(matching, matching.certificate)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), s=st.integers(2, 3), k=st.integers(2, 4))
def test_grouping_certificates(seed: int, s: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.repeat([f"v{i}" for i in range(s)], k)
    fake = rng.random(s * k) < 0.2
    fake[: k] = False  # k real rows: every group can hold one
    points = rng.random((s * k, 2))
    formed = form_groups(points, values, fake, time_limit=10)
    _agrees(formed, formed.certificate)
    assert formed.wall_time_s >= 0
    partition = partition_m_unique(points, values, 2, fake, time_limit=10)
    _agrees(partition, partition.certificate)
    value_index = np.repeat(np.arange(s), k)
    columns = bucket_columns(points, value_index, fake, k, "perimeter", 10**6)
    assert columns is not None
    for exact in (solve_set_partition(columns, s * k, 10.0),
                  solve_bucket_grouping(points, value_index, fake, k, "perimeter", 10.0, 1)):
        assert exact.status in VOCABULARY
        _agrees(exact, exact.certificate)
