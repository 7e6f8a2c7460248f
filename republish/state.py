"""The publisher's private state between m-invariant releases.

Lemma 4 of the m-invariance paper (Xiao & Tao, SIGMOD 2007) lets release ``n`` be
computed from ``T(n)`` and the last release alone. The product also re-inserts rows after
an absence (they take back the signature they had when last published) and refuses rows
whose values changed, so the state keeps, for every identifier ever published:

* the number of the release that last published it,
* the signature of its hosting group in that release,
* its raw QI and sensitive values,

plus the identifiers held back (deferred) by the last release, which stay *new* until
they are published.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.identifiers import IdentifierKind, locate
from republish.parameters import validate_m
from republish.release import GROUP, Release
from republish.schema import Schema

#: Columns of :attr:`PublisherState.rows` besides the schema's QIs and sensitive attribute.
LAST_RELEASE = "last_release"
SIGNATURE = "signature"


class SignatureColumn(Sequence[frozenset[str]]):
    """The signatures of many rows as codes into a small table (``table[codes[i]]`` is row
    ``i``'s): what :meth:`PublisherState.advance` takes without a Python loop per row."""

    def __init__(self, codes: np.ndarray, table: Sequence[frozenset[str]]) -> None:
        self.codes = np.asarray(codes, dtype=np.int64)
        self.table = tuple(table)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.table[c] for c in self.codes[index].tolist()]
        return self.table[int(self.codes[index])]


def _empty_rows(schema: Schema) -> pd.DataFrame:
    columns: dict[str, pd.Series] = {}
    for qi in schema.qis:
        dtype = np.float64 if qi.kind == "numeric" else object
        columns[qi.name] = pd.Series([], dtype=dtype)
    columns[schema.sensitive] = pd.Series([], dtype=object)
    columns[LAST_RELEASE] = pd.Series([], dtype=np.int64)
    columns[SIGNATURE] = pd.Series([], dtype=np.int64)
    frame = pd.DataFrame(columns)
    frame.index = pd.Index([], dtype=object, name=schema.identifier)
    return frame


@dataclass(frozen=True, eq=False)
class PublisherState:
    """What the publisher must remember after release :attr:`last_release`.

    Attributes
    ----------
    schema, m:
        Fixed for the whole sequence.
    last_release:
        Number of the last release (0 before the first one).
    rows:
        One row per identifier ever published, indexed by identifier: the raw QI values,
        the sensitive value, ``last_release`` (release that last published it) and
        ``signature`` (index into :attr:`signatures` of its last hosting group).
    signatures:
        The distinct signatures referenced by ``rows``.
    deferred:
        Identifiers held back by the last release.
    identifier_kind:
        ``text`` or ``integer`` (:mod:`republish.identifiers`): every later table's
        identifiers are canonicalized to it. ``None`` until fixed by ``init`` or the first
        release.
    """

    schema: Schema
    m: int
    last_release: int = 0
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)
    signatures: tuple[frozenset[str], ...] = ()
    deferred: tuple[str, ...] = ()
    identifier_kind: IdentifierKind | None = None

    @classmethod
    def empty(
        cls, schema: Schema, m: int, identifier_kind: IdentifierKind | None = None
    ) -> PublisherState:
        """The state before the first release."""
        return cls(schema=schema, m=validate_m(m), rows=_empty_rows(schema),
                   identifier_kind=identifier_kind)

    def last_population(self) -> pd.Index:
        """Identifiers of the last release: its published rows and its deferred ones."""
        present = self.rows.index[self.rows[LAST_RELEASE].to_numpy() == self.last_release]
        return present.append(pd.Index(list(self.deferred), dtype=object))

    @classmethod
    def from_releases(cls, releases: Sequence[Release], m: int) -> PublisherState:
        """Replay ``releases`` (in publication order) from the empty state."""
        if not releases:
            raise ParameterError("from_releases needs at least one release.")
        state = cls.empty(releases[0].schema, m)
        for release in releases:
            state = state.advance(release)
        return state

    @property
    def published_count(self) -> int:
        return len(self.rows)

    def sensitive_domain(self) -> set[str]:
        """Every sensitive value the publisher has seen or published (counterfeits too)."""
        values = set(self.rows[self.schema.sensitive].astype(str).unique().tolist())
        for signature in self.signatures:
            values |= signature
        return values

    def positions(self, identifiers: pd.Series | np.ndarray | Sequence[str]) -> np.ndarray:
        """Row of each identifier in :attr:`rows` (-1 for identifiers never published)."""
        ids = np.asarray(identifiers, dtype=object)
        if pd.api.types.infer_dtype(ids, skipna=False) != "string":
            ids = ids.astype(str).astype(object)  # already text: no new (unhashed) strings
        return locate(self.rows.index, ids)  # int64 keys for integer identifiers

    def signature_codes(self, signatures: Iterable[frozenset[str]]) -> tuple[
        tuple[frozenset[str], ...], list[int]
    ]:
        """Codes of ``signatures`` in this state's table, extended with new ones."""
        table = list(self.signatures)
        lookup = {signature: code for code, signature in enumerate(table)}
        codes = []
        for signature in signatures:
            if signature not in lookup:
                lookup[signature] = len(table)
                table.append(signature)
            codes.append(lookup[signature])
        return tuple(table), codes

    def advance(
        self,
        release: Release,
        row_signatures: Sequence[frozenset[str]] | None = None,
        positions: np.ndarray | None = None,
    ) -> PublisherState:
        """The state after ``release``.

        ``row_signatures[i]``, when given, is the signature of the group of
        ``release.assignment`` row ``i`` (saves recomputing it from ``T*(n)``);
        ``positions`` the :meth:`positions` of the assignment's identifiers.
        """
        schema = self.schema
        if release.number <= self.last_release:
            raise ParameterError(
                f"release {release.number} does not follow release {self.last_release}."
            )
        assignment = release.assignment
        if row_signatures is None:
            row_signatures = row_signature_column(release)
        # The release's rows as columns (views of the assignment: stack_rows copies them
        # once, into the new state, instead of a selected copy, a copy and a concatenation).
        fresh: dict[str, np.ndarray] = {
            name: assignment[name].to_numpy() for name in [*schema.qi_names, schema.sensitive]}
        index = pd.Index(assignment[schema.identifier].astype(str), name=schema.identifier)
        fresh[LAST_RELEASE] = np.full(len(assignment), release.number, dtype=np.int64)
        if isinstance(row_signatures, SignatureColumn):
            distinct_codes, first = np.unique(row_signatures.codes, return_index=True)
            used = distinct_codes[np.argsort(first, kind="stable")]  # first appearance
            table, codes = self.signature_codes(
                [row_signatures.table[c] for c in used.tolist()])
            recode = np.zeros(len(row_signatures.table), dtype=np.int64)
            recode[used] = codes
            fresh[SIGNATURE] = recode[row_signatures.codes]
        else:
            distinct = list(dict.fromkeys(row_signatures))
            table, codes = self.signature_codes(distinct)
            code_of = dict(zip(distinct, codes, strict=True))
            fresh[SIGNATURE] = np.fromiter(
                (code_of[s] for s in row_signatures), dtype=np.int64,
                count=len(row_signatures))
        if positions is None:
            positions = self.positions(index)
        replaced = np.zeros(len(self.rows), dtype=bool)
        replaced[positions[positions >= 0]] = True
        rows = stack_rows(self.rows, ~replaced, fresh, index)
        return PublisherState(
            schema=schema,
            m=self.m,
            last_release=release.number,
            rows=rows,
            signatures=table,
            deferred=tuple(str(d) for d in release.deferred),
            identifier_kind=self.identifier_kind or release.metadata.get("identifier_kind"),
        )


def stack_rows(first: pd.DataFrame, keep: np.ndarray, second: dict[str, np.ndarray],
               index: pd.Index, *, copy: bool = True) -> pd.DataFrame:
    """``pd.concat([first.loc[keep], DataFrame(second, index=index)])`` (just the second
    frame when no row is kept), each column allocated once.

    The pandas form copies the kept rows, then both parts again into consolidated blocks;
    at 10M rows that was the peak of a release's state phase. Here every column is one
    ``np.concatenate`` (a copy of ``second`` when nothing is kept: the new state never
    shares memory with the release; ``copy=False`` when the caller owns ``second``), and
    the frame takes the arrays as they are (``copy=False`` does not consolidate them).
    Where the two parts differ in columns or dtypes, pandas' own concatenation decides
    (its dtype rules), as before.
    """
    names = list(second)
    kept = int(np.count_nonzero(keep))
    if not kept:
        return pd.DataFrame({n: np.array(second[n], copy=True) if copy
                             else np.asarray(second[n]) for n in names},
                            index=index, copy=False)
    same = (list(first.columns) == names
            and all(first[n].dtype == np.asarray(second[n]).dtype
                    and isinstance(first[n].dtype, np.dtype) for n in names))
    if not same:
        fresh = pd.DataFrame({n: np.array(second[n], copy=True) for n in names}, index=index,
                             copy=False)
        return pd.concat([first.loc[keep], fresh])
    columns = {n: np.concatenate([first[n].to_numpy()[keep], np.asarray(second[n])])
               for n in first.columns}
    return pd.DataFrame(columns, index=first.index[keep].append(index), copy=False)


def changed_rows(
    state: PublisherState, table: pd.DataFrame, positions: np.ndarray | None = None
) -> pd.DataFrame:
    """Rows of the validated ``table`` whose identifier was published with other values.

    ``positions`` are :meth:`PublisherState.positions` of the table's identifiers, when
    already known. Returns the offending rows of ``table`` with an extra column
    ``changed`` naming the columns that differ.
    """
    schema = state.schema
    if positions is None:
        positions = state.positions(table[schema.identifier])
    known = positions >= 0
    if not known.any():
        return table.iloc[:0].assign(changed=pd.Series([], dtype=object))
    # Column by column on numpy arrays: no copy of the known rows of the table and of the
    # state (two whole-table frames at 10M rows); frames only for the differing rows.
    at = np.flatnonzero(known)
    was = positions[at]
    columns = [*schema.qi_names, schema.sensitive]
    masks = {c: table[c].to_numpy()[at] != state.rows[c].to_numpy()[was] for c in columns}
    differs = np.logical_or.reduce(list(masks.values()))
    rows = np.flatnonzero(differs)
    out = table.iloc[at[rows]].copy()
    before = state.rows.iloc[was[rows]]
    out["changed"] = [
        "; ".join(
            f"{c}: {before[c].iloc[k]!r} -> {out[c].iloc[k]!r}" for c in columns if masks[c][i]
        )
        for k, i in enumerate(rows.tolist())
    ]
    return out


def check_unchanged(
    state: PublisherState, table: pd.DataFrame, positions: np.ndarray | None = None
) -> None:
    """Refuse identifiers whose QI or sensitive values changed since last published.

    Raises
    ------
    InputError
        naming the identifiers and the changes.
    """
    changed = changed_rows(state, table, positions)
    if len(changed):
        schema = state.schema
        labels = [
            f"{ident} ({what})"
            for ident, what in zip(
                changed[schema.identifier].tolist()[:5], changed["changed"].tolist()[:5],
                strict=True,
            )
        ]
        more = f" (and {len(changed) - 5} more)" if len(changed) > 5 else ""
        raise InputError(
            f"{len(changed)} identifier(s) were published before with other QI or sensitive "
            f"values: {'; '.join(labels)}{more}. m-invariance assumes a row never changes; "
            "value updates need the m-Distinct principle, or give the changed rows new "
            "identifiers."
        )


def row_signature_column(release: Release) -> Sequence[frozenset[str]]:
    """The signature of each assignment row's group in ``T*(n)``, as a
    :class:`SignatureColumn` of distinct signatures (codes looked up per group, not per
    row); a plain list when a row's group is not published (as ``by_group[g]`` would, the
    caller's look-up then raises ``KeyError``)."""
    by_group = group_signatures(release)
    groups = release.assignment[GROUP]
    table: dict[frozenset[str], int] = {}
    labels = list(by_group)
    codes = np.array([table.setdefault(by_group[g], len(table)) for g in labels],
                     dtype=np.int64)
    where = pd.Index(labels).get_indexer(groups) if labels else np.full(len(groups), -1)
    if (where < 0).any():
        return [by_group[g] for g in groups.tolist()]
    return SignatureColumn(codes[where], list(table))


#: The signatures of the last few published frames (by identity, while they live): a
#: release step computes them and its store commit needs them again (1-2 s at 2M rows).
#: Release frames are never changed in place once built.
_SIGNATURES: dict[int, tuple[weakref.ref[pd.DataFrame], str, dict[Any, frozenset[str]]]] = {}


def group_signatures(release: Release) -> dict[Any, frozenset[str]]:
    """Signature of every published group (counterfeits included), computed with numpy:
    each group's values as a bit mask, one frozenset per distinct mask (groups with the
    same signature share it). The same published frame is computed once; a new dict is
    returned every time (callers may change it)."""
    published = release.published
    sensitive = release.schema.sensitive
    hit = _SIGNATURES.get(id(published))
    if hit is not None and hit[0]() is published and hit[1] == sensitive:
        return dict(hit[2])
    found = _group_signatures(release)
    for key in [k for k, (ref, _, _) in _SIGNATURES.items() if ref() is None]:
        del _SIGNATURES[key]
    while len(_SIGNATURES) >= 4:
        del _SIGNATURES[next(iter(_SIGNATURES))]
    _SIGNATURES[id(published)] = (weakref.ref(published), sensitive, found)
    return dict(found)


def _group_signatures(release: Release) -> dict[Any, frozenset[str]]:
    published = release.published
    group_codes, group_labels = pd.factorize(published[GROUP])
    value_codes, value_labels = pd.factorize(published[release.schema.sensitive].astype(str))
    width = max(len(value_labels), 1)
    pairs = np.unique(group_codes.astype(np.int64) * width + value_codes)
    if not len(pairs):
        return {}
    owners, values = pairs // width, pairs % width
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    words = (width + 63) // 64
    bits = np.zeros((len(pairs), words), dtype=np.uint64)
    bits[np.arange(len(pairs)), values // 64] = np.left_shift(
        np.uint64(1), (values % 64).astype(np.uint64))
    # A group's values are distinct, so the sum of their bits is their union.
    masks = np.add.reduceat(bits, starts, axis=0)
    distinct, inverse = np.unique(masks, axis=0, return_inverse=True)
    labels = np.asarray(value_labels, dtype=object)
    shifts = np.arange(64, dtype=np.uint64)
    sets = []
    for mask in distinct:
        present = ((mask[:, None] >> shifts) & np.uint64(1)).astype(bool).reshape(-1)
        sets.append(frozenset(labels[np.flatnonzero(present[:width])].tolist()))
    owner_labels = group_labels[owners[starts]]
    return dict(zip(owner_labels.tolist(), [sets[i] for i in inverse.reshape(-1).tolist()],
                    strict=True))
