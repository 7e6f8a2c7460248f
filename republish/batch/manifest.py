"""Batch manifests: many instances of the publication problems, solved as one run.

A manifest is a TOML file::

    [defaults]                 # run options and parameters for every instance
    time_limit = 5             # seconds per instance
    seed = 0
    [defaults.eligibility]     # defaults for one problem only
    counterfeit_cost = 1

    [[instance]]
    problem = "eligibility"
    counts = [5, 3, 1, 1]
    m = [2, 3]                                       # a list is a sweep
    method = ["counterfeit", "delete", "hybrid"]     # 2 x 3 = 6 instances

Values of an instance override ``[defaults.<problem>]``, which override ``[defaults]``
(the "overrides"). A list is a sweep over its values, expanded as a Cartesian product
(the first field written varies slowest; inherited fields come after the instance's
own); a field whose value is itself a list (``counts``) is swept by a list of lists.
Data files are relative to the manifest. Every entry is
checked before anything runs and a :class:`~republish.errors.ParameterError` names the
entry and field of the first problem found.

Each expanded instance is a frozen :class:`BatchInstance` whose ``instance_id`` hashes
the problem, parameters, time limit, seed and worker count (so a resumed batch
recognises finished instances) and whose ``case_id`` hashes everything but the method
and solver settings (instances with equal ``case_id`` solve the same input).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from republish.batch.problem import RUN_OPTIONS, Param, Problem
from republish.batch.registry import problems
from republish.errors import ParameterError
from republish.excerpts import excerpt, read_toml

#: Time limit of an instance when neither the manifest nor the command line gives one.
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class BatchInstance:
    """One expanded instance: a problem, its parameters and its run options.

    ``params_json`` is the canonical JSON of the problem parameters (sorted keys; paths as
    written in the manifest, resolved against ``base_dir`` by :meth:`path`).
    """

    index: int
    entry: int
    problem: str
    params_json: str
    time_limit: float
    seed: int
    num_workers: int
    name: str
    base_dir: str
    instance_id: str
    case_id: str

    @property
    def parameters(self) -> dict[str, Any]:
        """The problem's parameters (defaults filled in; absent optional ones left out)."""
        loaded: dict[str, Any] = json.loads(self.params_json)
        return loaded

    def path(self, key: str) -> Path:
        """The file named by parameter ``key``, resolved against the manifest directory."""
        return Path(self.base_dir) / str(self.parameters[key])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchInstance:
        return cls(**dict(data))


@dataclass(frozen=True)
class Manifest:
    """The expanded instances of a manifest and how many duplicates were dropped."""

    path: str
    instances: tuple[BatchInstance, ...]
    duplicates: int = 0


def load_manifest(path: str | Path, time_limit: float | None = None) -> Manifest:
    """Read, validate and expand a manifest file.

    ``time_limit`` applies to instances for which neither ``[defaults]`` nor the entry sets
    one (else :data:`DEFAULT_TIME_LIMIT`).
    """
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"manifest {str(path)!r} not found.")
    data = read_toml(path, "a manifest", ParameterError)
    return parse_manifest(data, path.resolve().parent, source=str(path), time_limit=time_limit)


def parse_manifest(
    data: Mapping[str, Any],
    base_dir: str | Path,
    source: str = "manifest",
    time_limit: float | None = None,
) -> Manifest:
    """Validate and expand a parsed manifest (see the module docstring)."""
    unknown = sorted(set(data) - {"defaults", "instance"})
    if unknown:
        raise ParameterError(
            f"{source}: unknown top-level key(s) "
            f"{', '.join(_named(k, ('defaults', 'instance')) for k in unknown[:3])}; a manifest "
            "has [defaults] and [[instance]] entries only."
        )
    entries = data.get("instance")
    if not isinstance(entries, list) or not entries:
        raise ParameterError(f"{source}: no [[instance]] entries; add at least one.")
    defaults, per_problem = _split_defaults(data.get("defaults", {}), source)
    catalogue = problems()
    _check_defaults(defaults, per_problem, entries, catalogue, source)
    fallback = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    if not (math.isfinite(fallback) and fallback > 0):
        raise ParameterError(f"time limit {time_limit!r}: must be a positive number of seconds.")
    instances: list[BatchInstance] = []
    seen: set[str] = set()
    duplicates = 0
    for number, entry in enumerate(entries, start=1):
        for fields in _expand_entry(number, entry, defaults, per_problem, catalogue, source):
            instance = _instance(len(instances), number, fields, fallback, str(base_dir))
            if instance.instance_id in seen:
                duplicates += 1
                continue
            seen.add(instance.instance_id)
            instances.append(instance)
    manifest = Manifest(source, tuple(instances), duplicates)
    check_files(manifest)
    return manifest


def _split_defaults(
    raw: Any, source: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    if not isinstance(raw, Mapping):
        raise ParameterError(f"{source}: [defaults] must be a table.")
    catalogue = problems()
    defaults: dict[str, Any] = {}
    per_problem: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping):
            if key not in catalogue:
                raise ParameterError(
                    f"{source}: [defaults.{excerpt(key)}] names no problem"
                    f"{_hint(key, catalogue)}; problems are {sorted(catalogue)}."
                )
            per_problem[key] = dict(value)
        else:
            defaults[key] = value
    return defaults, per_problem


def _check_defaults(
    defaults: Mapping[str, Any],
    per_problem: Mapping[str, Mapping[str, Any]],
    entries: list[Any],
    catalogue: Mapping[str, Problem],
    source: str,
) -> None:
    named = {e.get("problem") for e in entries if isinstance(e, Mapping)}
    accepted = set(RUN_OPTIONS)
    for name in named:
        if isinstance(name, str) and name in catalogue:
            accepted |= set(catalogue[name].params)
    for key in defaults:
        if key not in accepted:
            raise ParameterError(
                f"{source}: [defaults], field {excerpt(key)}: no problem of this manifest "
                f"accepts it{_hint(key, accepted)}; accepted fields are {sorted(accepted)}."
            )
    for name, values in per_problem.items():
        allowed = set(RUN_OPTIONS) | set(catalogue[name].params)
        for key in values:
            if key not in allowed:
                raise ParameterError(
                    f"{source}: [defaults.{name}], field {excerpt(key)}: {name} does not "
                    f"accept it{_hint(key, allowed)}; it accepts {sorted(allowed)}."
                )


def _expand_entry(
    number: int,
    entry: Any,
    defaults: Mapping[str, Any],
    per_problem: Mapping[str, Mapping[str, Any]],
    catalogue: Mapping[str, Problem],
    source: str,
) -> list[dict[str, Any]]:
    where = f"{source}: [[instance]] {number}"
    if not isinstance(entry, Mapping):
        raise ParameterError(f"{where}: must be a table.")
    name = entry.get("problem")
    if name is None:
        raise ParameterError(
            f"{where}, field 'problem': missing; choose one of {sorted(catalogue)}."
        )
    if not isinstance(name, str) or name not in catalogue:
        raise ParameterError(
            f"{where}, field 'problem': unknown problem {excerpt(name)}"
            f"{_hint(name, catalogue)}; choose one of {sorted(catalogue)}."
        )
    spec = catalogue[name]
    missing = spec.missing()
    if missing is not None:
        raise ParameterError(
            f"{where}, field 'problem': problem {name!r} is not available in this version "
            f"({missing})."
        )
    where = f"{where} (problem {name!r})"
    fields = {**RUN_OPTIONS, **spec.params}
    for key in entry:
        if key != "problem" and key not in fields:
            raise ParameterError(
                f"{where}, field {excerpt(key)}: unknown field{_hint(key, fields)}; {name} "
                f"accepts {sorted(fields)}."
            )
    # The instance's own fields first, in the order written, then inherited ones.
    merged: dict[str, Any] = {}
    for layer in (entry, per_problem.get(name, {}), defaults):
        merged.update({k: v for k, v in layer.items() if k in fields and k not in merged})
    for key, param in fields.items():
        if key not in merged and param.required:
            raise ParameterError(f"{where}, field {key!r}: required ({param.help}).")
    axes: list[list[tuple[str, Any]]] = []
    for key, value in merged.items():
        param = fields[key]
        choices = value if _is_sweep(param, value) else [value]
        if not choices:
            raise ParameterError(f"{where}, field {key!r}: an empty list sweeps over nothing.")
        axes.append([(key, _checked(where, key, param, v)) for v in choices])
    expanded = []
    for combination in itertools.product(*axes):
        values = dict(combination)
        for key, param in spec.params.items():
            values.setdefault(key, param.default)
        if spec.check is not None:
            problem_found = spec.check(values)
            if problem_found is not None:
                field_name, message = problem_found
                raise ParameterError(f"{where}, field {field_name!r}: {message}")
        expanded.append({"problem": name, **values})
    return expanded


def _hint(key: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close match of ``key`` among ``choices``, else ``""``."""
    close = difflib.get_close_matches(str(key), sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _named(key: object, choices: Iterable[str]) -> str:
    return f"{excerpt(key)}{_hint(key, choices)}"


def _is_sweep(param: Param, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    return all(isinstance(v, list | Mapping) for v in value) if param.is_list else True


def _checked(where: str, key: str, param: Param, value: Any) -> Any:
    """``value`` converted to the parameter's type, or a ParameterError naming the field."""
    def bad(expected: str) -> ParameterError:
        return ParameterError(
            f"{where}, field {key!r}: expected {expected}, got {excerpt(repr(value))}.")

    if param.kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if param.kind in ("int", "float"):
        is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        is_number = is_int or (isinstance(value, numbers.Real) and not isinstance(value, bool))
        if not (is_int if param.kind == "int" else is_number):
            raise bad("an integer" if param.kind == "int" else "a number")
        number = int(value) if param.kind == "int" else float(value)
        if not math.isfinite(number):
            raise bad("a finite number")
        if param.minimum is not None and number < param.minimum:
            raise bad(f"a number >= {param.minimum:g}")
        if param.maximum is not None and number > param.maximum:
            raise bad(f"a number <= {param.maximum:g}")
        if key == "time_limit" and number <= 0:
            raise bad("a positive number of seconds")
        return number
    if param.kind in ("str", "path"):
        if not isinstance(value, str) or (param.kind == "path" and not value):
            raise bad("a string" if param.kind == "str" else "a file path")
        if param.choices and value not in param.choices:
            raise bad(f"one of {list(param.choices)}")
        return value
    if param.kind == "str_list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
        return list(value)
    return _counts(value, bad)


def _counts(value: Any, bad: Any) -> dict[str, int]:
    """``counts``: a list of row numbers (values named ``v1``, ``v2``...) or a table."""
    items = (
        list(value.items()) if isinstance(value, Mapping)
        else [(f"v{i}", v) for i, v in enumerate(value, start=1)] if isinstance(value, list)
        else None
    )
    if not items or any(
        not isinstance(c, int) or isinstance(c, bool) or c < 0 for _, c in items
    ):
        raise bad("a non-empty list (or table value = count) of non-negative integers")
    return {str(k): int(c) for k, c in items}


def _digest(payload: Any, length: int) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _instance(
    index: int, entry: int, fields: Mapping[str, Any], fallback: float, base_dir: str
) -> BatchInstance:
    # Absent optional parameters are left out, so adding one to a problem keeps the ids.
    values = {key: value for key, value in fields.items() if value is not None}
    problem_name = values.pop("problem")
    time_limit = float(values.pop("time_limit", fallback))
    num_workers = int(values.pop("num_workers", RUN_OPTIONS["num_workers"].default))
    name = str(values.pop("name", ""))
    seed = int(values.pop("seed", RUN_OPTIONS["seed"].default))
    params_json = json.dumps(values, sort_keys=True)
    identity = {"problem": problem_name, "params": values, "seed": seed}
    instance_id = _digest({**identity, "time_limit": time_limit, "num_workers": num_workers}, 16)
    case = {k: v for k, v in values.items() if k != "method"}
    case_id = _digest({**identity, "params": case}, 12)
    return BatchInstance(
        index=index, entry=entry, problem=problem_name, params_json=params_json,
        time_limit=time_limit, seed=seed, num_workers=num_workers, name=name,
        base_dir=base_dir, instance_id=instance_id, case_id=case_id,
    )


def check_files(manifest: Manifest) -> None:
    """Every data file an instance names exists (checked before the batch starts)."""
    catalogue = problems()
    for instance in manifest.instances:
        spec = catalogue[instance.problem]
        params = instance.parameters
        for key, param in spec.params.items():
            if param.kind == "path" and params.get(key) and not instance.path(key).is_file():
                raise ParameterError(
                    f"{manifest.path}: [[instance]] {instance.entry} (problem "
                    f"{instance.problem!r}), field {key!r}: file "
                    f"{str(instance.path(key))!r} not found."
                )
