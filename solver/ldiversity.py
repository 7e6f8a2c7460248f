"""Static l-diversity with minimum suppression: run a method, certify it, publish it.

Methods (l-diversity paper; suppression model of Definition 1):

* ``tp``: TP (§5), the residue set ``R`` published as one QI-group;
* ``tp+``: TP, then Mondrian cuts ``R`` (§6.1);
* ``mondrian``: Mondrian on the whole table (the usual baseline);
* ``exact``: the tuple minimization program (Problem 2, CP-SAT, hinted with TP), ``R``
  published as one QI-group, as TP;
* ``exact-stars``: the star minimization program (Problem 1, CP-SAT), small tables;
* ``matching``: ``l = 2`` with two SA values, min-cost perfect matching (exact stars);
* ``auto``: ``matching`` when it applies; otherwise TP, then the tuple program when TP's
  ``|R|`` is not proven minimal, keeping the smaller residue, then Mondrian on ``R``.

Every method gets the tuple lower bound ``max(l * h(Ṙ), |Ṙ|)`` of TP's phase one (Corollary
5.10), which also bounds stars (a suppressed tuple has at least one star). ``status`` is
``OPTIMAL`` when the method's ``objective`` (``tuples`` or ``stars``) is proven minimal:
by TP ending in phase one (Corollary 5.9) or meeting the bound, by CP-SAT, or by matching;
otherwise ``FEASIBLE``. :func:`publish_l_diverse` renders the partition, numbers the groups
1..G at random, shuffles the rows and verifies l-diversity before anything is returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import ParameterError, VerificationError
from republish.generalization import Domain, Model, generalize, group_boxes, ncp, star_count
from republish.heuristics.mondrian import mondrian
from republish.heuristics.three_phase import (
    check_l_eligible,
    encode_sensitive,
    qi_classes,
    residue_mask,
    three_phase,
)
from republish.heuristics.tp_plus import refine_residue
from republish.models.matching import solve_two_value_matching
from republish.models.star_minimization import MAX_ROWS, solve_star_minimization
from republish.models.tuple_minimization import pair_counts, solve_tuple_minimization
from republish.principles.l_diversity import check_l_diversity
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["METHODS", "LDiversitySolution", "partition_ncp", "publish_l_diverse",
           "solve_l_diversity"]

#: Least seconds a CP-SAT solve gets when the heuristics used up the budget.
MIN_MODEL_SECONDS = 0.05

METHODS = ("tp", "tp+", "mondrian", "exact", "exact-stars", "matching", "auto")


@dataclass(frozen=True)
class LDiversitySolution:
    """A partition of the table's rows into l-eligible QI-groups, with its certificate.

    ``groups[i]`` is the QI-group (0 .. G-1) of row ``i``; ``suppressed_tuples`` counts rows
    with at least one star; ``lower_bound`` bounds the fewest suppressed tuples of any
    l-diverse generalization; ``status`` refers to ``objective`` (``tuples`` or ``stars``).
    """

    method: str
    l: int  # noqa: E741
    groups: np.ndarray
    stars: int
    suppressed_tuples: int
    lower_bound: int
    status: str
    objective: str
    phase: int | None
    time_s: float
    certificate: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The ``ldiv --json`` document (design Contracts), without output paths."""
        return {
            "stars": self.stars,
            "suppressed_tuples": self.suppressed_tuples,
            "lower_bound": self.lower_bound,
            "status": self.status,
            "phase": self.phase,
            "time_s": round(self.time_s, 6),
            "method": self.method,
            "objective": self.objective,
            "l": self.l,
            "groups": int(self.groups.max()) + 1 if len(self.groups) else 0,
            "rows": len(self.groups),
            "certificate": self.certificate,
        }


def _dense(groups: np.ndarray) -> np.ndarray:
    return np.unique(groups, return_inverse=True)[1].astype(np.int64)


def _tuple_status(suppressed: int, bound: int, proof: str | None) -> tuple[str, str | None]:
    if proof is not None:
        return "OPTIMAL", proof
    if suppressed <= bound:
        return "OPTIMAL", "suppressed tuples meet the phase-one lower bound (Corollary 5.10)"
    return "FEASIBLE", None


def solve_l_diversity(
    table: pd.DataFrame,
    schema: Schema,
    l: int,  # noqa: E741
    method: str = "auto",
    *,
    time_limit: float = 10.0,
    num_workers: int = 2,
    seed: int = 0,
) -> LDiversitySolution:
    """Partition a validated table into l-eligible QI-groups with ``method`` (see module).

    ``time_limit`` is the budget of the whole call: the CP-SAT model gets what TP left
    (at least :data:`MIN_MODEL_SECONDS`).
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}.")
    if isinstance(l, bool) or not isinstance(l, int) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    sensitive = table[schema.sensitive].to_numpy()
    check_l_eligible(sensitive, l, name=repr(schema.sensitive))
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    extents = domain.high - domain.low
    value, uniques = encode_sensitive(sensitive)
    if method == "auto" and l == 2 and len(uniques) == 2:
        method = "matching"
    if method == "matching" and l != 2:
        raise ParameterError(f"--method matching needs l = 2 (got l = {l}) and two SA values.")

    tp = three_phase(codes, sensitive, l)
    bound = tp.lower_bound
    certificate: dict[str, Any] = {
        "tp_phase": tp.phase,
        "tp_suppressed_tuples": tp.suppressed_tuples,
        "pillar_bound": tp.pillar_bound,
    }
    phase: int | None = tp.phase
    objective = "tuples"
    proof: str | None = "TP ended in phase one (Corollary 5.9)" if tp.phase == 1 else None
    status: str

    if method in ("tp", "tp+", "exact", "auto"):
        residue_groups = tp.groups
        if method in ("exact", "auto") and not tp.optimal:
            residue_groups, model_proof, model_bound = _tuple_model(
                codes, value, tp.groups, l, _remaining(start, time_limit), num_workers, seed,
                certificate,
            )
            bound = max(bound, model_bound)
            proof = model_proof
        if method in ("tp+", "auto"):
            groups, _, _ = refine_residue(codes, sensitive, residue_groups, l, extents)
        else:
            groups = _dense(np.where(residue_groups < 0, -1, residue_groups))
        if method == "exact":
            phase = None
    elif method == "mondrian":
        groups = mondrian(codes, sensitive, l, extents=extents).groups
        phase, proof = None, None
    elif method == "matching":
        matching = solve_two_value_matching(codes, sensitive)
        groups, objective, phase = matching.groups, "stars", None
        proof = "min-cost perfect bipartite matching (§4)"
        certificate.update(model_status=matching.status, star_bound=matching.bound)
    else:  # exact-stars
        if len(table) > MAX_ROWS:
            raise ParameterError(
                f"--method exact-stars handles at most {MAX_ROWS} rows (got {len(table)}); "
                "use --method auto."
            )
        hint, _, _ = refine_residue(codes, sensitive, tp.groups, l, extents)
        stars_model = solve_star_minimization(
            codes, sensitive, l, hint_groups=hint, time_limit=_remaining(start, time_limit),
            num_workers=num_workers, random_seed=seed,
        )
        groups = stars_model.groups if stars_model.groups is not None else hint
        objective, phase = "stars", None
        proof = "CP-SAT OPTIMAL (star minimization)" if stars_model.status == "OPTIMAL" else None
        certificate.update(model_status=stars_model.status, star_bound=stars_model.bound,
                           model_gap=stars_model.gap, model_time_s=stars_model.wall_time_s)

    boxes = group_boxes(codes, groups)
    starred = (boxes.high > boxes.low).any(axis=1)
    stars = star_count(boxes)
    suppressed = int(boxes.sizes[starred].sum())
    if objective == "tuples":
        status, proof = _tuple_status(suppressed, bound, proof)
    else:
        status = "OPTIMAL" if proof is not None else "FEASIBLE"
    certificate["proof"] = proof
    return LDiversitySolution(
        method=method, l=l, groups=_dense(groups), stars=stars, suppressed_tuples=suppressed,
        lower_bound=bound, status=status, objective=objective, phase=phase,
        time_s=time.perf_counter() - start, certificate=certificate,
    )


def _remaining(start: float, time_limit: float) -> float:
    """Seconds left of ``time_limit`` since ``start`` (at least :data:`MIN_MODEL_SECONDS`)."""
    return max(MIN_MODEL_SECONDS, time_limit - (time.perf_counter() - start))


def partition_ncp(
    table: pd.DataFrame, schema: Schema, groups: np.ndarray, model: Model = "interval"
) -> float:
    """NCP of a partition rendered with ``model``: the mean normalized length of a cell
    (interval: range or ancestor width; suppression: 1 per star, so stars / (n * d))."""
    codes = encode_qis(table, schema)
    boxes = group_boxes(codes, groups)
    domain = Domain.of(schema, codes)
    if model == "suppression":
        total = int(boxes.sizes.sum()) * len(schema.qis)
        return star_count(boxes) / total if total else 0.0
    return ncp(schema, boxes, domain)


def _tuple_model(
    codes: np.ndarray,
    value: np.ndarray,
    tp_groups: np.ndarray,
    l: int,  # noqa: E741
    time_limit: float,
    num_workers: int,
    seed: int,
    certificate: dict[str, Any],
) -> tuple[np.ndarray, str | None, int]:
    """Solve Problem 2 exactly, hinted with TP; the smaller residue wins."""
    group_of_row = qi_classes(codes)
    pair_group, pair_value, pair_count, pair_of_row = pair_counts(group_of_row, value)
    tp_removed = np.bincount(pair_of_row[tp_groups < 0], minlength=len(pair_count))
    solution = solve_tuple_minimization(
        pair_group, pair_value, pair_count, l, hint_removed=tp_removed,
        time_limit=time_limit, num_workers=num_workers, random_seed=seed,
    )
    certificate.update(model_status=solution.status, model_objective=solution.objective,
                       model_bound=solution.bound, model_gap=solution.gap,
                       model_time_s=round(solution.wall_time_s, 6))
    model_bound = int(np.ceil(solution.bound - 1e-6))
    proof = "CP-SAT OPTIMAL (tuple minimization)" if solution.status == "OPTIMAL" else None
    if solution.removed is None or solution.objective is None:
        return tp_groups, None, model_bound
    if solution.objective >= int((tp_groups < 0).sum()):
        # TP's residue is as small; keep it (the proof, if any, covers it too).
        return tp_groups, proof, model_bound
    in_residue = residue_mask(pair_of_row, solution.removed)
    return np.where(in_residue, -1, group_of_row), proof, model_bound


def publish_l_diverse(
    table: pd.DataFrame,
    schema: Schema,
    solution: LDiversitySolution,
    *,
    seed: int = 0,
    model: Model = "suppression",
) -> pd.DataFrame:
    """The published table: ``group`` (1..G, random), rendered QIs, SA; rows shuffled.

    Raises :class:`VerificationError` when the table fails the l-diversity verifier.
    """
    rng = np.random.default_rng(seed)
    groups = solution.groups
    count = int(groups.max()) + 1 if len(groups) else 0
    labels = rng.permutation(count) + 1
    published = generalize(table, labels[groups], schema, model)
    published = published.iloc[rng.permutation(len(published))].reset_index(drop=True)
    report = check_l_diversity(published, schema, solution.l)
    if not report.ok:
        raise VerificationError(f"the computed table is not {solution.l}-diverse: "
                                f"{report.summary()}; nothing was written.")
    return published
