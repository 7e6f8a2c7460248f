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

from republish.principles.counterfeits import check_counterfeits
from republish.principles.hygiene import DEFAULT_ALPHA, check_hygiene
from republish.principles.m_invariance import check_m_invariance_pair, check_m_uniqueness
from republish.principles.report import VerificationReport, Violation
from republish.release import Release

__all__ = ["verify_release"]


def verify_release(
    release: Release,
    m: int,
    previous: Release | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> VerificationReport:
    """Verify ``release`` (against ``previous`` when given) with every part above.

    Returns
    -------
    VerificationReport
        Principle ``release <n>``; each violation's reason starts with the name of the
        part that found it (``m-uniqueness:``, ``m-invariance:``, ``counterfeits:``,
        ``hygiene:``).
    """
    parts = [
        check_m_uniqueness(release, m)
        if previous is None
        else check_m_invariance_pair(previous, release, m),
        check_counterfeits(release),
        check_hygiene(release, alpha=alpha),
    ]
    violations = tuple(
        Violation(v.group, f"{part.principle}: {v.reason}", v.rows)
        for part in parts
        for v in part.violations
    )
    return VerificationReport(f"release {release.number}", violations)
