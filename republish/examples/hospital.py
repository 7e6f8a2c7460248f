"""The hospital example of the m-invariance paper (Xiao & Tao, SIGMOD 2007, Tables 1-3).

The tables ship as package data in ``republish/examples/hospital/``:

* ``table1a.csv`` / ``table2a.csv``: the microdata ``T(1)`` and ``T(2)`` (Tables 1a, 2a);
* ``table1b.csv`` / ``table2b.csv``: their conventional generalizations (Tables 1b, 2b),
  which together let an adversary learn Bob's disease;
* ``table3a.csv`` + ``counterfeits3b.csv``: the counterfeited, 2-invariant ``T*(2)``
  (Table 3a, counterfeits ``c1`` in group 1 and ``c2`` in group 3) and ``R(2)`` (Table 3b);
* ``assignment*.csv``: the publisher's private state, which name sits in which group.

Zip codes are stored as full numbers (the paper writes ``12k`` for 12000). Every box
equals the one recomputed from the microdata except group 1 of Table 3a, whose only real
row is Bob (21, 12000): the paper publishes it with Bob's Table 1b box
``[21, 22] x [12000, 14000]`` rather than the single point, and so does this example.
"""

from __future__ import annotations

import io
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.release import COUNT, GROUP, Release
from republish.schema import Schema
from republish.tables import load_table

_PACKAGE = "republish.examples"
_FOLDER = "hospital"


@dataclass(frozen=True)
class HospitalExample:
    """The paper's two microdata snapshots and three releases.

    ``t1_star`` is Table 1b (release 1), ``t2_star`` Table 2b (release 2, the
    conventional generalization that leaks Bob's disease), ``t3_star`` Tables 3a + 3b
    (release 2 with counterfeits, the 2-invariant alternative to ``t2_star``).
    """

    schema: Schema
    t1: pd.DataFrame
    t2: pd.DataFrame
    t1_star: Release
    t2_star: Release
    t3_star: Release


def _text(name: str) -> str:
    resource = resources.files(_PACKAGE).joinpath(_FOLDER).joinpath(name)
    return resource.read_text(encoding="utf-8")


def _csv(name: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(_text(name)), dtype=str, keep_default_na=False)


def _published(name: str, schema: Schema) -> pd.DataFrame:
    frame = _csv(name)[schema.published_columns]
    frame[GROUP] = frame[GROUP].astype(np.int64)
    return frame


def _counterfeits(name: str | None) -> pd.DataFrame:
    if name is None:
        return pd.DataFrame(
            {GROUP: pd.Series([], dtype=np.int64), COUNT: pd.Series([], dtype=np.int64)}
        )
    frame = _csv(name)[[GROUP, COUNT]]
    return frame.astype({GROUP: np.int64, COUNT: np.int64})


def _assignment(name: str, table: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    groups = _csv(name)
    groups[GROUP] = groups[GROUP].astype(np.int64)
    merged = table.merge(groups, on=schema.identifier, how="left", validate="one_to_one")
    if merged[GROUP].isna().any():
        missing = merged.loc[merged[GROUP].isna(), schema.identifier].tolist()
        raise InputError(f"hospital example {name}: no group for {missing}.")
    merged[GROUP] = merged[GROUP].astype(np.int64)
    return merged[[schema.identifier, GROUP, *schema.qi_names, schema.sensitive]]


def _release(
    number: int,
    schema: Schema,
    table: pd.DataFrame,
    published: str,
    assignment: str,
    counterfeits: str | None,
    source: str,
) -> Release:
    return Release(
        number=number,
        schema=schema,
        published=_published(published, schema),
        counterfeits=_counterfeits(counterfeits),
        assignment=_assignment(assignment, table, schema),
        model="interval",
        metadata={"source": source},
    )


def load_hospital() -> HospitalExample:
    """Load the hospital example from the package data.

    Returns
    -------
    HospitalExample
        ``schema`` (identifier ``name``, numeric QIs ``age`` and ``zip``, sensitive
        ``disease``), the validated microdata ``t1``/``t2`` and the releases
        ``t1_star``, ``t2_star``, ``t3_star`` with the paper's group numbers.
    """
    schema = Schema.from_dict(tomllib.loads(_text("schema.toml")))
    t1 = load_table(_csv("table1a.csv"), schema)
    t2 = load_table(_csv("table2a.csv"), schema)
    paper = "Xiao & Tao, m-invariance, SIGMOD 2007"
    return HospitalExample(
        schema=schema,
        t1=t1,
        t2=t2,
        t1_star=_release(1, schema, t1, "table1b.csv", "assignment1b.csv", None,
                         f"{paper}, Table 1b"),
        t2_star=_release(2, schema, t2, "table2b.csv", "assignment2b.csv", None,
                         f"{paper}, Table 2b"),
        t3_star=_release(2, schema, t2, "table3a.csv", "assignment3a.csv",
                         "counterfeits3b.csv", f"{paper}, Tables 3a and 3b"),
    )
