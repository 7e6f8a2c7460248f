"""The Typer application shared by every command module of the CLI."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console

app = typer.Typer(
    name="republish",
    help=(
        "Publish microdata that changes over time (m-invariance, m-Distinct, epsilon-inclusion) "
        "and static l-diverse tables, with exact optimization models and verified releases."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Human-readable output goes to stdout through this console; --json output bypasses it.
console = Console(highlight=False)
#: Errors and progress go to stderr so that --json stdout stays one JSON document.
error_console = Console(stderr=True, highlight=False)


def print_json(document: Any) -> None:
    """Print one JSON document on stdout (the --json contract)."""
    sys.stdout.write(json.dumps(document, indent=2, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, set | frozenset | tuple):
        return sorted(value, key=str)
    return str(value)


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` on stderr and exit with ``code`` (2: bad input or usage)."""
    error_console.print(f"error: {message}", markup=False)
    raise typer.Exit(code)


@app.callback()
def _commands() -> None:
    # A callback keeps `republish <command>` a command group even while only one command
    # is registered (Typer would otherwise run that command without its name).
    pass
