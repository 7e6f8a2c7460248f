"""ARX-style generalization hierarchies of categorical quasi-identifiers.

A :class:`Hierarchy` is a tree of labels read from an ARX hierarchy file (``;``-separated,
one leaf per line, leaf first, root last) or from rows. Its leaves are coded in
depth-first order, so that every subtree covers a contiguous range of codes and the lowest
common ancestor of a group depends only on its smallest and largest leaf
(:meth:`Hierarchy.lca_level`, :meth:`Hierarchy.label`).

It is separate from :mod:`republish.schema` (which columns play which role, and reading
``schema.toml``) because building and querying the tree is an algorithm of its own; the
schema only holds one per hierarchy QI. :class:`Hierarchy` and
:data:`MAX_HIERARCHY_BYTES` are also importable from :mod:`republish.schema`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from republish.errors import SchemaError
from republish.excerpts import excerpt, excerpts

#: A hierarchy file larger than this is refused (a wrong path, not a hierarchy).
MAX_HIERARCHY_BYTES = 64 << 20


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
                    f"{source}, row {line} ({excerpt(';'.join(row))}): has {len(row)} levels, "
                    f"the first row has {height}; every leaf needs the same number of levels."
                )
            if any(cell == "" for cell in row):
                raise SchemaError(f"{source}, row {line}: empty label; fill every level.")
        roots = {row[-1] for row in cleaned}
        if len(roots) != 1:
            raise SchemaError(
                f"{source}: the last column must be one common root (normally '*'), "
                f"found {excerpts(sorted(roots))}."
            )
        seen: dict[str, int] = {}
        for line, row in enumerate(cleaned, start=1):
            if row[0] in seen:
                raise SchemaError(
                    f"{source}, row {line}: leaf {excerpt(row[0])} repeats row {seen[row[0]]}; "
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
                        f"{source}, row {line}: label {excerpt(row[level])} at level {level} has "
                        f"two parents ({excerpt(parent_of[key])} and {excerpt(parent)}); a "
                        "hierarchy must be a tree."
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
                f"hierarchy file {str(path)!r} not found (or not a regular file); check the "
                "path in the schema."
            )
        if path.stat().st_size > MAX_HIERARCHY_BYTES:
            raise SchemaError(
                f"hierarchy file {str(path)!r} is larger than {MAX_HIERARCHY_BYTES >> 20} MB; "
                "is it the right file?"
            )
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                f"hierarchy file {str(path)!r} is not UTF-8 text (byte at position "
                f"{exc.start}); an ARX hierarchy is ';'-separated text, one leaf per line."
            ) from exc
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
