"""The release store: one SQLite file per published dataset.

The store holds the schema, ``m``, the principle, a store revision and every release:
publishable rows ``T*(n)``, counterfeit counts ``R(n)``, the private assignment
(identifier, group, raw values), each group's signature, the deferred identifiers,
parameters, solve certificate, statistics, wall time and a checksum. It also keeps the
publisher's private state (per identifier ever published: last release, last signature,
raw values; see :mod:`republish.state`).

Layout: table ``meta`` (key/value), table ``releases`` (one row per release; the bulk
tables are Parquet blobs, so that a 200k-row release is written in well under a second)
and table ``state`` (one row: the private state after the last release). A release's
checksum is the SHA-256 of its header fields and blobs; :meth:`ReleaseStore.checksum_problems`
recomputes it.

Writes are all-or-nothing: :meth:`ReleaseStore.append_release` writes one release and the
new state in one transaction, only for a release whose verification report passed, and
refuses (with a :class:`StoreError`, leaving the file unchanged) a release built on another
schema or ``m``, identifiers whose values changed since last published (value changes need
the m-Distinct principle), previously published rows that lost their signature, or a
store modified since it was read (another process released in between).
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import RepublishError, StoreError
from republish.identifiers import (
    IdentifierKind,
    infer_identifier_kind,
    validate_identifier_kind,
)
from republish.principles.report import VerificationReport
from republish.release import GROUP, Release
from republish.schema import Schema
from republish.state import PublisherState, changed_rows, check_against_state, group_signatures

__all__ = ["HISTORY_FIELDS", "ReleaseStore"]

FORMAT = "republish-store/1"
#: Keys of every ``history --json`` object (design Contracts).
HISTORY_FIELDS = (
    "release", "rows", "new", "deleted", "reinserted", "counterfeits", "deferred", "groups",
    "mean_perimeter", "wall_time_s", "status", "objective", "bound", "gap",
)
#: Header columns of ``releases`` covered by the checksum, then the blob columns.
_HEADER = ("model", "parameters", "certificate", "stats", "metadata", "deferred")
_BLOBS = ("published", "counterfeits", "assignment", "signatures")

_TABLES = """
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


def _to_parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _from_parquet(blob: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(blob))


def _checksum(header: Mapping[str, Any], blobs: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for name in _HEADER:
        hasher.update(f"{name}\x00{header[name]}\x00".encode())
    for name in _BLOBS:
        hasher.update(f"{name}\x00{len(blobs[name])}\x00".encode())
        hasher.update(blobs[name])
    return hasher.hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class ReleaseStore:
    """An open store file; see the module docstring.

    Use :meth:`init` to create one and :meth:`open` to open one. The revision read at
    opening (or at the last write) must still be the file's revision when writing.
    """

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._connection = connection
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise StoreError(f"{path}: not a republish store (format {meta.get('format')!r}).")
        self.schema = Schema.from_dict(json.loads(meta["schema"]))
        self.m = int(meta["m"])
        self.principle = meta["principle"]
        #: Principle parameters besides m (eps-inclusion: lambda, tau, categories, extras).
        self.options: dict[str, Any] = json.loads(meta.get("options", "{}"))
        self.revision = int(meta["revision"])
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
        cls, path: str | Path, schema: Schema, m: int, principle: str = "m-invariance",
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
        if isinstance(m, bool) or not isinstance(m, int) or m < 2:
            raise StoreError(f"m must be an integer of at least 2, got {m!r}.")
        if path.exists():
            raise StoreError(f"{path} already exists; choose another path or remove it first.")
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.executescript("BEGIN;" + _TABLES + "COMMIT;")
            meta = {
                "format": FORMAT,
                "schema": json.dumps(schema.to_dict(), sort_keys=True),
                "schema_fingerprint": schema.fingerprint(),
                "m": str(m),
                "principle": principle,
                "options": json.dumps(dict(options or {}), sort_keys=True),
                "revision": "0",
                "created": datetime.now(UTC).isoformat(),
            }
            if identifier_kind is not None:
                meta["identifier_kind"] = identifier_kind
            connection.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
        except sqlite3.Error as exc:
            connection.close()
            path.unlink(missing_ok=True)
            raise StoreError(f"{path}: cannot create the store ({exc}).") from exc
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
        except (sqlite3.DatabaseError, KeyError, RepublishError) as exc:
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
            rows = _from_parquet(blob).set_index(self.schema.identifier)
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

    def history(self) -> list[dict[str, Any]]:
        """The statistics of every release (the ``history --json`` objects)."""
        rows = self._connection.execute(
            "SELECT number, stats FROM releases ORDER BY number"
        ).fetchall()
        return [{"release": number, **json.loads(stats)} for number, stats in rows]

    def _row(self, number: int) -> dict[str, Any]:
        columns = ("number", *_HEADER, *_BLOBS, "checksum")
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
            if _checksum(row, row) != row["checksum"]:
                problems.append(
                    f"release {number}: stored content does not match the release checksum "
                    "(the store was modified outside republish)"
                )
        return problems

    # -- writing --------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def _refuse_bad_release(
        self, release: Release, report: VerificationReport | None, state: PublisherState
    ) -> None:
        if report is None or not report.ok:
            why = "no verification report" if report is None else report.summary()
            raise StoreError(
                f"release {release.number} is not written: it has not passed verification "
                f"({why})."
            )
        self.check_schema(release.schema)
        parameters = dict(release.metadata.get("parameters", {}))
        if parameters.get("m", self.m) != self.m:
            raise StoreError(
                f"release {release.number} was computed with m={parameters['m']}, the store "
                f"keeps m={self.m}."
            )
        if release.number != state.last_release + 1:
            raise StoreError(
                f"release {release.number} does not follow the store's last release "
                f"{state.last_release}."
            )
        positions = state.positions(release.assignment[self.schema.identifier])
        # m-Distinct allows value changes (checked against the transition model below).
        changed = (changed_rows(state, release.assignment, positions)
                   if self.principle != "m-distinct" else release.assignment.iloc[:0])
        if len(changed):
            ident = self.schema.identifier
            labels = [f"{i} ({c})" for i, c in zip(changed[ident][:5], changed["changed"][:5],
                                                  strict=True)]
            raise StoreError(
                f"{len(changed)} identifier(s) changed QI or sensitive values since last "
                f"published: {'; '.join(labels)}. Value changes need the m-Distinct principle."
            )
        if self.principle == "eps-inclusion":
            # Signatures may grow (Definition 8) instead of staying equal.
            from republish.principles.eps_inclusion import (
                LastSignatures,
                check_signature_inclusion,
            )

            invariance = check_signature_inclusion(release, LastSignatures.from_state(state))
        elif self.principle == "m-distinct":
            # Definition 15 against the state (Li & Zhou): legal update instances.
            from republish.principles.m_distinct import check_m_distinct_against_state
            from republish.transitions import TransitionModel

            invariance = check_m_distinct_against_state(
                release, state, TransitionModel.from_dict(self.options["transitions"]),
                bool(self.options.get("strict", False)), positions,
            )
        else:
            invariance = check_against_state(release, state, positions)
        if not invariance.ok:
            raise StoreError(f"release {release.number} is not written: {invariance.summary()}")

    def append_release(
        self,
        release: Release,
        report: VerificationReport | None,
        stats: Mapping[str, Any] | None = None,
        certificate: Mapping[str, Any] | None = None,
    ) -> None:
        """Write ``release`` (verified: ``report.ok``) and the new state in one transaction.

        ``stats`` are the ``history`` numbers (missing ones are computed or ``None``);
        ``certificate`` the solve certificate as a dict.

        Raises
        ------
        StoreError
            (store unchanged) when the release is unverified or conflicts with the store,
            or when the store was modified since it was read.
        """
        if self.current_revision() != self.revision:
            raise StoreError(
                f"{self.path} was modified since it was read (revision {self.revision}, now "
                f"{self.current_revision()}): another process released in between. Open the "
                "store again and recompute the release."
            )
        state = self.state()
        self._refuse_bad_release(release, report, state)
        certificate = dict(certificate or release.metadata.get("certificate", {}))
        summary: dict[str, Any] = {key: None for key in HISTORY_FIELDS if key != "release"}
        summary.update({
            "counterfeits": release.counterfeit_total(),
            "groups": release.group_count(),
            "deferred": len(release.deferred),
            **{key: certificate.get(key) for key in ("status", "objective", "bound", "gap")},
        })
        summary.update({k: v for k, v in (stats or {}).items() if k != "release"})
        signatures = group_signatures(release)
        next_state = state.advance(
            release, [signatures[g] for g in release.assignment[GROUP].tolist()]
        )
        header = {
            "model": release.model,
            "parameters": _dumps(dict(release.metadata.get("parameters", {}))),
            "certificate": _dumps(certificate),
            "stats": _dumps(summary),
            "metadata": _dumps({k: v for k, v in release.metadata.items()
                                if k != "certificate"}),
            "deferred": json.dumps(list(release.deferred)),
        }
        blobs = {
            "published": _to_parquet(release.published),
            "counterfeits": _to_parquet(release.counterfeits),
            "assignment": _to_parquet(release.assignment),
            "signatures": _to_parquet(pd.DataFrame({
                GROUP: np.asarray(list(signatures), dtype=np.int64),
                "signature": [json.dumps(sorted(s)) for s in signatures.values()],
            })),
        }
        with self._transaction() as connection:
            if self.current_revision() != self.revision:
                raise StoreError(f"{self.path} was modified by another process; recompute.")
            self._write_release(connection, release.number, summary, header, blobs)
            self._write_state(connection, next_state)
            if next_state.identifier_kind is not None:
                connection.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('identifier_kind', ?)",
                    (next_state.identifier_kind,),
                )
            connection.execute(
                "UPDATE meta SET value = ? WHERE key = 'revision'", (str(self.revision + 1),)
            )
        self.revision += 1
        self.identifier_kind = next_state.identifier_kind
        self._state, self._state_revision = next_state, self.revision

    def _write_release(
        self, connection: sqlite3.Connection, number: int, summary: Mapping[str, Any],
        header: Mapping[str, Any], blobs: Mapping[str, bytes],
    ) -> None:
        columns = ("number", "created", "wall_time_s", *_HEADER, *_BLOBS, "checksum")
        values = (
            number, datetime.now(UTC).isoformat(), summary.get("wall_time_s"),
            *(header[name] for name in _HEADER), *(blobs[name] for name in _BLOBS),
            _checksum(header, blobs),
        )
        connection.execute(
            f"INSERT INTO releases ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})",
            values,
        )

    def _write_state(self, connection: sqlite3.Connection, state: PublisherState) -> None:
        rows = state.rows.reset_index()
        connection.execute(
            "INSERT OR REPLACE INTO state VALUES (1, ?, ?, ?, ?)",
            (state.last_release, _to_parquet(rows),
             json.dumps([sorted(s) for s in state.signatures]), json.dumps(list(state.deferred))),
        )
