"""Schemas: which column identifies a row, which are quasi-identifiers, which is sensitive.

A schema is built in Python (:class:`Schema`, :class:`QIAttribute`) or read from a
``schema.toml`` file (:func:`load_schema`) in the format of the design notes' Contracts.

Every quasi-identifier (QI) is encoded as an ordered code so that a QI group's
generalization is fully described by the smallest and largest code of its rows:

* ``numeric``: the value itself;
* ``ordered``: the position in the declared total order;
* ``hierarchy``: the position of the leaf in a depth-first walk of the ARX hierarchy, so
  that every subtree covers a contiguous range of codes and the lowest common ancestor
  of a group depends only on its smallest and largest leaf (:mod:`republish.hierarchy`,
  whose :class:`~republish.hierarchy.Hierarchy` is re-exported here).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from republish.errors import SchemaError
from republish.excerpts import excerpt, read_toml
from republish.hierarchy import MAX_HIERARCHY_BYTES, Hierarchy

QIKind = Literal["numeric", "ordered", "hierarchy"]
SUPPRESSED = "*"
#: The identifier of a schema without an ``id`` key (or with ``id = "row-number"``): the
#: loader numbers the data rows 0, 1, ... (the numbering of error messages). Enough for
#: the static commands (``ldiv``, ``check``, ``eligibility``), which never publish an
#: identifier; a release series refuses it (a row number does not follow a person).
ROW_NUMBER = "row-number"


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
    """Identifier, quasi-identifiers (in publication order) and sensitive attribute.

    ``identifier`` :data:`ROW_NUMBER` means "number the rows" (:attr:`row_ids`).
    ``delimiter`` is the CSV delimiter of every input file read with this schema (data,
    adversary knowledge); ``None`` detects it per file among ``,`` ``;`` tab ``|`` (see
    :func:`republish.table_reading.sniff_delimiter`). It is how files are read, not what they
    hold, so it is not part of :meth:`fingerprint`.
    """

    identifier: str
    sensitive: str
    qis: tuple[QIAttribute, ...]
    delimiter: str | None = None

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
    def row_ids(self) -> bool:
        """True when rows are identified by their number (no identifier column)."""
        return self.identifier == ROW_NUMBER

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
        plain: dict[str, Any] = {"id": self.identifier, "sensitive": self.sensitive, "qi": qis}
        if self.delimiter is not None:
            plain["delimiter"] = self.delimiter
        return plain

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Path | None = None) -> Schema:
        """Inverse of :meth:`to_dict`, also accepting the TOML form (hierarchy paths)."""
        return _schema_from_mapping(data, base or Path("."), source="schema")

    def fingerprint(self) -> str:
        """SHA-256 of the plain description without the delimiter (how files are read):
        equal schemas have equal fingerprints."""
        plain = self.to_dict()
        plain.pop("delimiter", None)
        payload = json.dumps(plain, sort_keys=True).encode()
        return hashlib.sha256(payload).hexdigest()


def load_schema(path: str | Path) -> Schema:
    """Read a ``schema.toml`` file (hierarchy paths relative to the file)."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"schema file {str(path)!r} not found.")
    if path.stat().st_size > MAX_HIERARCHY_BYTES:
        raise SchemaError(f"schema file {str(path)!r} is too large to be a schema.")
    data = read_toml(path, "a schema", SchemaError)
    return _schema_from_mapping(data, path.parent, source=str(path))


#: Keys of a schema file, and of one ``[[qi]]`` entry (``hierarchy_rows``: the inlined
#: hierarchy of a stored schema, :meth:`Schema.to_dict`).
SCHEMA_KEYS = ("id", "sensitive", "qi", "delimiter")
QI_KEYS = ("name", "kind", "order", "hierarchy", "hierarchy_rows", "domain")
#: Delimiters a CSV table cannot use: the quote character, line breaks, NUL, blanks.
_BAD_DELIMITERS = {'"', "\n", "\r", "\x00", " "}


def unknown_keys(found: Iterable[object], allowed: Sequence[str], where: str) -> str | None:
    """The message for keys of ``found`` that are not ``allowed`` (with close matches)."""
    unknown = [key for key in found if key not in allowed]
    if not unknown:
        return None
    parts = []
    for key in unknown[:3]:
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{excerpt(key)}{hint}")
    more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
    return (f"{where}: unknown key(s) {', '.join(parts)}{more}; the keys are "
            f"{', '.join(allowed)}.")


def _schema_from_mapping(data: Mapping[str, Any], base: Path, source: str) -> Schema:
    if not isinstance(data, Mapping):
        raise SchemaError(f"{source}: a schema is a table of keys ({', '.join(SCHEMA_KEYS)}).")
    problem = unknown_keys(data, SCHEMA_KEYS, source)
    if problem:
        raise SchemaError(problem)
    if "id" in data and (not isinstance(data["id"], str) or not data["id"]):
        raise SchemaError(
            f'{source}: \'id\' must be a column name (e.g. id = "name"), or "{ROW_NUMBER}" '
            "to number the rows; leave it out for the same effect."
        )
    if not isinstance(data.get("sensitive"), str) or not data.get("sensitive"):
        raise SchemaError(
            f'{source}: missing key \'sensitive\' (a column name), e.g. sensitive = "disease".'
        )
    raw_qis = data.get("qi")
    if not isinstance(raw_qis, list) or not raw_qis:
        raise SchemaError(f"{source}: no [[qi]] entries; declare at least one quasi-identifier.")
    qis = [_qi_from_mapping(entry, base, source, index) for index, entry in enumerate(raw_qis)]
    delimiter = data.get("delimiter")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                  or delimiter in _BAD_DELIMITERS):
        raise SchemaError(
            f"{source}: 'delimiter' must be a single character other than a quote, a space "
            "or a line break (e.g. ',' or ';')."
        )
    return Schema(
        identifier=str(data.get("id", ROW_NUMBER)),
        sensitive=str(data["sensitive"]),
        qis=tuple(qis),
        delimiter=delimiter,
    )


def _qi_from_mapping(entry: Any, base: Path, source: str, index: int) -> QIAttribute:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise SchemaError(f"{source}: [[qi]] entry {index + 1} needs a 'name'.")
    name = entry["name"]
    where = f"{source}, [[qi]] {excerpt(name)}"
    problem = unknown_keys(entry, QI_KEYS, where)
    if problem:
        raise SchemaError(problem)
    kind = entry.get("kind", "numeric")
    if not isinstance(kind, str) or kind not in ("numeric", "ordered", "hierarchy"):
        raise SchemaError(
            f"{where}: kind {excerpt(kind)} is unknown; use 'numeric', 'ordered' or "
            "'hierarchy'."
        )
    for key, owner in (("order", "ordered"), ("hierarchy", "hierarchy"),
                       ("hierarchy_rows", "hierarchy"), ("domain", "numeric")):
        if key in entry and kind != owner:
            raise SchemaError(f"{where}: key {key!r} applies to kind '{owner}' only, this QI "
                              f"is {kind!r}; drop it or change the kind.")
    order = entry.get("order")
    if order is not None and (not isinstance(order, list) or not all(
            isinstance(v, str | int) and not isinstance(v, bool) for v in order)):
        raise SchemaError(f"{where}: 'order' must be a list of values (text or integers).")
    hierarchy: Hierarchy | None = None
    hierarchy_path: str | None = None
    if "hierarchy_rows" in entry:
        rows = entry["hierarchy_rows"]
        if not isinstance(rows, list) or not all(
                isinstance(r, list) and all(isinstance(c, str) for c in r) for r in rows):
            raise SchemaError(f"{where}: 'hierarchy_rows' must be a list of lists of labels.")
        hierarchy = Hierarchy.from_rows(rows, source=f"{source}, QI {name!r}")
    elif "hierarchy" in entry:
        if not isinstance(entry["hierarchy"], str) or not entry["hierarchy"]:
            raise SchemaError(f"{where}: 'hierarchy' must be the path of the hierarchy file.")
        hierarchy_path = entry["hierarchy"]
        hierarchy = Hierarchy.from_file(hierarchy_file(base, hierarchy_path, where))
    domain = entry.get("domain")
    if domain is not None and (not isinstance(domain, list) or len(domain) != 2 or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in domain)):
        raise SchemaError(f"{where}: 'domain' must be [low, high], two finite numbers.")
    return QIAttribute(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        order=tuple(str(v) for v in order) if order is not None else None,
        hierarchy=hierarchy,
        hierarchy_path=hierarchy_path,
        domain=(float(domain[0]), float(domain[1])) if domain is not None else None,
    )


#: A ``hierarchy`` path with this prefix names a file of the shared data directory
#: (:func:`republish.datasets.datasets_dir`), e.g. ``dataset:adult/adult_hierarchy_sex.csv``:
#: a schema can use a dataset's hierarchy files as they are, without a copy beside it.
DATASET_PREFIX = "dataset:"


def hierarchy_file(base: Path, path: str, where: str) -> Path:
    """The file a schema's ``hierarchy`` key names: relative to the schema's folder
    ``base``, or with :data:`DATASET_PREFIX` to the shared data directory."""
    if not path.startswith(DATASET_PREFIX):
        return base / path
    from republish.datasets import datasets_dir, where_looked  # datasets imports this module

    directory = datasets_dir()
    if directory is None:
        raise SchemaError(f"{where}: hierarchy {path!r} names the shared data directory, "
                          f"which was not found; looked in {where_looked()}.")
    return directory / path[len(DATASET_PREFIX):]


def make_schema(
    identifier: str,
    sensitive: str,
    qis: Iterable[QIAttribute | str],
) -> Schema:
    """Convenience constructor: plain strings become numeric QIs."""
    attributes = tuple(QIAttribute(q) if isinstance(q, str) else q for q in qis)
    return Schema(identifier=identifier, sensitive=sensitive, qis=attributes)
