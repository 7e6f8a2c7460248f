"""Schemas: which column identifies a row, which are quasi-identifiers, which is sensitive.

A schema is built in Python (:class:`Schema`, :class:`QIAttribute`) or read from a
``schema.toml`` file (:func:`load_schema`) in the format of the design notes' Contracts.

Every quasi-identifier (QI) is encoded as an ordered code so that a QI group's
generalization is fully described by the smallest and largest code of its rows:

* ``numeric``: the value itself;
* ``ordered``: the position in the declared total order;
* ``hierarchy``: the position of the leaf in a depth-first walk of the ARX hierarchy, so
  that every subtree covers a contiguous range of codes and the lowest common ancestor
  of a group depends only on its smallest and largest leaf.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from republish.errors import SchemaError

QIKind = Literal["numeric", "ordered", "hierarchy"]
SUPPRESSED = "*"


@dataclass(frozen=True)
class Hierarchy:
    """An ARX-style generalization hierarchy.

    ``paths[i]`` is the chain of labels of leaf ``leaves[i]`` from the leaf (level 0) to
    the root (last level, normally ``*``). Leaves are stored in depth-first order.
    """

    leaves: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    #: node_ids[level][code]: integer id of the level-``level`` ancestor of leaf ``code``.
    node_ids: np.ndarray = field(repr=False, compare=False)
    #: number of leaves under each node, indexed like node_ids.
    node_sizes: np.ndarray = field(repr=False, compare=False)

    @property
    def height(self) -> int:
        """Number of levels including the leaves and the root."""
        return len(self.paths[0])

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[str]], source: str = "hierarchy") -> Hierarchy:
        """Build a hierarchy from rows ``leaf; level1; ...; root``."""
        cleaned = [
            tuple(cell.strip() for cell in row) for row in rows if any(c.strip() for c in row)
        ]
        if not cleaned:
            raise SchemaError(f"{source}: the hierarchy has no rows; give one row per leaf value.")
        height = len(cleaned[0])
        for line, row in enumerate(cleaned, start=1):
            if len(row) != height:
                raise SchemaError(
                    f"{source}, row {line} ({';'.join(row)!r}): has {len(row)} levels, the first "
                    f"row has {height}; every leaf needs the same number of levels."
                )
            if any(cell == "" for cell in row):
                raise SchemaError(f"{source}, row {line}: empty label; fill every level.")
        roots = {row[-1] for row in cleaned}
        if len(roots) != 1:
            raise SchemaError(
                f"{source}: the last column must be one common root (normally '*'), "
                f"found {sorted(roots)[:5]}."
            )
        seen: dict[str, int] = {}
        for line, row in enumerate(cleaned, start=1):
            if row[0] in seen:
                raise SchemaError(
                    f"{source}, row {line}: leaf {row[0]!r} repeats row {seen[row[0]]}; "
                    "each leaf value needs exactly one row."
                )
            seen[row[0]] = line
        # A node is identified by its path to the root, so equal labels under different
        # parents stay different nodes. Each node must have exactly one parent.
        parent_of: dict[tuple[int, str], str] = {}
        for line, row in enumerate(cleaned, start=1):
            for level in range(height - 1):
                key = (level, row[level])
                parent = row[level + 1]
                if level > 0 and parent_of.setdefault(key, parent) != parent:
                    raise SchemaError(
                        f"{source}, row {line}: label {row[level]!r} at level {level} has two "
                        f"parents ({parent_of[key]!r} and {parent!r}); a hierarchy must be a tree."
                    )
        # Depth-first order: siblings in order of first appearance in the file.
        first_seen: dict[tuple[str, ...], int] = {}
        for index, row in enumerate(cleaned):
            for level in range(height):
                first_seen.setdefault(row[level:], index)

        def sort_key(row: tuple[str, ...]) -> tuple[int, ...]:
            return tuple(first_seen[row[level:]] for level in range(height - 1, -1, -1))

        ordered = sorted(cleaned, key=sort_key)
        node_ids = np.zeros((height, len(ordered)), dtype=np.int64)
        node_sizes = np.zeros((height, len(ordered)), dtype=np.int64)
        for level in range(height):
            suffixes = [row[level:] for row in ordered]
            ids: dict[tuple[str, ...], int] = {}
            for code, suffix in enumerate(suffixes):
                node_ids[level, code] = ids.setdefault(suffix, len(ids))
            counts = np.bincount(node_ids[level])
            node_sizes[level] = counts[node_ids[level]]
        return cls(
            leaves=tuple(row[0] for row in ordered),
            paths=tuple(ordered),
            node_ids=node_ids,
            node_sizes=node_sizes,
        )

    @classmethod
    def from_file(cls, path: str | Path, delimiter: str = ";") -> Hierarchy:
        """Read an ARX hierarchy file: ``;``-separated, no header, leaf first, root last."""
        path = Path(path)
        if not path.is_file():
            raise SchemaError(
                f"hierarchy file {str(path)!r} not found; check the path in the schema."
            )
        text = path.read_text(encoding="utf-8-sig")
        rows = [line.split(delimiter) for line in text.splitlines() if line.strip()]
        return cls.from_rows(rows, source=str(path))

    def code_of(self) -> dict[str, int]:
        """Mapping leaf label -> code."""
        return {leaf: code for code, leaf in enumerate(self.leaves)}

    def lca_level(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Level of the lowest common ancestor of the leaves with codes in ``[lo, hi]``."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        same = self.node_ids[:, lo] == self.node_ids[:, hi]  # (levels, groups)
        return np.argmax(same, axis=0)

    def label(self, lo: int, hi: int) -> str:
        """Label of the lowest common ancestor of the leaves with codes in ``[lo, hi]``."""
        level = int(self.lca_level(np.array([lo]), np.array([hi]))[0])
        return self.paths[lo][level]

    def covered_leaves(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Number of leaves under the lowest common ancestor of codes ``[lo, hi]``."""
        level = self.lca_level(lo, hi)
        return self.node_sizes[level, np.asarray(lo, dtype=np.int64)]

    def label_ranges(self) -> dict[str, tuple[int, int]]:
        """Mapping label -> (first code, last code) of the node it names.

        A label used at several levels names its lowest node.
        """
        ranges: dict[str, tuple[int, int]] = {}
        for level in range(self.height):
            level_ranges: dict[str, tuple[int, int]] = {}
            for code, path in enumerate(self.paths):
                lo, hi = level_ranges.get(path[level], (code, code))
                level_ranges[path[level]] = (min(lo, code), max(hi, code))
            for name, span in level_ranges.items():
                ranges.setdefault(name, span)
        return ranges


@dataclass(frozen=True)
class QIAttribute:
    """One quasi-identifier column.

    ``domain`` (numeric only) fixes the range used to normalize interval lengths; without
    it the range of the data at hand is used.
    """

    name: str
    kind: QIKind = "numeric"
    order: tuple[str, ...] | None = None
    hierarchy: Hierarchy | None = None
    hierarchy_path: str | None = None
    domain: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise SchemaError("a QI needs a non-empty 'name'.")
        if self.kind not in ("numeric", "ordered", "hierarchy"):
            raise SchemaError(
                f"QI {self.name!r}: kind {self.kind!r} is unknown; use 'numeric', 'ordered' or "
                "'hierarchy'."
            )
        if self.kind == "ordered":
            if not self.order:
                raise SchemaError(f"QI {self.name!r}: kind 'ordered' needs an 'order' list.")
            if len(set(self.order)) != len(self.order):
                raise SchemaError(f"QI {self.name!r}: 'order' lists a value twice.")
        if self.kind == "hierarchy" and self.hierarchy is None:
            raise SchemaError(f"QI {self.name!r}: kind 'hierarchy' needs a 'hierarchy' file.")
        if self.domain is not None and (self.kind != "numeric" or self.domain[0] > self.domain[1]):
            raise SchemaError(f"QI {self.name!r}: 'domain' must be [low, high] on a numeric QI.")

    @property
    def categories(self) -> tuple[str, ...] | None:
        """The categorical values in code order (None for numeric QIs)."""
        if self.kind == "ordered":
            return self.order
        if self.kind == "hierarchy":
            assert self.hierarchy is not None
            return self.hierarchy.leaves
        return None


@dataclass(frozen=True)
class Schema:
    """Identifier, quasi-identifiers (in publication order) and sensitive attribute."""

    identifier: str
    sensitive: str
    qis: tuple[QIAttribute, ...]
    delimiter: str = ","

    def __post_init__(self) -> None:
        if not self.qis:
            raise SchemaError("the schema needs at least one [[qi]] entry.")
        names = [self.identifier, self.sensitive, *self.qi_names]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SchemaError(
                f"column(s) {duplicates} play two roles in the schema; identifier, sensitive "
                "attribute and QIs must be distinct columns."
            )

    @property
    def qi_names(self) -> list[str]:
        return [qi.name for qi in self.qis]

    @property
    def published_columns(self) -> list[str]:
        """Columns of a published table ``T*(j)``: group, QIs in schema order, SA."""
        return ["group", *self.qi_names, self.sensitive]

    def qi(self, name: str) -> QIAttribute:
        for qi in self.qis:
            if qi.name == name:
                return qi
        raise SchemaError(f"no QI named {name!r} in the schema; QIs are {self.qi_names}.")

    def to_dict(self) -> dict[str, Any]:
        """A plain description (hierarchies inlined) used for storing and fingerprinting."""
        qis: list[dict[str, Any]] = []
        for qi in self.qis:
            entry: dict[str, Any] = {"name": qi.name, "kind": qi.kind}
            if qi.order is not None:
                entry["order"] = list(qi.order)
            if qi.hierarchy is not None:
                entry["hierarchy_rows"] = [list(p) for p in qi.hierarchy.paths]
            if qi.domain is not None:
                entry["domain"] = [float(v) for v in qi.domain]  # 17 and 17.0: one fingerprint
            qis.append(entry)
        return {
            "id": self.identifier,
            "sensitive": self.sensitive,
            "delimiter": self.delimiter,
            "qi": qis,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Path | None = None) -> Schema:
        """Inverse of :meth:`to_dict`, also accepting the TOML form (hierarchy paths)."""
        return _schema_from_mapping(data, base or Path("."), source="schema")

    def fingerprint(self) -> str:
        """SHA-256 of the plain description: equal schemas have equal fingerprints."""
        payload = json.dumps(self.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(payload).hexdigest()


def load_schema(path: str | Path) -> Schema:
    """Read a ``schema.toml`` file (hierarchy paths relative to the file)."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"schema file {str(path)!r} not found.")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SchemaError(f"{path}: not valid TOML ({exc}).") from exc
    return _schema_from_mapping(data, path.parent, source=str(path))


def _schema_from_mapping(data: Mapping[str, Any], base: Path, source: str) -> Schema:
    for key in ("id", "sensitive"):
        if not isinstance(data.get(key), str) or not data.get(key):
            raise SchemaError(
                f'{source}: missing key {key!r} (a column name), e.g. {key} = "name".'
            )
    raw_qis = data.get("qi")
    if not isinstance(raw_qis, list) or not raw_qis:
        raise SchemaError(f"{source}: no [[qi]] entries; declare at least one quasi-identifier.")
    qis = [_qi_from_mapping(entry, base, source, index) for index, entry in enumerate(raw_qis)]
    delimiter = data.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise SchemaError(f"{source}: 'delimiter' must be a single character.")
    return Schema(
        identifier=str(data["id"]),
        sensitive=str(data["sensitive"]),
        qis=tuple(qis),
        delimiter=delimiter,
    )


def _qi_from_mapping(entry: Any, base: Path, source: str, index: int) -> QIAttribute:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise SchemaError(f"{source}: [[qi]] entry {index + 1} needs a 'name'.")
    name = entry["name"]
    kind = entry.get("kind", "numeric")
    order = entry.get("order")
    hierarchy: Hierarchy | None = None
    hierarchy_path: str | None = None
    if "hierarchy_rows" in entry:
        hierarchy = Hierarchy.from_rows(entry["hierarchy_rows"], source=f"{source}, QI {name!r}")
    elif "hierarchy" in entry:
        hierarchy_path = str(entry["hierarchy"])
        hierarchy = Hierarchy.from_file(base / hierarchy_path)
    domain = entry.get("domain")
    return QIAttribute(
        name=name,
        kind=kind,
        order=tuple(str(v) for v in order) if order is not None else None,
        hierarchy=hierarchy,
        hierarchy_path=hierarchy_path,
        domain=(float(domain[0]), float(domain[1])) if domain is not None else None,
    )


def make_schema(
    identifier: str,
    sensitive: str,
    qis: Iterable[QIAttribute | str],
) -> Schema:
    """Convenience constructor: plain strings become numeric QIs."""
    attributes = tuple(QIAttribute(q) if isinstance(q, str) else q for q in qis)
    return Schema(identifier=identifier, sensitive=sensitive, qis=attributes)
