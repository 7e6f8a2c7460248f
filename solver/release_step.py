"""The release step every principle shares: checks, identifiers, counts, build, verify,
advance, certificate and summary. A principle supplies only its middle.

The skeleton follows the design notes ("The m-invariant release step") and Lemma 4 of the
m-invariance paper (release ``n`` needs only ``T(n)``, ``T(n-1)`` and ``T*(n-1)``, kept in
the :class:`~republish.state.PublisherState`):

1. parameters and state: the schema and ``m`` of the history, the release number;
2. ``T(n)``: validated, identifiers canonical for the history's kind, a re-keyed-looking
   population refused (:mod:`republish.identifiers`), value changes the principle forbids
   refused (:meth:`Principle.check_changes`);
3. counts: new, deleted, re-inserted rows;
4. the principle's middle (:data:`Middle`) builds the release from a :class:`StepContext`;
5. verification against the state before the release
   (:meth:`Principle.check_step`): a failing release raises and is never returned;
6. the state advanced once; the certificate timed; a :class:`StepResult`.

The release store trusts a :class:`StepResult` computed from its own state (it does not
verify or advance it again: :meth:`republish.store.ReleaseStore.append_step`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.arrow_memory import release_free_memory
from republish.certificate import Certificate
from republish.errors import ParameterError, VerificationError
from republish.generalization import Domain, group_boxes, ncp
from republish.parameters import Eligibility, validate_eligibility
from republish.principles.catalog import PrincipleOptions, principle
from republish.principles.report import VerificationReport
from republish.release import GROUP, Release
from republish.schema import Schema
from republish.solver.options import Deadline, SolveOptions
from republish.solver.phase_timer import PhaseTimer, Progress
from republish.state import LAST_RELEASE, PublisherState
from republish.tables import encode_qis, validate_release_table

__all__ = ["Built", "Middle", "StepContext", "StepResult", "run_release_step"]


@dataclass(frozen=True, eq=False)
class StepContext:
    """What a principle's middle receives: ``T(n)`` validated, with the identifiers'
    rows in the state (``positions``, -1 for rows never published)."""

    table: pd.DataFrame
    schema: Schema
    state: PublisherState
    options: Any
    number: int
    rng: np.random.Generator
    solve: SolveOptions
    deadline: Deadline
    eligibility: Eligibility
    ids: np.ndarray
    positions: np.ndarray
    timer: PhaseTimer

    @property
    def known(self) -> np.ndarray:
        return self.positions >= 0

    def model_seed(self) -> int:
        """The models' random seed: the options' one, else drawn from the step's rng."""
        return (self.solve.seed if self.solve.seed is not None
                else int(self.rng.integers(0, 2**31 - 1)))


@dataclass(frozen=True, eq=False)
class Built:
    """A principle middle's answer. ``published_rows`` are the rows of ``T(n)`` in the
    order of ``release.assignment``; ``row_signatures`` (optional) their groups'
    signatures, which saves recomputing them when the state advances."""

    release: Release
    certificate: Certificate
    published_rows: np.ndarray
    counterfeits: int
    deferred: int
    mean_perimeter: float | None = None
    row_signatures: Sequence[frozenset[str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    grouping: Certificate | None = None
    #: NCP of the published real rows when the middle has their groups' boxes already
    #: (None: computed from the release, another pass over T(n)'s QIs).
    ncp: float | None = None


Middle = Callable[[StepContext], Built]


@dataclass(frozen=True, eq=False)
class StepResult:
    """A verified release and what it took.

    ``new`` counts rows of ``T(n)`` never published before (deferred ones included),
    ``deferred`` those held back, ``reinserted`` rows published before the last release,
    absent from it and back now, ``deleted`` rows of the last release absent from
    ``T(n)``. ``previous`` is the state the step was computed from, ``state`` the state
    after it. ``extra`` holds a principle's own figures (ε-inclusion: substitutions).
    """

    release: Release
    certificate: Certificate
    previous: PublisherState
    state: PublisherState
    report: VerificationReport
    rows: int
    new: int
    deleted: int
    reinserted: int
    deferred: int
    counterfeits: int
    groups: int
    mean_perimeter: float | None
    wall_time_s: float
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    grouping: Certificate | None = None
    ncp: float | None = None

    def summary(self) -> dict[str, Any]:
        """The ``history --json`` object of this release (the Contract keys first)."""
        return {
            "release": self.release.number,
            "rows": self.rows,
            "new": self.new,
            "deleted": self.deleted,
            "reinserted": self.reinserted,
            "counterfeits": self.counterfeits,
            "deferred": self.deferred,
            "groups": self.groups,
            "mean_perimeter": self.mean_perimeter,
            "ncp": self.ncp,
            "wall_time_s": self.wall_time_s,
            "status": self.certificate.status,
            "objective": self.certificate.objective,
            "bound": self.certificate.bound,
            "gap": self.certificate.gap,
            "grouping_status": None if self.grouping is None else self.grouping.status,
            "grouping_gap": None if self.grouping is None else self.grouping.gap,
            **_stages(self.certificate),
            **self.extra,
        }


def _stages(certificate: Certificate) -> dict[str, Any]:
    """The two stages of a lexicographic certificate: (a) ``counts_*``, (b) ``cost_*``."""
    if len(certificate.stages) != 2:
        return {"objective_name": certificate.objective_name or None}
    first, second = certificate.stages
    within = certificate.restricted
    return {
        "objective_name": certificate.objective_name,
        "counts_status": first.status, "counts_bound": first.bound, "counts_gap": first.gap,
        "cost": second.objective, "cost_status": second.status, "cost_bound": second.bound,
        "cost_gap": second.gap, "cost_name": second.objective_name,
        # (b) over the releases a policy allows (Certificate.restricted), beside the above
        "within": None if within is None else within.step.rpartition(" (b) ")[2],
        "within_status": None if within is None else within.status,
        "within_bound": None if within is None else within.bound,
        "within_gap": None if within is None else within.gap,
    }


def _check_history(state: PublisherState, schema: Schema, options: PrincipleOptions,
                   number: int | None) -> int:
    if state.m != options.m:
        raise ParameterError(f"m={options.m} differs from m={state.m} of the previous releases.")
    if state.schema.fingerprint() != schema.fingerprint():
        raise ParameterError("the schema differs from the schema of the previous releases.")
    number = state.last_release + 1 if number is None else int(number)
    if number <= state.last_release:
        raise ParameterError(f"release number {number} must exceed {state.last_release}.")
    return number


def _movements(state: PublisherState, positions: np.ndarray) -> tuple[int, int, int]:
    """(new, deleted, re-inserted) rows of ``T(n)`` against the state."""
    known = positions >= 0
    last = state.rows[LAST_RELEASE].to_numpy()
    reinserted = int((last[positions[known]] < state.last_release).sum())
    present = np.zeros(len(state.rows), dtype=bool)
    present[positions[known]] = True
    deleted = int(((last == state.last_release) & ~present).sum()) if state.last_release else 0
    return int((~known).sum()), deleted, reinserted


def run_release_step(
    name: str,
    middle: Middle,
    table: pd.DataFrame,
    schema: Schema,
    options: PrincipleOptions,
    previous: PublisherState | None = None,
    *,
    solve: SolveOptions | None = None,
    eligibility: Eligibility = "counterfeit",
    rng: np.random.Generator | None = None,
    number: int | None = None,
    progress: Progress | None = None,
    validated: bool = False,
    new_population: bool = False,
) -> StepResult:
    """Release ``n`` of principle ``name`` with its ``middle`` (see the module docstring).

    Raises
    ------
    ParameterError
        on bad options, or a schema or ``m`` differing from ``previous``.
    InputError
        on a malformed table, identifiers of another kind or a re-keyed-looking
        population, value changes the principle forbids, or nothing to publish.
    VerificationError
        if the computed release fails its verifier (never returned).
    """
    timer = PhaseTimer(progress)
    timer.phase("validate")
    kind = principle(name)
    # the budget starts after the principle's module is imported: a process's first step
    # would otherwise lose the import (about 0.15 s, networkx) from a 1 s limit
    start = time.perf_counter()
    solve = solve if solve is not None else SolveOptions()
    eligibility = validate_eligibility(eligibility)
    state = previous if previous is not None else PublisherState.empty(schema, options.m)
    number = _check_history(state, schema, options, number)
    rng = rng if rng is not None else np.random.default_rng(solve.seed)
    table, identifier_kind = validate_release_table(
        table, schema, state.identifier_kind, state.last_population(), validated=validated,
        new_population=new_population)
    ids = table[schema.identifier].astype(str).to_numpy(dtype=object)
    positions = state.positions(ids)
    kind.check_changes(state, table, positions, options)
    new, deleted, reinserted = _movements(state, positions)

    context = StepContext(table=table, schema=schema, state=state, options=options,
                          number=number, rng=rng, solve=solve,
                          deadline=Deadline(start + solve.time_limit),
                          eligibility=eligibility, ids=ids, positions=positions, timer=timer)
    # the middle's temporaries are the release's peak: nothing freed may count in it
    release_free_memory(len(table))
    built = middle(context)
    release = _with_metadata(built.release, identifier_kind=identifier_kind)
    published = positions[built.published_rows]

    timer.phase("verify")
    release_free_memory(len(table))
    report = kind.check_step(release, state, options, published)
    if not report.ok:
        raise VerificationError(
            f"release {number} failed verification and was not produced: {report.summary()}")
    information_loss = (built.ncp if built.ncp is not None
                        else _ncp(table, schema, built.published_rows, release))
    timer.phase("state")
    next_state = dataclasses.replace(state, identifier_kind=identifier_kind).advance(
        release, built.row_signatures, published)
    timer.phase(None)
    wall = time.perf_counter() - start
    certificate = dataclasses.replace(built.certificate, times=dict(timer.times))
    release = _with_metadata(release, certificate=certificate.to_dict(), wall_time_s=wall)
    return StepResult(
        release=release, certificate=certificate, previous=state, state=next_state,
        report=report, rows=len(table), new=new, deleted=deleted, reinserted=reinserted,
        deferred=built.deferred, counterfeits=built.counterfeits,
        groups=release.group_count(), mean_perimeter=built.mean_perimeter,
        wall_time_s=wall, parameters=dict(release.metadata.get("parameters", {})),
        extra=dict(built.extra), grouping=built.grouping, ncp=information_loss,
    )


def _ncp(table: pd.DataFrame, schema: Schema, rows: np.ndarray, release: Release) -> float:
    """NCP of the published real rows: their groups' boxes over the ranges of ``T(n)``
    (0 for a permutation publication, whose QIs are published exactly)."""
    groups = release.assignment[GROUP].to_numpy()
    if release.model == "exact" or len(groups) != len(rows) or len(rows) == 0:
        return 0.0
    codes = encode_qis(table, schema)
    return ncp(schema, group_boxes(codes[rows], groups), Domain.of(schema, codes))


def _with_metadata(release: Release, **entries: Any) -> Release:
    return dataclasses.replace(release, metadata={**release.metadata, **entries})
