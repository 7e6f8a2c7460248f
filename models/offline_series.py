"""Offline optimum of a whole m-invariant series: the least counterfeits (plus weighted
withheld rows) over every release jointly, when the whole series is known in advance.

The m-invariance paper (Xiao & Tao, SIGMOD 2007, §3-§4) publishes online: each release is
computed from the previous one. Given a historical panel, this model asks what the best
*any* policy could do, which is the m-eligibility paper's open question (Section 7: whether
more counterfeits now pay off later) answered per instance.

Model. A person ``p`` (SA value ``v_p``, constant under m-invariance) keeps one signature
``σ_p ∋ v_p`` in every release where present (re-inserted rows take back their signature).
In release ``j`` the rows of signature ``σ`` form ``g_{j,σ}`` groups, each holding one row
of every value of ``σ`` (real or counterfeit), so ``g_{j,σ} = max_{v∈σ} n_{j,σ,v}`` and the
bucket's counterfeits are ``|σ|·g_{j,σ} - Σ_v n_{j,σ,v}``: exact for counterfeits. Sizes
``m <= |σ| <= 2m - 1`` lose nothing: a signature of ``>= 2m`` values splits into two of
``>= m`` whose groups need no more counterfeits (``g_1, g_2 <= g`` in every release).

Persons are aggregated into types (value, presence pattern) with counts ``c_t``; ``x_{t,σ}``
of them take ``σ``. With ``allow_withholding`` any present row may be withheld at weight
``w`` (``ω_{j,σ,v}`` rows of ``n_{j,σ,v}``): looser than the online deferral rules (which
only defer new rows), so the optimum is then a valid *lower bound* on what an online chain
with deferrals reaches; without it the optimum is exact for counterfeit-only chains::

    minimize   q·Σ_{j,σ} (|σ|·g_{j,σ} - Σ_v (n_{j,σ,v} - ω_{j,σ,v})) + p·Σ ω      (w = p/q)
    subject to Σ_σ x_{t,σ} = c_t                                     every type t
               n_{j,σ,v} = Σ_{t: v_t = v, t present in j} x_{t,σ}
               g_{j,σ} >= n_{j,σ,v} - ω_{j,σ,v},  0 <= ω <= n           (ω = 0 without withholding)

CP-SAT solves it; a time-limited solve returns its proven bound, so the answer is always a
valid lower bound on every policy's total, and an upper bound when a solution is found.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from republish.errors import ParameterError
from republish.models.solve import solve_cp_sat

__all__ = ["OfflineSeriesProblem", "OfflineSeriesSolution", "solve_offline_series"]

#: Above this many assignment variables the model is not built (status ``TOO_LARGE``).
MAX_VARIABLES = 400_000


@dataclass(frozen=True, eq=False)
class OfflineSeriesProblem:
    """``values[p]``: person ``p``'s SA code in ``[0, domain_size)``; ``presence[p, j]``:
    whether ``p`` is in release ``j``."""

    values: np.ndarray
    presence: np.ndarray
    m: int
    domain_size: int
    deferral_weight: float = 1.0
    allow_withholding: bool = False

    def __post_init__(self) -> None:
        values = np.asarray(self.values)
        presence = np.asarray(self.presence, dtype=bool)
        if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
            raise ParameterError("The 'values' parameter of OfflineSeriesProblem must be a "
                                 f"1-d int array. Got dtype {values.dtype}, shape "
                                 f"{values.shape} instead.")
        if presence.ndim != 2 or presence.shape[0] != len(values):
            raise ParameterError("The 'presence' parameter of OfflineSeriesProblem must be a "
                                 f"(persons, releases) bool array with {len(values)} rows. "
                                 f"Got shape {presence.shape} instead.")
        if isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 1:
            raise ParameterError("The 'm' parameter of OfflineSeriesProblem must be an int "
                                 f"in the range [1, inf). Got {self.m!r} instead.")
        if not isinstance(self.domain_size, int) or self.domain_size < self.m:
            raise ParameterError("The 'domain_size' parameter of OfflineSeriesProblem must be "
                                 f"an int >= m={self.m}. Got {self.domain_size!r} instead.")
        if len(values) and (values.min() < 0 or values.max() >= self.domain_size):
            raise ParameterError("The 'values' parameter of OfflineSeriesProblem must hold "
                                 f"codes in [0, {self.domain_size}).")
        w = self.deferral_weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w < math.inf:
            raise ParameterError("The 'deferral_weight' parameter of OfflineSeriesProblem "
                                 f"must be a float in [0, inf). Got {w!r} instead.")
        object.__setattr__(self, "values", values.astype(np.int64))
        object.__setattr__(self, "presence", presence)


@dataclass(frozen=True)
class OfflineSeriesSolution:
    """``objective``: counterfeits + w·withheld of the best joint assignment found (None
    without one); ``bound``: a proven lower bound on every policy's total (0 when nothing
    better is proven); ``status``: ``OPTIMAL``, ``FEASIBLE``, ``TIMEOUT``, ``TOO_LARGE``."""

    status: str
    objective: float | None
    bound: float
    counterfeits: int | None
    withheld: int | None
    variables: int
    wall_time_s: float

    @property
    def gap(self) -> float | None:
        if self.status == "OPTIMAL":
            return 0.0
        if self.objective is None:
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1.0)


def signatures(m: int, domain_size: int) -> list[tuple[int, ...]]:
    """Every signature of ``m`` to ``2m - 1`` codes (at most ``domain_size``)."""
    return [sigma for size in range(m, min(2 * m - 1, domain_size) + 1)
            for sigma in itertools.combinations(range(domain_size), size)]


def split_signature(sigma: frozenset[int], value: int, m: int) -> tuple[int, ...]:
    """The part holding ``value`` when ``sigma`` is cut, in code order, into chunks of ``m``
    codes (the last one ``m..2m-1``): no release of it needs more counterfeits."""
    codes = sorted(sigma)
    chunks = [codes[i:i + m] for i in range(0, len(codes), m)]
    if len(chunks) > 1 and len(chunks[-1]) < m:
        last = chunks.pop()
        chunks[-1] += last
    return tuple(next(c for c in chunks if value in c))


def solve_offline_series(problem: OfflineSeriesProblem, *, time_limit: float,
                         workers: int = 1, seed: int = 0,
                         max_variables: int = MAX_VARIABLES,
                         hint: Sequence[frozenset[int] | None] | None = None
                         ) -> OfflineSeriesSolution:
    """The offline optimum of ``problem`` (module docstring) within ``time_limit`` seconds.

    ``hint``: a signature per person (``None``: unknown), e.g. an online chain's; larger
    signatures are cut to ``m..2m-1`` codes (:func:`split_signature`)."""
    started = time.perf_counter()
    weight = Fraction(problem.deferral_weight).limit_denominator(1000)
    p, q = weight.numerator, weight.denominator
    types, counts = np.unique(np.column_stack([problem.values, problem.presence]), axis=0,
                              return_counts=True)
    type_value, type_presence = types[:, 0], types[:, 1:].astype(bool)
    sizes = range(problem.m, min(2 * problem.m - 1, problem.domain_size) + 1)
    size = len(types) * sum(math.comb(problem.domain_size - 1, k - 1) for k in sizes)
    if size > max_variables:
        return OfflineSeriesSolution("TOO_LARGE", None, 0.0, None, None, size,
                                     time.perf_counter() - started)
    sigmas = signatures(problem.m, problem.domain_size)
    model = cp_model.CpModel()
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    by_type: list[list[cp_model.IntVar]] = [[] for _ in range(len(types))]
    by_signature: dict[int, list[int]] = {}
    for s, sigma in enumerate(sigmas):
        for t in np.flatnonzero(np.isin(type_value, sigma)).tolist():
            x[t, s] = model.new_int_var(0, int(counts[t]), f"x[{t},{s}]")
            by_type[t].append(x[t, s])
            by_signature.setdefault(s, []).append(t)
    for t in range(len(types)):
        model.add(sum(by_type[t]) == int(counts[t]))
    withheld_rows: list[cp_model.IntVar] = []
    g_vars: dict[tuple[int, int], cp_model.IntVar] = {}
    objective: list[cp_model.LinearExprT] = []
    releases = problem.presence.shape[1]
    for s, members in by_signature.items():
        sigma = sigmas[s]
        for j in range(releases):
            present = [t for t in members if type_presence[t, j]]
            if not present:
                continue
            most = int(max(sum(int(counts[t]) for t in present if type_value[t] == v)
                           for v in sigma))
            g = model.new_int_var(0, most, f"g[{j},{s}]")
            g_vars[j, s] = g
            objective.append(q * len(sigma) * g)
            for v in sigma:
                n = [x[t, s] for t in present if type_value[t] == v]
                if not n:
                    continue
                if problem.allow_withholding:
                    withheld = model.new_int_var(0, most, f"w[{j},{s},{v}]")
                    withheld_rows.append(withheld)
                    model.add(withheld <= sum(n))
                    model.add(g >= sum(n) - withheld)
                    objective += [-q * sum(n) + (q + p) * withheld]
                else:
                    model.add(g >= sum(n))
                    objective.append(-q * sum(n))
    model.minimize(sum(objective))
    if hint is not None:
        _add_hint(model, problem, hint, x, g_vars, withheld_rows, sigmas, types)
    solved = solve_cp_sat(model, time_limit=time_limit, workers=workers, seed=seed)
    bound = max(0.0, (solved.bound or 0.0) / q) if solved.bound is not None else 0.0
    if not solved.found:
        return OfflineSeriesSolution(solved.status, None, bound, None, None, len(x),
                                     time.perf_counter() - started)
    value = float(solved.objective) / q  # type: ignore[arg-type]
    withheld_total = sum(solved.int_value(var) for var in withheld_rows)
    counterfeits = round(value - float(weight) * withheld_total)
    return OfflineSeriesSolution(
        solved.status, value, value if solved.status == "OPTIMAL" else min(bound, value),
        counterfeits, withheld_total, len(x), time.perf_counter() - started)


def _add_hint(model: cp_model.CpModel, problem: OfflineSeriesProblem,
              hint: Sequence[frozenset[int] | None], x: dict[tuple[int, int], cp_model.IntVar],
              g_vars: dict[tuple[int, int], cp_model.IntVar],
              withheld_rows: list[cp_model.IntVar], sigmas: list[tuple[int, ...]],
              types: np.ndarray) -> None:
    """Hint every variable with the persons' given signatures, nothing withheld (a complete
    solution: CP-SAT starts from it instead of searching for one)."""
    if len(hint) != len(problem.values):
        raise ParameterError("The 'hint' parameter of solve_offline_series must give one "
                             f"signature (or None) per person: {len(problem.values)}. Got "
                             f"{len(hint)} instead.")
    index = {sigma: s for s, sigma in enumerate(sigmas)}
    type_of = {tuple(row): t for t, row in enumerate(types.tolist())}
    taken: dict[tuple[int, int], int] = {}
    rows = np.column_stack([problem.values, problem.presence]).tolist()
    for person, sigma in enumerate(hint):
        value = int(problem.values[person])
        if sigma is None or value not in sigma or len(sigma) < problem.m:
            return  # a partial hint would contradict the type totals: no hint at all
        key = (type_of[tuple(rows[person])], index[split_signature(sigma, value, problem.m)])
        taken[key] = taken.get(key, 0) + 1
    for key, var in x.items():
        model.add_hint(var, taken.get(key, 0))
    presence, values = types[:, 1:].astype(bool), types[:, 0]
    for (j, s), g in g_vars.items():
        most = 0
        for v in sigmas[s]:
            most = max(most, sum(count for (t, ss), count in taken.items()
                                 if ss == s and presence[t, j] and values[t] == v))
        model.add_hint(g, most)
    for var in withheld_rows:
        model.add_hint(var, 0)
