"""republish: privacy-preserving re-publication of dynamic microdata.

The Python API in one import::

    import republish

    schema = republish.load_schema("schema.toml")
    table = republish.load_table("T1.csv", schema)
    first = republish.publish_m_invariant(table, schema, m=4)       # a verified release
    second = republish.publish_m_invariant(t2, schema, 4, first.state)
    print(second.certificate.status, second.summary())

    with republish.ReleaseStore.init("S.db", schema, 4) as store:   # a kept history
        store.append_step(republish.publish_m_invariant(table, schema, 4, store.state()))

Core: schema (:mod:`republish.schema`), tables (:mod:`republish.tables`), generalization
(:mod:`republish.generalization`), principles as verifiers (:mod:`republish.principles`,
:mod:`republish.principles.catalog`), releases (:mod:`republish.release`), the release
store (:mod:`republish.store`), metrics (:mod:`republish.metrics`). Exact models live in
:mod:`republish.models`, the papers' algorithms in :mod:`republish.heuristics`,
orchestration in :mod:`republish.solver`. The publishing functions are loaded on first use
(this package root is the API facade; the core modules never import the solver).
"""

from __future__ import annotations

import importlib
from typing import Any

from republish.errors import RepublishError
from republish.schema import Hierarchy, QIAttribute, Schema, load_schema, make_schema
from republish.tables import load_table

__version__ = "0.1.0"

#: Public names loaded on first access: name -> (module, attribute).
_LAZY = {
    "publish": ("republish.solver.publish", "publish"),
    "publish_m_invariant": ("republish.solver.m_invariance", "publish_m_invariant"),
    "publish_m_distinct": ("republish.solver.m_distinct", "publish_m_distinct"),
    "publish_eps_inclusive": ("republish.solver.eps_inclusion", "publish_eps_inclusive"),
    "publish_l_diverse": ("republish.solver.ldiversity", "publish_l_diverse"),
    "SolveOptions": ("republish.solver.options", "SolveOptions"),
    "StepResult": ("republish.solver.release_step", "StepResult"),
    "ReleaseStore": ("republish.store", "ReleaseStore"),
    "PublisherState": ("republish.state", "PublisherState"),
    "principle": ("republish.principles.catalog", "principle"),
    "verify_release": ("republish.principles", "verify_release"),
    "load_adult": ("republish.datasets", "load_adult"),
    "synthetic_census": ("republish.datasets", "synthetic_census"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'republish' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Hierarchy",
    "PublisherState",
    "QIAttribute",
    "ReleaseStore",
    "RepublishError",
    "Schema",
    "SolveOptions",
    "StepResult",
    "load_adult",
    "load_schema",
    "load_table",
    "make_schema",
    "principle",
    "publish",
    "publish_eps_inclusive",
    "publish_l_diverse",
    "publish_m_distinct",
    "publish_m_invariant",
    "synthetic_census",
    "verify_release",
]
