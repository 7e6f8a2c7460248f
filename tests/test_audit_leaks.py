"""Leaks visible in published files alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from republish.audit.leaks import find_leaks, find_leaks_in_file
from republish.examples.hospital import load_hospital
from republish.release import build_release, write_release
from republish.schema import make_schema
from republish.tables import validate_table


@pytest.fixture(scope="module")
def hospital():
    return load_hospital()


def _big_release(seed: int = 0):
    """200 rows in groups of 4 distinct values, some groups completed by counterfeits."""
    rng = np.random.default_rng(seed)
    schema = make_schema("id", "sa", ["x", "y"])
    n = 200
    groups = np.repeat(np.arange(50), 4)
    values = np.tile(["a", "b", "c", "d"], 50)
    keep = np.ones(n, dtype=bool)
    keep[np.arange(0, 40, 4)] = False  # ten groups lose their "a" row ...
    table = validate_table(pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "x": groups * 10 + rng.integers(0, 5, n),
        "y": rng.integers(0, 100, n),
        "sa": values,
    }).iloc[keep], schema)
    fakes = {int(g): ["a"] for g in range(10)}  # ... and get an "a" counterfeit instead
    release = build_release(1, table, groups[keep], schema, fakes, rng=rng)
    return schema, release


def checks(findings, severity: str = "leak") -> set[str]:
    return {f.check for f in findings if f.severity == severity}


def test_clean_release_has_no_finding(tmp_path) -> None:
    schema, release = _big_release()
    paths = write_release(release, tmp_path)
    findings = find_leaks_in_file(paths[0], schema, paths[1], release=1)
    assert findings == []


def test_paper_tables_only_warn_about_group_order(hospital, tmp_path) -> None:
    findings = find_leaks(hospital.t3_star.published, hospital.schema,
                          hospital.t3_star.counterfeits, release=2)
    assert checks(findings) == set()
    assert checks(findings, "warning") == {"row-order"}


def test_identifier_and_unique_columns(hospital) -> None:
    published = hospital.t1_star.published.copy()
    published.insert(0, "name", hospital.t1["name"].to_numpy())
    published["row"] = range(len(published))
    findings = find_leaks(published, hospital.schema)
    messages = " ".join(f.message for f in findings if f.check == "identifier-column")
    assert "identifier column 'name'" in messages
    assert "'row', identifier-like" in messages


def test_appended_counterfeits_are_caught() -> None:
    schema, release = _big_release()
    published = release.published
    fake_groups = release.counterfeits["group"].tolist()
    # Rebuild the file the careless way: real rows first, one counterfeit per group at the end.
    tail_rows = [published.index[(published["group"] == g) & (published["sa"] == "a")][0]
                 for g in fake_groups]
    ordered = pd.concat([published.drop(index=tail_rows), published.loc[tail_rows]])
    findings = find_leaks(ordered.reset_index(drop=True), schema, release.counterfeits)
    assert "row-order" in checks(findings)
    grouped = published.sort_values("group", kind="stable").reset_index(drop=True)
    assert "row-order" in checks(find_leaks(grouped, schema, release.counterfeits), "warning")


def test_counterfeit_with_its_own_box_is_caught(hospital) -> None:
    published = hospital.t3_star.published.copy()
    fake = published.index[(published["group"] == 3) & (published["disease"] == "gastritis")][0]
    published.loc[fake, "age"] = "[37, 44]"
    findings = find_leaks(published, hospital.schema, hospital.t3_star.counterfeits)
    assert [f.groups for f in findings if f.check == "group-box"] == [(3,)]
    published.loc[fake, "age"] = "[37,43]"  # same box, different spelling
    findings = find_leaks(published, hospital.schema, hospital.t3_star.counterfeits)
    assert [f.groups for f in findings if f.check == "formatting" and f.severity == "leak"] == [
        (3,)
    ]


def test_raw_text_checks(hospital, tmp_path) -> None:
    schema, release = _big_release(1)
    path = write_release(release, tmp_path)[0]
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = lines[5].rstrip("\n") + "\r\n"  # one row written by another tool
    value = lines[7].rstrip("\n").rsplit(",", 1)
    lines[7] = f'{value[0]},"{value[1]}"\n'  # one quoted sensitive value
    path.write_text("".join(lines))
    messages = " ".join(
        f.message for f in find_leaks_in_file(path, schema) if f.check == "formatting"
    )
    assert "line terminators" in messages
    assert "different raw spellings" in messages


def test_counterfeit_table_consistency(hospital) -> None:
    bad = pd.DataFrame({"group": [1, 9, 3, 3], "count": [2, 1, 0, 1]})
    findings = find_leaks(hospital.t3_star.published, hospital.schema, bad)
    text = " ".join(f.message for f in findings if f.check == "counterfeit-table")
    assert "twice" in text and "absent" in text and "no real row" in text
