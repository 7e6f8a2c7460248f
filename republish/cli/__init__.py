"""Command-line interface: ``republish --help``.

Each command lives in its own module under :mod:`republish.cli`, registers itself on the
shared :data:`republish.cli.app.app`, and is imported here. Exit codes (design Contracts):
0 success; 1 a verification or audit found a violation; 2 bad input or usage.
"""

from __future__ import annotations

import sys

# Command modules register themselves on import:
from republish.cli import commands  # noqa: F401
from republish.cli.app import app, error_console
from republish.errors import RepublishError

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point; maps user errors to exit code 2 with a message.

    Typer runs in standalone mode: usage errors exit 2 and ``typer.Exit`` codes pass
    through; a :class:`RepublishError` raised by a command is printed without a traceback.
    """
    try:
        app()
    except RepublishError as exc:
        error_console.print(f"error: {exc}", markup=False)
        sys.exit(2)
