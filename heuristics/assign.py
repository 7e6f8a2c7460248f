"""Algorithm Assign: new rows into balanced buckets (m-invariance paper, §4.2, Fig. 3).

Xiao & Tao (SIGMOD 2007), Fig. 3. While ``S−`` (the new rows) is not empty, with
``n_1 >= n_2 >= ...`` the counts of its values ``v_1, v_2, ...`` and ``γ = |S−|``, start
from ``β = m`` and take the largest positive integer ``α`` meeting

* (5) ``n_β >= α``,
* (6) ``n_1 - α <= (γ - α·β) / m``,
* (7) ``n_{β+1} <= (γ - α·β) / m``

(``n_{β+1} = 0`` when ``β`` is the number of values); if none exists, grow ``β``. Then
move ``α`` rows of each of ``v_1..v_β`` into the bucket with signature ``{v_1..v_β}``.
(6) and (7) keep the rest m-eligible, so by Lemma 5 every row of an m-eligible ``S−``
ends in a balanced bucket whose signature has at least ``m`` values.

In integers, with ``β > m``, (6) reads ``α <= (γ - m·n_1) / (β - m)`` (for ``β = m`` it
is ``m·n_1 <= γ``, m-eligibility) and (7) reads ``α <= (γ - m·n_{β+1}) / β``.

Ties between equally frequent values are broken by value name, so the result is
deterministic. Only counts go in and out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from republish.errors import InputError, ParameterError
from republish.parameters import validate_m

__all__ = ["AssignResult", "assign_new_rows", "largest_alpha"]


@dataclass(frozen=True)
class AssignResult:
    """The moves of Algorithm Assign.

    Attributes
    ----------
    moves:
        One ``(values, α)`` per iteration: ``α`` rows of each value in ``values`` (most
        frequent first) went to the bucket with that signature.
    buckets:
        Signature -> rows per value it received (summed over iterations).
    """

    moves: tuple[tuple[tuple[str, ...], int], ...]
    buckets: dict[frozenset[str], dict[str, int]]


def largest_alpha(counts: list[int], beta: int, m: int) -> int:
    """Largest ``α >= 1`` meeting Inequalities 5-7 for ``β``, or 0 if none.

    ``counts`` are the value counts in non-increasing order.
    """
    if beta > len(counts):
        return 0
    gamma = sum(counts)
    n_1 = counts[0]
    n_beta = counts[beta - 1]
    n_next = counts[beta] if beta < len(counts) else 0
    alpha = n_beta  # (5)
    if beta == m:
        if m * n_1 > gamma:  # (6) cannot hold for any α
            return 0
    else:
        alpha = min(alpha, (gamma - m * n_1) // (beta - m))  # (6)
    alpha = min(alpha, (gamma - m * n_next) // beta)  # (7)
    return max(alpha, 0)


def eligible_counts(counts: Mapping[str, int], m: int) -> dict[str, int]:
    """The non-zero counts by value (as text), checked non-negative and m-eligible (no
    value above 1/m of the rows: Lemma 5's precondition)."""
    remaining = {str(v): int(c) for v, c in counts.items() if int(c) != 0}
    if any(c < 0 for c in remaining.values()):
        raise InputError("counts must be non-negative.")
    total = sum(remaining.values())
    for value, count in remaining.items():
        if m * count > total:
            raise ParameterError(
                f"the new rows are not {m}-eligible: value {value!r} has {count} of {total} "
                f"rows, more than 1/{m}; make them eligible first (counterfeits or deferrals)."
            )
    return remaining


def assign_new_rows(counts: Mapping[str, int], m: int) -> AssignResult:
    """Run Algorithm Assign (Fig. 3) on the value counts of an m-eligible ``S−``.

    Parameters
    ----------
    counts:
        Rows per sensitive value (counterfeits that made ``S−`` m-eligible included).
    m:
        The m-invariance parameter (at least 2).

    Raises
    ------
    ParameterError
        if ``m < 2`` or the counts are not m-eligible (name the value to fix).
    """
    m = validate_m(m)
    remaining = eligible_counts(counts, m)
    moves: list[tuple[tuple[str, ...], int]] = []
    buckets: dict[frozenset[str], dict[str, int]] = {}
    while remaining:
        order = sorted(remaining, key=lambda v: (-remaining[v], v))
        sizes = [remaining[v] for v in order]
        beta = m
        alpha = largest_alpha(sizes, beta, m)
        while alpha == 0:
            beta += 1
            if beta > len(sizes):
                # Lemma 5 excludes this for m-eligible input; guard against a bug.
                raise RuntimeError(f"Assign found no (alpha, beta) for counts {sizes}, m={m}.")
            alpha = largest_alpha(sizes, beta, m)
        chosen = tuple(order[:beta])
        moves.append((chosen, alpha))
        bucket = buckets.setdefault(frozenset(chosen), dict.fromkeys(sorted(chosen), 0))
        for value in chosen:
            bucket[value] += alpha
            remaining[value] -= alpha
            if remaining[value] == 0:
                del remaining[value]
    return AssignResult(moves=tuple(moves), buckets=buckets)
