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

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from republish.api import defaults
from republish.cli.app import (
    MAX_WORKERS,
    app,
    check_finite,
    check_range,
    console,
    error_console,
    print_json,
)
from republish.cli.choices import (
    DEFAULT_COST,
    DEFAULT_ELIGIBILITY,
    DEFAULT_SOLVER,
    MAX_SEED,
    MAX_TIME_LIMIT,
    PRINCIPLES,
    Cost,
    Eligibility,
    Format,
    IdKind,
    Principle,
    SolverMode,
    TableFormat,
)
from republish.cli.printing import certificate_text, print_csv, rich_table
from republish.cli.recovery import _recover_or_warn, _say

#: Steps of ``release`` loaded on first use (``--help`` stays fast); tests replace them
#: on this module (``monkeypatch.setattr(store_commands, "publish", ...)``).
_STEPS = {
    "publish": ("republish.solver.joint_guard", "guarded_publish"),
    "StagedRelease": ("republish.api.publication", "StagedRelease"),
    "move_into_place": ("republish.api.publication", "move_into_place"),
}


def __getattr__(name: str) -> Any:
    if name in _STEPS:
        module, attribute = _STEPS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _step(name: str) -> Any:
    """A step of ``release``, as replaced on this module if it was."""
    return globals()[name] if name in globals() else __getattr__(name)


def _warn(message: str) -> None:
    """A warning on stderr (a release that defers or counterfeits much of its table)."""
    error_console.print(f"warning: {message}", markup=False, soft_wrap=True)


@contextmanager
def _spinner() -> Iterator[Callable[[str], None]]:
    """A transient spinner with the current step on stderr, on a terminal only."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=error_console, transient=True, disable=not error_console.is_terminal,
    ) as progress:
        task = progress.add_task("loading the store", total=None)
        yield lambda text: progress.update(task, description=text)


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
    from republish.cli.init_options import BUILDERS, InitFlags
    from republish.identifiers import validate_identifier_kind
    from republish.schema import load_schema
    from republish.store import ReleaseStore

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
    ] = DEFAULT_ELIGIBILITY,
    seed: Annotated[
        int | None,
        typer.Option("--seed", min=0, max=MAX_SEED,
                     help="Seed of the publication shuffle (group numbers, row order) and "
                     "of the models; for reproducible tests only. Default: fresh OS "
                     "entropy, so that a published table's order cannot be predicted."),
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
    ] = DEFAULT_SOLVER,
    time_limit: Annotated[
        float,
        typer.Option("--time-limit", min=0.0, help="m-invariance with --solver auto|exact: "
                     "one budget in seconds for all exact models of the release step; the "
                     "greedy answer is kept where they run out."),
    ] = defaults.TIME_LIMIT,
    workers: Annotated[
        int,
        typer.Option("--workers", help="Cores the exact models may use: CP-SAT's workers, "
                     "and from 2 a release above 2,000 rows computes its bound on the "
                     "generalization cost in a second process beside its search, as does a "
                     "first release whose m-row relaxation would not get its time in the "
                     "process, and a smaller later release whose columns do not fit in a "
                     "table (a tighter certificate and a longer search in the same wall "
                     "time)."),
    ] = 1,
    cost: Annotated[
        Cost,
        typer.Option("--cost", help="Objective (b), minimized after counterfeits + "
                     "deferrals: perimeter (Σ|G|·Σ extent/range, the m-invariance paper's) or "
                     "ncp (the same over real rows only)."),
    ] = DEFAULT_COST,
    new_population: Annotated[
        bool,
        typer.Option("--new-population", help="Accept a table that shares almost no "
                     "identifiers with the last release at a similar size (refused by "
                     "default: it usually means re-keyed identifiers, which would lift "
                     "every returning person's protection)."),
    ] = False,
    warn_share: Annotated[
        float,
        typer.Option("--warn-share", min=0.0, max=1.0,
                     help="Warn on stderr when the release defers, or adds counterfeits for, "
                     "more than this share of its rows (0.05 = 5 %), naming the cause."),
    ] = defaults.WARN_SHARE,
    assign: Annotated[
        str,
        typer.Option("--assign", help="m-invariance: how new rows open buckets: 'paper' "
                     "(Algorithm Assign, default) or 'reuse' (existing signatures first: "
                     "fewer counterfeits in later releases, benchmarks/RESULTS.md)."),
    ] = "paper",
    first_release: Annotated[
        str,
        typer.Option("--first-release", help="m-invariance with --solver auto|exact: the "
                     "groups of a release without old rows: 'buckets' (start from the paper's "
                     "steps; a release of up to 2,000 rows is partitioned exactly, with "
                     "--solver auto up to 400, as 'keep-signatures' above and as "
                     "'local-signatures' from 5,000 rows where values are plentiful, "
                     "default), "
                     "'keep-signatures' (keep the paper's signatures and their counts, rows "
                     "free among the groups holding their value: fewer counterfeits later), "
                     "'keep-buckets' (every row also kept in its bucket), 'local-signatures' "
                     "(a few dozen signatures chosen by locality, each for at least 30 "
                     "groups: far less generalization, counterfeits only in small tables) "
                     "or 'compact' (locality first: least generalization now, more "
                     "counterfeits later; benchmarks/RESULTS.md)."),
    ] = "buckets",
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="m-invariance with --solver heuristic: split the "
                     "buckets as tasks in this process ('local'), on local worker processes "
                     "('processes') or on a Dask cluster (tcp://HOST:PORT; needs the 'dask' "
                     "extra). Default: local processes from 1,000,000 rows on two or more "
                     "cores, else in this process. The release is the same wherever it runs."),
    ] = None,
) -> None:
    """Compute, verify and record the next release of DATA (the store's principle).

    The files are written to a private staging folder beside the store, the release and
    the files' checksums are recorded in one transaction, then the files are moved into
    OUTPUT; an interrupted run is finished by the next command on the store. Deferred
    identifiers go to the private file STORE.deferred.csv beside the store.
    """
    import numpy as np

    from republish.api.publication import recover
    from republish.api.shares import deferred_path, share_warnings
    from republish.api.store import check_targets, publish_next
    from republish.cli.progress import progress
    from republish.errors import InputError
    from republish.schema import load_schema
    from republish.solver.options import SolveOptions
    from republish.store import ReleaseStore
    from republish.table_reading import read_frame
    from republish.tables import validate_table

    check_finite(time_limit, "--time-limit", maximum=MAX_TIME_LIMIT)
    check_range(workers, "--workers", 1, MAX_WORKERS)
    with ReleaseStore.open(store) as opened:
        recover(opened, _say)
        if schema is not None:
            opened.check_schema(load_schema(schema))
        number = opened.last_release + 1
        targets = check_targets(output, number, fmt.value, opened.definition.counts_file)
        frame = read_frame(data, opened.schema.delimiter)
        try:
            table = validate_table(frame, opened.schema, opened.identifier_kind)
        except InputError as exc:
            raise InputError(f"{data} does not match the store's schema: {exc}") from exc
        del frame  # the raw table: the validated one holds what the release needs
        solve = SolveOptions(solver.value, time_limit, workers, cost=cost.value,
                             scheduler=scheduler, assign=assign, first_release=first_release)
        with progress(f"release {number}", rows=len(table)) as report:
            result = publish_next(
                opened, table, solve=solve, eligibility=eligibility.value,
                rng=np.random.default_rng(seed), output=output, fmt=fmt.value,
                new_population=new_population, progress=report.phase, say=_say,
                compute=_step("publish"), staging=_step("StagedRelease"),
                move=_step("move_into_place"))
        found = share_warnings(result.summary(), table, opened.schema, result.previous,
                               opened.m, warn_share)
    for warning in found:
        _warn(warning.message())
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
    if summary["deferred"]:
        console.print(f"wrote {deferred_path(store)} (the deferred identifiers: private, like "
                      "the store; never publish it)", markup=False)


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
    from republish.api.verification import verify_store
    from republish.errors import InputError
    from republish.store import ReleaseStore

    if files is not None and not files.is_dir():
        raise InputError(f"--files {str(files)!r}: not a folder; give the folder the "
                         "releases were published to.")
    with ReleaseStore.open(store) as opened, _spinner() as report:
        _recover_or_warn(opened)
        result = verify_store(opened, files, progress=report)
    problems = result.violations
    if as_json:
        print_json(result.to_dict())
    elif problems:
        error_console.print(f"violation: {problems[0]}", markup=False, soft_wrap=True)
        if len(problems) > 1:
            error_console.print(f"(+{len(problems) - 1} more)", markup=False)
    else:
        checked = f", published files in {files} match" if files is not None else ""
        console.print(f"{store}: {result.releases} release(s) verified, m = {opened.m}"
                      f"{checked}: OK", markup=False)
    if problems:
        raise typer.Exit(1)


def file_problems(*args: Any, **kwargs: Any) -> list[str]:
    """:func:`republish.api.verification.file_problems` (kept under its old name)."""
    from republish.api.verification import file_problems as problems

    return problems(*args, **kwargs)


#: The columns of the history table, after ``n``: rows, movements, padding, utility.
HISTORY_COLUMNS = ("release", "rows", "new", "deleted", "reinserted", "counterfeits",
                   "deferred", "groups", "mean_perimeter", "ncp", "wall_time_s", "status")


@app.command("history")
def history(
    store: Annotated[Path, typer.Option("--store", help="Release store (SQLite).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout "
                                          "(= --format json).")] = False,
    fmt: Annotated[
        TableFormat,
        typer.Option("--format", help="table (for people), csv (every field, one row per "
                     "release) or json (as --json)."),
    ] = TableFormat.table,
) -> None:
    """Per release: rows, new, deleted, re-inserted, counterfeits, deferred, groups, mean
    perimeter (mean over groups of |G| x the sum over QIs of extent / range), NCP, wall
    time and the solve certificate. Every field: docs/formats.md."""
    from republish.store import HISTORY_FIELDS, ReleaseStore

    with ReleaseStore.open(store) as opened:
        _recover_or_warn(opened)
        rows: list[dict[str, Any]] = [
            {key: row.get(key) for key in HISTORY_FIELDS} | row for row in opened.history()
        ]
    if as_json or fmt is TableFormat.json:
        print_json(rows)
        return
    if fmt is TableFormat.csv:
        print_csv(rows)
        return
    console.print(rich_table(str(store), rows, [k for k in HISTORY_COLUMNS]))
    names = sorted({str(row["objective_name"]) for row in rows if row.get("objective_name")})
    staged = any(row.get("cost_status") is not None for row in rows)
    columns = ["release", "status", "objective", "bound", "gap"]
    if staged:
        columns = ["release", "status", "counts_status", "objective", "bound", "cost_status",
                   "cost", "cost_bound", "cost_gap"]
        if any(row.get("within_status") is not None for row in rows):
            columns += ["within_status", "within_gap"]
    console.print(rich_table("certificates" + (f": {'; '.join(names)}" if names else ""), rows,
                         columns))


__all__ = [
    "DEFAULT_COST", "DEFAULT_ELIGIBILITY", "DEFAULT_SOLVER", "MAX_SEED", "MAX_TIME_LIMIT",
    "PRINCIPLES", "Cost", "Eligibility", "Format", "IdKind", "Principle", "SolverMode",
    "TableFormat", "certificate_text", "file_problems", "history", "init", "print_csv",
    "release", "verify",
]
