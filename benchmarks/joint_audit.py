"""The joint adversary (issue 20): leak rates of small random series, and audit time at scale.

``leaks``: random small series as in the issue (7 people, 3 releases, 5 SA values, random
transitions or none, QIs random), published by the paper-faithful release step and by the
guarded one (``history=`` turns on :mod:`republish.solver.joint_guard`), for m-Distinct
(m = 2, 3) and ε-inclusion (λ = 2, τ = 1) with and without extras. A series *passes*
when every release is produced (the guard may refuse one: counted apart); it *leaks* when
the joint audit finds a forced value (a possible set of size 1), and is *below m* when a
set is smaller than m.

``scale``: the time of the joint audit (``republish audit --joint`` without the file
reading) on the m-invariant Adult series (first release 20,000 rows, r = 2,000, 6
releases; SA occupation) and on the census series (``--census-rows``, 3 releases).

    python benchmarks/joint_audit.py leaks [--series 120]
    python benchmarks/joint_audit.py scale [--m 4] [--census-rows 200000]
    python benchmarks/joint_audit.py scale-m-distinct [--m 4]
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from republish.audit.joint import joint_audit
from republish.audit.joint_model import joint_instance
from republish.errors import VerificationError
from republish.release import Release
from republish.schema import make_schema
from republish.solver.eps_inclusion import publish_eps_inclusive
from republish.solver.m_distinct import publish_m_distinct
from republish.transitions import TransitionModel

SCHEMA = make_schema("id", "sa", ["x", "y"])
VALUES = list("abcde")


def small_series(rng: np.random.Generator, model: TransitionModel | None
                 ) -> list[pd.DataFrame]:
    people = 7
    values = rng.choice(VALUES, people)
    x, y = rng.integers(0, 20, people), rng.integers(0, 20, people)
    tables = []
    for _ in range(3):
        present = np.sort(rng.choice(people, int(rng.integers(5, people + 1)), replace=False))
        tables.append(pd.DataFrame({"id": [f"p{i}" for i in present], "x": x[present],
                                    "y": y[present], "sa": values[present]}))
        if model is not None:
            values = np.array([rng.choice(sorted(model.cus(v))) if rng.random() < 0.5 else v
                               for v in values], dtype=object)
    return tables


def random_model(rng: np.random.Generator) -> TransitionModel:
    edges = {(VALUES[a], VALUES[b]) for a, b in rng.integers(0, 5, (4, 2)) if a != b}
    return TransitionModel.from_edges(sorted(edges), VALUES)


Publish = Callable[[pd.DataFrame, object, np.random.Generator, list[Release]], object]


def run_series(tables: list[pd.DataFrame], publish: Publish, rng: np.random.Generator
               ) -> tuple[str, list[Release]]:
    state, releases = None, []
    for table in tables:
        try:
            result = publish(table, state, rng, releases)
        except VerificationError as exc:
            return ("refused" if "joint guard" in str(exc) else "failed"), releases
        except Exception:  # noqa: BLE001 -- an unpublishable random series
            return "failed", releases
        state = result.state  # type: ignore[attr-defined]
        releases.append(result.release)  # type: ignore[attr-defined]
    return "published", releases


def leaks(series: int, seed: int) -> pd.DataFrame:
    records = []
    setups: list[tuple[str, int, bool, bool]] = [
        ("m-distinct", 2, False, False), ("m-distinct", 2, False, True),
        ("m-distinct", 3, False, False), ("m-distinct", 3, False, True),
        ("eps-inclusion", 2, True, False), ("eps-inclusion", 2, True, True),
        ("eps-inclusion", 2, False, False)]
    for principle, m, extras, guarded in setups:
        counts = {"published": 0, "refused": 0, "failed": 0, "forced": 0, "below_m": 0}
        start = time.perf_counter()
        for k in range(series):
            rng = np.random.default_rng(seed + k)
            model = random_model(rng) if principle == "m-distinct" else None
            tables = small_series(rng, model)

            def publish(table: pd.DataFrame, state: object, step_rng: np.random.Generator,
                        history: list[Release], m: int = m, model: TransitionModel | None
                        = model, extras: bool = extras, guarded: bool = guarded) -> object:
                if model is not None:
                    return publish_m_distinct(table, SCHEMA, m, model, state,  # type: ignore
                                              rng=step_rng, time_limit=2,
                                              history=history if guarded else None)
                return publish_eps_inclusive(table, SCHEMA, m, previous=state,  # type: ignore
                                             rng=step_rng, time_limit=2, allow_extras=extras,
                                             history=history if guarded else None)

            outcome, releases = run_series(tables, publish, rng)
            counts[outcome] += 1
            if outcome != "published":
                continue
            audit = joint_audit(joint_instance(releases, principle, model), m=m,
                                time_limit=60)
            counts["forced"] += int(audit.forced.any())
            counts["below_m"] += int(audit.flagged.any())
        records.append({"principle": principle, "m": m, "extras": extras,
                        "guarded": guarded, "series": series, **counts,
                        "seconds": round(time.perf_counter() - start, 1)})
        print(records[-1], flush=True)
    return pd.DataFrame(records)


def scale(m: int, census_rows: int, seed: int, time_limit: float) -> pd.DataFrame:
    from republish.datasets import dynamic_series, load_adult, synthetic_census
    from republish.solver.m_invariance import publish_m_invariant

    records = []
    inputs = []
    try:
        table, schema = load_adult(sensitive="occupation",
                                   qis=["age", "sex", "education", "native-country"])
        inputs.append(("adult", dynamic_series(table, 20_000, 2_000, 6, seed=seed), schema))
    except Exception as exc:  # noqa: BLE001 -- the shared data set is optional
        print(f"Adult skipped: {exc}")
    if census_rows:
        table, schema = synthetic_census(census_rows + 2 * census_rows // 20, seed)
        inputs.append(("census", dynamic_series(table, census_rows, census_rows // 20, 3,
                                                seed=seed), schema))
    for name, series, schema in inputs:
        start = time.perf_counter()
        cache = Path(tempfile.gettempdir()) / f"joint_audit_{name}_{len(series[0])}_{m}_{seed}.pkl"
        if cache.is_file():  # the published series of an earlier run (publishing is slow)
            releases = pickle.loads(cache.read_bytes())
        else:
            state, releases = None, []
            rng = np.random.default_rng(seed)
            for microdata in series:
                result = publish_m_invariant(microdata, schema, m, state, rng=rng,
                                             validated=True)
                state, releases = result.state, [*releases, result.release]
            cache.write_bytes(pickle.dumps(releases))
        published = time.perf_counter() - start
        start = time.perf_counter()
        instance = joint_instance(releases, "m-invariance")
        audit = joint_audit(instance, m=m, time_limit=time_limit)
        records.append({
            "series": name, "releases": len(releases), "rows": len(series[0]), "m": m,
            "cells": instance.cells, "components": audit.components,
            "largest_component": int(max(len(c) for c in instance.components())),
            "complete": audit.complete, "checked_share": audit.checked_share(),
            "flagged": int(audit.flagged.sum()), "cp_sat_calls": audit.cp_sat_calls,
            "audit_s": round(time.perf_counter() - start, 1),
            "publish_s": round(published, 1)})
        # Without the true values (files and a knowledge table without the SA column):
        # the first world of every component comes from CP-SAT.
        start = time.perf_counter()
        blind = joint_audit(joint_instance(releases, "m-invariance", with_truth=False), m=m,
                            time_limit=time_limit)
        records[-1].update({"blind_complete": blind.complete,
                            "blind_checked_share": blind.checked_share(),
                            "blind_flagged": int(blind.flagged.sum()),
                            "blind_cp_sat_calls": blind.cp_sat_calls,
                            "blind_audit_s": round(time.perf_counter() - start, 1)})
        print(records[-1], flush=True)
    return pd.DataFrame(records)


def scale_m_distinct(m: int, seed: int, time_limit: float, diameter: int = 5) -> pd.DataFrame:
    """m-Distinct on Adult (QIs of benchmarks/m_distinct_adult.py, blocks of ``diameter``
    occupations, 20,000 rows, -2,000/+2,000 and 5,000 value updates per release, 6
    releases), published without the guard; the joint audit's time and findings."""
    from republish.datasets import load_adult
    from republish.updates import (
        adult_occupation_order,
        adult_qi_updates,
        block_transitions,
        update_series,
    )

    table, schema = load_adult(sensitive="occupation",
                               qis=["age", "sex", "marital-status", "education"])
    model = block_transitions(adult_occupation_order(), diameter)
    cache = Path(tempfile.gettempdir()) / f"joint_audit_md_adult_{m}_{diameter}_{seed}.pkl"
    start = time.perf_counter()
    if cache.is_file():
        releases = pickle.loads(cache.read_bytes())
    else:
        series = update_series(table, schema, model, initial=20_000, deleted=2_000,
                               inserted=2_000, releases=6, sa_updates=5_000, seed=seed,
                               qi_updates=adult_qi_updates())
        state, releases = None, []
        rng = np.random.default_rng(seed)
        for microdata in series:
            result = publish_m_distinct(microdata, schema, m, model, state, rng=rng,
                                        validated=True)
            state, releases = result.state, [*releases, result.release]
        cache.write_bytes(pickle.dumps(releases))
    published = time.perf_counter() - start
    start = time.perf_counter()
    instance = joint_instance(releases, "m-distinct", model)
    audit = joint_audit(instance, m=m, time_limit=time_limit)
    record = {"series": f"adult m-distinct d={diameter}", "releases": len(releases),
              "rows": len(releases[0].assignment), "m": m, "cells": instance.cells,
              "components": audit.components,
              "largest_component": int(max(len(c) for c in instance.components())),
              "complete": audit.complete, "checked_share": audit.checked_share(),
              "flagged": int(audit.flagged.sum()), "forced": int(audit.forced.sum()),
              "cp_sat_calls": audit.cp_sat_calls,
              "audit_s": round(time.perf_counter() - start, 1),
              "publish_s": round(published, 1)}
    print(record, flush=True)
    return pd.DataFrame([record])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["leaks", "scale", "scale-m-distinct"])
    parser.add_argument("--series", type=int, default=120)
    parser.add_argument("--m", type=int, default=4)
    parser.add_argument("--census-rows", type=int, default=200_000)
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.what == "leaks":
        frame = leaks(args.series, args.seed)
    elif args.what == "scale":
        frame = scale(args.m, args.census_rows, args.seed, args.time_limit)
    else:
        frame = scale_m_distinct(args.m, args.seed, args.time_limit)
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
