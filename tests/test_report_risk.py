"""Achieved k and l, prosecutor risk and the intersection-audit series, on hand-made tables
with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from republish.errors import InputError, ParameterError
from republish.principles.k_anonymity import check_k_anonymity
from republish.principles.l_diversity import check_l_diversity
from republish.release import build_release
from republish.report.risk import table_risk
from republish.report.series import intersection_series
from republish.schema import QIAttribute, Schema
from republish.tables import validate_table

SCHEMA = Schema(identifier="name", sensitive="disease", qis=(QIAttribute("age"),))

#: group 1: a a b b c (|G| 5, top 2: 5 // 2 = 2, 3 distinct); group 2: a b c d (4, 4, 4);
#: group 3: a a a b b c (6, top 3: 2, 3 distinct). k = 4, l = 2, distinct l = 3.
GROUPS = {
    1: ("[20, 29]", ["a", "a", "b", "b", "c"]),
    2: ("[30, 39]", ["a", "b", "c", "d"]),
    3: ("[40, 49]", ["a", "a", "a", "b", "b", "c"]),
}


def published(with_group: bool = True) -> pd.DataFrame:
    rows = [(g, box, v) for g, (box, values) in GROUPS.items() for v in values]
    frame = pd.DataFrame(rows, columns=["group", "age", "disease"])
    frame = frame.sample(frac=1.0, random_state=4).reset_index(drop=True)
    return frame if with_group else frame.drop(columns="group")


@pytest.mark.parametrize("with_group", [True, False])
def test_known_answers(with_group: bool) -> None:
    risk = table_risk(published(with_group), SCHEMA)
    assert (risk.records, risk.groups, risk.classes) == (15, 3, 3)
    assert (risk.k, risk.l, risk.l_distinct) == (4, 2, 3)
    assert risk.highest_risk == pytest.approx(1 / 4)
    assert risk.average_risk == pytest.approx(3 / 15)  # mean of 1/|G| over the records
    # risks 1/5 (5 rows), 1/4 (4 rows), 1/6 (6 rows): only 1/4 is strictly above 0.2
    assert risk.records_at_risk == pytest.approx(4 / 15)
    assert table_risk(published(with_group), SCHEMA, 0.19).records_at_risk == \
        pytest.approx(9 / 15)
    assert table_risk(published(with_group), SCHEMA, 0.25).records_at_risk == 0.0


def test_k_and_l_are_the_largest_the_verifiers_accept() -> None:
    frame = published()
    risk = table_risk(frame, SCHEMA)
    for k in range(1, 8):
        assert check_k_anonymity(frame, SCHEMA, k).ok == (k <= risk.k)
    for l in range(1, 6):  # noqa: E741
        assert check_l_diversity(frame, SCHEMA, l).ok == (l <= risk.l)


def test_exact_qis_link_each_row() -> None:
    """A permutation publication (exact QIs, values permuted in each group): every QI tuple
    is its own class, so k = 1 and the highest risk is 1; l is still the groups' (2)."""
    frame = pd.DataFrame({"group": [1, 1, 2, 2, 2, 2], "age": ["20", "21", "30", "30", "31",
                                                                 "32"],
                          "disease": ["a", "b", "a", "b", "a", "b"]})
    risk = table_risk(frame, SCHEMA)
    assert (risk.groups, risk.classes, risk.k, risk.l, risk.l_distinct) == (2, 5, 1, 2, 2)
    assert risk.highest_risk == 1.0
    assert risk.average_risk == pytest.approx(5 / 6)
    assert risk.records_at_risk == pytest.approx(1.0)  # risks 1 and 1/2, all above 0.2
    assert table_risk(frame, SCHEMA, 0.5).records_at_risk == pytest.approx(4 / 6)


def test_empty_table_and_bad_inputs() -> None:
    empty = table_risk(published().iloc[:0], SCHEMA)
    assert (empty.records, empty.k, empty.l, empty.highest_risk) == (0, 0, 0, 0.0)
    with pytest.raises(ParameterError, match="risk threshold"):
        table_risk(published(), SCHEMA, 1.5)
    with pytest.raises(InputError, match="disease"):
        table_risk(published().drop(columns="disease"), SCHEMA)


def _release(number: int, rows: list[tuple[str, int, str]]):  # type: ignore[no-untyped-def]
    frame = pd.DataFrame(rows, columns=["name", "age", "disease"])
    table = validate_table(frame, SCHEMA)
    return build_release(number, table, [0] * len(rows), SCHEMA,
                         rng=np.random.default_rng(number))


def test_intersection_series_finds_the_vulnerable_individual() -> None:
    """Ann sits with Ben (cold) in release 1 and with Dee (ulcer) in release 2: only flu is
    in both candidate sets, so after release 2 she is vulnerable (risk 1)."""
    first = _release(1, [("Ann", 30, "flu"), ("Ben", 32, "cold")])
    second = _release(2, [("Ann", 30, "flu"), ("Dee", 29, "ulcer")])
    one, two = intersection_series([first, second])
    assert one == {"individuals": 2, "vulnerable": 0, "inconsistent": 0,
                   "audit_highest_risk": 0.5}
    assert two == {"individuals": 3, "vulnerable": 1, "inconsistent": 0,
                   "audit_highest_risk": 1.0}
    # Ann kept with a flu/ulcer signature in both releases: nobody is vulnerable.
    safe = _release(1, [("Ann", 30, "flu"), ("Eve", 31, "ulcer")])
    assert intersection_series([safe, second])[1]["vulnerable"] == 0
    assert intersection_series([]) == []
