"""Counts of the assignment phase of one ε-inclusive release (ε-inclusion paper, Algorithm 1).

The assignment phase (lines 3-16) is decided on counts per *cluster type* (interchangeable
clusters of old rows) and sensitive value before rows are placed. Both the greedy plan
(:class:`republish.heuristics.eps_inclusion.AssignmentPlan`) and the exact model's answer
(:class:`republish.models.eps_assignment.EpsAssignment`) are :class:`PlanCounts`, so the
class lives in the core: models never import heuristics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PlanCounts"]


@dataclass(frozen=True)
class PlanCounts:
    """Counts of the assignment phase (per cluster type ``t`` and value ``v``).

    ``kept[t]`` clusters of type ``t`` are published (the others' rows deferred);
    ``fills[t][v]`` of them take a new row of missing value ``v``; ``substitutes[t][w]``
    new rows of value ``w`` are substitution records in them; ``extras[v]`` new rows join
    old clusters lacking ``v``; ``new_rows[v]`` rows form ``new_clusters`` new clusters;
    ``deferred[v]`` new rows are held back.
    """

    kept: tuple[int, ...]
    fills: tuple[Mapping[int, int], ...]
    substitutes: tuple[Mapping[int, int], ...]
    extras: Mapping[int, int]
    new_rows: Mapping[int, int]
    new_clusters: int
    deferred: Mapping[int, int]
