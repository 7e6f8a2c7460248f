"""Vectorized views of a release for the verifiers' fast paths.

The verifiers build their messages with Python loops over rows, which takes seconds on a
200k-row release, yet a release about to be written almost never violates anything.
So every release verifier first *detects* violations with numpy on integer codes (group
sizes, counts per (group, sensitive value), signatures as integer ids) and runs its
detailed row-by-row code only when detection finds something; reports are therefore
unchanged. Each detector computes exactly the set of groups the detailed code reports
(``tests/test_principles_fast_path.py`` checks both against each other).

The codes below exist only for releases whose ``group`` columns are integer (every
release built by :func:`republish.release.build_release` or read back from a store or
file). Anything else, e.g. a hand-made release with string group labels, a missing column
or repeated identifiers, takes the detailed path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from republish.release import GROUP, Release

__all__ = ["LastPublication", "ReleaseArrays", "SignatureTable", "distinct_text", "integer_column",
           "sorted_factorize", "text_array"]


def integer_column(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    """``frame[column]`` as int64 when it is one numpy integer column, else None."""
    if column not in frame.columns or not frame.columns.is_unique:
        return None
    dtype = frame[column].dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iu":
        return None
    if dtype.kind == "u" and dtype.itemsize >= 8:
        return None
    return frame[column].to_numpy().astype(np.int64, copy=False)


def _text_column(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    """``frame[column].astype(str)`` (what the detailed code iterates over), or None."""
    if column not in frame.columns or not frame.columns.is_unique:
        return None
    return text_array(frame[column])


def text_array(column: pd.Series) -> np.ndarray:
    """``column.astype(str)`` as an object array; when every value already is a ``str``
    (one pass in C decides), the values themselves, without the conversion's copy."""
    values = column.to_numpy()
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return np.asarray(values, dtype=object)
    return column.astype(str).to_numpy(dtype=object)


class ReleaseArrays:
    """Integer codes of one release's published rows and real rows.

    Attributes (set only when :attr:`vectorizable`)
    ----------
    labels:
        Sorted distinct group labels of ``T*(j)`` and of the assignment (int64).
    published_group, assignment_group:
        Position in ``labels`` of each published / real row's group.
    values:
        Distinct sensitive values (as text) of both tables.
    published_value, assignment_value:
        Position in ``values`` of each published / real row's sensitive value.
    identifiers:
        Identifiers of the real rows as text, in assignment order.
    """

    def __init__(self, release: Release) -> None:
        self.release = release
        schema = release.schema
        published_groups = integer_column(release.published, GROUP)
        assignment_groups = integer_column(release.assignment, GROUP)
        published_values = _text_column(release.published, schema.sensitive)
        assignment_values = _text_column(release.assignment, schema.sensitive)
        identifiers = _text_column(release.assignment, schema.identifier)
        self.vectorizable = not any(
            part is None
            for part in (
                published_groups, assignment_groups, published_values, assignment_values,
                identifiers,
            )
        )
        if not self.vectorizable:
            return
        assert published_groups is not None and assignment_groups is not None
        assert published_values is not None and assignment_values is not None
        assert identifiers is not None
        size = len(published_groups)
        inverse, labels = sorted_factorize(np.concatenate([published_groups, assignment_groups]))
        self.labels: np.ndarray = labels
        self.published_group: np.ndarray = inverse[:size]
        self.assignment_group: np.ndarray = inverse[size:]
        codes, values = pd.factorize(
            np.concatenate([published_values, assignment_values]), use_na_sentinel=False
        )
        codes = np.asarray(codes, dtype=np.int64)
        self.values: np.ndarray = np.asarray(values, dtype=object)
        self.published_value: np.ndarray = codes[:size]
        self.assignment_value: np.ndarray = codes[size:]
        self.identifiers: np.ndarray = identifiers
        self._identifier_index: pd.Index | None = None
        self._unique: bool | None = None
        self._texts: dict[str, np.ndarray] = {schema.sensitive: published_values}
        self._cell_keys: tuple[np.ndarray, np.ndarray] | None = None
        self._cells: list[tuple[np.ndarray, np.ndarray] | None] = [None, None]

    def published_text(self, column: str) -> np.ndarray:
        """:func:`text_array` of the published ``column`` (computed once, then shared)."""
        found = self._texts.get(column)
        if found is None:
            found = self._texts[column] = text_array(self.release.published[column])
        return found

    @property
    def identifier_index(self) -> pd.Index:
        """:attr:`identifiers` as an index (hashed once, then reused for look-ups)."""
        if self._identifier_index is None:
            self._identifier_index = pd.Index(self.identifiers)
        return self._identifier_index

    @property
    def unique_identifiers(self) -> bool:
        """No identifier repeats among the real rows (the detailed code keys on them)."""
        if self._unique is None:
            self._unique = distinct_text(self.identifiers) or bool(
                self.identifier_index.is_unique)
        return self._unique

    def distinct_identifiers(self) -> np.ndarray:
        """The distinct identifiers (in order of first occurrence)."""
        if self.unique_identifiers:
            return self.identifiers
        return np.asarray(pd.unique(self.identifiers), dtype=object)

    def group_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """Published rows and real rows of every group of :attr:`labels`."""
        groups = len(self.labels)
        return (
            np.bincount(self.published_group, minlength=groups),
            np.bincount(self.assignment_group, minlength=groups),
        )

    def cell_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """One integer per (group, sensitive value), for published rows and real rows
        (computed once; callers must not change them)."""
        if self._cell_keys is None:
            width = max(len(self.values), 1)
            self._cell_keys = (
                self.published_group * width + self.published_value,
                self.assignment_group * width + self.assignment_value,
            )
        return self._cell_keys

    def cell_counts(self, real: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``np.unique(keys, return_counts=True)`` of the published (or, with ``real``,
        the real) rows' :meth:`cell_keys`: one sort shared by every detector."""
        found = self._cells[real]
        if found is None:
            found = self._cells[real] = np.unique(self.cell_keys()[real], return_counts=True)
        return found

    def split_cell_keys(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`cell_keys`: positions in :attr:`labels` and :attr:`values`."""
        width = max(len(self.values), 1)
        return keys // width, keys % width

    def label_list(self, positions: np.ndarray) -> list[Any]:
        """Group labels at ``positions`` as Python ints (as ``Series.tolist()`` gives)."""
        return list(self.labels[positions].tolist())


def sorted_factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=True)`` of an int64 array, as int64 (codes, labels).

    When the values span a range at most a few times their number (group labels built by
    :func:`republish.release.build_release` are ``0..g-1``), the labels are the present
    positions of a bitmap over that range and the codes its running count: two linear
    passes instead of hashing every value.
    """
    values = np.asarray(values, dtype=np.int64)
    if len(values):
        low, high = int(values.min()), int(values.max())
        span = high - low + 1
        if span <= 4 * len(values) + 1024:
            offsets = values - low
            present = np.zeros(span, dtype=bool)
            present[offsets] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            return rank[offsets], np.flatnonzero(present).astype(np.int64) + low
    codes, labels = pd.factorize(values, sort=True)
    return np.asarray(codes, dtype=np.int64), np.asarray(labels, dtype=np.int64)


def distinct_text(values: np.ndarray) -> bool:
    """True when the values are ``str`` with pairwise distinct Python hashes, hence
    pairwise distinct (equal strings hash equal); False says nothing. Cheaper than
    hashing the strings into a table: a ``str`` caches its hash, and the int64 hashes are
    sorted instead."""
    values = np.asarray(values, dtype=object)
    if len(values) < 2:
        return True
    if pd.api.types.infer_dtype(values, skipna=False) != "string":
        return False
    hashes = np.fromiter(map(hash, values.tolist()), dtype=np.int64, count=len(values))
    hashes.sort()
    return bool((hashes[1:] != hashes[:-1]).all())


def counts_in(keys: np.ndarray, counted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``counts`` of each of ``keys`` in the sorted ``counted`` (0 when absent)."""
    if not len(counted):
        return np.zeros(len(keys), dtype=np.int64)
    position = np.minimum(np.searchsorted(counted, keys), len(counted) - 1)
    return np.where(counted[position] == keys, counts[position], 0)


class SignatureTable:
    """Signatures (sets of sensitive values, Definition 16) of releases as integer ids.

    A signature is keyed by the bytes of its sorted value ids; values and keys are shared
    by every release passed to :meth:`row_signatures`, so equal ids mean equal sets.
    """

    def __init__(self) -> None:
        self._value_ids: dict[str, int] = {}
        self._values: list[str] = []
        self._ids: dict[bytes, int] = {}
        self._keys: list[bytes] = []
        self.empty = self._id(b"")

    def _id(self, key: bytes) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._keys)
            self._keys.append(key)
        return found

    def row_signatures(self, arrays: ReleaseArrays) -> np.ndarray:
        """Signature id of the group hosting each real row, in assignment order.

        A row whose group ``T*(j)`` does not publish gets the empty signature, as in
        :func:`republish.principles.m_invariance.hosting_signatures`.
        """
        group_signature = np.full(len(arrays.labels), self.empty, dtype=np.int64)
        if len(arrays.published_group):
            for value in arrays.values.tolist():
                if value not in self._value_ids:
                    self._value_ids[value] = len(self._values)
                    self._values.append(value)
            shared = np.array(
                [self._value_ids[v] for v in arrays.values.tolist()], dtype=np.int64
            )
            width = len(self._values)
            pairs = np.unique(arrays.published_group * width + shared[arrays.published_value])
            groups, values = pairs // width, pairs % width
            starts = np.flatnonzero(np.diff(groups, prepend=-1) != 0)
            ends = np.r_[starts[1:], len(pairs)]
            ids = [
                self._id(values[start:end].tobytes())
                for start, end in zip(starts.tolist(), ends.tolist(), strict=True)
            ]
            group_signature[groups[starts]] = ids
        return group_signature[arrays.assignment_group]

    def signature(self, signature_id: int) -> frozenset[str]:
        """The set of sensitive values of ``signature_id``."""
        codes = np.frombuffer(self._keys[signature_id], dtype=np.int64)
        return frozenset(self._values[c] for c in codes.tolist())


class LastPublication:
    """Identifier -> (release number, group, signature id, position) of its last
    publication, as arrays (the vectorized ``last`` of the sequence check)."""

    def __init__(self) -> None:
        self.identifiers = np.empty(0, dtype=object)
        self.number = np.empty(0, dtype=np.int64)
        self.group = np.empty(0, dtype=np.int64)
        self.signature = np.empty(0, dtype=np.int64)
        self.position = np.empty(0, dtype=np.int64)
        self._index: pd.Index | None = None

    def lookup(self, arrays: ReleaseArrays) -> np.ndarray:
        """Index here of each real row's identifier, -1 when never published."""
        if not len(self.identifiers):
            return np.full(len(arrays.identifiers), -1, dtype=np.int64)
        if self._index is None:
            self._index = pd.Index(self.identifiers)
        return np.asarray(self._index.get_indexer(arrays.identifiers), dtype=np.int64)

    def record(
        self,
        where: np.ndarray,
        arrays: ReleaseArrays,
        number: int,
        groups: np.ndarray,
        signatures: np.ndarray,
        position: int,
    ) -> None:
        """Store the publication of the real rows of ``arrays`` (``where``: :meth:`lookup`)."""
        seen = where >= 0
        known = where[seen]
        self.number[known] = number
        self.group[known] = groups[seen]
        self.signature[known] = signatures[seen]
        self.position[known] = position
        fresh = ~seen
        count = int(fresh.sum())
        if not count:
            return
        # a first release's identifiers are already hashed (unique_identifiers)
        self._index = arrays.identifier_index if not len(self.identifiers) else None
        self.identifiers = np.concatenate([self.identifiers, arrays.identifiers[fresh]])
        self.number = np.concatenate([self.number, np.full(count, number, dtype=np.int64)])
        self.group = np.concatenate([self.group, groups[fresh]])
        self.signature = np.concatenate([self.signature, signatures[fresh]])
        self.position = np.concatenate(
            [self.position, np.full(count, position, dtype=np.int64)]
        )
