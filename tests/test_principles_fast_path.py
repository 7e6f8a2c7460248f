"""The verifiers' vectorized detection against their row-by-row code.

Every release verifier detects violations on integer codes first and runs its detailed
code only when something is found (:mod:`republish.principles.vectorized`). The tests
below check, on random releases, many of them broken, that

* each detector finds exactly the groups the detailed code reports, so a clean verdict
  of the fast path never hides a violation; and
* every verifier returns the same report with and without ``vectorized``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
from helpers import PLACE_HIERARCHY, THREE_KIND_SCHEMA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.principles import (
    check_counterfeits,
    check_hygiene,
    check_m_invariance_pair,
    check_m_invariance_sequence,
    check_m_uniqueness,
    verify_release,
)
from republish.principles.counterfeits import (
    _box_violations,
    _count_violations,
    _sensitive_violations,
    counterfeit_groups,
)
from republish.principles.hygiene import counterfeit_excess
from republish.principles.m_invariance import _uniqueness_violations, uniqueness_groups
from republish.principles.vectorized import ReleaseArrays
from republish.release import Release, build_release
from republish.tables import validate_table

HIERARCHY = PLACE_HIERARCHY
SCHEMA = THREE_KIND_SCHEMA
VALUES = ("s0", "s1", "s2", "s3", "s4", "s5")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PERSON = st.tuples(
    st.integers(20, 29), st.sampled_from(["a", "b", "c"]), st.sampled_from(HIERARCHY.leaves)
)


@st.composite
def releases(draw: st.DrawFn, number: int = 1) -> Release:
    """Releases as :func:`build_release` makes them: random groups, random counterfeits."""
    n = draw(st.integers(1, 14))
    people = draw(st.lists(PERSON, min_size=n, max_size=n))
    values = draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))
    frame = pd.DataFrame(people, columns=["age", "edu", "place"])
    frame.insert(0, "id", [f"p{i}" for i in range(n)])
    frame["sa"] = values
    table = validate_table(frame, SCHEMA)
    labels = draw(st.lists(st.integers(0, draw(st.integers(0, n - 1))), min_size=n, max_size=n))
    fakes = {
        label: draw(st.lists(st.sampled_from(VALUES + ("zz",)), max_size=3))
        for label in sorted(set(labels))
    }
    seed = draw(st.integers(0, 2**32 - 1))
    return build_release(number, table, labels, SCHEMA, fakes, rng=np.random.default_rng(seed))


BREAKS = [
    "none", "none", "bump count", "drop count", "add count", "drop row", "duplicate row",
    "counterfeit", "counterfeit only group", "change value", "narrow cell", "widen cell",
    "move real row", "unknown qi", "duplicate identifier", "string groups", "counterfeits last",
    "counterfeits first", "sorted", "identifier column",
]


def _excess_rows(release: Release) -> list[int]:
    """Positions of rows that can be taken as the counterfeits (hygiene's definition)."""
    _, excess = counterfeit_excess(release)
    left = Counter(excess)
    rows = []
    for position, key in enumerate(zip(release.published["group"], release.published["sa"],
                                       strict=True)):
        if left[key] > 0:
            left[key] -= 1
            rows.append(position)
    return rows


@st.composite
def broken_releases(draw: st.DrawFn) -> tuple[Release, str]:
    """A built release, then perhaps one alteration of its tables."""
    release = draw(releases())
    published = release.published.copy()
    counts = release.counterfeits.copy()
    assignment = release.assignment.copy()
    groups = sorted(set(published["group"]))
    kind = draw(st.sampled_from(BREAKS))
    row = draw(st.integers(0, len(published) - 1))
    if kind == "bump count" and len(counts):
        counts.loc[draw(st.integers(0, len(counts) - 1)), "count"] += draw(
            st.sampled_from([-2, -1, 1]))
    elif kind == "drop count" and len(counts):
        counts = counts.drop(index=draw(st.integers(0, len(counts) - 1)))
    elif kind == "add count":
        group = draw(st.sampled_from([*groups, 999]))
        counts = pd.concat([counts, pd.DataFrame({"group": [group], "count": [1]})])
    elif kind == "drop row":
        published = published.drop(index=row)
    elif kind == "duplicate row":
        published = pd.concat([published, published.loc[[row]]])
    elif kind in ("counterfeit", "counterfeit only group"):
        fake = published.loc[[row]].copy()
        fake["group"] = 999 if kind == "counterfeit only group" else draw(st.sampled_from(groups))
        fake["sa"] = draw(st.sampled_from(VALUES))
        published = pd.concat([published, fake])
    elif kind == "change value":
        published.loc[row, "sa"] = draw(st.sampled_from(VALUES + ("zz",)))
    elif kind in ("narrow cell", "widen cell"):
        column, cell = draw(st.sampled_from(
            [("place", "x1"), ("place", "*"), ("edu", "a"), ("edu", "[a, c]"), ("age", "25"),
             ("age", "[0, 99]"), ("age", "nonsense")]))
        chosen = published["group"] == published.loc[row, "group"]
        if kind == "narrow cell":
            chosen = published.index == row
        published.loc[chosen, column] = cell
    elif kind == "move real row":
        assignment.loc[draw(st.integers(0, len(assignment) - 1)), "group"] = draw(
            st.sampled_from([*groups, 999]))
    elif kind == "unknown qi":
        assignment.loc[draw(st.integers(0, len(assignment) - 1)), "edu"] = "zzz"
    elif kind == "duplicate identifier" and len(assignment) > 1:
        assignment.loc[1, "id"] = assignment.loc[0, "id"]
    elif kind == "string groups":
        published["group"] = published["group"].astype(str)
        assignment["group"] = assignment["group"].astype(str)
    elif kind == "identifier column":
        published["sa"] = assignment["id"].to_numpy()[np.arange(len(published)) % len(assignment)]
    elif kind in ("counterfeits last", "counterfeits first", "sorted"):
        fake = _excess_rows(release)
        real = [i for i in range(len(published)) if i not in set(fake)]
        order = {"counterfeits last": real + fake, "counterfeits first": fake + real}.get(kind)
        if order is None:
            order = sorted(range(len(published)),
                           key=lambda i: (published.loc[i, "group"], i in set(fake)))
        published = published.iloc[order]
    counts = counts.astype({"count": np.int64})
    if kind != "string groups":
        counts = counts.astype({"group": np.int64})
    broken = dataclasses.replace(
        release,
        published=published.reset_index(drop=True),
        counterfeits=counts.reset_index(drop=True),
        assignment=assignment.reset_index(drop=True),
    )
    return broken, kind


def _groups(violations: list[Any]) -> set[Any]:
    return {v.group for v in violations}


@SETTINGS
@given(case=broken_releases(), m=st.integers(1, 4))
def test_detectors_find_exactly_the_reported_groups(case: tuple[Release, str], m: int) -> None:
    release, kind = case
    arrays = ReleaseArrays(release)
    assert arrays.vectorizable == (kind != "string groups")
    if not arrays.vectorizable:
        assert counterfeit_groups(arrays) == (None, None, None)
        return
    assert uniqueness_groups(arrays, m) == _groups(_uniqueness_violations(release, m))
    published_sizes = Counter(release.published["group"].tolist())
    real_ids: dict[Any, list[str]] = {}
    for ident, group in zip(release.assignment["id"], release.assignment["group"], strict=True):
        real_ids.setdefault(group, []).append(str(ident))
    count, box, sensitive = counterfeit_groups(arrays)
    assert count == _groups(_count_violations(release, published_sizes, real_ids))
    assert box == _groups(_box_violations(release, real_ids))
    assert sensitive == _groups(_sensitive_violations(release))


@SETTINGS
@given(case=broken_releases(), m=st.integers(1, 4),
       alpha=st.sampled_from([1e-6, 0.05, 0.5, 0.95]))
def test_release_checks_agree_with_row_by_row_code(
    case: tuple[Release, str], m: int, alpha: float
) -> None:
    release, kind = case
    assert check_m_uniqueness(release, m) == check_m_uniqueness(release, m, vectorized=False)
    fast = check_counterfeits(release)
    assert fast == check_counterfeits(release, vectorized=False)
    assert check_hygiene(release, alpha) == check_hygiene(release, alpha, vectorized=False)
    report = verify_release(release, m, alpha=alpha)
    assert report == verify_release(release, m, alpha=alpha, vectorized=False)
    if kind in ("duplicate row", "counterfeit only group"):
        assert not fast.ok


@st.composite
def sequences(draw: st.DrawFn) -> tuple[list[Release], int]:
    """Releases of fixed buckets, each publishing its signature (so m-invariant), then
    perhaps a row moved to another bucket or a counterfeit added or dropped."""
    m = draw(st.integers(1, 3))
    buckets: list[tuple[frozenset[str], list[tuple[str, str, tuple[Any, ...]]]]] = []
    person = 0
    for _ in range(draw(st.integers(1, 4))):
        values = draw(st.sets(st.sampled_from(VALUES), min_size=max(m, 1), max_size=4))
        held = draw(st.lists(st.sampled_from(sorted(values)), min_size=1,
                             max_size=len(values), unique=True))
        members = [(f"p{person + i}", value, draw(PERSON)) for i, value in enumerate(held)]
        person += len(held)
        buckets.append((frozenset(values), members))
    out: list[Release] = []
    for number in range(1, draw(st.integers(2, 4)) + 1):
        rows: list[tuple[Any, ...]] = []
        labels: list[int] = []
        fakes: dict[int, list[str]] = {}
        for label, (signature, members) in enumerate(buckets):
            present = [p for p in members if draw(st.booleans())]
            for ident, value, qis in present:
                rows.append((ident, *qis, value))
                labels.append(label)
            if present:
                fakes[label] = sorted(signature - {value for _, value, _ in present})
        if not rows:
            ident, value, qis = buckets[0][1][0]
            rows, labels = [(ident, *qis, value)], [0]
            fakes = {0: sorted(buckets[0][0] - {value})}
        kind = draw(st.sampled_from(["none", "none", "move", "add", "drop"]))
        if kind == "move" and len(set(labels)) > 1:
            labels[draw(st.integers(0, len(labels) - 1))] = draw(st.sampled_from(labels))
        elif kind == "add":
            fakes.setdefault(draw(st.sampled_from(labels)), []).append("zz")
        elif kind == "drop" and any(fakes.values()):
            fakes[draw(st.sampled_from(sorted(g for g, v in fakes.items() if v)))].pop()
        fakes = {label: values for label, values in fakes.items() if label in labels}
        frame = pd.DataFrame(rows, columns=["id", "age", "edu", "place", "sa"])
        table = validate_table(frame, SCHEMA)
        seed = draw(st.integers(0, 2**32 - 1))
        out.append(build_release(number, table, labels, SCHEMA, fakes,
                                 rng=np.random.default_rng(seed)))
    return out, m


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sequences())
def test_sequence_checks_agree_with_row_by_row_code(case: tuple[list[Release], int]) -> None:
    sequence, m = case
    for across_gaps in (True, False):
        fast = check_m_invariance_sequence(sequence, m, across_gaps=across_gaps)
        slow = check_m_invariance_sequence(sequence, m, across_gaps=across_gaps,
                                           vectorized=False)
        assert fast == slow
    for previous, current in zip(sequence, sequence[1:], strict=False):
        pair = check_m_invariance_pair(previous, current, m)
        assert pair == check_m_invariance_pair(previous, current, m, vectorized=False)
        report = verify_release(current, m, previous=previous)
        assert report == verify_release(current, m, previous=previous, vectorized=False)


def test_signature_change_is_reported_by_both_paths() -> None:
    """A deterministic case of the property above: one row changes its signature."""
    frame = pd.DataFrame(
        [("a", 21, "a", "x1", "s0"), ("b", 22, "b", "x2", "s1"), ("c", 23, "c", "y1", "s2")],
        columns=["id", "age", "edu", "place", "sa"],
    )
    table = validate_table(frame, SCHEMA)
    first = build_release(1, table, [0, 0, 1], SCHEMA, {1: ["s3"]},
                          rng=np.random.default_rng(0))
    second = build_release(2, table, [0, 1, 1], SCHEMA, {0: ["s1"]},
                           rng=np.random.default_rng(1))
    fast = check_m_invariance_pair(first, second, 2)
    assert fast == check_m_invariance_pair(first, second, 2, vectorized=False)
    changed = {r for v in fast.violations if "had signature" in v.reason for r in v.rows}
    assert changed == {"b", "c"}
