"""Verify a store's whole history release by release, in the memory of one release.

Lemma 4 of the m-invariance paper: release ``n`` is checked with ``T*(n)`` and the private
state after release ``n - 1`` alone. :func:`verify_history` replays the store from the
empty state: for every release it recomputes the checksum, runs the principle's
:meth:`~republish.principles.catalog.Principle.check_step` against the replayed state (the
check every release passed before it was written: for m-invariance m-uniqueness,
counterfeits, hygiene, and every returning row's last signature, across gaps), advances
the state, and drops the release. At the end the replayed state must equal the stored
one. Only one release and the state are in memory at a time, so a long history costs its
length in time, not in memory (``republish verify`` loaded every release first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from republish.release import Release
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.store import ReleaseStore
from republish.store_layout import checksum

__all__ = ["iter_releases", "state_differences", "verify_history"]


def iter_releases(store: ReleaseStore) -> Iterator[Release]:
    """Every stored release in publication order, read one at a time."""
    for number in store.release_numbers():
        yield store.release(number)


def state_differences(stored: PublisherState, replayed: PublisherState) -> list[str]:
    """Differences between the stored private state and the replayed one (vectorized)."""
    problems = []
    a, b = stored.rows, replayed.rows
    indexer = _same_identifiers(a.index, b.index)
    if indexer is None:
        missing = b.index.difference(a.index)[:5].tolist()
        extra = a.index.difference(b.index)[:5].tolist()
        return [f"private state: identifiers missing {missing} / unexpected {extra}"]
    a = a.iloc[indexer] if isinstance(indexer, np.ndarray) else a.loc[b.index]
    for column in [LAST_RELEASE, *(c for c in b.columns if c not in (LAST_RELEASE, SIGNATURE))]:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        differs = x != y
        if differs.dtype == bool and differs.any():
            problems.append(f"private state: column {column!r} differs for "
                            f"{b.index[differs][:5].tolist()}")
    ours, theirs = _table(stored.signatures), _table(replayed.signatures)
    left, right = a[SIGNATURE].to_numpy(), b[SIGNATURE].to_numpy()
    width = max(len(theirs), 1)
    keys = np.unique(left.astype(np.int64) * width + right.astype(np.int64))
    bad = {(int(x), int(y)) for x, y in zip((keys // width).tolist(), (keys % width).tolist(),
                                            strict=True) if ours[x] != theirs[y]}
    if bad:
        mask = np.array([(int(x), int(y)) in bad for x, y in zip(left, right, strict=True)])
        problems.append(f"private state: last signature differs for "
                        f"{b.index[mask][:5].tolist()}")
    if stored.deferred != replayed.deferred:
        problems.append("private state: deferred identifiers differ from the last release")
    return problems


def _same_identifiers(stored: pd.Index, replayed: pd.Index) -> np.ndarray | bool | None:
    """Whether both indexes hold the same identifiers (as sorted lists): the positions in
    ``stored`` of ``replayed``'s identifiers when both are unique (hashing, linear), True
    when equal only as sorted lists with repeats, None when they differ."""
    if len(stored) != len(replayed):
        return None
    if stored.is_unique and replayed.is_unique:
        indexer = np.asarray(stored.get_indexer(replayed), dtype=np.int64)
        return indexer if bool((indexer >= 0).all()) else None
    return True if stored.sort_values().equals(replayed.sort_values()) else None


def _table(signatures: tuple[frozenset[str], ...]) -> np.ndarray:
    table = np.empty(len(signatures), dtype=object)
    table[:] = list(signatures)
    return table


def verify_history(store: ReleaseStore,
                   progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Problems of the store's history, checked release by release (module docstring);
    ``progress(number, count)`` is called before each release."""
    problems: list[str] = []
    numbers = store.release_numbers()
    state = PublisherState.empty(store.schema, store.m, store.identifier_kind)
    options = store.principle_options
    for number in numbers:
        if progress is not None:
            progress(number, len(numbers))
        row = store._row(number)
        if checksum(row, row) != row["checksum"]:
            problems.append(f"release {number}: stored content does not match the release "
                            "checksum (the store was modified outside republish)")
        release = store.release(number)
        # the identifiers are hashed once for the check and the state's advance
        positions = state.positions(release.assignment[store.schema.identifier])
        report = store.definition.check_step(release, state, options, positions)
        problems.extend(f"release {number}: {v.reason}" for v in report.violations)
        state = state.advance(release, positions=positions)
        del release, row
    if numbers:
        problems.extend(state_differences(store.state(), state))
    return problems
