"""Privacy principles as verifiers: each returns a :class:`VerificationReport` listing
every violation (group, reason naming the values, rows involved), never just yes/no.

* :func:`check_k_anonymity`, :func:`check_l_diversity`: a published table on its own;
* :func:`check_m_eligibility`: a multiset of sensitive values;
* :func:`check_m_uniqueness`, :func:`check_m_invariance_pair`,
  :func:`check_m_invariance_sequence`: releases (Definitions 16-17, Lemma 4 of the
  m-invariance paper);
* :func:`check_counterfeits`, :func:`check_hygiene`: consistency of a release's
  counterfeits and what its layout reveals;
* :func:`verify_release`: all release checks, run before a release is written.

The release verifiers first detect violations on integer codes
(:mod:`republish.principles.vectorized`) and build their messages row by row only when
something is found; ``vectorized=False`` runs the row-by-row code alone (same report).
"""

from republish.principles.counterfeits import check_counterfeits
from republish.principles.hygiene import check_hygiene
from republish.principles.k_anonymity import check_k_anonymity
from republish.principles.l_diversity import check_l_diversity
from republish.principles.m_invariance import (
    check_m_invariance_pair,
    check_m_invariance_sequence,
)
from republish.principles.m_uniqueness import check_m_eligibility, check_m_uniqueness
from republish.principles.release_checks import verify_release
from republish.principles.report import VerificationReport, Violation

__all__ = [
    "VerificationReport",
    "Violation",
    "check_counterfeits",
    "check_hygiene",
    "check_k_anonymity",
    "check_l_diversity",
    "check_m_eligibility",
    "check_m_invariance_pair",
    "check_m_invariance_sequence",
    "check_m_uniqueness",
    "verify_release",
]
