"""Schema loading, ARX hierarchies and their depth-first encoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import SchemaError
from republish.schema import Hierarchy, QIAttribute, Schema, load_schema


def brute_force_lca(hierarchy: Hierarchy, leaves: list[str]) -> str:
    """Lowest level at which every leaf has the same ancestor, found from all the leaves."""
    paths = {leaf: path for leaf, path in zip(hierarchy.leaves, hierarchy.paths, strict=True)}
    for level in range(hierarchy.height):
        labels = {paths[leaf][level:] for leaf in leaves}
        if len(labels) == 1:
            return paths[leaves[0]][level]
    raise AssertionError("no common ancestor")


def test_bundled_schema_loads_all_kinds(data_dir: Path) -> None:
    schema = load_schema(data_dir / "schema.toml")
    assert schema.identifier == "name" and schema.sensitive == "disease"
    assert [qi.kind for qi in schema.qis] == ["numeric", "ordered", "hierarchy"]
    country = schema.qi("country").hierarchy
    assert country is not None
    # Depth-first order keeps each continent contiguous although the file interleaves them.
    assert country.leaves == ("France", "Germany", "Japan", "China", "USA", "Canada")
    assert country.label(2, 3) == "Asia"
    assert country.label(0, 2) == "*"
    assert country.label_ranges()["America"] == (4, 5)
    assert schema.published_columns == ["group", "age", "education", "country", "disease"]


def test_schema_round_trips_through_dict(data_dir: Path) -> None:
    schema = load_schema(data_dir / "schema.toml")
    again = Schema.from_dict(schema.to_dict())
    assert again.fingerprint() == schema.fingerprint()
    assert again.qi("country").hierarchy is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('id = "n"\n[[qi]]\nname = "a"\n', "missing key 'sensitive'"),
        ('id = 3\nsensitive = "d"\n[[qi]]\nname = "a"\n', "'id' must be a column name"),
        ('id = "n"\nsensitive = "d"\n', "no [[qi]] entries"),
        ('id = "n"\nsensitive = "d"\n[[qi]]\nname = "a"\nkind = "weird"\n', "kind 'weird'"),
        ('id = "n"\nsensitive = "d"\n[[qi]]\nname = "a"\nkind = "ordered"\n', "needs an 'order'"),
        ('id = "n"\nsensitive = "n"\n[[qi]]\nname = "a"\n', "play two roles"),
        (
            'id = "n"\nsensitive = "d"\n[[qi]]\nname = "a"\nkind = "hierarchy"\n'
            'hierarchy = "nope.csv"\n',
            "nope.csv",
        ),
        ('id = "n"\nsensitive = "d"\n[[qi', "not valid TOML"),
    ],
)
def test_bad_schema_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "schema.toml"
    path.write_text(text)
    with pytest.raises(SchemaError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_schema(path)


def test_hierarchy_must_be_a_tree() -> None:
    with pytest.raises(SchemaError, match="two parents"):
        Hierarchy.from_rows([["a", "X", "R", "*"], ["b", "X", "S", "*"]])
    with pytest.raises(SchemaError, match="repeats row 1"):
        Hierarchy.from_rows([["a", "*"], ["a", "*"]])
    with pytest.raises(SchemaError, match="levels"):
        Hierarchy.from_rows([["a", "X", "*"], ["b", "*"]])


def test_ordered_qi_rejects_repeated_values() -> None:
    with pytest.raises(SchemaError, match="twice"):
        QIAttribute("edu", kind="ordered", order=("a", "a"))


@st.composite
def random_hierarchies(draw: st.DrawFn) -> Hierarchy:
    """Random trees of height 2-4 whose rows come in a random (interleaved) order."""
    height = draw(st.integers(2, 4))
    leaves = draw(st.integers(2, 12))
    rows = []
    for leaf in range(leaves):
        path = [f"leaf{leaf}"]
        # Parent labels are chosen so that each node has exactly one parent.
        branch = draw(st.integers(0, 2))
        for level in range(1, height - 1):
            branch = branch * 3 + draw(st.integers(0, 2)) if level > 1 else branch
            path.append(f"L{level}-{branch}")
        path.append("*")
        rows.append(path)
    # Make each level-l label determine its parent by suffix relabelling.
    fixed = [
        [row[0]] + ["/".join(row[level:-1]) or "*" for level in range(1, height - 1)] + ["*"]
        for row in rows
    ]
    order = draw(st.permutations(range(leaves)))
    return Hierarchy.from_rows([fixed[i] for i in order])


@settings(max_examples=60, deadline=None)
@given(random_hierarchies(), st.data())
def test_lca_from_extreme_codes_equals_brute_force(
    hierarchy: Hierarchy, data: st.DataObject
) -> None:
    codes = data.draw(st.lists(st.integers(0, len(hierarchy.leaves) - 1), min_size=1, max_size=6))
    leaves = [hierarchy.leaves[c] for c in codes]
    assert hierarchy.label(min(codes), max(codes)) == brute_force_lca(hierarchy, leaves)
    covered = hierarchy.covered_leaves(np.array([min(codes)]), np.array([max(codes)]))[0]
    label = brute_force_lca(hierarchy, leaves)
    level = next(lv for lv in range(hierarchy.height) if hierarchy.paths[codes[0]][lv] == label)
    expected = sum(1 for p in hierarchy.paths if p[level:] == hierarchy.paths[codes[0]][level:])
    assert covered == expected


def test_adult_hierarchies_load(adult_dir: Path) -> None:
    for path in sorted(adult_dir.glob("adult_hierarchy_*.csv")):
        hierarchy = Hierarchy.from_file(path)
        assert hierarchy.paths[0][-1] == "*"
        # Every subtree is a contiguous range of codes.
        for level in range(hierarchy.height):
            ids = hierarchy.node_ids[level]
            changes = np.count_nonzero(np.diff(ids)) + 1
            assert changes == len(np.unique(ids)), path.name
    age = Hierarchy.from_file(adult_dir / "adult_hierarchy_age.csv")
    assert len(age.leaves) == 100 and age.height == 5
    education = Hierarchy.from_file(adult_dir / "adult_hierarchy_education.csv")
    codes = education.code_of()
    assert education.label(codes["Bachelors"], codes["Some-college"]) == "Undergraduate"
