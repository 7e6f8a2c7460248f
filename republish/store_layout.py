"""The layout of a stored release: the columns of a ``releases`` row, its checksum, the
store format versions, the ``files`` table and the keys of ``history``.

:func:`checksum` is the SHA-256 over a release's header fields (:data:`HEADER`) and
blobs (:data:`BLOBS`), computed when :mod:`republish.store_writing` writes the row and
again when :mod:`republish.store_verify` checks it. Separate from the writing
transactions because the writer, the reader (:mod:`republish.store`) and the verifier all
need this layout, and only the writer needs the rest. Every name here is also importable
from :mod:`republish.store_writing`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BLOBS", "FILES_TABLE", "HEADER", "HISTORY_FIELDS", "STORE_FORMAT", "STORE_FORMATS",
           "PublishedFile", "checksum"]

#: Keys of every ``history --json`` object (design Contracts).
HISTORY_FIELDS = (
    "release", "rows", "new", "deleted", "reinserted", "counterfeits", "deferred", "groups",
    "mean_perimeter", "wall_time_s", "status", "objective", "bound", "gap",
)
#: Header columns of ``releases`` covered by the checksum, then the blob columns.
HEADER = ("model", "parameters", "certificate", "stats", "metadata", "deferred")
BLOBS = ("published", "counterfeits", "assignment", "signatures")


#: The store format written (format 1, the whole state in one blob, is still read).
STORE_FORMAT = "republish-store/2"
STORE_FORMATS = ("republish-store/1", STORE_FORMAT)

#: The published files of every release (added to older stores at their next write).
FILES_TABLE = """
CREATE TABLE IF NOT EXISTS files (
    release INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL,
    sha256 TEXT NOT NULL, size INTEGER NOT NULL, directory TEXT NOT NULL,
    staging TEXT, published INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (release, name));
"""


@dataclass(frozen=True)
class PublishedFile:
    """One published file of a release as the store records it.

    ``sha256`` and ``size`` are those of the exact bytes written; ``directory`` is where
    ``release`` published it; ``staging`` the private folder (beside the store) the file
    was written to before the release was recorded; ``published`` whether the file is
    known to be in place in ``directory``.
    """

    release: int
    name: str
    format: str
    sha256: str
    size: int
    directory: str
    staging: str | None = None
    published: bool = False


def checksum(header: Mapping[str, Any], blobs: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for name in HEADER:
        hasher.update(f"{name}\x00{header[name]}\x00".encode())
    for name in BLOBS:
        hasher.update(f"{name}\x00{len(blobs[name])}\x00".encode())
        hasher.update(blobs[name])
    return hasher.hexdigest()
