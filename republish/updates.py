"""Series with internal updates, as in the m-Distinct paper's experiments (§VI-A).

Li & Zhou generate updates "according to the semantic of each attribute" between two
releases:

* age grows by one per release (up to a maximum);
* gender never changes;
* marital status and education follow their semantic order (education never decreases;
  nobody becomes never-married again);
* the sensitive attribute changes on a given number of records (5,000 per release in the
  paper), within a candidate set of *diameter* ``d``: a value stays or moves to one of the
  ``d - 1`` other values of its candidate set with equal probabilities.

:func:`block_transitions` builds that sensitive model: consecutive blocks of ``d`` values
in a semantic order (the hierarchy's leaf order for Adult's occupation, code order for the
synthetic census), complete inside a block, so ``CUS(a)`` is ``a``'s block and has size
``d`` (the last block holds the remainder when ``d`` does not divide the domain).
:func:`update_series` produces ``T(1), ..., T(H)``: a random first sample, then per
release ``deleted`` random deletions, the internal updates of the records that stay, and
``inserted`` insertions from the unused rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from republish.datasets import datasets_dir
from republish.errors import InputError, ParameterError
from republish.hierarchy import Hierarchy
from republish.schema import Schema
from republish.transitions import TransitionModel

__all__ = [
    "ADULT_EDUCATION_ORDER",
    "QIUpdate",
    "adult_occupation_order",
    "adult_qi_updates",
    "block_transitions",
    "census_qi_updates",
    "monotone_transitions",
    "releases_possible",
    "update_series",
]

#: Adult's education levels from lowest to highest.
ADULT_EDUCATION_ORDER = (
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school",
    "Doctorate",
)

_ADULT_MARITAL = {
    "Never-married": ("Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"),
    "Married-civ-spouse": ("Divorced", "Separated", "Widowed", "Married-spouse-absent"),
    "Married-spouse-absent": ("Married-civ-spouse", "Divorced", "Separated", "Widowed"),
    "Married-AF-spouse": ("Married-civ-spouse", "Divorced", "Separated", "Widowed"),
    "Separated": ("Divorced", "Married-civ-spouse"),
    "Divorced": ("Married-civ-spouse",),
    "Widowed": ("Married-civ-spouse",),
}


@dataclass(frozen=True)
class QIUpdate:
    """How one QI changes between releases.

    ``increment``: numeric, ``+step`` per release, capped at ``maximum``; ``transitions``:
    each record moves with probability ``rate`` to a uniformly chosen other value of
    ``CUS(value)`` in ``model``; ``fixed``: never changes.
    """

    kind: Literal["increment", "transitions", "fixed"] = "fixed"
    step: float = 1.0
    maximum: float | None = None
    model: TransitionModel | None = None
    rate: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("increment", "transitions", "fixed"):
            raise ParameterError(f"QI update kind {self.kind!r}: use increment, transitions "
                                 "or fixed.")
        if self.kind == "transitions" and (self.model is None or not 0 <= self.rate <= 1):
            raise ParameterError("a 'transitions' QI update needs a model and a rate in [0, 1].")


def block_transitions(values: Sequence[str], diameter: int) -> TransitionModel:
    """Sensitive model of diameter ``d``: blocks of ``d`` consecutive values of ``values``
    (a semantic order), each value moving to any value of its block with probability
    ``1/|block|`` (staying included). ``d = 1`` is the identity (m-invariance)."""
    values = [str(v) for v in values]
    if len(set(values)) != len(values) or not values:
        raise ParameterError("give the sensitive domain as distinct values, in semantic order.")
    if isinstance(diameter, bool) or not isinstance(diameter, int) or diameter < 1:
        raise ParameterError(f"diameter must be a positive integer, got {diameter!r}.")
    edges = []
    for start in range(0, len(values), diameter):
        block = values[start:start + diameter]
        for a in block:
            edges += [(a, b, 1.0 / len(block)) for b in block]
    return TransitionModel.from_edges(edges, values)


def monotone_transitions(order: Sequence[str]) -> TransitionModel:
    """Every value may move to any later value of ``order`` (education never decreases)."""
    return TransitionModel.from_edges(
        [(a, b) for i, a in enumerate(order) for b in order[i + 1:]], order)


def adult_qi_updates(rate: float = 0.02, maximum_age: float = 100.0) -> dict[str, QIUpdate]:
    """§VI-A's QI rules for Adult (age, sex, marital-status, education); other QIs fixed."""
    marital = TransitionModel.from_edges(
        [(a, b) for a, targets in _ADULT_MARITAL.items() for b in targets])
    return {
        "age": QIUpdate("increment", step=1.0, maximum=maximum_age),
        "sex": QIUpdate("fixed"),
        "marital-status": QIUpdate("transitions", model=marital, rate=rate),
        "education": QIUpdate("transitions", model=monotone_transitions(ADULT_EDUCATION_ORDER),
                              rate=rate),
    }


def census_qi_updates(schema: Schema, rate: float = 0.02) -> dict[str, QIUpdate]:
    """The same rules for :func:`republish.datasets.synthetic_census`."""
    education = schema.qi("education").order or ()
    age = schema.qi("age").domain
    return {
        "age": QIUpdate("increment", step=1.0, maximum=age[1] if age else None),
        "gender": QIUpdate("fixed"),
        "education": QIUpdate("transitions", model=monotone_transitions(education), rate=rate),
        "birthplace": QIUpdate("fixed"),
    }


def adult_occupation_order(directory: str | Path | None = None) -> tuple[str, ...]:
    """Adult's occupations in the leaf order of their hierarchy (similar jobs adjacent)."""
    base = Path(directory) if directory is not None else datasets_dir()
    candidates = [] if base is None else [base / "adult_hierarchy_occupation.csv",
                                          base / "adult" / "adult_hierarchy_occupation.csv"]
    for path in candidates:
        if path.is_file():
            return tuple(Hierarchy.from_file(path).leaves)
    raise InputError("adult_hierarchy_occupation.csv not found; set REPUBLISH_DATASETS.")


def releases_possible(rows: int, initial: int, inserted: int) -> int:
    """How many releases the table's rows allow (no row inserted twice)."""
    if inserted <= 0:
        raise ParameterError("inserted must be positive to bound the series by the pool.")
    return 1 + max(0, rows - initial) // inserted


def _update_qis(frame: pd.DataFrame, rules: Mapping[str, QIUpdate],
                rng: np.random.Generator) -> None:
    for name, rule in rules.items():
        if name not in frame.columns or rule.kind == "fixed":
            continue
        if rule.kind == "increment":
            grown = frame[name].to_numpy(dtype=np.float64) + rule.step
            if rule.maximum is not None:
                grown = np.minimum(grown, rule.maximum)
            frame[name] = grown
            continue
        assert rule.model is not None
        current = frame[name].astype(str).to_numpy(dtype=object)
        movers = np.flatnonzero(rng.random(len(frame)) < rule.rate)
        for i in movers.tolist():
            targets = sorted(rule.model.cus(current[i]) - {current[i]})
            if targets:
                current[i] = targets[int(rng.integers(len(targets)))]
        frame[name] = current


def _update_sensitive(values: np.ndarray, count: int, model: TransitionModel,
                      rng: np.random.Generator) -> np.ndarray:
    domain = sorted(set(model.values) | set(values.tolist()))
    index = {v: k for k, v in enumerate(domain)}
    matrix = model.probabilities(domain)
    out = values.copy()
    for i in rng.choice(len(values), size=min(count, len(values)), replace=False).tolist():
        row = matrix[index[out[i]]]
        out[i] = domain[int(rng.choice(len(domain), p=row / row.sum()))]
    return out


def update_series(
    table: pd.DataFrame,
    schema: Schema,
    transitions: TransitionModel,
    *,
    initial: int,
    deleted: int,
    inserted: int,
    releases: int,
    sa_updates: int,
    seed: int,
    qi_updates: Mapping[str, QIUpdate] | None = None,
) -> list[pd.DataFrame]:
    """Microdata ``T(1), ..., T(releases)`` with external and internal updates (§VI-A).

    ``T(1)`` is a random sample of ``initial`` rows. ``T(j)`` removes ``deleted`` random
    records of ``T(j-1)``, applies ``qi_updates`` to the records that stay and changes the
    sensitive value of ``sa_updates`` of them (drawn from ``transitions``; a draw may keep
    the value), then appends ``inserted`` unused rows. Same arguments, same series.

    Raises
    ------
    ParameterError
        on bad sizes, or when the table cannot supply the insertions.
    """
    if schema.identifier not in table.columns:
        raise InputError(f"identifier column {schema.identifier!r} is not in the table.")
    if releases < 1 or not 1 <= initial <= len(table) or not 0 <= deleted <= initial:
        raise ParameterError(f"releases={releases}, initial={initial}, deleted={deleted}: "
                             f"need releases >= 1 and 0 <= deleted <= initial <= {len(table)}.")
    if inserted < 0 or sa_updates < 0:
        raise ParameterError("inserted and sa_updates must be non-negative.")
    smallest = min(initial + j * (inserted - deleted) for j in range(releases - 1)) \
        if releases > 1 else initial
    if releases > 1 and smallest < deleted:
        raise ParameterError(
            f"a table shrinks to {smallest} rows before a release deleting {deleted}; delete "
            "fewer rows or insert more.")
    needed = initial + (releases - 1) * inserted
    if needed > len(table):
        raise ParameterError(
            f"{releases} releases need {needed} distinct rows, the table has {len(table)}; "
            f"at most {releases_possible(len(table), initial, inserted or 1)} releases.")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table))
    current = table.iloc[order[:initial]].reset_index(drop=True).copy()
    used = initial
    series = [current]
    for _ in range(releases - 1):
        keep = np.ones(len(current), dtype=bool)
        keep[rng.choice(len(current), size=deleted, replace=False)] = False
        staying = current.loc[keep].reset_index(drop=True).copy()
        _update_qis(staying, qi_updates or {}, rng)
        staying[schema.sensitive] = _update_sensitive(
            staying[schema.sensitive].astype(str).to_numpy(dtype=object), sa_updates,
            transitions, rng)
        fresh = table.iloc[order[used:used + inserted]].reset_index(drop=True)
        used += inserted
        current = pd.concat([staying, fresh], ignore_index=True)
        series.append(current)
    return series
