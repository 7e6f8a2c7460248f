"""Command-line choices shared by the command modules: the enums of ``--eligibility``,
``--principle``, ``--cost``, ``--id-kind``, ``--solver``, ``--format``, their defaults and
the limits of ``--time-limit`` and ``--seed``.

They are separate from the commands (:mod:`republish.cli.store_commands` defines ``init``,
``release``, ``verify``, ``history``; :mod:`republish.cli.compare` and others take the same
options) so that a command module imports the choices without importing another command
group. Light on purpose: ``--help`` imports this module. Every name here is also
importable from :mod:`republish.cli.store_commands`.
"""

from __future__ import annotations

from enum import StrEnum

from republish.api import defaults


class Eligibility(StrEnum):
    counterfeit = "counterfeit"
    delete = "delete"
    hybrid = "hybrid"


#: The principles of the registry (:func:`republish.principles.catalog.principle_names`,
#: written out so that ``--help`` does not import the catalog; a test compares them).
PRINCIPLES = ("m-invariance", "eps-inclusion", "m-distinct")
#: The principles of the registry, as command-line choices.
Principle = StrEnum(  # type: ignore[misc]
    "Principle", {name.replace("-", "_"): name for name in PRINCIPLES})


class Cost(StrEnum):
    perimeter = "perimeter"
    ncp = "ncp"


class IdKind(StrEnum):
    integer = "integer"
    text = "text"


class SolverMode(StrEnum):
    heuristic = "heuristic"
    auto = "auto"
    exact = "exact"


class Format(StrEnum):
    csv = "csv"
    parquet = "parquet"


class TableFormat(StrEnum):
    """How a command prints its table on stdout: ``table`` (for people), ``csv``, ``json``."""

    table = "table"
    csv = "csv"
    json = "json"


#: The API's defaults (:mod:`republish.api.defaults`) as command-line choices.
DEFAULT_ELIGIBILITY = Eligibility(defaults.ELIGIBILITY)
DEFAULT_SOLVER = SolverMode(defaults.SOLVER)
DEFAULT_COST = Cost(defaults.COST)

#: Longest --time-limit accepted (seconds): a longer one is a typo, not a setting.
MAX_TIME_LIMIT = 7 * 24 * 3600.0
#: Largest --seed (the solvers take 32-bit seeds).
MAX_SEED = 2**31 - 1
