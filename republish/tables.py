"""Loading and validating microdata tables ``T(j)`` against a schema.

Tables come from CSV, Parquet or a DataFrame (read by :mod:`republish.table_reading`,
whose names are re-exported here). Validation follows scikit-learn's habit of failing
early with a message that names the column, the first offending rows and the fix.

CSV files are read with the schema's ``delimiter``, or the one detected in the file
(:func:`~republish.table_reading.sniff_delimiter`). A schema without ``id`` (or with
``id = "row-number"``) numbers the rows (:data:`republish.schema.ROW_NUMBER`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from republish.errors import InputError, format_rows
from republish.excerpts import excerpts
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

# Reading files moved to republish.table_reading; its names stay importable here.
from republish.table_reading import _FIELDS as _FIELDS
from republish.table_reading import _PLAIN_KINDS as _PLAIN_KINDS
from republish.table_reading import _SCALARS as _SCALARS
from republish.table_reading import _SNIFF_BYTES as _SNIFF_BYTES
from republish.table_reading import _SNIFF_LINES as _SNIFF_LINES
from republish.table_reading import CHUNK_ROWS as CHUNK_ROWS
from republish.table_reading import CHUNKED_FACTOR as CHUNKED_FACTOR
from republish.table_reading import DELIMITERS as DELIMITERS
from republish.table_reading import _available_bytes as _available_bytes
from republish.table_reading import _chunked_parquet as _chunked_parquet
from republish.table_reading import _field_counts as _field_counts
from republish.table_reading import _read_csv as _read_csv
from republish.table_reading import _read_parquet as _read_parquet
from republish.table_reading import _shown as _shown
from republish.table_reading import _too_large as _too_large
from republish.table_reading import delimiter_hint as delimiter_hint
from republish.table_reading import read_frame as read_frame
from republish.table_reading import sniff_delimiter as sniff_delimiter

#: Largest magnitude of a numeric QI value: beyond it floating point loses whole units.
MAX_NUMERIC = 1e15
#: Below this many rows the plain code paths are as fast as the pyarrow ones.
_FEW_ROWS = 10_000


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
