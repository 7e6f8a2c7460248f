"""A first release regrouped within the paper's buckets (``keep-buckets``) carries,
beside its certificate over every partition, what the model proved within the buckets
(``Certificate.restricted``; ``within_*`` in the summary): a bound no larger than the best
release that keeps every row in its bucket (brute force), and never the release's own
status."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import random_hospital_table
from hypothesis import given, settings
from hypothesis import strategies as st

import republish
import republish.solver.m_invariance_whole as whole_step
from republish.certificate import Certificate
from republish.cli.printing import certificate_text
from republish.examples.hospital import load_hospital
from republish.models.whole_release import WholeReleaseProblem
from republish.principles import verify_release
from republish.solver.m_invariance import publish_m_invariant

sys.path.insert(0, str(Path(__file__).parent))
from test_whole_release_model import brute_force  # noqa: E402


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 3]))
def test_the_bound_within_the_buckets_is_below_their_best_release(
        seed: int, m: int) -> None:
    """12 rows: the model's problem with every row held in its bucket, solved by brute
    force. The release lies within the buckets (its cost is at least their optimum), the
    bound within them is at most that optimum, and OPTIMAL there means equal to it."""
    held: list[WholeReleaseProblem] = []
    solve = whole_step.solve_whole_release

    def recording(problem: WholeReleaseProblem, **options):  # type: ignore[no-untyped-def]
        held.append(problem)
        return solve(problem, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(whole_step, "solve_whole_release", recording)
        step = publish_m_invariant(random_hospital_table(seed, 12), load_hospital().schema, m,
                                   rng=np.random.default_rng(seed), mode="exact",
                                   time_limit=3.0, first_release="keep-buckets")
    assert verify_release(step.release, m).ok
    summary = step.summary()
    if not held or summary["within_status"] is None:  # the pipeline's release stood
        return
    (problem,) = held
    assert (problem.bucket >= 0).all()  # every row held in its bucket
    optimum = brute_force(problem)
    assert optimum is not None
    assert summary["objective"] >= float(optimum[0]) - 1e-9
    if summary["objective"] == float(optimum[0]):
        assert summary["cost"] >= optimum[1] - 1e-9
    if summary["within_bound"] is not None:
        assert summary["within_bound"] <= optimum[1] + 1e-9
    if summary["within_status"] == "OPTIMAL":
        assert summary["cost"] == pytest.approx(optimum[1], abs=1e-9)
    # the release's own certificate is over every partition: never stronger than within
    assert summary["cost_bound"] is None or summary["cost_bound"] <= summary["cost"] + 1e-9


def test_a_first_release_within_the_buckets_reports_them_beside_every_partition() -> None:
    """450 rows, m = 3 (``auto`` under ``keep-buckets``): the summary and the printed
    certificate name the restriction, its bound lies between the release's bound and its
    cost, and the release stays FEASIBLE: the free partition (``exact``) is cheaper. The
    other modes report no restriction."""
    table, schema = republish.synthetic_census(450, seed=3)
    steps = {mode: publish_m_invariant(table, schema, 3, mode=mode, time_limit=3.0,  # type: ignore[arg-type]
                                       rng=np.random.default_rng(1),
                                       first_release="keep-buckets" if mode == "auto"
                                       else "buckets")
             for mode in ("heuristic", "auto", "exact")}
    auto = steps["auto"].summary()
    assert auto["within"] == "within the paper's buckets"
    assert auto["within_status"] in ("OPTIMAL", "FEASIBLE")
    assert auto["within_bound"] is not None
    assert auto["cost_bound"] <= auto["within_bound"] <= auto["cost"] + 1e-9
    assert auto["within_gap"] < auto["cost_gap"]
    assert auto["status"] != "OPTIMAL"
    assert steps["exact"].summary()["cost"] < auto["cost"]
    for mode in ("heuristic", "exact"):
        assert steps[mode].summary()["within_status"] is None
    text = certificate_text(auto)
    assert f"within the paper's buckets, (b) {auto['within_status']}" in text
    restricted = steps["auto"].certificate.restricted
    assert restricted is not None and restricted.step.endswith("within the paper's buckets")
    assert Certificate.from_dict(steps["auto"].certificate.to_dict()) == \
        steps["auto"].certificate


@pytest.mark.parametrize(("within", "status", "bound"), [
    (whole_step.Within("OPTIMAL", 10.0), "OPTIMAL", 10.0),  # the bound meets (b)
    (whole_step.Within("OPTIMAL", 8.0), "FEASIBLE", 8.0),  # a claim its bound does not back
    (whole_step.Within("FEASIBLE", 12.0), "OPTIMAL", 10.0),  # a bound above (b) proves it
    (whole_step.Within("HEURISTIC", None), "HEURISTIC", None),  # nothing proven
])
def test_the_restricted_stage_claims_only_what_its_bound_proves(
        within: whole_step.Within, status: str, bound: float | None) -> None:
    """(b) = 10 over all partitions FEASIBLE with bound 4; within the buckets the status
    follows the restricted bound alone, and the release's status is untouched."""
    from republish.objectives import ReleaseCost

    cost = ReleaseCost(load_hospital().schema, np.zeros((0, 2)))
    certificate = whole_step.release_certificate(
        "m-invariance", cost, 1.0, 0.0, 10.0, status_a="OPTIMAL", bound_a=0.0,
        status_b="FEASIBLE", bound_b=4.0, within=within)
    assert certificate.status == "FEASIBLE" and certificate.stages[1].bound == 4.0
    restricted = certificate.restricted
    assert restricted is not None
    assert (restricted.status, restricted.bound) == (status, bound)
    assert restricted.step == "m-invariance (b) within the paper's buckets"
