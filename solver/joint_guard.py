"""The joint guard on releases (issue 20): no release may leave anybody fewer than m values.

m-Distinct (Li & Zhou, Definition 15) and ε-inclusion with Algorithm 1's extras
(ε-inclusion paper, line 15) check each record alone; the joint adversary of
:mod:`republish.audit.joint` can still pin values. Before a release is returned, the
guard builds the joint model of the history plus the candidate release, restricted to the
components of the person-group graph that the new release touches, and computes the
possible sets there (:func:`republish.audit.joint.joint_audit`). A person of those
components left with fewer than ``m`` possible values who was not already exposed by the
history alone is a *new exposure*:

* repair: the release is computed again with other random choices (another grouping,
  other counterfeits: Phase 2's order, the models' seeds, the split), up to ``attempts``
  times, then by the principle's fallbacks (m-Distinct: the paper's Algorithm 1 alone,
  then deferrals instead of counterfeits for new rows; ε-inclusion: no extras, the rows
  deferred), and the first candidate without new exposures is kept;
* refusal: when every attempt exposes somebody, :class:`~republish.errors.VerificationError`
  names the people who would be exposed (the release is never produced).

The kept release records the outcome (``joint_check``: ``complete`` when every possible
set of the touched components was decided within ``time_limit``, else ``incomplete``) in
``StepResult.extra`` (so in ``history --json``), in the certificate's detail and in the
release's metadata. m-invariance never needs the guard (Lemmas 1 and 3 of the
m-invariance paper); the tests check that property with the same audit.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.audit.joint import JointAudit, joint_audit
from republish.audit.joint_model import joint_instance
from republish.errors import ParameterError, RepublishError, VerificationError
from republish.principles.catalog import PrincipleOptions
from republish.release import Release
from republish.schema import Schema
from republish.solver.release_step import StepResult
from republish.state import PublisherState
from republish.transitions import TransitionModel

__all__ = ["GuardCheck", "check_release", "guarded_publish", "guarded_release",
           "joint_guard_applies"]


@dataclass(frozen=True)
class GuardCheck:
    """The joint check of one candidate release: newly exposed people and completeness."""

    exposed: tuple[str, ...]
    complete: bool
    checked_share: float
    wall_time_s: float
    audit: JointAudit | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.exposed


def _flagged_people(audit: JointAudit) -> set[str]:
    inst = audit.instance
    return {inst.persons[p] for p in inst.cell_person[audit.flagged].tolist()}


def check_release(
    history: Sequence[Release], release: Release, principle: str, m: int,
    transitions: TransitionModel | None = None, time_limit: float = 60.0,
    workers: int = 1, seed: int = 0,
) -> GuardCheck:
    """The joint check of ``release`` after ``history`` (see the module docstring)."""
    releases = [*history, release]
    instance = joint_instance(releases, principle, transitions)
    touched = np.flatnonzero(instance.cell_release == release.number)
    audit = joint_audit(instance, m=m, time_limit=time_limit, workers=workers, seed=seed,
                        cells=touched)
    flagged = _flagged_people(audit)
    if flagged and history:
        before = joint_instance(list(history), principle, transitions)
        ids = np.asarray(before.persons, dtype=object)[before.cell_person]
        mine = np.flatnonzero(np.isin(ids, sorted(flagged)))
        earlier = joint_audit(before, m=m, time_limit=time_limit, workers=workers, seed=seed,
                              cells=mine)
        flagged -= _flagged_people(earlier)
    return GuardCheck(exposed=tuple(sorted(flagged)), complete=audit.complete_components
                      == audit.components, checked_share=audit.checked_share(),
                      wall_time_s=audit.wall_time_s, audit=audit)


def _recorded(result: StepResult, check: GuardCheck, attempts: int) -> StepResult:
    state = "complete" if check.complete else "incomplete"
    summary = {"joint_check": state, "joint_exposed": len(check.exposed),
               "joint_attempts": attempts, "joint_checked_share": check.checked_share,
               "joint_time_s": check.wall_time_s}
    certificate = result.certificate
    detail = f"{certificate.detail}; joint check {state} ({attempts} attempt(s))".lstrip("; ")
    certificate = dataclasses.replace(certificate, detail=detail)
    release = dataclasses.replace(result.release, metadata={
        **result.release.metadata, "certificate": certificate.to_dict(), "joint_check": summary})
    return dataclasses.replace(result, release=release, certificate=certificate,
                               extra={**result.extra, **summary})


def guarded_release(
    compute: Callable[[np.random.Generator], StepResult],
    history: Sequence[Release],
    principle: str,
    m: int,
    rng: np.random.Generator,
    transitions: TransitionModel | None = None,
    attempts: int = 8,
    time_limit: float = 60.0,
    workers: int = 1,
    fallbacks: Sequence[Callable[[np.random.Generator], StepResult]] = (),
) -> StepResult:
    """``compute(rng)`` guarded: the first candidate without new exposures, recorded.

    The first attempt uses ``rng`` itself (an unexposed release is exactly the unguarded
    one); later attempts draw fresh generators from it. ``fallbacks`` are other ways to
    compute the release (ε-inclusion: without extras, deferring those rows), tried in
    order once the ``attempts`` are used up.

    Raises
    ------
    VerificationError
        when every attempt exposes somebody (names them).
    """
    if not isinstance(attempts, int) or attempts < 1:
        raise ParameterError(f"attempts={attempts!r}: give a positive integer.")
    if not time_limit > 0:
        raise ParameterError(f"time_limit={time_limit!r}: give a positive number of seconds.")
    exposed: set[str] = set()
    number = None
    candidates = [compute] * attempts + list(fallbacks)
    for attempt, candidate in enumerate(candidates):
        step_rng = rng if attempt == 0 else np.random.default_rng(int(rng.integers(2**62)))
        try:
            result = candidate(step_rng)
        except RepublishError:
            if attempt < attempts:
                raise
            continue  # a fallback that cannot publish these rows
        number = result.release.number
        check = check_release(history, result.release, principle, m, transitions,
                              time_limit, workers, seed=attempt)
        if check.ok:
            return _recorded(result, check, attempt + 1)
        exposed |= set(check.exposed)
    shown = sorted(exposed)
    raise VerificationError(
        f"release {number} refused by the joint guard: after {len(candidates)} attempt(s) every "
        f"candidate leaves fewer than m={m} possible values to {len(shown)} person(s) "
        f"({', '.join(shown[:10])}{' ...' if len(shown) > 10 else ''}); the joint adversary "
        "would expose them (republish audit --joint). Defer them, lower m or publish with "
        "another principle.")


def joint_guard_applies(name: str, options: object) -> bool:
    """Whether releases of principle ``name`` with ``options`` run the joint guard:
    m-Distinct always, ε-inclusion when extras are on."""
    return name == "m-distinct" or (name == "eps-inclusion"
                                    and bool(getattr(options, "extras", False)))


def guarded_publish(
    table: pd.DataFrame, schema: Schema, name: str, options: PrincipleOptions,
    previous: PublisherState | None = None, *, history: Sequence[Release] | None = None,
    guard_attempts: int = 8, guard_time_limit: float = 60.0, **step: Any,
) -> StepResult:
    """:func:`republish.solver.publish.publish` with the joint guard when it applies and
    ``history`` (the releases before, in order) is given; ``step`` are publish's keywords
    (``solve``, ``eligibility``, ``rng``, ``number``, ...)."""
    from republish.solver.publish import publish

    rng = step.pop("rng", None)
    rng = rng if rng is not None else np.random.default_rng()

    def compute(step_rng: np.random.Generator, **changed: Any) -> StepResult:
        kept = {**step, **changed}
        chosen = kept.pop("options", options)
        return publish(table, schema, name, chosen, previous, rng=step_rng, **kept)

    if history is None or not joint_guard_applies(name, options):
        return compute(rng)
    solve = step.get("solve")
    if name == "eps-inclusion":
        fallbacks = [functools.partial(compute, options=dataclasses.replace(
            options, extras=False))]  # type: ignore[type-var]
    else:
        fallbacks = [functools.partial(compute, eligibility="hybrid")]
        if solve is not None:
            fallbacks.insert(0, functools.partial(compute, solve=dataclasses.replace(
                solve, mode="heuristic")))
    return guarded_release(compute, history, name, options.m, rng,
                           getattr(options, "transitions", None), attempts=guard_attempts,
                           time_limit=guard_time_limit,
                           workers=solve.workers if solve is not None else 1,
                           fallbacks=fallbacks)
