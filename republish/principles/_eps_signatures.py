"""Last published signature of every identifier (ε-inclusion paper, Definition 8, Lemma 3).

Checking release ``n`` needs, for every row published before, the signature of the group
that last published it (in ``T*(n-1)`` for the paper's contiguous lifespans, in any
earlier release when rows are re-inserted). :class:`LastSignatures` keeps them columnar;
see :mod:`republish.principles.eps_inclusion` for the checks that use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.principles.m_invariance import published_signatures
from republish.release import GROUP, Release

__all__ = ["LastSignatures", "Previous", "last_signatures"]


@dataclass(frozen=True)
class LastSignatures:
    """Identifier -> (release that last published it, signature of its group there).

    Columnar (``release[i]``, ``code[i]`` into ``signatures`` for ``index[i]``) so that
    200k-row releases are checked with array operations.
    """

    index: pd.Index
    release: np.ndarray
    code: np.ndarray
    signatures: tuple[frozenset[str], ...]

    @classmethod
    def empty(cls) -> LastSignatures:
        return cls(pd.Index([], dtype=object), np.zeros(0, np.int64), np.zeros(0, np.int64), ())

    @classmethod
    def of_release(cls, release: Release) -> LastSignatures:
        signatures = published_signatures(release)
        groups = list(signatures)
        position = {g: i for i, g in enumerate(groups)}
        schema = release.schema
        codes = np.array([position.get(g, len(groups)) for g in
                          release.assignment[GROUP].tolist()], dtype=np.int64)
        table = (*(signatures[g] for g in groups), frozenset())
        return cls(pd.Index(release.assignment[schema.identifier].astype(str).to_numpy()),
                   np.full(len(codes), release.number, dtype=np.int64), codes, table)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, tuple[int, frozenset[str]]]) -> LastSignatures:
        table = list(dict.fromkeys(signature for _, signature in mapping.values()))
        position = {signature: i for i, signature in enumerate(table)}
        return cls(pd.Index(list(mapping), dtype=object),
                   np.array([number for number, _ in mapping.values()], dtype=np.int64),
                   np.array([position[s] for _, s in mapping.values()], dtype=np.int64),
                   tuple(table))

    @classmethod
    def from_state(cls, state: Any) -> LastSignatures:
        """From a :class:`republish.state.PublisherState` (its last release and signature
        per identifier; duck-typed so that this module does not import the state)."""
        rows = state.rows
        return cls(
            pd.Index(rows.index.astype(str), dtype=object),
            rows["last_release"].to_numpy(dtype=np.int64),
            rows["signature"].to_numpy(dtype=np.int64),
            tuple(state.signatures),
        )

    def updated(self, release: Release) -> LastSignatures:
        """These signatures overridden by the rows of a later ``release``."""
        later = LastSignatures.of_release(release)
        kept = ~self.index.isin(later.index)
        return LastSignatures(
            self.index[kept].append(later.index),
            np.concatenate([self.release[kept], later.release]),
            np.concatenate([self.code[kept], later.code + len(self.signatures)]),
            (*self.signatures, *later.signatures),
        )

    def lookup(self, identifiers: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Position of each identifier here (``-1`` when unknown) and its signature code."""
        position = self.index.get_indexer(pd.Index(list(identifiers), dtype=object))
        if not len(self.code):
            return position, np.full(len(position), -1, dtype=np.int64)
        codes = np.where(position >= 0, self.code[np.maximum(position, 0)], -1)
        return position, codes


#: identifier -> (number of the release that last published it, signature of its group),
#: as a mapping or columnar.
Previous = Mapping[str, tuple[int, frozenset[str]]] | LastSignatures


def _columnar(before: Previous | None) -> LastSignatures:
    if before is None:
        return LastSignatures.empty()
    return before if isinstance(before, LastSignatures) else LastSignatures.from_mapping(before)


def last_signatures(release: Release) -> dict[str, tuple[int, frozenset[str]]]:
    """Identifier -> (release number, signature of its group) for every real row."""
    signatures = published_signatures(release)
    schema = release.schema
    return {
        ident: (release.number, signatures.get(group, frozenset()))
        for ident, group in zip(release.assignment[schema.identifier].astype(str),
                                release.assignment[GROUP].tolist(), strict=True)
    }
