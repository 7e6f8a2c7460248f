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

from republish.release import Release
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.store import ReleaseStore
from republish.store_writing import checksum

__all__ = ["iter_releases", "state_differences", "verify_history"]


def iter_releases(store: ReleaseStore) -> Iterator[Release]:
    """Every stored release in publication order, read one at a time."""
    for number in store.release_numbers():
        yield store.release(number)


def state_differences(stored: PublisherState, replayed: PublisherState) -> list[str]:
    """Differences between the stored private state and the replayed one (vectorized)."""
    problems = []
    a, b = stored.rows, replayed.rows
    if len(a) != len(b) or not a.index.sort_values().equals(b.index.sort_values()):
        missing = b.index.difference(a.index)[:5].tolist()
        extra = a.index.difference(b.index)[:5].tolist()
        return [f"private state: identifiers missing {missing} / unexpected {extra}"]
    a = a.loc[b.index]
    for column in [LAST_RELEASE, *(c for c in b.columns if c not in (LAST_RELEASE, SIGNATURE))]:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        differs = x != y
        if differs.dtype == bool and differs.any():
            problems.append(f"private state: column {column!r} differs for "
                            f"{b.index[differs][:5].tolist()}")
    ours, theirs = _table(stored.signatures), _table(replayed.signatures)
    left, right = a[SIGNATURE].to_numpy(), b[SIGNATURE].to_numpy()
    pairs = np.unique(np.stack([left, right]), axis=1) if len(left) else np.zeros((2, 0), int)
    bad = {(int(x), int(y)) for x, y in pairs.T.tolist() if ours[x] != theirs[y]}
    if bad:
        mask = np.array([(int(x), int(y)) in bad for x, y in zip(left, right, strict=True)])
        problems.append(f"private state: last signature differs for "
                        f"{b.index[mask][:5].tolist()}")
    if stored.deferred != replayed.deferred:
        problems.append("private state: deferred identifiers differ from the last release")
    return problems


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
        report = store.definition.check_step(release, state, options)
        problems.extend(f"release {number}: {v.reason}" for v in report.violations)
        state = state.advance(release)
        del release, row
    if numbers:
        problems.extend(state_differences(store.state(), state))
    return problems
