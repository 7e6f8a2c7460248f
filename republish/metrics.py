"""Utility of published tables: the query workload error and the KL-divergence.

Query workload (m-invariance paper, §5.2): random COUNT(*) range queries over the QIs and
the sensitive attribute with expected selectivity ``theta``
(:mod:`republish.query_workload`), answered exactly on ``T(j)`` (``act``) and estimated
from ``T*(j)`` and ``R(j)`` (``est``, :mod:`republish.query_estimates`). The relative error
is ``|act - est| / act``; queries with ``act = 0`` are skipped (the ratio is undefined) and
the workload error is the median (:func:`query_error`).

KL-divergence (l-diversity paper, §6.2, eq. 2): :mod:`republish.kl_divergence`.

Every name of those modules used by callers is importable from here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from republish.generalization import Domain
from republish.kl_divergence import kl_divergence
from republish.query_estimates import estimate_from_permuted, estimate_from_release
from republish.query_workload import (
    DEFAULT_SELECTIVITY,
    Method,
    QueryWorkload,
    answer_exact,
    generate_queries,
)
from republish.schema import Schema
from republish.tables import encode_qis

__all__ = [
    "DEFAULT_SELECTIVITY",
    "Method",
    "QueryWorkload",
    "answer_exact",
    "estimate_from_permuted",
    "estimate_from_release",
    "generate_queries",
    "kl_divergence",
    "query_error",
    "relative_errors",
]


def relative_errors(actual: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """``|act - est| / act`` of every query with ``act > 0`` (the others are skipped)."""
    actual = np.asarray(actual, dtype=float)
    keep = actual > 0
    return np.abs(actual[keep] - np.asarray(estimate, dtype=float)[keep]) / actual[keep]


def query_error(
    table: pd.DataFrame,
    published: pd.DataFrame,
    counterfeits: pd.DataFrame | None,
    schema: Schema,
    count: int = 1000,
    selectivity: float = DEFAULT_SELECTIVITY,
    seed: int = 0,
) -> float:
    """Workload error: median relative error of ``count`` random queries (§5.2).

    The workload is drawn on ``table``'s domain; the sensitive domain is every value of
    ``table`` or ``published`` (counterfeits may carry values absent from ``T(j)``).
    Queries whose actual answer is 0 are skipped; ``nan`` when every query is skipped.
    """
    values = sorted(
        set(table[schema.sensitive].astype(str)) | set(published[schema.sensitive].astype(str))
    )
    workload = generate_queries(schema, table, count, selectivity, seed, sensitive_values=values)
    domain = Domain.of(schema, encode_qis(table, schema))
    errors = relative_errors(
        answer_exact(table, schema, workload),
        estimate_from_release(published, counterfeits, schema, workload, domain),
    )
    return float(np.median(errors)) if len(errors) else float("nan")
