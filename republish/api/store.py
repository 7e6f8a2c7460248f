"""The publisher's history in Python: :class:`Store` and the :class:`Release` it returns.

``Store.create(path, schema, m=...)`` / ``Store.open(path)``, then ``store.release(df)``
for each new table ``T(n)``: the release is computed, verified, recorded in the store in
one transaction and, with ``output=``, its files published crash-safely exactly as
``republish release`` publishes them (the CLI calls :func:`publish_next` too). The
defaults are the CLI's (:mod:`republish.api.defaults`): ``solver="auto"``,
``time_limit=10``, ``eligibility="counterfeit"``, ``cost="perimeter"``, a fresh random
seed (the publication shuffle is unpredictable unless ``seed`` is given), warnings above
``warn_share=0.05``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from republish.api import defaults
from republish.api.publication import (
    StagedRelease,
    checkpoint,
    move_into_place,
    prepare_output,
    record,
    recover,
)
from republish.api.shares import (
    ShareWarning,
    deferred_path,
    share_warnings,
    validate_share,
    write_deferred,
)
from republish.api.verification import VerifyReport, verify_store
from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.identifiers import validate_identifier_kind
from republish.release import COUNT, GROUP
from republish.release_files import release_file_names, render_release
from republish.schema import Schema, load_schema
from republish.solver.joint_guard import guarded_publish, joint_guard_applies
from republish.solver.options import SolveOptions
from republish.solver.release_step import StepResult
from republish.store import ReleaseStore
from republish.table_reading import read_frame
from republish.tables import validate_table

__all__ = ["Release", "ReleaseWarning", "Store", "check_targets", "publish_next"]

Say = Callable[[str], None]


class ReleaseWarning(UserWarning):
    """A release deferred or counterfeited more than ``warn_share`` of its rows."""


@dataclass(frozen=True, eq=False)
class Release:
    """One verified, recorded release.

    ``published`` is ``T*(n)`` as its file holds it (``group``, the QIs, the sensitive
    attribute); ``counterfeits`` ``R(n)`` (``group, count``; for ε-inclusion ``S(n)``,
    substitutions); ``summary`` the ``history --json`` object; ``warnings`` the share
    warnings; ``files`` the published files (empty without ``output``). The identifiers
    held back (deferred) are private: not shown, and written to ``<store>.deferred.csv``;
    :meth:`private_deferred_ids` returns them for the publisher's own use.
    """

    number: int
    published: pd.DataFrame
    counterfeits: pd.DataFrame
    certificate: Certificate
    summary: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()
    _deferred: tuple[str, ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        summary = self.summary
        return (f"Release(number={self.number}, rows={summary.get('rows')}, published="
                f"{len(self.published)} rows in {summary.get('groups')} groups, counterfeits="
                f"{summary.get('counterfeits')}, deferred={summary.get('deferred')}, "
                f"status={self.certificate.status}, warnings={len(self.warnings)})")

    def private_deferred_ids(self) -> tuple[str, ...]:
        """The identifiers deferred by this release: private, never publish them."""
        return self._deferred


def _schema(schema: Schema | str | Path) -> Schema:
    return schema if isinstance(schema, Schema) else load_schema(schema)


def check_targets(output: Path, number: int, fmt: str, counts_name: str) -> list[Path]:
    """The files release ``number`` will write into ``output``; refuses existing ones."""
    if output.exists() and not output.is_dir():
        raise InputError(f"-o {str(output)!r} exists and is not a folder; give a folder.")
    targets = [output / name for name in release_file_names(number, fmt, counts_name)]
    existing = [str(t) for t in targets if t.is_symlink() or t.exists()]
    if existing:
        raise InputError(
            f"{existing} already exist; choose another output directory or remove them.")
    return targets


def publish_next(
    store: ReleaseStore,
    table: pd.DataFrame,
    *,
    solve: SolveOptions,
    eligibility: str,
    rng: np.random.Generator,
    output: Path | None = None,
    fmt: str = defaults.FILE_FORMAT,
    new_population: bool = False,
    progress: Say | None = None,
    say: Say | None = None,
    compute: Callable[..., StepResult] = guarded_publish,
    staging: type[StagedRelease] = StagedRelease,
    move: Callable[[Path, Path, bytes | None], None] = move_into_place,
) -> StepResult:
    """Compute, verify and record the next release of ``store`` from ``table`` (validated
    against the store's schema) and, with ``output``, publish its files crash-safely
    (:mod:`republish.api.publication`); then rewrite ``<store>.deferred.csv``.
    ``compute``, ``staging`` and ``move`` are the steps (replaceable in tests)."""
    number = store.last_release + 1
    counts_name = store.definition.counts_file
    if output is not None:
        check_targets(output, number, fmt, counts_name)
    state = store.state()
    # m-Distinct, and eps-inclusion with extras: the joint guard reads the whole history
    # (issue 20); other principles never need it (Lemmas 1 and 3 of m-invariance)
    extra = ({"history": store.releases()}
             if joint_guard_applies(store.principle, store.principle_options) else {})
    result = compute(table, store.schema, store.principle, store.principle_options, state,
                     solve=solve, eligibility=eligibility, rng=rng, number=number,
                     validated=True, progress=progress, new_population=new_population,
                     **extra)
    if progress is not None:
        progress("writing")
    if output is None:
        store.append_step(result)
    else:
        files = render_release(result.release, fmt, counts_name)
        folder = prepare_output(output)
        if say is not None and folder in store.path.resolve().parents:
            say(f"the store {store.path} is inside the output folder {folder}: the store "
                "holds private data (raw values, who is in which group) and must never be "
                "published with the files; keep it outside any folder you sync or share.")
        checkpoint("rendered")
        with staging.create(store.path, number) as staged:
            staged.write(files)
            checkpoint("staged")
            store.append_step(result, record(number, files, fmt, folder, staged))
            checkpoint("committed")
            for name in files:
                move(staged.folder / name, folder / name, files[name])
                checkpoint(f"moved {name}")
            store.mark_published(number)
            checkpoint("marked")
    try:
        write_deferred(store)
    except OSError as exc:  # the release is recorded; the list can be rewritten later
        if say is not None:
            say(f"release {number} is recorded, but {deferred_path(store.path)} could not be "
                f"written ({exc}); the next release rewrites it from the store.")
    return result


class Store:
    """A release store (one SQLite file per dataset): see the module docstring.

    Use as a context manager, or call :meth:`close`. ``schema`` and ``m`` are the
    store's; ``principle`` its principle (``m-invariance``, ``eps-inclusion``,
    ``m-distinct``).
    """

    def __init__(self, opened: ReleaseStore) -> None:
        self._store = opened

    @classmethod
    def create(cls, path: str | Path, schema: Schema | str | Path, m: int | None = None, *,
               principle: str = "m-invariance", id_kind: str | None = None,
               lam: int | None = None, tau: int = 1, categories: str | Path | None = None,
               extras: bool = False, transitions: str | Path | None = None,
               strict: bool = False) -> Store:
        """A new, empty store at ``path`` (refused if the file exists), as ``republish
        init``. ``schema`` is a :class:`~republish.schema.Schema` or the path of a
        ``schema.toml``; ``id_kind`` is ``integer`` or ``text`` (default: inferred from
        the first release). ``principle="eps-inclusion"`` takes ``lam`` (λ), ``tau``
        (τ), ``categories`` (a ``value,category`` CSV) and ``extras`` instead of ``m``;
        ``principle="m-distinct"`` takes ``m``, ``transitions`` (a ``from,to`` CSV) and
        ``strict``."""
        kind = None if id_kind is None else validate_identifier_kind(id_kind)
        options = _options(principle, m, lam, tau, categories, extras, transitions, strict)
        stored = {k: v for k, v in options.to_dict().items() if k != "m"}
        return cls(ReleaseStore.init(path, _schema(schema), options.m, principle, stored,
                                     identifier_kind=kind))

    @classmethod
    def open(cls, path: str | Path, say: Say | None = None) -> Store:
        """An existing store; an interrupted publication is finished (``say`` receives
        what was done; default: a Python warning)."""
        opened = ReleaseStore.open(path)
        try:
            recover(opened, say if say is not None else _warn)
        except BaseException:
            opened.close()
            raise
        return cls(opened)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    def __repr__(self) -> str:
        return (f"Store({str(self.path)!r}, principle={self.principle!r}, m={self.m}, "
                f"releases={self.last_release})")

    @property
    def path(self) -> Path:
        return Path(self._store.path)

    @property
    def schema(self) -> Schema:
        return self._store.schema

    @property
    def m(self) -> int:
        return self._store.m

    @property
    def principle(self) -> str:
        return self._store.principle

    @property
    def last_release(self) -> int:
        return self._store.last_release

    def release(
        self,
        table: pd.DataFrame | str | Path,
        *,
        output: str | Path | None = None,
        eligibility: str = defaults.ELIGIBILITY,
        solver: str = defaults.SOLVER,
        time_limit: float = defaults.TIME_LIMIT,
        cost: str = defaults.COST,
        seed: int | None = None,
        fmt: str = defaults.FILE_FORMAT,
        new_population: bool = False,
        warn_share: float = defaults.WARN_SHARE,
        progress: Say | None = None,
        scheduler: str | None = None,
        assign: str = "paper",
        first_release: str = "buckets",
        workers: int = 1,
    ) -> Release:
        """Compute, verify and record the next release of ``table`` (a DataFrame, or a CSV
        or Parquet path read with the schema's delimiter), as ``republish release`` does.

        ``output``: folder for ``release-<n>`` and ``counterfeits-<n>`` (nothing written
        without it; ``republish export`` can re-create the files later). ``seed``:
        ``None`` (default, as in the CLI) draws fresh entropy, so the group numbers and row
        order of the published file are unpredictable; give one only for reproducible
        tests. A :class:`ReleaseWarning` is issued (and listed in ``Release.warnings``)
        when deferrals or counterfeits exceed ``warn_share`` of the rows. ``scheduler``
        (``solver="heuristic"``): where the buckets are split (``None``: automatic, local
        processes from 1,000,000 rows on two or more cores; ``"local"``: in this process;
        ``"processes"``; or a Dask address ``"tcp://HOST:PORT"``); the release is the same.
        ``assign``: ``"paper"``
        (Algorithm Assign) or ``"reuse"`` (existing signatures first). ``first_release``
        (``solver`` auto or exact), for a release without old rows: ``"buckets"`` (start
        from the paper's; a release of up to 2,000 rows is partitioned exactly, under
        ``auto`` up to 400, as ``"keep-signatures"`` above and as ``"local-signatures"``
        from 5,000 rows where values are plentiful), ``"keep-signatures"``
        (the paper's signatures and their counts, rows free among the groups holding their
        value), ``"keep-buckets"`` (every row also kept in its bucket),
        ``"local-signatures"`` (a few dozen signatures chosen by locality) or ``"compact"``
        (locality-first groups).
        ``workers``: cores the exact models may use (CP-SAT's workers; from 2, a release
        above 2,000 rows computes its bound on (b) in a second process beside its search,
        as does a smaller later release whose columns do not fit in a table).
        """
        warn_share = validate_share(warn_share)
        opened = self._store
        recover(opened, _warn)
        frame = read_frame(table, opened.schema.delimiter)
        try:
            valid = validate_table(frame, opened.schema, opened.identifier_kind)
        except InputError as exc:
            raise InputError(f"the table does not match the store's schema: {exc}") from exc
        del frame  # the raw table: the validated one holds what the release needs
        solve = SolveOptions(solver, time_limit, workers, cost=cost,  # type: ignore[arg-type]
                             scheduler=scheduler, assign=assign,
                             first_release=first_release)
        folder = None if output is None else Path(output)
        result = publish_next(opened, valid, solve=solve, eligibility=eligibility,
                              rng=np.random.default_rng(seed), output=folder, fmt=fmt,
                              new_population=new_population, progress=progress, say=_warn)
        found = share_warnings(result.summary(), valid, opened.schema, result.previous,
                               opened.m, warn_share)
        for warning in found:
            warnings.warn(warning.message(), ReleaseWarning, stacklevel=2)
        return _release(result, opened, found, folder, fmt)

    def verify(self, files: str | Path | None = None) -> VerifyReport:
        """Re-check every release, the sequence, the private state and the recorded file
        checksums (with ``files``: the published files in that folder). Never raises for
        a violation: see ``report.ok`` and ``report.violations``."""
        return verify_store(self._store, files)

    def history(self) -> pd.DataFrame:
        """One row per release: the ``history --json`` fields (docs/formats.md)."""
        from republish.store import HISTORY_FIELDS

        rows = [{key: row.get(key) for key in HISTORY_FIELDS} | row
                for row in self._store.history()]
        return pd.DataFrame.from_records(rows, columns=_columns(rows, HISTORY_FIELDS))

    def published(self, number: int) -> pd.DataFrame:
        """``T*(number)`` as published."""
        stored = self._store.release(number)
        return stored.published[self.schema.published_columns].reset_index(drop=True)


def _options(principle: str, m: int | None, lam: int | None, tau: int,
             categories: str | Path | None, extras: bool, transitions: str | Path | None,
             strict: bool) -> Any:
    """The principle's options object from :meth:`Store.create`'s parameters."""
    from republish.principles.catalog import principle_names

    if principle not in principle_names():
        raise ParameterError(f"principle must be one of {principle_names()}, got "
                             f"{principle!r}.")
    given = {"lam": lam is not None, "tau": tau != 1, "categories": categories is not None,
             "extras": extras, "transitions": transitions is not None, "strict": strict}
    own = {"m-invariance": set(), "eps-inclusion": {"lam", "tau", "categories", "extras"},
           "m-distinct": {"transitions", "strict"}}[principle]
    wrong = sorted(name for name, is_given in given.items() if is_given and name not in own)
    if wrong:
        raise ParameterError(f"{', '.join(wrong)} do(es) not apply to principle "
                             f"{principle!r}; drop them.")
    if principle == "eps-inclusion":
        from republish.categories import SACategories
        from republish.principles.catalog.eps_inclusion import EpsInclusionOptions

        if lam is None:
            raise ParameterError("principle='eps-inclusion' needs lam (λ, categories per "
                                 "group).")
        if m is not None and m != lam * tau:
            raise ParameterError(f"m={m} differs from ε = λ·τ = {lam * tau}; drop m.")
        mapping = (SACategories.identity() if categories is None
                   else SACategories.from_csv(categories))
        return EpsInclusionOptions(lam, tau, mapping, extras)
    if m is None:
        raise ParameterError(f"m is required for {principle} (e.g. Store.create(path, "
                             "schema, m=10)).")
    if principle == "m-distinct":
        from republish.principles.catalog.m_distinct import MDistinctOptions
        from republish.transitions import read_transitions

        if transitions is None:
            raise ParameterError("principle='m-distinct' needs transitions (a CSV "
                                 "'from,to[,probability]').")
        return MDistinctOptions(m, read_transitions(transitions), strict)
    from republish.principles.catalog.m_invariance import MInvarianceOptions

    return MInvarianceOptions(m)


def _columns(rows: list[dict[str, Any]], first: tuple[str, ...]) -> list[str]:
    columns = list(first)
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    return columns


def _warn(message: str) -> None:
    warnings.warn(message, ReleaseWarning, stacklevel=3)


def _release(result: StepResult, opened: ReleaseStore, found: list[ShareWarning],
             folder: Path | None, fmt: str) -> Release:
    stored = result.release
    files: tuple[Path, ...] = ()
    if folder is not None:
        names = release_file_names(stored.number, fmt, opened.definition.counts_file)
        files = tuple(folder / name for name in names)
    return Release(
        number=stored.number,
        published=stored.published[opened.schema.published_columns].reset_index(drop=True),
        counterfeits=stored.counterfeits[[GROUP, COUNT]].reset_index(drop=True),
        certificate=result.certificate,
        summary=result.summary(),
        warnings=tuple(w.message() for w in found),
        files=files,
        _deferred=tuple(stored.deferred),
    )
