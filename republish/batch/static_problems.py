"""Runners of the publication problems for batch manifests.

Each runner solves one instance like the matching CLI command would, with the
instance's time limit, seed and CP-SAT worker count, reports the heuristic's answer
before the exact model starts (kept if the instance is killed), verifies the answer
independently, and returns an :class:`~republish.batch.problem.Outcome`.

Tables come from a file (``data`` + ``schema``) or a named data set (``dataset =
"adult"`` with ``sensitive``/``qis``, or ``"synthetic"``: the census-like generator),
optionally a seeded random sample of ``rows`` rows.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import pandas as pd

from republish.batch.problem import Outcome, Param, Problem, Reporter
from republish.solver.certificate import Certificate, Status

if TYPE_CHECKING:
    from republish.batch.manifest import BatchInstance
    from republish.schema import Schema

# --- tables ------------------------------------------------------------------------------

TABLE_PARAMS: dict[str, Param] = {
    "data": Param("path", "CSV/Parquet data file (with 'schema')"),
    "schema": Param("path", "schema.toml of the data file"),
    "dataset": Param("str", "named data set instead of a file", choices=("adult", "synthetic")),
    "rows": Param("int", "random sample of this many rows (synthetic: table size)", minimum=1),
    "sensitive": Param("str", "sensitive attribute of a named data set"),
    "qis": Param("str_list", "QIs of the Adult data set (default: all)"),
}


def check_table(values: Mapping[str, Any]) -> tuple[str, str] | None:
    """Exactly one source: ``data`` + ``schema``, or ``dataset``."""
    if values.get("data") and values.get("dataset"):
        return "dataset", "give either a data file ('data' + 'schema') or 'dataset', not both."
    if not values.get("data") and not values.get("dataset"):
        return "data", "no input table: give 'data' and 'schema', or 'dataset'."
    if values.get("data") and not values.get("schema"):
        return "schema", "a data file needs its schema.toml ('schema')."
    if values.get("dataset") == "synthetic" and not values.get("rows"):
        return "rows", "dataset 'synthetic' needs 'rows' (the table size)."
    if values.get("qis") and values.get("dataset") != "adult":
        return "qis", "'qis' selects Adult columns; it applies to dataset 'adult' only."
    if values.get("dataset") == "adult":
        # Before any instance runs: the workers look where this process looks (same
        # working directory and environment), so a missing data set fails the manifest.
        from republish import datasets
        from republish.errors import InputError

        try:
            datasets.find_adult()
        except InputError as exc:
            return "dataset", str(exc)
    return None


@cache
def _adult(sensitive: str, qis: tuple[str, ...] | None) -> tuple[pd.DataFrame, Schema]:
    """Adult, read once per worker process (a batch sweeps many instances over it)."""
    from republish import datasets

    return datasets.load_adult(sensitive, None if qis is None else list(qis))


def load_input(instance: BatchInstance) -> tuple[pd.DataFrame, Schema]:
    """The instance's table and schema (a seeded sample when ``rows`` is set)."""
    from republish import datasets
    from republish.schema import load_schema
    from republish.tables import load_table

    params = instance.parameters
    sensitive = params.get("sensitive")
    if params.get("data"):
        schema = load_schema(instance.path("schema"))
        table = load_table(instance.path("data"), schema)
    elif params["dataset"] == "synthetic":
        return datasets.synthetic_census(int(params["rows"]), instance.seed,
                                         sensitive or "occupation")
    else:
        qis = params.get("qis")
        table, schema = _adult(sensitive or "occupation", None if qis is None else tuple(qis))
    rows = params.get("rows")
    if rows and rows < len(table):
        return table.sample(n=int(rows), random_state=instance.seed).reset_index(drop=True), schema
    return table.copy(), schema  # the cached Adult table stays untouched


# --- eligibility -------------------------------------------------------------------------

#: Method -> the optimization problem it answers (its ``variant``) and its heuristic.
ELIGIBILITY_METHODS = {
    "counterfeit": "counterfeit", "delete": "delete", "hybrid": "hybrid",
    "algorithm-1": "counterfeit", "random": "counterfeit", "algorithm-2": "delete",
    "hybrid-greedy": "hybrid",
}
_ELIGIBILITY_STATUS: dict[str, Status] = {
    "OPTIMAL": "OPTIMAL", "FEASIBLE": "FEASIBLE", "HEURISTIC": "HEURISTIC",
    "INFEASIBLE": "INFEASIBLE", "UNKNOWN": "TIMEOUT", "TIMEOUT": "TIMEOUT",
}


def _check_eligibility(values: Mapping[str, Any]) -> tuple[str, str] | None:
    if values.get("counts") is not None:
        extra = [k for k in TABLE_PARAMS if values.get(k)]
        return (extra[0], "give either 'counts' or an input table, not both.") if extra else None
    return check_table(values)


def _eligibility_heuristic(method: str, counts: dict[str, int], params: Mapping[str, Any],
                           seed: int) -> Any:
    from republish.heuristics import eligibility as algorithms

    variant = ELIGIBILITY_METHODS[method]
    if method == "random":
        return algorithms.random_counterfeits(
            counts, params["m"], seed, allow_new_values=params["allow_new_values"],
            counterfeit_cost=params["counterfeit_cost"])
    if variant == "counterfeit":
        return algorithms.minimal_superset(
            counts, params["m"], allow_new_values=params["allow_new_values"],
            counterfeit_cost=params["counterfeit_cost"])
    if variant == "delete":
        return algorithms.maximal_subset(counts, params["m"],
                                         deletion_cost=params["deletion_cost"])
    return algorithms.greedy_hybrid(
        counts, params["m"], params["counterfeit_cost"], params["deletion_cost"],
        allow_new_values=params["allow_new_values"])


def _eligibility_outcome(solution: Any, method: str, heuristic: Any, times: dict[str, float]
                         ) -> Outcome:
    status = _ELIGIBILITY_STATUS.get(solution.status, "ERROR")
    if status == "TIMEOUT" and heuristic is not None:
        # The model found nothing in time: the heuristic's answer stands (design: fallback).
        solution, status = heuristic, "HEURISTIC"
    answered = status not in ("TIMEOUT", "INFEASIBLE")
    certificate = Certificate(
        "eligibility", status, float(solution.objective) if answered else float("nan"),
        bound=solution.bound,
        heuristic_objective=None if heuristic is None else float(heuristic.objective),
        times=times,
    )
    consistent = all(
        solution.target_counts.get(v, 0) == c + solution.counterfeits.get(v, 0)
        - solution.deletions.get(v, 0) for v, c in solution.original_counts.items()
    )
    return Outcome(
        certificate, method=method, variant=f"eligibility/{ELIGIBILITY_METHODS[method]}",
        counterfeits=solution.total_counterfeits if answered else None,
        deferrals=solution.total_deletions if answered else None,
        size=sum(solution.original_counts.values()),
        verified=(solution.is_eligible() and consistent) if answered else None,
    )


def run_eligibility(instance: BatchInstance, report: Reporter) -> Outcome:
    """m-eligibility of value counts (given, or the sensitive column of a table)."""
    params = instance.parameters
    counts = params.get("counts")
    if counts is None:
        table, schema = load_input(instance)
        counts = {str(k): int(v) for k, v in table[schema.sensitive].value_counts().items()}
    method = params["method"]
    start = time.perf_counter()
    heuristic = _eligibility_heuristic(method, counts, params, instance.seed)
    times = {"heuristic": time.perf_counter() - start}
    if method not in ("counterfeit", "delete", "hybrid"):
        return _eligibility_outcome(heuristic, method, None, times)
    report(_eligibility_outcome(heuristic, method, None, times))
    from republish.models.eligibility import solve_eligibility

    start = time.perf_counter()
    solution = solve_eligibility(
        counts, params["m"], method, params["counterfeit_cost"], params["deletion_cost"],
        allow_new_values=params["allow_new_values"], time_limit=instance.time_limit,
        num_workers=instance.num_workers, hint=heuristic, random_seed=instance.seed,
    )
    times["model"] = time.perf_counter() - start
    if solution.status == "FEASIBLE" and solution.objective > heuristic.objective + 1e-9:
        # Out of time above its own hint: keep the better answer, with the model's bound.
        solution = dataclasses.replace(heuristic, status="FEASIBLE", bound=solution.bound)
    return _eligibility_outcome(solution, method, heuristic, times)


ELIGIBILITY = Problem(
    name="eligibility",
    summary="make sensitive-value counts m-eligible (counterfeits, deletions or both)",
    params={
        "counts": Param("counts", "rows per sensitive value: [5, 3, 1] or {a = 5, b = 3}"),
        **TABLE_PARAMS,
        "m": Param("int", "eligibility parameter m", required=True, minimum=2),
        "method": Param("str", "exact model mode or heuristic", default="hybrid",
                        choices=tuple(ELIGIBILITY_METHODS)),
        "counterfeit_cost": Param("float", "cost of one counterfeit", default=1.0,
                                  minimum=1e-9),
        "deletion_cost": Param("float", "cost of one deletion", default=1.0, minimum=1e-9),
        "allow_new_values": Param("bool", "counterfeits may take new values", default=False),
    },
    run=run_eligibility,
    requires=(("republish.models.eligibility", "solve_eligibility"),
              ("republish.heuristics.eligibility", "greedy_hybrid")),
    check=_check_eligibility,
)

# --- static l-diversity ---------------------------------------------------------------------

LDIV_METHODS = ("tp", "tp+", "mondrian", "exact", "exact-stars", "matching", "auto")


def _query_error(table: pd.DataFrame, published: pd.DataFrame, counterfeits: pd.DataFrame | None,
                 schema: Schema, queries: int, seed: int) -> float | None:
    if queries <= 0:
        return None
    from republish.metrics import query_error

    return query_error(table, published, counterfeits, schema, count=queries, seed=seed)


def _ldiv_outcome(solution: Any, method: str, table: pd.DataFrame, schema: Schema,
                  params: Mapping[str, Any], seed: int, heuristic: float | None) -> Outcome:
    from republish.errors import VerificationError
    from republish.solver.ldiversity import publish_l_diverse

    try:
        published = publish_l_diverse(table, schema, solution, seed=seed)
        verified = True
    except VerificationError:
        published, verified = None, False
    objective = solution.stars if solution.objective == "stars" else solution.suppressed_tuples
    optimal = solution.status == "OPTIMAL"
    # Every suppressed tuple has a star, so the tuple bound also bounds stars.
    bound = max(float(solution.lower_bound), float(solution.certificate.get("star_bound") or 0))
    certificate = Certificate(
        "ldiv", "OPTIMAL" if optimal else "FEASIBLE", float(objective),
        bound=float(objective) if optimal else min(bound, float(objective)),
        heuristic_objective=heuristic,
        times={"solve": float(solution.time_s)},
        detail=str(solution.certificate.get("proof") or ""),
    )
    error = None if published is None else _query_error(
        table, published, None, schema, params["queries"], seed)
    return Outcome(
        certificate, method=method, variant=f"ldiv/{solution.objective}", stars=solution.stars,
        deferrals=solution.suppressed_tuples, query_error=error, size=len(table),
        verified=verified, detail=f"{solution.method}: {solution.suppressed_tuples} suppressed "
        f"tuples, {solution.stars} stars",
    )


def run_ldiv(instance: BatchInstance, report: Reporter) -> Outcome:
    """Static l-diversity with minimum suppression (TP, TP+, Mondrian, exact models)."""
    from republish.solver.ldiversity import solve_l_diversity

    params = instance.parameters
    table, schema = load_input(instance)
    method, l_value = params["method"], params["l"]
    options: dict[str, Any] = {"time_limit": instance.time_limit,
                               "num_workers": instance.num_workers, "seed": instance.seed}
    heuristic = None
    if method in ("exact", "exact-stars", "auto"):
        quick = solve_l_diversity(table, schema, l_value, "tp", **options)
        heuristic = float(quick.suppressed_tuples)
        report(_ldiv_outcome(quick, method, table, schema, {**params, "queries": 0},
                             instance.seed, None))
    solution = solve_l_diversity(table, schema, l_value, method, **options)
    return _ldiv_outcome(solution, method, table, schema, params, instance.seed, heuristic)


LDIV = Problem(
    name="ldiv",
    summary="static l-diverse table with minimum suppression (TP, TP+, Mondrian, exact)",
    params={
        **TABLE_PARAMS,
        "l": Param("int", "diversity parameter l", required=True, minimum=2),
        "method": Param("str", "method (solver/ldiversity.py)", default="auto",
                        choices=LDIV_METHODS),
        "queries": Param("int", "query-workload size for the query error (0: skip)",
                         default=0, minimum=0),
    },
    run=run_ldiv,
    requires=(("republish.solver.ldiversity", "solve_l_diversity"),),
    check=check_table,
)

PROBLEMS: dict[str, Problem] = {p.name: p for p in (ELIGIBILITY, LDIV)}
