"""The defaults the Python API and the CLI share (one place, so that the same call gives
the same release in both).

This module imports nothing heavy: the CLI reads it at start-up for its option defaults.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "COST", "ELIGIBILITY", "FILE_FORMAT", "LDIV_METHOD", "LDIV_MODEL", "LDIV_WORKERS",
    "SOLVER", "STATIC_SEED", "TIME_LIMIT", "WARN_SHARE",
]

#: ``--solver``: exact models hinted by the papers' algorithms below measured sizes.
SOLVER: Final = "auto"
#: ``--time-limit``: one budget in seconds for every model of one step.
TIME_LIMIT: Final = 10.0
#: ``--eligibility``: leftover new rows are made m-eligible with counterfeits.
ELIGIBILITY: Final = "counterfeit"
#: ``--cost``: objective (b) of a release.
COST: Final = "perimeter"
#: ``--format`` of the published files.
FILE_FORMAT: Final = "csv"
#: ``--warn-share``: warn when a release defers, or adds counterfeits for, more than this
#: share of its rows (0.05 = 5 %).
WARN_SHARE: Final = 0.05
#: ``ldiv`` defaults: method, rendering, CP-SAT workers; the static commands' seed.
LDIV_METHOD: Final = "auto"
LDIV_MODEL: Final = "suppression"
LDIV_WORKERS: Final = 2
STATIC_SEED: Final = 0
