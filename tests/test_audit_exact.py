"""Exact disclosure risk (Definitions 10, 13, 14) against a literal brute force; Lemma 3."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from republish.audit.exact_risk import exact_risk
from republish.audit.knowledge import knowledge_from_releases, make_knowledge
from republish.errors import InputError, ParameterError
from republish.examples.hospital import load_hospital
from republish.generalization import parse_boxes
from republish.release import build_release
from republish.schema import make_schema
from republish.tables import validate_table


@pytest.fixture(scope="module")
def hospital():
    return load_hospital()


def brute_force(releases, knowledge, invariant: bool) -> tuple[int, list[Counter[str]]]:
    """Enumerate every function U*(n) -> B(n) release by release, keep the reasonable ones.

    Per release, the rows of T*(j) are matched one-to-one to the alive rows of B(n): the
    tuples of that release and the counterfeits of R(j) (Definitions 10 and 13.1.2).
    """
    schema = knowledge.schema
    codes = knowledge.codes()
    per_release = []
    for j, release in enumerate(releases):
        published = release.published
        low, high = parse_boxes(published, schema)
        groups = published["group"].tolist()
        present = np.flatnonzero(knowledge.presence[:, j])
        alive: list[tuple[str, object]] = [("t", i) for i in present]
        for group, count in zip(release.counterfeits["group"], release.counterfeits["count"],
                                strict=True):
            alive += [("c", group)] * int(count)
        assert len(alive) == len(published)
        maps = []
        for rows in itertools.permutations(range(len(published))):
            ok = True
            for (kind, who), row in zip(alive, rows, strict=True):
                if kind == "c":
                    ok &= groups[row] == who  # Condition 3.2
                else:
                    point = codes[who]  # type: ignore[index]
                    ok &= bool(np.all(low[row] <= point) and np.all(point <= high[row]))  # 3.3
                if not ok:
                    break
            if ok:
                maps.append({i: rows[k] for k, (kind, i) in enumerate(alive) if kind == "t"})
        per_release.append(maps)
    signatures = [r.signatures() for r in releases]
    total = 0
    counts = [Counter[str]() for _ in range(len(knowledge.table))]
    for combination in itertools.product(*per_release):
        reconstructed = {}
        reasonable = True
        for i in range(len(knowledge.table)):
            lifespan = np.flatnonzero(knowledge.presence[i])
            if not len(lifespan):
                continue  # not in U(n)
            hosts = [(j, combination[j][i]) for j in lifespan]
            values = {str(releases[j].published[schema.sensitive].iloc[r]) for j, r in hosts}
            sigs = {signatures[j][releases[j].published["group"].iloc[r]] for j, r in hosts}
            if len(values) != 1 or (invariant and len(sigs) != 1):  # 1.1 and Condition 2
                reasonable = False
                break
            reconstructed[i] = values.pop()
        if reasonable:
            total += 1
            for i, value in reconstructed.items():
                counts[i][value] += 1
    return total, counts


def _tiny_sequence(seed: int, m_unique: bool):
    rng = np.random.default_rng(seed)
    schema = make_schema("id", "sa", ["x"])
    n = 6
    population = pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "x": rng.integers(0, 4, n),
        "sa": [f"v{k}" for k in rng.integers(0, 3, n)],
    })
    releases, presence = [], np.zeros((n, 2), dtype=bool)
    for j in range(2):
        alive = np.flatnonzero(rng.random(n) < 0.6)
        if len(alive) < 2:
            alive = np.arange(2)
        presence[alive, j] = True
        table = validate_table(population.iloc[alive], schema)
        groups = rng.integers(0, 2, len(alive))
        if m_unique:  # move each row to a group still lacking its value
            taken: list[set[str]] = [set(), set()]
            for k, value in enumerate(table["sa"]):
                options = [g for g in (0, 1) if value not in taken[g]]
                if not options:
                    return None
                groups[k] = options[int(rng.integers(0, len(options)))]
                taken[groups[k]].add(value)
        fakes: dict[int, list[str]] = {}
        for group in set(groups.tolist()):
            members = set(table["sa"][groups == group])
            missing = sorted({"v0", "v1", "v2"} - members)
            lonely = m_unique and len(members) < 2
            if missing and (lonely or (rng.random() < 0.5 and len(alive) < 5)):
                fakes[group] = [missing[0]]
        releases.append(build_release(j + 1, table, groups, schema, fakes, rng=rng))
    knowledge = make_knowledge(population, presence, schema, with_truth=True)
    return releases, knowledge


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), invariant=st.booleans())
def test_counts_match_brute_force(seed: int, invariant: bool) -> None:
    built = _tiny_sequence(seed, m_unique=invariant)
    assume(built is not None)
    assert built is not None
    releases, knowledge = built
    result = exact_risk(releases, knowledge, principle="m-invariance" if invariant else "none")
    total, counts = brute_force(releases, knowledge, invariant)
    assert result.total == total
    present = np.flatnonzero(knowledge.presence.any(axis=1))
    for position, row in enumerate(present):
        expected = tuple(counts[row][v] for v in result.values)
        assert result.counts[position] == expected
    if invariant and total:
        # Lemma 3's swap argument needs only m-unique tables and the signature condition.
        m = min(int(r.published.groupby("group").size().min()) for r in releases)
        posterior = result.max_posterior()
        assert posterior is not None and posterior <= Fraction(1, m)
    if not invariant:
        assert total >= 1  # the genuine surjection is always reasonable
        for position in range(len(present)):
            risk = result.risk(position)
            assert risk is not None and risk > 0


def test_bob_risk_is_one_on_tables_1b_2b(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t2_star)
    result = exact_risk(sequence, knowledge_from_releases(sequence))
    assert result.principle == "none"  # 1b -> 2b admits no signature-preserving surjection
    assert "not m-invariant" in result.note
    assert result.risks()["Bob"] == 1
    assert result.max_risk() == 1


def test_m_invariance_needs_m_unique_tables(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t2_star)
    knowledge = knowledge_from_releases(sequence)
    repeated = replace(hospital.t2_star, published=_duplicate_value(hospital.t2_star.published))
    with pytest.raises(ParameterError, match="not m-unique"):
        exact_risk((hospital.t1_star, repeated), knowledge, principle="m-invariance")
    assert exact_risk((hospital.t1_star, repeated), knowledge).principle == "none"


def _duplicate_value(published: pd.DataFrame) -> pd.DataFrame:
    out = published.copy()
    first = out.index[out["group"] == 1]
    out.loc[first, "disease"] = "flu"
    return out


def test_lemma3_on_tables_1b_3a(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t3_star)
    result = exact_risk(sequence, knowledge_from_releases(sequence), principle="m-invariance")
    assert result.total > 0
    assert all(risk <= Fraction(1, 2) for risk in result.risks().values())
    assert result.max_posterior() == Fraction(1, 2)
    assert exact_risk(sequence, knowledge_from_releases(sequence)).principle == "m-invariance"


def test_refuses_large_inputs(hospital) -> None:
    sequence = (hospital.t1_star, hospital.t3_star)
    knowledge = knowledge_from_releases(sequence)
    with pytest.raises(ParameterError, match="max_individuals"):
        exact_risk(sequence, knowledge, max_individuals=10)
    with pytest.raises(ParameterError, match="max_states"):
        exact_risk(sequence, knowledge, max_states=5)


def test_counts_must_agree_with_knowledge(hospital) -> None:
    # Dropping R(2) leaves two rows of Table 3a without an individual.
    sequence = (hospital.t1_star, hospital.t3_star)
    knowledge = knowledge_from_releases(sequence)
    with pytest.raises(InputError, match="no surjection exists"):
        exact_risk(sequence, knowledge, counterfeits=[None, None])
