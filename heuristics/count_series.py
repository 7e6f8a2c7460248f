"""Counterfeits and deferrals of an m-invariant series, simulated on counts.

The m-eligibility paper (Tobar Nicolau et al., IEEE TIFS 2024, §III, first paragraphs, and
§IV-C, Fig. 7) reduces every release after the first to two steps: rebuild the buckets of
the rows published before and fill their deficits with new rows, else counterfeits (a
deterministic count), then make the new rows left over m-eligible and publish them as a
first release. Only the second step differs between the methods it compares, so the
number of counterfeits of a whole series depends on the rows' sensitive values and
signatures, never on their QIs. This module runs that series on counts, with the
project's phases (m-invariance paper §4.1-4.2 and Fig. 3):

1. division (:func:`republish.heuristics.division.divide_by_signature`);
2. balancing (:func:`republish.heuristics.balancing.balance_buckets`);
3. eligibility: an :class:`EligibilityPolicy` -- the paper's algorithms (:class:`CountPolicy`),
   the τ-safety random baseline (:mod:`republish.heuristics.tau_safety_dynamic`) or the
   Cach partial publication (:mod:`republish.heuristics.cach`);
4. assignment (:func:`republish.heuristics.assign.assign_new_rows`), a value's real rows
   first and its counterfeits last, as the pipeline places them;
5. a bucket holding ``q`` counterfeits of every value of its signature drops them (the
   pipeline's rule that every group keeps a real row).

The split into groups (§4.3) changes no count and is not simulated. Deferred rows stay
unpublished and come back as new rows while they are in the table.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.heuristics.assign import assign_new_rows
from republish.heuristics.balancing import balance_buckets
from republish.heuristics.division import divide_by_signature
from republish.parameters import validate_m
from republish.problems.eligibility import EligibilitySolution

__all__ = ["CountPolicy", "CountSeries", "CountStep", "EligibilityDecision",
           "EligibilityPolicy", "run_count_series"]


@dataclass(frozen=True)
class EligibilityDecision:
    """What a policy does with the new rows left after balancing: ``published`` ids go to
    the assignment, ``deferred`` ids are held back, ``counterfeits[v]`` fakes of value
    ``v`` join them."""

    published: tuple[Hashable, ...]
    deferred: tuple[Hashable, ...]
    counterfeits: Mapping[str, int]


class EligibilityPolicy(Protocol):
    """Makes the leftover new rows m-eligible; may keep state across releases."""

    name: str

    def decide(self, leftover: Mapping[str, list[Hashable]], m: int, domain: Sequence[str],
               rng: np.random.Generator) -> EligibilityDecision: ...


def split_solution(solution: EligibilitySolution, leftover: Mapping[str, list[Hashable]],
                   rng: np.random.Generator) -> EligibilityDecision:
    """A count solution applied to ids: each value's deletions are a uniform random sample
    of its rows (the paper's §III-D suggestion)."""
    published: list[Hashable] = []
    deferred: list[Hashable] = []
    for value in sorted(leftover):
        ids = list(leftover[value])
        number = int(solution.deletions.get(value, 0))
        if number:
            chosen = set(rng.choice(len(ids), size=number, replace=False).tolist())
            deferred.extend(i for k, i in enumerate(ids) if k in chosen)
            ids = [i for k, i in enumerate(ids) if k not in chosen]
        published.extend(ids)
    counterfeits = {v: int(c) for v, c in solution.counterfeits.items() if c}
    return EligibilityDecision(tuple(published), tuple(deferred), counterfeits)


class CountRule(Protocol):
    def __call__(self, counts: dict[str, int], m: int, domain: Sequence[str],
                 rng: np.random.Generator) -> EligibilitySolution: ...


@dataclass(frozen=True)
class CountPolicy:
    """A stateless policy from a rule on counts (Algorithm 1, 2, 3 or a baseline)."""

    name: str
    rule: CountRule

    def decide(self, leftover: Mapping[str, list[Hashable]], m: int, domain: Sequence[str],
               rng: np.random.Generator) -> EligibilityDecision:
        counts = {v: len(ids) for v, ids in leftover.items() if ids}
        if not counts:
            return EligibilityDecision((), (), {})
        solution = self.rule(counts, m, domain, rng)
        if not solution.is_eligible():
            raise ParameterError(f"policy {self.name!r} did not reach {m}-eligibility "
                                 f"(status {solution.status}).")
        return split_solution(solution, leftover, rng)


@dataclass(frozen=True)
class CountStep:
    """One release: ``balancing_counterfeits`` + ``eligibility_counterfeits`` -
    ``dropped_counterfeits`` = :attr:`counterfeits`; ``deferred`` rows held back."""

    release: int
    rows: int
    new: int
    balancing_counterfeits: int
    eligibility_counterfeits: int
    dropped_counterfeits: int
    deferred: int

    @property
    def counterfeits(self) -> int:
        return self.balancing_counterfeits + self.eligibility_counterfeits \
            - self.dropped_counterfeits

    @property
    def modifications(self) -> int:
        return self.counterfeits + self.deferred


@dataclass(frozen=True)
class CountSeries:
    policy: str
    m: int
    steps: tuple[CountStep, ...]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**step.__dict__, "counterfeits": step.counterfeits,
                              "modifications": step.modifications,
                              "policy": self.policy, "m": self.m} for step in self.steps])


def _domain(values: np.ndarray, seen: set[str]) -> list[str]:
    counts = pd.Series(values).value_counts()
    ordered = sorted(counts.index.astype(str), key=lambda v: (-int(counts[v]), v))
    return ordered + sorted(seen - set(ordered))


def run_count_series(releases: Sequence[pd.Series], m: int, policy: EligibilityPolicy,
                     seed: int = 0) -> CountSeries:
    """Run the series ``releases`` (one Series per release: index the identifiers, values
    the sensitive values) with ``policy`` as the eligibility step.

    Raises
    ------
    ParameterError
        on a bad ``m`` or fewer than ``m`` known sensitive values.
    InputError
        when a release repeats an identifier.
    """
    m = validate_m(m)
    rng = np.random.default_rng(seed)
    signature_of: dict[Hashable, int] = {}
    signatures: list[frozenset[str]] = []
    index_of: dict[frozenset[str], int] = {}
    seen: set[str] = set()
    steps: list[CountStep] = []

    def code(signature: frozenset[str]) -> int:
        if signature not in index_of:
            index_of[signature] = len(signatures)
            signatures.append(signature)
        return index_of[signature]

    for number, series in enumerate(releases, start=1):
        if series.index.has_duplicates:
            raise InputError(f"release {number} repeats identifiers.")
        ids = series.index.to_numpy(dtype=object)
        values = series.astype(str).to_numpy(dtype=object)
        seen |= set(values.tolist())
        domain = _domain(values, seen)
        if len(domain) < m:
            raise ParameterError(f"m={m} but only {len(domain)} sensitive values are known.")
        known = np.array([i in signature_of for i in ids.tolist()], dtype=bool)
        division = divide_by_signature([signature_of[i] for i in ids[known].tolist()],
                                       signatures, values[known])
        order = rng.permutation(int((~known).sum()))
        new_ids, new_values = ids[~known][order], values[~known][order]
        pool: dict[str, list[Hashable]] = {}
        for i, v in zip(new_ids.tolist(), new_values.tolist(), strict=True):
            pool.setdefault(v, []).append(i)
        balancing = balance_buckets(division.counts, {v: len(r) for v, r in pool.items()})
        fakes: dict[frozenset[str], dict[str, int]] = {}
        for signature, taken, faked in zip(division.signatures, balancing.from_new,
                                           balancing.counterfeits, strict=True):
            for value, k in taken.items():
                for i in pool[value][:k]:
                    signature_of[i] = code(signature)
                pool[value] = pool[value][k:]
            if faked:
                fakes[signature] = dict(faked)
        decision = policy.decide({v: r for v, r in pool.items() if r}, m, domain, rng)
        chosen: dict[str, list[Hashable]] = {}
        published = set(decision.published)
        for value, rows in pool.items():
            chosen[value] = [i for i in rows if i in published]
        counts = {v: len(r) for v, r in chosen.items() if r}
        for value, k in decision.counterfeits.items():
            counts[value] = counts.get(value, 0) + int(k)
        moves = assign_new_rows(counts, m).moves if counts else ()
        for values_of_move, alpha in moves:
            signature = frozenset(values_of_move)
            for value in values_of_move:
                rows = chosen.get(value, [])
                real = min(alpha, len(rows))
                for i in rows[:real]:
                    signature_of[i] = code(signature)
                chosen[value] = rows[real:]
                if alpha > real:
                    bucket = fakes.setdefault(signature, {})
                    bucket[value] = bucket.get(value, 0) + alpha - real
        dropped = 0
        for signature, bucket in fakes.items():
            q = min(bucket.get(v, 0) for v in signature)
            dropped += q * len(signature)
        steps.append(CountStep(
            release=number, rows=len(ids), new=int((~known).sum()),
            balancing_counterfeits=balancing.total_counterfeits,
            eligibility_counterfeits=int(sum(decision.counterfeits.values())),
            dropped_counterfeits=dropped, deferred=len(decision.deferred)))
    return CountSeries(policy.name, m, tuple(steps))
