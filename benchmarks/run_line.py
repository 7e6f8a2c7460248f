"""The line a benchmark prints above its Markdown for ``benchmarks/RESULTS.md``: the
command that reproduces it, the machine, its cores and the date.

Scripts import this module as a sibling: ``python benchmarks/<script>.py`` puts
``benchmarks/`` on ``sys.path``.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import date
from pathlib import Path


def run_line() -> str:
    """``python benchmarks/<this script> <its arguments>`` — machine, cores, date."""
    command = " ".join([f"python benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    return f"`{command}` — {platform.machine()}, {os.cpu_count()} cores, {date.today()}\n"
