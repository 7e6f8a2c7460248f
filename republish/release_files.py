"""The published files of a release: their exact bytes, durable writes, reading them back.

:mod:`republish.release` builds a release in memory; this module turns it into files and
back: ``release-<n>`` (``T*(n)``) and ``counterfeits-<n>`` (``R(n)``) as CSV neutralized
against formula injection or as canonical Parquet (:func:`render_release`), each written
whole or not at all (:func:`write_file_durably`), and read back (:func:`read_published`).
It is separate because serialization is its own concern (byte-exact output, caches of
Parquet bytes, file-system durability) that the release model and the solvers do not
need. Every name here is also importable from :mod:`republish.release`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import secrets
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from republish.errors import InputError, format_rows
from republish.excerpts import excerpts

if TYPE_CHECKING:
    from republish.release import Release

# A published CSV is neutralized against formula injection (OWASP, "CSV Injection"): a
# text cell whose first character would make a spreadsheet evaluate it is written with a
# leading apostrophe. The mapping is exact and documented in docs/formats.md:
#
#   written = "'" + value   when value starts with one of FORMULA_TRIGGERS and is not a
#                           plain decimal number (-12, -0.5);
#   written = value         otherwise.
#
# Values that start with the apostrophe itself are escaped too, so reading undoes it
# exactly: remove the leading apostrophe of a cell that starts with "'" followed by one of
# FORMULA_TRIGGERS (:func:`restore_cell`; :func:`read_published` does it). Parquet files
# hold the values themselves (no spreadsheet evaluates them).

#: First characters that make a spreadsheet treat a cell as a formula (OWASP: = + - @ tab
#: carriage return; ASVS adds NUL; full-width forms some spreadsheets also accept), and
#: the escape character itself.
FORMULA_TRIGGERS = frozenset("=+-@\t\r\x00\uff1d\uff0b\uff0d\uff20'")
ESCAPE = "'"
_PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
FORMATS = ("csv", "parquet")


def neutralize_cell(value: str) -> str:
    """The CSV text of ``value``: escaped with ``'`` when a spreadsheet would run it."""
    if value and value[0] in FORMULA_TRIGGERS and not _PLAIN_NUMBER.fullmatch(value):
        return ESCAPE + value
    return value


def restore_cell(value: str) -> str:
    """Inverse of :func:`neutralize_cell` on what it writes (other text is left alone)."""
    if len(value) > 1 and value[0] == ESCAPE and neutralize_cell(value[1:]) == value:
        return value[1:]
    return value


def _map_text(frame: pd.DataFrame, function: Any) -> pd.DataFrame:
    """``function`` applied to every text cell and column name (distinct values once)."""
    out = frame.copy()
    out.columns = [function(c) if isinstance(c, str) else c for c in out.columns]
    for position in range(out.shape[1]):
        series = out.iloc[:, position]
        if series.dtype != object and not pd.api.types.is_string_dtype(series):
            continue
        codes, uniques = pd.factorize(series)
        mapped = np.asarray([function(v) if isinstance(v, str) else v for v in uniques],
                            dtype=object)
        values = series.to_numpy(dtype=object).copy()
        present = codes >= 0
        values[present] = mapped[codes[present]]
        out.iloc[:, position] = values
    return out


def neutralize(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell passed through :func:`neutralize_cell`."""
    return _map_text(frame, neutralize_cell)


def restore(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell passed through :func:`restore_cell`."""
    return _map_text(frame, restore_cell)


#: The Parquet bytes of the last few frames serialized (by identity, while they live):
#: a release's published rows are serialized once for its files and its store blob.
#: Release frames are never changed in place once built.
_PARQUET: dict[int, tuple[weakref.ref[pd.DataFrame], bytes]] = {}


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """``frame.to_parquet(index=False)`` as bytes; the same frame object is serialized once."""
    hit = _PARQUET.get(id(frame))
    if hit is not None and hit[0]() is frame:
        return hit[1]
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    data = buffer.getvalue()
    _remember_parquet(frame, data)
    return data


def _remember_parquet(frame: pd.DataFrame, data: bytes) -> None:
    """Keep ``data`` (``frame.to_parquet(index=False)``) for :func:`parquet_bytes`."""
    for key in [k for k, (ref, _) in _PARQUET.items() if ref() is None]:
        del _PARQUET[key]
    while len(_PARQUET) >= 4:
        del _PARQUET[next(iter(_PARQUET))]
    _PARQUET[id(frame)] = (weakref.ref(frame), data)


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the store keeps it (a Parquet round trip): the published files are
    rendered from this form, so that a release rendered now and the same release read back
    from the store give the same bytes."""
    return pd.read_parquet(io.BytesIO(parquet_bytes(frame)))


def frame_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """The exact bytes of ``frame`` as a published file (deterministic for given data)."""
    if fmt == "csv":
        text = neutralize(frame).to_csv(index=False, lineterminator="\n")
        return text.encode("utf-8")
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="snappy")
        return bytes(sink.getvalue().to_pybytes())
    raise InputError(f"unknown output format {fmt!r}; use one of {', '.join(FORMATS)}.")


def release_file_names(number: int, fmt: str, counts_name: str = "counterfeits") -> list[str]:
    """``release-<n>.<fmt>`` and ``<counts_name>-<n>.<fmt>``."""
    return [f"release-{number}.{fmt}", f"{counts_name}-{number}.{fmt}"]


def render_release(
    release: Release, fmt: str = "csv", counts_name: str = "counterfeits"
) -> dict[str, bytes]:
    """The published files of ``release`` by name (``T*(n)``, then ``R(n)`` or ``S(n)``),
    as exact bytes: the same release always renders to the same bytes, whether it was
    just computed or read back from a store (``republish export``)."""
    from republish.release import COUNT, GROUP  # republish.release imports this module

    columns = release.schema.published_columns
    frame = release.published
    published = frame if list(frame.columns) == list(columns) else frame[columns]
    counts = release.counterfeits[[GROUP, COUNT]]
    names = release_file_names(release.number, fmt, counts_name)
    if fmt == "parquet":
        return {names[0]: canonical_parquet(published), names[1]: canonical_parquet(counts)}
    return {names[0]: frame_bytes(_canonical(published), fmt),
            names[1]: frame_bytes(_canonical(counts), fmt)}


def canonical_parquet(frame: pd.DataFrame) -> bytes:
    """``frame_bytes(_canonical(frame), "parquet")`` without the pandas round trip.

    The canonical form is the store's Parquet blob read back. For a frame of int64,
    float64 and text columns, that blob read back is the Arrow table ``to_parquet``
    converted the frame to (the same types, values and nulls), so one conversion serves
    both: the blob (``frame.to_parquet(index=False)``, as pandas writes it; kept for the
    store, :func:`parquet_bytes`) and the file (the table without its schema metadata,
    as :func:`frame_bytes` writes it). No pandas copy of ``T*(n)`` (10M rows of Python
    objects at 10M rows), one Arrow copy instead of three. Other frames take the round
    trip. ``tests/test_memory_scale.py`` checks both bytes against the pandas forms.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from republish.arrow_memory import release_arrow_memory

    names = list(frame.columns)
    if not frame.attrs and all(isinstance(n, str) for n in names) and len(set(names)) == len(
            names):
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if all(field.type in _round_trip_types() for field in table.schema):
            _remember_parquet(frame, _parquet_write(table))
            data = _parquet_write(table.replace_schema_metadata(None))
            del table
            release_arrow_memory()
            return data
        del table
    read = pq.read_table(io.BytesIO(parquet_bytes(frame))).replace_schema_metadata(None)
    data = _parquet_write(read.combine_chunks())
    del read
    release_arrow_memory()
    return data


def _parquet_write(table: Any) -> bytes:
    """The Parquet bytes of the Arrow ``table`` (snappy), as pandas and :func:`frame_bytes`
    write them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return bytes(sink.getvalue().to_pybytes())


def _round_trip_types() -> tuple[Any, ...]:
    import pyarrow as pa

    return (pa.int64(), pa.float64(), pa.string())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable (no-op where unsupported)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def write_file_durably(path: Path, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file in the same folder,
    fsynced, then renamed over ``path`` (a symbolic link at ``path`` is replaced, never
    followed), then the folder fsynced. ``mode`` (less the umask) is the new file's: by
    default that of any new file (mkstemp would make it private); ``0o600`` for a private
    file."""
    path = Path(path)
    temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)


def write_release(
    release: Release,
    directory: str | Path,
    fmt: Literal["csv", "parquet"] = "csv",
    counts_name: str = "counterfeits",
) -> list[Path]:
    """Write ``release-<n>`` (``T*(n)``) and ``<counts_name>-<n>`` (``R(n)``) into
    ``directory`` (see :func:`render_release`; each file written whole or not at all).

    Only the publishable columns are written; the caller must have verified the release.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in render_release(release, fmt, counts_name).items():
        write_file_durably(directory / name, data)
        paths.append(directory / name)
    return paths


def read_published(path: str | Path) -> pd.DataFrame:
    """Read a published table or counterfeit table (CSV or Parquet) as strings/ints.

    CSV cells neutralized against formula injection are restored (:func:`restore_cell`).
    """
    from republish.release import COUNT, GROUP  # republish.release imports this module
    from republish.table_reading import _read_csv, _read_parquet

    path = Path(path)
    if not path.is_file():
        raise InputError(f"published file {str(path)!r} not found.")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = _read_parquet(path)
        else:
            frame = restore(_read_csv(path, ",", skip_initial_space=False))
    except InputError as exc:
        raise InputError(f"{path} cannot be read as a published table: {exc}") from exc
    for column in (GROUP, COUNT):
        if column in frame.columns:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            bad = numbers.isna().to_numpy() | (numbers != np.round(numbers)).to_numpy()
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                raise InputError(
                    f"{path}: column {column!r} has non-integer value(s) "
                    f"{excerpts(frame[column].iloc[rows[:3]].tolist(), 3)} in row(s) "
                    f"{format_rows(rows)}; a published {column} is a whole number."
                )
            if (numbers.abs() > 2**62).any():
                raise InputError(f"{path}: column {column!r} has numbers too large to be a "
                                 f"{column}.")
            frame[column] = numbers.astype(np.int64)
    return frame
