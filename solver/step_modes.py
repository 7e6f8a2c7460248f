"""The modes of the m-invariant release steps, the size thresholds under which ``auto``
runs an exact model, the check of the solver options, and the certificate a step returns.

``mode``: ``heuristic`` never runs a model; ``exact`` always does (up to the models' own
size limits); ``auto`` runs it when the instance is below the thresholds below, chosen
from ``benchmarks/exact_models.py`` (see ``benchmarks/RESULTS.md``) so that the model
usually finishes within the default 10 s on 2 cores. Below ``MIN_MODEL_TIME`` seconds no
model runs: the heuristic answers with status ``HEURISTIC``.

Separate from the steps themselves (:mod:`republish.solver.steps`, the bucket step;
:mod:`republish.solver.group_steps`, the grouping steps) because both kinds of step share
this policy; every name here is also importable from :mod:`republish.solver.steps`.
"""

from __future__ import annotations

from typing import Literal, cast

from republish.errors import ParameterError
from republish.solver.certificate import Certificate, Status

__all__ = [
    "AUTO_BUCKET_VARIABLES",
    "AUTO_COLUMNS",
    "AUTO_PAIR_ROWS",
    "EXACT_COLUMNS",
    "MIN_MODEL_TIME",
    "Eligibility",
    "Mode",
    "Objective",
    "check_solver_options",
]

Mode = Literal["auto", "exact", "heuristic"]
Objective = Literal["perimeter", "ncp"]
Eligibility = Literal["counterfeit", "delete", "hybrid"]

#: ``auto``: bucket assignment exact while buckets·values stay below this (every measured
#: instance, up to 2,000 buckets, was proven optimal well within 10 s).
AUTO_BUCKET_VARIABLES = 200_000
#: ``auto``: signature size 2 exact up to this many rows in a bucket (priced min-cost flow).
AUTO_PAIR_ROWS = 20_000
#: ``auto``: signature size >= 3 (and partitions) exact while the candidate groups of the
#: set-partitioning MIP number at most this (price-and-fix proves a 60-row bucket of
#: signature size 5, 248,832 columns, optimal in about 6 s).
AUTO_COLUMNS = 250_000
#: ``exact``: the most candidate groups the set-partitioning MIP may enumerate (size >= 3,
#: partitions). Above it the CP-SAT model or the heuristic answers: enumerating k^s groups
#: of a large bucket (10^8 for k = 500, s = 3) would exhaust memory long before SCIP
#: could use them.
EXACT_COLUMNS = 250_000
#: Less time than this (seconds) for a model: the heuristic answers alone.
MIN_MODEL_TIME = 0.05


def check_solver_options(mode: str, time_limit: float, workers: int) -> None:
    """Raise :class:`ParameterError` naming the bad ``mode``, ``time_limit`` or ``workers``."""
    if mode not in ("auto", "exact", "heuristic"):
        raise ParameterError(f"mode must be 'auto', 'exact' or 'heuristic', got {mode!r}.")
    if isinstance(time_limit, bool) or not (
            isinstance(time_limit, int | float) and time_limit > 0):
        raise ParameterError(f"time_limit (--time-limit) must be a positive number of "
                             f"seconds, got {time_limit!r}.")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParameterError(f"workers must be a positive integer, got {workers!r}.")


def _certificate(step: str, status: str, objective: float, bound: float | None,
                 heuristic: float | None, times: dict[str, float], detail: str = ""
                 ) -> Certificate:
    return Certificate(step=step, status=cast(Status, status), objective=objective,
                       bound=bound, heuristic_objective=heuristic, times=times, detail=detail)
