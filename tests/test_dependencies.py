"""The product runs on its declared dependencies: no module imports scipy, scikit-learn,
pycanon or hypothesis (test and benchmark extras only), and the connected components the
joint audit used scipy for are computed in numpy, equal to networkx's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.audit.joint_model import component_labels

BLOCKED = ("scipy", "sklearn", "pycanon", "hypothesis")


def test_every_module_imports_without_the_extras() -> None:
    script = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BLOCKED!r}:
                    raise ImportError(f"{{name}} is not a dependency of the product")
                return None
        sys.meta_path.insert(0, Block())
        import republish, republish.heuristics, republish.models, republish.solver
        names = set()
        for package in (republish, republish.heuristics, republish.models, republish.solver):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                importlib.import_module(info.name)
                names.add(info.name)
        assert "republish.models.whole_release_slots" in names, sorted(names)
        assert "republish.audit.joint_model" in names
        print("imported", len(names))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("imported")


@settings(max_examples=80, deadline=None)
@given(size=st.integers(1, 40), edges=st.lists(st.tuples(st.integers(0, 39),
                                                          st.integers(0, 39)), max_size=60))
def test_component_labels_equal_networkx_components(size: int,
                                                    edges: list[tuple[int, int]]) -> None:
    edges = [(a % size, b % size) for a, b in edges]
    tails = np.array([a for a, _ in edges], dtype=np.int64)
    heads = np.array([b for _, b in edges], dtype=np.int64)
    label = component_labels(size, tails, heads)
    graph = nx.Graph()
    graph.add_nodes_from(range(size))
    graph.add_edges_from(edges)
    expected = {frozenset(c) for c in nx.connected_components(graph)}
    found: dict[int, set[int]] = {}
    for node, lab in enumerate(label.tolist()):
        found.setdefault(lab, set()).add(node)
    assert {frozenset(c) for c in found.values()} == expected
