"""TP+: TP, then Mondrian on the residue set (l-diversity paper, §5.6 and §6.1).

TP leaves QI-groups without stars and one residue set ``R``, which is l-eligible. TP+
cuts ``R`` into smaller l-eligible QI-groups with a multidimensional partitioner, so its
rows keep the QI values they share: the paper uses Hilbert [16], this module uses
Mondrian (:mod:`republish.heuristics.mondrian`). The kept QI-groups are unchanged, so
TP+ never has more stars than TP and keeps TP's O(l * d) approximation (§5.6). Its
suppressed tuples are at most TP's: a residue part whose rows agree everywhere has no star.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.generalization import Domain
from republish.heuristics.mondrian import mondrian
from republish.heuristics.three_phase import ThreePhaseResult, three_phase
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = ["TPPlusResult", "refine_residue", "tp_plus", "tp_plus_table"]


@dataclass(frozen=True)
class TPPlusResult:
    """``groups[i]``: QI-group number of row ``i`` (0 .. ``n_groups - 1``); the residue
    parts get numbers after TP's QI-groups. ``three_phase`` is TP's own result."""

    groups: np.ndarray
    n_groups: int
    residue_groups: int
    three_phase: ThreePhaseResult


def refine_residue(
    qi_codes: np.ndarray,
    sensitive: np.ndarray | Sequence[object],
    groups: np.ndarray,
    l: int,  # noqa: E741
    extents: np.ndarray | None = None,
) -> tuple[np.ndarray, int, int]:
    """Cut the rows with ``groups == -1`` (the residue) by Mondrian.

    Returns the new group numbers (dense, 0-based, residue parts last), their count and
    the number of residue parts.
    """
    codes = np.asarray(qi_codes, dtype=np.float64)
    groups = np.asarray(groups)
    if extents is None and len(codes):
        extents = codes.max(axis=0) - codes.min(axis=0)
    kept = groups >= 0
    labels, dense = np.unique(groups[kept], return_inverse=True)
    out = np.empty(len(groups), dtype=np.int64)
    out[kept] = dense
    residue = np.flatnonzero(~kept)
    parts = 0
    if len(residue):
        sa = np.asarray(sensitive)[residue]
        refined = mondrian(codes[residue], sa, l, extents=extents)
        out[residue] = len(labels) + refined.groups
        parts = refined.n_groups
    return out, len(labels) + parts, parts


def tp_plus(
    qi_codes: np.ndarray,
    sensitive: np.ndarray | Sequence[object],
    l: int,  # noqa: E741
    *,
    extents: np.ndarray | None = None,
) -> TPPlusResult:
    """TP+ on rows given by QI codes ``(n, d)`` and SA values ``(n,)``."""
    result = three_phase(qi_codes, sensitive, l)
    groups, n_groups, parts = refine_residue(qi_codes, sensitive, result.groups, l, extents)
    return TPPlusResult(groups, n_groups, parts, result)


def tp_plus_table(table: pd.DataFrame, schema: Schema, l: int) -> TPPlusResult:  # noqa: E741
    """TP+ on a validated table, Mondrian ranges normalized by the schema's domains."""
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    return tp_plus(codes, table[schema.sensitive].to_numpy(), l,
                   extents=domain.high - domain.low)
