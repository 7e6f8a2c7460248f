"""Summaries and plots of a batch results table (``republish batch-report``).

* :func:`method_summary`: per problem and method, how many instances were solved to
  optimality, ended otherwise or failed, the mean gap and wall-time percentiles.
* :func:`optimum_comparison`: every answer against the optimum of its case. Rows with
  the same ``case_id`` (same input) and ``variant`` (same objective) are comparable;
  the optimum of a case is the objective of a row proven ``OPTIMAL``, and
  ``ratio = objective / optimum`` (1 when both are 0).
* :func:`plot_optimum_comparison` and :func:`plot_time_vs_size` write PNG figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

_SOLVED = ("OPTIMAL", "FEASIBLE", "HEURISTIC", "TIMEOUT")


def method_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (problem, method): counts by status, mean gap, time percentiles."""
    records = []
    for (problem, method), rows in frame.groupby(["problem", "method"], sort=True):
        status = rows["status"].astype(str)
        gaps = pd.to_numeric(rows["gap"], errors="coerce").dropna()
        times = pd.to_numeric(rows["wall_time_s"], errors="coerce").dropna()
        records.append({
            "problem": problem,
            "method": method,
            "instances": len(rows),
            "optimal": int((status == "OPTIMAL").sum()),
            "feasible": int(status.isin(("FEASIBLE", "HEURISTIC")).sum()),
            "timeout": int((status == "TIMEOUT").sum()),
            "infeasible": int((status == "INFEASIBLE").sum()),
            "error": int((status == "ERROR").sum()),
            "mean_gap": float(gaps.mean()) if len(gaps) else None,
            "time_p50_s": float(times.quantile(0.5)) if len(times) else None,
            "time_p90_s": float(times.quantile(0.9)) if len(times) else None,
            "time_max_s": float(times.max()) if len(times) else None,
        })
    return pd.DataFrame.from_records(records)


def _variant(frame: pd.DataFrame) -> pd.Series:
    if "variant" in frame:
        return frame["variant"].fillna(frame["problem"]).astype(str)
    return frame["problem"].astype(str)


def optimum_comparison(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with an answer whose case has a proven optimum, with ``optimum`` and ``ratio``."""
    data = frame.assign(
        variant=_variant(frame), objective=pd.to_numeric(frame["objective"], errors="coerce")
    )
    optimal = data[(data["status"] == "OPTIMAL") & data["objective"].notna()]
    optimum = optimal.groupby(["case_id", "variant"])["objective"].min().rename("optimum")
    answered = data[data["status"].isin(_SOLVED) & data["objective"].notna()]
    joined = answered.join(optimum, on=["case_id", "variant"], how="inner")
    ratio = np.where(
        joined["optimum"] > 0,
        joined["objective"] / joined["optimum"].where(joined["optimum"] > 0, 1.0),
        np.where(joined["objective"] > 0, np.inf, 1.0),
    )
    return joined.assign(ratio=ratio)


def comparison_summary(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per (problem, variant, method): cases, share at the optimum, mean and worst ratio."""
    records = []
    for (problem, variant, method), rows in comparison.groupby(
        ["problem", "variant", "method"], sort=True
    ):
        finite = rows["ratio"][np.isfinite(rows["ratio"])]
        records.append({
            "problem": problem,
            "variant": variant,
            "method": method,
            "cases": len(rows),
            "at_optimum": int(np.isclose(rows["objective"], rows["optimum"]).sum()),
            "mean_ratio": float(finite.mean()) if len(finite) else None,
            "max_ratio": float(rows["ratio"].max()),
            "mean_excess": float((rows["objective"] - rows["optimum"]).mean()),
        })
    return pd.DataFrame.from_records(records)


def plot_optimum_comparison(comparison: pd.DataFrame, path: str | Path) -> Path:
    """Per problem, answers not proven optimal against the optimum of their input.

    Log-log axes of ``objective + 1`` against ``optimum + 1`` (so zeros show); the
    diagonal is the optimum. Proven-optimal answers sit on it and are left out.
    """
    unproven = comparison[comparison["status"] != "OPTIMAL"]
    problems = sorted(unproven["problem"].unique()) or ["(none)"]
    figure, axes_row = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 4.6),
                                    squeeze=False)
    for axes, problem in zip(axes_row[0], problems, strict=True):
        rows = unproven[unproven["problem"] == problem]
        for (variant, method), part in rows.groupby(["variant", "method"], sort=True):
            axes.scatter(part["optimum"] + 1, part["objective"] + 1, s=18, alpha=0.7,
                         label=f"{variant.split('/')[-1]}: {method}")
        if len(rows):
            top = float(max(rows["optimum"].max(), rows["objective"].max())) + 1
            axes.plot([1, top], [1, top], color="grey", linewidth=0.8, linestyle="--")
            axes.set_xscale("log")
            axes.set_yscale("log")
            axes.legend(fontsize="x-small", loc="upper left")
        else:
            axes.text(0.5, 0.5, "every answer proven optimal", ha="center",
                      transform=axes.transAxes)
        axes.set_title(problem)
        axes.set_xlabel("optimum + 1")
        axes.set_ylabel("objective of the method + 1")
    figure.suptitle("Answers not proven optimal against the optimum of their input")
    return _save(figure, path)


def plot_time_vs_size(frame: pd.DataFrame, path: str | Path) -> Path:
    """Per problem, log-log scatter of wall time against input size, per method."""
    data = frame.assign(
        size=pd.to_numeric(frame["size"], errors="coerce"),
        wall_time_s=pd.to_numeric(frame["wall_time_s"], errors="coerce"),
    ).dropna(subset=["size", "wall_time_s"])
    data = data[(data["size"] > 0) & (data["wall_time_s"] > 0)]
    problems = sorted(data["problem"].unique()) or ["(none)"]
    figure, axes_row = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 4.6),
                                    squeeze=False)
    for axes, problem in zip(axes_row[0], problems, strict=True):
        rows = data[data["problem"] == problem]
        for method, part in rows.groupby("method", sort=True):
            axes.scatter(part["size"], part["wall_time_s"], s=18, alpha=0.7, label=method)
        if len(rows):
            axes.set_xscale("log")
            axes.set_yscale("log")
            axes.legend(fontsize="x-small", loc="upper left")
        axes.set_title(problem)
        axes.set_xlabel("instance size (input rows)")
        axes.set_ylabel("wall time per instance (s)")
    figure.suptitle("Time against size")
    return _save(figure, path)


def _save(figure: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
