"""Division: bucket the rows already published by their signature (m-invariance paper, §4.1).

Xiao & Tao (SIGMOD 2007), §4.1, phase 1: every row of ``S∩ = T(n) ∩ T(n-1)`` gets the
signature of its hosting group in ``T*(n-1)``, and rows with equal signatures form one
*bucket*. The product extends ``S∩`` with re-inserted rows (published before, absent from
the last release, back now): they take the signature they had when last published, so
every row of a bucket must end in a group with exactly the bucket's signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.errors import InputError

__all__ = ["Division", "divide_by_signature"]


@dataclass(frozen=True)
class Division:
    """Buckets of previously published rows.

    Attributes
    ----------
    signatures:
        ``signatures[b]``: the signature (set of sensitive values) of bucket ``b``.
    bucket_of_row:
        ``bucket_of_row[i]``: the bucket of input row ``i``.
    counts:
        ``counts[b]``: rows of bucket ``b`` per sensitive value of its signature
        (values of the signature without rows have count 0).
    """

    signatures: tuple[frozenset[str], ...]
    bucket_of_row: np.ndarray
    counts: tuple[dict[str, int], ...]


def divide_by_signature(
    row_signatures: Sequence[int] | np.ndarray,
    signatures: Sequence[frozenset[str]],
    row_values: Sequence[str] | np.ndarray,
) -> Division:
    """Partition previously published rows into buckets of equal signature.

    Parameters
    ----------
    row_signatures:
        For each row, the index in ``signatures`` of the signature of its last published
        hosting group.
    signatures:
        The signature table (distinct sets of sensitive values).
    row_values:
        For each row, its sensitive value, which must belong to its signature.

    Raises
    ------
    InputError
        if the sequences differ in length, a code is outside the table, or a row's value
        is outside its signature (the stored state does not match the data).
    """
    codes = np.asarray(row_signatures, dtype=np.int64)
    values = np.asarray(row_values, dtype=object)
    if codes.shape != values.shape:
        raise InputError(f"{len(codes)} signature codes for {len(values)} sensitive values.")
    if len(codes) and (codes.min() < 0 or codes.max() >= len(signatures)):
        raise InputError(
            f"signature codes must lie in 0..{len(signatures) - 1}; got {codes.min()}..."
            f"{codes.max()}."
        )
    used, bucket_of_row = np.unique(codes, return_inverse=True)
    bucket_signatures = tuple(frozenset(signatures[int(c)]) for c in used)
    counts: list[dict[str, int]] = [dict.fromkeys(sorted(s), 0) for s in bucket_signatures]
    if len(values):
        value_codes, value_names = pd.factorize(values)
        pair = bucket_of_row.astype(np.int64) * len(value_names) + value_codes
        tally = np.bincount(pair, minlength=len(bucket_signatures) * len(value_names))
        for flat in np.flatnonzero(tally).tolist():
            bucket, value = divmod(flat, len(value_names))
            name = str(value_names[value])
            if name not in counts[bucket]:
                raise InputError(
                    f"{int(tally[flat])} row(s) with sensitive value {name!r} were published in "
                    f"groups with signature {sorted(bucket_signatures[bucket])}, which lacks "
                    "that value; the stored state does not match the data."
                )
            counts[bucket][name] = int(tally[flat])
    return Division(
        signatures=bucket_signatures,
        bucket_of_row=bucket_of_row.astype(np.int64),
        counts=tuple(counts),
    )
