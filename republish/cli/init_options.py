"""``republish init``: the options of each principle from the command line.

One builder per principle, looked up by name in :data:`BUILDERS`; each refuses the flags of
the other principles. The options objects are those of :mod:`republish.principles.catalog`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from republish.errors import ParameterError

if TYPE_CHECKING:  # the principles import pandas and networkx: loaded by the builders
    from republish.principles.catalog import PrincipleOptions

__all__ = ["BUILDERS", "InitFlags"]


@dataclass(frozen=True)
class InitFlags:
    m: int | None
    lam: int | None
    tau: int
    categories: Path | None
    category_level: int | None
    extras: bool
    transitions: Path | None
    strict: bool


def _refuse(flags: InitFlags, principle: str, *names: str) -> None:
    given = {
        "--lambda": flags.lam is not None, "--tau": flags.tau != 1,
        "--categories": flags.categories is not None,
        "--category-level": flags.category_level is not None, "--extras": flags.extras,
        "--transitions": flags.transitions is not None, "--strict": flags.strict,
    }
    owner = {"--lambda": "eps-inclusion", "--tau": "eps-inclusion",
             "--categories": "eps-inclusion", "--category-level": "eps-inclusion",
             "--extras": "eps-inclusion", "--transitions": "m-distinct", "--strict": "m-distinct"}
    wrong = [name for name in names if given[name]]
    if wrong:
        raise ParameterError(
            f"{', '.join(wrong)} need --principle {owner[wrong[0]]} (this store would be "
            f"{principle}).")


def _m_invariance(flags: InitFlags) -> tuple[PrincipleOptions, str]:
    from republish.principles.catalog.m_invariance import MInvarianceOptions

    _refuse(flags, "m-invariance", "--lambda", "--tau", "--categories", "--category-level",
            "--extras", "--transitions", "--strict")
    if flags.m is None:
        raise ParameterError("--m is required for m-invariance (e.g. --m 10).")
    options = MInvarianceOptions(flags.m)
    return options, f"m = {options.m}, principle m-invariance"


def _eps_inclusion(flags: InitFlags) -> tuple[PrincipleOptions, str]:
    from republish.categories import SACategories
    from republish.principles.catalog.eps_inclusion import EpsInclusionOptions

    _refuse(flags, "eps-inclusion", "--transitions", "--strict")
    if flags.lam is None:
        raise ParameterError("--principle eps-inclusion needs --lambda (categories per group).")
    if flags.category_level is not None and flags.categories is None:
        raise ParameterError("--category-level needs --categories (an ARX hierarchy file).")
    mapping = SACategories.identity()
    if flags.categories is not None:
        mapping = (SACategories.from_csv(flags.categories) if flags.category_level is None
                   else SACategories.from_hierarchy(flags.categories, flags.category_level))
    epsilon = flags.lam * flags.tau
    if flags.m is not None and flags.m != epsilon:
        raise ParameterError(f"--m {flags.m} differs from ε = λ·τ = {epsilon}; drop --m.")
    options = EpsInclusionOptions(flags.lam, flags.tau, mapping, flags.extras)
    return options, (f"ε = λ·τ = {flags.lam}·{flags.tau} = {options.m}, principle "
                     f"eps-inclusion, categories {mapping.source}")


def _m_distinct(flags: InitFlags) -> tuple[PrincipleOptions, str]:
    from republish.principles.catalog.m_distinct import MDistinctOptions
    from republish.transitions import read_transitions

    _refuse(flags, "m-distinct", "--lambda", "--tau", "--categories", "--category-level",
            "--extras")
    if flags.m is None:
        raise ParameterError("--m is required for m-distinct (e.g. --m 4).")
    if flags.transitions is None:
        raise ParameterError(
            "--principle m-distinct needs --transitions T.csv (columns from,to and optionally "
            "probability); an empty relation (header only) is m-invariance.")
    model = read_transitions(flags.transitions)
    options = MDistinctOptions(flags.m, model, flags.strict)
    largest = max((len(model.cus(v)) for v in model.values), default=1)
    extension = " with the §IV-B extension" if flags.strict else ""
    return options, (f"m = {options.m}, principle m-distinct{extension}, "
                     f"{len(model.values)} sensitive values in the transition model, "
                     f"largest candidate update set {largest}")


#: The options builder of every principle, by name.
BUILDERS: dict[str, Callable[[InitFlags], tuple[PrincipleOptions, str]]] = {
    "m-invariance": _m_invariance,
    "eps-inclusion": _eps_inclusion,
    "m-distinct": _m_distinct,
}
