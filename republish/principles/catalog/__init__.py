"""The privacy principles a release store can keep, one module each.

Each module defines ``PRINCIPLE``, an object of the :class:`Principle` protocol: the
verification half of a principle (its options, the check of one release against the
publisher's state, the check of a whole stored sequence). The solver holds the publication
half (:mod:`republish.solver.publish`). :func:`principle` looks a principle up by name; the
modules are discovered, so adding a principle is adding one module here (and its
publication step in ``solver/``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from republish.errors import ParameterError
from republish.principles.report import VerificationReport
from republish.release import Release
from republish.state import PublisherState

__all__ = ["Principle", "PrincipleOptions", "principle", "principle_names", "principles"]


class PrincipleOptions(Protocol):
    """A principle's parameters: a frozen dataclass with ``m`` (the group size every
    release step needs) and a JSON-able round trip."""

    @property
    def m(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...


class Principle(Protocol):
    """The verification half of a privacy principle."""

    #: The store's and the CLI's name (``m-invariance``, ...).
    name: str
    #: How ``audit --store`` attacks a history of this principle: the intersection attack
    #: of the m-invariance paper, or the Sensitive-attribute Update Graph of m-Distinct.
    audit: Literal["intersection", "sug"]
    #: Rows of this release whose values changed since last published are refused
    #: (``False``) or checked against the options (``True``).
    value_changes: bool
    #: Name of the per-group count file published beside ``release-<n>``:
    #: ``counterfeits`` (``R(n)``) or ``substitutions`` (``S(n)``).
    counts_file: str

    def options_from_dict(self, data: Mapping[str, Any]) -> PrincipleOptions:
        """Options from :meth:`PrincipleOptions.to_dict` (``m`` included)."""
        ...

    def check_changes(self, state: PublisherState, table: pd.DataFrame,
                      positions: np.ndarray, options: PrincipleOptions) -> None:
        """Refuse (``InputError``) value changes of published identifiers this principle
        does not allow."""
        ...

    def check_step(self, release: Release, state: PublisherState, options: PrincipleOptions,
                   positions: np.ndarray | None = None) -> VerificationReport:
        """Every check of ``release`` alone and against the state *before* it."""
        ...

    def check_sequence(self, releases: Sequence[Release],
                       options: PrincipleOptions) -> VerificationReport:
        """Every check of a whole stored sequence (each release and across releases)."""
        ...


@cache
def principles() -> dict[str, Principle]:
    """Every principle by name (the modules of this package)."""
    found: dict[str, Principle] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        entry: Principle = module.PRINCIPLE
        found[entry.name] = entry
    return dict(sorted(found.items()))


def principle_names() -> list[str]:
    return list(principles())


def principle(name: str) -> Principle:
    """The principle called ``name``; a :class:`ParameterError` naming the known ones."""
    try:
        return principles()[name]
    except KeyError:
        raise ParameterError(
            f"unknown principle {name!r}; use one of {principle_names()}."
        ) from None
