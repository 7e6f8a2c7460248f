"""Progress of long work on stderr (stdout stays clean for ``--json`` and ``--format``).

On a terminal, a rich spinner or bar (transient: it disappears when the work ends). Piped
or logged, plain lines instead (:class:`PlainProgress`), such as
``release 3: counts model … 12.3 s`` (the time since the work began): one when a step is
announced (``compare``: each pipeline's release); once the work has run 2 s, one for the
phase it is in, then one for each new phase (at most one a second: a phase over within
the second gets none), and one every 10 s while a phase lasts. Short work prints nothing,
so a quick command's stderr holds only its errors and warnings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from republish.cli.app import error_console

__all__ = ["PlainProgress", "Reporter", "progress"]

#: Seconds of work before plain phase lines start; least seconds between two lines (a new
#: phase waits that long, then gets its line if it is still running); seconds between two
#: lines of one phase.
QUIET_S = 2.0
GAP_S = 1.0
EVERY_S = 10.0


class PlainProgress:
    """Plain progress lines (see the module docstring) written by ``write``."""

    def __init__(self, write: Callable[[str], None], label: str, *, quiet: float = QUIET_S,
                 gap: float = GAP_S, every: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic, rows: int | None = None) -> None:
        self.write, self.label, self.clock = write, label, clock
        #: Rows the work processes (None: unknown): lines then show the rate in rows/s.
        self.rows = rows
        self.quiet, self.gap, self.every = quiet, gap, every
        self.start = clock()
        self.text = "starting"
        self.printed: str | None = None
        self.last: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _due(self) -> float:
        """When the next line is due (with the lock held)."""
        if self.last is None:
            return self.start + self.quiet
        if self.text != self.printed:
            return self.last + self.gap
        return self.last + self.every

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        rate = ""
        if self.rows is not None and elapsed > 0:
            rate = f" ({self.rows / elapsed:,.0f} rows/s)"
        self.write(f"{self.label}: {self.text} … {elapsed:.1f} s{rate}")
        self.printed, self.last = self.text, now

    def update(self, text: str, announce: bool = False) -> None:
        """The work is now at ``text``: a line at once if ``announce`` or if one is due;
        else the heartbeat writes it when due, if the work is still there."""
        with self._lock:
            self.text = text
            now = self.clock()
            if announce or now >= self._due():
                self._line(now)

    def _beat(self) -> None:
        while True:
            with self._lock:
                wait = max(self._due() - self.clock(), 0.05)
            if self._stop.wait(wait):
                return
            with self._lock:
                now = self.clock()
                if now >= self._due() and not self._stop.is_set():
                    self._line(now)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)


@dataclass(frozen=True)
class Reporter:
    """What a command calls: ``phase(text)`` as work moves on (a spinner's text, or a
    plain line after ``quiet`` s), ``step(text)`` for a new step of known number (the
    bar advances, or a plain line at once)."""

    phase: Callable[[str], None]
    step: Callable[[str], None]
    #: ``rows(n)``: the work processes ``n`` rows (plain lines then show rows per second).
    rows: Callable[[int], None] = lambda _: None


@contextmanager
def progress(label: str, total: int | None = None,
             rows: int | None = None) -> Iterator[Reporter]:
    """A :class:`Reporter` for the work called ``label``: rich on a terminal (a bar when
    ``total`` steps are known, else a spinner), plain lines otherwise; with ``rows`` (or
    once :attr:`Reporter.rows` is called) the plain lines show rows per second."""
    if not error_console.is_terminal:
        plain = PlainProgress(
            lambda line: error_console.print(line, markup=False, soft_wrap=True), label,
            rows=rows)

        def count(n: int) -> None:
            plain.rows = n

        try:
            yield Reporter(plain.update, lambda text: plain.update(text, announce=True),
                           count)
        finally:
            plain.close()
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns.append(BarColumn())
    with Progress(*columns, TimeElapsedColumn(), console=error_console,
                  transient=True) as bar:
        task = bar.add_task(label, total=total)
        done = [0]

        def phase(text: str) -> None:
            bar.update(task, description=f"{label}: {text}")

        def step(text: str) -> None:
            if done[0]:
                bar.update(task, advance=1)
            done[0] += 1
            phase(text)

        yield Reporter(phase, step)
