"""One-shot work on tables, as the CLI does it: :func:`l_diverse` (``republish ldiv``),
:func:`check` (``republish check``) and :func:`audit` (``republish audit``), with the CLI's
defaults (:mod:`republish.api.defaults`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import pandas as pd

from republish.api import defaults
from republish.audit import AuditReport, audit_releases, read_knowledge
from republish.errors import InputError, ParameterError, RepublishError
from republish.principles.k_anonymity import check_k_anonymity
from republish.principles.l_diversity import check_l_diversity
from republish.principles.report import VerificationReport
from republish.release_files import read_published
from republish.schema import Schema, load_schema
from republish.solver.ldiversity import LDiversitySolution, publish_l_diverse, solve_l_diversity
from republish.tables import load_table

__all__ = ["LDiverseTable", "audit", "check", "l_diverse"]

#: A table: a DataFrame, or a CSV or Parquet file.
Table: TypeAlias = pd.DataFrame | str | Path


def _schema(schema: Schema | str | Path) -> Schema:
    return schema if isinstance(schema, Schema) else load_schema(schema)


def _published(table: Table, name: str) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        return table
    try:
        return read_published(table)
    except RepublishError:
        raise
    except (ValueError, OSError) as exc:
        raise InputError(f"{name}={str(table)!r}: cannot be read as a published table "
                         f"({exc}).") from exc


@dataclass(frozen=True, eq=False)
class LDiverseTable:
    """An l-diverse table: ``published`` (``group``, QIs, sensitive; rows shuffled),
    ``summary`` (the ``ldiv --json`` document) and the ``solution`` (groups, certificate)."""

    published: pd.DataFrame
    summary: Mapping[str, Any]
    solution: LDiversitySolution


def l_diverse(
    table: Table,
    schema: Schema | str | Path,
    l: int,  # noqa: E741 - the paper's symbol
    *,
    method: str = defaults.LDIV_METHOD,
    time_limit: float = defaults.TIME_LIMIT,
    workers: int = defaults.LDIV_WORKERS,
    seed: int = defaults.STATIC_SEED,
    model: Literal["suppression", "interval"] = defaults.LDIV_MODEL,
) -> LDiverseTable:
    """``table`` (a DataFrame or a CSV/Parquet path) as a verified l-diverse table, as
    ``republish ldiv`` computes it: ``method`` ``auto`` (default), ``tp``, ``tp+``,
    ``mondrian``, ``exact`` (tuple minimization), ``exact-stars`` or ``matching``."""
    parsed = _schema(schema)
    valid = load_table(table, parsed)
    solution = solve_l_diversity(valid, parsed, l, method, time_limit=time_limit,
                                 num_workers=workers, seed=seed)
    published = publish_l_diverse(valid, parsed, solution, seed=seed, model=model)
    return LDiverseTable(published, solution.summary(), solution)


def check(
    table: Table,
    schema: Schema | str | Path,
    *,
    principle: Literal["l-diversity", "k-anonymity"] = "l-diversity",
    l: int | None = None,  # noqa: E741
    k: int | None = None,
) -> VerificationReport:
    """Verify a published table (a DataFrame or a file) as ``republish check`` does:
    groups by its ``group`` column, else by identical QI cells. ``report.ok`` tells;
    ``report.to_dict()`` is the ``check --json`` document."""
    parsed = _schema(schema)
    published = _published(table, "table")
    if principle == "k-anonymity":
        if k is None or l is not None:
            raise ParameterError("principle='k-anonymity' needs k (the minimum group size) "
                                 "and no l.")
        return check_k_anonymity(published, parsed, k)
    if principle != "l-diversity":
        raise ParameterError(f"principle must be 'l-diversity' or 'k-anonymity', got "
                             f"{principle!r}.")
    if l is None or k is not None:
        raise ParameterError("principle='l-diversity' needs l (the diversity parameter) "
                             "and no k.")
    return check_l_diversity(published, parsed, l)


def audit(
    releases: Sequence[Table] | None = None,
    knowledge: pd.DataFrame | str | Path | None = None,
    schema: Schema | str | Path | None = None,
    counterfeits: Mapping[int, Table] | None = None,
    *,
    store: str | Path | None = None,
    exact: bool = False,
    principle: Literal["auto", "m-invariance", "none"] = "auto",
    max_individuals: int = 60,
) -> Any:
    """Attack releases as the m-invariance paper's adversary (``republish audit``).

    Either ``releases`` (``T*(1) ... T*(n)``, DataFrames or files, in order), ``knowledge``
    (``knowledge.csv`` or a DataFrame: identifier, exact QIs, ``releases``), ``schema`` and
    optionally ``counterfeits`` (``{release number: R(n)}``, numbers 1-based); or
    ``store=`` (a store's own history and knowledge; an m-Distinct store gets the SUG
    attack). Returns the report; ``report.found`` is what makes the CLI exit 1 and
    ``report.to_dict()`` is the ``audit --json`` document.
    """
    if store is not None:
        if releases is not None or knowledge is not None or counterfeits:
            raise ParameterError("store= audits the stored history; drop releases, "
                                 "knowledge and counterfeits.")
        from republish.audit.knowledge import history_from_store
        from republish.audit.sug_report import audit_store_sug, store_principle
        from republish.principles.catalog import principle as lookup_principle

        if lookup_principle(store_principle(store)).audit == "sug":
            return audit_store_sug(store)
        stored, known = history_from_store(store)
        return audit_releases(stored, known, exact=exact, principle=principle,
                              max_individuals=max_individuals)
    if not releases or knowledge is None or schema is None:
        raise ParameterError("give releases (in order), knowledge and schema, or store=.")
    parsed = _schema(schema)
    frames = [_published(r, f"releases[{i}]") for i, r in enumerate(releases)]
    fakes: list[pd.DataFrame | None] = [None] * len(frames)
    for number, fake in (counterfeits or {}).items():
        if not 1 <= int(number) <= len(frames):
            raise ParameterError(f"counterfeits[{number}]: release {number} does not exist; "
                                 f"there are {len(frames)} releases (numbers are 1-based).")
        fakes[int(number) - 1] = _published(fake, f"counterfeits[{number}]")
    known = read_knowledge(knowledge, parsed, release_count=len(frames))
    report: AuditReport = audit_releases(frames, known, fakes, exact=exact, principle=principle,
                                         max_individuals=max_individuals)
    return report
