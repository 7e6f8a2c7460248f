"""republish: privacy-preserving re-publication of dynamic microdata.

The Python API in one import (README, "Python"; the defaults are the CLI's)::

    import republish

    with republish.Store.create("S.db", "schema.toml", m=4) as store:
        first = store.release("T1.csv", output="out/")     # verified, recorded, published
        print(first.certificate.status, first.summary["counterfeits"])
        print(store.history())                               # one row per release
        assert store.verify().ok
    table = republish.l_diverse("T.csv", "schema.toml", l=4).published
    republish.check(table, "schema.toml", l=4).ok

Lower level: ``publish_m_invariant(table, schema, m, previous_state)`` computes one
release without a store; :class:`ReleaseStore` is the store itself.

Core: schema (:mod:`republish.schema`), tables (:mod:`republish.tables`), generalization
(:mod:`republish.generalization`), principles as verifiers (:mod:`republish.principles`,
:mod:`republish.principles.catalog`), releases (:mod:`republish.release`), the release
store (:mod:`republish.store`), metrics (:mod:`republish.metrics`). Exact models live in
:mod:`republish.models`, the papers' algorithms in :mod:`republish.heuristics`,
orchestration in :mod:`republish.solver`, the pandas-style API in :mod:`republish.api`.
The API and the publishing functions are loaded on first use (this package root is the
facade; the core modules never import the solver or the API).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from republish.errors import RepublishError

if TYPE_CHECKING:  # loaded on first use: importing republish must not import pandas
    from republish.hierarchy import Hierarchy
    from republish.schema import QIAttribute, Schema, load_schema, make_schema
    from republish.tables import load_table

__version__ = "0.1.0"

#: Public names loaded on first access: name -> (module, attribute).
_LAZY = {
    "Hierarchy": ("republish.hierarchy", "Hierarchy"),
    "QIAttribute": ("republish.schema", "QIAttribute"),
    "Schema": ("republish.schema", "Schema"),
    "load_schema": ("republish.schema", "load_schema"),
    "make_schema": ("republish.schema", "make_schema"),
    "load_table": ("republish.tables", "load_table"),
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
    "Store": ("republish.api.store", "Store"),
    "Release": ("republish.api.store", "Release"),
    "ReleaseWarning": ("republish.api.store", "ReleaseWarning"),
    "l_diverse": ("republish.api.static", "l_diverse"),
    "check": ("republish.api.static", "check"),
    # ``republish.audit`` is the audit subpackage; the API's audit is ``run_audit``.
    "run_audit": ("republish.api.static", "audit"),
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
    "Release",
    "ReleaseStore",
    "ReleaseWarning",
    "RepublishError",
    "Schema",
    "SolveOptions",
    "StepResult",
    "Store",
    "check",
    "l_diverse",
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
    "run_audit",
    "synthetic_census",
    "verify_release",
]
