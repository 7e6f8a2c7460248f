"""The whole-release problem and its solution (:mod:`republish.models.whole_release`):
the input of one m-invariant release step (m-invariance paper, §4.1-4.3), validated at the
entry, the answer with both objectives' statuses and bounds, and the rules of a valid
release (:func:`release_problems`), which every answer is checked against."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from republish.errors import ParameterError

__all__ = ["WholeReleaseProblem", "WholeReleaseSolution", "as_matrix", "group_signature",
           "new_group_without_counterfeits", "release_problems"]


def _error(owner: str, name: str, expected: str, got: object) -> ParameterError:
    return ParameterError(f"The '{name}' parameter of {owner} must be {expected}. "
                          f"Got {got} instead.")


def _int_array(name: str, data: Any, n: int | None) -> np.ndarray:
    array = np.asarray(data)
    if array.ndim != 1 or (n is not None and len(array) != n) or (
            array.size and array.dtype.kind not in "iu"):
        raise _error("WholeReleaseProblem", name, f"a 1-d int array of length n={n}",
                     f"dtype {array.dtype}, shape {array.shape}")
    return array.astype(np.int64)


@dataclass(frozen=True, eq=False)
class WholeReleaseProblem:
    """One release step: ``points`` (n, d) normalized QIs, ``values`` SA codes in
    ``[0, domain_size)``, ``bucket`` (``-1`` = new row, else an index into ``signatures``).
    ``padding_order`` is completed with the codes it omits, in code order."""

    points: np.ndarray
    values: np.ndarray
    bucket: np.ndarray
    signatures: tuple[frozenset[int], ...]
    m: int
    domain_size: int
    allow_deferrals: bool = False
    deferral_weight: float = 1.0
    counterfeits_in_new_groups: bool = True
    padding_order: tuple[int, ...] = ()
    #: A pricing problem's exact extent per QI of boxes ``low..high`` in ``points`` (shape
    #: ``(..., d)``), at least their widths and monotone under inclusion: column enumeration
    #: prunes by it (None: the widths, the box extent).
    box_lengths: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = field(
        default=None, repr=False)

    @property
    def has_old_rows(self) -> bool:
        """Whether any row is in a bucket: a later release (a first release has none)."""
        return bool((self.bucket >= 0).any())

    def __post_init__(self) -> None:
        owner = "WholeReleaseProblem"
        for name in ("m", "domain_size"):
            value = getattr(self, name)
            low = 1 if name == "m" else self.m
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise _error(owner, name, f"an int in the range [{low}, inf)", repr(value))
        points = np.asarray(self.points, dtype=np.float64)
        if points.ndim != 2 or not np.isfinite(points).all():
            raise _error(owner, "points", "a finite float array of shape (n, d)",
                         f"shape {points.shape}")
        n = len(points)
        values = _int_array("values", self.values, n)
        bucket = _int_array("bucket", self.bucket, n)
        if len(values) and (values.min() < 0 or values.max() >= self.domain_size):
            raise _error(owner, "values", f"codes in [0, domain_size={self.domain_size})",
                         f"range [{values.min()}, {values.max()}]")
        try:
            signatures = tuple(frozenset(int(v) for v in s) for s in self.signatures)
        except (TypeError, ValueError) as exc:
            raise _error(owner, "signatures", "a tuple of sets of int codes",
                         repr(self.signatures)) from exc
        for b, sigma in enumerate(signatures):
            if len(sigma) < self.m or min(sigma) < 0 or max(sigma) >= self.domain_size:
                raise _error(owner, "signatures", f"sets of >= m={self.m} codes in "
                             f"[0, {self.domain_size})", f"{sorted(sigma)} at index {b}")
        if len(bucket) and (bucket.min() < -1 or bucket.max() >= len(signatures)):
            raise _error(owner, "bucket", f"-1 or an index in [0, {len(signatures)})",
                         f"range [{bucket.min()}, {bucket.max()}]")
        stray = [i for i in np.flatnonzero(bucket >= 0).tolist()
                 if int(values[i]) not in signatures[bucket[i]]]
        if stray:
            raise _error(owner, "values", "in the signature of the row's bucket for old rows",
                         f"row {stray[0]} with value {values[stray[0]]} in bucket "
                         f"{bucket[stray[0]]} of signature {sorted(signatures[bucket[stray[0]]])}")
        for name in ("allow_deferrals", "counterfeits_in_new_groups"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise _error(owner, name, "a bool", repr(getattr(self, name)))
        w = self.deferral_weight
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 <= w < math.inf:
            raise _error(owner, "deferral_weight", "a float in the range [0, inf)", repr(w))
        order = [int(v) for v in self.padding_order]
        if len(set(order)) != len(order) or any(not 0 <= v < self.domain_size for v in order):
            raise _error(owner, "padding_order", f"distinct codes in [0, {self.domain_size})",
                         repr(self.padding_order))
        order += [v for v in range(self.domain_size) if v not in set(order)]
        for name, array in (("points", points), ("values", values), ("bucket", bucket)):
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        object.__setattr__(self, "signatures", signatures)
        object.__setattr__(self, "padding_order", tuple(order))
        object.__setattr__(self, "m", int(self.m))
        object.__setattr__(self, "domain_size", int(self.domain_size))
        object.__setattr__(self, "deferral_weight", float(w))


@dataclass(frozen=True, eq=False)
class WholeReleaseSolution:
    """A release: groups (row indices), their signatures and counterfeit values, the
    deferred rows; per objective a status (OPTIMAL only when proven), the objective, a
    proven lower bound and the gap ``(objective - bound) / max(|objective|, 1)``."""

    groups: tuple[np.ndarray, ...]
    group_signatures: tuple[frozenset[int], ...]
    counterfeits_per_group: tuple[frozenset[int], ...]
    deferred: np.ndarray
    status_a: str
    objective_a: float
    bound_a: float
    gap_a: float | None
    status_b: str
    objective_b: float
    bound_b: float
    gap_b: float | None
    wall_time_s: float
    columns: int
    detail: str = ""

    @property
    def counterfeits(self) -> int:
        return sum(len(c) for c in self.counterfeits_per_group)

    @property
    def deferrals(self) -> int:
        return len(self.deferred)


def as_matrix(groups: Sequence[np.ndarray]) -> np.ndarray:
    """Groups as one ``(G, width)`` row-index matrix, ``-1`` pads (a batch of columns)."""
    width = max((len(g) for g in groups), default=1)
    matrix = np.full((len(groups), width), -1, dtype=np.int64)
    for c, g in enumerate(groups):
        matrix[c, :len(g)] = g
    return matrix


def group_signature(problem: WholeReleaseProblem, rows: np.ndarray) -> frozenset[int]:
    """σ of a group: its bucket's signature, or (all new) its values padded up to ``m``."""
    old = problem.bucket[rows][problem.bucket[rows] >= 0]
    if len(old):
        return problem.signatures[int(old[0])]
    present = set(problem.values[rows].tolist())
    padding = [v for v in problem.padding_order if v not in present]
    return frozenset(present | set(padding[:max(0, problem.m - len(present))]))


def new_group_without_counterfeits(problem: WholeReleaseProblem, rows: np.ndarray) -> bool:
    """Whether a group holds new rows only and no counterfeit: at least ``m`` rows of
    distinct values, so that its signature is its values."""
    return len(rows) >= problem.m and bool((problem.bucket[rows] < 0).all()) and \
        len(np.unique(problem.values[rows])) == len(rows)


def release_problems(problem: WholeReleaseProblem, groups: Sequence[np.ndarray],
                     deferred: np.ndarray,
                     signatures: Sequence[frozenset[int]] | None = None) -> list[str]:
    """Every rule of a valid release the given one breaks (empty when valid)."""
    found: list[str] = []
    n, seen = len(problem.values), np.zeros(len(problem.values), dtype=np.int64)
    for g, group in enumerate(groups):
        rows = np.asarray(group, dtype=np.int64)
        if len(rows) == 0 or rows.min() < 0 or rows.max() >= n:
            found.append(f"group {g}: needs real rows in [0, {n})")
            continue
        np.add.at(seen, rows, 1)
        sigma = group_signature(problem, rows) if signatures is None else signatures[g]
        vals, buckets = problem.values[rows].tolist(), set(problem.bucket[rows].tolist()) - {-1}
        if len(set(vals)) != len(vals) or not set(vals) <= sigma or len(sigma) < problem.m:
            found.append(f"group {g}: values {vals} are not distinct values of a signature "
                         f"{sorted(sigma)} of >= m={problem.m} codes")
        if len(buckets) > 1 or (buckets and sigma != problem.signatures[buckets.pop()]):
            found.append(f"group {g}: old rows of one bucket must keep its signature")
        if (not (problem.bucket[rows] >= 0).any() and len(sigma) > len(rows)
                and not problem.counterfeits_in_new_groups):
            found.append(f"group {g}: counterfeits in a group without old rows")
        if min(sigma, default=0) < 0 or max(sigma, default=0) >= problem.domain_size:
            found.append(f"group {g}: signature outside the domain")
    late = np.asarray(deferred, dtype=np.int64)
    if len(late) and (late.min() < 0 or late.max() >= n):
        return [*found, f"deferred rows must be in [0, {n})"]
    np.add.at(seen, late, 1)
    if len(late) and ((problem.bucket[late] >= 0).any() or not problem.allow_deferrals):
        found.append("deferred rows must be new rows, and deferrals allowed")
    if (seen != 1).any():
        found.append(f"rows {np.flatnonzero(seen != 1)[:5].tolist()} are not in exactly one "
                     "group or deferred")
    return found
