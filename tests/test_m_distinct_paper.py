"""The m-Distinct paper's running example (Li & Zhou, Tables I-VI, Examples 2-5).

Diseases update within their organ class (Example 5: CUS(Pneumonia) holds Flu and Lung
Cancer, CUS(Dyspepsia) holds Gastritis; glaucoma may become cataract).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from republish.audit.knowledge import knowledge_from_releases
from republish.audit.sug import sug_attack_groups
from republish.audit.sug_report import audit_releases_sug
from republish.principles.m_distinct import (
    check_m_distinct_pair,
    check_m_distinct_sequence,
    verify_m_distinct_release,
)
from republish.release import Release, build_release
from republish.schema import make_schema
from republish.solver.m_distinct import publish_m_distinct
from republish.tables import validate_table
from republish.transitions import TransitionModel, is_legal_update_instance

SCHEMA = make_schema("name", "disease", ["zip", "hours"])
CLASSES = [["Dyspepsia", "Gastritis"], ["Pneumonia", "Flu", "Lung Cancer"],
           ["Glaucoma", "Cataract"]]
MODEL = TransitionModel.from_edges(
    [(a, b) for members in CLASSES for a in members for b in members if a != b])
COLUMNS = ["name", "zip", "hours", "disease"]
T1 = pd.DataFrame([
    ("Ken", 14000, 20, "Dyspepsia"), ("Julia", 16000, 23, "Pneumonia"),
    ("Tom", 24000, 32, "Pneumonia"), ("Harry", 26000, 35, "Gastritis"),
    ("Lily", 29000, 17, "Glaucoma"), ("Ben", 31000, 19, "Flu"),
], columns=COLUMNS)
T2 = pd.DataFrame([
    ("Ken", 14000, 20, "Dyspepsia"), ("Julia", 18000, 31, "Lung Cancer"),
    ("Tom", 15000, 27, "Pneumonia"), ("Harry", 23000, 32, "Dyspepsia"),
    ("Lily", 12000, 17, "Glaucoma"), ("Ben", 26000, 35, "Pneumonia"),
], columns=COLUMNS)


def release(number: int, table: pd.DataFrame, groups: list[int],
            counterfeits: dict[int, list[str]] | None = None) -> Release:
    return build_release(number, validate_table(table, SCHEMA), groups, SCHEMA,
                         counterfeit_values=counterfeits, rng=np.random.default_rng(number))


def paper_releases() -> dict[str, Release]:
    """Table III (T*1), Table IV (2-diverse T*2), Tables V-VI (counterfeit T*2)."""
    return {
        "table3": release(1, T1, [1, 1, 2, 2, 3, 3]),
        "table4": release(2, T2, [1, 2, 2, 3, 1, 3]),
        "table5": release(2, T2, [1, 2, 1, 2, 3, 4], {3: ["Pneumonia"], 4: ["Cataract"]}),
    }


def risks_by_name(audit: object) -> dict[tuple[str, int], tuple[int, float]]:
    return {
        (str(i), int(r)): (int(f), float(k))
        for i, r, f, k in zip(audit.identifiers, audit.releases,  # type: ignore[attr-defined]
                              audit.feasible_sizes, audit.risk, strict=True)  # type: ignore
    }


def test_example_5_cus_and_legal_instance() -> None:
    assert MODEL.cus("Pneumonia") == {"Pneumonia", "Flu", "Lung Cancer"}
    julia_uss = MODEL.uss(["Dyspepsia", "Pneumonia"])
    assert is_legal_update_instance(["Dyspepsia", "Lung Cancer"], julia_uss)
    assert not is_legal_update_instance(["Lung Cancer", "Pneumonia"], julia_uss)


def test_table_iv_is_not_2_distinct_but_table_v_is() -> None:
    tables = paper_releases()
    bad = check_m_distinct_pair(tables["table3"], tables["table4"], 2, MODEL)
    flagged = {ident for v in bad.violations for ident in v.rows}
    assert {"Ben", "Julia", "Ken", "Lily", "Tom"} <= flagged
    assert "Harry" not in flagged
    good = check_m_distinct_sequence([tables["table3"], tables["table5"]], 2, MODEL, strict=True)
    assert good.ok, good.summary()
    assert verify_m_distinct_release(tables["table5"], 2, MODEL, tables["table3"]).ok


@pytest.mark.parametrize("adversary", ["boxes", "groups"])
def test_sug_attack_exposes_ben_and_julia_in_the_2_diverse_releases(adversary: str) -> None:
    tables = paper_releases()
    sequence = [tables["table3"], tables["table4"]]
    audit = (audit_releases_sug(sequence, knowledge_from_releases(sequence), MODEL).sug
             if adversary == "boxes" else sug_attack_groups(sequence, MODEL))
    risk = risks_by_name(audit)
    # §I-A1: Ben's flu and pneumonia are both disclosed.
    assert risk["Ben", 1] == (1, 1.0) and risk["Ben", 2] == (1, 1.0)
    # Examples 2-3: Julia's old disease is disclosed, her new one has risk 1/2.
    assert risk["Julia", 1] == (1, 1.0)
    assert risk["Julia", 2] == (2, pytest.approx(0.5))
    # "the disease of Ken and Lily in both releases"
    assert risk["Ken", 1][0] == risk["Ken", 2][0] == risk["Lily", 2][0] == 1
    assert risk["Harry", 1] == (2, pytest.approx(0.5))


@pytest.mark.parametrize("adversary", ["boxes", "groups"])
def test_counterfeit_release_of_table_v_exposes_nobody(adversary: str) -> None:
    tables = paper_releases()
    sequence = [tables["table3"], tables["table5"]]
    if adversary == "boxes":
        report = audit_releases_sug(sequence, knowledge_from_releases(sequence), MODEL)
        assert not report.found and report.to_dict()["vulnerable"] == 0
        audit = report.sug
    else:
        audit = sug_attack_groups(sequence, MODEL)
    assert (audit.feasible_sizes == 2).all()
    assert np.allclose(audit.risk, 0.5)


def test_release_step_republishes_the_example_without_exposure() -> None:
    first = publish_m_distinct(T1, SCHEMA, 2, MODEL, rng=np.random.default_rng(3))
    second = publish_m_distinct(T2, SCHEMA, 2, MODEL, first.state, rng=np.random.default_rng(4),
                                workers=1, time_limit=5)
    sequence = [first.release, second.release]
    assert check_m_distinct_sequence(sequence, 2, MODEL).ok
    audit = sug_attack_groups(sequence, MODEL)
    assert audit.feasible_sizes.min() >= 2
    assert second.report.ok and second.certificate.status in ("OPTIMAL", "FEASIBLE", "HEURISTIC")
