"""l-diversity of a published table (frequency l-diversity).

Definition 2 of the l-diversity hardness paper (Xiao, Yi, Tao 2010): a set ``S`` of rows
is *l-eligible* if at most ``|S| / l`` of them carry one sensitive value; a generalization
is *l-diverse* if every QI group is l-eligible. QI groups are formed as in
:mod:`republish.principles.k_anonymity` (``group`` column, else identical QI cells).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from republish.errors import format_rows
from republish.principles.k_anonymity import (
    describe_group,
    group_label,
    mixed_cell_violations,
    published_groups,
    require_positive_int,
)
from republish.principles.report import VerificationReport, Violation
from republish.schema import Schema

__all__ = ["check_l_diversity"]


def check_l_diversity(
    published: pd.DataFrame,
    schema: Schema,
    l: int,  # noqa: E741 - the paper's symbol
    group_column: str | None = "group",
) -> VerificationReport:
    """Verify that no sensitive value fills more than ``|G| / l`` rows of any QI group ``G``.

    Parameters
    ----------
    published:
        A published table (QI cells, sensitive column, optional ``group`` column).
    schema:
        Names the QI and sensitive columns.
    l:
        Diversity parameter, an integer >= 1.
    group_column:
        Column holding the group ids; ``None`` groups rows by their QI cells.

    Returns
    -------
    VerificationReport
        Principle ``l-diversity``; one violation per (group, value) above the limit, naming
        the value, its count, the group size and the limit ``|G| / l``, plus one per group
        whose rows disagree on a QI cell. ``rows`` are 0-based row positions.
    """
    l = require_positive_int("l", l)  # noqa: E741
    groups = published_groups(published, schema, group_column)
    sensitive = published[schema.sensitive].astype(str).tolist()
    violations = mixed_cell_violations(groups, schema)
    for key, rows in groups.positions.items():
        size = len(rows)
        counts = Counter(sensitive[i] for i in rows)
        for value, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            # count > |G| / l, in integers
            if count * l > size:
                positions = [int(i) for i in rows if sensitive[i] == value]
                name = describe_group(key, groups.by_group_column, schema)
                violations.append(
                    Violation(
                        group=group_label(key),
                        reason=(
                            f"{name}: sensitive value {value!r} fills {count} of {size} rows, "
                            f"more than |G|/l = {size}/{l} = {size / l:.4g} "
                            f"(rows {format_rows(positions)})"
                        ),
                        rows=tuple(positions),
                    )
                )
    return VerificationReport("l-diversity", tuple(violations))
