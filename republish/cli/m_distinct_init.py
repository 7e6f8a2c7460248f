"""``republish init --principle m-distinct --transitions T.csv [--strict]`` (helper).

Called by :func:`republish.cli.store_commands.init`; keeps the m-Distinct parameters
(the transition model and the §IV-B extension flag) in the store's options.
"""

from __future__ import annotations

from pathlib import Path

from republish.cli.app import console
from republish.errors import ParameterError
from republish.identifiers import IdentifierKind
from republish.schema import load_schema
from republish.solver.m_distinct import store_options
from republish.store import ReleaseStore
from republish.transitions import read_transitions

__all__ = ["init_m_distinct"]


def init_m_distinct(
    store: Path, schema: Path, m: int | None, principle: str, transitions: Path | None,
    strict: bool, identifier_kind: IdentifierKind | None = None,
) -> None:
    """Create an m-Distinct store (see the module docstring)."""
    if principle != "m-distinct":
        raise ParameterError("--transitions and --strict need --principle m-distinct.")
    if m is None:
        raise ParameterError("--m is required for m-distinct (e.g. --m 4).")
    if transitions is None:
        raise ParameterError(
            "--principle m-distinct needs --transitions T.csv (columns from,to and optionally "
            "probability); an empty relation (header only) is m-invariance.")
    model = read_transitions(transitions)
    options = store_options(model, strict)
    ReleaseStore.init(store, load_schema(schema), m, principle, options,
                      identifier_kind=identifier_kind).close()
    largest = max((len(model.cus(v)) for v in model.values), default=1)
    extension = " with the §IV-B extension" if strict else ""
    console.print(
        f"created {store} (m = {m}, principle m-distinct{extension}, {len(model.values)} "
        f"sensitive values in the transition model, largest candidate update set {largest})")
