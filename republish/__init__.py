"""republish: privacy-preserving re-publication of dynamic microdata.

Core: schema (:mod:`republish.schema`), tables (:mod:`republish.tables`), generalization
(:mod:`republish.generalization`), principles as verifiers (:mod:`republish.principles`),
releases (:mod:`republish.release`), metrics (:mod:`republish.metrics`). Exact models
live in :mod:`republish.models`, the papers' algorithms in :mod:`republish.heuristics`,
orchestration in :mod:`republish.solver`.
"""

from republish.errors import RepublishError
from republish.schema import Hierarchy, QIAttribute, Schema, load_schema, make_schema
from republish.tables import load_table

__version__ = "0.1.0"

__all__ = [
    "Hierarchy",
    "QIAttribute",
    "RepublishError",
    "Schema",
    "load_schema",
    "load_table",
    "make_schema",
]
