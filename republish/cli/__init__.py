"""Command-line interface: ``republish --help``.

Each command lives in its own module under :mod:`republish.cli`, registers itself on the
shared :data:`republish.cli.app.app`, and is imported here. Exit codes (design Contracts):
0 success; 1 a verification or audit found a violation; 2 bad input or usage.
"""

from __future__ import annotations

import sys

import click
import typer

# Command modules register themselves on import:
from republish.cli import commands  # noqa: F401
from republish.cli.app import app, error_console
from republish.errors import RepublishError

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point; maps user errors to exit code 2 with a message."""
    try:
        # Without standalone mode click returns (not raises) the code of typer.Exit.
        code = app(standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            sys.exit(code)
    except RepublishError as exc:
        error_console.print(f"error: {exc}", markup=False)
        sys.exit(2)
    except click.exceptions.Abort:
        error_console.print("aborted")
        sys.exit(2)
    except click.UsageError as exc:
        exc.show()
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
