"""The worker process of a batch (``python -m republish.batch.worker``) and its driver.

The process reads one JSON instance per line on stdin and answers with JSON lines on its
original stdout: ``{"event": "start"}`` when it begins an instance, ``{"event":
"progress", "row": ...}`` for an intermediate answer, then ``{"event": "result", "row":
...}``. Anything else the solver code prints (on stdout or stderr, Python or C++) goes to
stderr, so it cannot corrupt the protocol. A runner's exception becomes a row with status
``ERROR`` and the message; the process keeps serving.

:class:`Sidecar` drives one such process from the batch: it sends an instance, waits for
its answer, and kills the process when the instance runs past ``time_limit + kill
margin`` (the solver stops itself at the time limit; the margin covers loading data,
building the model and verifying the answer). A killed instance is recorded as
``TIMEOUT`` with the last intermediate answer the runner reported (typically the
heuristic's); a process that dies on its own is recorded as ``ERROR`` with its exit code
or signal and last stderr lines. The next instance starts a fresh process.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from republish.batch.manifest import BatchInstance
from republish.batch.problem import Outcome
from republish.batch.registry import problem, warm_up

#: Seconds a fresh worker process may take to import the solvers and start an instance.
STARTUP_TIMEOUT = 120.0
_EXIT = {"event": "exit"}


def kill_margin(time_limit: float, margin: float | None = None) -> float:
    """Seconds past the time limit before an instance is killed (default 5 s + 50%)."""
    return float(margin) if margin is not None else 5.0 + 0.5 * time_limit


class Sidecar:
    """One worker process, used by one thread at a time."""

    def __init__(self, margin: float | None = None) -> None:
        self.margin = margin
        self.process: subprocess.Popen[str] | None = None
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=8)

    def start(self) -> None:
        """Start the worker process (it imports the solvers before it reads an instance)."""
        self.close()
        self.messages = queue.Queue()
        self.stderr_tail = deque(maxlen=8)
        process = subprocess.Popen(
            [sys.executable, "-m", "republish.batch.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
            # Own session: Ctrl-C reaches the batch only, which then stops the workers
            # (a worker dying of the same signal first would be recorded as a crash).
            start_new_session=True,
        )
        assert process.stdout is not None and process.stderr is not None
        threading.Thread(
            target=_read_messages, args=(process.stdout, self.messages), daemon=True
        ).start()
        threading.Thread(
            target=_read_tail, args=(process.stderr, self.stderr_tail), daemon=True
        ).start()
        self.process = process

    def close(self) -> None:
        """Kill the worker process (if any) and wait for it."""
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()

    def run(self, instance: BatchInstance, on_start: Callable[[], None] | None = None
            ) -> dict[str, Any]:
        """Solve ``instance`` in the worker process; always returns a results row."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(instance.to_dict()) + "\n")
            self.process.stdin.flush()
        except OSError:
            return self._died()
        interim: dict[str, Any] | None = None
        started = False
        began = time.perf_counter()
        deadline = began + STARTUP_TIMEOUT
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                self.close()
                if not started:
                    return error_row(f"worker did not start within {STARTUP_TIMEOUT:.0f} s")
                return _timeout_row(interim, instance, time.perf_counter() - began,
                                    kill_margin(instance.time_limit, self.margin))
            event = message.get("event")
            if event == "start":
                started = True
                began = time.perf_counter()
                deadline = began + instance.time_limit + kill_margin(
                    instance.time_limit, self.margin
                )
                if on_start is not None:
                    on_start()
            elif event == "progress":
                interim = message.get("row")
            elif event == "result":
                row: dict[str, Any] = message["row"]
                return row
            elif event == "exit":
                row = self._died()
                row["wall_time_s"] = time.perf_counter() - began
                return row

    def _died(self) -> dict[str, Any]:
        """The row of an instance whose worker process died (no answer is kept)."""
        process = self.process
        code = process.wait() if process is not None else None
        time.sleep(0.05)  # let the stderr reader drain the last lines
        tail = " | ".join(line.strip() for line in self.stderr_tail if line.strip())
        self.close()
        return error_row(_exit_text(code) + (f": {tail}" if tail else ""))


def _read_messages(stream: IO[str], sink: queue.Queue[dict[str, Any]]) -> None:
    try:
        for line in stream:
            try:
                sink.put(json.loads(line))
            except json.JSONDecodeError:
                continue
    except (OSError, ValueError):  # the stream was closed by a kill
        pass
    sink.put(_EXIT)


def _read_tail(stream: IO[str], tail: deque[str]) -> None:
    try:
        for line in stream:
            tail.append(line)
    except (OSError, ValueError):
        pass


def _exit_text(code: int | None) -> str:
    if code is None:
        return "worker process stopped by the batch"
    if code < 0:
        try:
            return f"worker process killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker process killed by signal {-code}"
    return f"worker process died (exit code {code})"


def _timeout_row(
    interim: dict[str, Any] | None, instance: BatchInstance, elapsed: float, margin: float
) -> dict[str, Any]:
    """The row of a killed instance: its last intermediate answer, status TIMEOUT."""
    row = dict(interim or {})
    row["status"] = "TIMEOUT"
    row["error"] = (
        f"killed after {elapsed:.1f} s (time limit {instance.time_limit:g} s + margin "
        f"{margin:g} s)" + ("; best answer reported before the kill" if interim else "")
    )
    row["wall_time_s"] = elapsed
    certificate = row.get("certificate")
    if isinstance(certificate, dict):
        row["certificate"] = {**certificate, "status": "TIMEOUT", "gap": None}
    return row



def error_row(message: str) -> dict[str, Any]:
    """A results row for an instance that produced no answer."""
    return {"status": "ERROR", "error": message}


def describe(exc: BaseException) -> str:
    """``Type: message (file:line in function)`` of the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" ({os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return f"{type(exc).__name__}: {exc}{where}"


def solve(instance: BatchInstance, send: Any) -> dict[str, Any]:
    """Run one instance; ``send(event, row)`` forwards intermediate answers."""
    start = time.perf_counter()

    def report(outcome: Outcome) -> None:
        send("progress", outcome.to_row())

    try:
        row = problem(instance.problem).run(instance, report).to_row()
        row["error"] = None
    except Exception as exc:  # every failure of one instance is recorded, not raised
        row = error_row(describe(exc))
    row["wall_time_s"] = time.perf_counter() - start
    return row


def serve(source: IO[str], sink: IO[str]) -> None:
    """Answer instances from ``source`` until it closes."""
    host = f"{socket.gethostname()}:{os.getpid()}"

    def send(event: str, row: dict[str, Any] | None = None, **extra: Any) -> None:
        message = {"event": event, **extra}
        if row is not None:
            message["row"] = row
        sink.write(json.dumps(message, default=str) + "\n")
        sink.flush()

    warm_up()
    send("ready", host=host)
    for line in source:
        if not line.strip():
            continue
        instance = BatchInstance.from_dict(json.loads(line))
        identifier = instance.instance_id
        send("start", id=identifier)
        row = solve(instance, functools.partial(_forward, send, identifier))
        row["host"] = host
        send("result", row, id=identifier)


def _forward(send: Any, identifier: str, event: str, row: dict[str, Any]) -> None:
    send(event, row, id=identifier)


def main() -> None:
    from republish.solver.bucket_tasks import NO_AUTOMATIC_TASKS

    # The batch runs several of these processes: a release here splits its buckets in this
    # process rather than starting more processes on cores its siblings use.
    os.environ[NO_AUTOMATIC_TASKS] = "1"
    # Keep the protocol on a private copy of stdout; fd 1 now points at stderr.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin, protocol)


if __name__ == "__main__":
    main()
