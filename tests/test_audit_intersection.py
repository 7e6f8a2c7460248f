"""Intersection attack (m-invariance paper, Definition 15, Lemmas 1-2) and B(n) handling."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.audit.intersection import covering_pairs, intersection_attack
from republish.audit.knowledge import (
    knowledge_from_releases,
    make_knowledge,
    read_knowledge,
)
from republish.errors import InputError
from republish.examples.hospital import load_hospital
from republish.release import build_release
from republish.schema import make_schema
from republish.tables import validate_table


@pytest.fixture(scope="module")
def hospital():
    return load_hospital()


def test_tables_1b_2b_reveal_bob(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t2_star)
    audit = intersection_attack(sequence, knowledge_from_releases(sequence))
    revealed = audit.revealed_values()
    assert revealed["Bob"] == "dyspepsia"
    # David (23, 25000) is covered by group 2 of 1b {flu, gastritis} and group 1 of 2b
    # {dyspepsia, gastritis}: the same attack reveals him too.
    assert revealed == {"Bob": "dyspepsia", "David": "gastritis"}
    bob = list(audit.identifiers).index("Bob")
    assert audit.candidate_set(bob) == {"dyspepsia"}
    assert audit.releases[bob] == 2


def test_tables_1b_3a_protect_everyone(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t3_star)
    audit = intersection_attack(sequence, knowledge_from_releases(sequence), keep_per_release=True)
    assert audit.vulnerable_ids == []
    assert audit.sizes.min() >= 2
    bob = list(audit.identifiers).index("Bob")
    assert audit.candidate_set(bob) == {"dyspepsia", "bronchitis"}
    assert len(audit.per_release) == 2


def test_changed_signature_is_caught(hospital) -> None:
    # Table 3a with Bob's counterfeit companion (group 1, bronchitis) turned into flu.
    broken = hospital.t3_star.published.copy()
    fake = (broken["group"] == 1) & (broken["disease"] == "bronchitis")
    broken.loc[fake, "disease"] = "flu"
    sequence = (hospital.t1_star, replace(hospital.t3_star, published=broken))
    audit = intersection_attack(sequence, knowledge_from_releases(sequence))
    assert audit.revealed_values()["Bob"] == "dyspepsia"


def test_gaps_intersect_only_releases_holding_the_row(hospital) -> None:
    schema = hospital.schema
    people = hospital.t1.iloc[:2].drop(columns=[schema.sensitive])
    # Bob in releases 1 and 3 (re-inserted), Alice in release 2 only.
    presence = np.array([[True, False, True], [False, True, False]])
    knowledge = make_knowledge(people, presence, schema)
    box = {"age": "[21, 22]", "zip": "[12000, 14000]"}
    t1 = pd.DataFrame([{"group": 1, **box, "disease": v} for v in ("flu", "cold")])
    t2 = pd.DataFrame([{"group": 1, **box, "disease": v} for v in ("hiv", "cold")])
    t3 = pd.DataFrame([{"group": 1, **box, "disease": v} for v in ("flu", "acne")])
    audit = intersection_attack([t1, t2, t3], knowledge)
    assert audit.revealed_values() == {"Bob": "flu"}
    assert audit.candidate_set(1) == {"hiv", "cold"}


def test_uncovered_individual_is_inconsistent(hospital) -> None:
    schema = hospital.schema
    people = pd.DataFrame({"name": ["Zed"], "age": [90], "zip": [99999]})
    knowledge = make_knowledge(people, np.array([[True]]), schema)
    audit = intersection_attack([hospital.t1_star], knowledge)
    assert audit.inconsistent_ids == ["Zed"]
    assert audit.size_distribution() == {0: 1}


def test_knowledge_csv_round_trip(hospital, tmp_path) -> None:
    sequence = (hospital.t1_star, hospital.t3_star)
    knowledge = knowledge_from_releases(sequence)
    path = knowledge.write(tmp_path / "knowledge.csv")
    text = path.read_text()
    assert "Bob,21,12000,\"1,2\"" in text
    again = read_knowledge(path, hospital.schema, release_count=2)
    assert not again.has_truth
    assert np.array_equal(again.presence, knowledge.presence)
    assert list(again.identifiers) == list(knowledge.identifiers)


@pytest.mark.parametrize(
    ("releases", "message"),
    [("1,4", "between 1 and 2"), ("x", "release numbers"), ("0", "between 1 and 2")],
)
def test_knowledge_rejects_bad_release_numbers(hospital, releases, message) -> None:
    frame = pd.DataFrame({"name": ["Bob"], "age": [21], "zip": [12000], "releases": [releases]})
    with pytest.raises(InputError, match=message):
        read_knowledge(frame, hospital.schema, release_count=2)


def test_knowledge_rejects_two_rows_in_one_release(hospital) -> None:
    frame = pd.DataFrame(
        {"name": ["Bob", "Bob"], "age": [21, 22], "zip": [12000, 1], "releases": ["1", "1,2"]}
    )
    with pytest.raises(InputError, match="same release"):
        read_knowledge(frame, hospital.schema, release_count=2)


def test_release_count_must_match(hospital) -> None:
    knowledge = knowledge_from_releases((hospital.t1_star, hospital.t3_star))
    with pytest.raises(InputError, match="1 release"):
        intersection_attack([hospital.t1_star], knowledge)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 4),
    points=st.integers(1, 60),
    boxes=st.integers(1, 40),
)
def test_covering_pairs_matches_brute_force(seed: int, d: int, points: int, boxes: int) -> None:
    rng = np.random.default_rng(seed)
    coordinates = rng.integers(0, 8, size=(points, d)).astype(float)
    a = rng.integers(0, 8, size=(boxes, d)).astype(float)
    b = rng.integers(0, 8, size=(boxes, d)).astype(float)
    low, high = np.minimum(a, b), np.maximum(a, b)
    low[rng.random((boxes, d)) < 0.1] = -np.inf  # '*' on a numeric QI
    high[rng.random((boxes, d)) < 0.1] = np.inf
    inverted = rng.random(boxes) < 0.1  # boxes covering nothing
    low[inverted, 0], high[inverted, 0] = 9.0, 8.5
    found_points, found_boxes = covering_pairs(coordinates, low, high)
    inside = np.all(
        (low[None, :, :] <= coordinates[:, None, :]) & (coordinates[:, None, :] <= high[None]),
        axis=2,
    )
    expected = set(zip(*np.nonzero(inside), strict=True))
    assert set(zip(found_points.tolist(), found_boxes.tolist(), strict=True)) == expected
    assert len(found_points) == len(expected)


def _random_sequence(seed: int, values: int):
    """Random releases of a random population, groups of random sizes."""
    rng = np.random.default_rng(seed)
    schema = make_schema("id", "sa", ["x", "y"])
    n = 40
    population = pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "x": rng.integers(0, 10, n),
        "y": rng.integers(0, 5, n),
        "sa": [f"v{k}" for k in rng.integers(0, values, n)],
    })
    releases, presence = [], np.zeros((n, 3), dtype=bool)
    for j in range(3):
        alive = np.flatnonzero(rng.random(n) < 0.7)
        presence[alive, j] = True
        table = validate_table(population.iloc[alive], schema)
        groups = rng.integers(0, max(1, len(alive) // 3), len(alive))
        releases.append(build_release(j + 1, table, groups, schema, rng=rng))
    return schema, population, presence, releases


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), values=st.sampled_from([3, 70, 130]))
def test_attack_matches_naive_definition(seed: int, values: int) -> None:
    schema, population, presence, releases = _random_sequence(seed, values)
    knowledge = make_knowledge(population, presence, schema, with_truth=True)
    audit = intersection_attack(releases, knowledge)
    for position, row in enumerate(audit.rows):
        person = population.iloc[row]
        expected: set[str] | None = None
        for j in np.flatnonzero(presence[row]):
            published = releases[j].published
            css = set()
            for _, group in published.groupby("group"):
                box = group.iloc[0]
                ok = True
                for qi in ("x", "y"):
                    text = str(box[qi])
                    lo, hi = (text.strip("[]").split(", ") * 2)[:2]
                    ok &= float(lo) <= person[qi] <= float(hi)
                if ok:
                    css |= set(group["sa"])
            expected = css if expected is None else expected & css
        assert audit.candidate_set(position) == expected
        assert person["sa"] in expected  # Lemma 2: the true value always survives
    assert set(audit.vulnerable_ids) == {
        str(audit.identifiers[i]) for i in range(len(audit.rows)) if audit.sizes[i] == 1
    }


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), model=st.sampled_from(["interval", "suppression"]))
def test_hierarchy_and_suppression_renderings(seed: int, model: str) -> None:
    from pathlib import Path

    from republish.generalization import parse_cell
    from republish.schema import load_schema

    schema = load_schema(Path(__file__).resolve().parent / "data" / "schema.toml")
    rng = np.random.default_rng(seed)
    n = 30
    countries = ["France", "Germany", "Japan", "USA", "China", "Canada"]
    population = pd.DataFrame({
        "name": [f"p{i}" for i in range(n)],
        "age": rng.integers(20, 60, n),
        "education": rng.choice(["HS", "Bachelor", "Master"], n),
        "country": rng.choice(countries, n),
        "disease": rng.choice(["flu", "cold", "ulcer", "hiv"], n),
    })
    presence = rng.random((n, 2)) < 0.8
    releases = []
    for j in range(2):
        alive = np.flatnonzero(presence[:, j])
        table = validate_table(population.iloc[alive], schema)
        groups = rng.integers(0, max(1, len(alive) // 4), len(alive))
        releases.append(build_release(j + 1, table, groups, schema, rng=rng,
                                      model=model))  # type: ignore[arg-type]
    knowledge = make_knowledge(population, presence, schema)
    audit = intersection_attack(releases, knowledge)
    codes = knowledge.codes()
    for position, row in enumerate(audit.rows):
        expected: set[str] | None = None
        for j in np.flatnonzero(presence[row]):
            css: set[str] = set()
            for _, group in releases[j].published.groupby("group"):
                first = group.iloc[0]
                ranges = [parse_cell(qi, first[qi.name]) for qi in schema.qis]
                if all(lo <= c <= hi for (lo, hi), c in zip(ranges, codes[row], strict=True)):
                    css |= set(group["disease"])
            expected = css if expected is None else expected & css
        assert audit.candidate_set(position) == expected


def test_knowledge_release_lists_with_spaces_and_gaps(hospital) -> None:
    frame = pd.DataFrame({
        "name": ["Bob", "Alice", "Andy", "Gary"],
        "age": [21, 22, 24, 41],
        "zip": [12000, 14000, 18000, 20000],
        "releases": [" 1, 3", "", "2", "1,2,3"],
    })
    knowledge = read_knowledge(frame, hospital.schema, release_count=3)
    assert knowledge.presence.tolist() == [
        [True, False, True], [False, False, False], [False, True, False], [True, True, True]
    ]
    assert knowledge.releases_of(0) == [1, 3]
