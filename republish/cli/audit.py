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
from typing import TYPE_CHECKING, Annotated, Any

import typer

from republish.cli.app import app, check_range, console, error_console, fail, print_json
from republish.errors import InputError, ParameterError, RepublishError
from republish.excerpts import excerpt

if TYPE_CHECKING:  # the heavy modules are imported inside the commands (fast CLI start)
    import pandas as pd

    from republish.audit import AuditReport
    from republish.audit.joint_report import JointReport

#: --principle values of --exact (republish.audit.exact_risk.PRINCIPLES) and of --joint.
EXACT_PRINCIPLES = ("auto", "m-invariance", "none")
JOINT_PRINCIPLES = ("auto", "m-invariance", "m-distinct", "eps-inclusion")


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
    from republish.release_files import read_published

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
    from republish.audit import audit_releases, read_knowledge
    from republish.schema import load_schema

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
    from republish.audit import audit_releases
    from republish.audit.knowledge import history_from_store

    releases, knowledge = history_from_store(store)
    with _progress() as progress:
        return audit_releases(
            releases, knowledge, exact=exact, principle=principle,  # type: ignore[arg-type]
            max_individuals=max_individuals, progress=progress,
        )


@contextmanager
def _progress(what: str = "intersection attack: release"
              ) -> Iterator[Callable[[int, int], None]]:
    """A transient progress bar on stderr (stdout stays clean for --json)."""
    from rich.progress import Progress

    with Progress(console=error_console, transient=True) as bar:
        task = bar.add_task(what, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total,
                       description=f"{what} {done} of {total}")

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
    "figure is the largest share any value gets, an upper bound on the risk.\n\n"
    "With --joint, the adversary reasons about everybody at once: every possible world of the "
    "whole sequence is one constraint model (groups, counterfeit or substitution counts, the "
    "principle's link between a person's values), and the audit prints the values still "
    "possible for every person and release, flags sets smaller than m, and says which share "
    "of people it checked completely within --time-limit."
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
            "--knowledge",
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
            help="Principle the adversary assumes: for --exact auto, m-invariance or none; for "
            "--joint auto, m-invariance, m-distinct or eps-inclusion (auto: the store's, else "
            "m-distinct with --transitions, eps-inclusion for exact QIs, m-invariance).",
        ),
    ] = "auto",
    joint: Annotated[
        bool,
        typer.Option("--joint", help="The joint adversary: every possible world of the whole "
                     "sequence as one constraint model; the values still possible for every "
                     "person and release, sets smaller than m flagged (docs/security.md)."),
    ] = False,
    transitions: Annotated[
        Path | None,
        typer.Option("--transitions", help="--joint from files: the m-Distinct transition "
                     "model (CSV from,to[,probability])."),
    ] = None,
    m: Annotated[
        int | None,
        typer.Option("--m", help="--joint: flag possible sets smaller than m (default: the "
                     "store's m; from files 2, forced values only)."),
    ] = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="--joint: wall-clock budget in seconds "
                            "for the whole audit; people left undecided are reported as such.")
    ] = 300.0,
    risk: Annotated[
        bool, typer.Option("--risk", help="--joint: also count every world of small "
                           "components (exact joint risk vs the per-record figure).")
    ] = False,
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
    from republish.audit import AuditReport

    report: Any  # AuditReport, SugAuditReport or JointReport
    try:
        if joint:
            if exact:
                raise ParameterError("--joint and --exact are separate audits; give one.")
            if principle not in JOINT_PRINCIPLES:
                raise ParameterError(f"--principle {excerpt(principle)} with --joint: use one "
                                     f"of {list(JOINT_PRINCIPLES)}.")
            check_range(time_limit, "--time-limit", 1e-3, 10**6)
            if m is not None:
                check_range(m, "--m", 1, 10**6)
            report = _joint(store, list(release or []), knowledge, schema,
                            list(counterfeits or []), principle, transitions, m, time_limit,
                            risk)
        else:
            if transitions is not None or m is not None or risk:
                raise ParameterError("--transitions, --m and --risk go with --joint.")
            report = _audit(store, release, knowledge, schema, counterfeits, exact, principle,
                            max_individuals)
    except RepublishError as exc:
        fail(str(exc))
        return
    if json_output:
        print_json(report.to_dict())
    elif isinstance(report, AuditReport):
        _print(report)
    else:  # the SUG attack (a store whose principle lets values change), the joint audit
        for line in report.lines():
            console.print(line, markup=False, soft_wrap=True)
    if report.found:
        raise typer.Exit(1)


def _audit(store: Path | None, release: list[Path] | None, knowledge: Path | None,
           schema: Path | None, counterfeits: list[str] | None, exact: bool, principle: str,
           max_individuals: int) -> Any:
    """The per-record audits: the intersection attack, or the SUG for m-Distinct."""
    from republish.audit.exact_risk import PRINCIPLES

    if principle not in PRINCIPLES:
        raise ParameterError(
            f"--principle {excerpt(principle)}: use one of {list(PRINCIPLES)}.")
    check_range(max_individuals, "--max-individuals", 1, 10**6)
    if store is not None:
        if release or knowledge is not None or counterfeits:
            raise ParameterError(
                "--store audits the stored history; drop --release/--knowledge/--counterfeits."
            )
        _recover(store)
        from republish.audit.sug_report import audit_store_sug, store_principle
        from republish.principles.catalog import principle as lookup_principle

        audits: dict[str, Callable[[], Any]] = {
            "sug": lambda: audit_store_sug(store),
            "intersection": lambda: _from_store(store, exact, principle, max_individuals)}
        return audits[lookup_principle(store_principle(store)).audit]()
    return _from_files(list(release or []), knowledge, schema, list(counterfeits or []), exact,
                       principle, max_individuals)


def _recover(store: Path) -> None:
    from republish.cli.recovery import _recover_or_warn
    from republish.store import ReleaseStore

    with ReleaseStore.open(store) as opened:
        _recover_or_warn(opened)


def _joint(store: Path | None, releases: list[Path], knowledge_path: Path | None,
           schema_path: Path | None, counterfeit_options: list[str], principle: str,
           transitions: Path | None, m: int | None, time_limit: float,
           risk: bool) -> JointReport:
    """``audit --joint`` on a store or on files (:mod:`republish.audit.joint_report`)."""
    from republish.audit import read_knowledge
    from republish.audit.joint_report import joint_audit_files, joint_audit_store
    from republish.schema import load_schema
    from republish.transitions import read_transitions

    with _progress("joint audit: component") as progress:
        if store is not None:
            if releases or knowledge_path is not None or counterfeit_options or transitions:
                raise ParameterError("--store audits the stored history with its own "
                                     "knowledge and transitions; drop the file options.")
            _recover(store)
            report = joint_audit_store(store, m, time_limit, risk, progress=progress)
            if principle not in ("auto", report.audit.instance.principle):
                raise ParameterError(f"--principle {principle}: the store's principle is "
                                     f"{report.audit.instance.principle}.")
            return report
        if not releases or knowledge_path is None or schema_path is None:
            raise ParameterError("give --release (one per release, in order), --knowledge and "
                                 "--schema, or --store.")
        schema = load_schema(schema_path)
        frames = [_read(path) for path in releases]
        fake_paths = _counterfeit_options(counterfeit_options, len(releases))
        seconds = [_read(fake_paths[j]) if j in fake_paths else None
                   for j in range(len(frames))]
        knowledge = read_knowledge(knowledge_path, schema, release_count=len(releases))
        from republish.audit import _permuted

        permuted = [_permuted(frame, schema) for frame in frames]
        if principle == "auto":
            principle = ("m-distinct" if transitions is not None
                         else "eps-inclusion" if any(permuted) else "m-invariance")
        if principle == "m-distinct" and transitions is None:
            raise ParameterError("--principle m-distinct needs --transitions FILE.")
        model = read_transitions(transitions) if transitions is not None else None
        return joint_audit_files(frames, seconds, knowledge, principle, permuted, model, m,
                                 time_limit, risk, progress=progress)
