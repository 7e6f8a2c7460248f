"""The offline optimum of a known m-invariant series, from its microdata tables.

:func:`offline_optimum` turns a series of tables (one per release, the identifier column
naming the person) into an :class:`~republish.models.offline_series.OfflineSeriesProblem`
and solves it: the least total of objective (a) any publication policy can reach on the
series (:mod:`republish.models.offline_series`). ``compare`` prints it beside the online
chains. With ``eligibility`` ``delete`` or ``hybrid`` the model may withhold any present
row at the deferral weight, a relaxation of the online deferral rules: the answer is then a
lower bound, and it says so (``exact_for_chain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.models.offline_series import (
    OfflineSeriesProblem,
    OfflineSeriesSolution,
    solve_offline_series,
)
from republish.schema import Schema
from republish.state import SIGNATURE, PublisherState

__all__ = ["OfflineOptimum", "offline_optimum", "offline_problem"]


def _persons_and_codes(series: Sequence[pd.DataFrame], schema: Schema,
                       extra_values: Sequence[str] = ()
                       ) -> tuple[pd.Index, pd.Index, pd.DataFrame]:
    frames = []
    for j, table in enumerate(series):
        missing = {schema.identifier, schema.sensitive} - set(table.columns)
        if missing:
            raise InputError(f"Release {j + 1} of the series lacks the column(s) "
                             f"{sorted(missing)} the schema names.")
        frames.append(pd.DataFrame({"person": table[schema.identifier].astype(str).to_numpy(),
                                    "value": table[schema.sensitive].astype(str).to_numpy(),
                                    "release": j}))
    rows = pd.concat(frames, ignore_index=True)
    persons = pd.Index(sorted(rows["person"].unique()))
    codes = pd.Index(rows["value"].value_counts().index)  # most frequent value first
    unseen = sorted(set(extra_values) - set(codes))  # e.g. counterfeit values of a chain
    return persons, codes.append(pd.Index(unseen)) if unseen else codes, rows


def _chain_values(state: PublisherState | None) -> list[str]:
    return sorted({v for sigma in state.signatures for v in sigma}) if state else []


def _signatures_of(state: PublisherState, series: Sequence[pd.DataFrame], schema: Schema
                   ) -> list[frozenset[int] | None]:
    persons, codes, _ = _persons_and_codes(series, schema, _chain_values(state))
    known = state.rows.copy()
    known.index = known.index.astype(str)
    lookup = {value: code for code, value in enumerate(codes)}
    found: list[frozenset[int] | None] = []
    for person in persons:
        if person not in known.index:
            found.append(None)
            continue
        sigma = state.signatures[int(known.at[person, SIGNATURE])]
        found.append(frozenset(lookup[v] for v in sigma if v in lookup) | (
            frozenset() if all(v in lookup for v in sigma) else frozenset({-1})))
    return [None if s is not None and -1 in s else s for s in found]


@dataclass(frozen=True)
class OfflineOptimum:
    """The solution, and whether its objective is the exact optimum of the same chain
    rules (``counterfeit``) or only a bound through a relaxation (``delete``/``hybrid``)."""

    solution: OfflineSeriesSolution
    exact_for_chain: bool
    persons: int
    releases: int


def offline_problem(series: Sequence[pd.DataFrame], schema: Schema, m: int,
                    eligibility: str = "counterfeit", deferral_weight: float = 1.0,
                    extra_values: Sequence[str] = ()) -> OfflineSeriesProblem:
    """Persons, their sensitive value and presence per release, from the tables; the
    domain is the values seen plus ``extra_values`` (values only counterfeits take)."""
    if not series:
        raise InputError("The series is empty: give at least one release table.")
    persons, codes, rows = _persons_and_codes(series, schema, extra_values)
    changed = rows.groupby("person")["value"].nunique()
    if (changed > 1).any():
        raise InputError(f"Person {changed[changed > 1].index[0]!r} changes sensitive value "
                         "across the series; m-invariance keeps values fixed (use the "
                         "m-Distinct principle for updates).")
    presence = np.zeros((len(persons), len(series)), dtype=bool)
    presence[persons.get_indexer(rows["person"]), rows["release"].to_numpy()] = True
    first = rows.drop_duplicates("person").set_index("person")["value"]
    values = codes.get_indexer(first.reindex(persons).to_numpy()).astype(np.int64)
    return OfflineSeriesProblem(values, presence, m, max(len(codes), m),
                                deferral_weight=deferral_weight,
                                allow_withholding=eligibility != "counterfeit")


def offline_optimum(series: Sequence[pd.DataFrame], schema: Schema, m: int, *,
                    eligibility: str = "counterfeit", deferral_weight: float = 1.0,
                    time_limit: float = 10.0, workers: int = 1, seed: int = 0,
                    state: PublisherState | None = None) -> OfflineOptimum:
    """Solve the offline series model of ``series`` within ``time_limit`` seconds.

    ``state``: the publisher's state after an online chain over the same series; its
    signatures start the solver (so the answer is never worse than that chain's
    counterfeits when the chain deferred nothing)."""
    problem = offline_problem(series, schema, m, eligibility, deferral_weight,
                              _chain_values(state))
    hint = None if state is None else _signatures_of(state, series, schema)
    solution = solve_offline_series(problem, time_limit=time_limit, workers=workers,
                                    seed=seed, hint=hint)
    return OfflineOptimum(solution, not problem.allow_withholding, len(problem.values),
                          problem.presence.shape[1])
