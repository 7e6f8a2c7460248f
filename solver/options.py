"""How a release step may solve: one :class:`SolveOptions`, validated once at the entry.

``mode`` is ``heuristic`` (the papers' algorithms only: no model runs at all), ``auto``
(exact models hinted with the algorithms, below measured size limits; the default of the
library and the CLI alike) or ``exact`` (exact models at any size, up to memory limits).
``time_limit`` is one budget in seconds for every model of the step, counted from the
step's start: :meth:`SolveOptions.deadline` fixes its end, and every model asks the
:class:`Deadline` for the time left instead of receiving a limit of its own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Literal, cast

from republish.errors import ParameterError
from republish.objectives import CostName, validate_cost

__all__ = ["ASSIGN_POLICIES", "MODES", "Deadline", "Mode", "SolveOptions"]

Mode = Literal["auto", "exact", "heuristic"]
MODES: tuple[Mode, ...] = ("auto", "exact", "heuristic")
#: How an m-invariant release's new rows open buckets (:attr:`SolveOptions.assign`).
ASSIGN_POLICIES: tuple[str, ...] = ("paper", "reuse")
#: More than a week for one release step is a typo.
MAX_TIME_LIMIT = 7 * 24 * 3600.0


@dataclass(frozen=True)
class Deadline:
    """The end of a step's budget, on ``time.perf_counter``'s clock."""

    end: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.perf_counter() + seconds)

    def left(self, share: float = 1.0) -> float:
        """``share`` of the seconds left (0 once passed)."""
        return max(share * (self.end - time.perf_counter()), 0.0)

    @property
    def passed(self) -> bool:
        return time.perf_counter() >= self.end


#: Policies for the groups of a release without old rows (:attr:`SolveOptions.first_release`).
#: ``buckets``: the model starts from the paper's buckets and may choose any signatures
#: where it runs on every row (an exact m-unique partition of a table of up to 2,000 rows;
#: under ``auto`` up to AUTO_FREE_ROWS, above it as ``keep-signatures``, and from
#: AUTO_LOCAL_ROWS as ``local-signatures`` where values are plentiful);
#: ``keep-buckets``: the model regroups within the paper's buckets (few signatures, fewer
#: counterfeits later); ``keep-signatures``: it keeps the paper's signatures and their
#: counts, every row free among the groups holding its value
#: (:mod:`republish.solver.signature_policy`); ``local-signatures``: the same with a few
#: dozen signatures chosen by locality (the compact groups' most frequent value sets, each
#: for at least 30 groups); ``compact``: it starts from locality-first groups.
FIRST_RELEASES = ("buckets", "keep-buckets", "keep-signatures", "local-signatures",
                  "compact")


@dataclass(frozen=True)
class SolveOptions:
    """``mode``, ``time_limit`` (seconds, one budget per step), ``workers`` (CP-SAT / MIP
    threads; from 2, a release step above 2,000 rows computes its bound on (b) in a second
    process beside its search, and so does a first release whose m-row relaxation would
    not get its time in the process), ``seed`` (the models' random seed; ``None``: drawn from the
    step's rng) and ``cost``, the generalization objective (b) the models minimize."""

    mode: Mode = "auto"
    time_limit: float = 10.0
    workers: int = 1
    seed: int | None = None
    #: Objective (b) of :mod:`republish.objectives` (m-invariance: ``perimeter`` or ``ncp``).
    cost: CostName = "perimeter"
    #: Where the heuristic §4.3 split of an m-invariant release's buckets runs: ``None``
    #: (automatic: tasks on local worker processes from 1,000,000 rows on two or more
    #: cores, else one call in this process; ``bucket_tasks.automatic_scheduler``),
    #: ``local`` (tasks in this process), ``processes`` (tasks on local worker processes)
    #: or a Dask address ``tcp://HOST:PORT``; the release is the same wherever it runs
    #: (:mod:`republish.solver.bucket_tasks`).
    scheduler: str | None = None
    #: Tasks the buckets are cut into when ``scheduler`` is set (0: automatic).
    split_tasks: int = 0
    #: How new rows open buckets (m-invariance §4.2): ``paper`` (Algorithm Assign) or
    #: ``reuse`` (existing signatures first, :mod:`republish.heuristics.assign_reuse`;
    #: fewer counterfeits later, benchmarks/RESULTS.md, issue 19 item 1).
    assign: str = "paper"
    #: The groups of a release without old rows: ``buckets`` (the paper's steps, a dozen
    #: signatures) or ``compact`` (locality first, :mod:`republish.heuristics.compact_groups`,
    #: as the whole-release model's start: far less generalization now, more counterfeits
    #: in the next releases; benchmarks/RESULTS.md, "Whole-release optimization").
    first_release: str = "buckets"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ParameterError(
                f"mode (--solver) must be 'auto', 'exact' or 'heuristic', got {self.mode!r}.")
        limit = self.time_limit
        if (isinstance(limit, bool) or not isinstance(limit, int | float)
                or not math.isfinite(limit) or not 0 < limit <= MAX_TIME_LIMIT):
            raise ParameterError(
                f"time_limit (--time-limit) must be a positive number of seconds up to "
                f"{MAX_TIME_LIMIT:.0f}, got {limit!r}.")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) \
                or not 1 <= self.workers <= 1024:
            raise ParameterError(
                f"workers must be a positive integer (at most 1024), got {self.workers!r}.")
        if self.seed is not None and (isinstance(self.seed, bool)
                                      or not isinstance(self.seed, int)
                                      or not 0 <= self.seed < 2**31):
            raise ParameterError(f"seed must be an integer in [0, 2^31), got {self.seed!r}.")
        if self.scheduler is not None and (not isinstance(self.scheduler, str) or not (
                self.scheduler in ("local", "processes") or "://" in self.scheduler)):
            raise ParameterError(
                f"scheduler (--scheduler) must be 'local', 'processes' or a Dask scheduler "
                f"address such as tcp://HOST:PORT, got {self.scheduler!r}.")
        if isinstance(self.split_tasks, bool) or not isinstance(self.split_tasks, int) \
                or not 0 <= self.split_tasks <= 1_000_000:
            raise ParameterError(
                f"split_tasks must be an integer >= 0 (0: automatic), got {self.split_tasks!r}.")
        if self.assign not in ASSIGN_POLICIES:
            raise ParameterError(f"assign (--assign) must be one of {list(ASSIGN_POLICIES)}, "
                                 f"got {self.assign!r}.")
        if self.first_release not in FIRST_RELEASES:
            raise ParameterError(f"first_release (--first-release) must be one of "
                                 f"{list(FIRST_RELEASES)}, got {self.first_release!r}.")
        object.__setattr__(self, "cost", validate_cost(self.cost))
        object.__setattr__(self, "mode", cast(Mode, self.mode))
        object.__setattr__(self, "time_limit", float(limit))

    @property
    def uses_models(self) -> bool:
        """False in ``heuristic`` mode: no model runs at all."""
        return self.mode != "heuristic"

    def deadline(self) -> Deadline:
        """The end of this step's budget, from now."""
        return Deadline.after(self.time_limit)
