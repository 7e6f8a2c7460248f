"""Which sensitive values the eligibility counterfeits take: the frequent ones.

Making the new rows left over after balancing m-eligible with the fewest counterfeits
(m-eligibility paper, Proposition 3) fixes *how many* counterfeits are needed, not which
values they take: any placement keeps every value at most ``N / m`` rows (``N`` the
leftover with its counterfeits) and at most the number of real rows (every group keeps a
real row). Algorithm 1 water-fills the *least* frequent values; the bucket-assignment
model returns an arbitrary optimum.

The choice matters for the releases that follow (m-invariance paper, §4): a counterfeit
puts its value into the signature of a new bucket, and every later release must fill that
value in the bucket again, with a new row of the value or with another counterfeit. New
rows of a rare value hardly ever come, so a rare value's counterfeits are paid again in
every release; a frequent value's are soon replaced by real rows. Measured on Adult
(occupation, m = 7, counterfeits only, six releases): counterfeits on the rarest values
(``Armed-Forces``, ``Priv-house-serv``) gave 1,407 counterfeits over the series, against
469 when they went to the most frequent values (``benchmarks/RESULTS.md``).

:func:`prefer_frequent_values` moves a count solution's eligibility counterfeits onto the
values that come first in a preference order (the pipeline's: most frequent in ``T(n)``
first), keeping their number, so the objective and its certificate are unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from republish.models.bucket_assignment import BucketAssignment
from republish.problems.eligibility import EligibilitySolution

__all__ = ["prefer_frequent_solution", "prefer_frequent_values"]


def prefer_frequent_values(
    assignment: BucketAssignment, order: Sequence[str], m: int, new_values: Collection[str]
) -> BucketAssignment:
    """``assignment`` with its eligibility counterfeits on the earliest values of
    ``order`` that can take them (each value at most ``min(N // m, real rows)`` in the
    published leftover; values absent from it only when in ``new_values``). Returned
    unchanged when it has no eligibility counterfeits or they cannot all be placed."""
    published = {v: assignment.leftover.get(v, 0) - assignment.deferrals.get(v, 0)
                 for v in set(assignment.leftover) | set(order)}
    placed = _placement(published, sum(assignment.eligibility_counterfeits.values()), order,
                        m, new_values)
    if placed is None:
        return assignment
    return dataclasses.replace(assignment, eligibility_counterfeits=placed)


def prefer_frequent_solution(
    solution: EligibilitySolution, order: Sequence[str], new_values: Collection[str]
) -> EligibilitySolution:
    """:func:`prefer_frequent_values` for an :class:`EligibilitySolution` (the heuristic
    pipeline's Algorithm 1 or 3): the same number of counterfeits, on the earliest values
    of ``order`` that can take them; the target counts follow."""
    published = {v: c - solution.deletions.get(v, 0)
                 for v, c in solution.original_counts.items()}
    placed = _placement(published, solution.total_counterfeits, order, solution.m, new_values)
    if placed is None:
        return solution
    targets = {v: published.get(v, 0) + placed.get(v, 0) for v in set(published) | set(placed)}
    return dataclasses.replace(solution, counterfeits=placed, target_counts=targets)


def _placement(published: dict[str, int], counterfeits: int, order: Sequence[str], m: int,
               new_values: Collection[str]) -> dict[str, int] | None:
    """Counterfeits per value, the earliest values of ``order`` first; None when there is
    nothing to move or they cannot all be placed."""
    if counterfeits == 0 or not order:
        return None
    reals = sum(published.values())
    cap = min((reals + counterfeits) // m, reals)
    allowed = set(new_values)
    candidates = [v for v in dict.fromkeys([*order, *sorted(published)])
                  if published.get(v, 0) > 0 or v in allowed]
    placed: dict[str, int] = {}
    left = counterfeits
    for value in candidates:
        room = cap - published.get(value, 0)
        if room > 0 and left > 0:
            placed[value] = min(room, left)
            left -= placed[value]
    return None if left else placed
