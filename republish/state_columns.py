"""The publisher's private state as columnar blobs in the release store (store format 2).

The state after release ``n`` (:class:`republish.state.PublisherState`) is, row for row,
the rows kept from the state before (identifiers not published by release ``n``: deleted,
or absent for longer) followed by the rows release ``n`` published, in the order of its
assignment (:meth:`PublisherState.advance`). The second part is already in the store:
release ``n``'s assignment blob holds their identifiers and raw values. So the store keeps

* ``kept``: a Parquet blob of the kept rows (identifier, raw values, ``last_release``,
  ``signature``), which holds only the identifiers absent from the last release;
* ``signatures``: a Parquet blob of one int column, the signature code of every row of
  release ``n``'s assignment (a few distinct values, a few bytes per thousand rows);

in table ``state_columns``, and rebuilds the state from them and the assignment blob. Writing
a release no longer writes every published row twice, and reading the state reads only the
columns it needs from the assignment blob (Parquet's column projection).

A state that is not ``kept`` followed by the release's rows (a state made elsewhere) is
kept whole in ``kept`` with an empty ``signatures``: always correct, only larger.
Stores of format 1 (the whole state as one blob in table ``state``) are read as before and
move to format 2 in the transaction of their next release.
"""

from __future__ import annotations

import io
import sqlite3

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from republish.arrow_memory import release_arrow_memory
from republish.release import Release
from republish.schema import Schema
from republish.state import LAST_RELEASE, SIGNATURE, stack_rows

__all__ = ["STATE_COLUMNS_TABLE", "read_state_rows", "state_blobs", "write_state_columns"]

STATE_COLUMNS_TABLE = """
CREATE TABLE IF NOT EXISTS state_columns (name TEXT PRIMARY KEY, data BLOB NOT NULL);
"""
KEPT = "kept"
TAIL_SIGNATURES = "signatures"


def _parquet(frame: pd.DataFrame) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return bytes(sink.getvalue().to_pybytes())


def _read(blob: bytes, columns: list[str] | None = None) -> pd.DataFrame:
    frame = pq.read_table(io.BytesIO(blob), columns=columns).to_pandas()
    release_arrow_memory()  # the Arrow copy is freed: give its pages back
    return frame


def state_blobs(rows: pd.DataFrame, release: Release | None, schema: Schema) -> dict[str, bytes]:
    """The ``state_columns`` blobs of the state ``rows`` after ``release``."""
    tail = 0
    if release is not None:
        ids = release.assignment[schema.identifier].astype(str).to_numpy(dtype=object)
        count = len(ids)
        if 0 < count <= len(rows) and np.array_equal(
                rows.index[len(rows) - count:].to_numpy(dtype=object), ids) and (
                rows[LAST_RELEASE].to_numpy()[len(rows) - count:] == release.number).all():
            tail = count
    kept = rows.iloc[:len(rows) - tail].reset_index()
    codes = pd.DataFrame({SIGNATURE: rows[SIGNATURE].to_numpy(dtype=np.int64)[len(rows) - tail:]})
    return {KEPT: _parquet(kept), TAIL_SIGNATURES: _parquet(codes)}


def write_state_columns(connection: sqlite3.Connection, blobs: dict[str, bytes]) -> None:
    """Replace the state's blobs (inside the caller's transaction)."""
    connection.execute(STATE_COLUMNS_TABLE)
    connection.executemany("INSERT OR REPLACE INTO state_columns VALUES (?, ?)",
                           list(blobs.items()))


def read_state_rows(connection: sqlite3.Connection, schema: Schema, last_release: int,
                    assignment: bytes | None) -> pd.DataFrame:
    """The state's rows (indexed by identifier) from its blobs and ``assignment``, the
    assignment blob of release ``last_release``."""
    blobs = dict(connection.execute("SELECT name, data FROM state_columns").fetchall())
    kept = _read(blobs.pop(KEPT)).set_index(schema.identifier)
    codes = _read(blobs.pop(TAIL_SIGNATURES))[SIGNATURE].to_numpy(dtype=np.int64)
    if not len(codes):
        return kept
    if assignment is None:
        raise KeyError(f"release {last_release} (the state's last rows)")
    columns = [schema.identifier, *schema.qi_names, schema.sensitive]
    read = _read(assignment, columns)
    if len(read) != len(codes):
        raise KeyError(f"release {last_release}: {len(read)} rows, the state expects "
                       f"{len(codes)}")
    # Columns straight into the state (stack_rows: one allocation each), instead of
    # set_index's copy of the release's rows and the concatenation's second copy.
    index = pd.Index(read[schema.identifier].astype(str), name=schema.identifier)
    fresh = {name: read[name].to_numpy() for name in columns[1:]}
    del read
    fresh[LAST_RELEASE] = np.full(len(codes), last_release, dtype=np.int64)
    fresh[SIGNATURE] = codes
    return stack_rows(kept, np.ones(len(kept), dtype=bool), fresh, index, copy=False)
