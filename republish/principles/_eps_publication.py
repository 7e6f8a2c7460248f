"""Exact publication and substitutions of a permutation-published release (ε-inclusion
paper, Definitions 4 and 5).

A group of ``T*(j)`` publishes exactly its members' rows with their exact QI values
(:func:`check_exact_publication`), and the sensitive values it shows are its members'
true values with ``S(j)[g]`` of them replaced by values of ``Sca``
(:func:`check_substitutions`). See :mod:`republish.principles.eps_inclusion` for the
whole principle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from republish.errors import format_rows
from republish.generalization import format_number
from republish.principles._eps_signatures import Previous, _columnar
from republish.principles.k_anonymity import group_label
from republish.principles.m_invariance import format_signature
from republish.principles.report import VerificationReport, Violation
from republish.release import COUNT, GROUP, Release

__all__ = ["check_exact_publication", "check_substitutions"]


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
