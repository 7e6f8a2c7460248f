"""Batch runners of the dynamic problems: m-invariant release series, group formation.

``release-series`` follows the m-invariance paper's experiments (§5): ``T(1)`` is a
random sample of ``initial`` rows of the input table, each later release deletes ``r``
rows and inserts ``r`` (a share ``reinsert_fraction`` of them re-insertions), and every
release is published with :func:`~republish.solver.m_invariance.publish_m_invariant`.
The objective is the total of the releases' objectives (counterfeits plus deferrals);
the whole sequence is checked again with the m-invariance verifier (Definition 17).
``method`` is the step's mode (``heuristic``: the paper's phases; ``exact``/``auto``:
the bucket-assignment and group-formation models hinted with them), ``eligibility`` how
leftover new rows are made m-eligible. A series whose every release is ``OPTIMAL`` is
optimal release by release, not as a whole (a different earlier release changes the
later inputs), so the report does not rank methods against its total.

``group-formation`` splits one balanced bucket drawn from a table with
:func:`~republish.solver.group_steps.group_step` (§4.3 perimeter split, then the exact model);
``compare`` runs :func:`~republish.solver.compare.compare_pipelines` on one series.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from republish.batch.problem import Outcome, Param, Problem, Reporter
from republish.batch.static_problems import TABLE_PARAMS, check_table, load_input
from republish.solver.certificate import Certificate, Status, combine

if TYPE_CHECKING:
    from republish.batch.manifest import BatchInstance
    from republish.schema import Schema
    from republish.solver.options import Mode

SERIES_METHODS = ("heuristic", "auto", "exact")
ELIGIBILITY_RULES = ("counterfeit", "delete", "hybrid")


def _check_series(values: Mapping[str, Any]) -> tuple[str, str] | None:
    found = check_table(values)
    if found is not None:
        return found
    if values["r"] > values["initial"]:
        return "r", f"r={values['r']} exceeds initial={values['initial']} (rows of T(1))."
    return None


def _supported(function: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``function`` accepts (newer solver versions take more of them)."""
    accepted = inspect.signature(function).parameters
    return {key: value for key, value in options.items() if key in accepted}


def run_release_series(instance: BatchInstance, report: Reporter) -> Outcome:
    """Publish ``releases`` m-invariant releases of a dynamic series of the input table.

    With ``method`` ``exact`` or ``auto`` the heuristic series is published first and
    reported, so an instance stopped at its deadline keeps that answer.
    """
    from republish.datasets import dynamic_series

    params = instance.parameters
    table, schema = load_input(instance)
    series = dynamic_series(table, params["initial"], params["r"], params["releases"],
                            instance.seed, params["reinsert_fraction"])
    if params["method"] != "heuristic":
        report(_publish_series(instance, series, schema, "heuristic", queries=0))
    return _publish_series(instance, series, schema, params["method"], params["queries"])


def _publish_series(instance: BatchInstance, series: list[pd.DataFrame], schema: Schema,
                    mode: str, queries: int) -> Outcome:
    from republish.metrics import query_error
    from republish.principles.m_invariance import check_m_invariance_sequence
    from republish.solver.m_invariance import publish_m_invariant

    params = instance.parameters
    rng = np.random.default_rng(instance.seed)
    per_release = instance.time_limit / max(1, len(series))
    extra = _supported(publish_m_invariant, {
        "mode": mode, "time_limit": per_release, "workers": instance.num_workers,
    })
    state = None
    steps = []
    errors = []
    for microdata in series:
        step = publish_m_invariant(microdata, schema, params["m"], previous=state,
                                   eligibility=params["eligibility"], rng=rng, **extra)
        state = step.state
        steps.append(step)
        if queries > 0:
            errors.append(query_error(microdata, step.release.published,
                                      step.release.counterfeits, schema,
                                      count=queries, seed=instance.seed))
    start = time.perf_counter()
    verified = check_m_invariance_sequence([s.release for s in steps], params["m"]).ok
    certificate = combine("release-series", [s.certificate for s in steps])
    times = {**certificate.times, "verify": time.perf_counter() - start}
    certificate = Certificate(
        "release-series", certificate.status, certificate.objective, certificate.bound,
        heuristic_objective=_sum_heuristic([s.certificate for s in steps]), times=times,
    )
    rows = np.array([s.rows for s in steps], dtype=float)
    return Outcome(
        certificate, method=params["method"],
        # Each release is optimal given the earlier ones at best: the series total is no
        # proven optimum, so methods are not compared against each other's totals.
        variant=f"release-series/{params['eligibility']}/{mode}",
        counterfeits=sum(s.counterfeits for s in steps),
        deferrals=sum(s.deferred for s in steps),
        perimeter=float(np.average([s.mean_perimeter for s in steps], weights=rows)),
        query_error=float(np.nanmean(errors)) if errors else None,
        size=params["initial"], verified=verified,
        detail=f"{len(steps)} releases, {sum(s.groups for s in steps)} groups",
    )


def _sum_heuristic(parts: list[Certificate]) -> float | None:
    values = [p.heuristic_objective for p in parts]
    return None if any(v is None for v in values) else float(sum(v for v in values if v))


#: The input table and the dynamic series drawn from it (m-invariance paper, §5).
SERIES_PARAMS: dict[str, Param] = {
    **TABLE_PARAMS,
    "m": Param("int", "m of m-invariance", required=True, minimum=2),
    "initial": Param("int", "rows of T(1)", required=True, minimum=1),
    "r": Param("int", "deletions and insertions per release", default=0, minimum=0),
    "releases": Param("int", "number of releases", default=2, minimum=1),
}

RELEASE_SERIES = Problem(
    name="release-series",
    summary="m-invariant releases of a dynamic series (m-invariance paper, §5)",
    params={
        **SERIES_PARAMS,
        "reinsert_fraction": Param("float", "share of insertions that are re-insertions",
                                   default=0.0, minimum=0.0, maximum=1.0),
        "method": Param("str", "the paper's greedy phases, or the exact models hinted with "
                        "them (auto: exact below the size thresholds of solver/step_modes.py)",
                        default="heuristic", choices=SERIES_METHODS),
        "eligibility": Param("str", "how new rows are made m-eligible",
                             default="counterfeit", choices=ELIGIBILITY_RULES),
        "queries": Param("int", "query-workload size for the query error (0: skip)",
                         default=0, minimum=0),
    },
    run=run_release_series,
    requires=(("republish.solver.m_invariance", "publish_m_invariant"),
              ("republish.datasets", "dynamic_series")),
    check=_check_series,
)

# --- group formation ---------------------------------------------------------------------


def _bucket(instance: BatchInstance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A balanced bucket drawn from the input table: normalized points, values, fake flags.

    The ``signature_size`` most frequent sensitive values (ties by name) give ``k`` rows
    each (a seeded sample); ``counterfeits`` of those rows become counterfeits (NaN
    points), spread in turn over every value but the first. As in a published bucket
    (redundant counterfeits dropped), one value holds real rows only, so every group of
    one row per value holds a real row.
    """
    from republish.errors import ParameterError
    from republish.generalization import Domain
    from republish.tables import encode_qis

    params = instance.parameters
    table, schema = load_input(instance)
    size, k = params["signature_size"], params["k"]
    counts = table[schema.sensitive].astype(str).value_counts()
    ordered = sorted(counts.index, key=lambda v: (-int(counts[v]), v))[:size]
    if len(ordered) < size or int(counts[ordered[-1]]) < k:
        raise ParameterError(
            f"the table has no {size} sensitive values with {k} rows each (counts "
            f"{counts.head(size).to_dict()}); lower signature_size or k."
        )
    rng = np.random.default_rng(instance.seed)
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    extent = np.where(domain.high > domain.low, domain.high - domain.low, 1.0)
    sensitive = table[schema.sensitive].astype(str).to_numpy()
    rows = np.concatenate([
        rng.choice(np.flatnonzero(sensitive == value), size=k, replace=False)
        for value in ordered
    ])
    points = (codes[rows] - domain.low) / extent
    values = sensitive[rows]
    fake = np.zeros(len(rows), dtype=bool)
    turn = np.arange(params["counterfeits"])
    fake[(1 + turn % (size - 1)) * k + turn // (size - 1)] = True
    points[fake] = np.nan
    return points, values, fake


def _check_grouping(values: Mapping[str, Any]) -> tuple[str, str] | None:
    found = check_table(values)
    if found is not None:
        return found
    most = (values["signature_size"] - 1) * values["k"]
    if values["counterfeits"] > most:
        return "counterfeits", (f"at most {most} rows of the bucket may be counterfeits (one "
                                "value keeps real rows only).")
    return None


def run_group_formation(instance: BatchInstance, report: Reporter) -> Outcome:
    """Split one balanced bucket into groups of one row per value (§4.3, exact model)."""
    from republish.models.grouping.formation import grouping_objective, grouping_problems
    from republish.solver.group_steps import group_step

    params = instance.parameters
    points, values, fake = _bucket(instance)
    objective, method = params["objective"], params["method"]
    signature = sorted(set(values.tolist()))

    def solve(mode: Mode) -> Outcome:
        formed = group_step(points, values, fake, objective=objective, mode=mode,
                            time_limit=instance.time_limit, workers=instance.num_workers)
        count = len(np.unique(formed.groups))
        recomputed = grouping_objective(np.nan_to_num(points), fake, formed.groups, objective)
        valid = not grouping_problems(values, fake, formed.groups, len(signature), signature)
        certificate = formed.certificate
        return Outcome(
            certificate, method=method, variant=f"group-formation/{objective}",
            counterfeits=int(fake.sum()), perimeter=recomputed / count if count else 0.0,
            size=len(values), detail=certificate.detail,
            verified=valid and abs(recomputed - certificate.objective) <= 1e-6 * max(
                1.0, recomputed),
        )

    if method != "heuristic":
        report(solve("heuristic"))
    return solve(cast("Mode", method))


GROUP_FORMATION = Problem(
    name="group-formation",
    summary="split a balanced bucket into groups of one row per value (§4.3 or exact)",
    params={
        **TABLE_PARAMS,
        "signature_size": Param("int", "values in the bucket's signature (s)", required=True,
                                minimum=2),
        "k": Param("int", "rows per value (groups)", required=True, minimum=1),
        "counterfeits": Param("int", "rows of the bucket that are counterfeits", default=0,
                              minimum=0),
        "method": Param("str", "the §4.3 greedy split, or the exact model hinted with it "
                        "(auto: exact below the size thresholds of solver/step_modes.py)",
                        default="exact", choices=SERIES_METHODS),
        "objective": Param("str", "what the grouping minimizes", default="perimeter",
                           choices=("perimeter", "ncp")),
    },
    run=run_group_formation,
    requires=(("republish.solver.group_steps", "group_step"),
              ("republish.models.grouping.formation", "grouping_problems")),
    check=_check_grouping,
)
# --- compare ---------------------------------------------------------------------------


def run_compare(instance: BatchInstance, report: Reporter) -> Outcome:
    """The heuristic and exact m-invariant pipelines on one series (``republish compare``).

    The row holds the exact pipeline's totals (objective = counterfeits + deferrals over
    the releases) with the heuristic pipeline's total as ``heuristic_objective``; both
    pipelines' per-release numbers are in ``detail``. Each model solve gets
    ``time_limit / (2 * releases)`` seconds.
    """
    from republish.solver.compare import compare_pipelines

    params = instance.parameters
    table, schema = load_input(instance)
    frame = compare_pipelines(
        table, schema, params["m"], params["initial"], params["r"], params["releases"],
        instance.time_limit / (2 * params["releases"]), instance.seed,
        queries=params["queries"], workers=instance.num_workers,
    )
    exact = frame[frame["pipeline"] == "exact"]
    heuristic = frame[frame["pipeline"] == "heuristic"]
    order = ["OPTIMAL", "FEASIBLE", "HEURISTIC", "TIMEOUT", "INFEASIBLE", "ERROR"]
    status = max(exact["status"].astype(str), key=order.index)
    certificate = Certificate(
        "compare", cast(Status, status), float(exact["objective"].sum()),
        heuristic_objective=float(heuristic["objective"].sum()),
        times={"heuristic": float(heuristic["wall_time_s"].sum()),
               "exact": float(exact["wall_time_s"].sum())},
        detail="optimal release by release (each given the earlier ones); no bound on the "
        "series total",
    )

    def summary(rows: pd.DataFrame) -> str:
        return ", ".join(f"release {r.release}: {r.counterfeits:g} counterfeits, {r.deferred:g} "
                         f"deferred, perimeter {r.mean_perimeter:.4g}, query error "
                         f"{r.query_error:.4g}" for r in rows.itertuples())

    return Outcome(
        certificate, method="compare", variant="compare",
        counterfeits=int(exact["counterfeits"].sum()), deferrals=int(exact["deferred"].sum()),
        perimeter=float(exact["mean_perimeter"].mean()),
        query_error=float(exact["query_error"].mean()), size=params["initial"],
        detail=f"exact: {summary(exact)}. heuristic: {summary(heuristic)}",
    )


def _check_compare(values: Mapping[str, Any]) -> tuple[str, str] | None:
    found = check_table(values)
    if found is None and values["r"] > values["initial"]:
        return "r", f"r={values['r']} exceeds initial={values['initial']} (rows of T(1))."
    return found


COMPARE = Problem(
    name="compare",
    summary="heuristic vs exact m-invariant pipelines on one dynamic series",
    params={
        **SERIES_PARAMS,
        "queries": Param("int", "query-workload size for the query error", default=100,
                         minimum=1),
    },
    run=run_compare,
    requires=(("republish.solver.compare", "compare_pipelines"),),
    check=_check_compare,
)

PROBLEMS: dict[str, Problem] = {p.name: p for p in (RELEASE_SERIES, GROUP_FORMATION, COMPARE)}
