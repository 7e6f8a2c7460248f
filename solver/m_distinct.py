"""One m-Distinct release (Li & Zhou, §V, Algorithm 1), verified before it is returned.

1. Phase 1 (:func:`~republish.heuristics.m_distinct.create_buckets`): buckets from the
   update set signatures of the records published before, and their intersections;
2. Phase 2 (:func:`~republish.heuristics.m_distinct.assign_records`, eq. 3): records to
   bucket entries, new records without a suitable bucket to the first-release path;
3. exact assignment (:mod:`republish.models.m_distinct_assignment`): CP-SAT on record
   classes minimizing counterfeits, generalization second, hinted with Phase 2 and kept
   only when it needs fewer counterfeits (or as many with less spread); records follow
   the counts through a min-cost flow;
4. balancing (:func:`~republish.heuristics.m_distinct.balance_bucket`);
5. first-release path for new records: m-eligibility (counterfeits, deferrals or both,
   :func:`republish.solver.eligibility.make_eligible`), Algorithm Assign of the
   m-invariance paper, on values -- or, with the §IV-B extension, on CUS-overlap
   components so that every group's values have pairwise disjoint CUS;
6. Phase 3 (:mod:`republish.heuristics.m_distinct_split`, eq. 4), groups of counterfeits
   only are dropped, the release is built and verified (m-uniqueness, counterfeits,
   hygiene, Definition 15 against the publisher's state, §IV-B when asked).

A record's sensitive value may change between releases only within the public model
(``CUS`` of its last published value); QI values may change freely.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.generalization import Domain, group_boxes, perimeters
from republish.heuristics.m_distinct import (
    FRESH,
    BucketBalance,
    BucketTable,
    assign_records,
    balance_bucket,
    bucket_options,
    create_buckets,
)
from republish.heuristics.m_distinct_split import split_distinct_buckets
from republish.parameters import Eligibility
from republish.principles.catalog.m_distinct import MDistinctOptions
from republish.principles.m_distinct import PRINCIPLE
from republish.release import Release, build_release
from republish.schema import Schema
from republish.solver._m_distinct_phases import _exact_assignment, _fresh_path, _Rows
from republish.solver.certificate import Certificate
from republish.solver.joint_guard import guarded_release
from republish.solver.options import Mode, SolveOptions
from republish.solver.phase_timer import Progress
from republish.solver.release_step import Built, StepContext, StepResult, run_release_step
from republish.state import SIGNATURE, PublisherState
from republish.tables import encode_qis
from republish.transitions import TransitionModel, UpdateSetSignature

__all__ = ["build_m_distinct", "publish_m_distinct"]


def _normalized(table: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """QI codes, the same in [0, 1] per QI, and one cell's normalized width per QI."""
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    low = np.minimum(domain.low, codes.min(axis=0))
    high = np.maximum(domain.high, codes.max(axis=0))
    extent = np.where(high > low, high - low, 1.0)
    distinct = np.array([max(len(np.unique(codes[:, j])) - 1, 1) for j in range(codes.shape[1])])
    return codes, (codes - low) / extent, 1.0 / distinct


def publish_m_distinct(
    table: pd.DataFrame,
    schema: Schema,
    m: int,
    model: TransitionModel,
    previous: PublisherState | None = None,
    *,
    strict: bool = False,
    eligibility: Eligibility = "counterfeit",
    rng: np.random.Generator | None = None,
    number: int | None = None,
    progress: Progress | None = None,
    validated: bool = False,
    mode: Mode = "auto",
    time_limit: float = 10.0,
    workers: int = 1,
    new_population: bool = False,
    history: Sequence[Release] | None = None,
    guard_attempts: int = 8,
    guard_time_limit: float = 60.0,
) -> StepResult:
    """Compute, verify and return release ``n`` of an m-Distinct sequence.

    ``model`` is the public transition model; ``strict`` asks for the §IV-B extension;
    ``eligibility`` how new records on the first-release path become m-eligible;
    ``mode`` ``auto``/``exact`` runs the CP-SAT assignment within ``time_limit`` seconds
    (``heuristic``: Algorithm 1 alone). Other parameters as
    :func:`republish.solver.m_invariance.publish_m_invariant`. ``history``, the releases
    published before (in order), turns on the joint guard
    (:mod:`republish.solver.joint_guard`): up to ``guard_attempts`` candidates, each
    checked within ``guard_time_limit`` seconds; the kept one records ``joint_check``.

    Raises
    ------
    ParameterError
        on bad parameters, a state of another schema or ``m``, or fewer than ``m``
        values (CUS-overlap components under ``strict``).
    InputError
        on a malformed table, a value change the model forbids, or nothing to publish.
    VerificationError
        if the computed release fails verification, or the joint guard refuses it
        (never returned).
    """
    def compute(step_rng: np.random.Generator | None, step_mode: Mode = mode,
                how: Eligibility = eligibility) -> StepResult:
        return run_release_step(
            PRINCIPLE, build_m_distinct, table, schema, MDistinctOptions(m, model, strict),
            previous, solve=SolveOptions(step_mode, time_limit, workers), eligibility=how,
            rng=step_rng, number=number, progress=progress, validated=validated,
            new_population=new_population,
        )

    if history is None:
        return compute(rng)
    fallbacks = [functools.partial(compute, step_mode="heuristic"),
                 functools.partial(compute, how="hybrid")]
    return guarded_release(compute, history, PRINCIPLE, m,
                           rng if rng is not None else np.random.default_rng(), model,
                           attempts=guard_attempts, time_limit=guard_time_limit,
                           workers=workers, fallbacks=fallbacks)


def build_m_distinct(context: StepContext) -> Built:
    """The middle of an m-Distinct release: steps 1-6 of the module docstring."""
    table, schema, state = context.table, context.schema, context.state
    m, model, strict = context.options.m, context.options.transitions, context.options.strict
    solve, timer, rng, eligibility = context.solve, context.timer, context.rng, context.eligibility
    number, ids, positions = context.number, context.ids, context.positions
    sensitive = table[schema.sensitive].astype(str).to_numpy(dtype=object)
    frequency = pd.Series(sensitive).value_counts()
    domain = sorted(set(model.values) | state.sensitive_domain() | set(frequency.index))
    code = {v: k for k, v in enumerate(domain)}
    values = np.array([code[v] for v in sensitive], dtype=np.int64)
    by_use = sorted(domain, key=lambda v: (-int(frequency.get(v, 0)), v))
    if strict:
        component = model.conflict_components(domain)
        label_value: dict[str, str] = {}
        for v in by_use:
            label_value.setdefault(f"component-{component[v]}", v)
        labels = np.array([f"component-{component[v]}" for v in sensitive], dtype=object)
    else:
        label_value = {v: v for v in domain}
        labels = sensitive.copy()
    if len(label_value) < m:
        what = "CUS-overlap components" if strict else "sensitive values"
        raise ParameterError(f"m={m} but only {len(label_value)} {what} exist; lower m.")
    codes, points, cell = _normalized(table, schema)

    known = positions >= 0
    record = state.rows.iloc[positions[known]]
    uss_of_code: dict[int, UpdateSetSignature] = {}
    for c in np.unique(record[SIGNATURE].to_numpy()).tolist():
        uss_of_code[c] = model.uss(state.signatures[c])
    distinct = list(dict.fromkeys(uss_of_code.values()))
    position_of = {u: k for k, u in enumerate(distinct)}
    previous_index = np.full(len(table), -1, dtype=np.int64)
    previous_index[known] = [position_of[uss_of_code[c]] for c in record[SIGNATURE].tolist()]
    closure = {v: model.cus(v) for v in domain} if strict else None
    timer.phase("phase 1: buckets")

    buckets = BucketTable.build(create_buckets(distinct, domain), domain, closure)
    options = bucket_options(buckets, values, previous_index, distinct)
    timer.phase("phase 2: assign")
    order = rng.permutation(len(table))
    greedy_ordered = assign_records(buckets, values[order], points[order],
                                    [options[i] for i in order], ~known[order], cell)
    greedy = np.empty(len(table), dtype=np.int64)
    greedy[order] = greedy_ordered.bucket
    timer.phase("exact assignment")

    balances: dict[tuple[int, frozenset[tuple[str, int]]], BucketBalance] = {}

    def balanced(b: int, members: np.ndarray) -> BucketBalance:
        counts = pd.Series(sensitive[members]).value_counts().to_dict()
        key = (b, frozenset((str(v), int(c)) for v, c in counts.items()))
        if key not in balances:
            balances[key] = balance_bucket(buckets.signatures[b], counts)
        return balances[key]

    def cost_of(choice: np.ndarray) -> int:
        fakes = 0
        for b in np.unique(choice[choice >= 0]).tolist():
            fakes += balanced(b, np.flatnonzero(choice == b)).counterfeit_total
        pool = pd.Series(labels[choice == FRESH]).value_counts()
        return fakes + (max(0, m * int(pool.max()) - int(pool.sum())) if len(pool) else 0)

    heuristic = cost_of(greedy)
    flexible = (~known) | np.array([len(o) > 1 for o in options], dtype=bool)
    # Without a choice the buckets are forced and balancing gives each its smallest δ.
    chosen, status, detail = greedy, "HEURISTIC", "model not run"
    bound: float | None = None
    if not flexible.any():
        status, bound, detail = "OPTIMAL", float(heuristic), "assignment forced"
    if solve.uses_models and flexible.any():
        candidate, solution = _exact_assignment(
            buckets, options, greedy, values, labels, ~known, points, domain, m,
            max(context.deadline.left(), 1e-3), solve.workers, context.model_seed())
        detail = f"model {solution.status} ({solution.variables} variables)"
        if solution.found:
            exact_cost = cost_of(candidate)
            bound = solution.bound
            if exact_cost <= heuristic:
                chosen, status = candidate, solution.status
                if status == "OPTIMAL" and bound is not None and exact_cost > bound + 1e-9:
                    status = "FEASIBLE"
            else:
                status = "FEASIBLE"
    timer.phase("balance")

    out = _Rows()
    for b in np.unique(chosen[chosen >= 0]).tolist():
        entries = buckets.signatures[b]
        members = np.flatnonzero(chosen == b)
        balance = balanced(b, members)
        disjoint = sum(len(e) for e in entries) == len(frozenset().union(*entries))
        label = out.add_bucket(disjoint)
        pool = {v: list(members[sensitive[members] == v]) for v in set(sensitive[members])}
        for e, rows in enumerate(balance.rows):
            for v, amount in rows.items():
                available = min(amount, len(pool.get(v, [])))
                taken, pool[v] = pool.get(v, [])[:available], pool.get(v, [])[available:]
                out.add(np.array(taken + [-1] * (amount - available)), code[v], e, label)
    timer.phase("first-release path")
    fresh = np.flatnonzero(chosen == FRESH)
    fresh = fresh[rng.permutation(len(fresh))]
    deferred, _ = _fresh_path(table, schema, fresh, m, eligibility, labels, label_value, code,
                              sorted(label_value, key=lambda lab: by_use.index(label_value[lab])),
                              out, max(context.deadline.left(), 1e-3), solve.uses_models)
    timer.phase("phase 3: split")

    item_rows, item_values, item_entries, item_buckets = out.arrays()
    item_points = np.full((len(item_rows), points.shape[1]), np.nan)
    real = item_rows >= 0
    item_points[real] = points[item_rows[real]]
    split = split_distinct_buckets(item_points, item_values, item_entries, item_buckets,
                                   np.array(out.disjoint, dtype=bool))
    groups = split.groups
    has_real = np.zeros(split.group_count, dtype=bool)
    has_real[groups[real]] = True
    keep = has_real[groups]
    if not real.any():
        raise InputError("nothing to publish: every new row was deferred; use eligibility "
                         "'counterfeit' or 'hybrid', or a lower m.")
    timer.phase("build")

    counterfeit_values: dict[int, list[str]] = {}
    for g, v in zip(groups[keep & ~real].tolist(), item_values[keep & ~real].tolist(),
                    strict=True):
        counterfeit_values.setdefault(g, []).append(domain[v])
    published_rows = item_rows[real]
    parameters = {"m": m, "principle": PRINCIPLE, "strict": strict, "eligibility": eligibility}
    release = build_release(
        number, table.iloc[published_rows].reset_index(drop=True), groups[real], schema,
        counterfeit_values=counterfeit_values, deferred=ids[deferred].tolist(), rng=rng,
        model="interval", metadata={"parameters": parameters},
    )
    boxes = group_boxes(codes[published_rows], groups[real])
    counterfeits = release.counterfeit_total()
    objective = float(counterfeits + len(deferred))
    if eligibility != "counterfeit" and len(fresh) and bound is not None:
        # The model prices the first-release path in counterfeits, not deferrals.
        status, bound = "FEASIBLE" if status == "OPTIMAL" else status, None
    certificate = Certificate(
        step=PRINCIPLE, status=status,  # type: ignore[arg-type]
        objective=objective,
        bound=None if bound is None else min(bound, objective),
        heuristic_objective=float(heuristic),
        detail=f"{len(buckets.signatures)} buckets; greedy counterfeits {heuristic}; {detail}; "
               f"split levels {split.levels}",
    )
    return Built(
        release=release, certificate=certificate, published_rows=published_rows,
        counterfeits=counterfeits, deferred=len(deferred),
        mean_perimeter=float(perimeters(schema, boxes, Domain.of(schema, codes)).mean()),
    )


MIDDLE = build_m_distinct
