"""The Typer application shared by every command module of the CLI.

Every command registered with ``@app.command(...)`` runs inside :func:`guarded`, the one
place that turns failures into exit codes (design Contracts):

* 0 success; 1 a verification or audit found a violation (the commands raise
  ``typer.Exit(1)`` themselves);
* 2 an expected failure: bad input or usage (:class:`~republish.errors.RepublishError`),
  the environment (a missing or unreadable file, a permission, a full disk, a read-only
  file system, a locked or damaged store), memory, or an interruption (Ctrl-C). One
  paragraph on stderr says what happened and what to do;
* 3 an unexpected internal error: a short message; the traceback only with the global
  ``--debug`` option (``republish --debug COMMAND ...``) or ``REPUBLISH_DEBUG=1``.

User values are printed literally: both consoles have rich markup and emoji codes off, so
a value such as ``[bold]`` or ``:smile:`` prints as written (a command that wants markup
for its own fixed text asks for it with ``markup=True`` and escapes what it interpolates).
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import sqlite3
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from republish.errors import ParameterError, RepublishError

__all__ = [
    "app", "check_finite", "check_range", "console", "error_console", "explain", "fail",
    "print_json",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Exit codes (design Contracts, plus 3 for internal errors).
EXIT_OK, EXIT_VIOLATION, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
#: Largest --time-limit accepted (a week; more is a typo).
MAX_TIME_LIMIT = 7 * 24 * 3600.0
#: Largest --seed accepted (numpy and CP-SAT seeds are 32-bit).
MAX_SEED = 2**31 - 1
#: Most worker threads or processes accepted (more is a typo that would exhaust memory).
MAX_WORKERS = 256
#: The one meaning of --time-limit, for every command's help (see README, "Time limits").
TIME_LIMIT_HELP = ("Wall-clock budget in seconds for one answer (one release, one table, "
                   "one method, one batch instance): the exact model gets what the "
                   "heuristics left; past it the best answer found is kept, with its "
                   "certificate.")
#: Longest message printed for one failure (a message quoting a huge value is cut).
MAX_MESSAGE = 1200


class _Settings:
    """Global options (``--debug``), set by the app callback before any command runs."""

    debug: bool = os.environ.get("REPUBLISH_DEBUG", "") not in ("", "0")


settings = _Settings()


class GuardedTyper(typer.Typer):
    """A Typer app whose commands all run inside :func:`guarded`."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:  # type: ignore[override]
        register = super().command(*args, **kwargs)

        def decorator(function: F) -> F:
            register(guarded(function))
            return function

        return decorator


#: How seeds work, for the app's help (and the README).
SEEDS_HELP = (
    "Seeds: the computations (ldiv, eligibility, compare, batch, demo) default to a fixed "
    "seed (0; demo 1), so a rerun gives the same answer. 'republish release' defaults to "
    "fresh OS entropy: the row order and group numbers of a published table must not be "
    "predictable; give --seed only for reproducible tests."
)

app = GuardedTyper(
    name="republish",
    help=(
        "Publish microdata that changes over time (m-invariance, m-Distinct, epsilon-inclusion) "
        "and static l-diverse tables, with exact optimization models and verified releases."
        "\n\n" + SEEDS_HELP
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Width of the human-readable output when it is piped or logged (a terminal's own width,
#: or ``COLUMNS``, otherwise): wide enough that tables and certificates are never cut to
#: 80 columns in logs and CI output.
PIPED_WIDTH = 200


def _width(stream: Any) -> int | None:
    if os.environ.get("COLUMNS"):
        return None  # rich reads it
    try:
        return None if stream.isatty() else PIPED_WIDTH
    except (AttributeError, ValueError):
        return PIPED_WIDTH


#: Human-readable output goes to stdout through this console; --json output bypasses it.
console = Console(highlight=False, markup=False, emoji=False, width=_width(sys.stdout))
#: Errors and progress go to stderr so that --json stdout stays one JSON document.
error_console = Console(stderr=True, highlight=False, markup=False, emoji=False,
                        width=_width(sys.stderr))


def print_json(document: Any) -> None:
    """Print one JSON document on stdout (the --json contract)."""
    sys.stdout.write(json.dumps(document, indent=2, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, set | frozenset | tuple):
        return sorted(value, key=str)
    return str(value)


def _paragraph(message: str) -> str:
    """One paragraph: control characters escaped, line breaks folded, length capped."""
    text = " ".join(str(message).split())
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return text


def fail(message: str, code: int = EXIT_INPUT) -> None:
    """Print ``message`` on stderr and exit with ``code`` (2: bad input or usage)."""
    error_console.print(f"error: {_paragraph(message)}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def check_finite(value: float | None, option: str, *, positive: bool = False,
                 minimum: float | None = None, maximum: float | None = None) -> None:
    """Refuse a non-finite (``nan``, ``inf``) or out-of-range number given as ``option``."""
    if value is None:
        return
    if not math.isfinite(value):
        raise ParameterError(f"{option} {value}: must be a finite number.")
    if positive and value <= 0:
        raise ParameterError(f"{option} {value}: must be positive.")
    check_range(value, option, minimum, maximum)


def check_range(value: float | None, option: str, minimum: float | None = None,
                maximum: float | None = None) -> None:
    """Refuse ``value`` outside ``[minimum, maximum]`` (either side may be open)."""
    if value is None:
        return
    if minimum is not None and value < minimum:
        raise ParameterError(f"{option} {value}: must be at least {minimum:g}.")
    if maximum is not None and value > maximum:
        raise ParameterError(f"{option} {value}: must be at most {maximum:g}.")


# ----------------------------------------------------------------- failures -> exit codes

_OS_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a path component is not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.EEXIST: "it already exists",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.ELOOP: "too many levels of symbolic links",
    errno.EMFILE: "too many open files",
    errno.EIO: "an input/output error occurred",
    errno.EXDEV: "the move crosses file systems",
}


def _os_message(exc: OSError) -> str:
    reason = _OS_REASONS.get(exc.errno or -1, exc.strerror or str(exc) or type(exc).__name__)
    where = ""
    if exc.filename is not None:
        where = f" ({os.fsdecode(exc.filename)!r}"
        if exc.filename2 is not None:
            where += f" -> {os.fsdecode(exc.filename2)!r}"
        where += ")"
    advice = {
        errno.ENOSPC: "Free some space and run the command again. A store is written in one "
                      "transaction, so an interrupted write leaves it as it was; a release "
                      "recorded before its files were complete is finished by the next "
                      "command on the store.",
        errno.EDQUOT: "Free some space or raise the quota, then run the command again.",
        errno.EACCES: "Check the permissions of the file and of its folder.",
        errno.EPERM: "Check the permissions of the file and of its folder.",
        errno.EROFS: "Write to a folder on a writable file system.",
    }.get(exc.errno or -1, "Check the path and run the command again.")
    return f"{reason}{where}. {advice}"


def _sqlite_message(exc: sqlite3.Error) -> str:
    text = str(exc)
    lowered = text.lower()
    if "full" in lowered:
        return (f"the disk is full ({text}); the store was left as it was (SQLite rolled the "
                "transaction back). Free some space and run the command again.")
    if "locked" in lowered or "busy" in lowered:
        return (f"the store is locked by another process ({text}); wait for it to finish "
                "and run the command again.")
    if "readonly" in lowered or "read-only" in lowered:
        return (f"the store cannot be written ({text}); check the permissions of the store "
                "and of its folder (SQLite writes a journal file beside the store).")
    if "unable to open" in lowered:
        return (f"the store cannot be opened ({text}); check that its folder exists and is "
                "writable.")
    if "no such table" in lowered or "no such column" in lowered or "not a database" \
            in lowered or "malformed" in lowered:
        return (f"the store is damaged or not a republish store ({text}); restore it from a "
                "backup.")
    return f"the store could not be read or written ({text})."


def explain(exc: BaseException) -> tuple[int, str]:
    """The exit code and one-paragraph message for an exception escaping a command."""
    if isinstance(exc, RepublishError):
        return EXIT_INPUT, str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INPUT, ("interrupted. Nothing half-written was recorded: a store changes "
                            "in one transaction, and files are moved into place whole; a "
                            "release recorded before its files were in place is finished by "
                            "the next command on the store.")
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        return EXIT_INPUT, "the output was closed before the command finished (broken pipe)."
    if isinstance(exc, OSError):
        return EXIT_INPUT, _os_message(exc)
    if isinstance(exc, sqlite3.Error):
        return EXIT_INPUT, _sqlite_message(exc)
    if isinstance(exc, MemoryError):
        return EXIT_INPUT, ("not enough memory for this input; use a smaller input or a "
                            "machine with more memory.")
    if isinstance(exc, RecursionError):
        return EXIT_INTERNAL, "internal error (recursion too deep)."
    name = type(exc).__name__
    detail = _paragraph(str(exc))
    if len(detail) > 200:
        detail = detail[:199] + "…"
    return EXIT_INTERNAL, (
        f"internal error ({name}{': ' + detail if detail else ''}). This is a bug in "
        "republish, not in your input; please report it with the command you ran. "
        "'republish --debug ...' prints the traceback."
    )


def report_failure(exc: BaseException) -> int:
    """Print the message of ``exc`` (and its traceback with --debug); its exit code."""
    code, message = explain(exc)
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        # Nothing more can reach stdout; keep the interpreter's final flush quiet.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    if settings.debug:
        traceback.print_exception(exc, file=sys.stderr)
    prefix = "" if message.startswith("internal error") else "error: "
    error_console.print(f"{prefix}{_paragraph(message)}", markup=False, soft_wrap=True)
    return code


def guarded(function: F) -> F:
    """``function`` with every failure turned into a message and an exit code."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - this is the one place that maps them
            import click

            if isinstance(exc, click.exceptions.ClickException):
                raise
            raise typer.Exit(report_failure(exc)) from None

    return run  # type: ignore[return-value]


def package_version() -> str:
    """The installed distribution's version (package metadata), else the source's."""
    from importlib import metadata

    try:
        return metadata.version("republish")
    except metadata.PackageNotFoundError:  # running from a source tree without install
        from republish import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"republish {package_version()}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _commands(
    debug: bool = typer.Option(
        False, "--debug", help="On an internal error (exit 3), also print the traceback."),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True,
        help="Print the version and exit."),
) -> None:

    # A callback keeps `republish <command>` a command group even while only one command
    # is registered (Typer would otherwise run that command without its name).
    if debug:
        settings.debug = True
