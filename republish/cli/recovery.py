"""Finishing an interrupted release from the command line: notes on stderr, and the
recovery of the commands that only read a store (a failure there is a warning).

A ``release`` killed after its store transaction leaves files in a staging folder;
the next command on the store moves them into place
(:func:`republish.api.publication.recover`). ``release`` itself must recover; ``verify``,
``history``, ``export`` and ``audit`` only try (:func:`_recover_or_warn`). Separate from
:mod:`republish.cli.store_commands` because several command modules share it; both names
stay importable from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from republish.cli.app import error_console

if TYPE_CHECKING:
    from republish.store import ReleaseStore


def _say(message: str) -> None:
    """A note on stderr (recovery of an interrupted run)."""
    error_console.print(f"note: {message}", markup=False, soft_wrap=True)


def _recover_or_warn(opened: ReleaseStore) -> None:
    """Recovery for commands that only read the store: a failure is a warning."""
    from republish.api.publication import recover
    from republish.errors import RepublishError

    try:
        recover(opened, _say)
    except (RepublishError, OSError) as exc:
        _say(f"an interrupted release could not be finished now ({exc}); 'republish "
             "release' will refuse to continue until it is.")
