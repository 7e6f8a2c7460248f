"""The verifier's speed-ups of issue 17 (verify phase of a release step) against the code
they replace.

Each ``old_*`` function below is the previous implementation, kept literally: on random
releases, broken ones included (m-uniqueness, changed signatures, bad counterfeits, bad
layouts, identifier columns), the new code must return exactly the same values, and the
verifiers exactly the same reports (verdicts and messages).
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays as numpy_arrays
from test_principles_fast_path import VALUES, broken_releases, releases
from test_vectorized_scale import release_pairs

from republish.errors import format_rows
from republish.generalization import group_extremes, parse_cell, render_cell
from republish.principles import verify_release
from republish.principles.catalog.m_invariance import (
    PRINCIPLE,
    MInvarianceOptions,
    check_against_state,
)
from republish.principles.counterfeit_detection import (
    _count_groups,
    column_extremes,
    counterfeit_groups,
    uncovered_cells,
)
from republish.principles.hygiene import (
    _column_violations,
    _vectorized_excess,
    hygiene_violations,
)
from republish.principles.m_invariance import uniqueness_groups
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import (
    ReleaseArrays,
    counts_in,
    sorted_factorize,
    text_array,
)
from republish.release import GROUP, Release, build_release
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState, group_signatures
from republish.tables import encode_qis, validate_table

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- references


def old_factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inverse, labels = pd.factorize(values, sort=True)
    return np.asarray(inverse, dtype=np.int64), np.asarray(labels, dtype=np.int64)


def old_cell_counts(arrays: ReleaseArrays) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    width = max(len(arrays.values), 1)
    published = arrays.published_group * width + arrays.published_value
    real = arrays.assignment_group * width + arrays.assignment_value
    return (np.unique(published, return_counts=True), np.unique(real, return_counts=True))


def old_uniqueness_groups(arrays: ReleaseArrays, m: int) -> set[Any]:
    published, _ = arrays.group_sizes()
    bad = (published > 0) & (published < m)
    width = max(len(arrays.values), 1)
    keys, counts = np.unique(arrays.published_group * width + arrays.published_value,
                             return_counts=True)
    groups, _ = arrays.split_cell_keys(keys[counts > 1])
    bad[groups] = True
    return set(arrays.label_list(np.flatnonzero(bad)))


def old_sensitive_groups(arrays: ReleaseArrays) -> set[Any]:
    width = max(len(arrays.values), 1)
    published_keys = arrays.published_group * width + arrays.published_value
    real_keys = arrays.assignment_group * width + arrays.assignment_value
    shown_keys, shown_counts = np.unique(published_keys, return_counts=True)
    held_keys, held_counts = np.unique(real_keys, return_counts=True)
    short = held_counts > counts_in(held_keys, shown_keys, shown_counts)
    groups, _ = arrays.split_cell_keys(held_keys[short])
    published, _ = arrays.group_sizes()
    return set(arrays.label_list(np.unique(groups[published[groups] > 0])))


def _old_parsed_cells(qi: Any, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    low = np.full(len(texts), np.inf)
    high = np.full(len(texts), -np.inf)
    for index, text in enumerate(texts.tolist()):
        try:
            low[index], high[index] = parse_cell(qi, text)
        except Exception:  # noqa: BLE001
            continue
    return low, high


def old_box_groups(arrays: ReleaseArrays) -> set[Any] | None:
    release = arrays.release
    schema = release.schema
    published = release.published
    if any(name not in published.columns for name in schema.qi_names):
        return None
    groups = len(arrays.labels)
    published_group = arrays.published_group
    if not len(published_group):
        assignment_codes = encode_qis(release.assignment, schema)
        return {None} if np.isnan(assignment_codes).any() else set()
    present = np.bincount(published_group, minlength=groups) > 0
    representative = np.zeros(groups, dtype=np.int64)
    representative[published_group] = np.arange(len(published_group))
    mixed = np.zeros(groups, dtype=bool)
    shown: list[np.ndarray] = []
    cell_codes: list[np.ndarray] = []
    cell_texts: list[np.ndarray] = []
    for name in schema.qi_names:
        text = text_array(published[name])
        shown_text = text[representative]
        differs = text != shown_text[published_group]
        mixed |= np.bincount(published_group[differs], minlength=groups) > 0
        cell, uniques = pd.factorize(shown_text, use_na_sentinel=False)
        shown.append(shown_text)
        cell_codes.append(np.asarray(cell, dtype=np.int64))
        cell_texts.append(np.asarray(uniques, dtype=object))
    flagged: set[Any] = set(arrays.label_list(np.flatnonzero(mixed)))
    assignment = release.assignment
    if not len(assignment):
        return flagged
    codes = encode_qis(assignment, schema)
    unknown = np.isnan(codes).any(axis=1)
    if unknown.any():
        flagged.add(None)
    known = ~unknown
    if not known.any():
        return flagged
    low, high = group_extremes(codes[known], arrays.assignment_group[known], groups)
    held = np.bincount(arrays.assignment_group[known], minlength=groups) > 0
    boxes = np.flatnonzero(held & present & ~mixed)
    uncovered = np.zeros(len(boxes), dtype=bool)
    for j, qi in enumerate(schema.qis):
        cell_low, cell_high = _old_parsed_cells(qi, cell_texts[j])
        cell = cell_codes[j][boxes]
        uncovered |= (cell_low[cell] > low[boxes, j]) | (cell_high[cell] < high[boxes, j])
    for group in boxes[uncovered].tolist():
        cells = tuple(str(column[group]) for column in shown)
        want = tuple(
            render_cell(qi, low[group, j], high[group, j], release.model)
            for j, qi in enumerate(schema.qis)
        )
        if cells != want and uncovered_cells(release, cells, (low[group], high[group])):
            flagged.add(arrays.labels[group].item())
    return flagged


def old_counterfeit_groups(arrays: ReleaseArrays) -> tuple[set[Any] | None, ...]:
    if not arrays.vectorizable:
        return None, None, None
    return _count_groups(arrays), old_box_groups(arrays), old_sensitive_groups(arrays)


def old_vectorized_excess(arrays: ReleaseArrays) -> tuple[Counter[Any], Counter[Any]]:
    width = max(len(arrays.values), 1)
    published_keys = arrays.published_group * width + arrays.published_value
    real_keys = arrays.assignment_group * width + arrays.assignment_value
    keys, counts = np.unique(published_keys, return_counts=True)
    real_keys, real_counts = np.unique(real_keys, return_counts=True)
    extra = counts - counts_in(keys, real_keys, real_counts)
    chosen = np.flatnonzero(extra > 0)
    if len(chosen):
        rows = np.flatnonzero(np.isin(published_keys, keys[chosen]))
        _, first = np.unique(published_keys[rows], return_index=True)
        chosen = chosen[np.argsort(rows[first], kind="stable")]
    groups, values = arrays.split_cell_keys(keys[chosen])
    cells = list(zip(arrays.label_list(groups), arrays.values[values].tolist(), strict=True))
    published = Counter(dict(zip(cells, counts[chosen].tolist(), strict=True)))
    excess = Counter(dict(zip(cells, extra[chosen].tolist(), strict=True)))
    return published, excess


def _old_holds_all(column: pd.Series, identifiers: np.ndarray) -> bool:
    values = text_array(column)
    if len(identifiers) > len(values) or not (values == identifiers[0]).any():
        return False
    return bool(pd.Index(identifiers).isin(values).all())


def old_column_violations(release: Release, arrays: ReleaseArrays | None = None) -> list[Violation]:
    schema = release.schema
    columns = [str(c) for c in release.published.columns]
    expected = schema.published_columns
    violations = []
    if schema.identifier in columns:
        violations.append(Violation(group=None, reason=(
            f"the identifier column {schema.identifier!r} is published; T*(j) must "
            f"hold only {expected}")))
    extra = [c for c in columns if c not in expected and c != schema.identifier]
    if extra:
        violations.append(Violation(group=None, reason=(
            f"column(s) {extra} are not part of T*(j) (private or unknown); publish "
            f"only {expected}")))
    missing = [c for c in expected if c not in columns]
    if missing:
        violations.append(
            Violation(group=None, reason=f"column(s) {missing} of T*(j) are missing"))
    if not extra and not missing and schema.identifier not in columns and columns != expected:
        violations.append(Violation(
            group=None, reason=f"columns are in the order {columns}, expected {expected}"))
    if arrays is not None and arrays.vectorizable:
        distinct = arrays.distinct_identifiers()

        def holds_all(column: str) -> bool:
            return _old_holds_all(release.published[column], distinct)
    else:
        identifiers = set(release.assignment[schema.identifier].astype(str))
        distinct = np.asarray(list(identifiers), dtype=object)

        def holds_all(column: str) -> bool:
            return identifiers <= set(release.published[column].astype(str))
    if len(distinct) >= 2:
        for column in columns:
            if column in (GROUP, schema.identifier):
                continue
            if holds_all(column):
                violations.append(Violation(group=None, reason=(
                    f"published column {column!r} holds every identifier of the "
                    "release's real rows")))
    return violations


def old_check_against_state(
    release: Release, state: PublisherState, positions: np.ndarray | None = None
) -> VerificationReport:
    schema = release.schema
    assignment = release.assignment
    ids = assignment[schema.identifier].astype(str)
    if positions is None:
        positions = state.positions(ids)
    known = positions >= 0
    if not known.any():
        return VerificationReport("m-invariance", ())
    by_group = group_signatures(release)
    before = state.rows.iloc[positions[known]]
    groups = assignment[GROUP].to_numpy()[known]
    codes = before[SIGNATURE].to_numpy()
    set_ids: dict[frozenset[str], int] = {}
    state_ids = np.array(
        [set_ids.setdefault(s, len(set_ids)) for s in state.signatures] or [-1], dtype=np.int64)
    row_group, distinct_groups = pd.factorize(pd.Series(groups), use_na_sentinel=False)
    group_ids = np.array(
        [set_ids.setdefault(by_group.get(g, frozenset()), len(set_ids))
         for g in distinct_groups.tolist()], dtype=np.int64)
    bad = group_ids[row_group] != state_ids[codes]
    if not bad.any():
        return VerificationReport("m-invariance", ())
    pairs = pd.DataFrame({"group": groups, "code": codes})
    pairs = pairs[bad].drop_duplicates()
    violations = []
    for group, code in zip(pairs["group"].tolist(), pairs["code"].tolist(), strict=True):
        now = by_group.get(group, frozenset())
        if now == state.signatures[code]:
            continue
        mask = (assignment[GROUP].to_numpy()[known] == group) & (
            before[SIGNATURE].to_numpy() == code
        )
        idents = ids[known].to_numpy()[mask].tolist()
        numbers = sorted(set(before[LAST_RELEASE].to_numpy()[mask].tolist()))
        violations.append(Violation(group=group, reason=(
            f"identifier(s) {format_rows(idents)} last published (release(s) "
            f"{numbers}) with signature {sorted(state.signatures[code])} sit in group "
            f"{group} of release {release.number} with signature {sorted(now)}"),
            rows=tuple(idents)))
    return VerificationReport("m-invariance", tuple(violations))


# ------------------------------------------------------------------------------- tests


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    numpy_arrays(np.int64, st.integers(0, 80), elements=st.integers(-5, 40)),
    numpy_arrays(np.int64, st.integers(0, 30), elements=st.integers(-2**62, 2**62)),
    numpy_arrays(np.int64, st.integers(0, 30),
                 elements=st.sampled_from([0, 1, 5000, -7000, 2**63 - 1, -2**63])),
))
def test_sorted_factorize_equals_pandas(values: np.ndarray) -> None:
    codes, labels = sorted_factorize(values)
    old_codes, old_labels = old_factorize(values)
    assert codes.dtype == old_codes.dtype and labels.dtype == old_labels.dtype
    assert np.array_equal(codes, old_codes) and np.array_equal(labels, old_labels)


finite = st.one_of(st.integers(-5, 40).map(float), st.floats(-1e6, 1e6, allow_nan=False),
                   st.sampled_from([np.inf, -np.inf]))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 60), st.integers(1, 4), st.integers(1, 9), st.data())
def test_column_extremes_equals_group_extremes(n: int, d: int, groups: int,
                                               data: st.DataObject) -> None:
    codes = data.draw(numpy_arrays(np.float64, (n, d), elements=finite))
    inverse = data.draw(numpy_arrays(np.int64, n, elements=st.integers(0, groups - 1)))
    new, old = column_extremes(codes, inverse, groups), group_extremes(codes, inverse, groups)
    for a, b in zip(new, old, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


@SETTINGS
@given(case=broken_releases(), m=st.integers(1, 4),
       alpha=st.sampled_from([1e-6, 0.05, 0.5, 0.95]))
def test_detectors_and_reports_equal_old_code(case: tuple[Release, str], m: int,
                                              alpha: float) -> None:
    release, _ = case
    arrays = ReleaseArrays(release)
    reference = ReleaseArrays(release)
    assert old_column_violations(release, reference) == _column_violations(release, arrays)
    assert old_column_violations(release) == _column_violations(release)
    if arrays.vectorizable:
        for new, old in zip((arrays.cell_counts(), arrays.cell_counts(real=True)),
                            old_cell_counts(reference), strict=True):
            assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))
        assert uniqueness_groups(arrays, m) == old_uniqueness_groups(reference, m)
        assert _vectorized_excess(arrays) == old_vectorized_excess(reference)
        for column in release.published.columns:
            if isinstance(column, str) and release.published.columns.is_unique:
                assert list(arrays.published_text(column)) == list(
                    text_array(release.published[column]))
    assert counterfeit_groups(arrays) == old_counterfeit_groups(reference)
    assert hygiene_violations(release, alpha, arrays) == hygiene_violations(
        release, alpha, None)
    report = verify_release(release, m, alpha=alpha)
    assert report == verify_release(release, m, alpha=alpha, vectorized=False)


@st.composite
def identifier_columns(draw: st.DrawFn) -> Release:
    """A release whose published sensitive column holds the identifiers (or most of them),
    with repeated identifiers and more identifiers than published rows possible."""
    release = draw(releases())
    published = release.published.copy()
    assignment = release.assignment.copy()
    ids = assignment["id"].tolist()
    if draw(st.booleans()) and len(ids) > 1:
        ids[draw(st.integers(1, len(ids) - 1))] = ids[0]  # a repeated identifier
    if draw(st.booleans()):
        ids = [ids[0]] * len(ids)  # one identifier only
    assignment["id"] = ids
    pool = ids + list(VALUES)
    shown = draw(st.lists(st.sampled_from(pool), min_size=len(published),
                          max_size=len(published)))
    if draw(st.booleans()):
        shown[: min(len(ids), len(shown))] = ids[: len(shown)]
    published["sa"] = shown
    if draw(st.booleans()) and len(published) > 1:  # fewer published rows than real ones
        published = published.iloc[: draw(st.integers(1, len(published) - 1))]
    return Release(number=release.number, schema=release.schema,
                   published=published.reset_index(drop=True),
                   counterfeits=release.counterfeits, assignment=assignment)


@SETTINGS
@given(identifier_columns())
def test_identifier_columns_equal_old_code(release: Release) -> None:
    assert _column_violations(release, ReleaseArrays(release)) == old_column_violations(
        release, ReleaseArrays(release))
    assert verify_release(release, 2) == verify_release(release, 2, vectorized=False)


@settings(max_examples=300, deadline=None)
@given(release_pairs(), st.booleans())
def test_check_against_state_equals_old_code(data: tuple[Release, PublisherState],
                                             given_positions: bool) -> None:
    release, state = data
    positions = None
    if given_positions:
        positions = state.positions(release.assignment["id"].astype(str).to_numpy(dtype=object))
    assert check_against_state(release, state, positions) == old_check_against_state(
        release, state, positions)


SIGNATURE_BREAKS = ["none", "move row", "swap values", "drop value", "add value", "merge"]


@st.composite
def release_steps(draw: st.DrawFn) -> tuple[Release, PublisherState, str]:
    """A first release built by :func:`build_release`, the state after it, and a second
    release over partly the same people, perhaps broken so that signatures change."""
    first = draw(releases(number=1))
    state = PublisherState.empty(first.schema, 2).advance(first)
    people = first.assignment.drop(columns=[GROUP])
    keep = draw(st.lists(st.booleans(), min_size=len(people), max_size=len(people)))
    table = people[np.asarray(keep, dtype=bool)]
    new = draw(st.integers(0 if len(table) else 1, 4))
    extra = pd.DataFrame({"id": [f"q{i}" for i in range(new)], "age": [21] * new,
                          "edu": ["a"] * new, "place": [people["place"].iloc[0]] * new,
                          "sa": [draw(st.sampled_from(VALUES)) for _ in range(new)]})
    table = validate_table(pd.concat([table, extra], ignore_index=True), first.schema)
    kind = draw(st.sampled_from(SIGNATURE_BREAKS))
    if kind == "none":  # keep each returning row's old group, new rows in a new group
        old_group = dict(zip(first.assignment["id"], first.assignment[GROUP], strict=True))
        labels = [old_group.get(i, 50) for i in table["id"]]
    else:
        top = draw(st.integers(0, max(len(table) - 1, 0)))
        labels = draw(st.lists(st.integers(0, top), min_size=len(table), max_size=len(table)))
    fakes = {label: draw(st.lists(st.sampled_from(VALUES), max_size=2))
             for label in sorted(set(labels))}
    seed = draw(st.integers(0, 2**32 - 1))
    second = build_release(2, table, labels, first.schema, fakes,
                           rng=np.random.default_rng(seed))
    published = second.published.copy()
    row = draw(st.integers(0, len(published) - 1))
    if kind == "swap values":
        published.loc[row, "sa"] = draw(st.sampled_from(VALUES))
    elif kind == "drop value" and len(published) > 1:
        published = published.drop(index=row).reset_index(drop=True)
    elif kind == "add value":
        fake = published.loc[[row]].copy()
        fake["sa"] = draw(st.sampled_from(VALUES))
        published = pd.concat([published, fake], ignore_index=True)
    elif kind == "merge":
        published.loc[published[GROUP] == published.loc[row, GROUP], GROUP] = int(
            published[GROUP].min())
    assignment = second.assignment.copy()
    if kind == "move row":
        assignment.loc[draw(st.integers(0, len(assignment) - 1)), GROUP] = draw(
            st.sampled_from(sorted(set(published[GROUP].tolist())) + [999]))
    second = Release(number=2, schema=second.schema, published=published,
                     counterfeits=second.counterfeits, assignment=assignment)
    return second, state, kind


@SETTINGS
@given(release_steps(), st.integers(2, 4))
def test_check_step_equals_old_code(data: tuple[Release, PublisherState, str], m: int) -> None:
    release, state, _ = data
    ids = release.assignment["id"].astype(str).to_numpy(dtype=object)
    positions = state.positions(ids)
    new = PRINCIPLE.check_step(release, state, MInvarianceOptions(m=m), positions)
    old = verify_release(release, m, vectorized=False).merge(
        old_check_against_state(release, state, positions),
        principle=f"release {release.number}")
    assert new == old


def test_check_against_state_groups_share_signatures() -> None:
    """Groups with equal signatures (equal frozensets, shared or not) get one id, and a
    group T*(j) does not publish the empty signature (as check_against_state maps them)."""
    hosted = np.empty(3, dtype=object)
    hosted[:] = list(map({1: frozenset({"a"}), 2: frozenset({"a"})}.get, [1, 2, 3],
                         repeat(frozenset())))
    codes, uniques = pd.factorize(hosted)
    assert codes.tolist() == [0, 0, 1] and uniques.tolist() == [frozenset({"a"}), frozenset()]
