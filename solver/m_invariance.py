"""One m-invariant release: counterfeited generalization (m-invariance paper, §4).

Xiao & Tao (SIGMOD 2007), §4.1-4.3, with the product's extensions (design notes, "The
m-invariant release step"):

1. division (:mod:`republish.heuristics.division`): rows published before -- ``S∩`` and
   re-inserted rows -- are bucketed by their last published signature;
2. balancing (:mod:`republish.heuristics.balancing`): deficits filled with new rows of the
   value, else counterfeits;
3. eligibility: the new rows left over are made m-eligible with the m-eligibility paper's
   methods (counterfeits by default, deferrals or both on request);
4. assignment (:mod:`republish.heuristics.assign`, Fig. 3);
5. split (:mod:`republish.heuristics.perimeter_split`, §4.3).

Counts become rows in :mod:`republish.solver.m_invariance_rows`, which also makes sure
every group holds a real row. The release is verified (m-uniqueness, counterfeits,
hygiene, and every previously published row keeping its signature, across gaps) before
it is returned; a failing release raises :class:`VerificationError`.

Each phase takes and returns plain counts or arrays so that an exact model can replace
it (``republish.models``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from republish.errors import ParameterError, VerificationError
from republish.generalization import Domain, group_boxes, perimeters
from republish.heuristics.assign import assign_new_rows
from republish.heuristics.balancing import balance_buckets
from republish.heuristics.division import divide_by_signature
from republish.principles import verify_release
from republish.principles.report import VerificationReport
from republish.problems.eligibility import EligibilitySolution, solution_from_targets
from republish.release import Release, build_release
from republish.schema import Schema
from republish.solver.certificate import Certificate
from republish.solver.eligibility import make_eligible
from republish.solver.m_invariance_exact import decide_counts, defer_rows, exact_splitter
from republish.solver.m_invariance_rows import (
    Workspace,
    form_groups,
    place_assignment,
    place_balancing,
    place_old_rows,
)
from republish.solver.phase_timer import PhaseTimer, Progress
from republish.solver.steps import Mode, check_solver_options
from republish.state import (
    LAST_RELEASE,
    SIGNATURE,
    PublisherState,
    check_against_state,
    check_unchanged,
)
from republish.tables import encode_qis, validate_release_table

__all__ = ["StepResult", "publish_m_invariant"]

EligibilityMethod = Literal["counterfeit", "delete", "hybrid"]
PRINCIPLE = "m-invariance"


@dataclass(frozen=True, eq=False)
class StepResult:
    """A verified release and what it took.

    ``new`` counts rows of ``T(n)`` never published before (deferred ones included),
    ``deferred`` those held back, ``reinserted`` rows published before the last release,
    absent from it and back now, ``deleted`` rows of the last release absent from ``T(n)``.
    ``grouping`` certifies the group formation of an exact step (objective: the perimeter
    sum of :mod:`republish.models.grouping.formation`); None for the heuristic pipeline.
    """

    release: Release
    certificate: Certificate
    state: PublisherState
    report: VerificationReport
    rows: int
    new: int
    deleted: int
    reinserted: int
    deferred: int
    counterfeits: int
    groups: int
    mean_perimeter: float
    wall_time_s: float
    parameters: dict[str, Any] = field(default_factory=dict)
    grouping: Certificate | None = None

    def summary(self) -> dict[str, Any]:
        """The ``history --json`` object of this release."""
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
            "wall_time_s": self.wall_time_s,
            "status": self.certificate.status,
            "objective": self.certificate.objective,
            "bound": self.certificate.bound,
            "gap": self.certificate.gap,
            "grouping_status": None if self.grouping is None else self.grouping.status,
            "grouping_gap": None if self.grouping is None else self.grouping.gap,
        }


def _make_eligible(
    table: pd.DataFrame,
    schema: Schema,
    rows: np.ndarray,
    m: int,
    method: EligibilityMethod,
    domain: list[str],
    time_limit: float,
) -> tuple[EligibilitySolution, np.ndarray]:
    """Make the new rows ``rows`` left after balancing m-eligible (m-eligibility paper).

    Goes through :func:`republish.solver.eligibility.make_eligible` (the paper's
    Algorithm 1, 2 or 3 handed to the exact model). Counterfeits may take sensitive
    values absent from the new rows (``domain`` order: the most frequent in ``T(n)``
    first) when fewer than ``m`` values are present. Deferred rows are the outliers of
    their value (the utility rule of ``make_eligible(seed=None)``).

    Returns the solution and the deferred rows (positions in ``table``).
    """
    if len(rows) == 0:
        empty = solution_from_targets(method, m, {}, {}, status="OPTIMAL", solve_time_s=0.0,
                                      bound=0.0)
        return empty, np.zeros(0, dtype=np.int64)
    present = set(table[schema.sensitive].iloc[rows].astype(str))
    solution, applied = make_eligible(
        table.iloc[rows], schema, m, method, time_limit=time_limit, seed=None,
        allow_new_values=True, new_values=[v for v in domain if v not in present],
        num_workers=1,
    )
    return solution, np.sort(applied.deferred.index.to_numpy(dtype=np.int64))


def _domain_order(state: PublisherState, sensitive: np.ndarray) -> list[str]:
    """Sensitive values seen so far, the most frequent in ``T(n)`` first."""
    counts = pd.Series(sensitive).value_counts()
    ordered = sorted(counts.index.astype(str), key=lambda v: (-int(counts[v]), v))
    rest = sorted(state.sensitive_domain() - set(ordered))
    return ordered + rest


def _normalized_points(table: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """QI codes of ``table`` and the same scaled to [0, 1] per QI (§4.3)."""
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    low = np.minimum(domain.low, codes.min(axis=0)) if len(codes) else domain.low
    high = np.maximum(domain.high, codes.max(axis=0)) if len(codes) else domain.high
    extent = np.where(high > low, high - low, 1.0)
    return codes, (codes - low) / extent


def publish_m_invariant(
    table: pd.DataFrame,
    schema: Schema,
    m: int,
    previous: PublisherState | None = None,
    eligibility: EligibilityMethod = "counterfeit",
    rng: np.random.Generator | None = None,
    number: int | None = None,
    progress: Progress | None = None,
    new_population: bool = False,
    validated: bool = False,
    eligibility_time_limit: float = 10.0,
    mode: Mode = "heuristic",
    time_limit: float = 10.0,
    workers: int = 1,
) -> StepResult:
    """Compute, verify and return release ``n`` of an m-invariant sequence.

    Parameters
    ----------
    table:
        The microdata ``T(n)`` (validated against ``schema`` here).
    schema, m:
        Must equal those of ``previous``.
    previous:
        The publisher's state after release ``n - 1``; ``None`` for the first release.
    eligibility:
        How the new rows left after balancing are made m-eligible: ``counterfeit``
        (minimal counterfeits, Algorithm 1), ``delete`` (deferrals, Algorithm 2) or
        ``hybrid`` (both, the closest m-eligible table; Algorithm 3 as the model's hint).
    rng:
        Randomness for row choices, group numbers and row order (OS entropy when None).
    number:
        Release number (default: the previous one plus 1).
    progress:
        Called with the name of each phase as it starts.
    validated:
        ``True`` when ``table`` comes from :func:`~republish.tables.load_table` or
        :func:`~republish.tables.validate_table` with this schema (skips re-validation).
    eligibility_time_limit:
        Seconds for the exact eligibility model (CP-SAT, hinted with the paper's
        algorithm; the algorithm's answer is kept when the model finds nothing better).
    mode, time_limit, workers:
        ``heuristic`` (default): the phases above. ``auto``/``exact``: balancing, extra
        rows and eligibility come from the bucket-assignment model and every bucket is
        grouped by the exact group formation, each hinted with the greedy phases.
        ``time_limit`` is one budget for the whole step, counted from the call: the
        models share it and stop at its end, keeping the greedy answer where they have
        not proven better (:mod:`republish.solver.m_invariance_exact`). Building and
        verifying the release come on top (a fraction of a second at 40,000 rows).

    Raises
    ------
    ParameterError
        on a bad ``m``, ``eligibility``, ``mode``, ``time_limit`` or ``workers``, a
        schema or ``m`` differing from ``previous``, or
        fewer than ``m`` sensitive values known.
    InputError
        on a malformed table, changed values of a published identifier, or an empty
        release.
    VerificationError
        if the computed release fails its verifier (never returned).
    """
    start = time.perf_counter()
    timer = PhaseTimer(progress)
    timer.phase("validate")
    if eligibility not in ("counterfeit", "delete", "hybrid"):
        raise ParameterError(
            f"eligibility={eligibility!r}: use 'counterfeit', 'delete' or 'hybrid'."
        )
    check_solver_options(mode, time_limit, workers)
    state = previous if previous is not None else PublisherState.empty(schema, m)
    if state.m != m:
        raise ParameterError(f"m={m} differs from m={state.m} of the previous releases.")
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
    ids = table[schema.identifier].astype(str).to_numpy(dtype=object)
    positions = state.positions(ids)
    check_unchanged(state, table, positions)
    sensitive = table[schema.sensitive].astype(str).to_numpy(dtype=object)
    domain = _domain_order(state, sensitive)
    if len(domain) < m:
        raise ParameterError(
            f"m={m} but only {len(domain)} distinct sensitive value(s) are known "
            f"({sorted(domain)}); every group needs m different values. Lower m."
        )
    codes_sa = pd.Series(sensitive).map({v: i for i, v in enumerate(domain)}).to_numpy(
        dtype=np.int64
    )

    known = positions >= 0
    old = np.flatnonzero(known)
    record = state.rows.iloc[positions[known]]
    reinserted = int((record[LAST_RELEASE].to_numpy() < state.last_release).sum())
    present = np.zeros(len(state.rows), dtype=bool)
    present[positions[known]] = True
    in_last = state.rows[LAST_RELEASE].to_numpy() == state.last_release
    deleted = int((in_last & ~present).sum()) if state.last_release else 0
    new = np.flatnonzero(~known)

    timer.phase("division")
    division = divide_by_signature(record[SIGNATURE].to_numpy(), state.signatures, sensitive[old])
    shuffled = new[rng.permutation(len(new))]
    work = Workspace(
        domain=domain,
        signatures=list(division.signatures),
        pool={domain[c]: shuffled[codes_sa[shuffled] == c]
              for c in np.unique(codes_sa[shuffled]).tolist()},
    )
    place_old_rows(work, old, division.bucket_of_row, codes_sa)

    timer.phase("balancing")
    decided = None
    if mode == "heuristic":
        balancing = balance_buckets(division.counts, {v: len(r) for v, r in work.pool.items()})
    else:
        decided = decide_counts(division.signatures, division.counts,
                                {v: len(r) for v, r in work.pool.items()}, m, eligibility,
                                domain, mode, start + time_limit, workers)
        balancing = decided.balancing
    place_balancing(work, balancing)

    timer.phase("eligibility")
    leftover = np.concatenate([np.zeros(0, dtype=np.int64), *work.pool.values()])
    if decided is None:
        solution, deferred_rows = _make_eligible(
            table, schema, leftover, m, eligibility, domain, eligibility_time_limit
        )
    else:
        solution, deferred_rows = defer_rows(decided, table, schema, leftover, m)
    if len(deferred_rows):
        work.pool = {v: r[~np.isin(r, deferred_rows)] for v, r in work.pool.items()}

    timer.phase("assign")
    assign_counts = {v: len(r) for v, r in work.pool.items() if len(r)}
    for value, count in solution.counterfeits.items():
        assign_counts[value] = assign_counts.get(value, 0) + count
    place_assignment(work, assign_new_rows(assign_counts, m).moves)

    timer.phase("split")
    codes, normalized = _normalized_points(table, schema)
    split_certificates: list[Certificate] = []
    splitter = None if decided is None else exact_splitter(mode, start + time_limit,
                                                           workers, split_certificates)
    item_rows, item_values, item_buckets, item_groups, levels = form_groups(
        work, normalized, splitter
    )

    timer.phase("build")
    real = item_rows >= 0
    published_rows = item_rows[real]
    groups = item_groups[real]
    counterfeit_values: dict[int, list[str]] = {}
    for group, value in zip(item_groups[~real].tolist(), item_values[~real].tolist(),
                            strict=True):
        counterfeit_values.setdefault(group, []).append(domain[value])
    parameters = {"m": m, "eligibility": eligibility, "principle": PRINCIPLE}
    release = build_release(
        number,
        table.iloc[published_rows].reset_index(drop=True),
        groups,
        schema,
        counterfeit_values=counterfeit_values,
        deferred=ids[deferred_rows].tolist(),
        rng=rng,
        model="interval",
        metadata={"parameters": parameters, "identifier_kind": identifier_kind},
    )
    boxes = group_boxes(codes[published_rows], groups)
    mean_perimeter = float(perimeters(schema, boxes, Domain.of(schema, codes)).mean())

    timer.phase("verify")
    report = verify_release(release, m).merge(
        check_against_state(release, state, positions[published_rows]),
        principle=f"release {number}",
    )
    if not report.ok:
        raise VerificationError(
            f"release {number} failed verification and was not produced: {report.summary()}"
        )
    timer.phase("state")
    next_state = dataclasses.replace(state, identifier_kind=identifier_kind).advance(
        release, [work.signatures[b] for b in item_buckets[real].tolist()],
        positions[published_rows],
    )
    timer.phase(None)
    wall = time.perf_counter() - start
    counterfeits = release.counterfeit_total()
    objective = float(counterfeits + len(deferred_rows))
    counts_certificate = None if decided is None else decided.certificate
    certificate = Certificate(
        step=PRINCIPLE,
        status="HEURISTIC" if counts_certificate is None else counts_certificate.status,
        objective=objective,
        bound=None if counts_certificate is None or counts_certificate.bound is None
        else min(counts_certificate.bound, objective),
        heuristic_objective=objective if counts_certificate is None
        else counts_certificate.heuristic_objective,
        times=timer.times,
        detail=(
            f"balancing counterfeits {balancing.total_counterfeits}; eligibility "
            f"{solution.method} ({solution.status}): {solution.total_counterfeits} counterfeits, "
            f"{solution.total_deletions} deferrals; split levels {levels}"
            + "".join(f"; grouping {c.status}: objective {c.objective:.6g}, bound "
                      f"{c.bound if c.bound is None else round(c.bound, 6)}"
                      for c in split_certificates)
        ),
    )
    metadata = {**release.metadata, "certificate": certificate.to_dict(), "wall_time_s": wall}
    release = dataclasses.replace(release, metadata=metadata)
    return StepResult(
        release=release,
        certificate=certificate,
        state=next_state,
        report=report,
        rows=len(table),
        new=len(new),
        deleted=deleted,
        reinserted=reinserted,
        deferred=len(deferred_rows),
        counterfeits=counterfeits,
        groups=release.group_count(),
        mean_perimeter=mean_perimeter,
        wall_time_s=wall,
        parameters=parameters,
        grouping=split_certificates[0] if split_certificates else None,
    )
