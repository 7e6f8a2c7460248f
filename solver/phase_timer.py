"""Wall time per phase of a release step, with the phase names sent to a progress
callback as each phase starts (the CLI's spinner)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["PhaseTimer", "Progress"]

Progress = Callable[[str], None]


class PhaseTimer:
    """``phase(name)`` ends the running phase and starts ``name`` (None: stop);
    ``times[name]`` is each finished phase's wall time in seconds."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.times: dict[str, float] = {}
        self.current: str | None = None
        self.since = time.perf_counter()

    def phase(self, name: str | None) -> None:
        now = time.perf_counter()
        if self.current is not None:
            self.times[self.current] = now - self.since
        self.current, self.since = name, now
        if name is not None and self.progress is not None:
            self.progress(name)
