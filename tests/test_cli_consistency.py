"""One CLI: an option letter means one thing, --time-limit one budget, seeds documented,
a batch with a failed instance exits 1."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import click
import pytest
import typer.main
from typer.testing import CliRunner

from republish.cli import app
from republish.cli.app import SEEDS_HELP, TIME_LIMIT_HELP

#: Clashes in command modules other engineers are converting: short letter -> what is
#: wrong. A clash not listed here fails the test; a listed one that is gone passes it.
KNOWN_CLASHES: dict[str, str] = {}


def commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return dict(group.commands)


def short_options() -> dict[str, set[str]]:
    """Short option -> the long options it stands for, over every command."""
    meaning: dict[str, set[str]] = defaultdict(set)
    for command in commands().values():
        for param in command.params:
            names = [*param.opts, *param.secondary_opts]
            longs = sorted(n for n in names if n.startswith("--"))
            for short in (n for n in names if len(n) == 2 and n[0] == "-" and n[1] != "-"):
                meaning[short].add(longs[0] if longs else str(param.name))
    return meaning


def test_no_option_letter_means_two_things() -> None:
    clashes = {short: longs for short, longs in short_options().items() if len(longs) > 1}
    unknown = {s: sorted(v) for s, v in clashes.items() if s not in KNOWN_CLASHES}
    assert unknown == {}
    # -m is never --method: everywhere else --m is m.
    assert short_options().get("-m", {"--m"}) == {"--m"}
    if clashes:
        pytest.xfail(f"known clashes left in other modules: {clashes}")


def test_time_limit_is_one_budget_everywhere() -> None:
    helps = {name: param.help or "" for name, command in commands().items()
             for param in command.params if "--time-limit" in param.opts}
    assert {"ldiv", "eligibility", "batch"} <= set(helps)
    assert helps["ldiv"] == helps["eligibility"] == TIME_LIMIT_HELP
    assert all("budget" in text for text in helps.values()), helps


def test_seeds_are_documented() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "300"})
    assert top.exit_code == 0
    assert " ".join(SEEDS_HELP.split()) in " ".join(top.output.split())
    release = {p.name: p for p in commands()["release"].params}["seed"]
    assert "entropy" in (release.help or "") and release.default is None
    for name in ("ldiv", "eligibility"):
        seed = {p.name: p for p in commands()[name].params}["seed"]
        assert seed.default == 0


MANIFEST = """\
[defaults]
time_limit = 10

[[instance]]
problem = "eligibility"
counts = [5, 3, 1, 1]
m = 2
method = "counterfeit"

[[instance]]
problem = "eligibility"                 # bad data: no 'disease' column
data = "broken.csv"
schema = "schema.toml"
m = 2
method = "counterfeit"
"""


def test_batch_exits_1_when_an_instance_ends_in_error(tmp_path: Path) -> None:
    (tmp_path / "schema.toml").write_text(
        'id = "id"\nsensitive = "disease"\n[[qi]]\nname = "age"\n', encoding="utf-8")
    (tmp_path / "broken.csv").write_text("id,age\na,30\nb,31\n", encoding="utf-8")
    manifest = tmp_path / "batch.toml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    output = tmp_path / "results.csv"
    outcome = CliRunner().invoke(app, ["batch", str(manifest), "-o", str(output),
                                       "--workers", "1", "--json"])
    assert outcome.exit_code == 1, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["statuses"] == {"ERROR": 1, "OPTIMAL": 1}
    assert output.is_file()  # the results are written all the same
