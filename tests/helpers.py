"""Helpers and data shared by several test modules (imported as ``helpers``).

``tests/`` is not a package: pytest puts it on ``sys.path`` (rootdir-relative, the default
``prepend`` import mode), so the test modules import this file as ``from helpers import
...``, as they import each other.
"""

from __future__ import annotations

import io
import itertools
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from republish.cli import main
from republish.models.grouping.formation import grouping_objective
from republish.schema import Hierarchy, QIAttribute, Schema

# ---------------------------------------------------------------- the CLI


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *args: str) -> tuple[int, str, str]:
    """``republish *args`` in-process: exit code, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["republish", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
        raise SystemExit(0)
    captured = capsys.readouterr()
    # stderr goes through rich, which wraps long lines: compare words, not line breaks.
    return int(exit_info.value.code or 0), captured.out, " ".join(captured.err.split())


# ---------------------------------------------------------------- the release store


def rewrite_published(path: Path, number: int, edit: Callable[[pd.DataFrame], None]) -> None:
    """Apply ``edit`` to the stored ``T*(number)`` behind the store's back (no checksum)."""
    connection = sqlite3.connect(path)
    blob = connection.execute("SELECT published FROM releases WHERE number = ?",
                              (number,)).fetchone()[0]
    frame = pd.read_parquet(io.BytesIO(blob))
    edit(frame)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    connection.execute("UPDATE releases SET published = ? WHERE number = ?",
                       (buffer.getvalue(), number))
    connection.commit()
    connection.close()


def tamper(path: Path, number: int) -> None:
    """Change one published sensitive value of release ``number`` behind the store's back."""

    def edit(frame: pd.DataFrame) -> None:
        frame.loc[0, "disease"] = frame.loc[0, "disease"] + "-x"

    rewrite_published(path, number, edit)


# ---------------------------------------------------------------- a schema with every QI kind

PLACE_HIERARCHY = Hierarchy.from_rows(
    [["x1", "X", "*"], ["x2", "X", "*"], ["y1", "Y", "*"], ["y2", "Y", "*"]]
)
#: One QI of each kind: numeric ``age``, ordered ``edu``, hierarchical ``place``.
THREE_KIND_SCHEMA = Schema(
    identifier="id",
    sensitive="sa",
    qis=(
        QIAttribute("age"),
        QIAttribute("edu", "ordered", order=("a", "b", "c")),
        QIAttribute("place", "hierarchy", hierarchy=PLACE_HIERARCHY),
    ),
)

# ---------------------------------------------------------------- the ε-inclusion paper

EPS_COLUMNS = ("name", "age", "zip", "disease")
EPS_SCHEMA = Schema("name", "disease", (QIAttribute("age"), QIAttribute("zip")))
#: Table 1a (microdata T(1)) and Table 2a (T(2)); zip codes in thousands.
EPS_TABLE_1A = [
    ("Bob", 21, 12, "dyspepsia"), ("Alice", 22, 14, "bronchitis"), ("Andy", 24, 18, "flu"),
    ("David", 23, 25, "gastritis"), ("Gary", 41, 20, "flu"), ("Helen", 36, 27, "gastritis"),
    ("Jane", 37, 33, "dyspepsia"), ("Ken", 40, 35, "flu"),
]
EPS_TABLE_2A = [
    ("Bob", 21, 12, "dyspepsia"), ("David", 23, 25, "gastritis"), ("Mary", 24, 30, "pneumonia"),
    ("Emily", 25, 21, "flu"), ("Jane", 37, 33, "dyspepsia"), ("Gary", 41, 20, "flu"),
    ("Tom", 60, 44, "gastritis"), ("Vince", 65, 36, "flu"), ("Ray", 22, 27, "colitis"),
    ("Paul", 52, 34, "pneumonia"), ("Steve", 56, 40, "gastritis"),
]


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows as CSV text with a header line (no quoting: the values hold no commas)."""
    return "".join(",".join(str(v) for v in line) + "\n" for line in [columns, *rows])


def brute_force_bucket(points: np.ndarray, values: np.ndarray, fake: np.ndarray,
                       objective: str) -> float:
    """Least objective over every grouping of a balanced bucket into groups of one row per
    value that each keep a real row (all permutations; tiny buckets only)."""
    names = sorted(set(values.tolist()))
    rows = [np.flatnonzero(values == v) for v in names]
    k = len(rows[0])
    best = np.inf
    for perms in itertools.product(*(itertools.permutations(r.tolist()) for r in rows[1:])):
        groups = np.empty(len(values), dtype=np.int64)
        groups[rows[0]] = np.arange(k)
        for perm in perms:
            groups[list(perm)] = np.arange(k)
        if any(fake[groups == g].all() for g in range(k)):
            continue
        best = min(best, grouping_objective(np.nan_to_num(points), fake, groups,
                                            objective))  # type: ignore[arg-type]
    return float(best)


def random_hospital_table(seed: int, rows: int, values: int = 4) -> pd.DataFrame:
    """Rows of the hospital example's schema (``name``, numeric ``age`` and ``zip``,
    ``disease``) with random QIs and ``values`` diseases drawn at random, each at least
    once where there are enough rows (a table of 12 rows once drew two diseases of four,
    and a release at m = 3 was then refused)."""
    rng = np.random.default_rng(seed)
    names = np.array(["flu", "gastritis", "dyspepsia", "bronchitis", "cold"][:values])
    drawn = rng.integers(0, values, size=rows)
    if rows >= values:
        drawn[rng.choice(rows, size=values, replace=False)] = np.arange(values)
    return pd.DataFrame({
        "name": [f"p{i}" for i in range(rows)],
        "age": rng.integers(20, 60, size=rows).astype(float),
        "zip": rng.integers(10, 40, size=rows).astype(float) * 1000,
        "disease": names[drawn],
    })
