"""Identifiers that stay the same person across releases.

m-invariance (and every principle of this product) constrains a person's releases through
their identifier: a returning row keeps its signature only if its identifier is recognized.
An identifier whose *type* changes between releases -- ``123`` in a CSV, ``123.0`` in a
Parquet file whose column became float, ``00123`` after a spreadsheet kept or dropped
leading zeros -- would silently turn every returning person into a new one, and the
release would pass every verifier while disclosing values by intersection.

So identifiers have a *kind*, fixed for a store's whole history:

* ``integer``: every identifier is an integer. Integers, integral floats (``123.0``) and
  integer text (``"0123"``, ``"+123"``, ``"123.0"``) all canonicalize to the decimal text
  of the integer (``"123"``). Anything else is refused.
* ``text``: identifiers are text, compared after stripping surrounding blanks. A numeric
  column is refused: its conversion to text is ambiguous (``123`` vs ``123.0`` vs
  ``0123``).

The kind is inferred from the first release when not given at ``init`` (integer when every
identifier is already canonical integer text or a number, text otherwise). As a second
guard, :func:`check_population_continuity` refuses a release that shares almost no
identifiers with the previous one while having a similar size -- the signature of a
re-keyed population -- unless the publisher says it is a new population.
"""

from __future__ import annotations

import re
from typing import Literal, cast

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError, format_rows

__all__ = [
    "IDENTIFIER_KINDS",
    "IdentifierKind",
    "canonical_identifiers",
    "check_population_continuity",
    "infer_identifier_kind",
    "integer_values",
    "locate",
    "surely_distinct",
    "validate_identifier_kind",
]

IdentifierKind = Literal["text", "integer"]
IDENTIFIER_KINDS: tuple[IdentifierKind, ...] = ("text", "integer")

_CANONICAL_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(\.0*)?")

#: RE2 patterns (pyarrow) of the fast paths below. Python's ``str.strip()`` removes the
#: characters for which ``str.isspace()`` holds; a value starting or ending with one of
#: them matches :data:`_EDGE_SPACE`, and only then can stripping change it.
#: Listed, not computed: scanning all 1.1M code points took about 0.04 s at every import
#: (every command). tests/test_identifiers_fast_paths.py checks the list against Python's.
WHITESPACE = (0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
              *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
_SPACES = "".join(f"\\x{{{c:x}}}" for c in WHITESPACE)
_EDGE_SPACE = f"^[{_SPACES}]|[{_SPACES}]$"
_PLAIN_CANONICAL = "^-?(0|[1-9][0-9]*)$"
#: canonical integer text whose str(int(...)) is itself ("-0" becomes "0")
_FIXED_CANONICAL = "^(0|-?[1-9][0-9]*)$"

#: A release sharing fewer than this share of the smaller population with the previous
#: release, at a similar size, looks re-keyed (see :func:`check_population_continuity`).
MIN_SHARED_SHARE = 0.1
#: Sizes within this factor of each other count as similar.
SIMILAR_SIZE_FACTOR = 2.0
#: Below this many rows on either side the test says nothing.
MIN_POPULATION = 10


def text_values(column: pd.Series | np.ndarray) -> object | None:
    """The values as a pyarrow string array when every one is a ``str`` (an object column
    of text, as Parquet and CSV give), else None: the fast paths below then apply."""
    values = column.to_numpy() if isinstance(column, pd.Series) else np.asarray(column)
    if values.dtype != object or not len(values):
        return None
    if pd.api.types.infer_dtype(values, skipna=False) != "string":
        return None
    import pyarrow as pa

    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowException, UnicodeError):  # e.g. lone surrogates: the slow path decides
        return None


#: Fewer values than this: the int64 detour of :func:`integer_values` costs more than it saves.
_FEW_IDS = 10_000


def integer_values(values: pd.Index | pd.Series | np.ndarray) -> np.ndarray | None:
    """The int64 values of identifiers when every one is a ``str`` in canonical integer
    form (``0``, ``-12``, ``345``: no sign on zero, no leading zero, within int64), else
    None (also for fewer than ``_FEW_IDS`` values).

    Canonical texts and their integers correspond one to one, so equality, look-ups and
    uniqueness computed on these integers are exactly those of the texts: a hash table
    of int64 instead of Python strings (measured on 2M identifiers: 0.25 s instead of
    2.6 s for a look-up of a table's identifiers in the state's, 0.3 s instead of 1.3 s
    to prove them distinct)."""
    if len(values) < _FEW_IDS:
        return None
    array = values.to_numpy() if isinstance(values, pd.Index | pd.Series) else values
    text = text_values(np.asarray(array))
    if text is None or not all_match(text, _FIXED_CANONICAL):
        return None
    import pyarrow as pa

    try:
        return np.asarray(text.cast(pa.int64()).to_numpy(), dtype=np.int64)  # type: ignore[attr-defined]
    except (pa.ArrowException, OverflowError):  # beyond int64: the texts decide
        return None


def surely_distinct(values: pd.Index | pd.Series | np.ndarray) -> bool:
    """True when the identifiers are pairwise distinct, proved cheaply (sorted int64 of
    canonical integers, or distinct Python hashes of ``str``); False says nothing, the
    caller then hashes the values as before."""
    numbers = integer_values(values)
    if numbers is not None:
        numbers = np.sort(numbers)
        return bool((numbers[1:] != numbers[:-1]).all())
    from republish.principles.vectorized import distinct_text

    array = values.to_numpy() if isinstance(values, pd.Index | pd.Series) else values
    return distinct_text(np.asarray(array, dtype=object))


def locate(index: pd.Index, identifiers: np.ndarray) -> np.ndarray:
    """``index.get_indexer(identifiers)`` (the position of each identifier in the unique
    ``index``, -1 where absent), through int64 when both sides are canonical integer
    texts (:func:`integer_values`: the same positions)."""
    known = integer_values(index)
    wanted = integer_values(identifiers) if known is not None else None
    if known is not None and wanted is not None:
        return np.asarray(pd.Index(known).get_indexer(wanted), dtype=np.int64)
    return np.asarray(index.get_indexer(identifiers), dtype=np.int64)


def all_match(text: object, pattern: str) -> bool:
    """Whether every value of the pyarrow string array ``text`` matches ``pattern`` (RE2)."""
    import pyarrow.compute as pc

    return bool(pc.all(pc.match_substring_regex(text, pattern)).as_py())


def edge_space(text: object) -> np.ndarray:
    """Per value of the pyarrow string array ``text``: starts or ends with a character
    ``str.strip()`` removes."""
    import pyarrow.compute as pc

    found = pc.match_substring_regex(text, _EDGE_SPACE)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def validate_identifier_kind(kind: object) -> IdentifierKind:
    """``kind`` if it is ``"text"`` or ``"integer"``; else :class:`ParameterError`."""
    if kind not in IDENTIFIER_KINDS:
        raise ParameterError(
            f"identifier kind (--id-kind) must be 'text' or 'integer', got {kind!r}."
        )
    return cast(IdentifierKind, kind)


def _is_integer_dtype(column: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(column) and not pd.api.types.is_bool_dtype(column)


def infer_identifier_kind(column: pd.Series) -> IdentifierKind:
    """The kind of a first release's identifier column (no missing values).

    ``integer`` for an integer column, a float column of integral values, or text that is
    already canonical integer text (no sign ``+``, no leading zeros, no ``.0``): such
    identifiers cannot lose information by becoming integers. ``text`` otherwise.
    """
    if _is_integer_dtype(column):
        return "integer"
    if pd.api.types.is_float_dtype(column):
        values = column.to_numpy(dtype=float)
        if np.isfinite(values).all() and (values == np.round(values)).all():
            return "integer"
        return "text"
    if pd.api.types.is_bool_dtype(column):
        return "text"
    text = text_values(column)
    if text is not None and all_match(text, _PLAIN_CANONICAL):
        return "integer"  # no blank to strip: what the loop below finds, without hashing
    codes, uniques = pd.factorize(column)
    text = pd.Index(uniques).astype(str).str.strip()
    if len(text) and all(_CANONICAL_INTEGER.fullmatch(t) for t in text):
        return "integer"
    return "text"


def canonical_identifiers(column: pd.Series, kind: IdentifierKind, name: str) -> pd.Series:
    """Identifiers of ``column`` as canonical text for ``kind`` (see the module docstring).

    Raises
    ------
    InputError
        naming the rows whose identifiers do not fit ``kind``.
    """
    kind = validate_identifier_kind(kind)
    if kind == "text":
        if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            raise InputError(
                f"identifier column {name!r} is numeric ({column.dtype}) but this history's "
                "identifiers are text: a number's text form is ambiguous (123, 123.0, 0123) "
                "and would make returning people look new. Read the column as text, as in "
                "earlier releases (for a DataFrame: frame[column].astype(str) on the "
                "original text; for Parquet: store the column as a string)."
            )
        fast = text_values(column)
        if fast is not None and not edge_space(fast).any():
            return pd.Series(column.to_numpy(dtype=object, copy=True), index=column.index)
        codes, uniques = pd.factorize(column)
        text = pd.Index(uniques).astype(str).str.strip()
        return pd.Series(np.asarray(text, dtype=object)[codes], index=column.index)
    if _is_integer_dtype(column):
        return column.astype(np.int64).astype(str).astype(object)
    if pd.api.types.is_float_dtype(column):
        values = column.to_numpy(dtype=float)
        bad = ~(np.isfinite(values) & (values == np.round(values)))
        if bad.any():
            rows = np.flatnonzero(bad).tolist()
            raise InputError(
                f"identifier column {name!r} has non-integer value(s) "
                f"{format_rows(column.iloc[rows[:3]].tolist())} in row(s) {format_rows(rows)}"
                " but this history's identifiers are integers; fix those identifiers."
            )
        return pd.Series(
            np.asarray([str(int(v)) for v in values], dtype=object), index=column.index
        )
    fast = text_values(column)
    if fast is not None and all_match(fast, _FIXED_CANONICAL):
        # already canonical: str(int(value)) is the value itself
        return pd.Series(column.to_numpy(dtype=object, copy=True), index=column.index)
    codes, uniques = pd.factorize(column)
    text = pd.Index(uniques).astype(str).str.strip()
    canonical = []
    bad_codes = []
    for code, value in enumerate(text):
        if _INTEGER_TEXT.fullmatch(value):
            canonical.append(str(int(value.split(".")[0])))
        else:
            canonical.append("")
            bad_codes.append(code)
    if bad_codes:
        rows = np.flatnonzero(np.isin(codes, bad_codes)).tolist()
        raise InputError(
            f"identifier column {name!r} has value(s) "
            f"{format_rows([text[c] for c in bad_codes[:3]])} in row(s) {format_rows(rows)} "
            "that are not integers, but this history's identifiers are integers (recorded "
            "at init or by the first release). Fix those identifiers, or start a new store "
            "for a new population."
        )
    return pd.Series(np.asarray(canonical, dtype=object)[codes], index=column.index)


def _shares_at_least(previous: pd.Index | np.ndarray, current: pd.Index | np.ndarray,
                     needed: float) -> bool:
    """A cheap sufficient test: a part of ``previous`` (3x the ``needed`` count) already
    shares ``needed`` distinct identifiers with ``current``, so the whole does (hashing
    that part instead of both whole populations). False says nothing."""
    part = pd.Index(previous[: int(3 * needed) + 1])
    if not (surely_distinct(part) or part.is_unique):
        return False
    found = locate(part, np.asarray(current, dtype=object))
    hits = np.zeros(len(part), dtype=bool)
    hits[found[found >= 0]] = True
    return bool(hits.sum() >= needed)


def check_population_continuity(
    previous: pd.Index | np.ndarray,
    current: pd.Index | np.ndarray,
    *,
    new_population: bool = False,
    identifier: str = "identifier",
) -> None:
    """Refuse a release that looks re-keyed: almost no shared identifiers, similar size.

    ``previous`` are the identifiers of the last release (published and deferred),
    ``current`` those of the table now. Real turnover between two releases of one
    population keeps most people; a table of similar size sharing fewer than
    :data:`MIN_SHARED_SHARE` of them almost always means that the identifiers changed
    form (type, padding, a new numbering), and publishing it would treat every returning
    person as new, with no signature constraint: an intersection of the two releases
    can then disclose their sensitive values.

    Raises
    ------
    InputError
        unless ``new_population`` is true.
    """
    if new_population:
        return
    before, now = len(previous), len(current)
    if min(before, now) < MIN_POPULATION:
        return
    if max(before, now) > SIMILAR_SIZE_FACTOR * min(before, now):
        return
    needed = MIN_SHARED_SHARE * min(before, now)
    if _shares_at_least(previous, current, needed):
        return
    shared = len(pd.Index(previous).intersection(pd.Index(current)))
    if shared >= needed:
        return
    raise InputError(
        f"this table shares {shared} of its {now} {identifier!r} values with the "
        f"{before} of the last release, at a similar size: it looks like the same "
        "population under other identifiers (a changed type, padding or numbering). "
        "Publishing it would treat every returning person as new and lift the constraints "
        "that protect them: combining the releases could disclose their sensitive values. "
        "Fix the identifiers to match earlier releases; if this really is a new population, "
        "say so with --new-population (new_population=True)."
    )
