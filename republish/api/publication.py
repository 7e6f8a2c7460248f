"""Crash-safe publication of a release's files, and recovery from an interrupted one.

``republish release`` and :meth:`republish.Store.release` publish in this order
(docs/security.md, "Crash safety"):

1. the files are rendered to exact bytes (:func:`republish.release_files.render_release`);
2. they are written and fsynced to a private staging folder beside the store
   (``.<store name>.staging/release-<n>-<random>/``), never inside the output folder, so
   that a crash before the commit leaves no complete release where a sync of the output
   folder would pick it up; the folder is locked (``flock``) while its process lives;
3. the release, the new state and the files' names, SHA-256 and size are recorded in one
   store transaction (the commit);
4. the files are moved into the output folder (a rename, or a durable copy across file
   systems), the folder fsynced, and the files marked as in place.

:func:`recover`, run by the next command on the store, finishes step 4 of any recorded
release whose files are not all in place (from the staging copy, else re-rendered from the
store, checked against the recorded SHA-256) and removes staging folders of releases that
were never recorded, saying so for each.

``REPUBLISH_CHECKPOINT_LOG`` (a file) and ``REPUBLISH_CHECKPOINT_DELAY`` (seconds) are
test hooks for the crash benchmark: each step appends its name to the log and pauses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from republish.errors import InputError, StoreError
from republish.release_files import (
    fsync_directory,
    render_release,
    sha256,
    write_file_durably,
)
from republish.store import PublishedFile, ReleaseStore

try:  # POSIX: a staging folder is locked while the process that made it lives
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "StagedRelease", "checkpoint", "move_into_place", "prepare_output", "record", "recover",
    "staging_root",
]

LOCK = ".lock"


def checkpoint(name: str) -> None:
    """Test hook: log ``name`` and pause (see the module docstring); free otherwise."""
    log = os.environ.get("REPUBLISH_CHECKPOINT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(f"{name} {time.monotonic():.6f}\n")
    delay = os.environ.get("REPUBLISH_CHECKPOINT_DELAY")
    if delay:
        time.sleep(float(delay))


def staging_root(store: Path) -> Path:
    """The private folder, beside the store, where releases are staged."""
    store = Path(store).absolute()
    return store.parent / f".{store.name}.staging"


def prepare_output(output: Path) -> Path:
    """``output`` created if needed and checked to be a writable folder (before the
    commit, so that a release is not recorded with nowhere to put its files)."""
    if output.exists() and not output.is_dir():
        raise InputError(f"-o {str(output)!r} exists and is not a folder; give a folder.")
    output.mkdir(parents=True, exist_ok=True)
    try:
        handle, probe = tempfile.mkstemp(prefix=".republish-probe-", dir=output)
    except PermissionError as exc:
        raise InputError(f"-o {str(output)!r}: the folder is not writable ({exc.strerror}); "
                         "choose a folder you can write to.") from exc
    os.close(handle)
    os.unlink(probe)
    return output.resolve()


def _lock(folder: Path) -> int | None:
    """An exclusive lock on ``folder`` (its file descriptor), or None if another live
    process holds it."""
    handle = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    if fcntl is None:
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(handle)
        return None
    return handle


@dataclass
class StagedRelease:
    """The staging folder of one release being published (locked while it lives)."""

    folder: Path
    handle: int | None

    @classmethod
    @contextlib.contextmanager
    def create(cls, store: Path, number: int) -> Iterator[StagedRelease]:
        """A new, locked staging folder; removed on exit (its files were either moved
        into place or belong to a release that was not recorded)."""
        root = staging_root(store)
        for attempt in range(3):
            root.mkdir(mode=0o700, exist_ok=True)
            try:
                folder = Path(tempfile.mkdtemp(prefix=f"release-{number}-", dir=root))
                break
            except FileNotFoundError:  # another process removed the empty root just now
                if attempt == 2:
                    raise
        staged = cls(folder, _lock(folder))
        try:
            yield staged
        finally:
            staged.remove()
            with contextlib.suppress(OSError):
                root.rmdir()  # only when empty

    def write(self, files: dict[str, bytes]) -> None:
        """Write and fsync every file, then the folder."""
        for name, data in files.items():
            with open(self.folder / name, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        fsync_directory(self.folder)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.handle is not None:
            with contextlib.suppress(OSError):
                os.close(self.handle)
            self.handle = None


def move_into_place(source: Path, target: Path, data: bytes | None = None) -> None:
    """Move a staged file to its published place: a rename on the same file system,
    else a durable copy (temporary file in the target folder, fsync, rename)."""
    try:
        os.replace(source, target)
    except OSError as exc:
        import errno

        if exc.errno != errno.EXDEV:
            raise
        write_file_durably(target, data if data is not None else source.read_bytes())
        return
    fsync_directory(target.parent)


def record(number: int, files: dict[str, bytes], fmt: str, output: Path,
           staged: StagedRelease) -> list[PublishedFile]:
    """What the store records of each published file."""
    return [PublishedFile(number, name, fmt, sha256(data), len(data), str(output),
                          str(staged.folder), False) for name, data in files.items()]


def _file_matches(path: Path, digest: str) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and sha256(path.read_bytes()) == digest
    except OSError:
        return False


def _recover_release(store: ReleaseStore, number: int, files: list[PublishedFile],
                     say: Callable[[str], None]) -> None:
    directory = Path(files[0].directory)
    directory.mkdir(parents=True, exist_ok=True)
    rendered: dict[str, bytes] | None = None
    written = []
    for entry in files:
        target = directory / entry.name
        if _file_matches(target, entry.sha256):
            continue
        staged = Path(entry.staging) / entry.name if entry.staging else None
        if staged is not None and _file_matches(staged, entry.sha256):
            move_into_place(staged, target)
        else:
            if rendered is None:
                rendered = render_release(store.release(number), entry.format,
                                          store.definition.counts_file)
            data = rendered.get(entry.name)
            if data is None or sha256(data) != entry.sha256:
                raise StoreError(
                    f"release {number}: {entry.name} cannot be re-created byte for byte from "
                    "the store (its rendering differs from the recorded SHA-256; a different "
                    "pyarrow version for Parquet?). Re-create it with 'republish export "
                    "--format csv' or restore it from a copy."
                )
            write_file_durably(target, data)
        written.append(str(target))
    store.mark_published(number)
    for entry in files:
        if entry.staging:
            shutil.rmtree(entry.staging, ignore_errors=True)
    if written:
        say(f"release {number} was recorded but its files were not all in place (an "
            f"interrupted run): wrote {', '.join(written)}.")
    else:
        say(f"release {number}: finished its interrupted publication (its files were "
            f"already in place in {directory}).")


def recover(store: ReleaseStore, say: Callable[[str], None]) -> None:
    """Finish the publication of recorded releases whose files are not all in place, and
    remove staging folders of releases that were never recorded (see the module
    docstring). Staging folders locked by a live process are left alone."""
    pending: dict[int, list[PublishedFile]] = {}
    for entry in store.unpublished_files():
        pending.setdefault(entry.release, []).append(entry)
    held: list[int] = []
    try:
        for number, files in sorted(pending.items()):
            folders = {Path(f.staging) for f in files if f.staging}
            live = [folder for folder in folders if folder.is_dir()]
            handles = [_lock(folder) for folder in live]
            held.extend(h for h in handles if h is not None)
            if any(h is None for h in handles):
                continue  # its own process is still moving the files into place
            _recover_release(store, number, files, say)
        _remove_stale_staging(store, say)
    finally:
        for handle in held:
            with contextlib.suppress(OSError):
                os.close(handle)


def _remove_stale_staging(store: ReleaseStore, say: Callable[[str], None]) -> None:
    root = staging_root(store.path)
    if not root.is_dir():
        return
    recorded = {Path(f.staging): f for f in store.published_files() if f.staging}
    for folder in sorted(root.iterdir()):
        entry = recorded.get(folder)
        if not folder.is_dir() or (entry is not None and not entry.published):
            continue
        handle = _lock(folder)
        if handle is None:
            continue  # a release in progress in another process
        try:
            names = sorted(p.name for p in folder.iterdir() if p.name != LOCK)
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            with contextlib.suppress(OSError):
                os.close(handle)
        if entry is not None:
            say(f"removed {folder}: the staging copy of release {entry.release}, already "
                "recorded and published (its run was interrupted before cleaning up).")
        else:
            say(f"removed {folder}: the staging folder of an interrupted release that was "
                f"never recorded ({', '.join(names) if names else 'empty'}); nothing of it was "
                "published.")
    with contextlib.suppress(OSError):
        root.rmdir()
