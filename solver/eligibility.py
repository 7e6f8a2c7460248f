"""Make a table of new rows m-eligible and apply the change to concrete rows.

:func:`make_eligible` counts the sensitive values of a table, runs the paper's algorithm
for the chosen method (Algorithm 1, 2 or 3 of Tobar Nicolau et al., IEEE TIFS 2024),
hands it to the CP-SAT model (:mod:`republish.models.eligibility`) as a hint and keeps the
better of the two; :func:`apply_eligibility` turns the chosen counts into rows.

Which rows are deferred (the deletions of a solution become deferrals: rows held back
from this release, published later) -- the rule is deterministic:

* ``seed`` an integer (default 0): within each sensitive value, the deferred rows are a
  uniform random sample drawn with ``numpy.random.default_rng(seed)``, values visited in
  sorted order (the paper's §III-D suggests random deletion);
* ``seed=None``: a utility criterion -- within each value, the rows farthest (L1 distance
  in QI codes normalized to [0, 1] by the schema's domains) from the table's per-QI median
  are deferred first, ties broken by table order. Outliers widen whichever group hosts
  them, so holding them back shrinks this release's generalization.

Counterfeits are only their sensitive values (:attr:`AppliedEligibility.counterfeit_values`):
they have no QI values of their own and take the generalized QIs of the group they join.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.generalization import Domain
from republish.heuristics.eligibility import (
    greedy_hybrid,
    maximal_subset,
    minimal_superset,
    random_counterfeits,
)
from republish.models.eligibility import solve_eligibility
from republish.problems.eligibility import EligibilitySolution
from republish.schema import Schema
from republish.tables import encode_qis

Method = Literal["counterfeit", "delete", "hybrid", "hybrid-greedy"]
METHODS: tuple[str, ...] = ("counterfeit", "delete", "hybrid", "hybrid-greedy")
#: Steps of Algorithm 3 at most on given counts (one row per step, about 12 µs each): the
#: ``eligibility`` command accepts counts of up to 10^12 rows, which would take days.
GREEDY_STEPS = 100_000

__all__ = ["METHODS", "AppliedEligibility", "Method", "apply_eligibility", "make_eligible",
           "random_baseline",
           "sensitive_counts", "solve_counts"]


@dataclass(frozen=True)
class AppliedEligibility:
    """A solution applied to rows.

    ``kept``: rows to publish now; ``deferred``: rows held back (both keep the input
    table's index and row order); ``counterfeit_values``: the sensitive value of every
    counterfeit to create, grouped by value in target order.
    """

    kept: pd.DataFrame
    deferred: pd.DataFrame
    counterfeit_values: list[str]


def sensitive_counts(table: pd.DataFrame, schema: Schema) -> dict[str, int]:
    """Rows per sensitive value, most frequent first (ties by value)."""
    if schema.sensitive not in table.columns:
        raise InputError(
            f"sensitive column {schema.sensitive!r} missing from the table; it has "
            f"{list(table.columns)[:12]}."
        )
    counts = table[schema.sensitive].astype(str).value_counts()
    ordered = sorted(counts.items(), key=lambda item: (-int(item[1]), str(item[0])))
    return {str(value): int(count) for value, count in ordered}


def _outlyingness(table: pd.DataFrame, schema: Schema) -> np.ndarray:
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    extent = np.where(domain.high > domain.low, domain.high - domain.low, 1.0)
    normalized = (codes - domain.low) / extent
    return np.abs(normalized - np.median(normalized, axis=0)).sum(axis=1)


def apply_eligibility(
    table: pd.DataFrame, schema: Schema, solution: EligibilitySolution, seed: int | None = 0
) -> AppliedEligibility:
    """Split ``table`` into kept and deferred rows and list the counterfeits to create.

    The table's sensitive-value counts must equal ``solution.original_counts``. See the
    module docstring for the deferral rule selected by ``seed``.
    """
    counts = sensitive_counts(table, schema)
    expected = {v: c for v, c in solution.original_counts.items() if c > 0}
    if counts != expected:
        raise InputError(
            f"the table's sensitive-value counts {counts} differ from the counts the "
            f"solution was computed for {expected}; solve again for this table."
        )
    if solution.status not in ("OPTIMAL", "FEASIBLE", "HEURISTIC") or not solution.is_eligible():
        raise ParameterError(
            f"solution {solution.method!r} (status {solution.status}) is not an m-eligible "
            "target and cannot be applied."
        )
    sensitive = table[schema.sensitive].astype(str).to_numpy()
    deferred_mask = np.zeros(len(table), dtype=bool)
    generator = np.random.default_rng(seed) if seed is not None else None
    scores = _outlyingness(table, schema) if seed is None and solution.deletions else None
    for value in sorted(solution.deletions):
        positions = np.flatnonzero(sensitive == value)
        number = solution.deletions[value]
        if generator is not None:
            chosen = generator.choice(positions, size=number, replace=False)
        else:
            assert scores is not None
            # Stable sort on -score: farthest first, table order among ties.
            chosen = positions[np.argsort(-scores[positions], kind="stable")[:number]]
        deferred_mask[chosen] = True
    counterfeit_values = [
        value for value, number in solution.counterfeits.items() for _ in range(number)
    ]
    return AppliedEligibility(
        kept=table.loc[~deferred_mask], deferred=table.loc[deferred_mask],
        counterfeit_values=counterfeit_values,
    )


def _respects_caps(solution: EligibilitySolution, caps: Mapping[str, int] | None) -> bool:
    return caps is None or all(
        number <= caps.get(value, number) for value, number in solution.deletions.items()
    )


def _best_hybrid_start(
    greedy: EligibilitySolution,
    counts: Mapping[str, int],
    m: int,
    counterfeit_cost: float,
    deletion_cost: float,
    deletion_caps: Mapping[str, int] | None,
    allow_new_values: bool,
    new_values: Sequence[str],
) -> EligibilitySolution:
    candidates = [greedy, maximal_subset(counts, m, deletion_cost=deletion_cost)]
    # Fewer than m values and no new values: no superset exists, Algorithm 1 refuses.
    with contextlib.suppress(ParameterError):
        candidates.append(minimal_superset(
            counts, m, allow_new_values=allow_new_values, new_values=new_values,
            counterfeit_cost=counterfeit_cost,
        ))
    usable = [c for c in candidates if _respects_caps(c, deletion_caps)] or [greedy]
    return min(usable, key=lambda candidate: candidate.objective)


def solve_counts(
    counts: Mapping[str, int],
    m: int,
    method: Method = "counterfeit",
    *,
    time_limit: float = 10.0,
    deletion_caps: Mapping[str, int] | None = None,
    counterfeit_cost: float = 1.0,
    deletion_cost: float = 1.0,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    num_workers: int = 1,
    use_model: bool = True,
) -> EligibilitySolution:
    """Target counts for ``method``: heuristic, then the model hinted with it (not run
    when ``use_model`` is false: the paper's algorithm alone).

    ``counterfeit`` and ``delete`` run Algorithm 1 or 2, ``hybrid`` the best of Algorithms
    1-3 (that respects ``deletion_caps``); the CP-SAT model is hinted with it and its
    answer kept unless the heuristic's objective is strictly lower (or the model found
    nothing). ``hybrid-greedy`` is Algorithm 3 alone (it cannot honour
    ``deletion_caps``). The returned solution's ``method`` is ``method``.
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}.")
    heuristic: EligibilitySolution
    if method == "counterfeit":
        heuristic = minimal_superset(
            counts, m, allow_new_values=allow_new_values, new_values=new_values,
            counterfeit_cost=counterfeit_cost,
        )
    elif method == "delete":
        heuristic = maximal_subset(counts, m, deletion_cost=deletion_cost)
    elif method == "hybrid-greedy":
        heuristic = greedy_hybrid(
            counts, m, counterfeit_cost, deletion_cost, allow_new_values=allow_new_values,
            new_values=new_values, max_steps=GREEDY_STEPS)
    else:
        try:
            heuristic = greedy_hybrid(
                counts, m, counterfeit_cost, deletion_cost, allow_new_values=allow_new_values,
                new_values=new_values, max_steps=GREEDY_STEPS)
        except ParameterError:  # counts too large for one row per step: Algorithm 2 starts
            heuristic = maximal_subset(counts, m, deletion_cost=deletion_cost)
    if method == "hybrid":
        # Algorithm 3 is not always optimal; Algorithms 1 and 2 cost almost nothing and
        # sometimes give the model a better hint and a better fallback.
        heuristic = _best_hybrid_start(
            heuristic, counts, m, counterfeit_cost, deletion_cost, deletion_caps,
            allow_new_values, new_values,
        )
    if method == "hybrid-greedy":
        if deletion_caps is not None:
            raise ParameterError(
                "method 'hybrid-greedy' (Algorithm 3) cannot honour deletion caps; use "
                "method 'hybrid' (the exact model)."
            )
        return replace(heuristic, method=method)
    if not use_model:
        return replace(heuristic, method=method)
    exact = solve_eligibility(
        counts, m, method, counterfeit_cost=counterfeit_cost, deletion_cost=deletion_cost,
        deletion_caps=deletion_caps, allow_new_values=allow_new_values,
        new_values=new_values, time_limit=time_limit, num_workers=num_workers,
        hint=heuristic,
    )
    heuristic_usable = _respects_caps(heuristic, deletion_caps)
    if exact.status in ("OPTIMAL", "FEASIBLE") and (
        not heuristic_usable or exact.objective <= heuristic.objective + 1e-9
    ):
        return replace(exact, method=method)
    if heuristic_usable:
        return replace(heuristic, method=method)
    raise ParameterError(
        f"no {m}-eligible table respects the deletion caps {dict(deletion_caps or {})} "
        f"with method {method!r} (model status {exact.status}); allow more deletions or "
        "use counterfeits."
    )


def make_eligible(
    table: pd.DataFrame,
    schema: Schema,
    m: int,
    method: Method = "counterfeit",
    time_limit: float = 10.0,
    seed: int | None = 0,
    deletion_caps: Mapping[str, int] | None = None,
    *,
    counterfeit_cost: float = 1.0,
    deletion_cost: float = 1.0,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    num_workers: int = 1,
    use_model: bool = True,
) -> tuple[EligibilitySolution, AppliedEligibility]:
    """Make ``table`` m-eligible with ``method`` and apply the result to its rows.

    The counts of the sensitive column go through :func:`solve_counts` (heuristic, model
    hinted with it, the better kept); ``seed`` selects the deferral rule of
    :func:`apply_eligibility`. An empty table needs no change.

    Raises
    ------
    ParameterError
        on a bad ``m`` or ``method``, fewer than ``m`` sensitive values for
        ``counterfeit`` without new values, or deletion caps that leave no solution.
    """
    solution = solve_counts(
        sensitive_counts(table, schema), m, method, time_limit=time_limit,
        deletion_caps=deletion_caps, counterfeit_cost=counterfeit_cost,
        deletion_cost=deletion_cost, allow_new_values=allow_new_values,
        new_values=new_values, num_workers=num_workers, use_model=use_model,
    )
    return solution, apply_eligibility(table, schema, solution, seed=seed)


def random_baseline(counts: Mapping[str, int], m: int, seed: int | None = 0, *,
                    allow_new_values: bool = False,
                    counterfeit_cost: float = 1.0) -> EligibilitySolution:
    """The m-eligibility paper's random-counterfeit baseline (§IV-B), for comparisons:
    :func:`republish.heuristics.eligibility.random_counterfeits`."""
    return random_counterfeits(counts, m, seed, allow_new_values=allow_new_values,
                               counterfeit_cost=counterfeit_cost)
