"""The results table of a batch, its journal, and resuming from it.

Rows are appended, one JSON line per finished instance, to a journal next to the output
(``results.parquet.journal.jsonl``), flushed to disk before the next instance is
recorded. So an interrupted batch loses only the instances that were running, and
``--resume`` skips every instance whose ``instance_id`` is in the journal or in the
output file. When the batch ends the journal is consolidated into the output (CSV or
Parquet, chosen by the file extension), one row per instance in manifest order, and
removed once every instance has its row.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from republish.batch.manifest import BatchInstance
from republish.batch.problem import plain
from republish.errors import ParameterError

#: Columns of the results table, in order.
COLUMNS = (
    "instance_id", "case_id", "index", "entry", "name", "problem", "method", "variant",
    "parameters", "m", "l", "size", "time_limit", "seed", "status", "objective", "bound", "gap",
    "heuristic_objective", "counterfeits", "deferrals", "stars", "perimeter", "query_error",
    "verified", "wall_time_s", "solve_time_s", "worker", "error", "detail", "certificate",
    "finished_at",
)
_INTEGERS = ("index", "entry", "m", "l", "size", "seed", "counterfeits", "deferrals", "stars")
_FLOATS = ("time_limit", "objective", "bound", "gap", "heuristic_objective", "perimeter",
           "query_error", "wall_time_s", "solve_time_s")
_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path: str | Path) -> str:
    """``csv`` or ``parquet`` from the file extension (a ParameterError otherwise)."""
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        raise ParameterError(
            f"output {str(path)!r}: use a .csv, .parquet or .pq file name for the results."
        )
    return _FORMATS[suffix]


def journal_path(output: str | Path) -> Path:
    """The journal that records finished instances of the batch writing ``output``."""
    output = Path(output)
    return output.with_name(output.name + ".journal.jsonl")


def make_row(instance: BatchInstance, result: Mapping[str, Any], worker: str) -> dict[str, Any]:
    """The full results row of ``instance`` from a worker's ``result``."""
    params = instance.parameters
    row: dict[str, Any] = {column: None for column in COLUMNS}
    row.update({key: plain(value) for key, value in result.items() if key in row})
    certificate = result.get("certificate")
    row.update(
        instance_id=instance.instance_id, case_id=instance.case_id, index=instance.index,
        entry=instance.entry, name=instance.name, problem=instance.problem,
        method=result.get("method") or params.get("method") or instance.problem,
        variant=result.get("variant") or instance.problem,
        parameters=json.dumps(params, sort_keys=True), m=params.get("m"), l=params.get("l"),
        time_limit=instance.time_limit, seed=instance.seed, worker=worker,
        certificate=json.dumps(certificate, sort_keys=True) if certificate else None,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return row


class Journal:
    """Append-only JSON-lines record of finished instances."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps(dict(row), default=str, allow_nan=False) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def read(self) -> list[dict[str, Any]]:
        """Every complete row; a line cut short by a crash is ignored."""
        if not self.path.is_file():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "instance_id" in row:
                rows.append(row)
        return rows

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def read_results(path: str | Path) -> pd.DataFrame:
    """A results table written by :func:`write_results` (CSV or Parquet)."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"results file {str(path)!r} not found.")
    try:
        if table_format(path) == "csv":
            frame = pd.read_csv(path, dtype={"instance_id": str, "case_id": str})
        else:
            frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"{path}: cannot be read as a results table ({exc}).") from exc
    missing = [c for c in ("instance_id", "problem", "method", "status") if c not in frame]
    if missing:
        raise ParameterError(f"{path}: not a batch results table (no column(s) {missing}).")
    return frame


def frame_from_rows(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a table with the fixed columns and dtypes (nullable integers, floats)."""
    frame = pd.DataFrame([{c: row.get(c) for c in COLUMNS} for row in rows], columns=COLUMNS)
    for column in _INTEGERS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").round().astype("Int64")
    for column in _FLOATS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame["verified"] = frame["verified"].astype("boolean")
    for column in set(COLUMNS) - set(_INTEGERS) - set(_FLOATS) - {"verified"}:
        frame[column] = frame[column].astype("string")
    return frame


def write_results(frame: pd.DataFrame, path: str | Path) -> None:
    """Write the table atomically (a temporary file renamed over ``path``)."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    if table_format(path) == "csv":
        frame.to_csv(temporary, index=False)
    else:
        frame.to_parquet(temporary, index=False)
    os.replace(temporary, path)


def previous_rows(output: str | Path, retry_failed: bool = False) -> dict[str, dict[str, Any]]:
    """Rows already computed for ``output``: its file, then its journal (later rows win).

    With ``retry_failed`` rows with status ``ERROR`` are left out (they run again).
    """
    output = Path(output)
    rows: dict[str, dict[str, Any]] = {}
    if output.is_file():
        frame = read_results(output)
        for record in frame.astype(object).where(frame.notna(), None).to_dict("records"):
            rows[str(record["instance_id"])] = record
    for record in Journal(journal_path(output)).read():
        rows[str(record["instance_id"])] = record
    if retry_failed:
        rows = {key: row for key, row in rows.items() if row.get("status") != "ERROR"}
    return rows


def consolidate(
    instances: Sequence[BatchInstance], rows: Mapping[str, Mapping[str, Any]], output: str | Path
) -> pd.DataFrame:
    """Write the rows of ``instances`` (manifest order) to ``output``; returns the table.

    Instances without a row yet (an interrupted batch) are left out; the journal is
    removed only when every instance has its row.
    """
    ordered = [
        {**rows[i.instance_id], "index": i.index, "entry": i.entry, "name": i.name}
        for i in instances if i.instance_id in rows
    ]
    frame = frame_from_rows(ordered)
    write_results(frame, output)
    if len(ordered) == len(instances):
        Journal(journal_path(output)).remove()
    return frame


def certificate_problems(row: Mapping[str, Any], tolerance: float = 1e-6) -> list[str]:
    """What is inconsistent in a row's certificate (empty when it is valid).

    A valid row has a known status; a certificate with that status, objective, bound
    and gap; ``bound <= objective``; gap 0 and ``bound == objective`` when ``OPTIMAL``
    (if a bound is given); and no failed verification.
    """
    from republish.solver.certificate import Certificate

    found: list[str] = []
    row = {key: _value(item) for key, item in row.items()}
    status = row.get("status")
    if status not in ("OPTIMAL", "FEASIBLE", "HEURISTIC", "TIMEOUT", "INFEASIBLE", "ERROR"):
        return [f"unknown status {status!r}"]
    if status == "ERROR":
        return [] if row.get("error") else ["ERROR without a message"]
    text = row.get("certificate")
    if not text:
        return [] if status == "TIMEOUT" else ["no certificate"]
    certificate = Certificate.from_dict(json.loads(str(text)))
    objective, bound = row.get("objective"), row.get("bound")
    if certificate.status != status:
        found.append(f"certificate status {certificate.status} != row status {status}")
    if objective is not None and not _same(certificate.objective, objective, tolerance):
        found.append(f"certificate objective {certificate.objective} != {objective}")
    if bound is not None and objective is not None and bound > objective + tolerance:
        found.append(f"bound {bound} exceeds objective {objective}")
    if status == "OPTIMAL":
        gap = row.get("gap")
        if gap is not None and abs(float(gap)) > tolerance:
            found.append(f"OPTIMAL with gap {gap}")
    if row.get("verified") is False:
        found.append("the answer failed verification")
    return found


def _value(item: Any) -> Any:
    """``None`` for missing values (``None``, NaN, ``pd.NA``)."""
    if item is None or item is pd.NA:
        return None
    if isinstance(item, float) and math.isnan(item):
        return None
    return item


def _same(left: Any, right: Any, tolerance: float) -> bool:
    if left is None or right is None:
        return left is None and right is None
    return abs(float(left) - float(right)) <= tolerance * max(1.0, abs(float(right)))
