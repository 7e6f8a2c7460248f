"""Assign with signature reuse: new rows go to existing buckets before new ones are opened.

A variant of Algorithm Assign (m-invariance paper, §4.2, Fig. 3; :mod:`.assign`). The
paper's Assign always moves ``α`` rows of each of the ``β`` currently most frequent values
into the bucket with signature ``{v_1..v_β}``. When the leftover new rows ``S−`` are
nearly uniform, those ``β`` values change from release to release, so a new signature
(bucket) is opened almost every release while the old buckets only shrink; small buckets
turn every deletion into a deficit that balancing must fill with a new row of the same
value or a counterfeit (benchmarks/RESULTS.md, "synthetic census series").

This policy first tries every signature already in use (``existing``, the buckets of the
division phase and those opened earlier in this run): for a signature ``σ`` with
``s = |σ| >= m`` whose values all still have new rows, the largest ``α`` that keeps the
rest m-eligible is, with ``γ = |S−|``, ``n_in`` the largest count inside ``σ`` and
``n_out`` the largest outside,

* ``α <= min_{v in σ} n_v`` (rows exist),
* ``α <= (γ - m·n_out) / s`` (Inequality 7 of Fig. 3),
* ``α <= (γ - m·n_in) / (s - m)`` when ``s > m`` (Inequality 6; for ``s = m`` it is the
  m-eligibility of ``S−`` itself).

It takes the signature that places the most rows (``α·s``; ties: the larger bucket in
``sizes``, then the earlier in ``existing``) and moves ``α`` rows of each of its values.
When no existing signature admits ``α >= 1`` it makes one move of the paper's Assign, whose
signature then counts as existing. Every move keeps the rest m-eligible, so by Lemma 5 all
of an m-eligible ``S−`` is placed, in balanced buckets of at least ``m`` values; the
result has the shape of :func:`republish.heuristics.assign.assign_new_rows`'s.

Hook (one line, in :func:`republish.solver.m_invariance.build_m_invariant`)::

    place_assignment(work, assign_reusing(assign_counts, m, work.signatures).moves)

in place of ``place_assignment(work, assign_new_rows(assign_counts, m).moves)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from republish.heuristics.assign import AssignResult, eligible_counts, largest_alpha
from republish.parameters import validate_m

__all__ = ["assign_reusing", "reuse_alpha"]


def reuse_alpha(remaining: Mapping[str, int], signature: frozenset[str], m: int) -> int:
    """Largest ``α`` such that moving ``α`` rows of each value of ``signature`` out of
    ``remaining`` (m-eligible counts) leaves the rest m-eligible; 0 when none."""
    size = len(signature)
    if size < m or any(remaining.get(v, 0) <= 0 for v in signature):
        return 0
    gamma = sum(remaining.values())
    inside = [remaining[v] for v in signature]
    n_in = max(inside)
    n_out = max((c for v, c in remaining.items() if v not in signature), default=0)
    alpha = min(inside)
    alpha = min(alpha, (gamma - m * n_out) // size)
    if size > m:
        alpha = min(alpha, (gamma - m * n_in) // (size - m))
    elif m * n_in > gamma:
        return 0
    return max(alpha, 0)


def assign_reusing(
    counts: Mapping[str, int],
    m: int,
    existing: Sequence[frozenset[str]] = (),
    sizes: Mapping[frozenset[str], int] | None = None,
) -> AssignResult:
    """Assign the m-eligible new-row ``counts`` to buckets, reusing ``existing`` signatures.

    Parameters
    ----------
    counts:
        Rows per sensitive value (counterfeits that made ``S−`` m-eligible included).
    m:
        The m-invariance parameter (at least 2).
    existing:
        Signatures of the buckets already present (e.g. ``work.signatures``), in order of
        preference on ties.
    sizes:
        Optional rows per existing bucket; on a tie the larger bucket is preferred.

    Raises
    ------
    ParameterError
        if ``m < 2`` or the counts are not m-eligible.
    """
    m = validate_m(m)
    remaining = eligible_counts(counts, m)
    known: list[frozenset[str]] = []
    for signature in existing:
        signature = frozenset(str(v) for v in signature)
        if len(signature) >= m and signature not in known:
            known.append(signature)
    size_of = {frozenset(str(v) for v in k): int(c) for k, c in (sizes or {}).items()}
    moves: list[tuple[tuple[str, ...], int]] = []
    buckets: dict[frozenset[str], dict[str, int]] = {}
    while remaining:
        best: tuple[int, int, int] | None = None
        chosen_signature: frozenset[str] | None = None
        chosen_alpha = 0
        for rank, signature in enumerate(known):
            alpha = reuse_alpha(remaining, signature, m)
            if alpha <= 0:
                continue
            key = (alpha * len(signature), size_of.get(signature, 0), -rank)
            if best is None or key > best:
                best, chosen_signature, chosen_alpha = key, signature, alpha
        if chosen_signature is None:
            order = sorted(remaining, key=lambda v: (-remaining[v], v))
            sizes_now = [remaining[v] for v in order]
            beta = m
            alpha = largest_alpha(sizes_now, beta, m)
            while alpha == 0:
                beta += 1
                if beta > len(sizes_now):
                    raise RuntimeError(
                        f"Assign found no (alpha, beta) for counts {sizes_now}, m={m}.")
                alpha = largest_alpha(sizes_now, beta, m)
            values = tuple(order[:beta])
            chosen_signature, chosen_alpha = frozenset(values), alpha
            known.append(chosen_signature)
        else:
            values = tuple(sorted(chosen_signature, key=lambda v: (-remaining[v], v)))
        moves.append((values, chosen_alpha))
        bucket = buckets.setdefault(chosen_signature, dict.fromkeys(sorted(values), 0))
        for value in values:
            bucket[value] += chosen_alpha
            remaining[value] -= chosen_alpha
            if remaining[value] == 0:
                del remaining[value]
    return AssignResult(moves=tuple(moves), buckets=buckets)
