"""Fig. 4 of the m-eligibility paper (§IV-A2): classifier accuracy after m-eligibility,
and the same utility-for-learning measure for m-invariant releases.

Needs scikit-learn, a benchmark-only dependency: ``pip install -e ".[bench]"``.

Part 1 (m-eligibility, the paper's setting): Adult columns workclass, occupation,
education, marital-status (the paper also uses relationship, which the ARX edition of Adult
lacks; marital-status, 2-eligible like relationship, stands in for it). The sensitive
attribute is the class; the three other columns are the features. ``occupation`` with
m = 10..14, ``marital-status`` with m = 3, 4, 5 (the paper's relationship values). The
table is made m-eligible by counterfeits (Algorithm 1), deletions (Algorithm 2), the hybrid
(Algorithm 3) and the random-counterfeit baseline (§IV-B); counterfeits are copies of
random rows with the sought value, deletions random rows of the value (the paper's §IV-A2
procedure). Two protocols:

* ``paper``: modify the whole table, then split 75 % / 25 % and test on the modified 25 %
  (the paper's description);
* ``clean``: split the original table first, modify the 75 % only, test on the untouched
  original 25 % (what a user of the published data meets).

Part 2 (m-invariance): a first m-invariant release (heuristic pipeline) of the 75 % split,
SA occupation, QIs age, sex, workclass, education, marital-status, m = 2..7; a classifier
of occupation is trained on the published rows (counterfeits included) with the
*interval-midpoint encoding*: every QI cell becomes the midpoint of the code interval it
covers (:func:`republish.generalization.parse_boxes`; numeric QIs their value, hierarchy
QIs their DFS leaf codes, a star the whole domain), and tested on the original codes of the
held-out 25 %. The midpoint of two hierarchy leaves can be a third leaf between them in
DFS order, so the *box encoding* is reported too: two features per QI, the interval's
ends (a test row: its code twice). m = 1 is the original training rows.

Classifiers: scikit-learn ``DecisionTreeClassifier(min_samples_leaf=20)`` and
``RandomForestClassifier(n_estimators=50, min_samples_leaf=5)`` on integer codes
(:func:`republish.tables.encode_qis`), ``--seeds`` splits averaged.

    nice -n 10 .venv/bin/python benchmarks/classifier_utility.py [--seeds 3]

Writes ``benchmarks/classifier_utility.csv`` and ``benchmarks/figures/classifier_utility.png``
(or, when either exists -- RESULTS.md cites them -- the first free ``..._2.csv`` and
``..._2.png``, ... beside them; ``--csv``/``--figure`` write exactly there) and prints
Markdown tables for RESULTS.md. ``--only-m-invariance`` keeps part 1 from ``--csv``
(default: the committed ``classifier_utility.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit("classifier_utility.py needs scikit-learn, a benchmark-only dependency: "
             'pip install -e ".[bench]"  (from the repository root)')

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from batch_throughput import markdown  # noqa: E402  (benchmarks/ is the script's folder)
from output_paths import free_paths  # noqa: E402

from republish.datasets import load_adult  # noqa: E402
from republish.generalization import Domain, parse_boxes  # noqa: E402
from republish.heuristics.eligibility import (  # noqa: E402
    greedy_hybrid,
    maximal_subset,
    minimal_superset,
    random_counterfeits,
)
from republish.problems.eligibility import EligibilitySolution  # noqa: E402
from republish.solver.m_invariance import publish_m_invariant  # noqa: E402
from republish.tables import encode_qis  # noqa: E402

HERE = Path(__file__).resolve().parent
PAPER_COLUMNS = ["workclass", "occupation", "education", "marital-status"]
SETTINGS = {"occupation": [10, 11, 12, 13, 14], "marital-status": [3, 4, 5]}
MINV_QIS = ["age", "sex", "workclass", "education", "marital-status"]


def classifiers(seed: int) -> dict[str, object]:
    return {"decision tree": DecisionTreeClassifier(min_samples_leaf=20, random_state=seed),
            "random forest": RandomForestClassifier(n_estimators=50, min_samples_leaf=5,
                                                    random_state=seed, n_jobs=1)}


def accuracy(model: object, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
             y_test: np.ndarray) -> float:
    model.fit(x_train, y_train)  # type: ignore[attr-defined]
    return float((model.predict(x_test) == y_test).mean())  # type: ignore[attr-defined]


def solve(method: str, counts: dict[str, int], m: int, seed: int) -> EligibilitySolution:
    if method == "counterfeits":
        return minimal_superset(counts, m)
    if method == "deletions":
        return maximal_subset(counts, m)
    if method == "hybrid":
        return greedy_hybrid(counts, m)
    return random_counterfeits(counts, m, seed)


def modify(x: np.ndarray, y: np.ndarray, solution: EligibilitySolution,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Delete random rows of a value, add copies of random rows of a value."""
    keep = np.ones(len(y), dtype=bool)
    extra: list[int] = []
    for value in sorted(set(solution.deletions) | set(solution.counterfeits)):
        rows = np.flatnonzero(y == value)
        deleted = int(solution.deletions.get(value, 0))
        if deleted:
            keep[rng.choice(rows, size=deleted, replace=False)] = False
        added = int(solution.counterfeits.get(value, 0))
        if added:
            extra.extend(rng.choice(rows, size=added, replace=True).tolist())
    index = np.concatenate([np.flatnonzero(keep), np.asarray(extra, dtype=np.int64)])
    return x[index], y[index]


def split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    cut = int(0.75 * n)
    return order[:cut], order[cut:]


def eligibility_part(seeds: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for target, ms in SETTINGS.items():
        features = [c for c in PAPER_COLUMNS if c != target]
        table, schema = load_adult(sensitive=target, qis=features)
        x = encode_qis(table, schema)
        y = table[target].astype(str).to_numpy()
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            train, test = split(len(y), rng)
            for name, model in classifiers(seed).items():
                base = accuracy(model, x[train], y[train], x[test], y[test])
                for protocol in ("clean", "paper"):
                    records.append({"part": "eligibility", "target": target, "m": 1,
                                    "method": "original", "protocol": protocol,
                                    "classifier": name, "seed": seed, "accuracy": base,
                                    "rows": len(train), "modifications": 0})
            for m in ms:
                for method in ("counterfeits", "deletions", "hybrid", "random"):
                    for protocol in ("clean", "paper"):
                        if protocol == "clean":
                            values, counts = np.unique(y[train], return_counts=True)
                        else:
                            values, counts = np.unique(y, return_counts=True)
                        solution = solve(method, dict(zip(values.tolist(), counts.tolist(),
                                                          strict=True)), m, seed)
                        if not solution.is_eligible():
                            continue  # the random baseline does not converge at m = l
                        if protocol == "clean":
                            x_tr, y_tr = modify(x[train], y[train], solution, rng)
                            x_te, y_te = x[test], y[test]
                        else:
                            x_all, y_all = modify(x, y, solution, rng)
                            tr, te = split(len(y_all), rng)
                            x_tr, y_tr, x_te, y_te = x_all[tr], y_all[tr], x_all[te], y_all[te]
                        for name, model in classifiers(seed).items():
                            records.append({
                                "part": "eligibility", "target": target, "m": m,
                                "method": method, "protocol": protocol, "classifier": name,
                                "seed": seed, "accuracy": accuracy(model, x_tr, y_tr, x_te,
                                                                   y_te),
                                "rows": len(y_tr),
                                "modifications": solution.total_counterfeits
                                + solution.total_deletions})
                print(f"{target} m={m} seed={seed} done", flush=True)
    return records


def boxes(published: pd.DataFrame, schema: object, domain: Domain
          ) -> tuple[np.ndarray, np.ndarray]:
    """The code interval ``[low, high]`` every published QI cell covers (a star: the whole
    domain). Its midpoint is the interval-midpoint encoding."""
    low, high = parse_boxes(published, schema)  # type: ignore[arg-type]
    low = np.where(np.isinf(low), domain.low, low)
    high = np.where(np.isinf(high), domain.high, high)
    return low, high


def invariance_part(seeds: int, ms: list[int]) -> list[dict[str, object]]:
    table, schema = load_adult(sensitive="occupation", qis=MINV_QIS)
    x = encode_qis(table, schema)
    y = table["occupation"].astype(str).to_numpy()
    domain = Domain.of(schema, x)
    records: list[dict[str, object]] = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        train, test = split(len(y), rng)
        for name, model in classifiers(seed).items():
            records.append({"part": "m-invariance", "target": "occupation", "m": 1,
                            "method": "original", "protocol": "clean", "classifier": name,
                            "seed": seed, "accuracy": accuracy(model, x[train], y[train],
                                                               x[test], y[test]),
                            "rows": len(train), "modifications": 0})
        for m in ms:
            result = publish_m_invariant(table.iloc[train].reset_index(drop=True), schema, m,
                                         mode="heuristic", rng=np.random.default_rng(seed),
                                         validated=True)
            published = result.release.published
            y_tr = published["occupation"].astype(str).to_numpy()
            low, high = boxes(published, schema, domain)
            encodings = {"midpoint": ((low + high) / 2, x[test]),
                         "box": (np.hstack([low, high]), np.hstack([x[test], x[test]]))}
            for encoding, (x_tr, x_te) in encodings.items():
                for name, model in classifiers(seed).items():
                    records.append({
                        "part": "m-invariance", "target": "occupation", "m": m,
                        "method": f"m-invariant release ({encoding})", "protocol": "clean",
                        "classifier": name, "seed": seed,
                        "accuracy": accuracy(model, x_tr, y_tr, x_te, y[test]),
                        "rows": len(y_tr), "modifications": result.counterfeits})
            print(f"m-invariance m={m} seed={seed}: {result.counterfeits} counterfeits",
                  flush=True)
    return records


def figure(frame: pd.DataFrame, path: Path) -> None:
    mean = frame.groupby(["part", "target", "protocol", "classifier", "method", "m"]).agg(
        accuracy=("accuracy", "mean")).reset_index()
    panels = [("eligibility", "occupation"), ("eligibility", "marital-status"),
              ("m-invariance", "occupation")]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    for axis, (part, target) in zip(axes, panels, strict=True):
        sub = mean[(mean["part"] == part) & (mean["target"] == target)
                   & (mean["protocol"] == "clean")]
        for (classifier, method), line in sub.groupby(["classifier", "method"]):
            if method == "original":
                axis.axhline(line["accuracy"].iloc[0], color="grey",
                             linestyle=":" if classifier == "decision tree" else "-.",
                             label=f"original ({classifier})")
                continue
            axis.plot(line["m"], line["accuracy"],
                      "-" if classifier == "random forest" else "--", marker="o",
                      label=f"{method} ({classifier})")
        axis.set_title(f"{part}: class {target} (clean test set)")
        axis.set_xlabel("m")
        axis.set_ylabel("accuracy")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--m-invariance", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7])
    parser.add_argument("--only-m-invariance", action="store_true",
                        help="rerun part 2 only, keeping part 1 of the existing CSV")
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there, and read by --only-m-invariance (default: "
                        "classifier_utility.csv, or the first free classifier_utility_<n>.csv "
                        "when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/classifier_utility.png, "
                        "or the first free classifier_utility_<n>.png)")
    args = parser.parse_args()
    start = time.perf_counter()
    default_csv = HERE / "classifier_utility.csv"
    free_csv, free_figure = free_paths(default_csv, HERE / "figures" / "classifier_utility.png")
    out, figure_path = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure_path}", file=sys.stderr)
    if args.only_m_invariance:
        old = pd.read_csv(args.csv or default_csv)
        frame = pd.concat([old[old["part"] == "eligibility"],
                           pd.DataFrame(invariance_part(args.seeds, args.m_invariance))],
                          ignore_index=True)
    else:
        frame = pd.DataFrame(eligibility_part(args.seeds)
                             + invariance_part(args.seeds, args.m_invariance))
    frame.to_csv(out, index=False)
    figure(frame, figure_path)
    table = frame.groupby(["part", "target", "protocol", "classifier", "method", "m"],
                          sort=False).agg(accuracy=("accuracy", "mean"),
                                          rows=("rows", "mean"),
                                          modifications=("modifications", "mean")).reset_index()
    print(markdown(table, digits=4))
    print(f"time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
