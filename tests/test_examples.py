"""The hospital example (m-invariance paper, Tables 1-3) shipped as package data."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from republish.examples import HospitalExample, load_hospital
from republish.generalization import group_boxes, parse_boxes
from republish.release import Release
from republish.tables import encode_qis

PAPER_GROUPS = {
    "t1_star": [{"Bob", "Alice"}, {"Andy", "David"}, {"Gary", "Helen"},
                {"Jane", "Ken", "Linda"}, {"Paul", "Steve"}],
    "t2_star": [{"Bob", "David"}, {"Emily", "Jane", "Linda"}, {"Gary", "Mary"},
                {"Ray", "Steve"}, {"Tom", "Vince"}],
    "t3_star": [{"Bob"}, {"David", "Emily"}, {"Jane", "Linda"}, {"Gary", "Mary"},
                {"Ray", "Steve"}, {"Tom", "Vince"}],
}
DATA_FILES = ["schema.toml", "table1a.csv", "table2a.csv", "table1b.csv", "table2b.csv",
              "table3a.csv", "counterfeits3b.csv", "assignment1b.csv", "assignment2b.csv",
              "assignment3a.csv"]


@pytest.fixture(scope="module")
def hospital() -> HospitalExample:
    return load_hospital()


def _members(release: Release) -> list[set[str]]:
    assignment = release.assignment
    return [set(names) for _, names in
            assignment.groupby("group", sort=True)[release.schema.identifier]]


def test_package_data_is_installed() -> None:
    folder = resources.files("republish.examples").joinpath("hospital")
    for name in DATA_FILES:
        assert folder.joinpath(name).is_file(), name


def test_microdata_and_schema(hospital: HospitalExample) -> None:
    schema = hospital.schema
    assert (schema.identifier, schema.sensitive, schema.qi_names) == ("name", "disease",
                                                                      ["age", "zip"])
    assert [qi.kind for qi in schema.qis] == ["numeric", "numeric"]
    assert len(hospital.t1) == len(hospital.t2) == 11
    bob = hospital.t1.set_index("name").loc["Bob"]
    assert (bob["age"], bob["zip"], bob["disease"]) == (21.0, 12000.0, "dyspepsia")
    deleted = set(hospital.t1["name"]) - set(hospital.t2["name"])
    inserted = set(hospital.t2["name"]) - set(hospital.t1["name"])
    assert deleted == {"Alice", "Andy", "Helen", "Ken", "Paul"}
    assert inserted == {"Emily", "Mary", "Ray", "Tom", "Vince"}


@pytest.mark.parametrize("name", ["t1_star", "t2_star", "t3_star"])
def test_groups_match_the_paper(hospital: HospitalExample, name: str) -> None:
    release: Release = getattr(hospital, name)
    assert _members(release) == PAPER_GROUPS[name]
    assert list(release.assignment.columns) == ["name", "group", "age", "zip", "disease"]
    assert list(release.published.columns) == ["group", "age", "zip", "disease"]
    table = hospital.t1 if name == "t1_star" else hospital.t2
    assert set(release.assignment["name"]) == set(table["name"])


@pytest.mark.parametrize("name", ["t1_star", "t2_star", "t3_star"])
def test_published_boxes_recomputed_from_microdata(hospital: HospitalExample, name: str) -> None:
    release: Release = getattr(hospital, name)
    schema = hospital.schema
    boxes = group_boxes(encode_qis(release.assignment, schema),
                        release.assignment["group"].to_numpy())
    low, high = parse_boxes(release.published, schema)
    published_groups = release.published["group"].to_numpy()
    for g, group in enumerate(boxes.groups):
        rows = published_groups == group
        # Every row of a group shows the same box.
        assert (low[rows] == low[rows][0]).all() and (high[rows] == high[rows][0]).all()
        box = (low[rows][0], high[rows][0])
        if name == "t3_star" and group == 1:
            # Bob alone (plus c1): the paper keeps his Table 1b box [21, 22] x [12k, 14k].
            assert box[0].tolist() == [21, 12000] and box[1].tolist() == [22, 14000]
            assert (box[0] <= boxes.low[g]).all() and (boxes.high[g] <= box[1]).all()
        else:
            assert box[0].tolist() == boxes.low[g].tolist(), (name, group)
            assert box[1].tolist() == boxes.high[g].tolist(), (name, group)


@pytest.mark.parametrize("name", ["t1_star", "t2_star", "t3_star"])
def test_published_values_are_real_rows_plus_counterfeits(
    hospital: HospitalExample, name: str
) -> None:
    release: Release = getattr(hospital, name)
    real = release.assignment.groupby("group")["disease"].apply(sorted).to_dict()
    shown = release.published.groupby("group")["disease"].apply(sorted).to_dict()
    fakes = dict(zip(release.counterfeits["group"], release.counterfeits["count"], strict=True))
    assert set(real) == set(shown)
    for group in real:
        assert len(shown[group]) - len(real[group]) == fakes.get(group, 0)
        remaining = list(shown[group])
        for value in real[group]:
            remaining.remove(value)
        # A group never shows a value twice (m-uniqueness of the paper's tables).
        assert len(set(shown[group])) == len(shown[group])


def test_table_3_counterfeits(hospital: HospitalExample) -> None:
    release = hospital.t3_star
    assert (release.number, len(release.published)) == (2, 13)
    assert dict(zip(release.counterfeits["group"], release.counterfeits["count"],
                    strict=True)) == {1: 1, 3: 1}
    assert release.counterfeits["group"].dtype == np.int64
    assert release.counterfeit_total() == 2
    assert hospital.t1_star.counterfeit_total() == hospital.t2_star.counterfeit_total() == 0
    assert (hospital.t1_star.number, hospital.t2_star.number) == (1, 2)
    signatures = release.signatures()
    assert signatures[1] == {"dyspepsia", "bronchitis"}
    assert signatures[3] == {"dyspepsia", "flu", "gastritis"}


def test_bob_leaks_in_2b_but_not_in_3a(hospital: HospitalExample) -> None:
    first = hospital.t1_star.signature_of()
    leaked = first["Bob"] & hospital.t2_star.signature_of()["Bob"]
    assert leaked == {"dyspepsia"}
    # Table 3a keeps the signature of every row present in both releases (2-invariance).
    third = hospital.t3_star.signature_of()
    for name in set(first) & set(third):
        assert first[name] == third[name], name
