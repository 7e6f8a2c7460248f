"""The adversary's knowledge table ``B(n)`` (m-invariance paper, Definition 6).

For every tuple of the historical union ``U(n)`` the adversary knows the identifier, the
exact QI values and in which releases the tuple's row appears (the lifespan; with
re-insertions and deferrals a set of releases rather than an interval). The counterfeit
rows of ``B(n)`` are the published ``R(j)`` and are read with the releases.

``knowledge.csv`` (design Contracts): the identifier column, the QI columns, and
``releases``, the comma-separated 1-based numbers of the releases containing the row.
An optional sensitive column holds the true values; only the publisher has them, and they
turn the exact risk of :mod:`republish.audit.exact_risk` into Definition 14's ``risk(t)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError, format_rows
from republish.release import Release
from republish.schema import Schema
from republish.tables import delimiter_hint, encode_qis, read_frame, validate_table

RELEASES = "releases"


@dataclass(frozen=True)
class Knowledge:
    """``B(n)`` without its counterfeit rows.

    Attributes
    ----------
    table:
        One row per tuple of ``U(n)``: identifier and raw QI values (validated form), plus
        the sensitive value when known (``has_truth``).
    presence:
        ``presence[i, j]`` is True when tuple ``i`` has a row in release ``j + 1``.
    schema:
        The schema of the microdata.
    """

    table: pd.DataFrame
    presence: np.ndarray
    schema: Schema

    @property
    def identifiers(self) -> np.ndarray:
        return self.table[self.schema.identifier].to_numpy(dtype=object)

    @property
    def release_count(self) -> int:
        return int(self.presence.shape[1])

    @property
    def has_truth(self) -> bool:
        return self.schema.sensitive in self.table.columns

    @property
    def truth(self) -> np.ndarray | None:
        """True sensitive values, when the knowledge carries them (publisher's own audit)."""
        if not self.has_truth:
            return None
        return self.table[self.schema.sensitive].to_numpy(dtype=object)

    def codes(self) -> np.ndarray:
        """QI codes ``(n, d)`` (see :func:`republish.tables.encode_qis`)."""
        return encode_qis(self.table, self.schema)

    def releases_of(self, index: int) -> list[int]:
        """1-based numbers of the releases containing tuple ``index``."""
        return [int(j) + 1 for j in np.flatnonzero(self.presence[index])]

    def to_frame(self, include_truth: bool = False) -> pd.DataFrame:
        """The ``knowledge.csv`` form: identifier, QIs, ``releases`` (and the SA if asked)."""
        schema = self.schema
        columns = [schema.identifier, *schema.qi_names]
        if include_truth and self.has_truth:
            columns.append(schema.sensitive)
        frame = self.table[columns].copy()
        frame[RELEASES] = release_lists(self.presence)
        return frame

    def write(self, path: str | Path, include_truth: bool = False) -> Path:
        """Write ``knowledge.csv`` (QIs in their raw form, numbers without ``.0``)."""
        frame = self.to_frame(include_truth)
        for qi in self.schema.qis:
            if qi.kind == "numeric":
                frame[qi.name] = [_plain_number(v) for v in frame[qi.name]]
        path = Path(path)
        frame.to_csv(path, index=False)
        return path


def release_lists(presence: np.ndarray) -> np.ndarray:
    """Per row of a presence matrix, the comma-separated 1-based numbers of its releases
    (``""`` for none), as objects. Rows share few lifespans: each distinct row is joined
    once (one string per (row, release) pair took 8 GB for 3.9M rows in 20 releases)."""
    presence = np.asarray(presence, dtype=bool)
    n, count = presence.shape
    if n == 0 or count == 0:
        return np.full(n, "", dtype=object)
    if count <= 62:
        key = presence.astype(np.int64) @ (np.int64(1) << np.arange(count, dtype=np.int64))
        inverse, uniques = pd.factorize(key)
        first = np.full(len(uniques), n, dtype=np.int64)
        first[inverse] = np.arange(n)  # any row of the pattern will do
    else:
        _, first, inverse = np.unique(presence, axis=0, return_index=True, return_inverse=True)
    texts = np.array(
        [",".join(str(j + 1) for j in np.flatnonzero(presence[row])) for row in first],
        dtype=object,
    )
    return texts[inverse.reshape(-1)]


def _plain_number(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def _parse_releases(column: pd.Series, release_count: int | None) -> np.ndarray:
    """``releases`` text column -> boolean presence matrix."""
    fast = _parse_releases_fast(column.astype(str).tolist())
    if fast is not None and (release_count is None or fast[1].max(initial=1) <= release_count):
        rows, numbers = fast
        count = release_count if release_count is not None else int(numbers.max(initial=0))
        presence = np.zeros((len(column), count), dtype=bool)
        presence[rows, numbers - 1] = True
        return presence
    text = column.astype(str).str.strip()
    exploded = text.str.split(",").explode()
    exploded = exploded.str.strip()
    exploded = exploded[exploded != ""]
    numbers = pd.to_numeric(exploded, errors="coerce")
    bad = numbers.isna() | (numbers < 1) | (numbers != numbers.round())
    if release_count is not None:
        bad |= numbers > release_count
    if bad.any():
        offending = sorted(set(exploded.index[bad.to_numpy()].tolist()))
        examples = text.iloc[offending[:3]].tolist()
        limit = f" between 1 and {release_count}" if release_count is not None else ""
        raise InputError(
            f"column {RELEASES!r} must list release numbers{limit} separated by commas; "
            f"row(s) {format_rows(offending)} hold {examples}."
        )
    count = release_count if release_count is not None else int(numbers.max(initial=0))
    presence = np.zeros((len(column), count), dtype=bool)
    presence[exploded.index.to_numpy(dtype=np.int64), numbers.to_numpy(dtype=np.int64) - 1] = True
    return presence


def _parse_releases_fast(text: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(row, release number) pairs for cells of digits, commas and spaces only; None
    when anything else appears (the careful path then names the offending rows)."""
    blob = np.frombuffer("\n".join(text).encode(), dtype=np.uint8)
    digit = (blob >= ord("0")) & (blob <= ord("9"))
    comma = blob == ord(",")
    if not np.all(digit | comma | (blob == ord(" ")) | (blob == ord("\n"))):
        return None
    row = np.cumsum(blob == ord("\n"))
    has_number = np.bincount(row[digit], minlength=len(text)) > 0
    items = np.where(has_number, np.bincount(row[comma], minlength=len(text)) + 1, 0)
    kept = ",".join(t for t, keep in zip(text, has_number.tolist(), strict=True) if keep)
    numbers = np.array(kept.replace(" ", "").split(","), dtype=object) if kept else np.array([])
    if len(numbers) != int(items.sum()) or (numbers == "").any():
        return None
    values = numbers.astype(np.int64)
    if len(values) and values.min() < 1:
        return None
    return np.repeat(np.arange(len(text)), items), values


def _check_disjoint(table: pd.DataFrame, presence: np.ndarray, schema: Schema) -> None:
    """An individual has at most one row per release (Definition 13, condition 1.2)."""
    identifiers = table[schema.identifier]
    repeated = identifiers.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    per_release = pd.DataFrame(presence[repeated]).groupby(identifiers[repeated].to_numpy()).sum()
    clash = per_release.index[(per_release > 1).any(axis=1).to_numpy()].tolist()
    if clash:
        raise InputError(
            f"identifier(s) {format_rows(clash)} have two knowledge rows in the same release; "
            "an individual has at most one row per release (merge the rows or fix 'releases')."
        )


def make_knowledge(
    table: pd.DataFrame, presence: np.ndarray, schema: Schema, with_truth: bool = False
) -> Knowledge:
    """Validate a knowledge table given as a DataFrame and a presence matrix.

    An identifier may occur on several rows (a tuple whose values changed is a new tuple
    of ``U(n)``) as long as those rows never share a release.
    """
    presence = np.asarray(presence, dtype=bool)
    if presence.ndim != 2 or presence.shape[0] != len(table):
        raise InputError(
            f"presence matrix of shape {presence.shape} does not match {len(table)} knowledge "
            "rows; give one row per tuple and one column per release."
        )
    columns = [schema.identifier, *schema.qi_names]
    if with_truth:
        columns.append(schema.sensitive)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(
            f"knowledge table lacks column(s) {missing}; it needs the identifier, the QIs"
            f"{' and the sensitive attribute' if with_truth else ''}."
        )
    frame = table[columns].reset_index(drop=True).copy()
    # validate_table wants a sensitive column and unique identifiers; validate the rest here.
    probe = frame.copy()
    probe[schema.identifier] = np.arange(len(frame)).astype(str)
    if not with_truth:
        probe[schema.sensitive] = "?"
    validated = validate_table(probe, schema)
    validated[schema.identifier] = frame[schema.identifier].astype(str).str.strip().to_numpy()
    if not with_truth:
        validated = validated.drop(columns=[schema.sensitive])
    _check_disjoint(validated, presence, schema)
    return Knowledge(table=validated, presence=presence, schema=schema)


def read_knowledge(
    source: str | Path | pd.DataFrame, schema: Schema, release_count: int | None = None
) -> Knowledge:
    """Read ``knowledge.csv`` (or a DataFrame in that form).

    ``release_count`` is the number of releases audited; release numbers above it are
    refused. The sensitive column, when present, is taken as the true values. A CSV file
    is read as the data is: with the schema's ``delimiter``, else the detected one
    (:func:`republish.tables.sniff_delimiter`); the ``releases`` cells keep their commas,
    so a comma-separated file quotes them (``"1,2"``) and a ``;``-separated one need not.
    """
    frame = read_frame(source, schema.delimiter)
    frame.columns = [str(c).strip() for c in frame.columns]
    if RELEASES not in frame.columns:
        hint = delimiter_hint(list(frame.columns), schema.delimiter)
        if hint is not None:
            raise InputError(f"knowledge table: {hint}")
        raise InputError(
            f"knowledge table lacks the {RELEASES!r} column (comma-separated numbers of the "
            f"releases containing each row); it has {list(frame.columns)[:12]}."
        )
    presence = _parse_releases(frame[RELEASES], release_count)
    with_truth = schema.sensitive in frame.columns
    return make_knowledge(frame, presence, schema, with_truth=with_truth)


def knowledge_from_releases(releases: Sequence[Release]) -> Knowledge:
    """``B(n)`` (with true values) from the publisher's private assignments.

    A tuple is identified by its identifier, QI values and sensitive value: an individual
    whose values changed contributes one tuple per version.
    """
    if not releases:
        raise InputError("no release to build the knowledge table from.")
    schema = releases[0].schema
    columns = [schema.identifier, *schema.qi_names, schema.sensitive]
    parts = []
    for position, release in enumerate(releases):
        part = release.assignment[columns].copy()
        part["_release"] = position
        parts.append(part)
    rows = pd.concat(parts, ignore_index=True)
    codes = rows.groupby(columns, sort=False).ngroup().to_numpy()
    first = pd.Series(np.arange(len(rows))).groupby(codes).first().to_numpy()
    table = rows.iloc[first][columns].reset_index(drop=True)
    presence = np.zeros((len(first), len(releases)), dtype=bool)
    presence[codes, rows["_release"].to_numpy()] = True
    return make_knowledge(table, presence, schema, with_truth=True)


def history_from_store(path: str | Path) -> tuple[list[Release], Knowledge]:
    """Every release of a store and ``B(n)`` built from the store's private assignments.

    The adversary's knowledge is exactly what the publisher recorded: who was in which
    release with which QI values (and, for the publisher's eyes, the true values).
    """
    # Imported here: the store pulls in the principles, which the audit does not need.
    from republish.store import ReleaseStore

    with ReleaseStore.open(path) as store:
        releases = store.releases()
    if not releases:
        raise InputError(f"the store {str(path)!r} holds no release yet; nothing to audit.")
    return releases, knowledge_from_releases(releases)
