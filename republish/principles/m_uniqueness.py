"""m-eligibility and m-uniqueness: the checks of one table or one release.

* m-eligibility (Definition 3 of the m-eligibility paper, Ruiz et al. 2024): a multiset
  ``S`` of sensitive values is m-eligible when no value occurs more than ``|S| / m``
  times; it is the necessary and sufficient condition for ``S`` to be split into
  m-unique groups (Proposition 1 there).
* m-uniqueness (Definition 17 of Xiao and Tao 2007): every QI group of ``T*(j)`` holds
  at least ``m`` rows, all with different sensitive values. Counterfeits are published
  rows, so they count.

Separate from :mod:`republish.principles.m_invariance`, which checks how signatures carry
over between releases (and requires m-uniqueness of each), because these checks need one
release alone and serve other principles too (m-Distinct). Every name here is also
importable from :mod:`republish.principles.m_invariance`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import format_rows
from republish.principles.k_anonymity import group_label, require_positive_int
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import ReleaseArrays
from republish.release import GROUP, Release

__all__ = [
    "check_m_eligibility",
    "check_m_uniqueness",
    "uniqueness_groups",
    "uniqueness_violations",
]


def check_m_eligibility(values: Iterable[str] | pd.Series, m: int) -> VerificationReport:
    """Verify that no sensitive value occurs more than ``|S| / m`` times in ``values``.

    Returns
    -------
    VerificationReport
        Principle ``m-eligibility``; one table-wide violation (``group=None``) per value
        above the limit, naming the value, its count and the limit; ``rows`` are the
        0-based positions of that value in ``values``.
    """
    m = require_positive_int("m", m)
    items = [str(v) for v in (values.tolist() if isinstance(values, pd.Series) else values)]
    size = len(items)
    counts = Counter(items)
    violations = []
    for value, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if count * m > size:
            positions = [i for i, v in enumerate(items) if v == value]
            violations.append(
                Violation(
                    group=None,
                    reason=(
                        f"sensitive value {value!r} has {count} of {size} rows, more than "
                        f"|S|/m = {size}/{m} = {size / m:.4g}"
                    ),
                    rows=tuple(positions),
                )
            )
    return VerificationReport("m-eligibility", tuple(violations))


def _real_members(release: Release) -> dict[Any, list[tuple[str, str]]]:
    """Group -> (identifier, sensitive value) of its real rows."""
    schema = release.schema
    members: dict[Any, list[tuple[str, str]]] = {}
    for ident, group, value in zip(
        release.assignment[schema.identifier].astype(str),
        release.assignment[GROUP].tolist(),
        release.assignment[schema.sensitive].astype(str),
        strict=True,
    ):
        members.setdefault(group, []).append((ident, value))
    return members


def _uniqueness_violations(release: Release, m: int, prefix: str = "") -> list[Violation]:
    sensitive = release.schema.sensitive
    members = _real_members(release)
    published: dict[Any, list[str]] = {}
    for group, value in zip(
        release.published[GROUP].tolist(), release.published[sensitive].astype(str), strict=True
    ):
        published.setdefault(group, []).append(value)
    violations = []
    for group in sorted(published):
        values = published[group]
        real = members.get(group, [])
        if len(values) < m:
            violations.append(
                Violation(
                    group=group_label(group),
                    reason=(
                        f"{prefix}group {group} has {len(values)} row(s) (counterfeits "
                        f"included), fewer than m = {m}"
                    ),
                    rows=tuple(ident for ident, _ in real),
                )
            )
        for value, count in sorted(Counter(values).items()):
            if count > 1:
                idents = [ident for ident, v in real if v == value]
                violations.append(
                    Violation(
                        group=group_label(group),
                        reason=(
                            f"{prefix}group {group} publishes sensitive value {value!r} {count} "
                            "times; m-uniqueness allows each value once per group"
                            + (f" (real rows {format_rows(idents)})" if idents else "")
                        ),
                        rows=tuple(idents),
                    )
                )
    return violations


def uniqueness_groups(arrays: ReleaseArrays, m: int) -> set[Any]:
    """Groups :func:`_uniqueness_violations` reports, found on integer codes."""
    published, _ = arrays.group_sizes()
    bad = (published > 0) & (published < m)
    keys, counts = arrays.cell_counts()
    groups, _ = arrays.split_cell_keys(keys[counts > 1])
    bad[groups] = True
    return set(arrays.label_list(np.flatnonzero(bad)))


def uniqueness_violations(
    release: Release, m: int, prefix: str = "", arrays: ReleaseArrays | None = None
) -> list[Violation]:
    """m-uniqueness violations of ``release``; detected on ``arrays`` when given."""
    if arrays is not None and arrays.vectorizable and not uniqueness_groups(arrays, m):
        return []
    return _uniqueness_violations(release, m, prefix)


def check_m_uniqueness(release: Release, m: int, vectorized: bool = True) -> VerificationReport:
    """Verify Definition 17's m-uniqueness of ``T*(j)``.

    Every published group needs at least ``m`` rows and pairwise different sensitive
    values; counterfeits are published rows and count. ``rows`` of a violation are the
    identifiers of the real rows involved. ``vectorized=False`` skips the vectorized
    detection (:mod:`republish.principles.vectorized`) and runs the row-by-row code
    alone; the report is the same.
    """
    m = require_positive_int("m", m)
    arrays = ReleaseArrays(release) if vectorized else None
    return VerificationReport("m-uniqueness", tuple(uniqueness_violations(release, m, "", arrays)))
