"""ε-inclusion verifier and SA categories, on the paper's Tables 1-2 (ε-inclusion paper)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import EPS_SCHEMA, EPS_TABLE_1A, EPS_TABLE_2A

from republish.categories import SACategories
from republish.errors import InputError, ParameterError
from republish.principles.eps_inclusion import (
    check_eps_distinctness,
    check_eps_inclusion_pair,
    check_eps_inclusion_sequence,
    check_exact_publication,
    check_substitutions,
    distinctness_problem,
    last_signatures,
)
from republish.release import COUNT, GROUP, Release
from republish.schema import Hierarchy

SCHEMA = EPS_SCHEMA
IDENTITY = SACategories.identity()

# Table 1a (microdata T(1)) and Table 2a (T(2)); zip codes in thousands.
T1 = EPS_TABLE_1A
T2 = EPS_TABLE_2A
# Table 1b: the groups of T*(1) and their published (permuted) values.
GROUPS_1 = {"Bob": 1, "Alice": 1, "Andy": 2, "David": 2, "Gary": 3, "Helen": 3, "Jane": 4,
            "Ken": 4}
SHOWN_1 = {"Bob": "bronchitis", "Alice": "dyspepsia", "Andy": "gastritis", "David": "flu",
           "Gary": "gastritis", "Helen": "flu", "Jane": "flu", "Ken": "dyspepsia"}
# Table 2b; Mary's pneumonia is substituted by bronchitis (Table 2c: S(2) = {1: 1}).
# The extracted paper text prints Emily's zip as "12k"; Table 2a gives 21k (exact QIs).
GROUPS_2 = {"Bob": 1, "Mary": 1, "Emily": 1, "Steve": 1, "David": 2, "Gary": 2, "Ray": 3,
            "Jane": 3, "Paul": 3, "Tom": 3, "Vince": 3}
SHOWN_2 = {"Bob": "flu", "Mary": "dyspepsia", "Emily": "bronchitis", "Steve": "gastritis",
           "David": "flu", "Gary": "gastritis", "Ray": "gastritis", "Jane": "flu",
           "Paul": "dyspepsia", "Tom": "pneumonia", "Vince": "colitis"}


def _release(number: int, rows: list[tuple[str, int, int, str]], groups: dict[str, int],
             shown: dict[str, str], substitutions: dict[int, int]) -> Release:
    assignment = pd.DataFrame(rows, columns=["name", "age", "zip", "disease"])
    assignment = assignment[assignment["name"].isin(list(groups))].reset_index(drop=True)
    assignment[["age", "zip"]] = assignment[["age", "zip"]].astype(float)
    assignment.insert(1, GROUP, assignment["name"].map(groups).astype(np.int64))
    published = pd.DataFrame({
        GROUP: assignment[GROUP],
        "age": assignment["age"].astype(int).astype(str),
        "zip": assignment["zip"].astype(int).astype(str),
        "disease": assignment["name"].map(shown),
    })
    counterfeits = pd.DataFrame({GROUP: list(substitutions), COUNT: list(substitutions.values())},
                                dtype=np.int64)
    return Release(number, SCHEMA, published, counterfeits, assignment, model="exact")


@pytest.fixture
def paper() -> tuple[Release, Release]:
    return (_release(1, T1, GROUPS_1, SHOWN_1, {}), _release(2, T2, GROUPS_2, SHOWN_2, {1: 1}))


def test_paper_example_verifies_and_bobs_sets_grow(paper: tuple[Release, Release]) -> None:
    first, second = paper
    s1 = last_signatures(first)["Bob"][1]
    s2 = last_signatures(second)["Bob"][1]
    assert s1 == {"dyspepsia", "bronchitis"}
    assert s2 == {"dyspepsia", "gastritis", "flu", "bronchitis"}
    assert s1 <= s2
    assert check_eps_inclusion_pair(first, second, IDENTITY, 2, 1).ok
    assert check_eps_inclusion_sequence([first, second], IDENTITY, 2, 1).ok
    # ε = 3 is too much for group 2 of T*(2) (two rows).
    report = check_eps_inclusion_pair(first, second, IDENTITY, 3, 1)
    assert [v.group for v in report.violations] == [2]
    assert "fewer than ε" in report.violations[0].reason


def test_dropping_a_value_without_substitution_is_rejected(
    paper: tuple[Release, Release],
) -> None:
    first, second = paper
    # Mary published with her true pneumonia: Bob's group loses bronchitis.
    shown = dict(SHOWN_2, Emily="pneumonia")
    dropped = _release(2, T2, GROUPS_2, shown, {})
    report = check_eps_inclusion_pair(first, dropped, IDENTITY, 2, 1)
    assert not report.ok
    reasons = " ".join(v.reason for v in report.violations)
    assert "Bob" in reasons and "{bronchitis}" in reasons
    assert not check_eps_inclusion_sequence([first, dropped], IDENTITY, 2, 1).ok


def test_substitution_counts_must_match_s(paper: tuple[Release, Release]) -> None:
    first, second = paper
    before = last_signatures(first)
    assert check_substitutions(second, before).ok
    undeclared = dataclasses.replace(second, counterfeits=second.counterfeits.iloc[:0])
    report = check_substitutions(undeclared, before)
    assert not report.ok and "S(j) counts 0" in report.violations[0].reason
    wrong_group = dataclasses.replace(
        second, counterfeits=pd.DataFrame({GROUP: [3], COUNT: [1]}, dtype=np.int64))
    assert len(check_substitutions(wrong_group, before).violations) == 2
    # A substitution no old signature asks for (Sca) is refused.
    assert not check_substitutions(second, {}).ok


def test_exact_publication(paper: tuple[Release, Release]) -> None:
    _, second = paper
    assert check_exact_publication(second).ok
    moved = second.published.copy()
    moved.loc[0, "age"] = "99"
    report = check_exact_publication(dataclasses.replace(second, published=moved))
    assert [v.group for v in report.violations] == [int(moved.loc[0, GROUP])]
    extra = pd.concat([second.published, second.published.iloc[[0]]], ignore_index=True)
    assert not check_exact_publication(dataclasses.replace(second, published=extra)).ok


def test_distinctness_with_categories() -> None:
    categories = SACategories.from_pairs([("flu", "resp"), ("bronchitis", "resp"),
                                          ("gastritis", "dig"), ("dyspepsia", "dig"),
                                          ("colitis", "dig"), ("pneumonia", "resp")])
    assert distinctness_problem(["flu", "bronchitis", "gastritis", "dyspepsia"],
                                categories, 2, 2) is None
    assert "fewer than λ" in str(distinctness_problem(
        ["flu", "gastritis", "dyspepsia", "colitis"], categories, 2, 2))
    assert "more than once" in str(distinctness_problem(["flu", "flu"], categories, 1, 2))
    assert "fewer than ε" in str(distinctness_problem(["flu", "gastritis"], categories, 2, 2))
    # A third category with one value is allowed (a superset stays ε-distinct).
    assert distinctness_problem(["flu", "bronchitis", "gastritis", "dyspepsia", "x"],
                                SACategories.from_pairs([*categories.mapping.items(),  # type: ignore[union-attr]
                                                         ("x", "other")]), 2, 2) is None
    release = _release(1, T1, GROUPS_1, SHOWN_1, {})
    report = check_eps_distinctness(release, categories, 2, 1)
    # Groups 2, 3 and 4 pair a respiratory with a digestive value; group 1 too.
    assert report.ok
    assert not check_eps_distinctness(release, categories, 2, 2).ok
    with pytest.raises(InputError, match="without a category|has no category"):
        check_eps_distinctness(release, SACategories.from_pairs([("flu", "r")]), 1, 1)


def test_categories_from_files(tmp_path: Path) -> None:
    path = tmp_path / "categories.csv"
    path.write_text("disease;category\nflu;resp\ngastritis;dig\n")
    categories = SACategories.from_csv(path)
    assert categories.category("flu") == "resp"
    assert SACategories.from_dict(categories.to_dict()) == categories
    with pytest.raises(InputError, match="no category"):
        categories.category("colitis")
    hierarchy = Hierarchy.from_rows([["flu", "resp", "*"], ["asthma", "resp", "*"],
                                     ["gastritis", "dig", "*"]])
    level1 = SACategories.from_hierarchy(hierarchy, 1)
    assert level1.category("asthma") == "resp"
    assert SACategories.from_hierarchy(hierarchy, 0).category("asthma") == "asthma"
    with pytest.raises(ParameterError, match="levels 0"):
        SACategories.from_hierarchy(hierarchy, 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\nflu,resp,*\n")
    with pytest.raises(InputError, match="category-level"):
        SACategories.from_csv(bad)
    with pytest.raises(InputError, match="two categories"):
        SACategories.from_pairs([("flu", "a"), ("flu", "b")])
