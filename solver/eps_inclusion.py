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

The release is verified (:func:`republish.principles.eps_inclusion.verify_eps_release`:
ε-distinctness, exact publication, ``S(n)``, signature inclusion across gaps, hygiene)
before it is returned; a failing release raises :class:`VerificationError`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.errors import InputError, ParameterError, VerificationError
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
from republish.principles.eps_inclusion import (
    PRINCIPLE,
    LastSignatures,
    check_eps_inclusion_sequence,
    verify_eps_release,
)
from republish.principles.report import VerificationReport
from republish.release import COUNT, GROUP, Release
from republish.schema import Schema
from republish.solver.certificate import Certificate
from republish.solver.phase_timer import PhaseTimer, Progress
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState, check_unchanged
from republish.tables import encode_qis, validate_release_table

__all__ = [
    "EpsStepResult",
    "build_permuted_release",
    "options_parameters",
    "previous_signatures",
    "publish_eps_inclusive",
    "publish_with_options",
    "store_options",
    "verify_eps_sequence",
]



@dataclass(frozen=True, eq=False)
class EpsStepResult:
    """A verified ε-inclusive release and what it took (``counterfeits`` is always 0)."""

    release: Release
    certificate: Certificate
    state: PublisherState
    report: VerificationReport
    rows: int
    new: int
    deleted: int
    reinserted: int
    deferred: int
    substitutions: int
    extras: int
    groups: int
    new_clusters: int
    wall_time_s: float
    parameters: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The ``history --json`` object (Contract keys, then ``substitutions``, ``extras``)."""
        return {
            "release": self.release.number,
            "rows": self.rows,
            "new": self.new,
            "deleted": self.deleted,
            "reinserted": self.reinserted,
            "counterfeits": 0,
            "deferred": self.deferred,
            "groups": self.groups,
            "mean_perimeter": 0.0,  # exact QIs: no generalization
            "wall_time_s": self.wall_time_s,
            "status": self.certificate.status,
            "objective": self.certificate.objective,
            "bound": self.certificate.bound,
            "gap": self.certificate.gap,
            "substitutions": self.substitutions,
            "extras": self.extras,
        }


def previous_signatures(state: PublisherState) -> LastSignatures:
    """Lemma 3's input from the state: (last release, last signature) of every id."""
    return LastSignatures.from_state(state)


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
    new_population: bool = False,
    validated: bool = False,
    use_model: bool = True,
    time_limit: float = 10.0,
    num_workers: int = 2,
    max_model_variables: int = 60_000,
    allow_extras: bool = False,
    keep_substitutes: bool = True,
) -> EpsStepResult:
    """Compute, verify and return release ``n`` of an ε-inclusive sequence (ε = λ·τ).

    ``categories`` maps sensitive values to categories (identity when ``None``);
    ``previous`` is the state after release ``n - 1`` (``None`` for the first release;
    its ``m`` is ε). ``use_model`` runs the CP-SAT assignment model when it has at most
    ``max_model_variables`` variables, with ``time_limit`` seconds and ``num_workers``.
    New rows that fit no new cluster are deferred; ``allow_extras=True`` adds them to old
    clusters lacking their value instead (Algorithm 1, line 15), which grows signatures and
    can expose them (docs/eps_inclusion.md). A row that was a substitution record keeps
    publishing a value of its signature; ``keep_substitutes=False`` publishes it truthfully
    again (the paper), which grows its group's signature the same way.

    Raises
    ------
    ParameterError
        on bad ``λ``/``τ`` (ε must be at least 2), a schema or ε differing from
        ``previous``.
    InputError
        on a malformed table, changed values of a published identifier, sensitive values
        without a category, or nothing left to publish.
    VerificationError
        if the computed release fails its verifier (never returned).
    """
    start = time.perf_counter()
    timer = PhaseTimer(progress)
    phase = timer.phase
    phase("validate")
    for name, value in (("lambda", lam), ("tau", tau)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"{name} must be a positive integer, got {value!r}.")
    lam, tau = int(lam), int(tau)
    epsilon = lam * tau
    if epsilon < 2:
        raise ParameterError(f"ε = λ·τ = {epsilon}: every group needs at least 2 rows; raise λ.")
    categories = categories or SACategories.identity()
    state = previous if previous is not None else PublisherState.empty(schema, epsilon)
    if state.m != epsilon:
        raise ParameterError(f"ε = {epsilon} differs from ε = {state.m} of the previous releases.")
    if state.schema.fingerprint() != schema.fingerprint():
        raise ParameterError("the schema differs from the schema of the previous releases.")
    number = state.last_release + 1 if number is None else int(number)
    if number <= state.last_release:
        raise ParameterError(f"release number {number} must exceed {state.last_release}.")
    rng = rng if rng is not None else np.random.default_rng()
    table, identifier_kind = validate_release_table(
        table, schema, state.identifier_kind, state.last_population(), validated=validated,
        new_population=new_population,
    )
    check_unchanged(state, table)
    ids = table[schema.identifier].astype(str).to_numpy(dtype=object)
    sensitive = table[schema.sensitive].astype(str).to_numpy(dtype=object)
    domain = sorted(set(sensitive.tolist()) | state.sensitive_domain())
    categories.require(domain, "the sensitive domain")
    code_of = {v: i for i, v in enumerate(domain)}
    values = np.array([code_of[v] for v in sensitive], dtype=np.int64)
    names = sorted({categories.category(v) for v in domain})
    category = np.array([names.index(categories.category(v)) for v in domain], dtype=np.int64)

    known = pd.Index(ids).isin(state.rows.index)
    old, new = np.flatnonzero(known), np.flatnonzero(~known)
    record = state.rows.loc[ids[known]]
    reinserted = int((record[LAST_RELEASE].to_numpy() < state.last_release).sum())
    in_last = state.rows[LAST_RELEASE].to_numpy() == state.last_release
    deleted = int((in_last & ~state.rows.index.isin(ids)).sum()) if state.last_release else 0
    codes = encode_qis(table, schema)
    bounds = Domain.of(schema, codes)
    extent = np.where(bounds.high > bounds.low, bounds.high - bounds.low, 1.0)
    rank = locality_rank((codes - bounds.low) / extent)

    phase("division")
    signatures = [frozenset(code_of[v] for v in s) for s in state.signatures]
    clusters = divide(old, record[SIGNATURE].to_numpy(), signatures, values, rank,
                      keep_substitutes)
    types = cluster_types(clusters)
    supply = np.bincount(values[new], minlength=len(domain)).astype(np.int64)

    phase("assignment")
    greedy = greedy_plan(types, supply, category, lam, tau, allow_extras)
    plan: AssignmentPlan = greedy
    heuristic = greedy.objective(types)
    certificate = Certificate(step=PRINCIPLE, status="HEURISTIC",
                              objective=float(heuristic[0] + heuristic[1]),
                              heuristic_objective=float(heuristic[0] + heuristic[1]),
                              detail="greedy (Algorithm 1)")
    size = _model_size(types, supply)
    if use_model and size <= max_model_variables:
        solution = solve_eps_assignment(
            [TypeCounts(t.present, t.missing, t.multiplicity, t.members) for t in types],
            supply.tolist(), category.tolist(), lam, tau, hint=greedy,
            time_limit=time_limit, num_workers=num_workers,
            random_seed=int(rng.integers(1 << 30)), allow_extras=allow_extras,
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
    elif use_model:
        certificate = dataclasses.replace(
            certificate, detail=f"greedy (Algorithm 1); model skipped ({size} variables)")

    phase("realization")
    placement = realize_plan(clusters, types, plan, new, values, rank, category, lam, tau, rng)
    published_rows = np.flatnonzero(placement.cluster >= 0)
    deferred_rows = np.flatnonzero(placement.cluster < 0)
    if not len(published_rows):
        raise InputError(
            f"nothing to publish: every row of T({number}) was deferred; no group of ε = "
            f"{epsilon} distinct sensitive values can be formed. Lower λ or τ."
        )

    phase("publication")
    parameters = {"m": epsilon, "lambda": lam, "tau": tau, "principle": PRINCIPLE,
                  "categories": categories.source, "extras": allow_extras,
                  "keep_substitutes": keep_substitutes}
    domain_array = np.asarray(domain, dtype=object)
    release = build_permuted_release(
        number, table.iloc[published_rows], placement.cluster[published_rows],
        domain_array[placement.published[published_rows]], schema,
        deferred=ids[deferred_rows].tolist(), rng=rng, metadata={"parameters": parameters,
                                           "identifier_kind": identifier_kind},
    )

    phase("verify")
    report = verify_eps_release(release, categories, lam, tau, previous_signatures(state))
    if not report.ok:
        raise VerificationError(
            f"release {number} failed verification and was not produced: {report.summary()}"
        )
    phase("state")
    next_state = dataclasses.replace(state, identifier_kind=identifier_kind).advance(release)
    phase(None)
    wall = time.perf_counter() - start
    certificate = dataclasses.replace(certificate, times=dict(timer.times))
    release = dataclasses.replace(release, metadata={
        **release.metadata, "certificate": certificate.to_dict(), "wall_time_s": wall})
    substitutions = int(placement.substituted.sum())
    return EpsStepResult(
        release=release, certificate=certificate, state=next_state, report=report,
        rows=len(table), new=len(new), deleted=deleted, reinserted=reinserted,
        deferred=len(deferred_rows), substitutions=substitutions,
        extras=int(sum(plan.extras.values())), groups=release.group_count(),
        new_clusters=placement.new_clusters, wall_time_s=wall, parameters=parameters,
    )


def store_options(
    lam: int, tau: int, categories: SACategories | None = None, allow_extras: bool = False
) -> dict[str, Any]:
    """The parameters an ε-inclusion store keeps (``ReleaseStore.init(options=...)``)."""
    categories = categories or SACategories.identity()
    return {"lambda": int(lam), "tau": int(tau), "categories": categories.to_dict(),
            "extras": bool(allow_extras)}


def options_parameters(options: dict[str, Any]) -> tuple[int, int, SACategories, bool]:
    """``(λ, τ, categories, allow_extras)`` from :func:`store_options`' dictionary."""
    try:
        return (int(options["lambda"]), int(options["tau"]),
                SACategories.from_dict(options.get("categories") or {}),
                bool(options.get("extras", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ParameterError(f"the store's eps-inclusion options are incomplete: {exc}") from exc


def publish_with_options(
    table: pd.DataFrame,
    schema: Schema,
    options: dict[str, Any],
    previous: PublisherState | None = None,
    **keywords: Any,
) -> EpsStepResult:
    """:func:`publish_eps_inclusive` with a store's options (``keywords`` passed on)."""
    lam, tau, categories, extras = options_parameters(options)
    return publish_eps_inclusive(table, schema, lam, tau, categories, previous,
                                 allow_extras=extras, **keywords)


def verify_eps_sequence(releases: Sequence[Release], options: dict[str, Any]) -> VerificationReport:
    """Definition 8 over stored releases (each release against its rows' last signatures)."""
    lam, tau, categories, _ = options_parameters(options)
    return check_eps_inclusion_sequence(releases, categories, lam, tau, across_gaps=True)
