"""Categories of sensitive values for ε-distinctness (ε-inclusion paper, Definition 7).

ε-distinctness asks every QI group for at least ``λ`` categories of sensitive values with
at least ``τ`` distinct values each, so that semantically close values (two kinds of
cancer) do not make a group look diverse when it is not (the similarity attack). The
mapping value -> category is given by the publisher:

* a CSV file with a header and two columns, the sensitive value then its category
  (``,`` or ``;`` separated), read by :meth:`SACategories.from_csv`;
* one level of an ARX-style hierarchy of the sensitive attribute (``;`` separated, no
  header, leaf first, root last), read by :meth:`SACategories.from_hierarchy`; level 0
  makes every value its own category;
* nothing: :meth:`SACategories.identity`, every value its own category (then
  ε-distinctness with ``τ = 1`` is the m-uniqueness of m-invariance with ``m = λ``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from republish.errors import InputError, ParameterError, SchemaError, format_rows
from republish.hierarchy import Hierarchy

__all__ = ["SACategories"]


@dataclass(frozen=True)
class SACategories:
    """A mapping sensitive value -> category; ``mapping=None`` is the identity.

    ``source`` records where the mapping came from (file and level), for messages.
    """

    mapping: Mapping[str, str] | None = None
    source: str = "identity"
    _values: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.mapping is not None:
            cleaned = {str(k).strip(): str(v).strip() for k, v in self.mapping.items()}
            empty = [k for k, v in cleaned.items() if not k or not v]
            if empty:
                raise InputError(
                    f"{self.source}: empty value or category for {format_rows(empty)}; every "
                    "sensitive value needs a non-empty category."
                )
            object.__setattr__(self, "mapping", cleaned)
            object.__setattr__(self, "_values", frozenset(cleaned))

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def identity(cls) -> SACategories:
        """Every sensitive value is its own category."""
        return cls(None, "identity")

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]], source: str = "pairs") -> SACategories:
        """From ``(value, category)`` pairs; a value listed twice must keep its category."""
        mapping: dict[str, str] = {}
        for value, category in pairs:
            value, category = str(value).strip(), str(category).strip()
            if value in mapping and mapping[value] != category:
                raise InputError(
                    f"{source}: sensitive value {value!r} has two categories "
                    f"({mapping[value]!r} and {category!r}); give each value one category."
                )
            mapping[value] = category
        if not mapping:
            raise InputError(f"{source}: no (value, category) pair; the mapping is empty.")
        return cls(mapping, source)

    @classmethod
    def from_csv(cls, path: str | Path) -> SACategories:
        """Read ``value,category`` rows (a header row first; ``,`` or ``;`` separated)."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"categories file {str(path)!r} not found.")
        text = path.read_text(encoding="utf-8-sig")
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise InputError(
                f"{path}: needs a header row and at least one 'value,category' row."
            )
        delimiter = ";" if lines[0].count(";") > lines[0].count(",") else ","
        rows = list(csv.reader(lines, delimiter=delimiter))
        bad = [i + 1 for i, row in enumerate(rows) if len(row) != 2]
        if bad:
            raise InputError(
                f"{path}: line(s) {format_rows(bad)} do not have exactly two columns "
                f"(value{delimiter}category). For an ARX hierarchy file give a level "
                "(--category-level)."
            )
        return cls.from_pairs(((row[0], row[1]) for row in rows[1:]), source=str(path))

    @classmethod
    def from_hierarchy(cls, hierarchy: Hierarchy | str | Path, level: int) -> SACategories:
        """Categories = the labels of one level of an ARX hierarchy (0 = the values)."""
        source = "hierarchy"
        if not isinstance(hierarchy, Hierarchy):
            source = str(hierarchy)
            try:
                hierarchy = Hierarchy.from_file(hierarchy)
            except SchemaError as exc:
                raise InputError(str(exc)) from exc
        if isinstance(level, bool) or not isinstance(level, int) or not (
            0 <= level < hierarchy.height
        ):
            raise ParameterError(
                f"category level {level!r}: the hierarchy {source} has levels 0 (the values) "
                f"to {hierarchy.height - 1} (the root)."
            )
        pairs = ((path[0], path[level]) for path in hierarchy.paths)
        return cls.from_pairs(pairs, source=f"{source}, level {level}")

    # -- use ------------------------------------------------------------------------------

    @property
    def is_identity(self) -> bool:
        return self.mapping is None

    def category(self, value: str) -> str:
        """The category of ``value`` (the value itself for the identity)."""
        if self.mapping is None:
            return str(value)
        try:
            return self.mapping[str(value)]
        except KeyError as exc:
            raise InputError(
                f"sensitive value {value!r} has no category in {self.source}; add it to the "
                "categories file."
            ) from exc

    def require(self, values: Iterable[str], what: str = "the table") -> None:
        """Refuse sensitive values without a category, naming them."""
        if self.mapping is None:
            return
        unknown = sorted({str(v) for v in values} - self._values)
        if unknown:
            raise InputError(
                f"{what} has sensitive value(s) {format_rows(unknown)} without a category in "
                f"{self.source}; add them to the categories file."
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain form for the store (``from_dict`` inverts it)."""
        return {
            "source": self.source,
            "mapping": None if self.mapping is None else dict(sorted(self.mapping.items())),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SACategories:
        mapping = data.get("mapping")
        return cls(None if mapping is None else dict(mapping), str(data.get("source", "")))
