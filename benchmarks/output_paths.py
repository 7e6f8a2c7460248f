"""Where a benchmark script writes its results: a rerun never overwrites a cited file.

``benchmarks/RESULTS.md`` cites result files (CSVs, figures) by name, and its text quotes
the numbers in them. A script rerun with its default output path would silently replace
such a file, and RESULTS.md would then describe data that no longer exists. So a script's
*default* output goes to the first free name: ``x.csv`` when no file is there, else
``x_2.csv``, ``x_3.csv``, ... beside it. A path passed explicitly (``--csv``, ``--figure``)
is honoured as given, even when a file is there: overwriting is then the user's choice.

Nothing here creates a file: two runs started at the same moment may pick the same free
name (give one of them an explicit path).

Scripts import this module as a sibling: ``python benchmarks/<script>.py`` puts
``benchmarks/`` on ``sys.path``.
"""

from __future__ import annotations

from pathlib import Path


def _numbered(path: Path, n: int) -> Path:
    return path.with_name(f"{path.stem}_{n}{path.suffix}")


def free_path(path: Path) -> Path:
    """``path`` when no file is there, else the first ``<stem>_<n><suffix>`` that is free
    (n = 2, 3, ...)."""
    candidate, n = path, 2
    while candidate.exists():
        candidate = _numbered(path, n)
        n += 1
    return candidate


def free_paths(*paths: Path) -> tuple[Path, ...]:
    """``paths`` themselves when none of them exists, else each with the first common
    ``_<n>`` (n = 2, 3, ...) at which all are free: a CSV and the figure drawn from it
    keep matching names (``x_2.csv`` and ``x_2.png``)."""
    if not any(path.exists() for path in paths):
        return paths
    n = 2
    while any(_numbered(path, n).exists() for path in paths):
        n += 1
    return tuple(_numbered(path, n) for path in paths)


def results_path(given: Path | None, default: Path) -> Path:
    """``given`` when the user passed a path (written exactly there, even over a file),
    else :func:`free_path` of ``default``."""
    return given if given is not None else free_path(default)


def redraw_path(given: Path | None, default: Path, *, data: Path, committed: Path) -> Path:
    """The figure of a redraw (``--plot-only``: no new results): ``given`` when passed;
    ``default`` when the data drawn is the committed CSV ``committed`` -- regenerating its
    cited figure from the same data is the point of a redraw; else :func:`free_path` of
    ``default`` (a figure of other data must not replace the cited one)."""
    if given is not None:
        return given
    return default if data.resolve() == committed.resolve() else free_path(default)


def resolve_outputs(csv: Path | None, figure: Path | None, default_csv: Path,
                    default_figure: Path, *, plot_only: bool, also: bool = False
                    ) -> tuple[Path, Path | None, Path]:
    """A script's CSV to read, CSV to write (None for a redraw) and figure to write.

    A run writes ``csv`` (or the first free name beside ``default_csv``) and the figure
    with the same number; it reads kept rows from ``csv`` or the committed ``default_csv``.
    A redraw (``plot_only``) reads the same and writes no CSV; its figure replaces the
    cited one only when it draws the committed CSV as it is (:func:`redraw_path`), while a
    different plot (``also``) goes to a free name."""
    source = csv or default_csv
    if plot_only:
        drawn = (figure or free_path(default_figure)) if also else redraw_path(
            figure, default_figure, data=source, committed=default_csv)
        return source, None, drawn
    free_csv, free_figure = free_paths(default_csv, default_figure)
    return source, csv or free_csv, figure or free_figure
