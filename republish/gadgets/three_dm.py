"""The 3-dimensional-matching reduction of the l-diversity paper (§4, Figure 1).

A 3DM instance has three disjoint domains ``D1, D2, D3`` of ``n`` values each and ``d``
distinct points ``p_1 .. p_d`` of ``D1 x D2 x D3``; it asks for ``n`` points sharing no
coordinate. The reduction builds a table with ``3n`` rows (row ``j`` stands for the
``j``-th value ``v_j`` of ``D1``, then ``D2``, then ``D3``), ``d`` QIs ``A_1 .. A_d`` (one
per point) and an SA ``B`` with ``m`` values, ``3 <= m <= 3n``:

* ``t_j[B] = u`` by the paper's rule: ``u = j`` for ``j <= m - 2``; for ``j >= m - 1``,
  if ``m - 1 > 2n``: ``u = m - 1`` up to ``j = 3n - 1`` and ``u = m`` at ``j = 3n``; if
  ``2n >= m - 1 > n``: ``u = m - 1`` up to ``2n``, then ``m``; if ``n >= m - 1``:
  ``u = m - 2`` up to ``n``, ``m - 1`` up to ``2n``, then ``m``. Rows of different
  domains get different SA values and no value exceeds ``n`` rows.
* ``t_j[A_i] = 0`` if ``v_j`` is a coordinate of ``p_i``, else ``u``.

Lemma 4.5: the instance has a 3DM exactly when the table has a 3-diverse generalization
with ``3n(d - 1)`` stars, and no 3-diverse generalization has fewer (Property 4).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pandas as pd

from republish.errors import ParameterError
from republish.schema import QIAttribute, Schema

__all__ = ["reduction_schema", "reduction_table", "sa_value", "solve_three_dm", "star_target"]

Point = tuple[object, object, object]


def _validate(
    d1: Sequence[object], d2: Sequence[object], d3: Sequence[object], points: Sequence[Point]
) -> int:
    n = len(d1)
    if n < 1 or len(d2) != n or len(d3) != n:
        raise ParameterError("D1, D2 and D3 must be non-empty and equally large.")
    domains = [list(d1), list(d2), list(d3)]
    if any(len(set(domain)) != n for domain in domains):
        raise ParameterError("a domain lists a value twice.")
    if set(d1) & set(d2) or set(d1) & set(d3) or set(d2) & set(d3):
        raise ParameterError("the domains D1, D2, D3 must be disjoint.")
    if len(set(map(tuple, points))) != len(points):
        raise ParameterError("the points must be distinct.")
    for index, point in enumerate(points, start=1):
        if len(point) != 3 or any(point[k] not in domains[k] for k in range(3)):
            raise ParameterError(f"point p_{index} = {point!r} is not in D1 x D2 x D3.")
    return n


def sa_value(j: int, n: int, m: int) -> int:
    """SA value ``u`` of row ``j`` (1-based, ``1 <= j <= 3n``) for ``m`` values (§4)."""
    if not 1 <= j <= 3 * n:
        raise ParameterError(f"row j={j} is outside 1..3n = 1..{3 * n}.")
    if not 3 <= m <= 3 * n:
        raise ParameterError(f"m={m} must be between 3 and 3n = {3 * n}.")
    if j <= m - 2:
        return j
    if m - 1 > 2 * n:
        return m - 1 if j <= 3 * n - 1 else m
    if m - 1 > n:
        return m - 1 if j <= 2 * n else m
    if j <= n:
        return m - 2
    return m - 1 if j <= 2 * n else m


def reduction_schema(d: int) -> Schema:
    """Schema of :func:`reduction_table`: identifier ``row``, numeric QIs ``A1 .. Ad``, SA ``B``."""
    return Schema(identifier="row", sensitive="B",
                  qis=tuple(QIAttribute(f"A{i}", "numeric") for i in range(1, d + 1)))


def reduction_table(
    d1: Sequence[object],
    d2: Sequence[object],
    d3: Sequence[object],
    points: Sequence[Point],
    m: int,
) -> tuple[pd.DataFrame, Schema]:
    """The table ``T`` of §4 built from a 3DM instance, and its schema.

    Columns: ``row`` (``v_j`` as text), ``A1 .. Ad`` (floats), ``B`` (the SA value as text).
    """
    n = _validate(d1, d2, d3, points)
    if not points:
        raise ParameterError("the instance needs at least one point.")
    values = [*d1, *d2, *d3]
    records = []
    for j, v in enumerate(values, start=1):
        u = sa_value(j, n, m)
        domain = (j - 1) // n
        record: dict[str, object] = {"row": str(v)}
        for i, point in enumerate(points, start=1):
            record[f"A{i}"] = 0.0 if point[domain] == v else float(u)
        record["B"] = str(u)
        records.append(record)
    schema = reduction_schema(len(points))
    return pd.DataFrame(records, columns=["row", *schema.qi_names, "B"]), schema


def star_target(n: int, d: int) -> int:
    """``3n(d - 1)``: the fewest stars of any 3-diverse generalization (Property 4)."""
    return 3 * n * (d - 1)


def solve_three_dm(
    d1: Sequence[object],
    d2: Sequence[object],
    d3: Sequence[object],
    points: Sequence[Point],
) -> tuple[int, ...] | None:
    """Brute force: indices (0-based) of ``n`` points sharing no coordinate, or None."""
    n = _validate(d1, d2, d3, points)
    for chosen in itertools.combinations(range(len(points)), n):
        if all(len({points[i][k] for i in chosen}) == n for k in range(3)):
            return chosen
    return None
