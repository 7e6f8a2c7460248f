"""ε-distinctness and ε-inclusion of permutation-published releases (ε-inclusion paper).

A release ``T*(j)`` publishes every real row with its *exact* QI values, its Group-ID and a
sensitive value permuted within the group (Definitions 2 and 4); ``S(j)`` counts, per
group, the rows whose published value was *substituted* (Definition 5). There are no
counterfeits: a group publishes exactly its members' rows.

* ε-distinctness (Definition 7): every group of ``T*(j)`` holds at least ``λ`` categories
  with at least ``τ`` distinct sensitive values each, at least ``ε = λ·τ`` rows, and no
  sensitive value twice. Values of further categories may appear with fewer than ``τ``
  values (the reading under which a superset of an ε-distinct signature stays ε-distinct,
  which Algorithm 1's growing signatures rely on).
* ε-inclusion (Definition 8): every release ε-distinct, and along the lifespan of every
  row the signatures of its groups only grow. Lemma 3 reduces checking release ``n`` to
  ``T*(n)`` being ε-distinct plus ``r.QI*(n-1).S ⊆ r.QI*(n).S`` for every row of
  ``T(n-1) ∩ T(n)`` (:func:`check_eps_inclusion_pair`). As for m-invariance, the product
  also compares a row re-inserted after an absence with its last published signature
  (``across_gaps``).
* substitutions (Definition 4(3), Definition 5): in group ``g`` the published multiset is
  the members' true values with some replaced; the replaced count must equal ``S(j)[g]``
  and every substituted value must come from ``Sca``, the last signatures of ``g``'s
  previously published members minus the members' true values.

Identifiers, groups and true values come from each release's private ``assignment``;
signatures from the published ``T*(j)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.errors import ParameterError, format_rows
from republish.principles._eps_publication import (
    _identifiers,
    _published_values,
    _value_codes,
    check_exact_publication,
    check_substitutions,
)
from republish.principles._eps_signatures import (
    LastSignatures,
    Previous,
    _columnar,
    last_signatures,
)
from republish.principles.hygiene import DEFAULT_ALPHA, check_hygiene
from republish.principles.k_anonymity import group_label, require_positive_int
from republish.principles.m_invariance import format_signature, published_signatures
from republish.principles.report import VerificationReport, Violation
from republish.release import GROUP, Release

__all__ = [
    "PRINCIPLE",
    "LastSignatures",
    "Previous",
    "check_eps_distinctness",
    "check_eps_inclusion_pair",
    "check_eps_inclusion_sequence",
    "check_exact_publication",
    "check_signature_inclusion",
    "check_substitutions",
    "distinctness_problem",
    "last_signatures",
    "verify_eps_release",
]

PRINCIPLE = "eps-inclusion"


def _parameters(lam: int, tau: int) -> tuple[int, int]:
    return require_positive_int("lambda", lam), require_positive_int("tau", tau)


def distinctness_problem(
    values: Iterable[str], categories: SACategories, lam: int, tau: int
) -> str | None:
    """Why the published values of one group are not ε-distinct, or ``None``."""
    items = [str(v) for v in values]
    repeated = sorted(v for v, c in Counter(items).items() if c > 1)
    if repeated:
        return f"publishes sensitive value(s) {format_rows(repeated)} more than once"
    if len(items) < lam * tau:
        return f"has {len(items)} row(s), fewer than ε = λ·τ = {lam}·{tau} = {lam * tau}"
    per_category = Counter(categories.category(v) for v in items)
    full = sorted(c for c, n in per_category.items() if n >= tau)
    if len(full) < lam:
        return (
            f"has {len(full)} categor{'y' if len(full) == 1 else 'ies'} with at least τ = {tau} "
            f"value(s) ({format_rows(full)}), fewer than λ = {lam}"
        )
    return None


def check_eps_distinctness(
    release: Release, categories: SACategories, lam: int, tau: int, prefix: str = ""
) -> VerificationReport:
    """Definition 7 on every group of ``T*(j)``; ``rows`` are the group's identifiers."""
    lam, tau = _parameters(lam, tau)
    frame = pd.DataFrame({
        GROUP: release.published[GROUP].to_numpy(),
        "value": release.published[release.schema.sensitive].astype(str).to_numpy(),
    })
    lookup = {v: categories.category(v) for v in pd.unique(frame["value"])}
    frame["category"] = frame["value"].map(lookup)
    sizes = frame.groupby(GROUP).size()
    repeated = set(frame.loc[frame.duplicated([GROUP, "value"]), GROUP].tolist())
    distinct = frame.drop_duplicates([GROUP, "value"])
    per_category = distinct.groupby([GROUP, "category"]).size()
    full = (per_category >= tau).groupby(level=0).sum().reindex(sizes.index, fill_value=0)
    bad = sorted(repeated | set(sizes.index[(sizes < lam * tau).to_numpy()].tolist())
                 | set(full.index[(full < lam).to_numpy()].tolist()), key=str)
    members = _identifiers(release, bad)
    shown = _published_values(release, bad)
    violations = []
    for group in bad:
        problem = distinctness_problem(shown[group], categories, lam, tau)
        violations.append(Violation(group_label(group), f"{prefix}group {group} {problem}",
                                    members.get(group, ())))
    return VerificationReport("eps-distinctness", tuple(violations))


def check_signature_inclusion(
    release: Release, before: Previous | None, prefix: str = ""
) -> VerificationReport:
    """Definition 8(2) for the rows of ``release`` published before: old signature ⊆ new.

    One violation per (current group, old signature), naming the values dropped.
    """
    last = _columnar(before)
    schema = release.schema
    identifiers = release.assignment[schema.identifier].astype(str).to_numpy()
    position, codes = last.lookup(identifiers.tolist())
    known = np.flatnonzero(position >= 0)
    if not len(known):
        return VerificationReport(PRINCIPLE, ())
    groups = release.assignment[GROUP].to_numpy()
    group_codes, labels = pd.factorize(np.concatenate([release.published[GROUP].to_numpy(),
                                                       groups[known]]))
    published_group = group_codes[: len(release.published)]
    row_group = group_codes[len(release.published):]
    pairs = np.unique(np.stack([row_group, codes[known]], axis=1), axis=0)
    used = np.unique(pairs[:, 1])
    signature_values = [sorted(last.signatures[c]) for c in used.tolist()]
    lengths = np.array([len(v) for v in signature_values], dtype=np.int64)
    flat = np.array([v for values in signature_values for v in values], dtype=object)
    (shown, required), _ = _value_codes(
        release.published[schema.sensitive].astype(str).to_numpy(), flat)
    width = int(max(shown.max(initial=0), required.max(initial=0))) + 1
    present = np.unique(published_group.astype(np.int64) * width + shown)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    slot = np.searchsorted(used, pairs[:, 1])
    pair_of = np.repeat(np.arange(len(pairs)), lengths[slot])
    offset = np.arange(len(pair_of)) - np.repeat(np.cumsum(lengths[slot]) - lengths[slot],
                                                 lengths[slot])
    keys = pairs[pair_of, 0].astype(np.int64) * width + required[starts[slot][pair_of] + offset]
    missing = ~np.isin(keys, present)
    bad_pairs = np.unique(pair_of[missing])
    signatures = published_signatures(release) if len(bad_pairs) else {}
    violations = []
    for p in bad_pairs.tolist():
        group, code = labels[pairs[p, 0]], int(pairs[p, 1])
        mine = known[(row_group == pairs[p, 0]) & (codes[known] == code)]
        idents = sorted(identifiers[mine].tolist())
        numbers = sorted(set(last.release[position[mine]].tolist()))
        old = last.signatures[code]
        now = signatures.get(group, frozenset())
        violations.append(Violation(
            group_label(group),
            f"{prefix}identifier(s) {format_rows(idents)} had signature "
            f"{format_signature(old)} in release(s) {numbers} but their group {group} of release "
            f"{release.number} has signature {format_signature(now)}, which drops "
            f"{format_signature(old - now)} (signatures may only grow)",
            tuple(idents),
        ))
    return VerificationReport(PRINCIPLE, tuple(violations))


def verify_eps_release(
    release: Release,
    categories: SACategories,
    lam: int,
    tau: int,
    before: Previous | None = None,
    alpha: float = DEFAULT_ALPHA,
    prefix: str = "",
) -> VerificationReport:
    """Every check of one release given the last signatures ``before`` (Lemma 3).

    Combines ε-distinctness, exact publication, substitutions against ``S(j)``, signature
    inclusion for the rows published before, and publication hygiene (columns, identifier
    values, row order). Each reason starts with the part that found it.
    """
    last = _columnar(before)
    parts = [
        check_eps_distinctness(release, categories, lam, tau, prefix),
        check_exact_publication(release, prefix),
        check_substitutions(release, last, prefix),
        check_signature_inclusion(release, last, prefix),
        check_hygiene(release, alpha=alpha),
    ]
    violations = tuple(
        Violation(v.group, f"{part.principle}: {v.reason}", v.rows)
        for part in parts
        for v in part.violations
    )
    return VerificationReport(f"release {release.number}", violations)


def check_eps_inclusion_pair(
    previous: Release, current: Release, categories: SACategories, lam: int, tau: int
) -> VerificationReport:
    """Lemma 3: ``current`` against ``previous`` (assuming the sequence up to it is fine)."""
    report = verify_eps_release(current, categories, lam, tau,
                                LastSignatures.of_release(previous))
    return VerificationReport(PRINCIPLE, report.violations)


def check_eps_inclusion_sequence(
    releases: Sequence[Release],
    categories: SACategories,
    lam: int,
    tau: int,
    across_gaps: bool = True,
    alpha: float = DEFAULT_ALPHA,
) -> VerificationReport:
    """Definition 8 over a whole sequence (in publication order).

    Every release is checked by :func:`verify_eps_release` against the signatures its
    rows had when last published: in the previous release only (``across_gaps=False``,
    the paper's contiguous lifespans), or in any earlier one (the product's re-insertion
    rule). Reasons start with ``release N:``.
    """
    lam, tau = _parameters(lam, tau)
    releases = list(releases)
    numbers = [r.number for r in releases]
    if numbers != sorted(set(numbers)):
        raise ParameterError(f"releases must be in publication order, got numbers {numbers}.")
    violations: list[Violation] = []
    last = LastSignatures.empty()
    previous_only = LastSignatures.empty()
    for release in releases:
        report = verify_eps_release(release, categories, lam, tau,
                                    last if across_gaps else previous_only, alpha,
                                    prefix=f"release {release.number}: ")
        violations.extend(report.violations)
        previous_only = LastSignatures.of_release(release)
        last = last.updated(release)
    return VerificationReport(PRINCIPLE, tuple(violations))
