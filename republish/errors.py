"""Exceptions raised by republish.

Every error a user can cause derives from :class:`RepublishError` (a ``ValueError``),
and its message names the offending row, column or parameter and what to do about it.
The CLI maps these to exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class RepublishError(ValueError):
    """Base class of every user-facing error (bad input, bad parameter, refused release)."""


class SchemaError(RepublishError):
    """The schema (TOML file or Python object) is malformed or inconsistent."""


class InputError(RepublishError):
    """A table does not satisfy its schema (missing column, bad value, duplicate id...)."""


class ParameterError(RepublishError):
    """A parameter such as ``m``, ``k`` or ``l`` is out of its valid range."""


class StoreError(RepublishError):
    """The release store refused an operation; the store is left unchanged."""


class VerificationError(RepublishError):
    """A computed release failed its verifier and was not written."""


def format_rows(rows: Iterable[object], limit: int = 5) -> str:
    """Render the first ``limit`` offending row labels for an error message."""
    items: Sequence[object] = list(rows)
    shown = ", ".join(repr(r) if isinstance(r, str) else str(r) for r in items[:limit])
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return f"{shown}{more}"
