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

__all__ = ["WITHIN_SHARE", "same_signatures", "signature_problem"]

#: Share of the budget the bound within the signatures takes after the search with one
#: worker (with two it runs beside the search): at 20,000 Adult rows (m = 3) the pair
#: bound's transportation problems take about 3 s.
WITHIN_SHARE = 0.3


def _value_sets(problem: WholeReleaseProblem, groups: Sequence[np.ndarray]
                ) -> list[frozenset[int]]:
    return [frozenset(problem.values[np.asarray(g, dtype=np.int64)].tolist()) for g in groups]


def same_signatures(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                    other: Sequence[np.ndarray]) -> bool:
    """Whether two groupings of ``problem``'s rows have the same value sets, each as often."""
    return Counter(_value_sets(problem, groups)) == Counter(_value_sets(problem, other))


def signature_problem(problem: WholeReleaseProblem, groups: Sequence[np.ndarray]
                      ) -> WholeReleaseProblem | None:
    """A problem whose releases include every release of ``problem`` (a first release) that
    keeps the value sets of ``groups`` and their counts, without counterfeits or deferrals:
    one bucket per value set; a row whose value lies in one of them only is an old row of
    its bucket (every such release puts it there), the others are new rows, which may join
    any group or form groups of their own. Its row and pair bounds therefore bound (b)
    within the policy. None where ``problem`` has old rows or ``groups`` miss a row, repeat
    a value, or hold fewer than m values."""
    if (problem.bucket >= 0).any():
        return None
    rows = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups]) if groups else \
        np.zeros(0, dtype=np.int64)
    sets = _value_sets(problem, groups)
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
