"""The ε-inclusion algorithm (ε-inclusion paper, §"Algorithm", Algorithm 1).

Release ``n`` from ``T(n)``, the last signature of every row published before and the
sensitive values, in three phases:

1. Division (lines 1-2): rows published before (``S_old``; the product also counts rows
   re-inserted after an absence) are bucketed by their last signature; a bucket holding
   ``k`` rows of its most repeated value becomes ``k`` clusters, each with at most one
   row per value. A cluster is *balanced* when every value of its signature is held by
   one of its rows.
2. Assignment (lines 3-16, the four rules): a cluster missing value ``v`` takes a new row
   of ``v`` (rule 1), else an "appropriate" new row as a *substitution record* published
   with ``v`` (rule 2; here the new row of the most frequent value the cluster can take,
   which keeps the rest eligible); the remaining new rows form new ε-distinct clusters
   (rule 3), the rows that fit no new cluster join a cluster lacking their value (rule 3,
   second part), and every cluster ends with distinct values (rule 4). When neither is
   possible the product defers the row (partial publication); a cluster that can find no
   substitute is deferred with its rows (the paper assumes this never happens).
3. Permutation (lines 17-23, Definition 2): within each group the published sensitive
   values are randomly permuted (:func:`permute_within_groups`).

The assignment is decided on counts (:func:`greedy_plan`, an :class:`AssignmentPlan`,
which the exact model of :mod:`republish.models.eps_assignment` can replace) and then
realized row by row (:func:`realize_plan`), choosing among interchangeable new rows the
ones nearest in a k-d order of the QIs so that groups stay compact in QI space.
"""

from __future__ import annotations

import numpy as np

from republish.heuristics.eps_inclusion.division import Clusters, ClusterType, cluster_types, divide
from republish.heuristics.eps_inclusion.plan import (
    AssignmentPlan,
    compose_new_clusters,
    greedy_plan,
    max_new_clusters,
)
from republish.heuristics.eps_inclusion.realization import Placement, locality_rank, realize_plan

__all__ = [
    "AssignmentPlan",
    "ClusterType",
    "Clusters",
    "Placement",
    "cluster_types",
    "compose_new_clusters",
    "divide",
    "greedy_plan",
    "locality_rank",
    "max_new_clusters",
    "permute_within_groups",
    "realize_plan",
]


def permute_within_groups(
    groups: np.ndarray, values: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Permutation phase (Definition 2): ``values`` randomly permuted within each group."""
    groups = np.asarray(groups)
    values = np.asarray(values)
    by_group = np.argsort(groups, kind="stable")
    shuffled = np.lexsort((rng.random(len(groups)), groups))
    out = values.copy()
    out[by_group] = values[shuffled]
    return out
