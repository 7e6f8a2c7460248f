"""Steps 3 and 5 of one m-Distinct release (Li & Zhou, §V), and the rows they produce.

* step 3: the exact assignment of records to buckets (:func:`_exact_assignment`), CP-SAT
  on record classes (:mod:`republish.models.m_distinct_assignment`) hinted with Phase 2,
  records following the chosen counts through a min-cost flow;
* step 5: the first-release path for new records without a suitable bucket
  (:func:`_fresh_path`): m-eligibility, then Algorithm Assign of the m-invariance paper.

Both add the rows of the release being built to a :class:`_Rows`. The whole step is
:func:`republish.solver.m_distinct.publish_m_distinct`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.heuristics.assign import assign_new_rows
from republish.heuristics.m_distinct import FRESH, BucketTable
from republish.models.m_distinct_assignment import (
    AssignmentCounts,
    RecordClass,
    distribute_records,
    solve_assignment_counts,
)
from republish.parameters import Eligibility as EligibilityMethod
from republish.schema import Schema
from republish.solver.eligibility import make_eligible


class _Rows:
    """Rows of the release being built: record (-1 counterfeit), value code, entry, bucket."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.disjoint: list[bool] = []

    def add_bucket(self, disjoint: bool) -> int:
        self.disjoint.append(disjoint)
        return len(self.disjoint) - 1

    def add(self, records: np.ndarray, value: int, entry: int, bucket: int) -> None:
        k = len(records)
        self.parts.append((np.asarray(records, dtype=np.int64), np.full(k, value),
                           np.full(k, entry), np.full(k, bucket)))

    def arrays(self) -> tuple[np.ndarray, ...]:
        if not self.parts:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
        return tuple(np.concatenate([p[i] for p in self.parts]).astype(np.int64)
                     for i in range(4))


def _exact_assignment(
    buckets: BucketTable, options: list[np.ndarray], greedy: np.ndarray, values: np.ndarray,
    labels: np.ndarray, is_new: np.ndarray, points: np.ndarray, domain: list[str], m: int,
    time_limit: float, num_workers: int, seed: int,
) -> tuple[np.ndarray, AssignmentCounts]:
    """Step 3: the CP-SAT model on record classes; returns the chosen bucket per record."""
    keys = [(int(v), tuple(o.tolist()) + ((FRESH,) if new else ()), str(label))
            for v, o, new, label in zip(values.tolist(), options, is_new.tolist(),
                                        labels.tolist(), strict=True)]
    index: dict[tuple[int, tuple[int, ...], str], int] = {}
    class_of = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    sizes = np.bincount(class_of, minlength=len(index))
    classes = [RecordClass(domain[v], opts, int(sizes[c]), label)
               for (v, opts, label), c in index.items()]
    hint: dict[tuple[int, int], int] = {}
    for c, b in zip(class_of.tolist(), greedy.tolist(), strict=True):
        hint[c, b] = hint.get((c, b), 0) + 1
    fallback = points.mean(axis=0)
    anchors = {o: points[greedy == o].mean(axis=0) if (greedy == o).any() else fallback
               for o in sorted({o for c in classes for o in c.options})}

    def cost(rows: np.ndarray, chosen: Sequence[int]) -> np.ndarray:
        centers = np.array([anchors[o] for o in chosen])
        return np.abs(points[rows][:, None, :] - centers[None, :, :]).sum(axis=2)

    costs = {}
    for c, cls in enumerate(classes):
        if len(cls.options) > 1:
            spread = cost(np.flatnonzero(class_of == c), cls.options).mean(axis=0)
            costs.update({(c, o): int(round(1000 * d)) for o, d in zip(cls.options, spread,
                                                                        strict=True)})
    solution = solve_assignment_counts(
        classes, buckets.signatures, m, hint=hint, costs=costs, time_limit=time_limit,
        num_workers=num_workers, random_seed=seed,
    )
    if not solution.found:
        return greedy, solution
    return distribute_records(class_of, solution.counts, cost), solution


def _fresh_path(
    table: pd.DataFrame, schema: Schema, rows: np.ndarray, m: int, method: EligibilityMethod,
    labels: np.ndarray, label_value: dict[str, str], code: dict[str, int],
    label_order: list[str], out: _Rows, time_limit: float, use_model: bool = True,
) -> tuple[np.ndarray, int]:
    """Step 5 on the new records ``rows``; returns the deferred rows and counterfeits."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64), 0
    frame = table.iloc[rows].copy()
    frame[schema.sensitive] = labels[rows]
    present = set(labels[rows].tolist())
    solution, applied = make_eligible(
        frame, schema, m, method, time_limit=time_limit, seed=None, allow_new_values=True,
        use_model=use_model,
        new_values=[lab for lab in label_order if lab not in present], num_workers=1,
    )
    deferred = np.sort(applied.deferred.index.to_numpy(dtype=np.int64))
    kept = rows[~np.isin(rows, deferred)]
    pool = {lab: kept[labels[kept] == lab] for lab in present}
    counts = {lab: len(r) for lab, r in pool.items() if len(r)}
    for lab, extra in solution.counterfeits.items():
        counts[lab] = counts.get(lab, 0) + extra
    bucket_of: dict[frozenset[str], int] = {}
    for chosen, alpha in assign_new_rows(counts, m).moves:
        signature = frozenset(chosen)
        if signature not in bucket_of:
            bucket_of[signature] = out.add_bucket(disjoint=True)
        entry_of = {lab: e for e, lab in enumerate(sorted(signature))}
        for lab in chosen:
            taken, pool[lab] = pool.get(lab, kept[:0])[:alpha], pool.get(lab, kept[:0])[alpha:]
            for value in sorted(set(table[schema.sensitive].to_numpy()[taken].tolist())):
                mine = taken[table[schema.sensitive].to_numpy()[taken] == value]
                out.add(mine, code[value], entry_of[lab], bucket_of[signature])
            if alpha > len(taken):
                out.add(np.full(alpha - len(taken), -1), code[label_value[lab]], entry_of[lab],
                        bucket_of[signature])
    return deferred, solution.total_counterfeits
