"""Short, escaped excerpts of user input for error messages.

A message that quotes an input file quotes at most :data:`EXCERPT` characters of one
value or line, with control and other non-printable characters escaped (``\\x1b``,
``\\n``) so that a message cannot rewrite the terminal, span lines or carry a whole file.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["EXCERPT", "excerpt", "excerpts"]

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
