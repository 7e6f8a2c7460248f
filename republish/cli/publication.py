"""Crash-safe publication of a release's files: :mod:`republish.api.publication`.

Kept under this name for the commands (``release``, ``export``) and for scripts that
imported it; the names are loaded on first use, so that ``republish --help`` does not
import pandas.
"""

from __future__ import annotations

import importlib
import tempfile  # noqa: F401 - the module the staging code uses (tests patch it here)
from typing import Any

#: The names of :mod:`republish.api.publication` offered here.
_NAMES = (
    "StagedRelease", "checkpoint", "move_into_place", "prepare_output", "record", "recover",
    "staging_root",
)
__all__ = list(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module("republish.api.publication"), name)
    raise AttributeError(f"module 'republish.cli.publication' has no attribute {name!r}")
