"""Leaks visible in the published files alone (no knowledge table needed).

The m-invariance paper's guarantees (Lemmas 1–3) assume that ``T*(j)`` carries nothing
but Group-ID, generalized QIs and the sensitive value, that every row of a QI group shows
the group's generalization (Definition 2, Property 4) and that counterfeits cannot be
told from real rows except through the counts of ``R(j)`` (Definition 3). These checks
look for the ways real files break those assumptions:

* ``identifier-column``: the identifier or any unexpected column is published, or a
  column other than the sensitive one is unique per row;
* ``group-box``: rows of one group carry different QI cells (a counterfeit rendered with
  a box of its own stands out);
* ``formatting``: rows of one group differ in their raw text (quoting, spacing, number
  format), one sensitive value is spelt several ways, line endings are mixed, or cells
  are not in canonical form (a warning: it concerns whole groups);
* ``row-order``: the last (first) rows of the file hold exactly the groups and counts of
  ``R(j)`` where chance makes that unlikely (counterfeits appended or prepended), or the
  rows are grouped by Group-ID (not shuffled; a warning);
* ``counterfeit-table``: ``R(j)`` names absent groups, repeats a group, gives a
  non-positive count, or leaves a group without a real row.

Findings of severity ``leak`` make ``republish audit`` exit with code 1.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from republish.errors import InputError, RepublishError, format_rows
from republish.generalization import parse_cell, render_cell
from republish.release import COUNT, GROUP
from republish.release_files import read_published
from republish.schema import Schema

Severity = Literal["leak", "warning"]


@dataclass(frozen=True)
class LeakFinding:
    """One finding: which release, which check, how serious, and the groups involved."""

    release: int | None
    check: str
    severity: Severity
    message: str
    groups: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "groups": [g.item() if hasattr(g, "item") else g for g in self.groups],
        }


def _identifier_columns(
    published: pd.DataFrame, schema: Schema, release: int | None
) -> list[LeakFinding]:
    findings = []
    expected = schema.published_columns
    rows = len(published)
    for column in published.columns:
        unique = rows >= 2 and published[column].nunique(dropna=False) == rows
        if column == schema.identifier:
            findings.append(LeakFinding(release, "identifier-column", "leak",
                                        f"the identifier column {column!r} is published."))
        elif column not in expected:
            kind = "identifier-like (unique per row)" if unique else "not in the schema"
            findings.append(LeakFinding(release, "identifier-column", "leak",
                                        f"unexpected column {column!r}, {kind}; publish only "
                                        f"{expected}."))
        elif unique and column != schema.sensitive:
            why = "every group has a single row" if column == GROUP else "no two rows share it"
            findings.append(LeakFinding(release, "identifier-column", "leak",
                                        f"column {column!r} is unique per row ({why}): it "
                                        "singles out every row."))
    return findings


def _group_boxes(published: pd.DataFrame, schema: Schema, release: int | None) -> list[LeakFinding]:
    qis = [c for c in schema.qi_names if c in published.columns]
    texts = published[qis].astype(str)
    renderings = texts.groupby(published[GROUP]).nunique().max(axis=1)
    mixed = renderings.index[renderings.to_numpy() > 1].tolist()
    if not mixed:
        return []
    semantic: list[Any] = []
    for group in mixed:
        cells = texts[published[GROUP] == group].drop_duplicates()
        boxes = {
            tuple(parse_cell(schema.qi(q), cell) for q, cell in zip(qis, row, strict=True))
            for row in cells.itertuples(index=False)
        }
        if len(boxes) > 1:
            semantic.append(group)
    findings = []
    if semantic:
        findings.append(LeakFinding(
            release, "group-box", "leak",
            f"group(s) {format_rows(semantic)} hold rows with different QI boxes; every row of "
            "a group (counterfeits included) must show the group's box.", tuple(semantic)))
    spelling = [g for g in mixed if g not in semantic]
    if spelling:
        findings.append(LeakFinding(
            release, "formatting", "leak",
            f"group(s) {format_rows(spelling)} spell the same box differently on different "
            "rows; the odd rows stand out.", tuple(spelling)))
    return findings


def _canonical(published: pd.DataFrame, schema: Schema, release: int | None) -> list[LeakFinding]:
    findings = []
    for qi in schema.qis:
        if qi.name not in published.columns:
            continue
        odd = []
        for text in published[qi.name].astype(str).unique():
            try:
                low, high = parse_cell(qi, text)
                canonical = render_cell(qi, low, high) if abs(low) != math.inf else "*"
            except RepublishError:
                continue
            if canonical != text and not (text == "*" and qi.kind != "numeric"):
                odd.append(text)
        if odd:
            findings.append(LeakFinding(
                release, "formatting", "warning",
                f"QI {qi.name!r}: cell(s) {format_rows(odd)} are not in canonical form; "
                "non-standard rendering can tell groups apart."))
    sensitive = published[schema.sensitive].astype(str)
    spellings = sensitive.groupby(sensitive.str.strip().str.casefold()).nunique()
    variants = spellings.index[spellings.to_numpy() > 1].tolist()
    if variants:
        findings.append(LeakFinding(
            release, "formatting", "leak",
            f"sensitive value(s) {format_rows(variants)} are spelt in several ways (case or "
            "spacing); the odd rows stand out."))
    return findings


def _raw_lines(
    raw: str, published: pd.DataFrame, schema: Schema, release: int | None
) -> list[LeakFinding]:
    lines = raw.splitlines(keepends=True)
    if len(lines) != len(published) + 1 or list(published.columns) != schema.published_columns:
        return []
    findings = []
    endings = {line[len(line.rstrip("\r\n")):] for line in lines[:-1]}
    if len(endings) > 1:
        findings.append(LeakFinding(release, "formatting", "leak",
                                    "rows end with different line terminators (mixed CRLF/LF); "
                                    "rows written separately stand out."))
    prefixes: dict[Any, set[str]] = defaultdict(set)
    spellings: dict[str, set[str]] = defaultdict(set)
    for line, group, value in zip(
        lines[1:], published[GROUP], published[schema.sensitive].astype(str), strict=True
    ):
        body = line.rstrip("\r\n")
        cut = body.rfind(",")
        prefixes[group].add(body[:cut])
        spellings[value.strip()].add(body[cut + 1:])
    odd = [g for g, texts in prefixes.items() if len(texts) > 1]
    if odd:
        findings.append(LeakFinding(
            release, "formatting", "leak",
            f"group(s) {format_rows(odd)}: rows differ in their raw text (quoting or spacing) "
            "before the sensitive value.", tuple(odd)))
    quoted = [v for v, texts in spellings.items() if len(texts) > 1]
    if quoted:
        findings.append(LeakFinding(
            release, "formatting", "leak",
            f"sensitive value(s) {format_rows(quoted)} appear with different raw spellings "
            "(quoting or spacing)."))
    return findings


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _row_order(
    published: pd.DataFrame, counts: dict[Any, int], release: int | None, alpha: float
) -> list[LeakFinding]:
    findings = []
    groups = published[GROUP].tolist()
    sizes = published[GROUP].value_counts().to_dict()
    total = sum(counts.values())
    n = len(groups)
    if 0 < total < n:
        # Chance that a given set of `total` positions holds exactly R(j)'s groups.
        log_p = sum(_log_choose(sizes[g], c) for g, c in counts.items() if g in sizes)
        log_p -= _log_choose(n, total)
        for where, block in (("last", groups[-total:]), ("first", groups[:total])):
            if dict(pd.Series(block).value_counts()) == counts and math.exp(log_p) < alpha:
                findings.append(LeakFinding(
                    release, "row-order", "leak",
                    f"the {where} {total} rows hold exactly the groups and counts of R(j) "
                    f"(chance {math.exp(log_p):.2g} under a random order): counterfeits look "
                    f"{'appended' if where == 'last' else 'prepended'}.", tuple(counts)))
    runs = 1 + sum(1 for a, b in zip(groups, groups[1:], strict=False) if a != b)
    if n > len(sizes) and runs == len(sizes) >= 2:
        log_p = (math.lgamma(len(sizes) + 1) + sum(math.lgamma(s + 1) for s in sizes.values())
                 - math.lgamma(n + 1))
        if math.exp(log_p) < alpha:
            findings.append(LeakFinding(
                release, "row-order", "warning",
                "rows are grouped by Group-ID, not shuffled: positions inside a group may "
                "tell counterfeits or the input order."))
    return findings


def _counterfeit_table(
    published: pd.DataFrame, counterfeits: pd.DataFrame, release: int | None
) -> tuple[list[LeakFinding], dict[Any, int]]:
    findings = []
    missing = [c for c in (GROUP, COUNT) if c not in counterfeits.columns]
    if missing:
        raise InputError(f"counterfeit table lacks column(s) {missing}; it needs 'group,count'.")
    sizes = published[GROUP].value_counts().to_dict()
    repeated = counterfeits[GROUP][counterfeits[GROUP].duplicated()].tolist()
    if repeated:
        findings.append(LeakFinding(release, "counterfeit-table", "leak",
                                    f"R(j) lists group(s) {format_rows(repeated)} twice.",
                                    tuple(repeated)))
    counts: dict[Any, int] = {}
    for group, count in zip(counterfeits[GROUP], counterfeits[COUNT], strict=True):
        counts[group] = counts.get(group, 0) + int(count)
    absent = [g for g in counts if g not in sizes]
    bad = [g for g, c in counts.items() if c <= 0]
    full = [g for g, c in counts.items() if g in sizes and c >= sizes[g]]
    for groups, text in (
        (absent, "are absent from T*(j)"),
        (bad, "have a non-positive counterfeit count"),
        (full, "would hold no real row (every row a counterfeit)"),
    ):
        if groups:
            findings.append(LeakFinding(release, "counterfeit-table", "leak",
                                        f"R(j) group(s) {format_rows(groups)} {text}.",
                                        tuple(groups)))
    return findings, {g: c for g, c in counts.items() if g in sizes and c > 0}


def find_leaks(
    published: pd.DataFrame,
    schema: Schema,
    counterfeits: pd.DataFrame | None = None,
    release: int | None = None,
    raw: str | None = None,
    alpha: float = 0.01,
) -> list[LeakFinding]:
    """Every leak finding for one published table ``T*(j)`` and its ``R(j)``.

    ``raw`` is the file's text (CSV), enabling the quoting, spacing and line-ending
    checks; ``alpha`` is the chance below which an ordering is called deliberate.
    """
    if GROUP not in published.columns or schema.sensitive not in published.columns:
        raise InputError(
            f"published table needs the columns {schema.published_columns}; it has "
            f"{list(published.columns)[:12]}."
        )
    findings = _identifier_columns(published, schema, release)
    findings += _group_boxes(published, schema, release)
    findings += _canonical(published, schema, release)
    if raw is not None:
        findings += _raw_lines(raw, published, schema, release)
    counts: dict[Any, int] = {}
    if counterfeits is not None and len(counterfeits):
        table_findings, counts = _counterfeit_table(published, counterfeits, release)
        findings += table_findings
    findings += _row_order(published, counts, release, alpha)
    return findings


def find_leaks_in_file(
    path: str | Path,
    schema: Schema,
    counterfeits_path: str | Path | None = None,
    release: int | None = None,
    alpha: float = 0.01,
) -> list[LeakFinding]:
    """:func:`find_leaks` on files (raw-text checks for CSV)."""
    path = Path(path)
    published = read_published(path)
    raw = None
    if path.suffix.lower() not in (".parquet", ".pq"):
        raw = path.read_bytes().decode("utf-8", errors="replace")
    counterfeits = read_published(counterfeits_path) if counterfeits_path is not None else None
    return find_leaks(published, schema, counterfeits, release, raw, alpha)
