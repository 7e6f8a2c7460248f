"""Writing to the release store: one transaction per release, refusals that leave the
file unchanged (:class:`republish.store.ReleaseStore` mixes this in).

Two ways in:

* :meth:`StoreWriting.append_step` takes the outcome of a release step computed from the
  store's own state (:func:`republish.solver.release_step.run_release_step` verified it and
  advanced the state; the store checks that it was computed from *this* state at this
  revision and writes it, without verifying or advancing again);
* :meth:`StoreWriting.append_release` takes a release made elsewhere (by hand, replayed):
  the store checks it against its state with the principle's verifier and is the one that
  advances the state.

The layout of what is written (row columns, checksum, format versions, the ``files``
table) is :mod:`republish.store_layout`, whose names are re-exported here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from republish.certificate import Certificate
from republish.errors import StoreError
from republish.identifiers import IdentifierKind
from republish.principles.catalog import Principle, PrincipleOptions
from republish.principles.report import VerificationReport
from republish.release import GROUP, Release
from republish.release_files import parquet_bytes
from republish.schema import Schema
from republish.state import PublisherState, changed_rows, group_signatures
from republish.state_columns import state_blobs, write_state_columns
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

__all__ = ["BLOBS", "FILES_TABLE", "HEADER", "HISTORY_FIELDS", "STORE_FORMAT", "STORE_FORMATS",
           "PublishedFile", "StepOutcome", "StoreWriting", "checksum"]


def to_parquet(frame: pd.DataFrame) -> bytes:
    return parquet_bytes(frame)


def _signature_texts(signatures: list[frozenset[str]]) -> list[str]:
    """``json.dumps(sorted(s))`` of every signature, once per distinct signature."""
    texts: dict[frozenset[str], str] = {}
    return [texts.get(s) or texts.setdefault(s, json.dumps(sorted(s))) for s in signatures]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class StepOutcome(Protocol):
    """What :meth:`ReleaseStore.append_step` needs of a release step's result
    (:class:`republish.solver.release_step.StepResult`; core does not import the solver)."""

    @property
    def release(self) -> Release: ...

    @property
    def report(self) -> VerificationReport: ...

    @property
    def previous(self) -> PublisherState: ...

    @property
    def state(self) -> PublisherState: ...

    @property
    def certificate(self) -> Certificate: ...

    def summary(self) -> dict[str, Any]: ...



class StoreWriting:
    """The writing half of :class:`republish.store.ReleaseStore`."""

    path: Path
    _connection: sqlite3.Connection
    schema: Schema
    m: int
    revision: int
    format: str
    definition: Principle
    identifier_kind: IdentifierKind | None
    _state: PublisherState | None
    _state_revision: int

    @property
    def principle_options(self) -> PrincipleOptions:
        raise NotImplementedError

    def state(self) -> PublisherState:
        raise NotImplementedError

    def current_revision(self) -> int:
        raise NotImplementedError

    def check_schema(self, schema: Schema) -> None:
        raise NotImplementedError

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. On any failure it is rolled back and the original error
        raised: SQLite rolls some failures (a full disk) back by itself, and a second
        rollback must not hide the real error behind "no transaction is active"."""
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                with suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
            raise

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
        changed = (release.assignment.iloc[:0] if self.definition.value_changes
                   else changed_rows(state, release.assignment, positions))
        if len(changed):
            ident = self.schema.identifier
            labels = [f"{i} ({c})" for i, c in zip(changed[ident][:5], changed["changed"][:5],
                                                  strict=True)]
            raise StoreError(
                f"{len(changed)} identifier(s) changed QI or sensitive values since last "
                f"published: {'; '.join(labels)}. Value changes need the m-Distinct principle."
            )
        invariance = self.definition.check_step(release, state, self.principle_options,
                                                positions)
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

        For releases made outside the release step (by hand, or replayed): the store
        checks ``release`` against its own state with the principle's
        :meth:`~republish.principles.catalog.Principle.check_step` and advances the state
        itself. ``stats`` are the ``history`` numbers (missing ones are computed or
        ``None``); ``certificate`` the solve certificate as a dict.

        Raises
        ------
        StoreError
            (store unchanged) when the release is unverified or conflicts with the store,
            or when the store was modified since it was read.
        """
        self._check_revision()
        state = self.state()
        self._refuse_bad_release(release, report, state)
        signatures = group_signatures(release)
        next_state = state.advance(
            release, [signatures[g] for g in release.assignment[GROUP].tolist()]
        )
        self._commit(release, next_state, stats, certificate, signatures)

    def append_step(self, result: StepOutcome,
                    files: Sequence[PublishedFile] = ()) -> None:
        """Write the outcome of a release step computed from this store's own state.

        The step (:func:`republish.solver.release_step.run_release_step`) verified the
        release against ``result.previous`` and advanced it to ``result.state``; when
        ``result.previous`` is the very state this store handed out at its current
        revision, the store writes both without verifying or advancing again. ``files``
        (the release's published files, already written to their staging folder) are
        recorded in the same transaction.

        Raises
        ------
        StoreError
            (store unchanged) when the step was computed from another state, its report
            did not pass, or the store was modified since it was read.
        """
        self._check_revision()
        state = self.state()
        if result.previous is not state:
            raise StoreError(
                f"release {result.release.number} was computed from another state than this "
                f"store's (release {state.last_release}, revision {self.revision}); compute "
                "it from store.state(), or write it with append_release."
            )
        report = result.report
        if not report.ok:
            raise StoreError(
                f"release {result.release.number} is not written: it has not passed "
                f"verification ({report.summary()})."
            )
        self.check_schema(result.release.schema)
        if result.release.number != state.last_release + 1 \
                or result.state.last_release != result.release.number:
            raise StoreError(
                f"release {result.release.number} does not follow the store's last release "
                f"{state.last_release}."
            )
        self._commit(result.release, result.state, result.summary(),
                     result.certificate.to_dict(), None, files)

    def _check_revision(self) -> None:
        if self.current_revision() != self.revision:
            raise StoreError(
                f"{self.path} was modified since it was read (revision {self.revision}, now "
                f"{self.current_revision()}): another process released in between. Open the "
                "store again and recompute the release."
            )

    def _commit(
        self,
        release: Release,
        next_state: PublisherState,
        stats: Mapping[str, Any] | None,
        certificate: Mapping[str, Any] | None,
        signatures: Mapping[Any, frozenset[str]] | None,
        files: Sequence[PublishedFile] = (),
    ) -> None:
        """Write ``release``, ``next_state`` and the records of ``files`` in one
        transaction."""
        certificate = dict(certificate or release.metadata.get("certificate", {}))
        summary: dict[str, Any] = {key: None for key in HISTORY_FIELDS if key != "release"}
        summary.update({
            "counterfeits": release.counterfeit_total(),
            "groups": release.group_count(),
            "deferred": len(release.deferred),
            **{key: certificate.get(key) for key in ("status", "objective", "bound", "gap")},
        })
        summary.update({k: v for k, v in (stats or {}).items() if k != "release"})
        if signatures is None:
            signatures = group_signatures(release)
        header = {
            "model": release.model,
            "parameters": dumps(dict(release.metadata.get("parameters", {}))),
            "certificate": dumps(certificate),
            "stats": dumps(summary),
            "metadata": dumps({k: v for k, v in release.metadata.items()
                                if k != "certificate"}),
            "deferred": json.dumps(list(release.deferred)),
        }
        blobs = {
            "published": to_parquet(release.published),
            "counterfeits": to_parquet(release.counterfeits),
            "assignment": to_parquet(release.assignment),
            "signatures": to_parquet(pd.DataFrame({
                GROUP: np.asarray(list(signatures), dtype=np.int64),
                "signature": _signature_texts(list(signatures.values())),
            })),
        }
        with self._transaction() as connection:
            if self.current_revision() != self.revision:
                raise StoreError(f"{self.path} was modified by another process; recompute.")
            self._write_release(connection, release.number, summary, header, blobs)
            self._write_state(connection, next_state, release)
            if files:
                connection.execute(FILES_TABLE)
                connection.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(release.number, f.name, f.format, f.sha256, f.size, f.directory,
                      f.staging, int(f.published)) for f in files],
                )
            if next_state.identifier_kind is not None:
                connection.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('identifier_kind', ?)",
                    (next_state.identifier_kind,),
                )
            connection.execute(
                "UPDATE meta SET value = ? WHERE key = 'revision'", (str(self.revision + 1),)
            )
        self.revision += 1
        self.format = STORE_FORMAT
        self.identifier_kind = next_state.identifier_kind
        self._state, self._state_revision = next_state, self.revision

    def _write_release(
        self, connection: sqlite3.Connection, number: int, summary: Mapping[str, Any],
        header: Mapping[str, Any], blobs: Mapping[str, bytes],
    ) -> None:
        columns = ("number", "created", "wall_time_s", *HEADER, *BLOBS, "checksum")
        values = (
            number, datetime.now(UTC).isoformat(), summary.get("wall_time_s"),
            *(header[name] for name in HEADER), *(blobs[name] for name in BLOBS),
            checksum(header, blobs),
        )
        connection.execute(
            f"INSERT INTO releases ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})",
            values,
        )

    def _write_state(self, connection: sqlite3.Connection, state: PublisherState,
                     release: Release | None = None) -> None:
        """The state in format 2 (:mod:`republish.state_columns`): its rows as columnar
        blobs that reuse ``release``'s assignment; a format-1 store moves to format 2 here,
        inside the release's transaction."""
        write_state_columns(connection, state_blobs(state.rows, release, self.schema))
        connection.execute(
            "INSERT OR REPLACE INTO state VALUES (1, ?, ?, ?, ?)",
            (state.last_release, b"",
             json.dumps([sorted(s) for s in state.signatures]), json.dumps(list(state.deferred))),
        )
        connection.execute("UPDATE meta SET value = ? WHERE key = 'format'", (STORE_FORMAT,))

    # -- published files ------------------------------------------------------------------

    def _has_files_table(self) -> bool:
        row = self._connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'files'").fetchone()
        return row is not None

    def published_files(self, number: int | None = None) -> list[PublishedFile]:
        """The recorded published files (of release ``number``, or of every release)."""
        if not self._has_files_table():
            return []
        query = ("SELECT release, name, format, sha256, size, directory, staging, published "
                 "FROM files")
        rows = (self._connection.execute(query + " WHERE release = ? ORDER BY name",
                                         (number,))
                if number is not None else
                self._connection.execute(query + " ORDER BY release, name"))
        return [PublishedFile(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6], bool(r[7]))
                for r in rows]

    def unpublished_files(self) -> list[PublishedFile]:
        """Files of recorded releases not yet known to be in place (an interrupted run)."""
        return [f for f in self.published_files() if not f.published]

    def mark_published(self, number: int) -> None:
        """Record that every file of release ``number`` is in place (no revision change:
        the release and the state are not touched)."""
        if not self._has_files_table():
            return
        with self._transaction() as connection:
            connection.execute(
                "UPDATE files SET published = 1 WHERE release = ?", (number,))
