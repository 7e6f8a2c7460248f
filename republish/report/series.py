"""The figures of every release of a store, one row per release (``republish report``).

:func:`store_report` reads a store and returns a :class:`StoreReport`: the public figures
of every release (:attr:`StoreReport.releases`, the columns of :data:`COLUMNS` plus one
``width_<qi>`` per QI) and, kept apart, the private list of deferred identifiers
(:attr:`StoreReport.deferred`). The definitions are in ``docs/report.md``; in short:

* movements and certificate fields are the store's ``history`` figures;
* ``counterfeit_share`` = counterfeits / published rows of ``T*(n)`` (counterfeits
  included); ``deferred_share`` = deferred / rows of ``T(n)``;
* ``ncp`` and ``width_<qi>``: the mean normalized extent, per real published row, of the
  row's group box on each QI (``ncp`` is their mean over the QIs, in [0, 1]);
* ``query_error``: median relative error of a random COUNT(*) workload answered from
  ``T*(n)`` and ``R(n)`` against the real rows published (:mod:`republish.metrics`);
* ``k``, ``l``, ``l_distinct``, ``risk_*``: :mod:`republish.report.risk` on ``T*(n)``;
* ``vulnerable``, ``audit_highest_risk``: the intersection attack
  (:mod:`republish.audit.intersection`) on releases 1..n, with the adversary knowing
  every published individual's QIs and releases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import knowledge_from_releases
from republish.errors import ParameterError
from republish.generalization import Domain, group_boxes, normalized_lengths
from republish.metrics import (
    DEFAULT_SELECTIVITY,
    answer_exact,
    estimate_from_permuted,
    estimate_from_release,
    generate_queries,
    relative_errors,
)
from republish.release import GROUP, Release
from republish.report.risk import DEFAULT_RISK_THRESHOLD, table_risk, validate_threshold
from republish.schema import Schema
from republish.store import ReleaseStore
from republish.tables import encode_qis

__all__ = ["COLUMNS", "StoreReport", "intersection_series", "release_figures", "store_report"]

#: Columns of :attr:`StoreReport.releases` (then ``width_<qi>`` for every QI).
COLUMNS = (
    "release", "rows", "published_rows", "new", "deleted", "reinserted",
    "counterfeits", "counterfeit_share", "deferred", "deferred_share", "substitutions",
    "groups", "status", "objective_name", "objective", "bound", "gap",
    "counts_status", "cost_name", "cost", "cost_status", "cost_bound", "cost_gap",
    "ncp", "query_error", "k", "l", "l_distinct",
    "risk_highest", "risk_average", "records_at_risk",
    "individuals", "vulnerable", "audit_highest_risk", "wall_time_s",
)


@dataclass(frozen=True)
class StoreReport:
    """What ``republish report`` shows, and the private list it writes elsewhere.

    ``releases`` holds public figures only (no identifier, no row). ``deferred`` is
    private: columns ``release`` and ``identifier``, one row per deferred row.
    """

    store: str
    principle: str
    m: int
    schema: Schema
    releases: pd.DataFrame
    deferred: pd.DataFrame
    threshold: float
    queries: int
    selectivity: float
    seed: int

    @property
    def width_columns(self) -> list[str]:
        return [f"width_{name}" for name in self.schema.qi_names]


def _information_loss(release: Release) -> tuple[float, list[float]]:
    """NCP and the mean normalized width per QI over the real published rows."""
    schema = release.schema
    rows = release.assignment
    if not len(rows) or release.model == "exact":
        return 0.0, [0.0] * len(schema.qis)
    codes = encode_qis(rows, schema)
    boxes = group_boxes(codes, rows[GROUP].to_numpy())
    lengths = normalized_lengths(schema, boxes.low, boxes.high, Domain.of(schema, codes),
                                 release.model)
    widths = (boxes.sizes[:, None] * lengths).sum(axis=0) / boxes.sizes.sum()
    return float(widths.mean()), [float(w) for w in widths]


def release_query_error(release: Release, counterfeits: bool, queries: int,
                        selectivity: float, seed: int) -> float:
    """Median relative error of ``queries`` random COUNT(*) queries (``nan`` if none has a
    non-zero answer): exact answers on the real rows published, estimates from ``T*(n)``
    (with ``R(n)`` when ``counterfeits``; a permutation publication by its own estimator)."""
    schema, table, published = release.schema, release.assignment, release.published
    if not len(table) or queries == 0:
        return float("nan")
    values = sorted(set(table[schema.sensitive].astype(str))
                    | set(published[schema.sensitive].astype(str)))
    workload = generate_queries(schema, table, queries, selectivity, seed,
                                sensitive_values=values)
    domain = Domain.of(schema, encode_qis(table, schema))
    if release.model == "exact":
        estimate = estimate_from_permuted(published, schema, workload, domain)
    else:
        estimate = estimate_from_release(
            published, release.counterfeits if counterfeits else None, schema, workload, domain)
    errors = relative_errors(answer_exact(table, schema, workload), estimate)
    return float(np.median(errors)) if len(errors) else float("nan")


def intersection_series(releases: Sequence[Release]) -> list[dict[str, Any]]:
    """Per release ``n``: the intersection attack on releases ``1..n``.

    ``individuals`` published so far, ``vulnerable`` (one candidate value left, Lemma 1),
    ``inconsistent`` (none left) and ``audit_highest_risk``, ``1 /`` the smallest
    non-empty candidate set (the chance of guessing right by picking uniformly in it).
    """
    if not releases:
        return []
    knowledge = knowledge_from_releases(list(releases))
    attack = intersection_attack(list(releases), knowledge, keep_per_release=True)
    presence = knowledge.presence[attack.rows]
    running = np.full(attack.masks.shape, np.iinfo(np.uint64).max, dtype=np.uint64)
    seen = np.zeros(len(attack.rows), dtype=bool)
    series = []
    for j, css in enumerate(attack.per_release):
        here = presence[:, j]
        running[here] &= css[here]
        seen |= here
        sizes = np.bitwise_count(running[seen]).sum(axis=1)
        positive = sizes[sizes > 0]
        series.append({
            "individuals": int(seen.sum()),
            "vulnerable": int((sizes == 1).sum()),
            "inconsistent": int((sizes == 0).sum()),
            "audit_highest_risk": float(1.0 / positive.min()) if len(positive) else 0.0,
        })
    return series


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def release_figures(release: Release, stats: dict[str, Any], counts_file: str, queries: int,
                    selectivity: float, seed: int, threshold: float) -> dict[str, Any]:
    """The public figures of one release, without the intersection audit's."""
    counterfeit_rows = release.counterfeit_total() if counts_file == "counterfeits" else 0
    real = len(release.assignment)
    rows = int(stats.get("rows", real + len(release.deferred)))
    deferred = len(release.deferred)
    ncp, widths = _information_loss(release)
    risk = table_risk(release.published, release.schema, threshold)
    figures: dict[str, Any] = {
        "release": release.number, "rows": rows, "published_rows": real,
        "new": stats.get("new"), "deleted": stats.get("deleted"),
        "reinserted": stats.get("reinserted"),
        "counterfeits": counterfeit_rows,
        "counterfeit_share": counterfeit_rows / len(release.published)
        if len(release.published) else 0.0,
        "deferred": deferred, "deferred_share": deferred / rows if rows else 0.0,
        "substitutions": stats.get("substitutions"),
        "groups": release.group_count(),
        "status": stats.get("status"), "objective_name": stats.get("objective_name"),
        "objective": _number(stats.get("objective")), "bound": _number(stats.get("bound")),
        "gap": _number(stats.get("gap")), "counts_status": stats.get("counts_status"),
        "cost_name": stats.get("cost_name"), "cost": _number(stats.get("cost")),
        "cost_status": stats.get("cost_status"), "cost_bound": _number(stats.get("cost_bound")),
        "cost_gap": _number(stats.get("cost_gap")),
        "ncp": ncp,
        "query_error": release_query_error(release, counts_file == "counterfeits", queries,
                                           selectivity, seed + release.number),
        "k": risk.k, "l": risk.l, "l_distinct": risk.l_distinct,
        "risk_highest": risk.highest_risk, "risk_average": risk.average_risk,
        "records_at_risk": risk.records_at_risk,
        "wall_time_s": _number(stats.get("wall_time_s")),
    }
    for name, width in zip(release.schema.qi_names, widths, strict=True):
        figures[f"width_{name}"] = width
    return figures


def store_report(
    store: ReleaseStore,
    queries: int = 1000,
    selectivity: float = DEFAULT_SELECTIVITY,
    seed: int = 0,
    threshold: float = DEFAULT_RISK_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> StoreReport:
    """The figures of every release of ``store`` (see the module docstring).

    ``queries`` random COUNT(*) queries of expected ``selectivity`` per release (workload
    seed ``seed + n`` for release ``n``); ``threshold`` sets *records at risk*;
    ``progress`` is called with (releases done, releases).
    """
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 0:
        raise ParameterError(f"queries (--queries) must be an integer >= 0, got {queries!r}.")
    if not 0.0 < float(selectivity) <= 1.0:
        raise ParameterError(
            f"selectivity (--selectivity) must be in (0, 1], got {selectivity!r}.")
    threshold = validate_threshold(threshold)
    releases = store.releases()
    history = {row["release"]: row for row in store.history()}
    counts_file = store.definition.counts_file
    rows = []
    for done, release in enumerate(releases, start=1):
        rows.append(release_figures(release, history.get(release.number, {}), counts_file,
                                    queries, selectivity, seed, threshold))
        if progress is not None:
            progress(done, len(releases))
    for figures, audit in zip(rows, intersection_series(releases), strict=True):
        figures.update({k: audit[k] for k in ("individuals", "vulnerable",
                                              "audit_highest_risk")})
    widths = [f"width_{name}" for name in store.schema.qi_names]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *widths])
    deferred = pd.DataFrame(
        [(r.number, str(ident)) for r in releases for ident in r.deferred],
        columns=["release", "identifier"],
    )
    return StoreReport(
        store=store.path.name, principle=store.principle, m=store.m, schema=store.schema,
        releases=frame, deferred=deferred, threshold=threshold, queries=queries,
        selectivity=float(selectivity), seed=seed,
    )
