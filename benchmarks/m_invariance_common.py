"""Shared pieces of the m-invariance experiment scripts (issue 19, items 1-4).

* :func:`series_table` -- the census-like table with a chosen SA distribution;
* :func:`run_series` -- publish a dynamic series, one record per release (counterfeits,
  deferrals, buckets/signatures, wall and CPU time), optionally keeping the releases;
* :class:`PhaseHook` -- a benchmark-only wrapper around the product's balancing and
  eligibility phases (``solver/m_invariance.py`` is not edited): it records balancing's
  deficit slots per value and, for the ``reserve`` policy, holds surplus new rows back as
  deferrals (:mod:`republish.heuristics.reserve_deferral`, a deviation from the paper);
  with the model pipelines it also records the counts model's certificate
  (``counts_status`` ...) and :func:`deficit_bound` (``forced``);
* :func:`deficit_bound` -- the counterfeits the inherited state forces on any release.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

import republish.solver.m_invariance as mi
from republish.datasets import dynamic_series, synthetic_census
from republish.heuristics.balancing import forced_counterfeits
from republish.heuristics.reserve_deferral import DemandTracker, rare_values, reserve_rows
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState

MACHINE = "x86_64, 2 cores, shared"
POLICIES = ("assign", "reuse", "exact", "reserve", "reserve-paper", "reserve-rare")


class PhaseHook:
    """Wraps ``balance_buckets`` and ``_make_eligible`` of ``republish.solver.m_invariance``
    for one series. Records per release the deficit slots of balancing (new rows used +
    counterfeits) and the leftover; with ``tracker`` set, holds back from the leftover the
    rows :func:`~republish.heuristics.reserve_deferral.reserve_rows` chooses (rows held
    back the longest are released first), before the product's eligibility step runs on
    the rest."""

    def __init__(self, tracker: DemandTracker | None, min_supply: float = 0.0) -> None:
        self.tracker = tracker
        self.min_supply = min_supply
        self.release: dict[str, Any] = {}
        self.since: dict[str, int] = {}  # id -> release it was first held back
        self.number = 0

    def balance(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(counts: Any, available: Any) -> Any:
            result = original(counts, available)
            slots: dict[str, int] = {}
            for part in (*result.from_new, *result.counterfeits):
                for value, count in part.items():
                    slots[value] = slots.get(value, 0) + int(count)
            faked: dict[str, int] = {}
            for part in result.counterfeits:
                for value, count in part.items():
                    faked[value] = faked.get(value, 0) + int(count)
            self.release["counterfeit_values"] = ";".join(
                f"{v}:{c}" for v, c in sorted(faked.items(), key=lambda i: (-i[1], i[0])))
            self.release["demand"] = sum(slots.values())
            self.release["supply"] = int(sum(int(c) for c in available.values()))
            if self.tracker is not None:
                self.tracker.update(slots)
            return result
        return wrapped

    def eligible(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(table: pd.DataFrame, schema: Schema, rows: np.ndarray, m: int,
                    method: Any, domain: list[str]) -> Any:
            self.release["leftover"] = len(rows)
            held_rows = np.zeros(0, dtype=np.int64)
            if self.tracker is not None and len(rows):
                values = table[schema.sensitive].to_numpy()[rows].astype(str)
                ids = table["id"].to_numpy()[rows].astype(str)
                leftover = pd.Series(values).value_counts().to_dict()
                rare = rare_values(
                    table[schema.sensitive].astype(str).value_counts().to_dict(),
                    self.release.get("supply", len(rows)), self.min_supply,
                ) if self.min_supply > 0 else set()
                held = reserve_rows(leftover, self.tracker.targets(rare), m)
                # hold the newest rows: the rows held back longest are published first
                first_held = np.asarray([self.since.get(i, self.number) for i in ids])
                chosen = []
                for value, amount in held.items():
                    candidates = np.flatnonzero(values == value)
                    candidates = candidates[np.argsort(-first_held[candidates], kind="stable")]
                    chosen.append(candidates[:amount])
                if chosen:
                    picked = np.concatenate(chosen)
                    held_rows = rows[picked]
                    rows = np.delete(rows, picked)
                    since = {i: self.since.get(i, self.number) for i in ids[picked]}
                    self.since = since
                else:
                    self.since = {}
                self.release["held"] = len(held_rows)
                self.release["oldest_held"] = (
                    self.number - min(self.since.values()) if self.since else 0)
            solution, deferred = original(table, schema, rows, m, method, domain)
            if len(held_rows):
                deferred = np.sort(np.concatenate([deferred, held_rows]))
            return solution, deferred
        return wrapped

    @contextmanager
    def installed(self) -> Iterator[PhaseHook]:
        balance, eligible, decide = mi.balance_buckets, mi._make_eligible, mi.decide_counts
        mi.balance_buckets = self.balance(balance)  # type: ignore[assignment]
        mi._make_eligible = self.eligible(eligible)  # type: ignore[assignment]
        mi.decide_counts = self.counts(decide)  # type: ignore[assignment]
        try:
            yield self
        finally:
            mi.balance_buckets, mi._make_eligible = balance, eligible  # type: ignore[assignment]
            mi.decide_counts = decide  # type: ignore[assignment]

    def counts(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Records the bucket-assignment (counts) model's certificate of the release (the
        model pipelines, ``mode`` ``auto``/``exact``, only): its status (``OPTIMAL`` when
        this release's counterfeits + deferrals are proven minimal for the state it
        inherits), objective, bound, the greedy phases' objective and the model's time.
        The whole-release model that runs after it may overwrite the release
        certificate's stage (a), so this is the one place the counts' proof is kept.
        Also records :func:`deficit_bound` of the state the release inherits."""
        def wrapped(signatures: Any, counts: Any, available: Any, *args: Any,
                    **kwargs: Any) -> Any:
            self.release.update(deficit_bound(signatures, counts, available))
            decided = original(signatures, counts, available, *args, **kwargs)
            certificate = decided.certificate
            self.release["counts_status"] = certificate.status
            self.release["counts_objective"] = float(certificate.objective)
            self.release["counts_bound"] = (
                float("nan") if certificate.bound is None else float(certificate.bound))
            self.release["counts_greedy"] = (
                float("nan") if certificate.heuristic_objective is None
                else float(certificate.heuristic_objective))
            self.release["counts_model_s"] = float(certificate.times.get("model", 0.0))
            assignment = decided.assignment
            self.release["counts_counterfeits"] = int(
                sum(sum(part.values()) for part in assignment.counterfeits)
                + sum(assignment.eligibility_counterfeits.values()))
            self.release["counts_deferrals"] = int(sum(assignment.deferrals.values()))
            return decided
        return wrapped


def deficit_bound(signatures: Any, counts: Any, available: Any) -> dict[str, int]:
    """The deficit slots the state leaves (``demand``: for each old bucket, k_b minus its
    rows of each signature value, k_b its largest count) and the counterfeits they force:
    ``forced`` = sum over values v of max(0, deficit slots of v - new rows of v). Every
    bucket needs k_b >= its largest count rows of each value, and only new rows of v or
    counterfeits fill a slot of v, so no release (whatever its policy) publishes fewer
    counterfeits than ``forced`` from this state."""
    full = [{v: int(bucket.get(v, 0)) for v in signature}
            for signature, bucket in zip(signatures, counts, strict=True) if signature]
    demand = sum(max(bucket.values()) * len(bucket) - sum(bucket.values()) for bucket in full)
    # the product's certificate uses the same floor (a lower bound on objective (a))
    return {"demand": demand, "forced": forced_counterfeits(full, available),
            "supply": int(sum(int(c) for c in available.values()))}


_PHASES = re.compile(
    r"balancing counterfeits (\d+); eligibility .*?: (\d+) counterfeits, (\d+) deferrals")


def phase_counts(detail: str) -> tuple[int, int, int]:
    """(balancing counterfeits, eligibility counterfeits, eligibility deferrals) from a
    heuristic release certificate's detail; (-1, -1, -1) when absent (model pipelines)."""
    found = _PHASES.search(detail)
    return tuple(int(g) for g in found.groups()) if found else (-1, -1, -1)  # type: ignore[return-value]


def series_table(rows: int, seed: int, distribution: str,
                 sensitive: str = "occupation") -> tuple[pd.DataFrame, Schema]:
    """The census-like table; ``sensitive="income"`` is the paper's SAL analogue."""
    return synthetic_census(rows, seed=seed, sensitive=sensitive,
                            sensitive_distribution=distribution)


def run_series(
    table: pd.DataFrame, schema: Schema, initial: int, r: int, m: int, seed: int,
    policy: str = "assign", max_releases: int | None = None, time_limit: float = 5.0,
    keep: Callable[[int, pd.DataFrame, Any], None] | None = None, label: str = "",
    eligibility: str = "counterfeit", reserve_factor: float = 2.0,
) -> list[dict[str, object]]:
    """Publish ``dynamic_series(table, initial, r, ...)`` with ``policy`` (``assign``: the
    paper's phases, ``mode='heuristic'``; ``reuse``: the same with ``assign="reuse"``
    (:mod:`republish.heuristics.assign_reuse`);
    ``exact``: ``mode='exact'`` with ``time_limit`` s per release; ``reserve``: ``reuse``
    plus the reserve deferrals of :class:`PhaseHook` with ``reserve_factor``;
    ``reserve-paper``: the same on the paper's Assign; ``reserve-rare``: ``reserve`` that
    also holds back every leftover row of a value expected less than twice among a
    release's new rows). ``keep(number,
    microdata, result)`` sees every release (e.g. to measure query error)."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: use one of {POLICIES}")
    releases = 1 + (len(table) - initial) // r
    if max_releases is not None:
        releases = min(releases, max_releases)
    series = dynamic_series(table, initial, r, releases, seed=seed)
    state: PublisherState | None = None
    rng = np.random.default_rng(seed)
    records: list[dict[str, object]] = []
    mode = "exact" if policy == "exact" else "heuristic"
    assign = "reuse" if policy in ("reuse", "reserve", "reserve-rare") else "paper"
    hook = PhaseHook(DemandTracker(factor=reserve_factor) if policy.startswith("reserve")
                     else None, min_supply=2.0 if policy == "reserve-rare" else 0.0)
    for number, microdata in enumerate(series, start=1):
        hook.number, hook.release = number, {}
        cpu0, wall0 = time.process_time(), time.perf_counter()
        with hook.installed():
            result = publish_m_invariant(
                microdata, schema, m, state, rng=rng, validated=True, mode=mode,  # type: ignore[arg-type]
                time_limit=time_limit, assign=assign, eligibility=eligibility,  # type: ignore[arg-type]
            )
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        state = result.state
        times = result.certificate.times
        balancing_cf, eligibility_cf, eligibility_def = phase_counts(result.certificate.detail)
        records.append({
            "label": label, "policy": policy, "m": m, "r": r, "release": number,
            "rows": result.rows, "new": result.new, "deleted": result.deleted,
            "counterfeits": result.counterfeits, "deferred": result.deferred,
            "balancing_counterfeits": balancing_cf, "eligibility_counterfeits": eligibility_cf,
            "eligibility_deferrals": eligibility_def, "eligibility": eligibility,
            "reserve_factor": reserve_factor if hook.tracker is not None else 0.0,
            "demand": hook.release.get("demand", -1), "supply": hook.release.get("supply", -1),
            "leftover": hook.release.get("leftover", -1), "held": hook.release.get("held", 0),
            "oldest_held": hook.release.get("oldest_held", 0),
            "counterfeit_values": hook.release.get("counterfeit_values", ""),
            "groups": result.groups, "signatures": len(state.signatures),
            "mean_perimeter": result.mean_perimeter, "wall_s": wall, "cpu_s": cpu,
            "verify_s": times.get("verify", 0.0), "status": result.certificate.status,
            "status_a": _stage_status(result.certificate, 0),
            "counts_status": hook.release.get("counts_status", ""),
            "counts_objective": hook.release.get("counts_objective", float("nan")),
            "counts_bound": hook.release.get("counts_bound", float("nan")),
            "counts_greedy": hook.release.get("counts_greedy", float("nan")),
            "counts_counterfeits": hook.release.get("counts_counterfeits", -1),
            "counts_deferrals": hook.release.get("counts_deferrals", -1),
            "counts_model_s": hook.release.get("counts_model_s", float("nan")),
            "forced": hook.release.get("forced", -1),
            "load_average": os.getloadavg()[0],
        })
        if keep is not None:
            keep(number, microdata, result)
        series[number - 1] = microdata.iloc[:0]
        counts_note = (f", counts model {hook.release['counts_status']} "
                       f"({hook.release['counts_objective']:g}, bound "
                       f"{hook.release['counts_bound']:g})"
                       if "counts_status" in hook.release else "")
        print(f"{label} {policy} m={m} r={r} release {number}/{len(series)}: "
              f"{result.counterfeits} counterfeits ({balancing_cf} balancing), "
              f"{result.deferred} deferred, {len(state.signatures)} signatures, "
              f"{wall:.2f} s{counts_note}", flush=True)
    return records


def _stage_status(certificate: Any, stage: int) -> str:
    """The status of a lexicographic certificate's stage (``""`` when it has none)."""
    stages = getattr(certificate, "stages", ())
    return str(stages[stage].status) if len(stages) > stage else ""


def counterfeit_summary(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Max, mean and zero-count of counterfeits per ``keys``; release 1 included (as the
    paper's Fig. 5 plots every timestamp)."""
    grouped = results.groupby(keys, sort=False)
    return pd.DataFrame({
        "releases": grouped["release"].count(),
        "max": grouped["counterfeits"].max(),
        "mean": grouped["counterfeits"].mean().round(2),
        "zero": grouped["counterfeits"].apply(lambda c: int((c == 0).sum())),
        "total": grouped["counterfeits"].sum(),
        "final_signatures": grouped["signatures"].last(),
        "median_wall_s": grouped["wall_s"].median().round(2),
    }).reset_index()


def markdown(frame: pd.DataFrame) -> str:
    columns = list(frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def save_figure(figure: Any, path: Any, dpi: int = 110) -> None:
    """Lay out, write (creating the folder) and close a matplotlib figure."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
