"""The (b) bound of a large release step computed in a second process, beside its search.

A release too large for the set-partitioning model (:mod:`republish.models.whole_release_
large`) spends its budget on two independent jobs: the search for a cheaper release and
the row and pair lower bounds on (b) (:func:`republish.models.whole_release_pair_bound.
lower_bound_b`), which depend on the problem and ``A*`` only. In one process the bound
runs first and takes up to ``BOUND_SHARE`` of the budget from the search. Both are Python
and OR-Tools code holding the GIL (two threads computing the pair bound take twice the
time of one), so with ``workers >= 2`` the bound runs in a forked child process for the
whole budget while the parent searches for the whole budget.

The child inherits the problem by ``fork`` (nothing is pickled on the way in) and sends
back one float. Where a child cannot be forked (no ``fork`` start method, a daemonic
parent such as a pool worker, no resources) :func:`bound_beside` returns None and the
caller computes the bound in its own process as before. A child that fails, or does not
answer by the deadline, yields None as well: a certificate then carries a weaker bound,
never a wrong one. ``time.perf_counter`` is the system's monotonic clock on Linux, so the
parent's deadlines hold in the child.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_counts import Extent
from republish.models.whole_release_pair_bound import lower_bound_b

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["PendingBound", "bound_beside"]


@dataclass
class PendingBound:
    """A bound being computed in ``process``; its value arrives on ``receiver``."""

    process: BaseProcess
    receiver: Connection

    def collect(self, deadline: float) -> float | None:
        """The child's bound, waiting for it until ``deadline`` (``perf_counter``); None
        when it failed or did not answer in time. The child is gone afterwards."""
        value: float | None = None
        try:
            if self.receiver.poll(max(deadline - time.perf_counter(), 0.0)):
                answer = self.receiver.recv()
                value = float(answer) if isinstance(answer, int | float) and \
                    not isinstance(answer, bool) else None
        except (EOFError, OSError):
            value = None
        finally:
            self.receiver.close()
            if self.process.is_alive():
                self.process.kill()
            self.process.join(timeout=5.0)
        return value


def _compute(sender: Connection, problem: WholeReleaseProblem, extent: Extent | None,
             a_star: float | Fraction, weight: Fraction, deadline: float,
             weights_deadline: float,
             groups: Sequence[np.ndarray] | None) -> None:
    try:
        value: float | None = lower_bound_b(problem, extent, a_star, weight,
                                            deadline=deadline,
                                            weights_deadline=weights_deadline, groups=groups)
    except Exception:  # the parent falls back to its own bound
        value = None
    try:
        sender.send(value)
    finally:
        sender.close()


def bound_beside(problem: WholeReleaseProblem, extent: Extent | None, a_star: float | Fraction,
                 weight: Fraction, *, deadline: float, weights_deadline: float,
                 groups: Sequence[np.ndarray] | None = None) -> PendingBound | None:
    """Start :func:`~republish.models.whole_release_pair_bound.lower_bound_b` with these
    arguments in a forked child process; None where no child can be started."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_compute, args=(sender, problem, extent, a_star, weight, deadline,
                               weights_deadline, groups), daemon=True)
    try:
        process.start()
    except (AssertionError, OSError):  # a daemonic parent may not fork; out of resources
        receiver.close()
        sender.close()
        return None
    sender.close()  # the child holds its own end: EOF reaches the parent if it dies
    return PendingBound(process, receiver)
