"""Command-line interface: ``republish --help``.

Each command lives in its own module under :mod:`republish.cli`, registers itself on the
shared :data:`republish.cli.app.app`, and is imported here. Exit codes (design Contracts):
0 success; 1 a verification or audit found a violation; 2 bad input or usage, or an
expected failure of the environment (file, permission, full disk, store, interruption);
3 an internal error (traceback with ``republish --debug``). See :mod:`republish.cli.app`.

A fast start (``republish --help`` and ``--version`` in well under a second): a command
module imports only typer, rich's console and light republish modules (errors, excerpts,
parameters, :mod:`republish.cli.app`) at top level, and pandas, numpy, OR-Tools,
matplotlib and the solver inside its command functions (types under ``TYPE_CHECKING``).
``tests/test_cli_startup.py`` checks it module by module.
"""

from __future__ import annotations

import os
import sys

# Command modules register themselves on import:
from republish.cli import commands  # noqa: F401
from republish.cli.app import app, report_failure, settings

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point.

    Typer runs in standalone mode: usage errors exit 2 and ``typer.Exit`` codes pass
    through. Every command already maps its failures (:func:`republish.cli.app.guarded`);
    this is the backstop for anything raised outside a command (while parsing options).
    """
    settings.debug = os.environ.get("REPUBLISH_DEBUG", "") not in ("", "0")
    try:
        app()
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - the last line of defence
        sys.exit(report_failure(exc))
