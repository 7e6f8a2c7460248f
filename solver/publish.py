"""Publish the next release of any principle: the solver half of the principle registry.

:func:`publish` looks up the principle's middle in ``republish.solver.<name>`` (the
module named after the principle, ``m-invariance`` -> :mod:`republish.solver.m_invariance`,
which defines ``MIDDLE``) and runs it inside the one release skeleton,
:func:`republish.solver.release_step.run_release_step`. The verification half is
:mod:`republish.principles.catalog`.
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd

from republish.parameters import Eligibility
from republish.principles.catalog import PrincipleOptions, principle
from republish.schema import Schema
from republish.solver.options import SolveOptions
from republish.solver.phase_timer import Progress
from republish.solver.release_step import Middle, StepResult, run_release_step
from republish.state import PublisherState

__all__ = ["middle", "publish"]


def middle(name: str) -> Middle:
    """The release middle of principle ``name`` (``MIDDLE`` of its solver module)."""
    principle(name)  # a clear error for an unknown name
    module = importlib.import_module(f"republish.solver.{name.replace('-', '_')}")
    found: Middle = module.MIDDLE
    return found


def publish(
    table: pd.DataFrame,
    schema: Schema,
    name: str,
    options: PrincipleOptions,
    previous: PublisherState | None = None,
    *,
    solve: SolveOptions | None = None,
    eligibility: Eligibility = "counterfeit",
    rng: np.random.Generator | None = None,
    number: int | None = None,
    progress: Progress | None = None,
    validated: bool = False,
    new_population: bool = False,
) -> StepResult:
    """Compute and verify the next release of principle ``name`` with ``options`` (see
    :func:`~republish.solver.release_step.run_release_step` for the parameters)."""
    return run_release_step(
        name, middle(name), table, schema, options, previous, solve=solve,
        eligibility=eligibility, rng=rng, number=number, progress=progress,
        validated=validated, new_population=new_population,
    )
