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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from republish.categories import SACategories
from republish.errors import ParameterError, format_rows
from republish.generalization import format_number
from republish.principles.hygiene import DEFAULT_ALPHA, check_hygiene
from republish.principles.k_anonymity import group_label, require_positive_int
from republish.principles.m_invariance import format_signature, published_signatures
from republish.principles.report import VerificationReport, Violation
from republish.release import COUNT, GROUP, Release

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


@dataclass(frozen=True)
class LastSignatures:
    """Identifier -> (release that last published it, signature of its group there).

    Columnar (``release[i]``, ``code[i]`` into ``signatures`` for ``index[i]``) so that
    200k-row releases are checked with array operations.
    """

    index: pd.Index
    release: np.ndarray
    code: np.ndarray
    signatures: tuple[frozenset[str], ...]

    @classmethod
    def empty(cls) -> LastSignatures:
        return cls(pd.Index([], dtype=object), np.zeros(0, np.int64), np.zeros(0, np.int64), ())

    @classmethod
    def of_release(cls, release: Release) -> LastSignatures:
        signatures = published_signatures(release)
        groups = list(signatures)
        position = {g: i for i, g in enumerate(groups)}
        schema = release.schema
        codes = np.array([position.get(g, len(groups)) for g in
                          release.assignment[GROUP].tolist()], dtype=np.int64)
        table = (*(signatures[g] for g in groups), frozenset())
        return cls(pd.Index(release.assignment[schema.identifier].astype(str).to_numpy()),
                   np.full(len(codes), release.number, dtype=np.int64), codes, table)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, tuple[int, frozenset[str]]]) -> LastSignatures:
        table = list(dict.fromkeys(signature for _, signature in mapping.values()))
        position = {signature: i for i, signature in enumerate(table)}
        return cls(pd.Index(list(mapping), dtype=object),
                   np.array([number for number, _ in mapping.values()], dtype=np.int64),
                   np.array([position[s] for _, s in mapping.values()], dtype=np.int64),
                   tuple(table))

    @classmethod
    def from_state(cls, state: Any) -> LastSignatures:
        """From a :class:`republish.state.PublisherState` (its last release and signature
        per identifier; duck-typed so that this module does not import the state)."""
        rows = state.rows
        return cls(
            pd.Index(rows.index.astype(str), dtype=object),
            rows["last_release"].to_numpy(dtype=np.int64),
            rows["signature"].to_numpy(dtype=np.int64),
            tuple(state.signatures),
        )

    def updated(self, release: Release) -> LastSignatures:
        """These signatures overridden by the rows of a later ``release``."""
        later = LastSignatures.of_release(release)
        kept = ~self.index.isin(later.index)
        return LastSignatures(
            self.index[kept].append(later.index),
            np.concatenate([self.release[kept], later.release]),
            np.concatenate([self.code[kept], later.code + len(self.signatures)]),
            (*self.signatures, *later.signatures),
        )

    def lookup(self, identifiers: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Position of each identifier here (``-1`` when unknown) and its signature code."""
        position = self.index.get_indexer(pd.Index(list(identifiers), dtype=object))
        if not len(self.code):
            return position, np.full(len(position), -1, dtype=np.int64)
        codes = np.where(position >= 0, self.code[np.maximum(position, 0)], -1)
        return position, codes


#: identifier -> (number of the release that last published it, signature of its group),
#: as a mapping or columnar.
Previous = Mapping[str, tuple[int, frozenset[str]]] | LastSignatures


def _columnar(before: Previous | None) -> LastSignatures:
    if before is None:
        return LastSignatures.empty()
    return before if isinstance(before, LastSignatures) else LastSignatures.from_mapping(before)


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


def _identifiers(release: Release, groups: Iterable[Any]) -> dict[Any, tuple[str, ...]]:
    """Identifiers of the real rows of the given groups."""
    wanted = set(groups)
    if not wanted:
        return {}
    schema = release.schema
    mask = release.assignment[GROUP].isin(wanted).to_numpy()
    out: dict[Any, list[str]] = {}
    for ident, group in zip(release.assignment[schema.identifier].astype(str).to_numpy()[mask],
                            release.assignment[GROUP].to_numpy()[mask], strict=True):
        out.setdefault(group, []).append(ident)
    return {g: tuple(v) for g, v in out.items()}


def _published_values(release: Release, groups: Iterable[Any]) -> dict[Any, list[str]]:
    wanted = set(groups)
    frame = release.published
    mask = frame[GROUP].isin(wanted).to_numpy()
    out: dict[Any, list[str]] = {}
    for group, value in zip(frame[GROUP].to_numpy()[mask],
                            frame[release.schema.sensitive].astype(str).to_numpy()[mask],
                            strict=True):
        out.setdefault(group, []).append(value)
    return out


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


def _cell_codes(release: Release) -> tuple[np.ndarray, np.ndarray]:
    """Integer keys of the QI cells of the published rows and of the members' raw values
    (rendered as exact cells), in one code space."""
    published, assignment = release.published, release.assignment
    n = len(published)
    key = np.zeros(n + len(assignment), dtype=np.int64)
    for qi in release.schema.qis:
        shown_codes, shown_uniques = pd.factorize(published[qi.name].to_numpy(),
                                                  use_na_sentinel=False)
        shown_text = [str(t).strip() for t in shown_uniques]
        raw_codes, raw_uniques = pd.factorize(assignment[qi.name].to_numpy(),
                                              use_na_sentinel=False)
        raw_text = [format_number(float(t)) if qi.kind == "numeric" else str(t)
                    for t in raw_uniques]
        common, texts = pd.factorize(np.array(shown_text + raw_text, dtype=object))
        cells = np.concatenate([common[: len(shown_text)][shown_codes],
                                common[len(shown_text):][raw_codes]])
        key, _ = pd.factorize(key * max(len(texts), 1) + cells)
        key = key.astype(np.int64)
    return key[:n], key[n:]


def _pair_counts(groups: np.ndarray, codes: np.ndarray, width: int) -> tuple[np.ndarray,
                                                                                np.ndarray]:
    return np.unique(groups.astype(np.int64) * width + codes, return_counts=True)


def check_exact_publication(release: Release, prefix: str = "") -> VerificationReport:
    """Definition 4(1)-(2): a group publishes exactly its members' rows with exact QIs.

    Every published row of group ``g`` must carry the exact QI values of a distinct member
    of ``g`` (the multisets of QI tuples agree); no counterfeit or missing row.
    """
    shown, raw = _cell_codes(release)
    group_codes, labels = pd.factorize(np.concatenate([
        release.published[GROUP].to_numpy(), release.assignment[GROUP].to_numpy()]))
    width = int(max(shown.max(initial=0), raw.max(initial=0))) + 1
    n = len(shown)
    keys_shown, count_shown = _pair_counts(group_codes[:n], shown, width)
    keys_raw, count_raw = _pair_counts(group_codes[n:], raw, width)
    keys = np.union1d(keys_shown, keys_raw)
    difference = np.zeros(len(keys), dtype=np.int64)
    difference[np.searchsorted(keys, keys_shown)] += count_shown
    difference[np.searchsorted(keys, keys_raw)] -= count_raw
    bad = sorted({labels[k] for k in np.unique(keys[difference != 0] // width)}, key=str)
    members = _identifiers(release, bad)
    sizes = release.published[GROUP].value_counts()
    violations = [
        Violation(
            group_label(group),
            f"{prefix}group {group} publishes {int(sizes.get(group, 0))} row(s) whose exact QI "
            f"values do not match its {len(members.get(group, ()))} member(s) one to one (a "
            "permutation-published group shows each member's exact QIs once and nothing else)",
            members.get(group, ()),
        )
        for group in bad
    ]
    return VerificationReport("exact publication", tuple(violations))


def _substitution_table(release: Release, prefix: str) -> tuple[dict[Any, int], list[Violation]]:
    """``S(j)`` as {group: count}, with violations for a malformed table."""
    table = release.counterfeits
    violations = []
    counts: dict[Any, int] = {}
    groups = set(pd.unique(release.published[GROUP]).tolist())
    for group, count in zip(table[GROUP].tolist(), table[COUNT].tolist(), strict=True):
        if group in counts:
            violations.append(Violation(group_label(group),
                                        f"{prefix}S(j) lists group {group} twice"))
        if int(count) <= 0 or group not in groups:
            why = "a non-positive count" if int(count) <= 0 else "a group absent from T*(j)"
            violations.append(Violation(group_label(group),
                                        f"{prefix}S(j) gives {why} (group {group}, {count})"))
        counts[group] = counts.get(group, 0) + int(count)
    return counts, violations


def _value_codes(*columns: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    codes, uniques = pd.factorize(np.concatenate([np.asarray(c, dtype=object) for c in columns]))
    bounds = np.cumsum([0, *(len(c) for c in columns)])
    return [codes[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)], uniques


def check_substitutions(
    release: Release, before: Previous | None = None, prefix: str = ""
) -> VerificationReport:
    """Substituted values match ``S(j)`` and come from ``Sca`` (Definitions 4(3) and 5).

    ``before`` gives (release, signature) of the last publication of every identifier
    published before (empty for the first release: then nothing may be substituted).
    """
    last = _columnar(before)
    counts, violations = _substitution_table(release, prefix)
    schema = release.schema
    published_groups = release.published[GROUP].to_numpy()
    real_groups = release.assignment[GROUP].to_numpy()
    (shown, true), _ = _value_codes(release.published[schema.sensitive].astype(str).to_numpy(),
                                    release.assignment[schema.sensitive].astype(str).to_numpy())
    group_codes, labels = pd.factorize(np.concatenate([published_groups, real_groups]))
    width = int(max(shown.max(initial=0), true.max(initial=0))) + 1
    n = len(shown)
    keys_shown, count_shown = _pair_counts(group_codes[:n], shown, width)
    keys_true, count_true = _pair_counts(group_codes[n:], true, width)
    position = np.searchsorted(keys_true, keys_shown)
    found = (position < len(keys_true)) & (
        keys_true[np.minimum(position, len(keys_true) - 1)] == keys_shown
    ) if len(keys_true) else np.zeros(len(keys_shown), dtype=bool)
    held = np.where(found, count_true[np.minimum(position, max(len(keys_true) - 1, 0))], 0)
    excess = np.maximum(count_shown - held, 0)
    per_group = np.bincount(keys_shown // width, weights=excess, minlength=len(labels))
    declared = np.zeros(len(labels), dtype=np.int64)
    index = {label: i for i, label in enumerate(labels)}
    for group, count in counts.items():
        if group in index:
            declared[index[group]] = count
    wrong = np.flatnonzero(per_group != declared)
    substituted_groups = np.flatnonzero(per_group > 0)
    check = sorted({labels[i] for i in np.union1d(wrong, substituted_groups)}, key=str)
    members = _identifiers(release, check)
    shown_values = _published_values(release, check)
    true_values: dict[Any, list[str]] = {}
    for group in check:
        mask = real_groups == group
        true_values[group] = release.assignment[schema.sensitive].astype(str).to_numpy()[
            mask].tolist()
    for group in check:
        substituted = Counter(shown_values.get(group, [])) - Counter(true_values[group])
        total = sum(substituted.values())
        expected = counts.get(group, 0)
        idents = members.get(group, ())
        if total != expected:
            violations.append(Violation(
                group_label(group),
                f"{prefix}group {group} publishes {total} value(s) held by none of its members "
                f"({format_rows(sorted(substituted))}) but S(j) counts {expected} substitution(s)",
                idents,
            ))
        if not substituted:
            continue
        position_of, codes = last.lookup(list(idents))
        required: set[str] = set()
        for code in set(codes[position_of >= 0].tolist()):
            required |= last.signatures[code]
        allowed = required - set(true_values[group])
        unjustified = sorted(set(substituted) - allowed)
        if unjustified:
            violations.append(Violation(
                group_label(group),
                f"{prefix}group {group} substitutes value(s) {format_rows(unjustified)} that no "
                f"old member's last signature misses (Sca = {format_signature(allowed)})",
                idents,
            ))
    return VerificationReport("substitutions", tuple(violations))


def last_signatures(release: Release) -> dict[str, tuple[int, frozenset[str]]]:
    """Identifier -> (release number, signature of its group) for every real row."""
    signatures = published_signatures(release)
    schema = release.schema
    return {
        ident: (release.number, signatures.get(group, frozenset()))
        for ident, group in zip(release.assignment[schema.identifier].astype(str),
                                release.assignment[GROUP].tolist(), strict=True)
    }


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
