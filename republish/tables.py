"""Loading and validating microdata tables ``T(j)`` against a schema.

Tables come from CSV, Parquet or a DataFrame. Validation follows scikit-learn's habit of
failing early with a message that names the column, the first offending rows and the fix.

Every CSV input of a command (the data, the adversary's knowledge) is read by one rule:
the schema's ``delimiter`` when it sets one, otherwise the delimiter detected in the file
among ``,`` ``;`` tab ``|`` (:func:`sniff_delimiter`). A header that reads as one column
holding another of those characters is reported as a wrong delimiter
(:func:`delimiter_hint`), not as a missing column. A schema without ``id`` (or with
``id = "row-number"``) numbers the rows (:data:`republish.schema.ROW_NUMBER`).
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError, format_rows
from republish.excerpts import excerpt, excerpts
from republish.identifiers import (
    IdentifierKind,
    canonical_identifiers,
    check_population_continuity,
    edge_space,
    infer_identifier_kind,
    surely_distinct,
    text_values,
)
from republish.schema import ROW_NUMBER, Schema

#: Delimiters detected in a CSV file without a schema ``delimiter``, in order of preference.
DELIMITERS = (",", ";", "\t", "|")
#: Bytes and lines of a CSV file read to detect its delimiter.
_SNIFF_BYTES = 64 << 10
_SNIFF_LINES = 50
#: Largest magnitude of a numeric QI value: beyond it floating point loses whole units.
MAX_NUMERIC = 1e15
_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
#: Below this many rows the plain code paths are as fast as the pyarrow ones.
_FEW_ROWS = 10_000
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


def load_table(
    source: str | Path | pd.DataFrame, schema: Schema,
    identifier_kind: IdentifierKind | None = None,
) -> pd.DataFrame:
    """Load microdata and validate it against ``schema``.

    CSV files are read with the schema's ``delimiter``, or the detected one when the
    schema sets none (:func:`sniff_delimiter`). Returns a DataFrame with the identifier
    column as strings (the row numbers when the schema has no ``id``), numeric QIs as floats,
    categorical QIs and the sensitive attribute as strings, in the order
    identifier, QIs, sensitive. Extra columns are dropped.

    Raises
    ------
    InputError
        on a missing column, an empty table, a missing value in the identifier, a QI or
        the sensitive attribute, a duplicate identifier, a categorical value absent from
        its order or hierarchy, or a non-numeric value in a numeric QI.
    """
    frame = read_frame(source, schema.delimiter)
    return validate_table(frame, schema, identifier_kind)


def _stripped(series: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``(codes, stripped text of each distinct value)``: QI and sensitive columns hold few
    distinct values, so text work on them instead of on every row (code -1: missing)."""
    codes, uniques = pd.factorize(series)
    return codes, pd.Index(uniques).astype(str).str.strip()


def _stripped_text(series: pd.Series) -> pd.Series:
    codes, text = _stripped(series)
    return pd.Series(np.asarray(text, dtype=object)[codes], index=series.index)


def _is_missing(series: pd.Series, distinct: bool = False) -> np.ndarray:
    """Missing or blank cells (``distinct``: the values are mostly distinct, as
    identifiers are: a faster path that avoids hashing them)."""
    if pd.api.types.is_numeric_dtype(series):
        return series.isna().to_numpy()
    text_array = text_values(series) if distinct and len(series) > _FEW_ROWS else None
    if text_array is not None:
        # Only text of at most 4 characters ("", "nan", "none") or with blanks at an end can
        # strip to a missing value: decide those rows as below, without hashing the column
        # (an identifier column has as many distinct values as rows).
        import pyarrow.compute as pc

        short = np.asarray(pc.less_equal(pc.utf8_length(text_array), 4).to_numpy(
            zero_copy_only=False), dtype=bool)
        candidates = np.flatnonzero(short | edge_space(text_array))
        missing = np.zeros(len(series), dtype=bool)
        if len(candidates):
            missing[candidates] = _missing_text(series.iloc[candidates])
        return missing
    return _missing_text(series)


def _missing_text(series: pd.Series) -> np.ndarray:
    codes, text = _stripped(series)
    empty = np.asarray((text == "") | text.str.lower().isin(["nan", "none"]), dtype=bool)
    # Code -1 (NA) reads the appended True.
    return np.append(empty, True)[codes]


def validate_table(
    frame: pd.DataFrame, schema: Schema, identifier_kind: IdentifierKind | None = None
) -> pd.DataFrame:
    """Validate and normalize an in-memory table; see :func:`load_table`.

    With a schema that numbers rows (:attr:`~republish.schema.Schema.row_ids`) and no
    ``row-number`` column, the identifier is the data row number (0-based, as in the
    error messages). Identifiers are canonicalized for ``identifier_kind`` (a history's
    recorded kind; inferred from the column when ``None``): see
    :mod:`republish.identifiers`.
    """
    needed = [schema.identifier, *schema.qi_names, schema.sensitive]
    missing = [c for c in needed if c not in frame.columns
               and not (c == ROW_NUMBER and schema.row_ids)]
    if missing:
        hint = delimiter_hint([str(c) for c in frame.columns])
        if hint is not None:
            raise InputError(f"column(s) {excerpts(missing, 3)} missing: {hint}")
        raise InputError(
            f"column(s) {missing} missing from the table; it has "
            f"{excerpts(list(frame.columns), 12)}. "
            "Rename the columns or fix the schema."
        )
    if len(frame) == 0:
        raise InputError("the table is empty; a release needs at least one row.")
    if schema.row_ids and ROW_NUMBER not in frame.columns:
        frame = frame.reset_index(drop=True)
        frame = frame.assign(**{ROW_NUMBER: np.arange(len(frame)).astype(str)})
    frame = frame[needed].reset_index(drop=True)
    for column in needed:
        bad = _is_missing(frame[column], distinct=column == schema.identifier)
        if bad.any():
            raise InputError(
                f"column {column!r} has missing or empty values in row(s) "
                f"{format_rows(np.flatnonzero(bad).tolist())} (0-based data rows); fill or "
                "remove those rows."
            )
    out = pd.DataFrame(index=frame.index)
    identifiers = frame[schema.identifier]
    kind = identifier_kind if identifier_kind is not None else infer_identifier_kind(identifiers)
    out[schema.identifier] = canonical_identifiers(identifiers, kind, schema.identifier)
    # distinct proved by int64 or hashes first; the hash table only to name the repeats
    duplicated = (np.zeros(len(out), dtype=bool) if surely_distinct(out[schema.identifier])
                  else out[schema.identifier].duplicated(keep=False))
    if duplicated.any():
        values = out.loc[duplicated, schema.identifier].unique().tolist()
        raise InputError(
            f"identifier column {schema.identifier!r} repeats the value(s) {excerpts(values)}; "
            "every row needs its own identifier."
        )
    for qi in schema.qis:
        column = frame[qi.name]
        if qi.kind == "numeric":
            numbers = pd.to_numeric(column, errors="coerce")
            bad = numbers.isna().to_numpy()
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                examples = excerpts(column.iloc[rows[:3]].tolist(), 3)
                raise InputError(
                    f"numeric QI {qi.name!r} has non-numeric value(s) [{examples}] in row(s) "
                    f"{format_rows(rows)}; declare the column as 'ordered' or 'hierarchy', or "
                    "fix the values."
                )
            values = numbers.to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                bad = ~(np.abs(values) <= MAX_NUMERIC)
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                examples = excerpts(column.iloc[rows[:3]].tolist(), 3)
                raise InputError(
                    f"numeric QI {qi.name!r} has value(s) {examples} in row(s) "
                    f"{format_rows(rows)} that are infinite or beyond ±{MAX_NUMERIC:.0e}; a "
                    "published interval needs finite bounds. Fix or remove those values."
                )
            out[qi.name] = values
        else:
            text = _stripped_text(column)
            allowed = set(qi.categories or ())
            bad = ~text.isin(allowed).to_numpy()
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                values = sorted(set(text.iloc[rows]))
                where = "order" if qi.kind == "ordered" else "hierarchy"
                raise InputError(
                    f"QI {qi.name!r} has value(s) {excerpts(values)} absent from its {where} "
                    f"(row(s) {format_rows(rows)}); add them to the {where} or fix the data."
                )
            out[qi.name] = text
    out[schema.sensitive] = _stripped_text(frame[schema.sensitive])
    return out


def encode_qis(table: pd.DataFrame, schema: Schema) -> np.ndarray:
    """QI codes of a validated table as an ``(n, d)`` float array (see :mod:`republish.schema`)."""
    codes = np.empty((len(table), len(schema.qis)), dtype=np.float64)
    for j, qi in enumerate(schema.qis):
        if qi.kind == "numeric":
            codes[:, j] = table[qi.name].to_numpy(dtype=np.float64)
        else:
            categories = qi.categories or ()
            lookup = {value: code for code, value in enumerate(categories)}
            codes[:, j] = table[qi.name].map(lookup).to_numpy(dtype=np.float64)
    return codes


def validate_release_table(
    table: pd.DataFrame,
    schema: Schema,
    identifier_kind: IdentifierKind | None,
    previous_population: pd.Index,
    *,
    validated: bool = False,
    new_population: bool = False,
) -> tuple[pd.DataFrame, IdentifierKind]:
    """``T(n)`` of a release step, validated, with the history's identifier kind.

    ``identifier_kind`` is the history's kind (``None`` before it is fixed: inferred
    here); ``previous_population`` the identifiers of the last release
    (:meth:`republish.state.PublisherState.last_population`), which a table of similar
    size must mostly share unless ``new_population``
    (:func:`republish.identifiers.check_population_continuity`). With ``validated`` the
    table already went through :func:`validate_table` with this kind.
    """
    if schema.row_ids:
        raise InputError(
            "the schema has no identifier column (rows are numbered); a release series "
            "needs an 'id' column that names each person in every release (set id = "
            "\"<column>\" in the schema). Row numbers serve the static commands only "
            "(ldiv, check, eligibility)."
        )
    if validated:
        index = table.index
        if not (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
                and index.name is None):
            table = table.reset_index(drop=True)
        # else already numbered 0..n-1: no copy of the whole table (the step reads it and
        # the release's assignment shares its columns; nothing writes into it)
    else:
        table = validate_table(table, schema, identifier_kind)
    kind = identifier_kind or infer_identifier_kind(table[schema.identifier])
    check_population_continuity(
        previous_population, pd.Index(table[schema.identifier]),
        new_population=new_population, identifier=schema.identifier,
    )
    return table, kind
