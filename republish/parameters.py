"""Parameters every principle and step shares, validated in one place.

``validate_m`` is the one check of ``m`` (m-invariance, m-Distinct, m-eligibility; ε of
ε-inclusion); :data:`Eligibility` the one name of how new rows are made m-eligible
(m-eligibility paper, Tobar Nicolau et al., TIFS 2024: counterfeits, deletions -- here
deferrals -- or both).
"""

from __future__ import annotations

import numbers
from typing import Literal, cast

from republish.errors import ParameterError

__all__ = ["ELIGIBILITY_METHODS", "MAX_M", "Eligibility", "validate_eligibility", "validate_m"]

Eligibility = Literal["counterfeit", "delete", "hybrid"]
ELIGIBILITY_METHODS: tuple[Eligibility, ...] = ("counterfeit", "delete", "hybrid")
#: No table has this many distinct sensitive values; a larger m is a typo, not a setting.
MAX_M = 1_000_000


def validate_m(m: object, name: str = "m") -> int:
    """``m`` as an ``int``: an integer of at least 2 and at most :data:`MAX_M`."""
    if isinstance(m, bool) or not isinstance(m, numbers.Integral):
        raise ParameterError(f"{name} must be an integer of at least 2, got {m!r}.")
    if int(m) < 2:
        raise ParameterError(
            f"{name} must be at least 2 (every group needs {name} distinct sensitive values), "
            f"got {m}."
        )
    if int(m) > MAX_M:
        raise ParameterError(
            f"{name}={m} exceeds {MAX_M:,}: every group would need that many distinct "
            "sensitive values. Check the value."
        )
    return int(m)


def validate_eligibility(eligibility: object) -> Eligibility:
    """``eligibility`` if it is ``counterfeit``, ``delete`` or ``hybrid``."""
    if eligibility not in ELIGIBILITY_METHODS:
        raise ParameterError(
            f"eligibility (--eligibility) must be 'counterfeit', 'delete' or 'hybrid', got "
            f"{eligibility!r}."
        )
    return cast(Eligibility, eligibility)
