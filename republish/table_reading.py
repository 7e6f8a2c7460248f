"""Reading table files: CSV and Parquet into a DataFrame of text, before any validation.

Every CSV input of a command (the data, the adversary's knowledge) is read by one rule:
the schema's ``delimiter`` when it sets one, otherwise the delimiter detected in the file
among ``,`` ``;`` tab ``|`` (:func:`sniff_delimiter`). A header that reads as one column
holding another of those characters is reported as a wrong delimiter
(:func:`delimiter_hint`), not as a missing column. Large Parquet files are converted in
batches (:data:`CHUNKED_FACTOR`, :data:`CHUNK_ROWS`).

It is separate from :mod:`republish.tables` (validation against a schema, QI encoding)
because getting bytes off the disk into a frame (delimiters, encodings, malformed files,
memory) is a concern of its own, shared by the published-file reader
(:func:`republish.release_files.read_published`). Every name here is also importable
from :mod:`republish.tables`.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.excerpts import excerpt, excerpts

#: Delimiters detected in a CSV file without a schema ``delimiter``, in order of preference.
DELIMITERS = (",", ";", "\t", "|")
#: Bytes and lines of a CSV file read to detect its delimiter.
_SNIFF_BYTES = 64 << 10
_SNIFF_LINES = 50
_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_SCALARS = (str, int, float, bool, type(None), np.generic)
#: ``pd.api.types.infer_dtype(..., skipna=False)`` answers under which every value of an
#: object column is one of :data:`_SCALARS` (``string``: all ``str``; the numeric ones:
#: Python or numpy numbers and bools).
_PLAIN_KINDS = frozenset({"string", "integer", "floating", "mixed-integer-float", "boolean",
                          "empty"})


def _shown(delimiter: str) -> str:
    """A delimiter as it is written in a schema file (tab as ``\\t``)."""
    return "\\t" if delimiter == "\t" else delimiter


def _field_counts(lines: list[str], delimiter: str) -> list[int]:
    try:
        return [len(row) for row in csv.reader(lines, delimiter=delimiter) if row]
    except csv.Error:
        return []


def sniff_delimiter(path: str | Path) -> str:
    """The delimiter of a CSV file among :data:`DELIMITERS`.

    The first lines (up to 64 KiB) are split with each candidate; the candidate giving
    every line the same number of fields, and the most fields, wins (ties: the order of
    :data:`DELIMITERS`). When no candidate is consistent (a quoted line break, a ragged
    sample) :class:`csv.Sniffer` decides among the same candidates; a file with a single
    column reads as ``,``.
    """
    with Path(path).open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    text = head.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if len(head) == _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    lines = [line for line in lines[:_SNIFF_LINES] if line.strip()]
    best, most = ",", 1
    for candidate in DELIMITERS:
        counts = _field_counts(lines, candidate)
        if counts and counts[0] > most and all(c == counts[0] for c in counts):
            best, most = candidate, counts[0]
    if most > 1 or not lines:
        return best
    try:
        sniffed = csv.Sniffer().sniff("\n".join(lines), delimiters="".join(DELIMITERS))
        return str(sniffed.delimiter)
    except csv.Error:
        return ","


def delimiter_hint(columns: list[str], delimiter: str | None = None) -> str | None:
    """``"the file looks ';'-separated; ..."`` when the header ``columns`` read as one
    column name holding another candidate delimiter (a wrong ``delimiter``), else None."""
    if len(columns) != 1:
        return None
    name = str(columns[0])
    for candidate in DELIMITERS:
        if candidate != delimiter and len(name.split(candidate)) > 1:
            shown = _shown(candidate)
            return (f"the file looks {shown!r}-separated (its header reads as one column); "
                    f"set delimiter = \"{shown}\" in the schema, or remove 'delimiter' to "
                    "detect it.")
    return None


def read_frame(source: str | Path | pd.DataFrame, delimiter: str | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file (by extension) or copy a DataFrame, without validation.

    ``delimiter`` ``None`` detects the CSV delimiter (:func:`sniff_delimiter`). CSV cells
    are read as text. A row with more fields than the header (a trailing
    delimiter, a delimiter inside an unquoted value) is refused with its line number, as
    are duplicate column names, a file that is not UTF-8 text and an empty file.

    Raises
    ------
    InputError
        when the file is missing or cannot be read as a table.
    """
    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "not found"
        raise InputError(f"data file {str(path)!r} {what}.")
    if path.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(path)
    return _read_csv(path, delimiter)


def _read_parquet(path: Path) -> pd.DataFrame:
    import pyarrow as pa

    from republish.arrow_memory import release_arrow_memory

    with path.open("rb") as handle:  # permission errors stay permission errors
        try:
            frame = _chunked_parquet(handle) if _too_large(path) else pd.read_parquet(handle)
            release_arrow_memory()  # the Arrow copy is freed: give its pages back
        except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError,
                NotImplementedError, OverflowError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # a real input/output error, not a malformed file
            raise InputError(
                f"{path}: not a readable Parquet file ({excerpt(exc, 120)}); check that it "
                "is complete and really Parquet (a CSV file needs the .csv extension)."
            ) from exc
    names = [str(c) for c in frame.columns]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{path}: column name(s) {excerpts(repeated)} appear twice.")
    frame.columns = names
    for column in frame.columns:
        series = frame[column]
        if series.dtype == object:
            # one pass in C decides the usual cases (every value text, or every value a
            # number or bool); only a mixed column is checked value by value
            if pd.api.types.infer_dtype(series, skipna=False) in _PLAIN_KINDS:
                continue
            odd = series.map(lambda v: not isinstance(v, _SCALARS)).to_numpy(dtype=bool)
            if odd.any():
                kind = type(series[odd].iloc[0]).__name__
                raise InputError(
                    f"{path}: column {excerpt(column)} holds {kind} values; a table needs "
                    "text or numbers in every column."
                )
    return frame


#: Read a Parquet file in batches when its uncompressed size times this factor exceeds the
#: memory available (the whole Arrow table and its pandas copy would not fit side by side).
CHUNKED_FACTOR = 2.0
#: Rows per batch of a chunked read.
CHUNK_ROWS = 1_000_000


def _available_bytes() -> int:
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # not POSIX: read whole
        return 1 << 62


def _too_large(path: Path) -> bool:
    """Whether ``path`` does not fit twice in the memory available (its row groups'
    uncompressed size, from the footer)."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
    except Exception:  # noqa: BLE001 - the whole read reports a malformed file
        return False
    size = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    return CHUNKED_FACTOR * size > _available_bytes()


def _chunked_parquet(handle: Any) -> pd.DataFrame:
    """The file as pandas, converted one batch of :data:`CHUNK_ROWS` rows at a time (only
    one batch is held as Arrow beside the pandas pieces), with a fresh row index."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(handle)
    pieces = [pa.Table.from_batches([batch]).to_pandas()
              for batch in source.iter_batches(batch_size=CHUNK_ROWS)]
    if not pieces:
        return source.schema_arrow.empty_table().to_pandas()
    return pd.concat(pieces, ignore_index=True)


def _read_csv(path: Path, delimiter: str | None,
              skip_initial_space: bool = True) -> pd.DataFrame:
    if delimiter is None:
        delimiter = sniff_delimiter(path)
    try:
        raw = pd.read_csv(
            path, sep=delimiter, dtype=str, keep_default_na=False,
            skipinitialspace=skip_initial_space, header=None, encoding="utf-8",
        )
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"{path}: the file is empty; a table needs a header line and at "
                         "least one row.") from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at "
            f"position {exc.start}); save the table as UTF-8 CSV."
        ) from exc
    except (pd.errors.ParserError, ValueError, OverflowError, csv.Error) as exc:
        fields = _FIELDS.search(str(exc))
        sniffed = sniff_delimiter(path)
        if sniffed != delimiter:
            raise InputError(
                f"{path}: cannot be read with delimiter {_shown(delimiter)!r}; the file "
                f"looks {_shown(sniffed)!r}-separated: set delimiter = \"{_shown(sniffed)}\" "
                "in the schema, or remove 'delimiter' to detect it."
            ) from exc
        if fields:
            expected, line, saw = fields.groups()
            raise InputError(
                f"{path}, line {line}: {saw} fields where the header has {expected} (a "
                f"trailing {delimiter!r}, a {delimiter!r} inside an unquoted value, or a "
                "missing quote?); every row needs exactly the header's columns."
            ) from exc
        raise InputError(
            f"{path}: cannot be read as CSV with delimiter {delimiter!r} "
            f"({excerpt(exc, 120)})."
        ) from exc
    header = [str(name).strip() if skip_initial_space else str(name)
              for name in raw.iloc[0].tolist()] if len(raw) else []
    repeated = sorted({n for n in header if n and header.count(n) > 1})
    if repeated:
        raise InputError(
            f"{path}: column name(s) {excerpts(repeated)} appear twice in the header; every "
            "column needs its own name."
        )
    frame = raw.iloc[1:].reset_index(drop=True)
    frame.columns = header
    return frame
