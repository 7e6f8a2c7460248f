"""Verification of a release before it is written: the parts combined.

A release is written only when :func:`verify_release` accepts it (design notes,
"A release that fails verification is never written"). It combines

* m-uniqueness of ``T*(j)`` (Definition 17 of the m-invariance paper), or, when the
  previous release is given, Lemma 4's pair check (m-uniqueness plus every row of
  ``T(j-1) ∩ T(j)`` keeping its signature);
* :func:`~republish.principles.counterfeits.check_counterfeits` (``R(j)``, boxes, real
  rows in every group);
* :func:`~republish.principles.hygiene.check_hygiene` (columns, identifier values, row
  order).
"""

from __future__ import annotations

from republish.principles.counterfeits import counterfeit_violations
from republish.principles.hygiene import DEFAULT_ALPHA, hygiene_violations
from republish.principles.k_anonymity import require_positive_int
from republish.principles.m_invariance import pair_violations, require_same_columns
from republish.principles.m_uniqueness import uniqueness_violations
from republish.principles.report import VerificationReport, Violation
from republish.principles.vectorized import ReleaseArrays
from republish.release import Release

__all__ = ["verify_release"]


def verify_release(
    release: Release,
    m: int,
    previous: Release | None = None,
    alpha: float = DEFAULT_ALPHA,
    vectorized: bool = True,
) -> VerificationReport:
    """Verify ``release`` (against ``previous`` when given) with every part above.

    Returns
    -------
    VerificationReport
        Principle ``release <n>``; each violation's reason starts with the name of the
        part that found it (``m-uniqueness:``, ``m-invariance:``, ``counterfeits:``,
        ``hygiene:``). ``vectorized=False`` skips the vectorized detection
        (:mod:`republish.principles.vectorized`) and runs the row-by-row code alone; the
        report is the same.
    """
    m = require_positive_int("m", m)
    arrays = ReleaseArrays(release) if vectorized else None
    if previous is None:
        first = ("m-uniqueness", uniqueness_violations(release, m, "", arrays))
    else:
        require_same_columns([previous, release])
        before = ReleaseArrays(previous) if vectorized else None
        first = ("m-invariance", pair_violations(previous, release, m, before, arrays))
    parts = [
        first,
        ("counterfeits", counterfeit_violations(release, arrays)),
        ("hygiene", hygiene_violations(release, alpha, arrays)),
    ]
    violations = tuple(
        Violation(v.group, f"{principle}: {v.reason}", v.rows)
        for principle, found in parts
        for v in found
    )
    return VerificationReport(f"release {release.number}", violations)
