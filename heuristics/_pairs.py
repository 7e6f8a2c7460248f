"""Rows as (QI-group, SA value) pairs: the multiset view of TP (l-diversity paper, §5.1).

Rows with identical QI values form a QI-group and rows of one QI-group with one SA value
are interchangeable, so TP and the tuple minimization model work on the counts of these
pairs; :func:`residue_mask` maps counts removed per pair back to rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.errors import InputError

__all__ = ["check_l_eligible", "encode_sensitive", "qi_classes", "residue_mask"]


def qi_classes(codes: np.ndarray) -> np.ndarray:
    """QI-group number of every row: rows with identical QI codes share a number."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or len(codes) == 0:
        return np.zeros(len(codes), dtype=np.int64)
    frame = pd.DataFrame(codes)
    return frame.groupby(list(frame.columns), sort=True).ngroup().to_numpy(dtype=np.int64)


def encode_sensitive(sensitive: np.ndarray | Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """SA value codes ``0 .. m-1`` of every row (codes follow the sorted values) and the values."""
    codes, uniques = pd.factorize(np.asarray(sensitive), sort=True)
    return codes.astype(np.int64), np.asarray(uniques)


def check_l_eligible(
    sensitive: np.ndarray | Sequence[object], l: int, name: str = "SA"  # noqa: E741
) -> None:
    """Raise :class:`InputError` naming the too frequent value if the table is not l-eligible."""
    codes, uniques = encode_sensitive(sensitive)
    counts = np.bincount(codes, minlength=len(uniques))
    n = int(counts.sum())
    if n and l * int(counts.max()) > n:
        worst = int(counts.argmax())
        raise InputError(
            f"the table is not {l}-eligible: {name} value {str(uniques[worst])!r} occurs in "
            f"{int(counts[worst])} of {n} rows, more than n/l = {n / l:g}; no {l}-diverse "
            f"generalization exists (Lemma 1). Lower l, or make the table eligible with "
            f"`republish eligibility`."
        )


def residue_mask(pair_of_row: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """Rows sent to ``R`` when ``removed[p]`` tuples leave pair ``p``: its first rows."""
    pair_of_row = np.asarray(pair_of_row, dtype=np.int64)
    order = np.argsort(pair_of_row, kind="stable")
    pair_sorted = pair_of_row[order]
    first_of_pair = np.searchsorted(pair_sorted, np.arange(len(removed)))
    position = np.arange(len(pair_of_row)) - first_of_pair[pair_sorted]
    in_residue = np.zeros(len(pair_of_row), dtype=bool)
    in_residue[order] = position < np.asarray(removed)[pair_sorted]
    return in_residue
