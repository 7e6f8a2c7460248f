"""Benchmark scripts never overwrite a cited result file by default
(``benchmarks/output_paths.py``): the path helpers, and three scripts run on tiny inputs
in a temporary folder standing in for ``benchmarks/``."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ldiv_scaling  # noqa: E402
import m_invariance_fig6b  # noqa: E402
import m_invariance_fig9b  # noqa: E402
import output_paths  # noqa: E402
import whole_release_adult  # noqa: E402
from output_paths import free_path, free_paths, redraw_path, results_path  # noqa: E402

SERIES = ["--rows", "400", "--initial", "200", "--r", "50", "--ms", "2", "--max-releases", "2"]


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_free_path_numbers_from_2_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "results.csv"
    assert free_path(target) == target
    target.write_text("cited")
    assert free_path(target) == tmp_path / "results_2.csv"
    (tmp_path / "results_2.csv").write_text("rerun")
    assert free_path(target) == tmp_path / "results_3.csv"
    assert files(tmp_path) == {"results.csv", "results_2.csv"}
    assert target.read_text() == "cited"


def test_free_paths_keep_a_common_number(tmp_path: Path) -> None:
    csv, png = tmp_path / "x.csv", tmp_path / "figures" / "x.png"
    assert free_paths(csv, png) == (csv, png)
    png.parent.mkdir()
    png.write_text("cited figure")  # only the figure exists: both move on
    assert free_paths(csv, png) == (tmp_path / "x_2.csv", png.parent / "x_2.png")
    (png.parent / "x_2.png").write_text("")  # x_2.csv is free, x_2.png is not
    assert free_paths(csv, png) == (tmp_path / "x_3.csv", png.parent / "x_3.png")
    assert files(tmp_path) == {"figures/x.png", "figures/x_2.png"}


def test_results_path_honours_an_explicit_path_even_over_a_file(tmp_path: Path) -> None:
    default, given = tmp_path / "default.csv", tmp_path / "given.csv"
    default.write_text("cited")
    given.write_text("old")
    assert results_path(given, default) == given
    assert results_path(None, default) == tmp_path / "default_2.csv"
    assert files(tmp_path) == {"default.csv", "given.csv"}


def test_redraw_path_replaces_only_the_committed_figure(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    committed, figure = tmp_path / "x.csv", tmp_path / "x.png"
    committed.write_text("cited")
    figure.write_text("cited figure")
    monkeypatch.chdir(tmp_path)
    # the committed data, named relatively or not: its figure is redrawn in place
    assert redraw_path(None, figure, data=Path("x.csv"), committed=committed) == figure
    assert redraw_path(None, figure, data=tmp_path / "x_2.csv",
                       committed=committed) == tmp_path / "x_2.png"
    assert redraw_path(tmp_path / "y.png", figure, data=tmp_path / "x_2.csv",
                       committed=committed) == tmp_path / "y.png"


def test_whole_release_adult_uses_the_shared_helper() -> None:
    assert whole_release_adult.results_path is output_paths.results_path
    assert not hasattr(whole_release_adult, "free_path")


def test_ldiv_scaling_default_run_keeps_the_cited_csv(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cited = tmp_path / "ldiv_scaling_results.csv"
    cited.write_text("cited\n")
    monkeypatch.setattr(ldiv_scaling, "RESULTS", cited)
    tiny = ["x", "--sizes", "300", "--repeats", "1", "--time-limit", "1"]
    monkeypatch.setattr(sys, "argv", tiny)
    ldiv_scaling.main()
    assert cited.read_text() == "cited\n"
    rerun = pd.read_csv(tmp_path / "ldiv_scaling_results_2.csv")
    assert rerun["n"].tolist() == [300]
    explicit = tmp_path / "chosen.csv"
    explicit.write_text("old\n")
    monkeypatch.setattr(sys, "argv", [*tiny, "--csv", str(explicit)])
    ldiv_scaling.main()
    assert pd.read_csv(explicit)["n"].tolist() == [300]
    assert files(tmp_path) == {"ldiv_scaling_results.csv", "ldiv_scaling_results_2.csv",
                               "chosen.csv"}


def test_fig9b_default_run_writes_a_new_csv_and_figure_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "figures").mkdir()
    (tmp_path / "m_invariance_fig9b.csv").write_text("cited\n")
    (tmp_path / "figures" / "m_invariance_fig9b.png").write_bytes(b"cited figure")
    monkeypatch.setattr(m_invariance_fig9b, "HERE", tmp_path)
    monkeypatch.setattr(sys, "argv", ["x", *SERIES])
    m_invariance_fig9b.main()
    assert (tmp_path / "m_invariance_fig9b.csv").read_text() == "cited\n"
    assert (tmp_path / "figures" / "m_invariance_fig9b.png").read_bytes() == b"cited figure"
    assert pd.read_csv(tmp_path / "m_invariance_fig9b_2.csv")["m"].unique().tolist() == [2]
    assert (tmp_path / "figures" / "m_invariance_fig9b_2.png").stat().st_size > 0


def test_fig6b_rerun_and_redraws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "figures").mkdir()
    monkeypatch.setattr(m_invariance_fig6b, "HERE", tmp_path)
    csv, png = tmp_path / "m_invariance_fig6b.csv", tmp_path / "figures" / "m_invariance_fig6b.png"
    monkeypatch.setattr(sys, "argv", ["x", *SERIES])
    m_invariance_fig6b.main()  # nothing there yet: the default names
    cited_csv, cited_png = csv.read_bytes(), png.read_bytes()
    m_invariance_fig6b.main()  # the rerun goes beside them
    assert csv.read_bytes() == cited_csv and png.read_bytes() == cited_png
    first, rerun = pd.read_csv(csv), pd.read_csv(tmp_path / "m_invariance_fig6b_2.csv")
    assert list(rerun.columns) == list(first.columns)  # same columns; timings differ
    assert rerun["counterfeits"].tolist() == first["counterfeits"].tolist()
    assert (tmp_path / "figures" / "m_invariance_fig6b_2.png").is_file()
    # --plot-only of the committed CSV redraws its figure in place (on purpose) ...
    png.write_bytes(b"stale")
    monkeypatch.setattr(sys, "argv", ["x", "--plot-only"])
    m_invariance_fig6b.main()
    assert png.read_bytes() != b"stale"
    # ... a redraw of other data does not
    monkeypatch.setattr(sys, "argv", ["x", "--plot-only", "--csv",
                                      str(tmp_path / "m_invariance_fig6b_2.csv")])
    m_invariance_fig6b.main()
    assert (tmp_path / "figures" / "m_invariance_fig6b_3.png").is_file()
    assert files(tmp_path) == {"m_invariance_fig6b.csv", "m_invariance_fig6b_2.csv",
                               "figures/m_invariance_fig6b.png",
                               "figures/m_invariance_fig6b_2.png",
                               "figures/m_invariance_fig6b_3.png"}


def test_resolve_outputs_reads_the_committed_csv_and_writes_beside_it(tmp_path: Path) -> None:
    committed, cited = tmp_path / "x.csv", tmp_path / "x.png"
    committed.write_text("a\n1\n")
    cited.write_bytes(b"png")
    run = output_paths.resolve_outputs(None, None, committed, cited, plot_only=False)
    assert run == (committed, tmp_path / "x_2.csv", tmp_path / "x_2.png")
    redraw = output_paths.resolve_outputs(None, None, committed, cited, plot_only=True)
    assert redraw == (committed, None, cited)  # the committed data redraws its figure
    other = output_paths.resolve_outputs(tmp_path / "x_2.csv", None, committed, cited,
                                         plot_only=True)
    assert other == (tmp_path / "x_2.csv", None, tmp_path / "x_2.png")
    also = output_paths.resolve_outputs(None, None, committed, cited, plot_only=True,
                                        also=True)
    assert also[2] == tmp_path / "x_2.png"  # a different plot never replaces the cited one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv", "x.png"]
