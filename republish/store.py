"""The release store: one SQLite file per published dataset.

The store holds the schema, ``m``, the principle, a store revision and every release:
publishable rows ``T*(n)``, counterfeit counts ``R(n)``, the private assignment
(identifier, group, raw values), each group's signature, the deferred identifiers,
parameters, solve certificate, statistics, wall time and a checksum. It also keeps the
publisher's private state (per identifier ever published: last release, last signature,
raw values; see :mod:`republish.state`).

Layout: table ``meta`` (key/value), table ``releases`` (one row per release; the bulk
tables are Parquet blobs, so that a 200k-row release is written in well under a second),
table ``state`` (one row: the private state after the last release) and table ``files``
(the published files of each release: name, format, SHA-256, size, folder, and whether
they are known to be in place; added to an older store at its next release). A release's
checksum is the SHA-256 of its header fields and blobs; :meth:`ReleaseStore.checksum_problems`
recomputes it.

Writes are all-or-nothing (:mod:`republish.store_writing`): one release and the new state
in one transaction, only for a release whose verification report passed; the store
refuses (with a :class:`StoreError`, leaving the file unchanged) a release built on another
schema or ``m``, identifiers whose values changed since last published (value changes need
the m-Distinct principle), previously published rows that lost their signature, or a
store modified since it was read (another process released in between).
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from republish.arrow_memory import release_arrow_memory
from republish.errors import ParameterError, RepublishError, StoreError
from republish.identifiers import (
    IdentifierKind,
    infer_identifier_kind,
    validate_identifier_kind,
)
from republish.parameters import validate_m
from republish.principles.catalog import Principle, PrincipleOptions, principle
from republish.release import Release
from republish.schema import Schema
from republish.state import PublisherState
from republish.state_columns import STATE_COLUMNS_TABLE, read_state_rows
from republish.store_layout import (
    BLOBS,
    FILES_TABLE,
    HEADER,
    HISTORY_FIELDS,
    STORE_FORMAT,
    STORE_FORMATS,
    PublishedFile,
    checksum,
)
from republish.store_writing import StepOutcome, StoreWriting

__all__ = ["HISTORY_FIELDS", "PublishedFile", "ReleaseStore", "StepOutcome"]



FORMAT = STORE_FORMAT
_TABLES = STATE_COLUMNS_TABLE + """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE releases (
    number INTEGER PRIMARY KEY, created TEXT NOT NULL, wall_time_s REAL,
    model TEXT NOT NULL, parameters TEXT NOT NULL, certificate TEXT NOT NULL,
    stats TEXT NOT NULL, metadata TEXT NOT NULL, deferred TEXT NOT NULL,
    published BLOB NOT NULL, counterfeits BLOB NOT NULL, assignment BLOB NOT NULL,
    signatures BLOB NOT NULL, checksum TEXT NOT NULL);
CREATE TABLE state (
    id INTEGER PRIMARY KEY CHECK (id = 1), last_release INTEGER NOT NULL,
    rows BLOB NOT NULL, signatures TEXT NOT NULL, deferred TEXT NOT NULL);
"""


def _from_parquet(blob: bytes) -> pd.DataFrame:
    frame = pd.read_parquet(io.BytesIO(blob))
    release_arrow_memory()  # the Arrow copy is freed: give its pages back
    return frame


class ReleaseStore(StoreWriting):
    """An open store file; see the module docstring.

    Use :meth:`init` to create one and :meth:`open` to open one. The revision read at
    opening (or at the last write) must still be the file's revision when writing.
    """

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._connection = connection
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            raise StoreError(f"{path}: not a republish store (it has no 'meta' table).")
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") not in STORE_FORMATS:
            raise StoreError(f"{path}: not a republish store (format {meta.get('format')!r}).")
        lost = sorted({"releases", "state"} - tables)
        if lost:
            raise StoreError(
                f"{path}: the store is damaged: table(s) {lost} are missing. Restore it from a "
                "backup; nothing was changed."
            )
        self.schema = Schema.from_dict(json.loads(meta["schema"]))
        self.m = int(meta["m"])
        self.principle = meta["principle"]
        #: Principle parameters besides m (eps-inclusion: lambda, tau, categories, extras).
        self.options: dict[str, Any] = json.loads(meta.get("options", "{}"))
        #: The principle's verification half (:mod:`republish.principles.catalog`).
        self.definition: Principle = principle(self.principle)
        self._principle_options: PrincipleOptions | None = None
        self.revision = int(meta["revision"])
        #: ``republish-store/1`` (whole state in one blob) moves to 2 at the next release.
        self.format = str(meta["format"])
        #: ``text`` or ``integer`` (:mod:`republish.identifiers`); ``None`` until ``init``
        #: or the first release fixes it.
        self.identifier_kind: IdentifierKind | None = (
            validate_identifier_kind(meta["identifier_kind"]) if "identifier_kind" in meta
            else None
        )
        self._state: PublisherState | None = None
        self._state_revision = -1

    # -- creation and opening -------------------------------------------------------------

    @classmethod
    def init(
        cls, path: str | Path, schema: Schema, m: int, principle_name: str = "m-invariance",
        options: Mapping[str, Any] | None = None,
        identifier_kind: IdentifierKind | None = None,
    ) -> ReleaseStore:
        """Create a new, empty store; refuses to overwrite an existing file.

        ``options`` (JSON-able) are the principle's other parameters, kept in the store.
        ``identifier_kind`` (``text`` or ``integer``) fixes how identifiers are compared
        across releases; ``None`` lets the first release infer it.
        """
        path = Path(path)
        if identifier_kind is not None:
            identifier_kind = validate_identifier_kind(identifier_kind)
        options = dict(options or {})
        try:
            m = validate_m(m)
            if options.pop("m", m) != m:
                raise ParameterError(f"the options' m differs from m={m}.")
            principle(principle_name).options_from_dict({**options, "m": m})
        except ParameterError as exc:
            raise StoreError(str(exc)) from exc
        if path.exists():
            raise StoreError(f"{path} already exists; choose another path or remove it first.")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"{path}: cannot create the store ({exc}); check that its folder can be "
                "created and written."
            ) from exc
        try:
            connection.executescript("BEGIN;" + _TABLES + FILES_TABLE + "COMMIT;")
            meta = {
                "format": FORMAT,
                "schema": json.dumps(schema.to_dict(), sort_keys=True),
                "schema_fingerprint": schema.fingerprint(),
                "m": str(m),
                "principle": principle_name,
                "options": json.dumps(options, sort_keys=True),
                "revision": "0",
                "created": datetime.now(UTC).isoformat(),
            }
            if identifier_kind is not None:
                meta["identifier_kind"] = identifier_kind
            connection.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
        except BaseException as exc:
            connection.close()
            path.unlink(missing_ok=True)
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{path}: cannot create the store ({exc}).") from exc
            raise
        return cls(path, connection)

    @classmethod
    def open(cls, path: str | Path) -> ReleaseStore:
        """Open an existing store."""
        path = Path(path)
        if not path.is_file():
            raise StoreError(
                f"store {str(path)!r} not found; create it with 'republish init --store "
                f"{path} --schema schema.toml --m M'."
            )
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            return cls(path, connection)
        except (sqlite3.DatabaseError, KeyError, ValueError, TypeError, RepublishError) as exc:
            connection.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"{path}: not a readable republish store ({exc}).") from exc

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> ReleaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading --------------------------------------------------------------------------

    @property
    def principle_options(self) -> PrincipleOptions:
        """The principle's options object (``m`` and the stored options)."""
        if self._principle_options is None:
            self._principle_options = self.definition.options_from_dict(
                {**self.options, "m": self.m})
        return self._principle_options

    def current_revision(self) -> int:
        """The revision in the file now (differs from :attr:`revision` after another write)."""
        row = self._connection.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        return int(row[0])

    @property
    def last_release(self) -> int:
        row = self._connection.execute("SELECT MAX(number) FROM releases").fetchone()
        return int(row[0]) if row[0] is not None else 0

    def release_numbers(self) -> list[int]:
        return [r[0] for r in self._connection.execute(
            "SELECT number FROM releases ORDER BY number")]

    def check_schema(self, schema: Schema) -> None:
        """Refuse a schema that differs from the store's."""
        if schema.fingerprint() != self.schema.fingerprint():
            ours, theirs = self.schema.to_dict(), schema.to_dict()
            differing = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
            raise StoreError(
                f"the table's schema differs from the store's (in {differing}); a store keeps "
                "one schema for its whole history. Use the store's schema or a new store."
            )

    def state(self) -> PublisherState:
        """The publisher's private state after the last release."""
        if self._state is not None and self._state_revision == self.revision:
            return self._state
        row = self._connection.execute(
            "SELECT last_release, rows, signatures, deferred FROM state WHERE id = 1"
        ).fetchone()
        if row is None:
            state = PublisherState.empty(self.schema, self.m, self.identifier_kind)
        else:
            last, blob, signatures, deferred = row
            rows = self._state_rows(int(last), blob)
            if self.identifier_kind is None:
                # Stores written before identifier kinds: the ids published so far tell.
                self.identifier_kind = infer_identifier_kind(
                    pd.Series(rows.index.astype(str), dtype=object))
            state = PublisherState(
                schema=self.schema, m=self.m, last_release=int(last), rows=rows,
                signatures=tuple(frozenset(s) for s in json.loads(signatures)),
                deferred=tuple(json.loads(deferred)),
                identifier_kind=self.identifier_kind,
            )
        self._state, self._state_revision = state, self.revision
        return state

    def _state_rows(self, last: int, blob: bytes) -> pd.DataFrame:
        """The state's rows: format 1 keeps them in ``blob``; format 2 in ``state_columns``
        and the last release's assignment (:mod:`republish.state_columns`)."""
        if self.format == "republish-store/1":
            return _from_parquet(blob).set_index(self.schema.identifier)
        found = self._connection.execute(
            "SELECT assignment FROM releases WHERE number = ?", (last,)).fetchone()
        try:
            return read_state_rows(self._connection, self.schema, last,
                                   None if found is None else found[0])
        except (KeyError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: the store is damaged: the private state cannot be "
                             f"read ({exc}). Restore it from a backup.") from exc

    def history(self) -> list[dict[str, Any]]:
        """The statistics of every release (the ``history --json`` objects)."""
        rows = self._connection.execute(
            "SELECT number, stats FROM releases ORDER BY number"
        ).fetchall()
        return [{"release": number, **json.loads(stats)} for number, stats in rows]

    def _row(self, number: int) -> dict[str, Any]:
        columns = ("number", *HEADER, *BLOBS, "checksum")
        row = self._connection.execute(
            f"SELECT {', '.join(columns)} FROM releases WHERE number = ?", (number,)
        ).fetchone()
        if row is None:
            raise StoreError(f"the store has no release {number}.")
        return dict(zip(columns, row, strict=True))

    def release(self, number: int) -> Release:
        """Release ``number`` as stored (published rows in their published order)."""
        row = self._row(number)
        return Release(
            number=number,
            schema=self.schema,
            published=_from_parquet(row["published"]),
            counterfeits=_from_parquet(row["counterfeits"]),
            assignment=_from_parquet(row["assignment"]),
            deferred=tuple(json.loads(row["deferred"])),
            model=row["model"],
            metadata=json.loads(row["metadata"]),
        )

    def releases(self) -> list[Release]:
        """Every stored release, in publication order."""
        return [self.release(n) for n in self.release_numbers()]

    def checksum_problems(self) -> list[str]:
        """Releases whose stored content no longer matches their checksum."""
        problems = []
        for number in self.release_numbers():
            row = self._row(number)
            if checksum(row, row) != row["checksum"]:
                problems.append(
                    f"release {number}: stored content does not match the release checksum "
                    "(the store was modified outside republish)"
                )
        return problems

    # -- writing --------------------------------------------------------------------------
