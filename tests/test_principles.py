"""The principles as verifiers, against brute force written from the definitions.

The brute-force checks below deliberately avoid the library's helpers (grouping,
rendering, signatures): they loop over plain records and restate each definition.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import PLACE_HIERARCHY, THREE_KIND_SCHEMA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.principles import (
    check_counterfeits,
    check_hygiene,
    check_k_anonymity,
    check_l_diversity,
    check_m_eligibility,
    check_m_invariance_pair,
    check_m_invariance_sequence,
    check_m_uniqueness,
    verify_release,
)
from republish.release import Release, build_release
from republish.schema import QIAttribute, Schema, make_schema
from republish.tables import validate_table

HIERARCHY = PLACE_HIERARCHY
SCHEMA = THREE_KIND_SCHEMA
QIS = SCHEMA.qi_names
SA_VALUES = ("s0", "s1", "s2", "s3")
EXTRA_VALUES = ("c0", "c1", "c2", "c3", "c4")
SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# ---------------------------------------------------------------- brute force


def bf_covers(qi: QIAttribute, cell: str, values: list[Any]) -> bool:
    """Whether a published cell's range contains every raw value, from the Contracts."""
    if cell == "*":
        return True
    if qi.kind == "hierarchy":
        paths = {path[0]: path for path in HIERARCHY.paths}
        return all(cell in paths[v] for v in values)
    if cell.startswith("["):
        first, last = (part.strip() for part in cell[1:-1].split(","))
    else:
        first = last = cell
    if qi.kind == "numeric":
        return all(float(first) <= v <= float(last) for v in values)
    order = list(qi.order or ())
    return all(order.index(first) <= order.index(v) <= order.index(last) for v in values)


def cells(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row[q]) for q in QIS)


def bf_groups(published: pd.DataFrame, by_group: bool) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in published.to_dict("records"):
        groups.setdefault(row["group"] if by_group else cells(row), []).append(row)
    return groups


def bf_bad_k(published: pd.DataFrame, k: int, by_group: bool) -> set[Any]:
    bad = set()
    for key, rows in bf_groups(published, by_group).items():
        if len(rows) < k or len({cells(r) for r in rows}) > 1:
            bad.add(key)
    return bad


def bf_bad_l(published: pd.DataFrame, l: int, by_group: bool) -> set[Any]:  # noqa: E741
    bad = set()
    for key, rows in bf_groups(published, by_group).items():
        if len({cells(r) for r in rows}) > 1:
            bad.add(key)
        for value in {r["sa"] for r in rows}:
            if sum(r["sa"] == value for r in rows) > len(rows) / l:
                bad.add(key)
    return bad


def bf_bad_m_unique(release: Release, m: int) -> set[Any]:
    bad = set()
    for key, rows in bf_groups(release.published, True).items():
        values = [r["sa"] for r in rows]
        if len(values) < m or len(set(values)) != len(values):
            bad.add(key)
    return bad


def bf_counterfeits_ok(release: Release) -> bool:
    published = release.published.to_dict("records")
    real = release.assignment.to_dict("records")
    published_groups = [r["group"] for r in published]
    real_groups = [r["group"] for r in real]
    if any(real_groups.count(g) == 0 for g in published_groups):
        return False
    if any(g not in published_groups for g in real_groups):
        return False
    listed = list(zip(release.counterfeits["group"], release.counterfeits["count"], strict=True))
    if len({g for g, _ in listed}) != len(listed):
        return False
    expected = {g: published_groups.count(g) - real_groups.count(g) for g in published_groups}
    if any(e < 0 for e in expected.values()):
        return False
    if dict(listed) != {g: e for g, e in expected.items() if e > 0}:
        return False
    for group in set(published_groups):
        members = [r for r in real if r["group"] == group]
        shown_cells = {cells(r) for r in published if r["group"] == group}
        if len(shown_cells) != 1:
            return False
        (box,) = shown_cells
        if not all(
            bf_covers(qi, cell, [r[qi.name] for r in members])
            for qi, cell in zip(SCHEMA.qis, box, strict=True)
        ):
            return False
        shown = Counter(r["sa"] for r in published if r["group"] == group)
        if any(shown[v] < c for v, c in Counter(r["sa"] for r in members).items()):
            return False
    return True


def bf_signatures(release: Release) -> dict[str, frozenset[str]]:
    published = release.published.to_dict("records")
    return {
        row["id"]: frozenset(p["sa"] for p in published if p["group"] == row["group"])
        for row in release.assignment.to_dict("records")
    }


# ---------------------------------------------------------------- strategies


@st.composite
def microdata(draw: st.DrawFn, min_rows: int = 1, max_rows: int = 9) -> pd.DataFrame:
    n = draw(st.integers(min_rows, max_rows))
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(20, 29),
                st.sampled_from(["a", "b", "c"]),
                st.sampled_from(HIERARCHY.leaves),
                st.sampled_from(SA_VALUES),
            ),
            min_size=n,
            max_size=n,
        )
    )
    frame = pd.DataFrame(rows, columns=["age", "edu", "place", "sa"])
    frame.insert(0, "id", [f"p{i}" for i in range(n)])
    return validate_table(frame, SCHEMA)


@st.composite
def releases(draw: st.DrawFn, counterfeits: bool = True) -> Release:
    table = draw(microdata())
    n = len(table)
    top = draw(st.integers(0, n - 1))
    labels = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    fake: dict[int, list[str]] = {}
    if counterfeits:
        for label in sorted(set(labels)):
            fake[label] = draw(st.lists(st.sampled_from(SA_VALUES + ("zz",)), max_size=2))
    seed = draw(st.integers(0, 2**32 - 1))
    return build_release(
        1, table, labels, SCHEMA, counterfeit_values=fake, rng=np.random.default_rng(seed)
    )


@st.composite
def published_tables(draw: st.DrawFn) -> pd.DataFrame:
    """Published tables, sometimes with a row whose cells or value were altered."""
    published = draw(releases()).published.copy()
    kind = draw(st.sampled_from(["none", "none", "cell", "copy cells", "value"]))
    row = draw(st.integers(0, len(published) - 1))
    if kind == "cell":
        published.loc[row, "age"] = "[0, 99]"
    elif kind == "copy cells":
        source = draw(st.integers(0, len(published) - 1))
        published.loc[row, QIS] = published.loc[source, QIS].to_numpy()
    elif kind == "value":
        published.loc[row, "sa"] = draw(st.sampled_from(SA_VALUES))
    return published


# ---------------------------------------------------------------- k-anonymity, l-diversity


@SETTINGS
@given(published=published_tables(), k=st.integers(1, 4), by_group=st.booleans())
def test_k_anonymity_matches_definition(published: pd.DataFrame, k: int, by_group: bool) -> None:
    report = check_k_anonymity(published, SCHEMA, k, group_column="group" if by_group else None)
    expected = bf_bad_k(published, k, by_group)
    assert report.ok == (not expected)
    assert {v.group for v in report.violations} == expected
    assert report.principle == "k-anonymity"


@SETTINGS
@given(published=published_tables(), l=st.integers(1, 4), by_group=st.booleans())
def test_l_diversity_matches_definition(
    published: pd.DataFrame, l: int, by_group: bool  # noqa: E741
) -> None:
    report = check_l_diversity(published, SCHEMA, l, group_column="group" if by_group else None)
    expected = bf_bad_l(published, l, by_group)
    assert report.ok == (not expected)
    assert {v.group for v in report.violations} == expected


def test_k_anonymity_without_group_column_groups_by_cells() -> None:
    published = pd.DataFrame(
        {
            "age": ["[20, 29]", "[20, 29]", "25"],
            "edu": ["a", "a", "a"],
            "place": ["X", "X", "X"],
            "sa": ["s0", "s1", "s0"],
        }
    )
    report = check_k_anonymity(published, SCHEMA, 2)
    assert not report.ok
    (violation,) = report.violations
    assert violation.group == ("25", "a", "X")
    assert violation.rows == (2,)
    assert "fewer than k = 2" in violation.reason
    assert check_k_anonymity(published.iloc[:2], SCHEMA, 2).ok


def test_l_diversity_names_value_count_and_limit() -> None:
    published = pd.DataFrame(
        {
            "group": [1, 1, 1, 2, 2],
            "age": ["[20, 29]"] * 3 + ["25"] * 2,
            "edu": ["a"] * 5,
            "place": ["X"] * 5,
            "sa": ["s0", "s0", "s1", "s0", "s1"],
        }
    )
    report = check_l_diversity(published, SCHEMA, 2)
    (violation,) = report.violations
    assert violation.group == 1
    assert "'s0'" in violation.reason and "2 of 3" in violation.reason
    assert "3/2" in violation.reason
    assert violation.rows == (0, 1)
    assert check_l_diversity(published, SCHEMA, 1).ok


def test_parameters_and_columns_are_validated() -> None:
    published = pd.DataFrame(
        {"group": [1], "age": ["1"], "edu": ["a"], "place": ["X"], "sa": ["s0"]}
    )
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ParameterError):
            check_k_anonymity(published, SCHEMA, bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError):
            check_l_diversity(published, SCHEMA, bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError):
            check_m_eligibility(["a"], bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="sa"):
        check_k_anonymity(published.drop(columns="sa"), SCHEMA, 1)
    assert check_k_anonymity(published, SCHEMA, np.int64(1)).ok  # type: ignore[arg-type]


# ---------------------------------------------------------------- m-eligibility, m-uniqueness


@SETTINGS
@given(values=st.lists(st.sampled_from(SA_VALUES), max_size=12), m=st.integers(1, 5))
def test_m_eligibility_matches_definition(values: list[str], m: int) -> None:
    report = check_m_eligibility(pd.Series(values), m)
    too_many = {v for v in set(values) if values.count(v) > len(values) / m}
    assert {v.reason.split("'")[1] for v in report.violations} == too_many
    assert all(v.group is None for v in report.violations)
    for violation in report.violations:
        value = violation.reason.split("'")[1]
        assert f"has {values.count(value)} of {len(values)} rows" in violation.reason
        assert [values[i] for i in violation.rows] == [value] * values.count(value)


def test_m_eligibility_message() -> None:
    report = check_m_eligibility(["flu", "flu", "flu", "cold"], 2)
    (violation,) = report.violations
    assert "'flu'" in violation.reason and "3 of 4" in violation.reason
    assert "4/2 = 2" in violation.reason
    assert check_m_eligibility(["flu", "flu", "cold", "ulcer"], 2).ok


@SETTINGS
@given(release=releases(), m=st.integers(1, 3))
def test_m_uniqueness_matches_definition(release: Release, m: int) -> None:
    report = check_m_uniqueness(release, m)
    expected = bf_bad_m_unique(release, m)
    assert report.ok == (not expected)
    assert {v.group for v in report.violations} == expected
    for violation in report.violations:
        members = set(release.assignment.loc[release.assignment["group"] == violation.group, "id"])
        assert set(violation.rows) <= members


# ---------------------------------------------------------------- counterfeits, hygiene


MUTATIONS = [
    "none", "bump count", "drop count", "add count", "drop row", "add counterfeit",
    "add counterfeit and count", "counterfeit only group", "change value", "change cell",
]


@st.composite
def mutated_releases(draw: st.DrawFn) -> tuple[Release, str]:
    release = draw(releases())
    published = release.published.copy()
    counts = release.counterfeits.copy()
    groups = sorted(set(published["group"]))
    kind = draw(st.sampled_from(MUTATIONS))
    row = draw(st.integers(0, len(published) - 1))
    if kind == "bump count" and len(counts):
        index = draw(st.integers(0, len(counts) - 1))
        counts.loc[index, "count"] += draw(st.sampled_from([-1, 1]))
    elif kind == "drop count" and len(counts):
        counts = counts.drop(index=draw(st.integers(0, len(counts) - 1)))
    elif kind == "add count":
        group = draw(st.one_of(st.just(999), st.sampled_from(groups)))
        counts = pd.concat([counts, pd.DataFrame({"group": [group], "count": [1]})])
    elif kind == "drop row":
        published = published.drop(index=row)
    elif kind in ("add counterfeit", "add counterfeit and count", "counterfeit only group"):
        group = 999 if kind == "counterfeit only group" else draw(st.sampled_from(groups))
        fake = published.loc[[row]].copy()
        fake["group"] = group
        fake["sa"] = draw(st.sampled_from(SA_VALUES + ("zz",)))
        published = pd.concat([published, fake])
        if kind != "add counterfeit":
            listed = counts["group"] == group
            if listed.any():
                counts.loc[listed, "count"] += 1
            else:
                counts = pd.concat([counts, pd.DataFrame({"group": [group], "count": [1]})])
    elif kind == "change value":
        published.loc[row, "sa"] = draw(st.sampled_from(SA_VALUES + ("zz",)))
    elif kind == "change cell":
        published.loc[row, "place"] = "*"
    mutated = dataclasses.replace(
        release,
        published=published.reset_index(drop=True),
        counterfeits=counts.astype({"group": np.int64, "count": np.int64}).reset_index(drop=True),
    )
    return mutated, kind


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated_releases())
def test_counterfeits_match_definition(case: tuple[Release, str]) -> None:
    release, kind = case
    report = check_counterfeits(release)
    assert report.ok == bf_counterfeits_ok(release), (kind, report.violations)
    if kind == "none":
        assert report.ok


@SETTINGS
@given(release=releases())
def test_built_releases_pass_hygiene(release: Release) -> None:
    assert check_hygiene(release).ok


def _release(
    groups: list[list[tuple[str, int, str, str, str]]], fakes: dict[int, list[str]], seed: int = 0
) -> Release:
    """A release from explicit groups of (id, age, edu, place, sa) rows."""
    rows = [row for group in groups for row in group]
    labels = [g for g, group in enumerate(groups) for _ in group]
    frame = pd.DataFrame(rows, columns=["id", "age", "edu", "place", "sa"])
    table = validate_table(frame, SCHEMA)
    return build_release(1, table, labels, SCHEMA, fakes, rng=np.random.default_rng(seed))


def _small_release() -> Release:
    return _release(
        [
            [("Ann", 21, "a", "x1", "s0"), ("Ben", 23, "b", "x2", "s1")],
            [("Cid", 25, "c", "y1", "s2")],
        ],
        {0: ["s2"], 1: ["s0"]},
    )


def test_well_formed_release_passes_everything() -> None:
    release = _small_release()
    assert check_counterfeits(release).ok
    assert check_hygiene(release).ok
    assert check_m_uniqueness(release, 2).ok
    assert verify_release(release, 2).ok
    assert not check_m_uniqueness(release, 3).ok


def test_group_with_only_counterfeits() -> None:
    release = _small_release()
    fake = release.published.iloc[[0, 0]].copy()
    fake["group"] = 7
    fake["sa"] = ["s0", "s1"]
    broken = dataclasses.replace(
        release,
        published=pd.concat([release.published, fake], ignore_index=True),
        counterfeits=pd.concat(
            [release.counterfeits, pd.DataFrame({"group": [7], "count": [2]})], ignore_index=True
        ),
    )
    report = check_counterfeits(broken)
    assert [v.group for v in report.violations] == [7]
    assert "no real row" in report.violations[0].reason
    assert not verify_release(broken, 2).ok


def test_wrong_counterfeit_count() -> None:
    release = _small_release()
    counts = release.counterfeits.copy()
    counts.loc[0, "count"] = 2
    report = check_counterfeits(dataclasses.replace(release, counterfeits=counts))
    (violation,) = report.violations
    assert violation.group == counts.loc[0, "group"]
    assert "2 counterfeit(s)" in violation.reason and "i.e. 1" in violation.reason
    zero = counts.copy()
    zero.loc[0, "count"] = 0
    report = check_counterfeits(dataclasses.replace(release, counterfeits=zero))
    assert any("must be positive" in v.reason for v in report.violations)
    missing = counts.iloc[1:]
    report = check_counterfeits(dataclasses.replace(release, counterfeits=missing))
    assert any("R(j) omits it" in v.reason for v in report.violations)
    twice = pd.concat([release.counterfeits, release.counterfeits.iloc[:1]], ignore_index=True)
    report = check_counterfeits(dataclasses.replace(release, counterfeits=twice))
    assert [v.reason for v in report.violations] == [
        f"R(j) lists group {twice.loc[0, 'group']} more than once"
    ]
    absent = pd.concat(
        [release.counterfeits, pd.DataFrame({"group": [9], "count": [1]})], ignore_index=True
    )
    report = check_counterfeits(dataclasses.replace(release, counterfeits=absent))
    assert [v.group for v in report.violations] == [9]
    assert "absent from T*(j)" in report.violations[0].reason


def test_counterfeit_with_a_different_box() -> None:
    release = _small_release()
    published = release.published.copy()
    ann_group = int(release.assignment.loc[release.assignment["id"] == "Ann", "group"].iloc[0])
    fake_row = published.index[(published["group"] == ann_group) & (published["sa"] == "s2")][0]
    published.loc[fake_row, "age"] = "[21, 30]"
    report = check_counterfeits(dataclasses.replace(release, published=published))
    (violation,) = report.violations
    assert violation.group == ann_group
    assert "[21, 30]" in violation.reason and "[21, 23]" in violation.reason
    assert fake_row in violation.rows
    # the whole group moved to a wider box: still a valid generalization (the paper's
    # Table 3a does this for Bob's group)
    published.loc[published["group"] == ann_group, "age"] = "[21, 30]"
    assert check_counterfeits(dataclasses.replace(release, published=published)).ok
    # a box that misses a real row's value is not
    published.loc[published["group"] == ann_group, "age"] = "[22, 30]"
    report = check_counterfeits(dataclasses.replace(release, published=published))
    (violation,) = report.violations
    assert "does not cover its real rows" in violation.reason and "[21, 23]" in violation.reason
    assert set(violation.rows) == {"Ann", "Ben"}


def test_published_values_must_cover_real_values() -> None:
    release = _small_release()
    published = release.published.copy()
    published.loc[published["sa"] == "s1", "sa"] = "s3"
    report = check_counterfeits(dataclasses.replace(release, published=published))
    (violation,) = report.violations
    assert "'s1'" in violation.reason and violation.rows == ("Ben",)


def test_identifier_column_left_in_published_table() -> None:
    release = _small_release()
    leaked = release.published.copy()
    leaked.insert(0, "id", ["Ann", "Ben", "Cid", "-", "-"])
    report = check_hygiene(dataclasses.replace(release, published=leaked))
    assert any("identifier column 'id' is published" in v.reason for v in report.violations)
    renamed = release.published.copy()
    renamed["patient"] = ["Ann", "Ben", "Cid", "Ann", "Ben"]
    report = check_hygiene(dataclasses.replace(release, published=renamed))
    reasons = " ".join(v.reason for v in report.violations)
    assert "['patient'] are not part of T*(j)" in reasons
    assert "'patient' holds every identifier" in reasons
    reordered = release.published[["group", "sa", "age", "edu", "place"]]
    report = check_hygiene(dataclasses.replace(release, published=reordered))
    assert [v.reason.startswith("columns are in the order") for v in report.violations] == [True]
    missing = release.published.drop(columns="edu")
    assert "missing" in check_hygiene(dataclasses.replace(release, published=missing)).summary()
    assert not verify_release(dataclasses.replace(release, published=leaked), 2).ok


def _many_groups(groups: int = 30, seed: int = 1) -> Release:
    """``groups`` 3-unique groups: two real rows (s0, s1) and one counterfeit (s2)."""
    rng = np.random.default_rng(seed)
    members = []
    for g in range(groups):
        age = int(rng.integers(20, 29))
        members.append(
            [(f"a{g}", age, "a", "x1", "s0"), (f"b{g}", age + 1, "b", "x2", "s1")]
        )
    return _release(members, {g: ["s2"] for g in range(groups)}, seed=seed)


def _reordered(release: Release, order: np.ndarray) -> Release:
    return dataclasses.replace(
        release, published=release.published.iloc[order].reset_index(drop=True)
    )


def test_counterfeits_all_appended_at_the_end() -> None:
    release = _many_groups()
    assert check_hygiene(release).ok
    fake = (release.published["sa"] == "s2").to_numpy()
    appended = _reordered(release, np.r_[np.flatnonzero(~fake), np.flatnonzero(fake)])
    report = check_hygiene(appended)
    assert any("last 30 rows of T*(j) are exactly its counterfeits" in v.reason
               for v in report.violations)
    assert not verify_release(appended, 3).ok
    prepended = _reordered(release, np.r_[np.flatnonzero(fake), np.flatnonzero(~fake)])
    assert any("first 30 rows" in v.reason for v in check_hygiene(prepended).violations)
    # a table too small to tell a layout from chance is not flagged
    small = _many_groups(groups=3)
    fake = (small.published["sa"] == "s2").to_numpy()
    assert check_hygiene(_reordered(small, np.r_[np.flatnonzero(~fake), np.flatnonzero(fake)])).ok


def test_counterfeit_last_in_every_group_and_sorted_tables() -> None:
    release = _many_groups()
    published = release.published
    rng = np.random.default_rng(5)
    group_order = rng.permutation(sorted(set(published["group"])))
    order = []
    for group in group_order:
        rows = np.flatnonzero(published["group"].to_numpy() == group)
        order.extend(sorted(rows, key=lambda i: published.loc[i, "sa"] == "s2"))
    report = check_hygiene(_reordered(release, np.asarray(order)))
    reasons = [v.reason for v in report.violations]
    assert any("has a counterfeit as its last row" in r for r in reasons)
    assert not any("sorted by group" in r or "last 30 rows" in r for r in reasons)
    by_group = published.assign(fake=published["sa"] == "s2").sort_values(["group", "fake"])
    report = check_hygiene(_reordered(release, by_group.index.to_numpy()))
    assert any("sorted by group" in v.reason for v in report.violations)
    real_last = published.assign(fake=published["sa"] != "s2").sort_values(["group", "fake"])
    report = check_hygiene(_reordered(release, real_last.index.to_numpy()))
    reasons = [v.reason for v in report.violations]
    assert any("as its first row" in r for r in reasons)
    assert not any("sorted by group" in r for r in reasons)


def test_hygiene_alpha_is_validated() -> None:
    with pytest.raises(ParameterError):
        check_hygiene(_small_release(), alpha=0.0)


# ---------------------------------------------------------------- m-invariance


def _paper_schema() -> Schema:
    return make_schema("name", "disease", ["age", "zip"])


def _paper_release(number: int, groups: list[list[tuple[str, int, int, str]]],
                   fakes: dict[int, list[str]] | None = None) -> Release:
    rows = [row for group in groups for row in group]
    labels = [g for g, group in enumerate(groups) for _ in group]
    table = validate_table(pd.DataFrame(rows, columns=["name", "age", "zip", "disease"]),
                           _paper_schema())
    return build_release(number, table, labels, _paper_schema(), fakes or {},
                         rng=np.random.default_rng(number))


def _paper_tables() -> tuple[Release, Release, Release]:
    """Tables 1b, 2b and 3a of the m-invariance paper (§1)."""
    bob, david = ("Bob", 21, 12000, "dyspepsia"), ("David", 23, 25000, "gastritis")
    gary, jane = ("Gary", 41, 20000, "flu"), ("Jane", 37, 33000, "dyspepsia")
    linda, steve = ("Linda", 43, 26000, "gastritis"), ("Steve", 56, 34000, "gastritis")
    emily, mary = ("Emily", 25, 21000, "flu"), ("Mary", 46, 30000, "gastritis")
    ray, tom, vince = ("Ray", 54, 31000, "dyspepsia"), ("Tom", 60, 44000, "gastritis"), (
        "Vince", 65, 36000, "flu")
    first = _paper_release(1, [
        [bob, ("Alice", 22, 14000, "bronchitis")],
        [("Andy", 24, 18000, "flu"), david],
        [gary, ("Helen", 36, 27000, "gastritis")],
        [jane, ("Ken", 40, 35000, "flu"), linda],
        [("Paul", 52, 33000, "dyspepsia"), steve],
    ])
    second = _paper_release(2, [
        [bob, david], [emily, jane, linda], [gary, mary], [ray, steve], [tom, vince],
    ])
    counterfeited = _paper_release(2, [
        [bob], [david, emily], [jane, linda], [gary, mary], [ray, steve], [tom, vince],
    ], {0: ["bronchitis"], 2: ["flu"]})
    return first, second, counterfeited


def test_paper_example_5_and_table_3() -> None:
    first, second, counterfeited = _paper_tables()
    assert check_m_uniqueness(first, 2).ok and check_m_uniqueness(second, 2).ok
    report = check_m_invariance_pair(first, second, 2)
    bob_group = int(second.assignment.set_index("name").loc["Bob", "group"])
    assert {v.group for v in report.violations} == {bob_group}
    assert {r for v in report.violations for r in v.rows} == {"Bob", "David"}
    bob = next(v for v in report.violations if "Bob" in v.rows)
    assert "{bronchitis, dyspepsia}" in bob.reason and "{dyspepsia, gastritis}" in bob.reason
    assert check_m_invariance_pair(first, counterfeited, 2).ok
    assert check_counterfeits(counterfeited).ok
    assert verify_release(counterfeited, 2, previous=first).ok
    assert not verify_release(second, 2, previous=first).ok
    assert check_m_invariance_sequence([first, counterfeited], 2).ok
    sequence = check_m_invariance_sequence([first, second], 2)
    assert sequence.violations
    assert all(v.reason.startswith("release 2:") for v in sequence.violations)


def test_reinsertion_after_a_gap() -> None:
    first, _, counterfeited = _paper_tables()
    # release 3 publishes Alice alone again (absent from release 2) with another signature
    alice = _paper_release(3, [[("Alice", 22, 14000, "bronchitis")]], {0: ["flu"]})
    assert check_m_invariance_sequence([first, counterfeited, alice], 2, across_gaps=False).ok
    report = check_m_invariance_sequence([first, counterfeited, alice], 2)
    (violation,) = report.violations
    assert violation.reason.startswith("release 3:") and violation.rows == ("Alice",)
    assert "in release 1" in violation.reason
    kept = _paper_release(3, [[("Alice", 22, 14000, "bronchitis")]], {0: ["dyspepsia"]})
    assert check_m_invariance_sequence([first, counterfeited, kept], 2).ok


@st.composite
def sequences(draw: st.DrawFn, mutate: bool = True) -> tuple[list[Release], int]:
    """Releases built to keep signatures (buckets as in §4), then perhaps altered."""
    people = draw(microdata(min_rows=3, max_rows=10))
    n = len(people)
    m = draw(st.integers(1, 3))
    history: dict[str, frozenset[str]] = {}
    out: list[Release] = []
    for number in range(1, draw(st.integers(2, 4)) + 1):
        present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        present[draw(st.integers(0, n - 1))] = True
        table = people[present].reset_index(drop=True)
        previous_ids = set(out[-1].assignment["id"]) if out else set()
        forget = mutate and draw(st.booleans())
        known = {i: s for i, s in history.items() if not forget or i in previous_ids}
        labels, fakes = _keep_signatures(draw, table, known, m)
        kinds = ["none", "none", "fresh", "swap", "drop"] if mutate else ["none"]
        kind = draw(st.sampled_from(kinds))
        if kind == "fresh":
            fakes.setdefault(draw(st.sampled_from(sorted(set(labels)))), []).append("zz")
        elif kind == "swap" and len(labels) > 1:
            a, b = draw(st.permutations(range(len(labels))))[:2]
            labels[a], labels[b] = labels[b], labels[a]
        elif kind == "drop" and any(fakes.values()):
            label = draw(st.sampled_from(sorted(g for g, v in fakes.items() if v)))
            fakes[label].pop()
        release = build_release(number, table, labels, SCHEMA, fakes,
                                rng=np.random.default_rng(number))
        out.append(release)
        history.update(bf_signatures(release))
    return out, m


def _keep_signatures(
    draw: st.DrawFn, table: pd.DataFrame, known: dict[str, frozenset[str]], m: int
) -> tuple[list[int], dict[int, list[str]]]:
    buckets: dict[frozenset[str], dict[str, list[int]]] = {}
    fresh: dict[str, list[int]] = {}
    for i, (ident, value) in enumerate(zip(table["id"], table["sa"], strict=True)):
        target = buckets.setdefault(known[ident], {}) if ident in known else fresh
        target.setdefault(value, []).append(i)
    labels = [0] * len(table)
    fakes: dict[int, list[str]] = {}
    label = 0
    for signature, by_value in [*buckets.items(), (frozenset(), fresh)]:
        lists = {v: draw(st.permutations(rows)) for v, rows in by_value.items()}
        for k in range(max((len(r) for r in lists.values()), default=0)):
            values = set()
            for value, rows in lists.items():
                if k < len(rows):
                    labels[rows[k]] = label
                    values.add(value)
            fill = sorted(signature - values) if signature else [
                v for v in SA_VALUES + EXTRA_VALUES if v not in values][: max(m - len(values), 0)]
            if fill:
                fakes[label] = fill
            label += 1
    return labels, fakes


def bf_sequence_ok(releases_: list[Release], m: int, across_gaps: bool) -> bool:
    if any(bf_bad_m_unique(r, m) for r in releases_):
        return False
    seen: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for position, release in enumerate(releases_):
        for ident, signature in bf_signatures(release).items():
            seen.setdefault(ident, []).append((position, signature))
    for appearances in seen.values():
        for (p0, s0), (p1, s1) in zip(appearances, appearances[1:], strict=False):
            if s0 != s1 and (across_gaps or p1 == p0 + 1):
                return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sequences())
def test_m_invariance_matches_definition(case: tuple[list[Release], int]) -> None:
    sequence, m = case
    for previous, current in zip(sequence, sequence[1:], strict=False):
        before, after = bf_signatures(previous), bf_signatures(current)
        changed = {i for i in before.keys() & after.keys() if before[i] != after[i]}
        report = check_m_invariance_pair(previous, current, m)
        assert report.ok == (not bf_bad_m_unique(current, m) and not changed)
        flagged = {r for v in report.violations if "had signature" in v.reason for r in v.rows}
        assert flagged == changed
    for across_gaps in (True, False):
        report = check_m_invariance_sequence(sequence, m, across_gaps=across_gaps)
        assert report.ok == bf_sequence_ok(sequence, m, across_gaps)
        numbers = {f"release {r.number}:" for r in sequence}
        assert all(v.reason.split(" ", 2)[0] + " " + v.reason.split(" ", 2)[1] in numbers
                   for v in report.violations)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sequences(mutate=False))
def test_signature_keeping_sequences_are_accepted(case: tuple[list[Release], int]) -> None:
    sequence, m = case
    assert check_m_invariance_sequence(sequence, m).ok
    for previous, current in zip(sequence, sequence[1:], strict=False):
        assert verify_release(current, m, previous=previous).ok
