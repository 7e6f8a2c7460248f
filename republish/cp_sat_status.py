"""Certificate status of a CP-SAT solve (shared by the CP-SAT models of ``models/``).

CP-SAT's ``UNKNOWN`` means the time limit ran out before a solution or a proof; the
certificates call it ``TIMEOUT``. Look a status up with ``CP_SAT_STATUS.get(code,
"ERROR")`` so that ``MODEL_INVALID`` reads as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ortools.sat.python import cp_model

from republish.certificate import Status

__all__ = ["CP_SAT_STATUS"]

#: CP-SAT solve status -> certificate status (read-only).
CP_SAT_STATUS: Mapping[Any, Status] = MappingProxyType({
    cp_model.OPTIMAL: "OPTIMAL",
    cp_model.FEASIBLE: "FEASIBLE",
    cp_model.INFEASIBLE: "INFEASIBLE",
    cp_model.UNKNOWN: "TIMEOUT",
})
