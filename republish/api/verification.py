"""Re-check a whole store: every release, the sequence, the private state, and the
published files against the SHA-256 the store recorded (``republish verify``,
:meth:`republish.Store.verify`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from republish.errors import InputError
from republish.release import Release, render_release, sha256
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.store import ReleaseStore

__all__ = ["VerifyReport", "file_problems", "state_problems", "verify_store"]


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


def state_problems(stored: PublisherState, replayed: PublisherState) -> list[str]:
    """Differences between the stored private state and the one replayed from releases."""
    problems = []
    if set(stored.rows.index) != set(replayed.rows.index):
        missing = sorted(set(replayed.rows.index) - set(stored.rows.index))[:5]
        extra = sorted(set(stored.rows.index) - set(replayed.rows.index))[:5]
        problems.append(f"private state: identifiers missing {missing} / unexpected {extra}")
        return problems
    a = stored.rows.loc[replayed.rows.index]
    b = replayed.rows
    columns = [c for c in b.columns if c not in (LAST_RELEASE, SIGNATURE)]
    for column in [LAST_RELEASE, *columns]:
        differs = a[column].to_numpy() != b[column].to_numpy()
        if differs.any():
            idents = b.index[differs][:5].tolist()
            problems.append(f"private state: column {column!r} differs for {idents}")
    ours = [stored.signatures[c] for c in a[SIGNATURE].tolist()]
    theirs = [replayed.signatures[c] for c in b[SIGNATURE].tolist()]
    bad = [i for i, (x, y) in enumerate(zip(ours, theirs, strict=True)) if x != y]
    if bad:
        problems.append(
            f"private state: last signature differs for {b.index[bad][:5].tolist()}"
        )
    if stored.deferred != replayed.deferred:
        problems.append("private state: deferred identifiers differ from the last release")
    return problems


_PUBLISHED_NAME = re.compile(r"^(release|counterfeits|substitutions)-([0-9]+)\.(csv|parquet)$")


def file_problems(opened: ReleaseStore, releases: list[Release],
                  folder: Path | None) -> list[str]:
    """Recorded file checksums that the stored releases no longer render to, and (with
    ``folder``) published files missing, different from the record, or unknown to it."""
    problems: list[str] = []
    recorded = opened.published_files()
    by_number = {release.number: release for release in releases}
    counts_name = opened.definition.counts_file
    rendered: dict[tuple[int, str], dict[str, bytes]] = {}

    def render(number: int, fmt: str) -> dict[str, bytes]:
        if (number, fmt) not in rendered:
            rendered[number, fmt] = render_release(by_number[number], fmt, counts_name)
        return rendered[number, fmt]

    for entry in recorded:
        if entry.release not in by_number:
            problems.append(f"release {entry.release}: file {entry.name} is recorded for a "
                            "release the store does not hold")
            continue
        data = render(entry.release, entry.format).get(entry.name)
        if entry.format == "csv" and (data is None or sha256(data) != entry.sha256):
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
        if number in by_number and not any(e.release == number for e in recorded):
            # A release published before checksums were recorded: compare with its rendering.
            data = render(number, fmt).get(path.name)
            if data is not None and sha256(path.read_bytes()) == sha256(data):
                continue
            problems.append(f"release {number}: {path} differs from the stored release")
            continue
        problems.append(f"{path} is not a file of any release recorded in the store (left by "
                        "an interrupted or foreign run?); remove it before publishing the "
                        "folder")
    return problems


def verify_store(opened: ReleaseStore, files: str | Path | None = None,
                 progress: Callable[[str], None] | None = None) -> VerifyReport:
    """Every check of ``republish verify`` (``progress`` gets the name of each step)."""
    folder = None if files is None else Path(files)
    if folder is not None and not folder.is_dir():
        raise InputError(f"files={str(folder)!r} (--files): not a folder; give the folder "
                         "the releases were published to.")
    say = progress if progress is not None else (lambda _: None)
    problems: list[str] = []
    numbers = opened.release_numbers()
    say("checksums")
    problems.extend(opened.checksum_problems())
    releases: list[Release] = []
    for number in numbers:
        say(f"release {number}")
        releases.append(opened.release(number))
    say("the whole sequence")
    if releases:
        sequence = opened.definition.check_sequence(releases, opened.principle_options)
        problems.extend(v.reason for v in sequence.violations)
        say("private state")
        problems.extend(
            state_problems(opened.state(), PublisherState.from_releases(releases, opened.m)))
    say("published files")
    problems.extend(file_problems(opened, releases, folder))
    return VerifyReport(not problems, opened.principle, len(numbers), tuple(problems))
