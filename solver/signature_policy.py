"""The ``keep-signatures`` first release: the paper's signatures and their counts, with
every row free to change group among those holding its value.

The m-invariance paper's first release (Xiao & Tao, SIGMOD 2007, §4.2: Assign over a table
of new rows only, then §4.3's split) fixes which signatures exist and how many groups each
has, and puts each row in a bucket by its value alone. The next release inherits only the
signatures and their bucket sizes (§4.1: its division sees which old rows remain in which
bucket, and its deficits come from the persons deleted), so which persons of a value share
a bucket is free: the model's slot trades (:mod:`republish.models.whole_release_slots`)
swap rows of one value between any two groups holding it, across buckets. Holding every
row in its bucket instead (``keep-buckets``) cost 9-13 % more (b) on 1,000 Adult rows and
10 % on 20,000 (m = 3, 10 s; ``benchmarks/RESULTS.md``).

Its certificate bounds (b) against every partition, and beside it within the policy
(:func:`signature_problem`): a relaxation the pair bound
(:mod:`republish.models.whole_release_pair_bound`) reads.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

import numpy as np

from republish.models.whole_release import WholeReleaseProblem

__all__ = ["LOCAL_SIGNATURES", "WITHIN_SHARE", "local_signatures", "same_signatures",
           "signature_problem", "value_sets"]

#: Share of the budget the bound within the signatures takes after the search with one
#: worker (with two it runs beside the search): at 20,000 Adult rows (m = 3) the pair
#: bound's transportation problems take about 3 s.
WITHIN_SHARE = 0.3


def value_sets(problem: WholeReleaseProblem, groups: Sequence[np.ndarray]
               ) -> list[frozenset[int]]:
    """Each group's set of sensitive value codes, in the groups' order."""
    return [frozenset(problem.values[np.asarray(g, dtype=np.int64)].tolist()) for g in groups]


def same_signatures(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                    other: Sequence[np.ndarray]) -> bool:
    """Whether two groupings of ``problem``'s rows have the same value sets, each as often."""
    return Counter(value_sets(problem, groups)) == Counter(value_sets(problem, other))


def signature_problem(problem: WholeReleaseProblem, groups: Sequence[np.ndarray]
                      ) -> WholeReleaseProblem | None:
    """A problem whose releases include every release of ``problem`` (a first release) that
    keeps the value sets of ``groups`` and their counts, without counterfeits or deferrals:
    one bucket per value set; a row whose value lies in one of them only is an old row of
    its bucket (every such release puts it there), the others are new rows, which may join
    any group or form groups of their own. Its row and pair bounds therefore bound (b)
    within the policy. None where ``problem`` has old rows or ``groups`` miss a row, repeat
    a value, or hold fewer than m values."""
    if problem.has_old_rows:
        return None
    rows = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups]) if groups else \
        np.zeros(0, dtype=np.int64)
    sets = value_sets(problem, groups)
    if len(rows) != len(problem.values) or len(np.unique(rows)) != len(rows) or any(
            len(s) != len(g) or len(s) < problem.m for s, g in zip(sets, groups, strict=True)):
        return None
    signatures = sorted(set(sets), key=sorted)
    holders: dict[int, set[int]] = {}
    for index, signature in enumerate(signatures):
        for value in signature:
            holders.setdefault(value, set()).add(index)
    bucket = np.array([next(iter(holders[v])) if len(holders[v]) == 1 else -1
                       for v in problem.values.tolist()], dtype=np.int64)
    return dataclasses.replace(problem, bucket=bucket, signatures=tuple(signatures))


#: ``local-signatures``: the value sets of this many of the compact groups' most frequent
#: ones are offered (beside the paper's, which always fit the values' counts). On the
#: first release of 20,000 Adult rows (m = 3, 10 s) 10 / 30 / 60 offered sets gave 18 /
#: 40 / 68 signatures and (b) 13,088 / 5,926 / 4,139, against 15,502 with the paper's 14
#: and 2,786 for the compact groups' ~400. An offered set is used for LOCAL_MIN_GROUPS
#: groups or none: a small bucket cannot absorb the next releases' deletions (1,000 Adult
#: rows, four releases, m = 3: 24 counterfeits without the floor, against 2 with the
#: paper's signatures).
LOCAL_SIGNATURES, LOCAL_MIN_GROUPS = 30, 30


def local_signatures(problem: WholeReleaseProblem, compact: Sequence[np.ndarray],
                     paper: Sequence[np.ndarray], offered: int = LOCAL_SIGNATURES,
                     seconds: float = 5.0, least: int = LOCAL_MIN_GROUPS
                     ) -> list[np.ndarray] | None:
    """A first release with few signatures chosen by locality: the ``offered`` most frequent
    value sets of the ``compact`` groups (:mod:`republish.heuristics.compact_groups`) and
    the ``paper``'s, each as often as fits the values' counts exactly while staying closest
    (in Σ |count - compact count|, CP-SAT) to how often the compact groups have it, an
    offered set for at least ``least`` groups or none. Its
    groups are the compact groups of those sets, up to their counts, and the slots left
    filled with the rows left in row order (the slot trades then regroup them). None where
    the paper's groups repeat a value or miss a row, or no fit is found in ``seconds``."""
    from ortools.sat.python import cp_model

    if signature_problem(problem, paper) is None:
        return None
    values = problem.values
    compact_sets = value_sets(problem, compact)
    frequency = Counter(s for s in compact_sets if len(s) == problem.m)
    offered_sets = [s for s, _ in frequency.most_common(offered)]
    papers = dict.fromkeys(value_sets(problem, paper))  # in order, each once
    sets = offered_sets + [s for s in papers if s not in offered_sets]
    model = cp_model.CpModel()
    count = [model.new_int_var(0, len(values), f"n_{i}") for i in range(len(sets))]
    for value, rows in Counter(values.tolist()).items():
        model.add(sum(count[i] for i, s in enumerate(sets) if value in s) == rows)
    for i, s in enumerate(sets):  # the paper's counts always fit: no floor on its sets
        if s in papers:
            continue
        chosen = model.new_bool_var(f"chosen_{i}")
        model.add(count[i] >= least).only_enforce_if(chosen)
        model.add(count[i] == 0).only_enforce_if(~chosen)
    deviation = []
    for i, s in enumerate(sets):
        d = model.new_int_var(0, len(values), f"d_{i}")
        model.add_abs_equality(d, count[i] - frequency.get(s, 0))
        deviation.append(d)
    model.minimize(sum(deviation))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    left = {s: solver.value(count[i]) for i, s in enumerate(sets)}
    groups: list[np.ndarray] = []
    placed = np.zeros(len(values), dtype=bool)
    for group, s in zip(compact, compact_sets, strict=True):
        if left.get(s, 0) > 0:
            left[s] -= 1
            groups.append(np.asarray(group, dtype=np.int64))
            placed[group] = True
    spare: dict[int, list[int]] = {}
    for row in np.flatnonzero(~placed).tolist():
        spare.setdefault(int(values[row]), []).append(row)
    for s, missing in left.items():
        for _ in range(missing):
            groups.append(np.array([spare[v].pop() for v in sorted(s)], dtype=np.int64))
    return groups
