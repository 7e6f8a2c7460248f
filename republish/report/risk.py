"""Achieved k and l, and the re-identification risk of a published table (ARX's figures).

Every figure is computed on the published table as its reader sees it, counterfeits
included (they cannot be told apart from real rows). QI groups are formed as
:mod:`republish.principles.k_anonymity` forms them: the ``group`` column when the table has
one, else identical QI cells. An *equivalence class* is the rows of one QI group with
identical QI cells: the group itself in a generalized table; a single row of a
permutation publication (ε-inclusion, exact QIs), whose QIs link straight to the row.
(ARX forms classes from identical QI cells only; a generalization may give two groups the
same cells, so these classes are the same or smaller: the same or a higher risk.)

* **k**: the size of the smallest class (the table is k-anonymous for every k' <= k).
* **l**: the largest ``l`` for which the table is (frequency) l-diverse, the definition
  ``republish check --principle l-diversity`` verifies: no sensitive value fills more than
  ``|G| / l`` rows of a QI group ``G``, so ``l = min over groups floor(|G| / most frequent
  value's count)``.
* **l_distinct**: the fewest distinct sensitive values in a QI group (distinct l-diversity).
* **prosecutor risk** (ARX's "prosecutor attacker model"): a record in class ``G`` is
  re-identified with probability ``1 / |G|``. *Highest risk* is ``1 / k``; *average risk*
  (ARX's "success rate") is the mean over records, ``classes / records``; *records at
  risk* is the share of records whose risk is strictly above ``threshold``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.schema import Schema

__all__ = ["DEFAULT_RISK_THRESHOLD", "TableRisk", "table_risk", "validate_threshold"]

#: Default threshold of "records at risk": a risk above 0.2 means a class of fewer than 5
#: records (a common k = 5 rule of thumb).
DEFAULT_RISK_THRESHOLD = 0.2


@dataclass(frozen=True)
class TableRisk:
    """The privacy figures of one published table (see the module docstring).

    ``records`` counts the published rows (counterfeits included), ``groups`` the QI
    groups, ``classes`` the equivalence classes (equal to ``groups`` in a generalized
    table). On an empty table ``k``, ``l`` and ``l_distinct`` are 0 and the risks 0.
    """

    records: int
    groups: int
    classes: int
    k: int
    l: int  # noqa: E741 - the principle's symbol
    l_distinct: int
    highest_risk: float
    average_risk: float
    records_at_risk: float
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_threshold(threshold: float) -> float:
    """``threshold`` as a float in [0, 1], else :class:`ParameterError`."""
    value = float(threshold)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ParameterError(
            f"risk threshold (--risk-threshold) must be a number in [0, 1], got {threshold!r}; "
            f"the default is {DEFAULT_RISK_THRESHOLD}."
        )
    return value


def _check_columns(published: pd.DataFrame, schema: Schema) -> None:
    needed = [*schema.qi_names, schema.sensitive]
    missing = [c for c in needed if c not in published.columns]
    if missing:
        raise InputError(
            f"column(s) {missing} missing from the published table; it has "
            f"{list(published.columns)[:12]}. The schema's QIs and sensitive column must be "
            "published."
        )


def class_labels(published: pd.DataFrame, schema: Schema,
                 group_column: str | None = "group") -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``published``: its QI group (0..G-1: the group column, else identical QI
    cells) and its equivalence class (0..C-1: rows of one group with identical QI cells)."""
    _check_columns(published, schema)
    if not len(published):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    cells = published[schema.qi_names].astype(str)
    by_cells = np.asarray(cells.groupby(schema.qi_names, sort=False).ngroup().to_numpy())
    if group_column is None or group_column not in published.columns:
        return by_cells, by_cells
    groups = np.asarray(pd.factorize(published[group_column], use_na_sentinel=False)[0])
    classes = pd.DataFrame({"g": groups, "c": by_cells}).groupby(["g", "c"], sort=False)
    return groups, np.asarray(classes.ngroup().to_numpy())


def table_risk(
    published: pd.DataFrame,
    schema: Schema,
    threshold: float = DEFAULT_RISK_THRESHOLD,
    group_column: str | None = "group",
) -> TableRisk:
    """k, l, distinct l and prosecutor risk of ``published`` (see the module docstring).

    ``threshold`` (in [0, 1]) sets *records at risk*: the share of records whose risk
    ``1 / |G|`` is strictly above it.
    """
    threshold = validate_threshold(threshold)
    groups, classes = class_labels(published, schema, group_column)
    records = len(classes)
    if records == 0:
        return TableRisk(0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, threshold)
    sizes = np.bincount(classes)  # labels are 0..C-1, every one used
    values = pd.factorize(published[schema.sensitive].astype(str))[0]
    counts = pd.DataFrame({"g": groups, "v": values}).groupby(["g", "v"], sort=True).size()
    top = counts.groupby(level="g").max().to_numpy()
    distinct = counts.groupby(level="g").size().to_numpy()
    risk_of_record = 1.0 / sizes[classes]
    return TableRisk(
        records=records,
        groups=int(groups.max()) + 1,
        classes=int(len(sizes)),
        k=int(sizes.min()),
        l=int((np.bincount(groups) // top).min()),
        l_distinct=int(distinct.min()),
        highest_risk=float(1.0 / sizes.min()),
        average_risk=float(len(sizes) / records),
        records_at_risk=float((risk_of_record > threshold).mean()),
        threshold=threshold,
    )
