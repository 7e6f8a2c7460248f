"""One ε-inclusive release (ε-inclusion paper, Algorithm 1, with an exact assignment).

The release step publishes ``T*(n)`` (Group-ID, exact QIs, sensitive values permuted
within each group, rows in random order) and ``S(n)`` (Group-ID, number of substitution
records), from ``T(n)`` and the publisher's state after release ``n - 1`` (Lemma 3: the
last signature of every row published before):

1. division (:func:`republish.heuristics.eps_inclusion.divide`);
2. assignment: the greedy of Algorithm 1 on counts, handed as a hint to the CP-SAT model
   of :mod:`republish.models.eps_assignment` (deferred rows, then substitutions, then
   extras minimized, then new clusters maximized) under a time limit, the greedy kept
   when the model is too large, times out without improving, or is disabled;
3. realization row by row, new rows chosen near each cluster in a k-d order of the QIs;
4. permutation within groups and publication (:func:`build_permuted_release`).

The skeleton (:func:`republish.solver.release_step.run_release_step`) verifies the release
(:func:`republish.principles.eps_inclusion.verify_eps_release`: ε-distinctness, exact
publication, ``S(n)``, signature inclusion across gaps, hygiene) before it is returned.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.errors import InputError
from republish.generalization import Domain, format_number
from republish.heuristics.eps_inclusion import (
    AssignmentPlan,
    cluster_types,
    divide,
    greedy_plan,
    locality_rank,
    permute_within_groups,
    realize_plan,
)
from republish.models.eps_assignment import TypeCounts, solve_eps_assignment
from republish.principles.catalog.eps_inclusion import EpsInclusionOptions
from republish.principles.eps_inclusion import PRINCIPLE
from republish.release import COUNT, GROUP, Release
from republish.schema import Schema
from republish.solver.certificate import Certificate
from republish.solver.joint_guard import guarded_release
from republish.solver.options import Mode, SolveOptions
from republish.solver.phase_timer import Progress
from republish.solver.release_step import Built, StepContext, StepResult, run_release_step
from republish.state import SIGNATURE, PublisherState
from republish.tables import encode_qis

__all__ = ["StepResult", "build_eps_inclusive", "build_permuted_release",
           "publish_eps_inclusive"]



def _exact_cells(table: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    cells = pd.DataFrame(index=table.index)
    for qi in schema.qis:
        column = table[qi.name]
        if qi.kind == "numeric":
            codes, uniques = pd.factorize(column.to_numpy())
            cells[qi.name] = np.array([format_number(v) for v in uniques], dtype=object)[codes]
        else:
            cells[qi.name] = column.astype(str).to_numpy()
    return cells


def build_permuted_release(
    number: int,
    table: pd.DataFrame,
    groups: Sequence[Any] | np.ndarray,
    published_values: Sequence[str] | np.ndarray,
    schema: Schema,
    deferred: Sequence[str] = (),
    rng: np.random.Generator | None = None,
    metadata: dict[str, Any] | None = None,
) -> Release:
    """``T*(n)`` and ``S(n)`` of a permutation publication (Definitions 2, 4 and 5).

    ``groups[i]`` is the group of row ``i`` of the validated ``table`` and
    ``published_values[i]`` the value it contributes to its group (its own, or the
    substituted one). Groups are renumbered 1..G at random, the values permuted within
    each group, the rows shuffled. ``counterfeits`` holds ``S(n)`` (group, count).
    """
    rng = rng if rng is not None else np.random.default_rng()
    group_array = np.asarray(groups, dtype=object)
    shown = np.asarray(published_values, dtype=object)
    if not len(group_array) == len(shown) == len(table):
        raise InputError(f"{len(group_array)} groups / {len(shown)} values for {len(table)} rows.")
    labels = list(dict.fromkeys(group_array.tolist()))
    permuted = rng.permutation(len(labels))
    renumber = {label: int(permuted[i]) + 1 for i, label in enumerate(labels)}
    new_groups = np.array([renumber[g] for g in group_array.tolist()], dtype=np.int64)
    table = table.reset_index(drop=True)
    published = _exact_cells(table, schema)
    published.insert(0, GROUP, new_groups)
    published[schema.sensitive] = permute_within_groups(new_groups, shown, rng)
    published = published.iloc[rng.permutation(len(published))].reset_index(drop=True)
    own = table[schema.sensitive].astype(str).to_numpy(dtype=object)
    counts = pd.Series(new_groups[shown != own], dtype=np.int64).value_counts().sort_index()
    substitutions = pd.DataFrame({GROUP: counts.index.astype(np.int64),
                                  COUNT: counts.to_numpy(dtype=np.int64)})
    assignment = table.copy()
    assignment.insert(1, GROUP, new_groups)
    return Release(
        number=number, schema=schema, published=published[schema.published_columns],
        counterfeits=substitutions, assignment=assignment,
        deferred=tuple(str(d) for d in deferred), model="exact",
        metadata=dict(metadata or {}),
    )


def _model_size(types: Sequence[Any], supply: np.ndarray) -> int:
    available = int((supply > 0).sum())
    return sum(available + len(t.missing) for t in types if t.missing) + 4 * len(supply)


def publish_eps_inclusive(
    table: pd.DataFrame,
    schema: Schema,
    lam: int,
    tau: int = 1,
    categories: SACategories | None = None,
    previous: PublisherState | None = None,
    rng: np.random.Generator | None = None,
    number: int | None = None,
    progress: Progress | None = None,
    validated: bool = False,
    mode: Mode = "auto",
    time_limit: float = 10.0,
    workers: int = 1,
    new_population: bool = False,
    max_model_variables: int = 60_000,
    allow_extras: bool = False,
    keep_substitutes: bool = True,
    history: Sequence[Release] | None = None,
    guard_attempts: int = 8,
    guard_time_limit: float = 60.0,
) -> StepResult:
    """Compute, verify and return release ``n`` of an ε-inclusive sequence (ε = λ·τ).

    ``categories`` maps sensitive values to categories (identity when ``None``);
    ``previous`` is the state after release ``n - 1`` (``None`` for the first release;
    its ``m`` is ε). ``mode`` ``auto`` runs the CP-SAT assignment model when it has at
    most ``max_model_variables`` variables, ``exact`` at any size, ``heuristic`` never.
    New rows that fit no new cluster are deferred; ``allow_extras=True`` adds them to old
    clusters lacking their value instead (Algorithm 1, line 15), which grows signatures and
    can expose them (docs/eps_inclusion.md). A row that was a substitution record keeps
    publishing a value of its signature; ``keep_substitutes=False`` publishes it truthfully
    again (the paper), which grows its group's signature the same way. ``summary()``
    adds ``substitutions`` and ``extras``; ``counterfeits`` is always 0. With extras on,
    ``history`` (the releases published before, in order) turns on the joint guard
    (:mod:`republish.solver.joint_guard`, threshold ε): up to ``guard_attempts``
    candidates, each checked within ``guard_time_limit`` seconds.

    Raises
    ------
    ParameterError, InputError, VerificationError
        as :func:`~republish.solver.release_step.run_release_step`, and on sensitive
        values without a category or nothing left to publish.
    """
    options = EpsInclusionOptions(lam, tau, categories or SACategories.identity(),
                                  allow_extras)
    middle = functools.partial(build_eps_inclusive, max_model_variables=max_model_variables,
                               keep_substitutes=keep_substitutes)

    def compute(step_rng: np.random.Generator | None,
                step_options: EpsInclusionOptions = options) -> StepResult:
        return run_release_step(
            PRINCIPLE, middle, table, schema, step_options, previous,
            solve=SolveOptions(mode, time_limit, workers), rng=step_rng, number=number,
            progress=progress, validated=validated, new_population=new_population,
        )

    if history is None or not allow_extras:
        return compute(rng)
    return guarded_release(compute, history, PRINCIPLE, options.m,
                           rng if rng is not None else np.random.default_rng(),
                           attempts=guard_attempts, time_limit=guard_time_limit,
                           workers=workers, fallbacks=[functools.partial(
                               compute, step_options=dataclasses.replace(options,
                                                                         extras=False))])


def build_eps_inclusive(context: StepContext, max_model_variables: int = 60_000,
                        keep_substitutes: bool = True) -> Built:
    """The middle of an ε-inclusive release: steps 1-4 of the module docstring."""
    table, schema, state, rng = context.table, context.schema, context.state, context.rng
    solve, timer, number, ids = context.solve, context.timer, context.number, context.ids
    options = context.options
    lam, tau, categories, allow_extras = (options.lam, options.tau, options.categories,
                                          options.extras)
    epsilon = lam * tau
    sensitive = table[schema.sensitive].astype(str).to_numpy(dtype=object)
    domain = sorted(set(sensitive.tolist()) | state.sensitive_domain())
    categories.require(domain, "the sensitive domain")
    code_of = {v: i for i, v in enumerate(domain)}
    values = np.array([code_of[v] for v in sensitive], dtype=np.int64)
    names = sorted({categories.category(v) for v in domain})
    category = np.array([names.index(categories.category(v)) for v in domain], dtype=np.int64)

    known = context.known
    old, new = np.flatnonzero(known), np.flatnonzero(~known)
    record = state.rows.iloc[context.positions[known]]
    codes = encode_qis(table, schema)
    bounds = Domain.of(schema, codes)
    extent = np.where(bounds.high > bounds.low, bounds.high - bounds.low, 1.0)
    rank = locality_rank((codes - bounds.low) / extent)

    timer.phase("division")
    signatures = [frozenset(code_of[v] for v in s) for s in state.signatures]
    clusters = divide(old, record[SIGNATURE].to_numpy(), signatures, values, rank,
                      keep_substitutes)
    types = cluster_types(clusters)
    supply = np.bincount(values[new], minlength=len(domain)).astype(np.int64)

    timer.phase("assignment")
    greedy = greedy_plan(types, supply, category, lam, tau, allow_extras)
    plan: AssignmentPlan = greedy
    heuristic = greedy.objective(types)
    certificate = Certificate(step=PRINCIPLE, status="HEURISTIC",
                              objective=float(heuristic[0] + heuristic[1]),
                              heuristic_objective=float(heuristic[0] + heuristic[1]),
                              detail="greedy (Algorithm 1)")
    size = _model_size(types, supply)
    run_model = solve.mode == "exact" or (solve.mode == "auto" and size <= max_model_variables)
    if run_model:
        solution = solve_eps_assignment(
            [TypeCounts(t.present, t.missing, t.multiplicity, t.members) for t in types],
            supply.tolist(), category.tolist(), lam, tau, hint=greedy,
            time_limit=max(context.deadline.left(), 1e-3), num_workers=solve.workers,
            random_seed=context.model_seed(), allow_extras=allow_extras,
        )
        if solution is not None:
            candidate = AssignmentPlan(solution.kept, solution.fills, solution.substitutes,
                                       solution.extras, solution.new_rows,
                                       solution.new_clusters, solution.deferred)
            if candidate.objective(types) <= heuristic:  # the hint makes this the rule
                plan = candidate
                certificate = dataclasses.replace(
                    solution.certificate,
                    heuristic_objective=float(heuristic[0] + heuristic[1]),
                    detail=solution.certificate.detail + f"; greedy {heuristic}",
                )
    elif solve.uses_models:
        certificate = dataclasses.replace(
            certificate, detail=f"greedy (Algorithm 1); model skipped ({size} variables)")

    timer.phase("realization")
    placement = realize_plan(clusters, types, plan, new, values, rank, category, lam, tau, rng)
    published_rows = np.flatnonzero(placement.cluster >= 0)
    deferred_rows = np.flatnonzero(placement.cluster < 0)
    if not len(published_rows):
        raise InputError(
            f"nothing to publish: every row of T({number}) was deferred; no group of ε = "
            f"{epsilon} distinct sensitive values can be formed. Lower λ or τ."
        )

    timer.phase("publication")
    parameters = {"m": epsilon, "lambda": lam, "tau": tau, "principle": PRINCIPLE,
                  "categories": categories.source, "extras": allow_extras,
                  "keep_substitutes": keep_substitutes}
    domain_array = np.asarray(domain, dtype=object)
    release = build_permuted_release(
        number, table.iloc[published_rows], placement.cluster[published_rows],
        domain_array[placement.published[published_rows]], schema,
        deferred=ids[deferred_rows].tolist(), rng=rng, metadata={"parameters": parameters},
    )

    substitutions = int(placement.substituted.sum())
    return Built(
        release=release, certificate=certificate, published_rows=published_rows,
        counterfeits=0, deferred=len(deferred_rows), mean_perimeter=0.0,
        extra={"substitutions": substitutions, "extras": int(sum(plan.extras.values())),
               "new_clusters": placement.new_clusters},
    )


MIDDLE = build_eps_inclusive
