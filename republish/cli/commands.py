"""Imports every command module so that it registers on the shared app.

Add one import line per new command module (keep the list sorted).
"""

from __future__ import annotations

from republish.cli import (
    audit,  # noqa: F401
    batch,  # noqa: F401
    check,  # noqa: F401
    compare,  # noqa: F401
    demo,  # noqa: F401
    eligibility,  # noqa: F401
    export,  # noqa: F401
    ldiv,  # noqa: F401
    report,  # noqa: F401
    store_commands,  # noqa: F401
)
