"""Vectorized replacements of issue 17 against the straightforward code they replace.

Each reference below is the old implementation, kept literally: the new function must
return exactly the same values (NaN where it had NaN, the same report).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from republish.errors import format_rows
from republish.generalization import Boxes, group_boxes, group_extremes
from republish.principles.catalog.m_invariance import check_against_state
from republish.principles.report import VerificationReport, Violation
from republish.release import GROUP, Release
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState, group_signatures


def reference_group_boxes(codes: np.ndarray, groups: Any) -> Boxes:
    labels, inverse = np.unique(np.asarray(groups), return_inverse=True)
    d = codes.shape[1]
    low = np.full((len(labels), d), np.inf)
    high = np.full((len(labels), d), -np.inf)
    np.minimum.at(low, inverse, codes)
    np.maximum.at(high, inverse, codes)
    sizes = np.bincount(inverse, minlength=len(labels))
    return Boxes(groups=labels, sizes=sizes, low=low, high=high)


def reference_extremes(codes: np.ndarray, inverse: np.ndarray,
                       groups: int) -> tuple[np.ndarray, np.ndarray]:
    low = np.full((groups, codes.shape[1]), np.inf)
    high = np.full((groups, codes.shape[1]), -np.inf)
    np.minimum.at(low, inverse, codes)
    np.maximum.at(high, inverse, codes)
    return low, high


values = st.one_of(st.integers(-5, 40).map(float), st.just(np.nan),
                   st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def coded_rows(draw: Any, nan: bool = True) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 60))
    d = draw(st.integers(1, 4))
    codes = draw(arrays(np.float64, (n, d), elements=values if nan else
                        st.integers(0, 30).map(float)))
    groups = draw(arrays(np.int64, n, elements=st.integers(-3, 12)))
    return codes, groups


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@settings(max_examples=300, deadline=None)
@given(coded_rows())
def test_group_boxes_equals_ufunc_at(data: tuple[np.ndarray, np.ndarray]) -> None:
    codes, groups = data
    new, old = group_boxes(codes, groups), reference_group_boxes(codes, groups)
    assert same(new.groups, old.groups)
    assert np.array_equal(new.sizes, old.sizes)
    assert same(new.low, old.low) and same(new.high, old.high)
    # labels given as a Python list (object path) and as text
    listed = group_boxes(codes, groups.tolist())
    assert same(listed.low, old.low) and same(listed.high, old.high)
    text = [f"g{g:03d}" for g in groups.tolist()]
    new, old = group_boxes(codes, text), reference_group_boxes(codes, text)
    assert list(new.groups) == list(old.groups)
    assert same(new.low, old.low) and same(new.high, old.high)


@settings(max_examples=300, deadline=None)
@given(coded_rows(), st.integers(0, 5))
def test_group_extremes_equals_ufunc_at(data: tuple[np.ndarray, np.ndarray],
                                        empty: int) -> None:
    codes, groups = data
    inverse = np.abs(groups) % 7
    count = 7 + empty  # groups without rows keep inf / -inf
    new, old = group_extremes(codes, inverse, count), reference_extremes(codes, inverse, count)
    assert same(new[0], old[0]) and same(new[1], old[1])
    ordered = np.sort(inverse)  # the already sorted path
    new = group_extremes(codes, ordered, count)
    old = reference_extremes(codes, ordered, count)
    assert same(new[0], old[0]) and same(new[1], old[1])


def reference_check_against_state(release: Release, state: PublisherState,
                                  positions: np.ndarray | None = None) -> VerificationReport:
    """The loop per (group, previous signature) that check_against_state replaced."""
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
    pairs = pd.DataFrame({
        "group": assignment[GROUP].to_numpy()[known],
        "code": before[SIGNATURE].to_numpy(),
    }).drop_duplicates()
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
        violations.append(
            Violation(
                group=group,
                reason=(
                    f"identifier(s) {format_rows(idents)} last published (release(s) "
                    f"{numbers}) with signature {sorted(state.signatures[code])} sit in group "
                    f"{group} of release {release.number} with signature {sorted(now)}"
                ),
                rows=tuple(idents),
            )
        )
    return VerificationReport("m-invariance", tuple(violations))


def _schema() -> Any:
    from republish.schema import QIAttribute, Schema

    return Schema(identifier="id", qis=(QIAttribute("age", "numeric"),), sensitive="s")


SA = ["a", "b", "c", "d"]


@st.composite
def release_pairs(draw: Any) -> tuple[Release, PublisherState]:
    """A state from one random 'release' and a second random release over partly the same
    identifiers; groups, values and signatures drawn freely (violations included)."""
    schema = _schema()
    releases = []
    for number in (1, 2):
        n = draw(st.integers(1, 14))
        ids = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n, unique=True))
        groups = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
        sensitive = draw(st.lists(st.sampled_from(SA), min_size=n, max_size=n))
        assignment = pd.DataFrame({"id": [str(i) for i in ids],
                                   "age": [float(i % 5) for i in ids],
                                   "s": [SA[i % 4] for i in ids], GROUP: groups})
        # published rows: the groups' real values plus some drawn ones (counterfeit-like);
        # a drawn group may be missing from T*(j) (its signature is then empty)
        hidden = draw(st.sets(st.integers(0, 4), max_size=2)) if number == 2 else set()
        shown = [(g, v) for g, v in zip(groups, sensitive, strict=True) if g not in hidden]
        extra = draw(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(SA)), max_size=4))
        rows = shown + extra
        published = pd.DataFrame({GROUP: [g for g, _ in rows],
                                  "age": ["*"] * len(rows),
                                  "s": [v for _, v in rows]})
        releases.append(Release(number=number, schema=schema, published=published,
                                counterfeits=pd.DataFrame({GROUP: [], "count": []}),
                                assignment=assignment))
    state = PublisherState.empty(schema, 2).advance(releases[0])
    return releases[1], state


@settings(max_examples=300, deadline=None)
@given(release_pairs())
def test_check_against_state_equals_loop(data: tuple[Release, PublisherState]) -> None:
    release, state = data
    assert check_against_state(release, state) == reference_check_against_state(release, state)


def reference_render_boxes(schema: Any, boxes: Boxes, model: Any = "interval") -> pd.DataFrame:
    from republish.generalization import render_cell

    data: dict[str, list[object]] = {"group": list(boxes.groups)}
    for j, qi in enumerate(schema.qis):
        data[qi.name] = [
            render_cell(qi, lo, hi, model)
            for lo, hi in zip(boxes.low[:, j], boxes.high[:, j], strict=True)
        ]
    return pd.DataFrame(data)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.sampled_from(["interval", "suppression"]), st.data())
def test_render_boxes_equals_loop(groups: int, model: Any, data: Any) -> None:
    from republish.datasets import census_schema
    from republish.generalization import render_boxes

    schema = census_schema()
    low = np.zeros((groups, len(schema.qis)))
    high = np.zeros((groups, len(schema.qis)))
    for j, qi in enumerate(schema.qis):
        top = 90 if qi.kind == "numeric" else len(qi.categories or ()) - 1
        a = np.array(data.draw(st.lists(st.integers(0, top), min_size=groups,
                                        max_size=groups)), dtype=float)
        b = np.array(data.draw(st.lists(st.integers(0, top), min_size=groups,
                                        max_size=groups)), dtype=float)
        low[:, j], high[:, j] = np.minimum(a, b), np.maximum(a, b)
    if schema.qis[0].kind == "numeric" and groups:
        low[0, 0] += 0.5  # a non-integral bound
    boxes = Boxes(groups=np.arange(groups), sizes=np.ones(groups, dtype=np.int64),
                  low=low, high=high)
    new, old = render_boxes(schema, boxes, model), reference_render_boxes(schema, boxes, model)
    assert new.columns.tolist() == old.columns.tolist()
    for column in old.columns:
        assert new[column].tolist() == old[column].tolist()


def reference_state_differences(stored: PublisherState, replayed: PublisherState) -> list[str]:
    """state_differences before issue 17's change: sorted indexes, 2-D np.unique."""
    problems = []
    a, b = stored.rows, replayed.rows
    if len(a) != len(b) or not a.index.sort_values().equals(b.index.sort_values()):
        missing = b.index.difference(a.index)[:5].tolist()
        extra = a.index.difference(b.index)[:5].tolist()
        return [f"private state: identifiers missing {missing} / unexpected {extra}"]
    a = a.loc[b.index]
    for column in [LAST_RELEASE, *(c for c in b.columns if c not in (LAST_RELEASE, SIGNATURE))]:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        differs = x != y
        if differs.dtype == bool and differs.any():
            problems.append(f"private state: column {column!r} differs for "
                            f"{b.index[differs][:5].tolist()}")
    ours = list(stored.signatures)
    theirs = list(replayed.signatures)
    left, right = a[SIGNATURE].to_numpy(), b[SIGNATURE].to_numpy()
    pairs = np.unique(np.stack([left, right]), axis=1) if len(left) else np.zeros((2, 0), int)
    bad = {(int(x), int(y)) for x, y in pairs.T.tolist() if ours[x] != theirs[y]}
    if bad:
        mask = np.array([(int(x), int(y)) in bad for x, y in zip(left, right, strict=True)])
        problems.append(f"private state: last signature differs for "
                        f"{b.index[mask][:5].tolist()}")
    if stored.deferred != replayed.deferred:
        problems.append("private state: deferred identifiers differ from the last release")
    return problems


@st.composite
def state_pairs(draw: Any) -> tuple[PublisherState, PublisherState]:
    schema = _schema()
    signatures = (frozenset({"a"}), frozenset({"a", "b"}), frozenset({"b", "c"}))

    def state(ids: list[str]) -> PublisherState:
        n = len(ids)
        rows = pd.DataFrame({
            "age": draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=n, max_size=n)),
            "s": draw(st.lists(st.sampled_from(SA[:2]), min_size=n, max_size=n)),
            LAST_RELEASE: draw(st.lists(st.integers(1, 2), min_size=n, max_size=n)),
            SIGNATURE: draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        }, index=pd.Index(ids, dtype=object, name="id"))
        order = draw(st.permutations(range(3)))
        return PublisherState(schema=schema, m=2, last_release=2, rows=rows,
                              signatures=tuple(signatures[i] for i in order))

    # a state's identifiers are unique (with repeats the function sorts, as before)
    names = [str(i) for i in range(12)]
    ids = draw(st.lists(st.sampled_from(names), max_size=10, unique=True))
    other = draw(st.one_of(st.just(ids), st.permutations(ids),
                           st.lists(st.sampled_from(names), max_size=10, unique=True)))
    return state(ids), state(list(other))


@settings(max_examples=300, deadline=None)
@given(state_pairs())
def test_state_differences_equals_sorting(data: tuple[PublisherState, PublisherState]) -> None:
    from republish.store_verify import state_differences

    stored, replayed = data
    assert state_differences(stored, replayed) == reference_state_differences(stored, replayed)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=3), st.integers(0, 3), st.just(float("nan"))),
                max_size=30))
def test_distinct_text_never_contradicts_is_unique(values: list[Any]) -> None:
    from republish.principles.vectorized import distinct_text

    array = np.empty(len(values), dtype=object)
    array[:] = values
    unique = bool(pd.Index(array).is_unique)
    assert not distinct_text(array) or unique
    if all(isinstance(v, str) for v in values):
        assert distinct_text(array) == unique
