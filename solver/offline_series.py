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

__all__ = ["OfflineOptimum", "offline_optimum", "offline_problem"]


@dataclass(frozen=True)
class OfflineOptimum:
    """The solution, and whether its objective is the exact optimum of the same chain
    rules (``counterfeit``) or only a bound through a relaxation (``delete``/``hybrid``)."""

    solution: OfflineSeriesSolution
    exact_for_chain: bool
    persons: int
    releases: int


def offline_problem(series: Sequence[pd.DataFrame], schema: Schema, m: int,
                    eligibility: str = "counterfeit", deferral_weight: float = 1.0
                    ) -> OfflineSeriesProblem:
    """Persons, their sensitive value and presence per release, from the tables."""
    if not series:
        raise InputError("The series is empty: give at least one release table.")
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
    changed = rows.groupby("person")["value"].nunique()
    if (changed > 1).any():
        raise InputError(f"Person {changed[changed > 1].index[0]!r} changes sensitive value "
                         "across the series; m-invariance keeps values fixed (use the "
                         "m-Distinct principle for updates).")
    persons = pd.Index(sorted(rows["person"].unique()))
    codes = pd.Index(rows["value"].value_counts().index)  # most frequent value first
    presence = np.zeros((len(persons), len(series)), dtype=bool)
    presence[persons.get_indexer(rows["person"]), rows["release"].to_numpy()] = True
    first = rows.drop_duplicates("person").set_index("person")["value"]
    values = codes.get_indexer(first.reindex(persons).to_numpy()).astype(np.int64)
    return OfflineSeriesProblem(values, presence, m, max(len(codes), m),
                                deferral_weight=deferral_weight,
                                allow_withholding=eligibility != "counterfeit")


def offline_optimum(series: Sequence[pd.DataFrame], schema: Schema, m: int, *,
                    eligibility: str = "counterfeit", deferral_weight: float = 1.0,
                    time_limit: float = 10.0, workers: int = 1, seed: int = 0
                    ) -> OfflineOptimum:
    """Solve the offline series model of ``series`` within ``time_limit`` seconds."""
    problem = offline_problem(series, schema, m, eligibility, deferral_weight)
    solution = solve_offline_series(problem, time_limit=time_limit, workers=workers,
                                    seed=seed)
    return OfflineOptimum(solution, not problem.allow_withholding, len(problem.values),
                          problem.presence.shape[1])
