"""Figures and summary tables of the static l-diversity benchmarks.

Reads ``ldiv_adult_results.csv`` (:mod:`ldiv_adult`) and ``ldiv_scaling_results.csv``
(:mod:`ldiv_scaling`), writes PNGs in the spirit of the l-diversity paper's Figs. 2-6 to
``benchmarks/figures/`` and prints the Markdown tables of ``RESULTS.md``.

    /tmp/venv/bin/python benchmarks/ldiv_figures.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures"
METHODS = ["TP", "TP+", "Mondrian", "exact tuples"]
MARKERS = {"TP": "o", "TP+": "s", "Mondrian": "^", "exact tuples": "x"}


def _plot(frame: pd.DataFrame, x: str, y: str, title: str, ylabel: str, name: str,
          log: bool = False, extra: pd.Series | None = None) -> None:
    figure, axis = plt.subplots(figsize=(5.2, 3.6))
    table = frame.groupby([x, "method"])[y].mean().unstack("method")
    for method in METHODS:
        if method in table:
            axis.plot(table.index, table[method], marker=MARKERS[method], label=method)
    if extra is not None:
        axis.plot(extra.index, extra.values, linestyle="--", color="grey",
                  label="lower bound (Cor. 5.10)")
    axis.set_xlabel(x)
    axis.set_ylabel(ylabel)
    axis.set_title(title, fontsize=10)
    if log:
        axis.set_yscale("log")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(FIGURES / name, dpi=120)
    plt.close(figure)


def adult(frame: pd.DataFrame) -> None:
    d4 = frame[frame["d"] == 4]
    l6 = frame[frame["l"] == 6]
    _plot(d4, "l", "stars", "Adult (SA occupation), d = 4: average stars vs l (cf. Fig. 2)",
          "stars", "ldiv_stars_vs_l.png")
    _plot(l6, "d", "stars", "Adult, l = 6: average stars vs d (cf. Fig. 3)", "stars",
          "ldiv_stars_vs_d.png")
    bound = d4[d4["method"] == "TP"].groupby("l")["lower_bound"].mean()
    _plot(d4, "l", "suppressed", "Adult, d = 4: average suppressed tuples vs l",
          "suppressed tuples", "ldiv_suppressed_vs_l.png", extra=bound)
    _plot(d4, "l", "time_s", "Adult, d = 4: average time vs l (cf. Fig. 4)", "seconds",
          "ldiv_time_vs_l.png", log=True)
    _plot(l6, "d", "time_s", "Adult, l = 6: average time vs d (cf. Fig. 5)", "seconds",
          "ldiv_time_vs_d.png", log=True)

    print("Average stars (suppressed tuples) per d, l = 6:\n")
    cell = l6.groupby(["d", "method"]).agg(stars=("stars", "mean"),
                                           suppressed=("suppressed", "mean"))
    rows = ["| d | tables | " + " | ".join(METHODS) + " |", "|---|---:|" + "---:|" * len(METHODS)]
    for d, part in cell.groupby(level="d"):
        count = l6[(l6["d"] == d) & (l6["method"] == "TP")].shape[0]
        values = [f"{part.loc[(d, m), 'stars']:.0f} ({part.loc[(d, m), 'suppressed']:.0f})"
                  for m in METHODS]
        rows.append(f"| {d} | {count} | " + " | ".join(values) + " |")
    print("\n".join(rows))

    tp = frame[frame["method"] == "TP"].set_index(["qis", "l"])
    exact = frame[frame["method"] == "exact tuples"].set_index(["qis", "l"])
    joined = tp.join(exact[["suppressed", "status", "time_s"]], rsuffix="_exact")
    joined["excess"] = joined["suppressed"] - joined["suppressed_exact"]
    print("\nTP's phase, TP against the exact tuple optimum, per l (all 254 QI sets):\n")
    print("| l | phase 1 | phase 2 | phase 3 | TP optimal | max TP - OPT | max TP / OPT "
          "| exact OPTIMAL | max exact time (s) | mean TP time (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for l, part in joined.groupby(level="l"):  # noqa: E741
        phases = part["phase"].value_counts()
        positive = part[part["suppressed_exact"] > 0]
        ratio = (positive["suppressed"] / positive["suppressed_exact"]).max()
        print(f"| {l} | {phases.get(1, 0)} | {phases.get(2, 0)} | {phases.get(3, 0)} "
              f"| {(part['excess'] == 0).sum()} | {part['excess'].max()} | {ratio:.4f} "
              f"| {(part['status_exact'] == 'OPTIMAL').sum()} | {part['time_s_exact'].max():.2f} "
              f"| {part['time_s'].mean():.3f} |")


def scaling(frame: pd.DataFrame) -> None:
    figure, axis = plt.subplots(figsize=(5.2, 3.6))
    n = frame["n"] / 1000
    for column, label, marker in (("tp_time_s", "TP", "o"), ("tp_plus_time_s", "TP+", "s"),
                                  ("mondrian_time_s", "Mondrian", "^"),
                                  ("exact_time_s", "exact tuples", "x")):
        axis.plot(n, frame[column], marker=marker, label=label)
    axis.axhline(1.0, color="grey", linestyle="--", linewidth=0.8, label="1 s target (TP)")
    axis.set_xlabel("n (thousands)")
    axis.set_ylabel("seconds")
    axis.set_yscale("log")
    axis.set_title("Synthetic census, d = 4, l = 6: time vs n (cf. Fig. 6)", fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(FIGURES / "ldiv_time_vs_n.png", dpi=120)
    plt.close(figure)
    print("\n| n | QI classes | TP (s) | TP phase | TP |R| | lower bound | TP+ (s) "
          "| Mondrian (s) | exact (s) | exact status | exact |R| |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for row in frame.itertuples():
        print(f"| {row.n} | {row.classes} | {row.tp_time_s:.3f} | {row.tp_phase} "
              f"| {row.tp_suppressed} | {row.lower_bound} | {row.tp_plus_time_s:.3f} "
              f"| {row.mondrian_time_s:.3f} | {row.exact_time_s:.2f} | {row.exact_status} "
              f"| {row.exact_suppressed} |")


def main() -> None:
    FIGURES.mkdir(exist_ok=True)
    adult_file = HERE / "ldiv_adult_results.csv"
    scaling_file = HERE / "ldiv_scaling_results.csv"
    if adult_file.exists():
        adult(pd.read_csv(adult_file))
    if scaling_file.exists():
        scaling(pd.read_csv(scaling_file))


if __name__ == "__main__":
    main()
