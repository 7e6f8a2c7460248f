"""``republish audit``: attack a sequence of releases as the m-invariance paper's adversary.

Exit codes (design Contracts): 0 nothing found; 1 vulnerable individuals (Lemma 1),
individuals with no value left (the releases contradict the knowledge table) or leaks in
the files; 2 bad input or usage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.progress import Progress

from republish.audit import AuditReport, audit_releases, read_knowledge
from republish.audit.exact_risk import PRINCIPLES
from republish.cli.app import app, check_range, console, error_console, fail, print_json
from republish.cli.store_commands import _recover_or_warn
from republish.errors import InputError, ParameterError, RepublishError
from republish.excerpts import excerpt
from republish.principles.catalog import principle as lookup_principle
from republish.release import read_published
from republish.schema import load_schema
from republish.store import ReleaseStore


def _counterfeit_options(options: list[str], releases: int) -> dict[int, Path]:
    """``N:FILE`` options -> {release index (0-based): path}."""
    out: dict[int, Path] = {}
    for option in options:
        number, sep, name = option.partition(":")
        if not sep or not re.fullmatch(r"[0-9]{1,9}", number.strip()) or not name:
            raise ParameterError(
                f"--counterfeits {excerpt(option)}: use N:FILE, e.g. --counterfeits "
                "2:counterfeits-2.csv."
            )
        index = int(number) - 1
        if not 0 <= index < releases:
            raise ParameterError(
                f"--counterfeits {excerpt(option)}: release {number} does not exist; there are "
                f"{releases} --release options."
            )
        if index in out:
            raise ParameterError(f"--counterfeits gives release {number} twice.")
        out[index] = Path(name)
    return out


def _read(path: Path) -> pd.DataFrame:
    try:
        return read_published(path)
    except RepublishError:
        raise
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot be read as a published table ({exc}).") from exc


def _from_files(
    releases: list[Path],
    knowledge_path: Path | None,
    schema_path: Path | None,
    counterfeit_options: list[str],
    exact: bool,
    principle: str,
    max_individuals: int,
) -> AuditReport:
    if not releases or knowledge_path is None or schema_path is None:
        raise ParameterError(
            "give --release (one per release, in order), --knowledge and --schema, or --store."
        )
    schema = load_schema(schema_path)
    frames = [_read(path) for path in releases]
    raw = [
        None if path.suffix.lower() in (".parquet", ".pq")
        else path.read_bytes().decode("utf-8", errors="replace")
        for path in releases
    ]
    fake_paths = _counterfeit_options(counterfeit_options, len(releases))
    counterfeits = [_read(fake_paths[j]) if j in fake_paths else None for j in range(len(frames))]
    knowledge = read_knowledge(knowledge_path, schema, release_count=len(releases))
    with _progress() as progress:
        return audit_releases(
            frames, knowledge, counterfeits, exact=exact,
            principle=principle,  # type: ignore[arg-type]
            raw_texts=raw, max_individuals=max_individuals, progress=progress,
        )


def _from_store(store: Path, exact: bool, principle: str, max_individuals: int) -> AuditReport:
    from republish.audit.knowledge import history_from_store

    releases, knowledge = history_from_store(store)
    with _progress() as progress:
        return audit_releases(
            releases, knowledge, exact=exact, principle=principle,  # type: ignore[arg-type]
            max_individuals=max_individuals, progress=progress,
        )


@contextmanager
def _progress() -> Iterator[Callable[[int, int], None]]:
    """A transient progress bar on stderr (stdout stays clean for --json)."""
    with Progress(console=error_console, transient=True) as bar:
        task = bar.add_task("intersection attack", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total,
                       description=f"intersection attack: release {done} of {total}")

        yield update


def _print(report: AuditReport) -> None:
    audit = report.intersection
    console.print(
        f"{len(audit.identifiers)} individuals over {report.release_count} release(s)", markup=False
    )
    console.print(f"vulnerable individuals (one value left, Lemma 1): {report.vulnerable}")
    revealed = audit.revealed_values()
    for identifier in list(revealed)[:20]:
        console.print(f"  - {identifier}: {revealed[identifier]}", markup=False)
    if len(revealed) > 20:
        console.print(f"  ... and {len(revealed) - 20} more", markup=False)
    if audit.inconsistent.any():
        console.print(
            f"individuals with no value left (releases contradict the knowledge): "
            f"{int(audit.inconsistent.sum())} e.g. {audit.inconsistent_ids[:5]}",
            markup=False,
        )
    distribution = ", ".join(f"{k}: {v}" for k, v in audit.size_distribution().items())
    console.print(f"intersection sizes (size: individuals): {distribution}", markup=False)
    if report.exact is not None:
        exact = report.exact
        kind = "risk (Definition 14)" if exact.truth is not None else "posterior share"
        value = report.max_exact_risk()
        shown = "n/a (no reasonable surjection)" if value is None else f"{value:.4g}"
        console.print(
            f"maximum exact {kind}: {shown} over {exact.total} reasonable surjections "
            f"(principle: {exact.principle})",
            markup=False,
        )
        if exact.note:
            console.print(f"  note: {exact.note}", markup=False)
    elif report.exact_note:
        console.print(report.exact_note, markup=False)
    leaks = [f for f in report.leaks if f.severity == "leak"]
    warnings = [f for f in report.leaks if f.severity == "warning"]
    console.print(f"leak findings: {len(leaks)} leak(s), {len(warnings)} warning(s)")
    for finding in report.leaks:
        where = f"release {finding.release}" if finding.release is not None else "all"
        console.print(
            f"  - [{finding.severity}] {where}, {finding.check}: {finding.message}",
            markup=False,
            soft_wrap=True,
        )


HELP = (
    "Audit releases against an adversary who knows everyone's identity, QIs and releases "
    "(the knowledge table B(n) of the m-invariance paper).\n\n"
    "Prints the vulnerable individuals (a single sensitive value left after intersecting the "
    "candidate sets of their releases, Lemma 1), the distribution of intersection sizes, the "
    "maximum exact risk with --exact (Definition 14), and leaks found in the files. "
    "Exit 1 when anything is found, 0 otherwise, 2 on bad input.\n\n"
    "With --exact, a knowledge.csv that also holds the sensitive column (the publisher's own "
    "audit; --store always has it) gives the risk against the true values; without it the "
    "figure is the largest share any value gets, an upper bound on the risk."
)


@app.command("audit", help=HELP)
def audit(
    release: Annotated[
        list[Path] | None,
        typer.Option("--release", "-r", help="Published T*(j) (CSV or Parquet), in order; repeat."),
    ] = None,
    knowledge: Annotated[
        Path | None,
        typer.Option(
            "--knowledge", "-k",
            help="knowledge.csv: identifier, exact QIs, 'releases' (e.g. 1,2,4).",
        ),
    ] = None,
    schema: Annotated[
        Path | None, typer.Option("--schema", "-s", help="schema.toml naming the QIs and the SA.")
    ] = None,
    counterfeits: Annotated[
        list[str] | None,
        typer.Option("--counterfeits", "-c", help="N:FILE, release N's R(N) (group,count)."),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Audit a stored history with the store's own knowledge."),
    ] = None,
    exact: Annotated[
        bool, typer.Option("--exact", help="Also count surjections (Definition 14; small only).")
    ] = False,
    principle: Annotated[
        str,
        typer.Option(
            "--principle",
            help="Principle the adversary assumes for --exact: auto, m-invariance or none.",
        ),
    ] = "auto",
    max_individuals: Annotated[
        int, typer.Option("--max-individuals", help="Refuse --exact above this many individuals.")
    ] = 60,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document {vulnerable, vulnerable_ids, intersection_sizes, "
            "max_exact_risk, leaks}.",
        ),
    ] = False,
) -> None:
    """Audit releases (see HELP)."""
    try:
        if principle not in PRINCIPLES:
            raise ParameterError(
                f"--principle {excerpt(principle)}: use one of {list(PRINCIPLES)}.")
        check_range(max_individuals, "--max-individuals", 1, 10**6)
        if store is not None:
            if release or knowledge is not None or counterfeits:
                raise ParameterError(
                    "--store audits the stored history; drop --release/--knowledge/--counterfeits."
                )
            with ReleaseStore.open(store) as opened:
                _recover_or_warn(opened)
            from republish.audit.sug_report import (
                SugAuditReport,
                audit_store_sug,
                store_principle,
            )

            Audit = Callable[[], AuditReport | SugAuditReport]
            audits: dict[str, Audit] = {"sug": lambda: audit_store_sug(store),
                      "intersection": lambda: _from_store(store, exact, principle,
                                                          max_individuals)}
            report = audits[lookup_principle(store_principle(store)).audit]()
        else:
            report = _from_files(
                list(release or []), knowledge, schema, list(counterfeits or []), exact,
                principle, max_individuals,
            )
    except RepublishError as exc:
        fail(str(exc))
        return
    if json_output:
        print_json(report.to_dict())
    elif isinstance(report, AuditReport):
        _print(report)
    else:  # the SUG attack (a store whose principle lets values change)
        for line in report.lines():
            console.print(line, markup=False, soft_wrap=True)
    if report.found:
        raise typer.Exit(1)
