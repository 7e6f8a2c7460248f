"""Issue 19: cheap versions of the m-invariance paper's Fig. 4 and Fig. 8a (the full
runs are benchmarks/audit_fig4_paper_scale.py and benchmarks/m_invariance_fig8a.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import make_knowledge
from republish.datasets import dynamic_series, synthetic_census
from republish.generalization import generalize
from republish.heuristics.mondrian import mondrian_table
from republish.metrics import query_error
from republish.solver.m_invariance import publish_m_invariant


def _knowledge(table: pd.DataFrame, series: list[pd.DataFrame]):  # type: ignore[no-untyped-def]
    position = pd.Series(np.arange(len(table)), index=table["id"].to_numpy())
    presence = np.zeros((len(table), len(series)), dtype=bool)
    for j, microdata in enumerate(series):
        presence[position.loc[microdata["id"].to_numpy()].to_numpy(), j] = True
    used = presence.any(axis=1)
    return used, presence


def test_fig4_independent_l_diverse_releases_leak_m_invariant_ones_do_not() -> None:
    table, schema = synthetic_census(900, seed=5)
    series = dynamic_series(table, 300, 60, 6, seed=5)
    used, presence = _knowledge(table, series)
    knowledge = make_knowledge(table[used], presence[used], schema, with_truth=True)
    independent = [generalize(t, mondrian_table(t, schema, 2).groups, schema, "interval")
                   for t in series]
    assert intersection_attack(independent, knowledge).vulnerable.sum() > 0
    rng = np.random.default_rng(5)
    state, releases = None, []
    for microdata in series:
        step = publish_m_invariant(microdata, schema, 2, state, rng=rng, validated=True,
                                   mode="heuristic")
        state = step.state
        releases.append(step.release)
    audit = intersection_attack(releases, knowledge)
    assert audit.vulnerable.sum() == 0 and audit.inconsistent.sum() == 0


def test_fig8a_query_error_falls_as_selectivity_grows() -> None:
    table, schema = synthetic_census(3000, seed=6)
    release = publish_m_invariant(table, schema, 10, rng=np.random.default_rng(6),
                                  validated=True, mode="heuristic").release
    errors = [query_error(table, release.published, release.counterfeits, schema, count=300,
                          selectivity=theta, seed=1) for theta in (0.01, 0.2)]
    assert errors[0] > errors[1]
