"""Loading and validating microdata tables ``T(j)`` against a schema.

Tables come from CSV, Parquet or a DataFrame. Validation follows scikit-learn's habit of
failing early with a message that names the column, the first offending rows and the fix.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from republish.errors import InputError, format_rows
from republish.identifiers import (
    IdentifierKind,
    canonical_identifiers,
    check_population_continuity,
    infer_identifier_kind,
)
from republish.schema import Schema


def read_frame(source: str | Path | pd.DataFrame, delimiter: str = ",") -> pd.DataFrame:
    """Read a CSV or Parquet file (by extension) or copy a DataFrame, without validation."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.is_file():
        raise InputError(f"data file {str(path)!r} not found.")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    try:
        return pd.read_csv(
            path, sep=delimiter, dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{path}: cannot be read as CSV with delimiter {delimiter!r} ({exc})."
        ) from exc


def load_table(
    source: str | Path | pd.DataFrame, schema: Schema,
    identifier_kind: IdentifierKind | None = None,
) -> pd.DataFrame:
    """Load microdata and validate it against ``schema``.

    Returns a DataFrame with the identifier column as strings, numeric QIs as floats,
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


def _is_missing(series: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(series):
        return series.isna().to_numpy()
    codes, text = _stripped(series)
    empty = np.asarray((text == "") | text.str.lower().isin(["nan", "none"]), dtype=bool)
    # Code -1 (NA) reads the appended True.
    return np.append(empty, True)[codes]


def validate_table(
    frame: pd.DataFrame, schema: Schema, identifier_kind: IdentifierKind | None = None
) -> pd.DataFrame:
    """Validate and normalize an in-memory table; see :func:`load_table`.

    Identifiers are canonicalized for ``identifier_kind`` (a history's recorded kind;
    inferred from the column when ``None``): see :mod:`republish.identifiers`.
    """
    needed = [schema.identifier, *schema.qi_names, schema.sensitive]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputError(
            f"column(s) {missing} missing from the table; it has {list(frame.columns)[:12]}. "
            "Rename the columns or fix the schema."
        )
    if len(frame) == 0:
        raise InputError("the table is empty; a release needs at least one row.")
    frame = frame[needed].reset_index(drop=True)
    for column in needed:
        bad = _is_missing(frame[column])
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
    duplicated = out[schema.identifier].duplicated(keep=False)
    if duplicated.any():
        values = out.loc[duplicated, schema.identifier].unique().tolist()
        raise InputError(
            f"identifier column {schema.identifier!r} repeats the value(s) {format_rows(values)}; "
            "every row needs its own identifier."
        )
    for qi in schema.qis:
        column = frame[qi.name]
        if qi.kind == "numeric":
            numbers = pd.to_numeric(column, errors="coerce")
            bad = numbers.isna().to_numpy()
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                examples = column.iloc[rows[:3]].tolist()
                raise InputError(
                    f"numeric QI {qi.name!r} has non-numeric value(s) {examples} in row(s) "
                    f"{format_rows(rows)}; declare the column as 'ordered' or 'hierarchy', or "
                    "fix the values."
                )
            out[qi.name] = numbers.astype(float)
        else:
            text = _stripped_text(column)
            allowed = set(qi.categories or ())
            bad = ~text.isin(allowed).to_numpy()
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                values = sorted(set(text.iloc[rows]))
                where = "order" if qi.kind == "ordered" else "hierarchy"
                raise InputError(
                    f"QI {qi.name!r} has value(s) {format_rows(values)} absent from its {where} "
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
    if validated:
        table = table.reset_index(drop=True)
    else:
        table = validate_table(table, schema, identifier_kind)
    kind = identifier_kind or infer_identifier_kind(table[schema.identifier])
    check_population_continuity(
        previous_population, pd.Index(table[schema.identifier]),
        new_population=new_population, identifier=schema.identifier,
    )
    return table, kind
