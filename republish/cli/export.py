"""``republish export``: re-create the published files of stored releases, byte for byte.

``export --store S.db -o DIR [--release N] [--format csv|parquet] [--overwrite]`` renders
``release-<n>`` and ``counterfeits-<n>`` (``substitutions-<n>`` for ε-inclusion) from the
store, exactly as ``release`` wrote them (:func:`republish.release_files.render_release`), and
checks each against the SHA-256 the store recorded at publication. A file already in DIR
with the same bytes is left alone; a different one is refused without ``--overwrite``.

Exit codes: 0 every file written or already identical; 1 a file cannot be re-created as
recorded (the store was modified, or Parquet under another pyarrow version); 2 bad input.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from republish.cli.app import app, console, error_console, print_json
from republish.cli.recovery import _recover_or_warn
from republish.errors import InputError


class ExportFormat(StrEnum):
    csv = "csv"
    parquet = "parquet"


@app.command("export")
def export(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the files.")],
    release: Annotated[
        int | None,
        typer.Option("--release", min=1, help="Only this release (default: every release)."),
    ] = None,
    fmt: Annotated[
        ExportFormat | None,
        typer.Option("--format", help="File format (default: the one each release was "
                     "published in, else csv)."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace files in OUTPUT whose content "
                           "differs (default: refuse).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON list.")] = False,
) -> None:
    """Re-create the published files of stored releases exactly as they were published."""
    from republish.api.publication import prepare_output
    from republish.release_files import render_release, sha256
    from republish.store import ReleaseStore

    done: list[dict[str, Any]] = []
    mismatches: list[str] = []
    with ReleaseStore.open(store) as opened:
        _recover_or_warn(opened)
        numbers = opened.release_numbers()
        if release is not None:
            if release not in numbers:
                raise InputError(f"--release {release}: the store holds releases "
                                 f"{_span(numbers)}.")
            numbers = [release]
        if not numbers:
            raise InputError(f"{store} holds no release yet; nothing to export.")
        folder = prepare_output(output)
        counts_name = opened.definition.counts_file
        for number in numbers:
            recorded = opened.published_files(number)
            chosen = fmt.value if fmt is not None else (
                recorded[0].format if recorded else "csv")
            digests = {f.name: f.sha256 for f in recorded if f.format == chosen}
            files = render_release(opened.release(number), chosen, counts_name)
            for name, data in files.items():
                digest = sha256(data)
                if name in digests and digests[name] != digest:
                    mismatches.append(
                        f"release {number}: {name} renders differently from the file "
                        "recorded at publication (SHA-256 differs); not written")
                    continue
                target = folder / name
                status = _write(target, data, overwrite)
                done.append({"release": number, "file": str(target), "sha256": digest,
                             "status": status, "recorded": name in digests})
    if as_json:
        print_json(done)
    else:
        for item in done:
            check = ("matches the recorded checksum" if item["recorded"]
                     else "no checksum recorded for this format")
            console.print(f"{item['status']} {item['file']} ({check})", markup=False,
                          soft_wrap=True)
    for message in mismatches:
        error_console.print(f"violation: {message}", markup=False, soft_wrap=True)
    if mismatches:
        raise typer.Exit(1)


def _write(target: Path, data: bytes, overwrite: bool) -> str:
    from republish.release_files import write_file_durably

    if os.path.lexists(target):
        if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
            return "unchanged"
        if not overwrite:
            raise InputError(
                f"{target} exists with other content; pass --overwrite to replace it (the "
                "file, never the target of a symbolic link), or export to another folder."
            )
    write_file_durably(target, data)
    return "wrote"


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    return f"1 to {numbers[-1]}" if numbers == list(range(1, numbers[-1] + 1)) else str(numbers)


__all__ = ["export"]
