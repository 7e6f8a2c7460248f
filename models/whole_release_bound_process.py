"""Bounds on (b) computed in a second process, beside a release step's search.

A release too large for the set-partitioning model (:mod:`republish.models.whole_release_
large`) spends its budget on two independent jobs: the search for a cheaper release and
the row and pair lower bounds on (b) (:func:`republish.models.whole_release_pair_bound.
lower_bound_b`), which depend on the problem and ``A*`` only. In one process the bound
runs first and takes up to ``BOUND_SHARE`` of the budget from the search. Both are Python
and OR-Tools code holding the GIL (two threads computing the pair bound take twice the
time of one), so with ``workers >= 2`` the bound runs in a forked child process for the
whole budget while the parent searches for the whole budget.

The m-row relaxation of a first release (:mod:`republish.models.whole_release_subset_
bound`, m >= 4) runs the same way beside the set-partitioning model (:func:`run_beside`):
there the model's incumbent comes from its local search and its restricted MIPs, which
gain from the seconds the relaxation would otherwise take first.

The child inherits the problem by ``fork`` (nothing is pickled on the way in) and sends
back its answer: one float, or the relaxation's result. Where a child cannot be forked (no
``fork`` start method, a daemonic parent such as a pool worker, no resources)
:func:`run_beside` returns None and the caller computes the bound in its own process as
before. A child that fails, or does not
answer by the deadline, yields None as well: a certificate then carries a weaker bound,
never a wrong one. ``time.perf_counter`` is the system's monotonic clock on Linux, so the
parent's deadlines hold in the child.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

import numpy as np

from republish.models.whole_release_counts import Extent
from republish.models.whole_release_pair_bound import lower_bound_b
from republish.models.whole_release_separable_bound import SeparableBound, separable_bound

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["Pending", "bound_beside", "run_beside"]


@dataclass
class Pending:
    """A job running in ``process``; its answer arrives on ``receiver``, and ``accepts``
    says which answers are kept."""

    process: BaseProcess
    receiver: Connection
    accepts: Callable[[object], bool]

    def collect(self, deadline: float) -> Any:
        """The child's answer, waiting for it until ``deadline`` (``perf_counter``); None
        when it failed, did not answer in time or answered what ``accepts`` refuses. The
        child is gone afterwards."""
        value: object = None
        try:  # the last answer sent before the child ended (EOF) or the deadline came
            while self.receiver.poll(max(deadline - time.perf_counter(), 0.0)):
                answer = self.receiver.recv()
                if answer is not None and self.accepts(answer):
                    value = answer
        except (EOFError, OSError):
            pass
        finally:
            self.receiver.close()
            if self.process.is_alive():
                self.process.kill()
            self.process.join(timeout=5.0)
        return value


def _compute(sender: Connection, job: Callable[..., object], args: tuple[object, ...],
             kwargs: dict[str, object], report: str | None) -> None:
    try:
        value = job(*args, **kwargs, **({report: sender.send} if report else {}))
    except Exception:  # the parent falls back to its own bound
        value = None
    try:
        sender.send(value)
    finally:
        sender.close()


def run_beside(job: Callable[..., object], *args: object,
               accepts: Callable[[object], bool] = lambda _: True, report: str | None = None,
               **kwargs: object) -> Pending | None:
    """Start ``job(*args, **kwargs)`` in a forked child process; None where no child can be
    started. Its answer must pickle (it comes back through a pipe). ``report``: the name
    of a keyword of ``job`` taking a callable through which it sends answers on the way
    (a bound after each round): :meth:`Pending.collect` keeps the last one that arrived,
    so a child still busy at the deadline has not worked for nothing."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_compute, args=(sender, job, args, kwargs, report),
                              daemon=True)
    try:
        process.start()
    except (AssertionError, OSError):  # a daemonic parent may not fork; out of resources
        receiver.close()
        sender.close()
        return None
    sender.close()  # the child holds its own end: EOF reaches the parent if it dies
    return Pending(process, receiver, accepts)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def bound_beside(problem: WholeReleaseProblem, extent: Extent | None, a_star: float | Fraction,
                 weight: Fraction, *, deadline: float, weights_deadline: float,
                 groups: Sequence[np.ndarray] | None = None, cost: object = None,
                 separable_deadline: float | None = None) -> Pending | None:
    """Start :func:`~republish.models.whole_release_pair_bound.lower_bound_b` with these
    arguments in a forked child process (:func:`run_beside`); its answer is a float. With
    ``separable_deadline`` the relaxations per QI
    (:func:`~republish.models.whole_release_separable_bound.separable_bound`, over
    ``cost``'s QIs) run first, until then, and the answer is the larger bound; each QI's
    progress is sent as it comes, so a child stopped later still answers with it."""
    if separable_deadline is None:
        return run_beside(lower_bound_b, problem, extent, a_star, weight, accepts=_is_number,
                          deadline=deadline, weights_deadline=weights_deadline,
                          groups=groups)
    return run_beside(_separable_then_pairs, problem, extent, cost, a_star, weight,
                      accepts=_is_number, report="report", deadline=deadline,
                      separable_deadline=separable_deadline, groups=groups)


def _separable_then_pairs(problem: WholeReleaseProblem, extent: Extent | None, cost: object,
                          a_star: float | Fraction, weight: Fraction, *, deadline: float,
                          separable_deadline: float, groups: Sequence[np.ndarray] | None,
                          report: Callable[[float], object]) -> float:
    best = 0.0

    def rose(found: SeparableBound) -> None:
        nonlocal best
        if found.bound > best:
            best = found.bound
            report(best)

    if groups is not None:
        separable_bound(problem, cost, a_star, weight, groups, deadline=separable_deadline,
                        report=rose)
    return max(best, lower_bound_b(problem, extent, a_star, weight, deadline=deadline,
                                   weights_deadline=deadline, groups=groups))
