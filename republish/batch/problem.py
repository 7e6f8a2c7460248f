"""Problems a batch manifest may name: their parameters and the function that solves one.

Every problem is a :class:`Problem`: the parameters it accepts (:class:`Param`, checked
when the manifest is read, before anything runs), the modules it needs (a problem whose
code is not installed is rejected at validation: "problem X is not available in this
version") and a runner ``run(instance, report) -> Outcome``. A runner solves one
:class:`~republish.batch.manifest.BatchInstance` within ``instance.time_limit`` seconds
and returns an :class:`Outcome`: the solver's :class:`~republish.solver.certificate.Certificate`
plus the release measures of the results table. ``report(outcome)`` hands the batch an
intermediate answer (for example the heuristic's, before the exact model starts), which
is what gets recorded if the instance overruns its time limit and is killed.

The runners of the individual problems live in :mod:`republish.batch.static_problems`
(eligibility, ldiv) and :mod:`republish.batch.series_problems` (release-series,
group-formation, compare); this module holds the types and the diagnostic ``selftest``
problem, :mod:`republish.batch.registry` the catalogue of every problem by name.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from republish.solver.certificate import Certificate

if TYPE_CHECKING:
    from republish.batch.manifest import BatchInstance

ParamKind = Literal["int", "float", "str", "bool", "counts", "path", "str_list"]


@dataclass(frozen=True)
class Param:
    """One manifest field of a problem.

    ``kind`` is the value type; ``counts`` is a list of non-negative integers (or a table
    value -> count) and ``str_list`` a list of strings, so for these two a sweep is a list
    of lists. ``default`` ``None`` with ``required=False`` means "absent unless given".
    """

    kind: ParamKind
    help: str
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def is_list(self) -> bool:
        return self.kind in ("counts", "str_list")


#: Fields every instance accepts (in ``[defaults]`` or the instance itself).
RUN_OPTIONS: dict[str, Param] = {
    "time_limit": Param("float", "seconds the instance may run (solver limit)", minimum=0.0),
    "seed": Param("int", "random seed (data generation, solver)", default=0, minimum=0),
    "num_workers": Param("int", "CP-SAT search workers per instance", default=1, minimum=1),
    "name": Param("str", "free label copied to the results table", default=""),
}


@dataclass(frozen=True)
class Outcome:
    """What a runner returns: the certificate and the measures of the results table.

    ``counterfeits``/``deferrals`` count rows, ``stars`` suppressed cells, ``perimeter``
    the mean perimeter of the published groups, ``query_error`` the median relative
    error of the query workload, ``size`` the number of input rows (for time-vs-size
    plots), ``verified`` whether an independent check of the answer passed (``None``
    when the problem has nothing to verify). ``variant`` names the optimization problem
    answered (methods with equal variants on the same input have comparable objectives).
    """

    certificate: Certificate
    method: str
    variant: str = ""
    counterfeits: int | None = None
    deferrals: int | None = None
    stars: int | None = None
    perimeter: float | None = None
    query_error: float | None = None
    size: int | None = None
    verified: bool | None = None
    detail: str = ""

    def to_row(self) -> dict[str, Any]:
        """The outcome's columns of the results table (plain JSON-able values)."""
        certificate = self.certificate
        return {
            "method": self.method,
            "variant": self.variant or None,
            "status": certificate.status,
            "objective": _finite(certificate.objective),
            "bound": _finite(certificate.bound),
            "gap": _finite(certificate.gap),
            "heuristic_objective": _finite(certificate.heuristic_objective),
            "counterfeits": self.counterfeits,
            "deferrals": self.deferrals,
            "stars": self.stars,
            "perimeter": _finite(self.perimeter),
            "query_error": _finite(self.query_error),
            "size": self.size,
            "verified": self.verified,
            "solve_time_s": certificate.wall_time_s,
            "detail": self.detail or certificate.detail,
            "certificate": plain(certificate.to_dict()),
        }


def plain(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


Reporter = Callable[[Outcome], None]
Runner = Callable[["BatchInstance", Reporter], Outcome]
#: A cross-field check: returns ``(field, message)`` of the first problem, else ``None``.
Check = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]


@dataclass(frozen=True)
class Problem:
    """A problem of the batch manifest: its fields, required code and runner."""

    name: str
    summary: str
    params: Mapping[str, Param]
    run: Runner
    requires: tuple[tuple[str, str], ...] = ()
    check: Check | None = None

    def missing(self) -> str | None:
        """Why the problem cannot run in this installation (``None`` when it can)."""
        return _missing(self.requires)


@cache
def _missing(requires: tuple[tuple[str, str], ...]) -> str | None:
    for module, attribute in requires:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"module {module} is not installed"
        try:
            loaded = importlib.import_module(module)
        except Exception as exc:  # a broken module makes the problem unavailable
            return f"module {module} cannot be imported ({type(exc).__name__}: {exc})"
        if attribute and not hasattr(loaded, attribute):
            return f"{module}.{attribute} does not exist"
    return None


# --- the diagnostic problem -------------------------------------------------------------


class SelftestFailure(RuntimeError):
    """Raised on purpose by the ``selftest`` problem (``fail = "raise"``)."""


def run_selftest(instance: BatchInstance, report: Reporter) -> Outcome:
    """Check the batch machinery: sleep, then answer, raise, or kill the worker process.

    ``sleep`` seconds are slept in steps of 0.05 s, but never past the time limit unless
    ``ignore_time_limit`` is set (a solver that overruns, for testing the hard kill).
    ``objective`` is reported as an intermediate answer first, then as the final one.
    """
    params = instance.parameters
    objective = float(params["objective"])
    report(Outcome(Certificate("selftest", "HEURISTIC", objective), method="selftest"))
    start = time.perf_counter()
    limit = math.inf if params["ignore_time_limit"] else instance.time_limit
    duration = min(float(params["sleep"]), limit)
    while time.perf_counter() - start < duration:
        time.sleep(min(0.05, max(0.0, duration - (time.perf_counter() - start))))
    if params["fail"] == "raise":
        raise SelftestFailure("selftest instance failed on purpose (fail = 'raise')")
    if params["fail"] == "exit":
        os._exit(17)  # simulates a worker killed from outside (no cleanup, no answer)
    status: Literal["OPTIMAL", "FEASIBLE"] = (
        "FEASIBLE" if float(params["sleep"]) > limit else "OPTIMAL"
    )
    certificate = Certificate(
        "selftest", status, objective, bound=objective if status == "OPTIMAL" else None,
        heuristic_objective=objective, times={"sleep": time.perf_counter() - start},
    )
    return Outcome(certificate, method="selftest", size=1, verified=True)


SELFTEST = Problem(
    name="selftest",
    summary="diagnostic: sleeps, then answers, raises or kills its worker (tests a cluster)",
    params={
        "sleep": Param("float", "seconds to sleep", default=0.0, minimum=0.0),
        "objective": Param("float", "objective to report", default=0.0),
        "fail": Param("str", "how to fail", default="none", choices=("none", "raise", "exit")),
        "ignore_time_limit": Param("bool", "sleep past the time limit", default=False),
    },
    run=run_selftest,
)
