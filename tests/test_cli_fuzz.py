"""Fuzzing the CLI (issue 18, item 2): random bytes, truncated CSV/Parquet, random schema
TOML, hierarchy files and option values, run in-process.

The property, for every input: no Python traceback on stderr, an exit code in {0, 1, 2}
(3 is an internal error: a bug), and the store byte for byte unchanged whenever the exit
is not 0 (a command that fails never writes half a release).

Bounded for CI: ``REPUBLISH_FUZZ_EXAMPLES`` scales the number of examples (default 1: the
whole module runs in about 30 s on two cores); raise it for a longer local run.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.cli import main

HOSPITAL = Path(__file__).resolve().parents[1] / "republish" / "examples" / "hospital"
SCALE = float(os.environ.get("REPUBLISH_FUZZ_EXAMPLES", "1"))


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


def fuzz(n: int) -> Callable[..., object]:
    return settings(max_examples=examples(n), deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def invoke(*args: str) -> tuple[int, str, str]:
    """``republish *args`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["republish", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
                code: object = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
    return (code if isinstance(code, int) else (0 if code is None else 2)), out.getvalue(), \
        err.getvalue()


def assert_clean(code: int, err: str, args: tuple[str, ...]) -> None:
    assert "Traceback" not in err, (args, err)
    assert code in (0, 1, 2), (args, code, err)


class Workspace:
    """A store with one release, its pristine bytes, and scratch files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.schema = root / "schema.toml"
        shutil.copy(HOSPITAL / "schema.toml", self.schema)
        self.store = root / "s.db"
        code, _, err = invoke("init", "--store", str(self.store), "--schema", str(self.schema),
                              "--m", "2")
        assert code == 0, err
        code, _, err = invoke("release", str(HOSPITAL / "table1a.csv"), "--store",
                              str(self.store), "-o", str(root / "published"), "--seed", "1",
                              "--solver", "heuristic")
        assert code == 0, err
        self.pristine = self.store.read_bytes()
        self.csv = (HOSPITAL / "table2a.csv").read_bytes()
        buffer = io.BytesIO()
        pd.read_csv(HOSPITAL / "table2a.csv").to_parquet(buffer, index=False)
        self.parquet = buffer.getvalue()
        self.published = (root / "published" / "release-1.csv").read_bytes()
        knowledge = pd.read_csv(HOSPITAL / "table1a.csv").drop(columns=["disease"])
        knowledge["releases"] = "1"
        self.knowledge = root / "knowledge.csv"
        knowledge.to_csv(self.knowledge, index=False)

    def scratch(self, suffix: str, content: bytes | str) -> Path:
        path = self.root / "scratch" / f"{uuid.uuid4().hex}{suffix}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def fresh_out(self) -> Path:
        return Path(tempfile.mkdtemp(dir=self.root, prefix="out-"))

    def run_on_store(self, *args: str) -> tuple[int, str, str]:
        """Run against a pristine copy of the store; check the property."""
        self.store.write_bytes(self.pristine)
        code, out, err = invoke(*args)
        assert_clean(code, err, args)
        if code != 0:
            assert self.store.read_bytes() == self.pristine, (args, code, err)
        return code, out, err


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    yield Workspace(tmp_path_factory.mktemp("fuzz"))


def truncated(data: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(0, len(data)).map(lambda n: data[:n])


def mutated(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` with a few bytes replaced, inserted or deleted."""
    edits = st.lists(st.tuples(st.integers(0, len(data)), st.sampled_from("rid"),
                               st.binary(min_size=1, max_size=3)), max_size=4)

    def apply(changes: list[tuple[int, str, bytes]]) -> bytes:
        out = bytearray(data)
        for position, kind, piece in changes:
            position = min(position, len(out))
            if kind == "r":
                out[position:position + len(piece)] = piece
            elif kind == "i":
                out[position:position] = piece
            else:
                del out[position:position + len(piece)]
        return bytes(out)

    return edits.map(apply)


NASTY_TEXT = st.sampled_from([
    "", " ", "=HYPERLINK(\"http://x\")", ":smile:", "[bold]x[/bold]", "\x1b[31mred", "nan",
    "inf", "-inf", "1e400", "-1", "0", "99999999999999999999999999", "1.5", "a,b", "\"",
    "'", "\n", "é", "🙂", "NULL", "-9223372036854775809",
])
TEXT = st.one_of(NASTY_TEXT, st.text(max_size=12))


# ------------------------------------------------------------------ data files


@fuzz(30)
@given(data=st.data())
def test_release_survives_any_data_file(ws: Workspace, data: st.DataObject) -> None:
    suffix = data.draw(st.sampled_from([".csv", ".parquet"]))
    source = ws.csv if suffix == ".csv" else ws.parquet
    content = data.draw(st.one_of(
        st.binary(max_size=300), truncated(source), mutated(source)))
    path = ws.scratch(suffix, content)
    ws.run_on_store("release", str(path), "--store", str(ws.store), "-o",
                    str(ws.fresh_out()), "--seed", "3", "--solver", "heuristic")


@fuzz(20)
@given(content=st.one_of(st.binary(max_size=300), st.text(max_size=200)))
def test_published_file_readers_survive_any_file(ws: Workspace, content: bytes | str) -> None:
    table = ws.scratch(".csv", content)
    for args in (
        ("check", str(table), "--schema", str(ws.schema), "-p", "k-anonymity", "-k", "2"),
        ("audit", "--release", str(table), "--knowledge", str(ws.knowledge), "--schema",
         str(ws.schema)),
        ("audit", "--release", str(ws.root / "published" / "release-1.csv"), "--knowledge",
         str(table), "--schema", str(ws.schema)),
    ):
        ws.run_on_store(*args)


# ------------------------------------------------------------------ schemas and hierarchies

KEYS = ["id", "sensitive", "qi", "delimiter", "delimeter", "name", "kind", "order",
        "hierarchy", "domain", "x"]
TOML_SCALARS = st.one_of(
    TEXT, st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=10,
)


def toml_text(value: object) -> str:
    """TOML for a generated value (inline tables and arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(
            c if c.isprintable() and c not in '"\\' else
            (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
            for c in value if not 0xD800 <= ord(c) <= 0xDFFF) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{toml_text(str(k))} = {toml_text(v)}" for k, v in value.items()) \
        + "}"


ZIPS = ["12000", "14000", "18000", "20000", "21000", "25000", "26000", "27000", "30000",
        "31000", "33000", "34000", "35000", "36000", "44000"]
VALID_HIERARCHY = "\n".join(f"{z};{'low' if int(z) < 26000 else 'high'};*" for z in ZIPS)


def schema_documents() -> st.SearchStrategy[str]:
    """The hospital schema (zip as a hierarchy) with up to three random edits: a key set
    to a random value (known or misspelt keys, at the top or in a [[qi]]) or removed."""
    edit = st.tuples(st.sampled_from(["top", "qi0", "qi1"]), st.sampled_from(KEYS),
                     st.one_of(st.none(), TOML_VALUES))

    def build(edits: list[tuple[str, str, object]]) -> str:
        document: dict[str, object] = {
            "id": "name", "sensitive": "disease",
            "qi": [{"name": "age", "kind": "numeric"},
                   {"name": "zip", "kind": "hierarchy", "hierarchy": "h.csv"}]}
        for where, key, value in edits:
            qis = document.get("qi")
            target: object = document
            if where != "top" and isinstance(qis, list) and len(qis) > int(where[-1]):
                target = qis[int(where[-1])]
            if isinstance(target, dict):
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = value
        lines = [f"{toml_text(k)} = {toml_text(v)}" for k, v in document.items() if k != "qi"]
        qis = document.get("qi")
        if isinstance(qis, list) and all(isinstance(q, dict) for q in qis):
            for qi in qis:
                lines.append("[[qi]]")
                lines += [f"{toml_text(k)} = {toml_text(v)}" for k, v in qi.items()]
        elif "qi" in document:
            lines.insert(0, f"qi = {toml_text(qis)}")
        return "\n".join(lines) + "\n"

    return st.lists(edit, max_size=3).map(build)


HIERARCHY = st.one_of(
    st.just(VALID_HIERARCHY.encode()), mutated(VALID_HIERARCHY.encode()),
    truncated(VALID_HIERARCHY.encode()), st.binary(max_size=200),
    st.lists(st.lists(st.sampled_from([*ZIPS[:3], "X", "*", "", " "]), min_size=1,
                      max_size=3), max_size=5).map(
        lambda rows: "\n".join(";".join(r) for r in rows).encode()),
)


@fuzz(35)
@given(schema=st.one_of(schema_documents(), schema_documents(), st.binary(max_size=200).map(
    lambda b: b.decode("latin-1"))), hierarchy=HIERARCHY)
def test_schema_and_hierarchy_files(ws: Workspace, schema: str, hierarchy: bytes) -> None:
    folder = Path(tempfile.mkdtemp(dir=ws.root, prefix="schema-"))
    (folder / "h.csv").write_bytes(hierarchy)
    path = folder / "schema.toml"
    path.write_bytes(schema.encode("utf-8", "surrogateescape"))
    new_store = folder / "new.db"
    code, _, err = invoke("init", "--store", str(new_store), "--schema", str(path), "--m", "2")
    assert_clean(code, err, ("init", schema))
    if code != 0:
        assert not new_store.exists()
    ws.run_on_store("ldiv", str(HOSPITAL / "table1a.csv"), "--schema", str(path), "--l", "2",
                    "-o", str(folder / "l.csv"), "--method", "tp")
    ws.run_on_store("release", str(HOSPITAL / "table2a.csv"), "--store", str(ws.store), "-o",
                    str(ws.fresh_out()), "--schema", str(path), "--solver", "heuristic")


@fuzz(10)
@given(content=st.binary(max_size=300))
def test_manifest_and_store_files(ws: Workspace, content: bytes) -> None:
    manifest = ws.scratch(".toml", content)
    code, _, err = invoke("batch", str(manifest), "-o", str(ws.root / "batch.csv"))
    assert_clean(code, err, ("batch",))
    assert code == 2
    # random bytes (or a truncated store) as the store
    fake = ws.scratch(".db", content if len(content) % 2 else ws.pristine[: len(content) * 50])
    before = fake.read_bytes()
    for command in (("verify",), ("history", "--json"), ("export", "-o", str(ws.fresh_out())),
                    ("release", str(HOSPITAL / "table2a.csv"), "-o", str(ws.fresh_out()))):
        code, _, err = invoke(command[0], "--store", str(fake), *command[1:])
        assert_clean(code, err, command)
        assert code != 0 and fake.read_bytes() == before


# ------------------------------------------------------------------ option values

INTEGERS = st.one_of(st.integers(-3, 12), st.integers(-(2**80), 2**80)).map(str)
NUMBERS = st.one_of(INTEGERS, st.floats().map(str), NASTY_TEXT)
ANY_VALUE = st.one_of(NUMBERS, TEXT)
SMALL = st.integers(0, 6).map(str)


def choice(*values: str) -> st.SearchStrategy[str]:
    return st.sampled_from(values)


#: Plausible values of each option.
VALID: dict[str, st.SearchStrategy[str]] = {
    "--seed": st.integers(0, 2**31 - 1).map(str),
    "--time-limit": choice("0.3", "1", "0", "-1", "nan", "inf", "1e300"),
    "--eligibility": choice("counterfeit", "delete", "hybrid"),
    "--format": choice("csv", "parquet"),
    "--cost": choice("perimeter", "ncp"),
    "--m": st.integers(0, 12).map(str),
    "--lambda": SMALL, "--tau": SMALL, "--category-level": SMALL,
    "--id-kind": choice("integer", "text"),
    "--counts": st.lists(st.one_of(*[st.integers(0, 30)] * 5, st.integers(0, 2**70)), min_size=1,
                         max_size=6).map(lambda c: ",".join(map(str, c))),
    "--counterfeit-cost": choice("1", "0", "-1", "nan", "2.5"),
    "--deletion-cost": choice("1", "0", "-1", "inf", "0.5"),
    "--l": SMALL, "--k": SMALL, "--workers": choice("1", "2", "0", "100000"),
    "--model": choice("suppression", "interval"),
    "--max-individuals": choice("1", "60", "0", "-5"),
    "--release": SMALL,
    "--counterfeits": choice("1:" + str(HOSPITAL / "counterfeits3b.csv"), "2:x.csv", "x", ":"),
    "--series": choice("initial=6,r=2,releases=2", "initial=0,r=1,releases=1", "x",
                       "initial=1e9,r=1,releases=1", "initial=9999999999999,r=1,releases=2"),
}
PRINCIPLES = {"init": choice("m-invariance", "eps-inclusion", "m-distinct"),
              "check": choice("k-anonymity", "l-diversity"),
              "audit": choice("auto", "m-invariance", "none")}
METHODS = {"eligibility": choice("counterfeit", "delete", "hybrid", "hybrid-greedy", "random",
                                 "all"),
           "ldiv": choice("tp", "tp+", "mondrian", "exact", "exact-stars", "matching", "auto")}


def value_of(command: str, option: str) -> st.SearchStrategy[str]:
    """A plausible value of ``option`` seven times in eight, else an arbitrary one."""
    own = {"--principle": PRINCIPLES, "--method": METHODS}.get(option, {})
    valid = own[command] if command in own else VALID.get(option, ANY_VALUE)
    return st.one_of(*[valid] * 7, ANY_VALUE)


def options_for(ws: Workspace) -> st.SearchStrategy[tuple[str, ...]]:
    store, schema = str(ws.store), str(ws.schema)
    data = str(HOSPITAL / "table2a.csv")
    published = str(ws.root / "published" / "release-1.csv")

    def command(base: tuple[str, ...], required: tuple[str, ...],
                *names: str) -> st.SearchStrategy[tuple[str, ...]]:
        name = base[0]

        @st.composite
        def build(draw: st.DrawFn) -> tuple[str, ...]:
            args = list(base)
            for option in required:
                args += [option, draw(value_of(name, option))]
            for option in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
                args += [option, draw(value_of(name, option))]
            return tuple(args)

        return build()

    def fresh(suffix: str = "") -> str:
        return str(ws.root / f"f-{uuid.uuid4().hex}{suffix}")

    return st.one_of(
        st.builds(lambda: ("release", data, "--store", store, "-o", fresh(), "--solver",
                           "heuristic")).flatmap(lambda base: command(
                               base, (), "--seed", "--time-limit", "--eligibility", "--format",
                               "--cost")),
        st.builds(lambda: ("init", "--store", fresh(".db"), "--schema", schema)).flatmap(
            lambda base: command(base, ("--m",), "--principle", "--lambda", "--tau",
                                 "--category-level", "--id-kind")),
        command(("eligibility",), ("--m", "--counts"), "--method", "--counterfeit-cost",
                "--deletion-cost", "--time-limit", "--seed"),
        st.builds(lambda: ("ldiv", str(HOSPITAL / "table1a.csv"), "--schema", schema, "-o",
                           fresh(".csv"))).flatmap(lambda base: command(
                               base, ("--l",), "--method", "--time-limit", "--seed",
                               "--workers", "--model")),
        command(("check", published, "--schema", schema), ("--principle",), "--k", "--l"),
        command(("audit", "--store", store), (), "--max-individuals", "--principle"),
        command(("audit", "--release", published, "--knowledge", str(ws.knowledge),
                 "--schema", schema), (), "--counterfeits", "--max-individuals"),
        st.builds(lambda: ("export", "--store", store, "-o", fresh())).flatmap(
            lambda base: command(base, (), "--release", "--format")),
        st.builds(lambda: ("compare", data, "--schema", schema, "--time-limit", "0.2", "-o",
                           fresh())).flatmap(lambda base: command(
                               base, ("--m", "--series"), "--seed")),
    )


@fuzz(60)
@given(data=st.data())
def test_random_option_values(ws: Workspace, data: st.DataObject) -> None:
    ws.run_on_store(*data.draw(options_for(ws)))
