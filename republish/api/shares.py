"""Warnings when a release holds back or pads much of its table, and the private file of
deferred identifiers.

A release may defer new rows (``--eligibility delete|hybrid``: held back, not published in
this release) and add counterfeits (fake rows that complete a group's signature). Both are
legitimate, but a large share of either changes what the release is worth, so
:func:`share_warnings` returns one :class:`ShareWarning` per figure above ``threshold``
(the CLI's ``--warn-share``, the API's ``warn_share``; default
:data:`republish.api.defaults.WARN_SHARE`), each naming the likely cause: a sensitive value
above ``1/m`` of the rows (m-eligibility: a release can publish at most ``1/m`` of its new
rows with one value), or rows of the last release that are absent now (their groups'
signatures must still be completed).

Shares: deferrals over the rows of ``T(n)`` (deferred ones included); counterfeits over the
real rows published.

The deferred identifiers are written to ``<store>.deferred.csv`` beside the store
(:func:`write_deferred`): private, like the store, never to be published.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from republish.errors import ParameterError
from republish.release_files import write_file_durably
from republish.schema import Schema
from republish.state import PublisherState
from republish.store import ReleaseStore

__all__ = ["ShareWarning", "deferred_path", "share_warnings", "validate_share",
           "write_deferred"]

#: Most causes named in one warning.
MAX_CAUSES = 3


@dataclass(frozen=True)
class ShareWarning:
    """``count`` of ``rows`` (``kind``: ``deferred`` or ``counterfeits``) is more than
    ``threshold`` of them; ``causes`` say why, in words."""

    release: int
    kind: Literal["deferred", "counterfeits"]
    count: int
    rows: int
    threshold: float
    causes: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.count / self.rows if self.rows else 0.0

    def message(self) -> str:
        where = "warning threshold"
        if self.kind == "deferred":
            text = (f"release {self.release}: {self.count:,} of {self.rows:,} rows deferred "
                    f"({self.share:.1%}; held back, not published in this release; {where} "
                    f"{self.threshold:.1%}, --warn-share / warn_share).")
        else:
            text = (f"release {self.release}: {self.count:,} counterfeits for {self.rows:,} "
                    f"real rows published ({self.share:.1%}; {where} {self.threshold:.1%}, "
                    "--warn-share / warn_share).")
        if self.causes:
            text += " Cause: " + "; ".join(self.causes) + "."
        return text


def validate_share(value: object, name: str = "warn_share") -> float:
    """A share in [0, 1] (``name`` is the parameter named in the error)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not 0 <= value <= 1:
        raise ParameterError(f"{name} must be a share between 0 and 1 (0.05 = 5 %), got "
                             f"{value!r}.")
    return float(value)


def _above(values: pd.Series, m: int, population: str) -> list[str]:
    """Values holding more than 1/m of ``values``, most frequent first, in words."""
    total = len(values)
    if total == 0:
        return []
    counts = values.astype(str).value_counts()
    frequent = counts[counts * m > total]
    causes = [f"{population}, {value!r} holds {count:,} of {total:,} ({count / total:.1%}), "
              f"above 1/m = {1 / m:.1%} (m = {m}): at most 1/m of them can be published "
              "with one value"
              for value, count in frequent.iloc[:MAX_CAUSES].items()]
    if len(frequent) > MAX_CAUSES:
        causes.append(f"{len(frequent) - MAX_CAUSES} more value(s) above 1/m")
    return causes


def causes(table: pd.DataFrame, schema: Schema, previous: PublisherState, m: int,
           deleted: int) -> tuple[str, ...]:
    """Why a release of ``table`` (validated ``T(n)``) after ``previous`` may defer rows or
    need counterfeits: sensitive values above 1/m (among the new rows, else among all
    rows), and deleted rows."""
    sensitive = table[schema.sensitive]
    ids = table[schema.identifier].astype(str).to_numpy(dtype=object)
    new = previous.positions(ids) < 0
    found = _above(sensitive[new], m, f"among the {int(new.sum()):,} new rows")
    if not found and not new.all():
        found = _above(sensitive, m, f"among all {len(table):,} rows")
    if deleted:
        found.append(f"{deleted:,} row(s) of the last release are absent from this table: "
                     "the groups that held them keep their signatures, completed by "
                     "counterfeits where no new row of the missing value is left")
    if not found:
        found.append(f"no sensitive value is above 1/m = {1 / m:.1%} of the rows; the "
                     "groups' signatures (fixed by earlier releases) do not match this "
                     "table's values")
    return tuple(found)


def share_warnings(summary: dict[str, object], table: pd.DataFrame, schema: Schema,
                   previous: PublisherState, m: int, threshold: float) -> list[ShareWarning]:
    """The warnings of one release (``summary``: its ``history --json`` object)."""
    threshold = validate_share(threshold)
    number = int(summary["release"])  # type: ignore[call-overload]
    rows = int(summary["rows"])  # type: ignore[call-overload]
    deferred = int(summary.get("deferred") or 0)  # type: ignore[call-overload]
    counterfeits = int(summary.get("counterfeits") or 0)  # type: ignore[call-overload]
    published = rows - deferred
    figures: list[tuple[Literal["deferred", "counterfeits"], int, int]] = [
        ("deferred", deferred, rows), ("counterfeits", counterfeits, published)]
    flagged = [(kind, count, total) for kind, count, total in figures
               if total > 0 and count > threshold * total]
    if not flagged:
        return []
    why = causes(table, schema, previous, m, int(summary.get("deleted") or 0))  # type: ignore[call-overload]
    return [ShareWarning(number, kind, count, total, threshold, why)
            for kind, count, total in flagged]


def deferred_path(store: str | Path) -> Path:
    """``<store>.deferred.csv``: the private list of deferred identifiers beside a store."""
    store = Path(store)
    return store.with_name(store.name + ".deferred.csv")


def _read_lines(path: Path) -> dict[int, list[str]]:
    by_release: dict[int, list[str]] = {}
    with contextlib.suppress(OSError, ValueError, csv.Error, UnicodeDecodeError), \
            open(path, encoding="utf-8", newline="") as stream:
        reader = csv.reader(stream)
        next(reader, None)
        for row in reader:
            if len(row) == 2:
                by_release.setdefault(int(row[0]), []).append(row[1])
    return by_release


def write_deferred(store: ReleaseStore) -> Path | None:
    """Write ``<store>.deferred.csv`` (columns ``release,identifier``: every identifier
    each stored release deferred), private (mode 0600), replaced whole; ``None`` (and no
    file) when no release deferred anything. Lines of the file are reused where they match
    the store's counts, else re-read from the store."""
    path = deferred_path(store.path)
    counts = {int(row["release"]): int(row.get("deferred") or 0) for row in store.history()}
    counts = {number: count for number, count in counts.items() if count}
    if not counts:
        return None
    known = _read_lines(path) if path.exists() else {}
    lines: list[tuple[int, str]] = []
    for number in sorted(counts):
        ids: Sequence[str] = known.get(number, [])
        if len(ids) != counts[number]:
            ids = store.release(number).deferred
        lines.extend((number, ident) for ident in ids)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["release", "identifier"])
    writer.writerows(lines)
    _write_private(path, text.getvalue().encode("utf-8"))
    return path


def _write_private(path: Path, data: bytes) -> None:
    """``data`` to ``path`` whole or not at all, readable by its owner only."""
    write_file_durably(path, data, mode=0o600)

