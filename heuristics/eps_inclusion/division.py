"""Division phase of the ε-inclusion algorithm (ε-inclusion paper, Algorithm 1, lines 1-2).

The rows published before are bucketed by their last signature and every bucket is split
into clusters holding at most one row per value (:func:`divide`); interchangeable clusters
form the cluster types the assignment phase counts with (:func:`cluster_types`). See
:mod:`republish.heuristics.eps_inclusion` for the whole algorithm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ClusterType", "Clusters", "cluster_types", "divide"]


@dataclass(frozen=True)
class Clusters:
    """Division result: per cluster the old rows (positions in ``T(n)``), the required
    signature ``S_k``, ``present`` (``S_k`` and the rows' true values) and ``missing``
    (values of ``S_k`` no row publishes), value codes, and a locality rank (mean rank of
    its rows). ``kept_substitutes[k]`` maps an old row whose true value lies outside its
    signature (a substitution record before) to the value of ``S_k`` it keeps publishing.
    """

    rows: tuple[np.ndarray, ...]
    signature: tuple[frozenset[int], ...]
    present: tuple[frozenset[int], ...]
    missing: tuple[frozenset[int], ...]
    rank: np.ndarray
    kept_substitutes: tuple[dict[int, int], ...] = ()

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class ClusterType:
    """Interchangeable clusters: same ``present`` and ``missing`` sets, ``members`` old
    rows each."""

    present: frozenset[int]
    missing: frozenset[int]
    clusters: tuple[int, ...]
    members: int = 1

    @property
    def multiplicity(self) -> int:
        return len(self.clusters)


def divide(
    rows: np.ndarray,
    signature_of_row: np.ndarray,
    signatures: Sequence[frozenset[int]],
    values: np.ndarray,
    rank: np.ndarray,
    keep_substitutes: bool = True,
) -> Clusters:
    """Division (Algorithm 1, lines 1-2) of the old rows ``rows`` of ``T(n)``.

    ``signature_of_row[i]`` indexes ``signatures`` (value codes) for ``rows[i]``;
    ``values`` and ``rank`` are indexed by position in ``T(n)``. Rows of one signature
    and value are spread over the bucket's clusters in rank order.

    A row whose true value is outside its signature was a substitution record; published
    truthfully now, its value would be the only one a group adds to its old signature and
    the old members would give it away (docs/eps_inclusion.md). It stays a substitution
    record instead: it takes a missing value of a cluster of its bucket (a new cluster of
    its own when none is left). ``keep_substitutes=False`` is the paper's division (such a
    row is clustered by its true value like any other).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return Clusters((), (), (), (), np.zeros(0), ())
    signature_of_row = np.asarray(signature_of_row, dtype=np.int64)
    row_values = values[rows]
    floating = np.array([keep_substitutes and int(v) not in signatures[int(s)]
                         for v, s in zip(row_values, signature_of_row, strict=True)], dtype=bool)
    fixed = ~floating
    order = np.lexsort((rank[rows][fixed], row_values[fixed], signature_of_row[fixed]))
    bucket, value = signature_of_row[fixed][order], row_values[fixed][order]
    run_start = np.r_[True, (bucket[1:] != bucket[:-1]) | (value[1:] != value[:-1])]
    starts = np.flatnonzero(run_start)
    position = np.arange(len(order)) - starts[np.cumsum(run_start) - 1]
    key = bucket * (int(position.max(initial=0)) + 1) + position
    labels, cluster_of = np.unique(key, return_inverse=True)
    sorted_rows = rows[fixed][order]
    by_cluster = np.argsort(cluster_of, kind="stable")
    bounds = np.searchsorted(cluster_of[by_cluster], np.arange(len(labels) + 1))
    members: list[list[int]] = []
    required: list[frozenset[int]] = []
    true_values: list[set[int]] = []
    open_values: list[set[int]] = []
    kept: list[dict[int, int]] = []
    of_bucket: dict[int, list[int]] = {}
    for c in range(len(labels)):
        mine = sorted_rows[by_cluster[bounds[c]:bounds[c + 1]]]
        code = int(bucket[by_cluster[bounds[c]]])
        held = set(values[mine].tolist())
        members.append(mine.tolist())
        required.append(signatures[code])
        true_values.append(held)
        open_values.append(set(signatures[code]) - held)
        kept.append({})
        of_bucket.setdefault(code, []).append(c)
    for row, code in sorted(zip(rows[floating].tolist(), signature_of_row[floating].tolist(),
                                strict=True), key=lambda item: rank[item[0]]):
        value_code = int(values[row])
        host = next((c for c in of_bucket.get(code, [])
                     if open_values[c] and value_code not in true_values[c]), None)
        if host is None:
            host = len(members)
            members.append([])
            required.append(signatures[code])
            true_values.append(set())
            open_values.append(set(signatures[code]))
            kept.append({})
            of_bucket.setdefault(code, []).append(host)
        shown = min(open_values[host])
        members[host].append(row)
        true_values[host].add(value_code)
        open_values[host].discard(shown)
        kept[host][row] = shown
    arrays = tuple(np.asarray(m, dtype=np.int64) for m in members)
    return Clusters(
        rows=arrays,
        signature=tuple(required),
        present=tuple(frozenset(r | t) for r, t in zip(required, true_values, strict=True)),
        missing=tuple(frozenset(o) for o in open_values),
        rank=np.array([float(rank[m].mean()) for m in arrays]),
        kept_substitutes=tuple(kept),
    )


def cluster_types(clusters: Clusters) -> list[ClusterType]:
    """Group the clusters by (present, missing, old rows); unbalanced types first."""
    kinds: dict[tuple[frozenset[int], frozenset[int], int], list[int]] = {}
    for k in range(len(clusters)):
        key = (clusters.present[k], clusters.missing[k], len(clusters.rows[k]))
        kinds.setdefault(key, []).append(k)
    types = [ClusterType(p, m, tuple(ks), size) for (p, m, size), ks in kinds.items()]
    return sorted(types, key=lambda t: (-len(t.missing), sorted(t.present), t.clusters[0]))
