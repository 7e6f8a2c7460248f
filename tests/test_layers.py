"""Layer rules of the design notes, checked on the source: dependencies point one way,
core <- heuristics, models <- solver <- api (the pandas-style API, republish.api) <- CLI,
and solver <- batch. Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"republish": "republish", "models": "republish.models",
           "heuristics": "republish.heuristics", "solver": "republish.solver"}
LAYERS = ("cli", "batch", "api", "solver", "models", "heuristics")

#: layer -> layers it must not import ("core" is every other republish module).
FORBIDDEN = {
    "core": {"cli", "batch", "api", "solver", "models", "heuristics"},
    "models": {"cli", "batch", "api", "solver", "heuristics"},
    "heuristics": {"cli", "batch", "api", "solver", "models"},
    "solver": {"cli", "batch", "api"},
    "batch": {"cli"},
    "api": {"cli", "batch", "heuristics", "models"},
    "cli": {"heuristics", "models"},
}


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "republish":
        return None
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "core"


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imported(path: Path, module: str) -> set[str]:
    names = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_every_module_is_found() -> None:
    found = modules()
    assert "republish.solver.release_step" in found
    assert "republish.models.grouping.formation" in found
    assert "republish.principles.catalog.m_invariance" in found


def test_no_layer_violation() -> None:
    known = modules()
    violations = []
    for module, path in known.items():
        own = layer(module)
        assert own is not None
        for name in imported(path, module):
            target = layer(name)
            if target is not None and target != own and target in FORBIDDEN[own]:
                violations.append(f"{module} ({own}) imports {name} ({target})")
    assert violations == [], "\n".join(sorted(violations))


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    """The checker itself: a core module importing the solver is reported."""
    path = tmp_path / "bad.py"
    path.write_text("def f():\n    from republish.solver.publish import publish\n")
    targets = {layer(n) for n in imported(path, "republish.bad")}
    assert "solver" in targets and "solver" in FORBIDDEN[layer("republish.bad") or ""]
