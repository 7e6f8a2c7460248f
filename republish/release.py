"""Release objects: the publishable ``T*(j)`` and ``R(j)`` plus the publisher's private state.

A :class:`Release` is what one publication step produces. Only :attr:`Release.published`
and :attr:`Release.counterfeits` ever leave the publisher (see :func:`write_release`);
:attr:`Release.assignment` is private state kept in the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.generalization import Model, group_boxes, render_boxes
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
    group_array = np.asarray(groups, dtype=object)
    if len(group_array) != len(table):
        raise InputError(f"{len(group_array)} group labels for {len(table)} rows.")
    unknown = set(counterfeit_values) - set(group_array.tolist())
    if unknown:
        raise InputError(
            f"counterfeits placed in group(s) {sorted(map(str, unknown))[:5]} that hold no real "
            "row; every published group needs at least one real row."
        )
    labels = list(dict.fromkeys(group_array.tolist()))
    permuted = rng.permutation(len(labels))
    renumber = {label: int(permuted[i]) + 1 for i, label in enumerate(labels)}
    new_groups = np.array([renumber[g] for g in group_array.tolist()], dtype=np.int64)

    boxes = group_boxes(encode_qis(table, schema), new_groups)
    rendered = render_boxes(schema, boxes, model).set_index(GROUP)
    real = rendered.loc[new_groups].reset_index()
    real[schema.sensitive] = table[schema.sensitive].to_numpy()
    fake_groups: list[int] = []
    fake_values: list[str] = []
    for label, values in counterfeit_values.items():
        for value in values:
            fake_groups.append(renumber[label])
            fake_values.append(str(value))
    fake = rendered.loc[np.array(fake_groups, dtype=np.int64)].reset_index()
    fake[schema.sensitive] = fake_values
    published = pd.concat([real, fake], ignore_index=True)[schema.published_columns]
    published = published.iloc[rng.permutation(len(published))].reset_index(drop=True)

    counts = pd.Series(fake_groups, dtype=np.int64).value_counts()
    counterfeits = pd.DataFrame({GROUP: counts.index.astype(np.int64), COUNT: counts.to_numpy()})
    counterfeits = counterfeits.sort_values(GROUP).reset_index(drop=True)

    assignment = table.reset_index(drop=True).copy()
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


def write_release(
    release: Release,
    directory: str | Path,
    fmt: Literal["csv", "parquet"] = "csv",
) -> list[Path]:
    """Write ``release-<n>`` (``T*(n)``) and ``counterfeits-<n>`` (``R(n)``) into ``directory``.

    Only the publishable columns are written; the caller must have verified the release.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    schema = release.schema
    published = release.published[schema.published_columns]
    counterfeits = release.counterfeits[[GROUP, COUNT]]
    paths = [
        directory / f"release-{release.number}.{fmt}",
        directory / f"counterfeits-{release.number}.{fmt}",
    ]
    for frame, path in zip((published, counterfeits), paths, strict=True):
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
    return paths


def read_published(path: str | Path) -> pd.DataFrame:
    """Read a published table or counterfeit table (CSV or Parquet) as strings/ints."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"published file {str(path)!r} not found.")
    if path.suffix.lower() in (".parquet", ".pq"):
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if GROUP in frame.columns:
        frame[GROUP] = pd.to_numeric(frame[GROUP], errors="raise").astype(np.int64)
    if COUNT in frame.columns:
        frame[COUNT] = pd.to_numeric(frame[COUNT], errors="raise").astype(np.int64)
    return frame
