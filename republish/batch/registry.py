"""The catalogue of batch problems by name.

It imports every runner module, which import :mod:`republish.batch.problem` for the types
only, so the registry sits above them and no module imports back into it.
"""

from __future__ import annotations

from functools import cache

from republish.batch.problem import SELFTEST, Problem
from republish.batch.series_problems import PROBLEMS as DYNAMIC
from republish.batch.static_problems import PROBLEMS as STATIC

__all__ = ["problem", "problems", "warm_up"]


@cache
def problems() -> dict[str, Problem]:
    """Every problem a manifest may name, by name (available or not in this version)."""
    return {**STATIC, **DYNAMIC, SELFTEST.name: SELFTEST}


def problem(name: str) -> Problem:
    """The problem called ``name`` (``KeyError`` when unknown)."""
    return problems()[name]


def warm_up() -> None:
    """Import the code of every available problem (worker start-up, not instance time)."""
    for entry in problems().values():
        entry.missing()
