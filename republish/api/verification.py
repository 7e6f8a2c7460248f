"""Re-check a whole store: every release, the sequence, the private state, and the
published files against the SHA-256 the store recorded (``republish verify``,
:meth:`republish.Store.verify`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from republish.errors import InputError
from republish.release_files import render_release, sha256
from republish.store import ReleaseStore

__all__ = ["VerifyReport", "file_problems", "verify_store"]


@dataclass(frozen=True)
class VerifyReport:
    """``ok`` when nothing was found; ``violations`` in words (first is the first found)."""

    ok: bool
    principle: str
    releases: int
    violations: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """The ``verify --json`` document."""
        return {"ok": self.ok, "principle": self.principle, "releases": self.releases,
                "violations": [{"group": None, "reason": p} for p in self.violations]}


_PUBLISHED_NAME = re.compile(r"^(release|counterfeits|substitutions)-([0-9]+)\.(csv|parquet)$")


def file_problems(opened: ReleaseStore, folder: Path | None) -> list[str]:
    """Recorded file checksums that the stored releases no longer render to, and (with
    ``folder``) published files missing, different from the record, or unknown to it.

    Releases are rendered one at a time and only their SHA-256 is kept, so a long history
    of large releases is checked in the memory of one."""
    problems: list[str] = []
    recorded = opened.published_files()
    numbers = set(opened.release_numbers())
    counts_name = opened.definition.counts_file
    digests: dict[tuple[int, str], dict[str, str]] = {}

    def rendered(number: int, fmt: str) -> dict[str, str]:
        if (number, fmt) not in digests:
            files = render_release(opened.release(number), fmt, counts_name)
            digests[number, fmt] = {name: sha256(data) for name, data in files.items()}
        return digests[number, fmt]

    for entry in sorted(recorded, key=lambda e: (e.release, e.format)):
        if (entry.release, entry.format) not in digests:
            digests.clear()  # sorted: the previous release's digests are no longer needed
        if entry.release not in numbers:
            problems.append(f"release {entry.release}: file {entry.name} is recorded for a "
                            "release the store does not hold")
            continue
        if entry.format != "csv":
            continue  # Parquet bytes depend on the pyarrow version (docs/formats.md)
        if rendered(entry.release, entry.format).get(entry.name) != entry.sha256:
            problems.append(
                f"release {entry.release}: the stored release no longer renders to the "
                f"recorded {entry.name} (SHA-256 differs; the store was modified outside "
                "republish)")
    if folder is None:
        return problems
    expected = {entry.name: entry for entry in recorded}
    for entry in recorded:
        path = folder / entry.name
        if not path.is_file():
            problems.append(f"release {entry.release}: {path} is missing (re-create it with "
                            f"'republish export --store {opened.path} -o {folder} --release "
                            f"{entry.release}')")
        elif path.is_symlink() or sha256(path.read_bytes()) != entry.sha256:
            problems.append(f"release {entry.release}: {path} differs from the file published "
                            "(SHA-256 recorded in the store)")
    for path in sorted(folder.iterdir()):
        match = _PUBLISHED_NAME.match(path.name)
        if match is None or path.name in expected:
            continue
        number, fmt = int(match.group(2)), match.group(3)
        if number in numbers and not any(e.release == number for e in recorded):
            # A release published before checksums were recorded: compare with its rendering.
            digest = rendered(number, fmt).get(path.name)
            if digest is not None and sha256(path.read_bytes()) == digest:
                continue
            problems.append(f"release {number}: {path} differs from the stored release")
            continue
        problems.append(f"{path} is not a file of any release recorded in the store (left by "
                        "an interrupted or foreign run?); remove it before publishing the "
                        "folder")
    return problems


def verify_store(opened: ReleaseStore, files: str | Path | None = None,
                 progress: Callable[[str], None] | None = None) -> VerifyReport:
    """Every check of ``republish verify`` (``progress`` gets the name of each step).

    The history is checked release by release against the state it builds
    (:func:`republish.store_verify.verify_history`): one release in memory at a time."""
    from republish.store_verify import verify_history

    folder = None if files is None else Path(files)
    if folder is not None and not folder.is_dir():
        raise InputError(f"files={str(folder)!r} (--files): not a folder; give the folder "
                         "the releases were published to.")
    say = progress if progress is not None else (lambda _: None)
    problems: list[str] = []
    numbers = opened.release_numbers()
    say("checksums")
    problems.extend(opened.checksum_problems())
    problems.extend(verify_history(opened, lambda number, total: say(
        f"release {number} of {total}: the step and the state")))
    say("published files")
    problems.extend(file_problems(opened, folder))
    return VerifyReport(not problems, opened.principle, len(numbers), tuple(problems))
