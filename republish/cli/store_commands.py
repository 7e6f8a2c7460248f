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
import shutil
import tempfile
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

from republish.cli.app import app, console, error_console, print_json
from republish.cli.init_options import BUILDERS, InitFlags
from republish.errors import InputError
from republish.identifiers import validate_identifier_kind
from republish.principles.catalog import principle_names
from republish.release import Release, write_release
from republish.schema import load_schema
from republish.solver.options import SolveOptions
from republish.solver.publish import publish
from republish.state import LAST_RELEASE, SIGNATURE, PublisherState
from republish.store import HISTORY_FIELDS, ReleaseStore
from republish.tables import load_table


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
        typer.Option("--seed", help="Seed for reproducible tests (default: OS entropy)."),
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
    """Compute, verify and record the next release of DATA (the store's principle)."""
    with ReleaseStore.open(store) as opened:
        if schema is not None:
            opened.check_schema(load_schema(schema))
        number = opened.last_release + 1
        kinds = ("release", opened.definition.counts_file)
        targets = [output / f"{kind}-{number}.{fmt.value}" for kind in kinds]
        existing = [str(t) for t in targets if t.exists()]
        if existing:
            raise InputError(
                f"{existing} already exist; choose another output directory or remove them."
            )
        try:
            table = load_table(data, opened.schema, opened.identifier_kind)
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
            output.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".release-{number}-", dir=output))
            try:
                written = write_release(result.release, staging, fmt.value)
                opened.append_step(result)
                for path, target in zip(written, targets, strict=True):
                    os.replace(path, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Re-check every stored release, the whole sequence and the stored private state."""
    problems: list[str] = []
    with ReleaseStore.open(store) as opened, _progress() as progress:
        numbers = opened.release_numbers()
        task = progress.add_task("checksums", total=len(numbers) + 2)
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
    if as_json:
        print_json({"ok": not problems, "principle": opened.principle, "releases": len(numbers),
                    "violations": [{"group": None, "reason": p} for p in problems]})
    elif problems:
        error_console.print(f"violation: {problems[0]}", markup=False)
        if len(problems) > 1:
            error_console.print(f"(+{len(problems) - 1} more)", markup=False)
    else:
        console.print(f"{store}: {len(numbers)} release(s) verified, m = {opened.m}: OK")
    if problems:
        raise typer.Exit(1)


@app.command("history")
def history(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout.")] = False,
) -> None:
    """Per release: rows, new, deleted, re-inserted, counterfeits, deferred, groups, mean
    normalized perimeter, wall time and the solve certificate."""
    with ReleaseStore.open(store) as opened:
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


__all__ = ["history", "init", "release", "verify"]
