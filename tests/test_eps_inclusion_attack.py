"""What the adversary of Definition 6 learns from ε-inclusive releases (docs/eps_inclusion.md).

Exact QIs tell the adversary who sits in which group. Growing signatures then allow a
*difference attack* that the intersection attack (candidate sets of one tuple) misses: a
group whose earlier members are known to hold its old signature gives the rest away.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.principles.eps_inclusion import check_eps_inclusion_sequence, last_signatures
from republish.release import COUNT, GROUP, Release
from republish.schema import QIAttribute, Schema
from republish.solver.eps_inclusion import publish_eps_inclusive

SCHEMA = Schema("name", "disease", (QIAttribute("age"),))
T1 = pd.DataFrame({"name": ["Ann", "Bob"], "age": [30.0, 31.0], "disease": ["asthma", "flu"]})
T2 = pd.DataFrame({"name": ["Ann", "Bob", "Dan"], "age": [30.0, 31.0, 40.0],
                   "disease": ["asthma", "flu", "hiv"]})


def _posterior(releases: list[Release]) -> dict[str, Counter[str]]:
    """Possible worlds: every value vector consistent with each group's published multiset
    and substitution count (a substituted member's true value is unconstrained there)."""
    schema = releases[0].schema
    people = sorted(set().union(*(set(r.assignment[schema.identifier]) for r in releases)))
    domain = sorted(set().union(*(set(r.published[schema.sensitive]) for r in releases)))
    domain.append("<unpublished>")
    groups = []
    for release in releases:
        substituted = dict(zip(release.counterfeits[GROUP], release.counterfeits[COUNT],
                               strict=True))
        for group, members in release.assignment.groupby(GROUP)[schema.identifier]:
            shown = Counter(release.published.loc[release.published[GROUP] == group,
                                                  schema.sensitive])
            groups.append((list(members), shown, int(substituted.get(group, 0))))
    worlds: dict[str, Counter[str]] = {p: Counter() for p in people}
    for values in itertools.product(domain, repeat=len(people)):
        world = dict(zip(people, values, strict=True))
        if all(_consistent([world[m] for m in members], shown, s)
               for members, shown, s in groups):
            for person in people:
                worlds[person][world[person]] += 1
    return worlds


def _consistent(values: list[str], shown: Counter[str], substitutions: int) -> bool:
    for kept in itertools.combinations(range(len(values)), len(values) - substitutions):
        if not Counter(values[i] for i in kept) - shown:
            return True
    return False


def test_an_extra_in_an_old_cluster_is_disclosed() -> None:
    rng = np.random.default_rng(0)
    first = publish_eps_inclusive(T1, SCHEMA, 2, 1, rng=rng, workers=1)
    second = publish_eps_inclusive(T2, SCHEMA, 2, 1, previous=first.state, rng=rng,
                                   workers=1, allow_extras=True)
    releases = [first.release, second.release]
    assert check_eps_inclusion_sequence(releases, SACategories.identity(), 2, 1).ok
    assert second.extra["extras"] == 1 and second.deferred == 0
    # Dan alone cannot form a new group of 2: Algorithm 1 (line 15) adds him to the old
    # group, whose signature grows from {asthma, flu} to {asthma, flu, hiv}.
    signatures = last_signatures(second.release)
    assert signatures["Dan"][1] == {"asthma", "flu", "hiv"}
    # Every candidate-set intersection has at least ε = 2 values ...
    assert min(len(s) for _, s in signatures.values()) >= 2
    # ... yet the exact QIs say Ann and Bob held {asthma, flu} in release 1, so Dan has hiv.
    worlds = _posterior(releases)
    dan = worlds["Dan"]
    assert Fraction(dan["hiv"], sum(dan.values())) == 1
    assert Fraction(worlds["Ann"]["asthma"], sum(worlds["Ann"].values())) == Fraction(1, 2)


def test_without_extras_the_row_is_deferred() -> None:
    rng = np.random.default_rng(0)
    first = publish_eps_inclusive(T1, SCHEMA, 2, 1, rng=rng, workers=1)
    second = publish_eps_inclusive(T2, SCHEMA, 2, 1, previous=first.state, rng=rng,
                                   workers=1, allow_extras=False)
    assert second.extra["extras"] == 0 and second.release.deferred == ("Dan",)
    worlds = _posterior([first.release, second.release])
    assert max(Fraction(c, sum(w.values())) for w in worlds.values() for c in w.values()) \
        == Fraction(1, 2)
