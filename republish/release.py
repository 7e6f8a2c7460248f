"""Release objects: the publishable ``T*(j)`` and ``R(j)`` plus the publisher's private state.

A :class:`Release` is what one publication step produces. Only :attr:`Release.published`
and :attr:`Release.counterfeits` ever leave the publisher (see
:func:`republish.release_files.write_release`); :attr:`Release.assignment` is private state
kept in the store. The published files (rendering, durable writes, reading back) are in
:mod:`republish.release_files`; their names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.generalization import Model, group_boxes, render_boxes

# The published files moved to republish.release_files; their names stay importable here.
from republish.release_files import _PARQUET as _PARQUET
from republish.release_files import _PLAIN_NUMBER as _PLAIN_NUMBER
from republish.release_files import ESCAPE as ESCAPE
from republish.release_files import FORMATS as FORMATS
from republish.release_files import FORMULA_TRIGGERS as FORMULA_TRIGGERS
from republish.release_files import _canonical as _canonical
from republish.release_files import _map_text as _map_text
from republish.release_files import _parquet_write as _parquet_write
from republish.release_files import _remember_parquet as _remember_parquet
from republish.release_files import _round_trip_types as _round_trip_types
from republish.release_files import canonical_parquet as canonical_parquet
from republish.release_files import frame_bytes as frame_bytes
from republish.release_files import fsync_directory as fsync_directory
from republish.release_files import neutralize as neutralize
from republish.release_files import neutralize_cell as neutralize_cell
from republish.release_files import parquet_bytes as parquet_bytes
from republish.release_files import read_published as read_published
from republish.release_files import release_file_names as release_file_names
from republish.release_files import render_release as render_release
from republish.release_files import restore as restore
from republish.release_files import restore_cell as restore_cell
from republish.release_files import sha256 as sha256
from republish.release_files import write_file_durably as write_file_durably
from republish.release_files import write_release as write_release
from republish.schema import Schema
from republish.tables import encode_qis

GROUP = "group"
COUNT = "count"


@dataclass(frozen=True)
class Release:
    """One release ``j``.

    Attributes
    ----------
    number:
        1-based release number ``j``.
    schema:
        The schema of the microdata.
    published:
        ``T*(j)``: columns ``group``, the rendered QIs in schema order, the sensitive
        attribute; real rows and counterfeits in random order, no identifier.
    counterfeits:
        ``R(j)``: columns ``group``, ``count``; groups without counterfeits omitted.
    assignment:
        Private: one row per real row of ``T(j)`` published in this release, with the
        identifier, ``group``, the raw QI values and the sensitive value.
    deferred:
        Private: identifiers held back from this release (partial publication).
    model:
        ``interval`` (generalization) or ``suppression`` rendering.
    metadata:
        Parameters, solve certificates and timings (plain JSON-able data).
    """

    number: int
    schema: Schema
    published: pd.DataFrame
    counterfeits: pd.DataFrame
    assignment: pd.DataFrame
    deferred: tuple[str, ...] = ()
    model: Model = "interval"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def identifiers(self) -> set[str]:
        """Identifiers of the real rows published in this release."""
        return set(self.assignment[self.schema.identifier])

    def signatures(self) -> dict[Any, frozenset[str]]:
        """Signature (set of distinct SA values, counterfeits included) of every group."""
        sa = self.schema.sensitive
        return {
            group: frozenset(values)
            for group, values in self.published.groupby(GROUP, sort=True)[sa]
        }

    def signature_of(self) -> dict[str, frozenset[str]]:
        """Identifier -> signature of the group hosting that row."""
        signatures = self.signatures()
        schema = self.schema
        return {
            ident: signatures[group]
            for ident, group in zip(
                self.assignment[schema.identifier], self.assignment[GROUP], strict=True
            )
        }

    def counterfeit_total(self) -> int:
        return int(self.counterfeits[COUNT].sum()) if len(self.counterfeits) else 0

    def group_count(self) -> int:
        return int(self.published[GROUP].nunique())


def _renumber(groups: Sequence[Any] | np.ndarray, rng: np.random.Generator) -> tuple[
    dict[Any, int], np.ndarray
]:
    """Group labels renumbered 1..G at random: the label first seen ``i``-th gets
    ``rng.permutation(G)[i] + 1``. Returns the mapping and the new label of every row
    (integer labels vectorized, others through a dict; the same numbers either way)."""
    array = np.asarray(groups)
    if array.dtype.kind in "iu":
        distinct, first, inverse = np.unique(array, return_index=True, return_inverse=True)
        appearance = np.empty(len(distinct), dtype=np.int64)
        appearance[np.argsort(first, kind="stable")] = np.arange(len(distinct))
        permuted = rng.permutation(len(distinct))
        number_of = permuted[appearance] + 1
        mapping = dict(zip(distinct.tolist(), number_of.tolist(), strict=True))
        return mapping, number_of[inverse.reshape(-1)].astype(np.int64)
    values = np.asarray(groups, dtype=object).tolist()
    labels = list(dict.fromkeys(values))
    permuted = rng.permutation(len(labels))
    renumber = {label: int(permuted[i]) + 1 for i, label in enumerate(labels)}
    return renumber, np.array([renumber[g] for g in values], dtype=np.int64)


def build_release(
    number: int,
    table: pd.DataFrame,
    groups: Sequence[Any] | np.ndarray,
    schema: Schema,
    counterfeit_values: Mapping[Any, Sequence[str]] | None = None,
    deferred: Sequence[str] = (),
    rng: np.random.Generator | None = None,
    model: Model = "interval",
    metadata: Mapping[str, Any] | None = None,
) -> Release:
    """Assemble a release from a partition of real rows plus counterfeits.

    ``groups[i]`` is the group of row ``i`` of the validated ``table``;
    ``counterfeit_values[g]`` lists the sensitive values of the counterfeits of group ``g``
    (a counterfeit has no QI values of its own: it takes its group's box). Group ids are
    renumbered 1..G in an order unrelated to the input order, and the published rows are
    shuffled with ``rng`` (OS entropy when ``None``) so that row positions reveal neither
    counterfeits nor the input order.
    """
    rng = rng if rng is not None else np.random.default_rng()
    counterfeit_values = dict(counterfeit_values or {})
    if len(groups) != len(table):
        raise InputError(f"{len(groups)} group labels for {len(table)} rows.")
    renumber, new_groups = _renumber(groups, rng)
    unknown = set(counterfeit_values) - set(renumber)
    if unknown:
        raise InputError(
            f"counterfeits placed in group(s) {sorted(map(str, unknown))[:5]} that hold no real "
            "row; every published group needs at least one real row."
        )

    boxes = group_boxes(encode_qis(table, schema), new_groups)
    rendered = render_boxes(schema, boxes, model)
    fake_groups: list[int] = []
    fake_values: list[str] = []
    for label, values in counterfeit_values.items():
        for value in values:
            fake_groups.append(renumber[label])
            fake_values.append(str(value))
    published = _shuffled_rows(schema, rendered, new_groups, table[schema.sensitive],
                               fake_groups, fake_values, rng)

    counts = pd.Series(fake_groups, dtype=np.int64).value_counts()
    counterfeits = pd.DataFrame({GROUP: counts.index.astype(np.int64), COUNT: counts.to_numpy()})
    counterfeits = counterfeits.sort_values(GROUP).reset_index(drop=True)

    index = table.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 \
            and index.name is None:
        # the table's columns shared, not copied (a whole table at 10M rows): inserting the
        # group column adds a block to the assignment only, and release frames are never
        # changed in place
        assignment = table.copy(deep=False)
    else:
        assignment = table.reset_index(drop=True)  # a copy: inserting leaves table alone
    assignment.insert(1, GROUP, new_groups)
    return Release(
        number=number,
        schema=schema,
        published=published,
        counterfeits=counterfeits,
        assignment=assignment,
        deferred=tuple(str(d) for d in deferred),
        model=model,
        metadata=dict(metadata or {}),
    )


def _shuffled_rows(schema: Schema, rendered: pd.DataFrame, groups: np.ndarray,
                   sensitive: pd.Series, fake_groups: list[int], fake_values: list[str],
                   rng: np.random.Generator) -> pd.DataFrame:
    """``T*(n)``: the real rows (group ``groups[i]``, value ``sensitive[i]``), then the
    counterfeits, each with its group's ``rendered`` box, shuffled by one
    ``rng.permutation``.

    Each column is gathered once from ``rendered`` through the shuffled row sources,
    instead of pandas' ``loc`` of the real and the counterfeit rows, their concatenation,
    the column selection and the shuffled ``iloc`` (five copies of a 10M-row table); the
    same rows, dtypes and rng draws (:func:`_shuffled_rows_frames` is the pandas form,
    used where the columns are not plain numpy arrays)."""
    labels = pd.Index(rendered[GROUP])
    plain = (labels.is_unique and sensitive.dtype == object
             and all(isinstance(dtype, np.dtype) for dtype in rendered.dtypes))
    real_at = labels.get_indexer(groups) if plain else None
    fake_at = labels.get_indexer(np.asarray(fake_groups, dtype=np.int64)) if plain else None
    if real_at is None or fake_at is None or (real_at < 0).any() or (fake_at < 0).any():
        return _shuffled_rows_frames(schema, rendered, groups, sensitive, fake_groups,
                                     fake_values, rng)
    order = rng.permutation(len(real_at) + len(fake_at))
    source = np.concatenate([real_at, fake_at])[order]
    columns: dict[str, np.ndarray] = {}
    for name in schema.published_columns:
        if name == schema.sensitive:
            values = np.empty(len(order), dtype=object)
            values[:len(real_at)] = sensitive.to_numpy()
            values[len(real_at):] = fake_values
            columns[name] = values[order]
        else:
            columns[name] = rendered[name].to_numpy()[source]
    return pd.DataFrame(columns, copy=False)


def _shuffled_rows_frames(schema: Schema, rendered: pd.DataFrame, groups: np.ndarray,
                          sensitive: pd.Series, fake_groups: list[int],
                          fake_values: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """:func:`_shuffled_rows` with pandas frames (the reference form)."""
    by_group = rendered.set_index(GROUP)
    real = by_group.loc[groups].reset_index()
    real[schema.sensitive] = sensitive.to_numpy()
    fake = by_group.loc[np.array(fake_groups, dtype=np.int64)].reset_index()
    fake[schema.sensitive] = fake_values
    published = pd.concat([real, fake], ignore_index=True)[schema.published_columns]
    return published.iloc[rng.permutation(len(published))].reset_index(drop=True)
