"""Short, escaped excerpts of user input for error messages.

A message that quotes an input file quotes at most :data:`EXCERPT` characters of one
value or line, with control and other non-printable characters escaped (``\\x1b``,
``\\n``) so that a message cannot rewrite the terminal, span lines or carry a whole file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["EXCERPT", "excerpt", "excerpts", "read_toml"]

#: Characters of one value a message quotes at most.
EXCERPT = 40


def excerpt(value: object, limit: int = EXCERPT) -> str:
    """``repr``-like quoted text of ``value``: at most ``limit`` characters, escaped."""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    text = text[:limit]
    escaped = "".join(ch if ch.isprintable() and ch not in "'\\" else
                      ("\\" + ch if ch in "'\\" else ascii(ch)[1:-1]) for ch in text)
    return f"'{escaped}{'…' if cut else ''}'"


def excerpts(values: Iterable[object], count: int = 5, limit: int = EXCERPT) -> str:
    """The first ``count`` of ``values`` as excerpts, and how many more there are."""
    items = list(values)
    shown = ", ".join(excerpt(v, limit) for v in items[:count])
    more = f" (and {len(items) - count} more)" if len(items) > count else ""
    return f"{shown}{more}"


def read_toml(path: Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """The TOML file ``path`` (a schema, a manifest: ``what``) as a dict; ``error`` with a
    short excerpt when it is not UTF-8 text or not valid TOML."""
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: not UTF-8 text (byte at position {exc.start}); {what} is a TOML file."
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({excerpt(exc, 120)}).") from exc
