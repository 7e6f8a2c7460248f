"""m-eligibility: the shared result type and the checks every method uses.

A table is *m-eligible* when no sensitive value occurs in more than ``|T|/m`` of its rows
(Definition 3 of Tobar Nicolau et al., "m-Eligibility with minimum counterfeits and
deletions", IEEE TIFS 2024). It can be split into m-unique groups if and only if it is
m-eligible (Proposition 1), so every release step enforces it on its new rows, with
counterfeits (a superset), deletions/deferrals (a subset) or both (the hybrid problem).

The exact model (:mod:`republish.models.eligibility`) and the paper's algorithms
(:mod:`republish.heuristics.eligibility`) both return an :class:`EligibilitySolution`;
the type lives in the core so that neither depends on the other.

Counts are ``{sensitive value: number of rows}``. A value listed with count 0 is *not*
present in the table: counterfeits may use it only when new values are allowed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError

#: Status of a solution: proven optimal; feasible without proof; from a heuristic without
#: certificate; no m-eligible table satisfies the constraints (or a heuristic gave up);
#: the exact solver hit its time limit before finding any solution; the solver failed.
STATUSES = ("OPTIMAL", "FEASIBLE", "HEURISTIC", "INFEASIBLE", "TIMEOUT", "ERROR")

#: Prefix of the names generated for new sensitive values taken by counterfeits.
NEW_VALUE_PREFIX = "counterfeit-value-"


@dataclass(frozen=True)
class EligibilitySolution:
    """Target value counts that make a table m-eligible, and how to reach them.

    Attributes
    ----------
    method:
        Which method produced it (``counterfeit``, ``delete``, ``hybrid``,
        ``hybrid-greedy``, ``random``, ``algorithm-1``, ``algorithm-2``...).
    m:
        The eligibility parameter.
    original_counts:
        Rows per sensitive value before the change.
    target_counts:
        Rows per sensitive value after the change (every original value, zero if all its
        rows are deleted, plus any new value taken by counterfeits).
    counterfeits:
        Value -> counterfeit rows added (only values with at least one).
    deletions:
        Value -> rows removed, i.e. deferred to a later release (only values with at
        least one).
    objective:
        ``counterfeit_cost * sum(counterfeits) + deletion_cost * sum(deletions)``;
        ``inf`` when no solution is known.
    status:
        One of :data:`STATUSES`.
    solve_time_s:
        Wall time of the method (model building included), in seconds.
    bound:
        Best proven lower bound of the objective (``None`` when nothing is proven).
    """

    method: str
    m: int
    original_counts: dict[str, int]
    target_counts: dict[str, int]
    counterfeits: dict[str, int]
    deletions: dict[str, int]
    objective: float
    status: str
    #: Not compared: equal solutions found at different speeds are equal.
    solve_time_s: float = field(compare=False)
    bound: float | None = None

    @property
    def wall_time_s(self) -> float:
        """:attr:`solve_time_s` under the name every result type uses (the JSON key of
        ``eligibility --json`` stays ``solve_time_s``)."""
        return self.solve_time_s

    @property
    def certificate(self) -> Certificate:
        """Status, objective, bound and time as a :class:`~republish.certificate.Certificate`."""
        status = self.status if self.status in STATUSES else "ERROR"
        return Certificate(step=f"eligibility ({self.method})",
                           status=status,  # type: ignore[arg-type]
                           objective=self.objective,
                           bound=None if self.bound is None else min(self.bound, self.objective),
                           times={"solve": self.solve_time_s})

    @property
    def total_counterfeits(self) -> int:
        return sum(self.counterfeits.values())

    @property
    def total_deletions(self) -> int:
        return sum(self.deletions.values())

    @property
    def modifications(self) -> int:
        """Counterfeits plus deletions (the paper's distance ``d(T, T')``, Definition 7)."""
        return self.total_counterfeits + self.total_deletions

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (0 when proven optimal)."""
        if self.bound is None or not math.isfinite(self.objective):
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.bound) / abs(self.objective))

    def is_eligible(self) -> bool:
        """Whether :attr:`target_counts` is m-eligible."""
        return is_m_eligible(self.target_counts, self.m)

    def to_dict(self) -> dict[str, Any]:
        """The ``republish eligibility --json`` object of this solution.

        ``counterfeits`` and ``deletions`` are totals; the per-value numbers are in
        ``counterfeits_by_value`` and ``deletions_by_value``. A non-finite objective
        becomes ``null``.
        """
        return {
            "method": self.method,
            "objective": self.objective if math.isfinite(self.objective) else None,
            "counterfeits": self.total_counterfeits,
            "deletions": self.total_deletions,
            "target_counts": dict(self.target_counts),
            "status": self.status,
            "m": self.m,
            "original_counts": dict(self.original_counts),
            "counterfeits_by_value": dict(self.counterfeits),
            "deletions_by_value": dict(self.deletions),
            "bound": self.bound,
            "solve_time_s": self.solve_time_s,
        }


def is_m_eligible(counts: Mapping[str, int], m: int) -> bool:
    """No value in more than ``|T|/m`` rows, checked in integers (``m * c <= n``)."""
    total = sum(counts.values())
    return all(m * count <= total for count in counts.values())




def validate_counts(counts: Mapping[Any, object]) -> dict[str, int]:
    """Counts as ``{str: int}``; negative, non-integer or duplicate keys are rejected."""
    if not isinstance(counts, Mapping):
        raise InputError(f"counts must be a mapping value -> number of rows, got {type(counts)}.")
    cleaned: dict[str, int] = {}
    for key, count in counts.items():
        name = str(key)
        if name in cleaned:
            raise InputError(f"sensitive value {name!r} is listed twice in the counts.")
        if isinstance(count, bool):
            raise InputError(f"count of {name!r} must be a non-negative integer, got {count!r}.")
        if isinstance(count, numbers.Integral):
            number = int(count)
        elif isinstance(count, numbers.Real) and float(count).is_integer():
            number = int(float(count))
        else:
            raise InputError(
                f"count of {name!r} must be a non-negative integer, got {count!r}."
            )
        if number < 0:
            raise InputError(f"count of {name!r} is negative ({number}); counts are row numbers.")
        cleaned[name] = number
    return cleaned


def validate_costs(counterfeit_cost: float, deletion_cost: float) -> tuple[float, float]:
    """Both per-unit costs must be positive and finite."""
    checked: list[float] = []
    for name, cost in (("counterfeit_cost", counterfeit_cost), ("deletion_cost", deletion_cost)):
        if isinstance(cost, bool) or not isinstance(cost, numbers.Real):
            raise ParameterError(f"{name} must be a positive number, got {cost!r}.")
        if not math.isfinite(float(cost)) or float(cost) <= 0:
            raise ParameterError(f"{name} must be positive and finite, got {cost!r}.")
        checked.append(float(cost))
    return checked[0], checked[1]


def present_values(counts: Mapping[str, int]) -> list[str]:
    """Values with at least one row, in the mapping's order."""
    return [value for value, count in counts.items() if count > 0]


def too_few_values_message(m: int, distinct: int) -> str:
    """Why no m-eligible superset exists with the values present, and the fix."""
    return (
        f"m={m} exceeds the {distinct} distinct sensitive value(s) present: no non-empty "
        f"table with only these values is {m}-eligible. Lower m to at most {distinct}, or "
        "let counterfeits take new sensitive values (allow_new_values=True, CLI "
        "--allow-new-values)."
    )


def new_value_names(
    counts: Mapping[str, int], new_values: Sequence[str], needed: int
) -> list[str]:
    """``needed`` names for new sensitive values.

    Values listed in ``counts`` with zero rows come first, then ``new_values`` in order,
    then generated names ``counterfeit-value-1``, ``counterfeit-value-2``, ... that
    collide with nothing.
    """
    names: list[str] = []
    taken = {value for value, count in counts.items() if count > 0}
    candidates = [v for v, c in counts.items() if c == 0] + [str(v) for v in new_values]
    for value in candidates:
        if len(names) == needed:
            return names
        if value not in taken:
            names.append(value)
            taken.add(value)
    index = 1
    while len(names) < needed:
        name = f"{NEW_VALUE_PREFIX}{index}"
        if name not in taken:
            names.append(name)
            taken.add(name)
        index += 1
    return names


def available_counterfeit_values(
    counts: Mapping[str, int], m: int, allow_new_values: bool, new_values: Sequence[str]
) -> list[str] | None:
    """Values counterfeits may take, or ``None`` when fewer than ``m`` are available.

    The values present, in the mapping's order; when fewer than ``m`` are present and
    ``allow_new_values`` is set, ``m - l`` new ones follow (:func:`new_value_names`).
    More new values never lower the number of counterfeits needed (the water-filling
    argument of Proposition 3), so no more are offered.
    """
    values = present_values(counts)
    if len(values) < m:
        if not allow_new_values:
            return None
        values += new_value_names(counts, new_values, m - len(values))
    return values


def solution_from_targets(
    method: str,
    m: int,
    original: Mapping[str, int],
    targets: Mapping[str, int],
    *,
    status: str,
    solve_time_s: float,
    counterfeit_cost: float = 1.0,
    deletion_cost: float = 1.0,
    bound: float | None = None,
) -> EligibilitySolution:
    """Build a solution from target counts: changes and objective follow from them."""
    target_counts = {value: int(targets.get(value, 0)) for value in original}
    target_counts.update({value: int(c) for value, c in targets.items() if value not in original})
    counterfeits: dict[str, int] = {}
    deletions: dict[str, int] = {}
    for value, target in target_counts.items():
        before = original.get(value, 0)
        if target > before:
            counterfeits[value] = target - before
        elif target < before:
            deletions[value] = before - target
    objective = counterfeit_cost * sum(counterfeits.values()) + deletion_cost * sum(
        deletions.values()
    )
    return EligibilitySolution(
        method=method,
        m=m,
        original_counts=dict(original),
        target_counts=target_counts,
        counterfeits=counterfeits,
        deletions=deletions,
        objective=float(objective),
        status=status,
        solve_time_s=float(solve_time_s),
        bound=bound,
    )
