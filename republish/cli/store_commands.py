"""``republish init | release | verify | history``: m-invariant releases kept in a store.

* ``init --store S.db --schema schema.toml --m 10`` creates the store;
* ``release DATA --store S.db -o OUTDIR`` computes, verifies and records the next release,
  then writes ``release-<n>`` (``T*(n)``) and ``counterfeits-<n>`` (``R(n)``);
* ``verify --store S.db`` re-checks every stored release, the whole sequence and the
  stored private state (exit 1 naming the first violation);
* ``history --store S.db [--json]`` prints the statistics of every release.

``init --principle eps-inclusion --lambda L [--tau T] [--categories C.csv]`` makes the
store ε-inclusive instead (ε = λ·τ; :mod:`republish.solver.eps_inclusion`): ``release``
then publishes exact QIs with permuted sensitive values and ``substitutions-<n>`` (``S(n)``)
instead of ``counterfeits-<n>``, and ``verify`` checks Definition 8.

Exit codes (design Contracts): 0 success; 1 a verification found a violation; 2 bad input
or usage (message on stderr).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich import box
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from republish.cli.app import app, check_finite, console, error_console, print_json
from republish.cli.init_options import BUILDERS, InitFlags
from republish.cli.publication import (
    StagedRelease,
    checkpoint,
    move_into_place,
    prepare_output,
    record,
    recover,
)
from republish.errors import InputError, RepublishError
from republish.identifiers import validate_identifier_kind
from republish.principles.catalog import principle_names
from republish.release import Release, release_file_names, render_release, sha256
from republish.schema import load_schema
from republish.solver.options import SolveOptions
from republish.solver.publish import publish
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.store import HISTORY_FIELDS, ReleaseStore
from republish.tables import read_frame, validate_table


class Eligibility(StrEnum):
    counterfeit = "counterfeit"
    delete = "delete"
    hybrid = "hybrid"


#: The principles of the registry, as command-line choices.
Principle = StrEnum(  # type: ignore[misc]
    "Principle", {name.replace("-", "_"): name for name in principle_names()})


class Cost(StrEnum):
    perimeter = "perimeter"
    ncp = "ncp"


class IdKind(StrEnum):
    integer = "integer"
    text = "text"


class SolverMode(StrEnum):
    heuristic = "heuristic"
    auto = "auto"
    exact = "exact"


class Format(StrEnum):
    csv = "csv"
    parquet = "parquet"


#: Longest --time-limit accepted (seconds): a longer one is a typo, not a setting.
MAX_TIME_LIMIT = 7 * 24 * 3600.0
#: Largest --seed (the solvers take 32-bit seeds).
MAX_SEED = 2**31 - 1


def _say(message: str) -> None:
    """A note on stderr (recovery of an interrupted run, warnings)."""
    error_console.print(f"note: {message}", markup=False, soft_wrap=True)


def _warn_if_store_inside(store: Path, folder: Path) -> None:
    if folder in store.resolve().parents:
        _say(f"the store {store} is inside the output folder {folder}: the store holds "
             "private data (raw values, who is in which group) and must never be published "
             "with the files; keep it outside any folder you sync or share.")


@contextmanager
def _progress() -> Iterator[Progress]:
    """A spinner with the current phase on stderr (hidden when stderr is not a terminal)."""
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=error_console, transient=True, disable=not error_console.is_terminal,
    ) as progress:
        yield progress


@app.command("init")
def init(
    store: Annotated[Path, typer.Option("--store", help="Store file to create (SQLite).")],
    schema: Annotated[Path, typer.Option("--schema", "-s", help="schema.toml of the data.")],
    m: Annotated[
        int | None, typer.Option("--m", help="m of m-invariance (at least 2).")
    ] = None,
    principle: Annotated[
        Principle, typer.Option("--principle", help="m-invariance, eps-inclusion or "
                                "m-distinct.")
    ] = Principle.m_invariance,  # type: ignore[attr-defined]
    lam: Annotated[
        int | None, typer.Option("--lambda", help="eps-inclusion: categories per group (λ).")
    ] = None,
    tau: Annotated[
        int, typer.Option("--tau", help="eps-inclusion: values per category (τ); ε = λ·τ.")
    ] = 1,
    categories: Annotated[
        Path | None,
        typer.Option("--categories", help="eps-inclusion: CSV 'value,category' (default: "
                     "every sensitive value its own category), or an ARX hierarchy with "
                     "--category-level."),
    ] = None,
    category_level: Annotated[
        int | None, typer.Option("--category-level", help="Level of the ARX hierarchy "
                                 "given as --categories.")
    ] = None,
    extras: Annotated[
        bool, typer.Option("--extras/--no-extras", help="eps-inclusion: add new rows that "
                           "fit no new group to old groups (Algorithm 1, line 15; can expose "
                           "them) instead of deferring them.")
    ] = False,
    transitions: Annotated[
        Path | None,
        typer.Option("--transitions", help="m-distinct: CSV 'from,to[,probability]', the "
                     "public model of how sensitive values may change."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict/--no-strict", help="m-distinct: the extension of §IV-B "
                           "(disjoint candidate update sets in a record's first group; "
                           "re-publication risk at most 1/m).")
    ] = False,
    id_kind: Annotated[
        IdKind | None,
        typer.Option("--id-kind", help="How identifiers compare across releases: 'integer' "
                     "(123, 123.0 and 0123 are one person) or 'text' (numeric columns "
                     "refused). Default: inferred from the first release, then fixed."),
    ] = None,
) -> None:
    """Create an empty release store for one dataset."""
    kind = None if id_kind is None else validate_identifier_kind(id_kind.value)
    flags = InitFlags(m=m, lam=lam, tau=tau, categories=categories,
                      category_level=category_level, extras=extras, transitions=transitions,
                      strict=strict)
    options, description = BUILDERS[principle.value](flags)
    stored = {k: v for k, v in options.to_dict().items() if k != "m"}
    ReleaseStore.init(store, load_schema(schema), options.m, principle.value, stored,
                      identifier_kind=kind).close()
    console.print(f"created {store} ({description})")


@app.command("release")
def release(
    data: Annotated[Path, typer.Argument(help="Microdata T(n): CSV or Parquet.")],
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the files.")],
    eligibility: Annotated[
        Eligibility,
        typer.Option("--eligibility", help="Make new rows m-eligible with counterfeits, "
                     "deferrals (delete) or both (hybrid)."),
    ] = Eligibility.counterfeit,
    seed: Annotated[
        int | None,
        typer.Option("--seed", min=0, max=MAX_SEED,
                     help="Seed for reproducible tests (default: OS entropy)."),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output file format.")] = Format.csv,
    schema: Annotated[
        Path | None,
        typer.Option("--schema", "-s", help="Optional schema.toml; refused if it differs "
                     "from the store's."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
    solver: Annotated[
        SolverMode,
        typer.Option("--solver", help="m-invariance: exact models hinted by the greedy "
                     "steps below measured size limits (auto, default), exact models at any "
                     "size up to memory limits (exact), or greedy steps only (heuristic)."),
    ] = SolverMode.auto,
    time_limit: Annotated[
        float,
        typer.Option("--time-limit", min=0.0, help="m-invariance with --solver auto|exact: "
                     "one budget in seconds for all exact models of the release step; the "
                     "greedy answer is kept where they run out."),
    ] = 10.0,
    cost: Annotated[
        Cost,
        typer.Option("--cost", help="Objective (b), minimized after counterfeits + "
                     "deferrals: perimeter (Σ|G|·Σ extent/range, the m-invariance paper's) or "
                     "ncp (the same over real rows only)."),
    ] = Cost.perimeter,
    new_population: Annotated[
        bool,
        typer.Option("--new-population", help="Accept a table that shares almost no "
                     "identifiers with the last release at a similar size (refused by "
                     "default: it usually means re-keyed identifiers, which would lift "
                     "every returning person's protection)."),
    ] = False,
) -> None:
    """Compute, verify and record the next release of DATA (the store's principle).

    The files are written to a private staging folder beside the store, the release and
    the files' checksums are recorded in one transaction, then the files are moved into
    OUTPUT; an interrupted run is finished by the next command on the store.
    """
    check_finite(time_limit, "--time-limit", maximum=MAX_TIME_LIMIT)
    with ReleaseStore.open(store) as opened:
        recover(opened, _say)
        if schema is not None:
            opened.check_schema(load_schema(schema))
        number = opened.last_release + 1
        names = release_file_names(number, fmt.value, opened.definition.counts_file)
        targets = [output / name for name in names]
        existing = [str(t) for t in targets if os.path.lexists(t)]
        if existing:
            raise InputError(
                f"{existing} already exist; choose another output directory or remove them."
            )
        if output.exists() and not output.is_dir():
            raise InputError(f"-o {str(output)!r} exists and is not a folder; give a folder.")
        frame = read_frame(data, opened.schema.delimiter)
        try:
            table = validate_table(frame, opened.schema, opened.identifier_kind)
        except InputError as exc:
            raise InputError(f"{data} does not match the store's schema: {exc}") from exc
        rng = np.random.default_rng(seed)
        solve = SolveOptions(solver.value, time_limit, cost=cost.value)
        with _progress() as progress:
            task = progress.add_task("loading the store", total=None)
            state = opened.state()

            def report(phase: str) -> None:
                progress.update(task, description=f"release {number}: {phase}")

            result = publish(table, opened.schema, opened.principle, opened.principle_options,
                             state, solve=solve, eligibility=eligibility.value, rng=rng,
                             number=number, validated=True, progress=report,
                             new_population=new_population)
            progress.update(task, description="writing")
            files = render_release(result.release, fmt.value, opened.definition.counts_file)
            folder = prepare_output(output)
            _warn_if_store_inside(opened.path, folder)
            checkpoint("rendered")
            with StagedRelease.create(opened.path, number) as staged:
                staged.write(files)
                checkpoint("staged")
                opened.append_step(result, record(number, files, fmt.value, folder, staged))
                checkpoint("committed")
                for name in names:
                    move_into_place(staged.folder / name, folder / name, files[name])
                    checkpoint(f"moved {name}")
                opened.mark_published(number)
                checkpoint("marked")
    summary = result.summary()
    if as_json:
        print_json(summary)
        return
    console.print(
        f"release {number}: {summary['rows']} rows ({summary['new']} new, "
        f"{summary['reinserted']} re-inserted, {summary['deleted']} deleted), "
        + (f"{summary['substitutions']} substitutions, " if "substitutions" in summary else
           f"{summary['counterfeits']} counterfeits, ")
        + f"{summary['deferred']} deferred, "
        f"{summary['groups']} groups, {summary['wall_time_s']:.2f} s"
    )
    console.print(certificate_text(summary), markup=False)
    for target in targets:
        console.print(f"wrote {target}")


def _state_problems(stored: PublisherState, replayed: PublisherState) -> list[str]:
    """Differences between the stored private state and the one replayed from releases."""
    problems = []
    if set(stored.rows.index) != set(replayed.rows.index):
        missing = sorted(set(replayed.rows.index) - set(stored.rows.index))[:5]
        extra = sorted(set(stored.rows.index) - set(replayed.rows.index))[:5]
        problems.append(f"private state: identifiers missing {missing} / unexpected {extra}")
        return problems
    a = stored.rows.loc[replayed.rows.index]
    b = replayed.rows
    columns = [c for c in b.columns if c not in (LAST_RELEASE, SIGNATURE)]
    for column in [LAST_RELEASE, *columns]:
        differs = a[column].to_numpy() != b[column].to_numpy()
        if differs.any():
            idents = b.index[differs][:5].tolist()
            problems.append(f"private state: column {column!r} differs for {idents}")
    ours = [stored.signatures[c] for c in a[SIGNATURE].tolist()]
    theirs = [replayed.signatures[c] for c in b[SIGNATURE].tolist()]
    bad = [i for i, (x, y) in enumerate(zip(ours, theirs, strict=True)) if x != y]
    if bad:
        problems.append(
            f"private state: last signature differs for {b.index[bad][:5].tolist()}"
        )
    if stored.deferred != replayed.deferred:
        problems.append("private state: deferred identifiers differ from the last release")
    return problems


@app.command("verify")
def verify(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    files: Annotated[
        Path | None,
        typer.Option("--files", help="Also check the published files in this folder against "
                     "the SHA-256 the store recorded when it published them."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Re-check every stored release, the whole sequence, the stored private state and the
    recorded checksums of the published files (with --files: the files themselves)."""
    problems: list[str] = []
    if files is not None and not files.is_dir():
        raise InputError(f"--files {str(files)!r}: not a folder; give the folder the "
                         "releases were published to.")
    with ReleaseStore.open(store) as opened, _progress() as progress:
        _recover_or_warn(opened)
        numbers = opened.release_numbers()
        task = progress.add_task("checksums", total=len(numbers) + 3)
        problems.extend(opened.checksum_problems())
        releases: list[Release] = []
        for number in numbers:
            progress.update(task, advance=1, description=f"release {number}")
            releases.append(opened.release(number))
        progress.update(task, advance=1, description="the whole sequence")
        if releases:
            sequence = opened.definition.check_sequence(releases, opened.principle_options)
            problems.extend(v.reason for v in sequence.violations)
            progress.update(task, advance=1, description="private state")
            problems.extend(
                _state_problems(opened.state(), PublisherState.from_releases(releases, opened.m))
            )
        progress.update(task, advance=1, description="published files")
        problems.extend(file_problems(opened, releases, files))
    if as_json:
        print_json({"ok": not problems, "principle": opened.principle, "releases": len(numbers),
                    "violations": [{"group": None, "reason": p} for p in problems]})
    elif problems:
        error_console.print(f"violation: {problems[0]}", markup=False, soft_wrap=True)
        if len(problems) > 1:
            error_console.print(f"(+{len(problems) - 1} more)", markup=False)
    else:
        checked = f", published files in {files} match" if files is not None else ""
        console.print(f"{store}: {len(numbers)} release(s) verified, m = {opened.m}{checked}: "
                      "OK", markup=False)
    if problems:
        raise typer.Exit(1)


_PUBLISHED_NAME = re.compile(r"^(release|counterfeits|substitutions)-([0-9]+)\.(csv|parquet)$")


def file_problems(opened: ReleaseStore, releases: list[Release],
                  folder: Path | None) -> list[str]:
    """Recorded file checksums that the stored releases no longer render to, and (with
    ``folder``) published files missing, different from the record, or unknown to it."""
    problems: list[str] = []
    recorded = opened.published_files()
    by_number = {release.number: release for release in releases}
    counts_name = opened.definition.counts_file
    rendered: dict[tuple[int, str], dict[str, bytes]] = {}

    def render(number: int, fmt: str) -> dict[str, bytes]:
        if (number, fmt) not in rendered:
            rendered[number, fmt] = render_release(by_number[number], fmt, counts_name)
        return rendered[number, fmt]

    for entry in recorded:
        if entry.release not in by_number:
            problems.append(f"release {entry.release}: file {entry.name} is recorded for a "
                            "release the store does not hold")
            continue
        data = render(entry.release, entry.format).get(entry.name)
        if entry.format == "csv" and (data is None or sha256(data) != entry.sha256):
            problems.append(
                f"release {entry.release}: the stored release no longer renders to the "
                f"recorded {entry.name} (SHA-256 differs; the store was modified outside "
                "republish)")
    if folder is None:
        return problems
    expected = {entry.name: entry for entry in recorded}
    for entry in recorded:
        path = folder / entry.name
        if not path.is_file():
            problems.append(f"release {entry.release}: {path} is missing (re-create it with "
                            f"'republish export --store {opened.path} -o {folder} --release "
                            f"{entry.release}')")
        elif path.is_symlink() or sha256(path.read_bytes()) != entry.sha256:
            problems.append(f"release {entry.release}: {path} differs from the file published "
                            "(SHA-256 recorded in the store)")
    for path in sorted(folder.iterdir()):
        match = _PUBLISHED_NAME.match(path.name)
        if match is None or path.name in expected:
            continue
        number, fmt = int(match.group(2)), match.group(3)
        if number in by_number and not any(e.release == number for e in recorded):
            # A release published before checksums were recorded: compare with its rendering.
            data = render(number, fmt).get(path.name)
            if data is not None and sha256(path.read_bytes()) == sha256(data):
                continue
            problems.append(f"release {number}: {path} differs from the stored release")
            continue
        problems.append(f"{path} is not a file of any release recorded in the store (left by "
                        "an interrupted or foreign run?); remove it before publishing the "
                        "folder")
    return problems


def _recover_or_warn(opened: ReleaseStore) -> None:
    """Recovery for commands that only read the store: a failure is a warning."""
    try:
        recover(opened, _say)
    except (RepublishError, OSError) as exc:
        _say(f"an interrupted release could not be finished now ({exc}); 'republish "
             "release' will refuse to continue until it is.")


@app.command("history")
def history(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout.")] = False,
) -> None:
    """Per release: rows, new, deleted, re-inserted, counterfeits, deferred, groups, mean
    normalized perimeter, wall time and the solve certificate."""
    with ReleaseStore.open(store) as opened:
        _recover_or_warn(opened)
        rows: list[dict[str, Any]] = [
            {key: row.get(key) for key in HISTORY_FIELDS} | row for row in opened.history()
        ]
    if as_json:
        print_json(rows)
        return
    main_columns = [key for key in HISTORY_FIELDS if key not in ("objective", "bound", "gap")]
    console.print(_table(str(store), rows, main_columns))
    names = sorted({str(row["objective_name"]) for row in rows if row.get("objective_name")})
    staged = any(row.get("cost_status") is not None for row in rows)
    columns = ["release", "status", "objective", "bound", "gap"]
    if staged:
        columns = ["release", "status", "counts_status", "objective", "bound", "cost_status",
                   "cost", "cost_bound", "cost_gap"]
    console.print(_table("certificates" + (f": {'; '.join(names)}" if names else ""), rows,
                         columns))


def certificate_text(summary: dict[str, Any]) -> str:
    """One line: the release's status and, for a lexicographic objective, both stages."""
    if summary.get("cost_status") is None:
        return (f"certificate: {summary['status']}, objective {_cell(summary['objective'])}, "
                f"bound {_cell(summary['bound'])}, gap {_cell(summary['gap'])}")
    name = str(summary.get("objective_name") or "")
    first, _, second = name.partition(", then ")
    return (f"certificate: release {summary['status']}; (a) {first} = "
            f"{_cell(summary['objective'])} ({summary['counts_status']}, bound "
            f"{_cell(summary['bound'])}); (b) {second} = {_cell(summary['cost'])} "
            f"({summary['cost_status']}, bound {_cell(summary['cost_bound'])}, gap "
            f"{_cell(summary['cost_gap'])})")


_HEADERS = {
    "release": "n", "deleted": "del.", "reinserted": "re-ins.", "counterfeits": "counterf.",
    "deferred": "defer.", "mean_perimeter": "perim.", "wall_time_s": "time s",
    "counts_status": "(a) status", "objective": "(a)", "bound": "(a) bound",
    "cost_status": "(b) status", "cost": "(b)", "cost_bound": "(b) bound", "cost_gap": "(b) gap",
}


def _table(title: str, rows: list[dict[str, Any]], keys: list[str]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False,
                  show_edge=False)
    for key in keys:
        table.add_column(_HEADERS.get(key, key), justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(_cell(row.get(key)) for key in keys))
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


__all__ = ["file_problems", "history", "init", "release", "verify"]
