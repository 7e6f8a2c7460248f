"""Data sets for experiments: the Adult loader, a census-like generator, dynamic series.

* :func:`load_adult` reads the ARX edition of UCI Adult from the shared data directory
  (never shipped with the package; see :func:`dataset_locations` for where it is looked
  for). ``republish/examples/adult/schema.toml`` is the same table's schema for the CLI.
* :func:`synthetic_census` generates a table with the attribute domains of the
  m-invariance paper's OCC/SAL data (Table 5): QIs Age (79), Gender (2), Education (17),
  Birthplace (57), sensitive Occupation (50) or Income (50).
* :func:`dynamic_series` turns a table into the microdata ``T(1), ..., T(H)`` of the
  papers' experiments (m-invariance paper, §5): a random first sample, then ``r``
  deletions and ``r`` insertions from the pool per release, optionally with
  re-insertions of previously deleted rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from republish.errors import InputError, ParameterError
from republish.hierarchy import Hierarchy
from republish.schema import QIAttribute, Schema
from republish.table_reading import read_frame
from republish.tables import validate_table

ENVIRONMENT_VARIABLE = "REPUBLISH_DATASETS"
ADULT_FILE = "adult.csv"


def dataset_locations() -> list[tuple[str, Path]]:
    """Where the shared data directory is looked for, in order, as ``(origin, path)``.

    ``$REPUBLISH_DATASETS`` alone when that variable is set; otherwise ``./datasets`` and
    ``../shared/datasets`` relative to the working directory (a clone next to the shared
    data, whatever the install: editable or ``pip install .``), then
    ``../shared/datasets`` relative to the source tree (an editable install run from
    elsewhere).
    """
    configured = os.environ.get(ENVIRONMENT_VARIABLE)
    if configured:
        return [(f"${ENVIRONMENT_VARIABLE}", Path(configured))]
    cwd = Path.cwd()
    locations = [("./datasets", cwd / "datasets"),
                 ("../shared/datasets", cwd.parent / "shared" / "datasets")]
    source_tree = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    if source_tree not in (path for _, path in locations):
        locations.append(("beside the source tree", source_tree))
    return locations


def datasets_dir() -> Path | None:
    """The shared data directory: the first of :func:`dataset_locations` that exists;
    ``None`` when none does."""
    for _, path in dataset_locations():
        if path.is_dir():
            return path
    return None


def where_looked(locations: Sequence[tuple[str, Path]] | None = None) -> str:
    """The searched places for an error message: ``$REPUBLISH_DATASETS (unset), ...``."""
    if locations is None:
        locations = dataset_locations()
    places = [f"{origin} ({path})" if origin != str(path) else str(path)
              for origin, path in locations]
    unset = "" if os.environ.get(ENVIRONMENT_VARIABLE) else f"${ENVIRONMENT_VARIABLE} (unset), "
    return unset + ", ".join(places)


def find_adult(directory: str | Path | None = None) -> Path:
    """The folder holding ``adult.csv``: ``directory`` (the data directory or its
    ``adult/`` folder), else the first of :func:`dataset_locations` that has it.

    Raises
    ------
    InputError
        naming every place looked in, when none has it.
    """
    return _adult_directory(directory)


def _adult_directory(directory: str | Path | None) -> Path:
    if directory is not None:
        locations = [(str(directory), Path(directory))]
    else:
        locations = dataset_locations()
    for _, base in locations:
        for candidate in (base, base / "adult"):
            if (candidate / ADULT_FILE).is_file():
                return candidate
    raise InputError(
        f"the Adult data (adult/{ADULT_FILE}) was not found; looked in "
        f"{where_looked(locations) if directory is None else repr(str(directory))}. Set the "
        f"environment variable {ENVIRONMENT_VARIABLE} to the folder holding adult/ (in Python, "
        "or pass directory=...)."
    )


def load_adult(
    sensitive: str = "occupation",
    qis: Sequence[str] | None = None,
    directory: str | Path | None = None,
) -> tuple[pd.DataFrame, Schema]:
    """Load UCI Adult (ARX edition) with an identifier column ``id`` (the row number).

    ``age`` is a numeric QI, every other QI a hierarchy QI read from
    ``adult_hierarchy_<column>.csv``; ``sensitive`` is the categorical SA. ``qis``
    defaults to every column but ``sensitive``, in file order. ``directory`` is the data
    directory (holding ``adult/``) or the ``adult/`` folder itself; by default
    :func:`datasets_dir`.

    Returns the validated table (see :func:`republish.tables.load_table`) and its schema.
    """
    folder = _adult_directory(directory)
    frame = read_frame(folder / ADULT_FILE)
    columns = list(frame.columns)
    if sensitive not in columns:
        raise ParameterError(
            f"sensitive={sensitive!r} is not an Adult column; use one of {columns}."
        )
    chosen = [c for c in columns if c != sensitive] if qis is None else list(qis)
    unknown = [c for c in chosen if c not in columns]
    if unknown or sensitive in chosen or not chosen or len(set(chosen)) != len(chosen):
        raise ParameterError(
            f"qis={chosen}: give distinct Adult columns other than the sensitive "
            f"{sensitive!r}; columns are {columns}."
        )
    attributes = []
    for name in chosen:
        if name == "age":
            attributes.append(QIAttribute(name, "numeric"))
            continue
        path = folder / f"adult_hierarchy_{name}.csv"
        if not path.is_file():
            raise InputError(f"no hierarchy file {str(path)!r} for the Adult QI {name!r}.")
        attributes.append(QIAttribute(name, "hierarchy", hierarchy=Hierarchy.from_file(path),
                                      hierarchy_path=str(path)))
    schema = Schema(identifier="id", sensitive=sensitive, qis=tuple(attributes), delimiter=";")
    frame.insert(0, "id", np.arange(len(frame)).astype(str))
    return validate_table(frame, schema), schema


#: Domain sizes of the m-invariance paper's Table 5.
CENSUS_DOMAINS = {"age": 79, "gender": 2, "education": 17, "birthplace": 57,
                  "occupation": 50, "income": 50}
_AGE_START = 17
_SENSITIVE_CHOICES = ("occupation", "income", "salary")


def _names(prefix: str, size: int) -> tuple[str, ...]:
    return tuple(f"{prefix}-{i:02d}" for i in range(1, size + 1))


def census_schema(sensitive: str = "occupation") -> Schema:
    """Schema of :func:`synthetic_census`: numeric ``age`` with domain [17, 95], ordered
    ``gender``, ``education``, ``birthplace``."""
    return Schema(
        identifier="id",
        sensitive=sensitive,
        qis=(
            QIAttribute("age", "numeric",
                        domain=(_AGE_START, _AGE_START + CENSUS_DOMAINS["age"] - 1)),
            QIAttribute("gender", "ordered", order=("female", "male")),
            QIAttribute("education", "ordered",
                        order=_names("education", CENSUS_DOMAINS["education"])),
            QIAttribute("birthplace", "ordered",
                        order=_names("birthplace", CENSUS_DOMAINS["birthplace"])),
        ),
    )


#: Occupation counts of the ARX edition of UCI Adult (30,162 rows), most frequent first:
#: the skew of a real occupation column, for ``synthetic_census(sensitive_distribution=...)``.
ADULT_OCCUPATION_COUNTS = {
    "Prof-specialty": 4038, "Craft-repair": 4030, "Exec-managerial": 3992,
    "Adm-clerical": 3721, "Sales": 3584, "Other-service": 3212, "Machine-op-inspct": 1966,
    "Transport-moving": 1572, "Handlers-cleaners": 1350, "Farming-fishing": 989,
    "Tech-support": 912, "Protective-serv": 644, "Priv-house-serv": 143, "Armed-Forces": 9,
}
_DISTRIBUTIONS = ("census", "adult-occupation", "adult-occupation-50")


def sensitive_shares(distribution: str) -> dict[str, float]:
    """Value shares of a skewed ``sensitive_distribution`` of :func:`synthetic_census`.

    ``adult-occupation``: Adult's 14 occupations with their shares (largest 13.4%, so a
    table drawn from it is at most 7-eligible). ``adult-occupation-50``: the same
    rank-frequency curve stretched to the 50 values of the paper's Table 5 (shares
    interpolated linearly at ranks ``(j - 0.5) / 50`` of Adult's ``(k - 0.5) / 14``, then
    normalized): largest ~3.8%, smallest ~0.0015%, named ``occupation-01`` (most frequent)
    to ``occupation-50``.
    """
    counts = np.asarray(list(ADULT_OCCUPATION_COUNTS.values()), dtype=np.float64)
    shares = counts / counts.sum()
    if distribution == "adult-occupation":
        return dict(zip(ADULT_OCCUPATION_COUNTS, shares.tolist(), strict=True))
    if distribution == "adult-occupation-50":
        size = CENSUS_DOMAINS["occupation"]
        at = (np.arange(size) + 0.5) / size
        curve = np.interp(at, (np.arange(len(shares)) + 0.5) / len(shares), shares)
        curve = curve / curve.sum()
        return dict(zip(_names("occupation", size), curve.tolist(), strict=True))
    raise ParameterError(
        f"sensitive_distribution={distribution!r}: use one of {list(_DISTRIBUTIONS)}."
    )


def _skewed_codes(rng: np.random.Generator, driver: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Value codes with exactly-expected marginal ``shares`` correlated with ``driver``.

    A Gaussian copula on ranks: latent ``z = 0.5 * standardized(driver) + sqrt(0.75) * noise``,
    its empirical quantile picks the value (code 0 the most frequent, so frequent values
    go with low ``driver``)."""
    n = len(driver)
    spread = driver.std() if n > 1 and driver.std() > 0 else 1.0
    latent = 0.5 * (driver - driver.mean()) / spread + np.sqrt(0.75) * rng.standard_normal(n)
    quantile = (np.argsort(np.argsort(latent, kind="stable"), kind="stable") + 0.5) / n
    bounds = np.cumsum(shares)
    return np.minimum(np.searchsorted(bounds / bounds[-1], quantile), len(shares) - 1)


def synthetic_census(
    n: int, seed: int, sensitive: str = "occupation",
    sensitive_distribution: str = "census",
) -> tuple[pd.DataFrame, Schema]:
    """A census-like table of ``n`` rows with the domains of Table 5 (m-invariance paper).

    QIs: ``age`` (integers 17..95, skewed young: 17 + 79 * Beta(2, 3.5)), ``gender``
    (two values, even), ``education`` (17 ordered levels, binomial around the middle),
    ``birthplace`` (57 places, Zipf-like with exponent 1, so the largest holds ~21%).
    The sensitive attribute (``occupation``; ``income``, alias ``salary``) has 50 values
    drawn half uniformly, half uniformly from a window of 20 values shifted with education
    (occupation) or age (income). So it correlates with the QIs, yet no value exceeds
    1/50 * 1/2 + 1/20 * 1/2 = 3.5% of the rows (in expectation): the table is
    comfortably m-eligible for m = 10 (which needs at most 10%) and for m up to ~25.
    Same ``n`` and ``seed``, same table. Returns the validated table and its schema.

    ``sensitive_distribution`` (default ``census``, the above) may instead give the SA
    the skew of a real occupation column (:func:`sensitive_shares`): ``adult-occupation``
    (Adult's 14 occupations and shares) or ``adult-occupation-50`` (Adult's curve over 50
    values); the value is drawn from those shares, correlated with education (age for
    ``income``) by a rank copula. The QIs are the same as with ``census``.
    """
    if n < 1:
        raise ParameterError(f"n={n}: the table needs at least one row.")
    if sensitive not in _SENSITIVE_CHOICES:
        raise ParameterError(f"sensitive={sensitive!r}: use one of {list(_SENSITIVE_CHOICES)}.")
    skew = None if sensitive_distribution == "census" else sensitive_shares(sensitive_distribution)
    rng = np.random.default_rng(seed)
    schema = census_schema(sensitive)
    sizes = CENSUS_DOMAINS
    age_code = np.minimum((rng.beta(2.0, 3.5, size=n) * sizes["age"]).astype(np.int64),
                          sizes["age"] - 1)
    gender = rng.integers(0, sizes["gender"], size=n)
    education = rng.binomial(sizes["education"] - 1, 0.45, size=n)
    place_weights = 1.0 / np.arange(1, sizes["birthplace"] + 1)
    birthplace = rng.choice(sizes["birthplace"], size=n, p=place_weights / place_weights.sum())
    values, window = sizes["occupation"], 20
    driver, driver_size = (
        (education, sizes["education"]) if sensitive == "occupation" else (age_code, sizes["age"])
    )
    if skew is None:
        window_start = (driver * (values - window)) // (driver_size - 1)
        in_window = window_start + rng.integers(0, window, size=n)
        uniform = rng.integers(0, values, size=n)
        code = np.where(rng.random(n) < 0.5, uniform, in_window)
        sensitive_names: Sequence[str] = _names(sensitive, values)
    else:
        code = _skewed_codes(rng, driver.astype(np.float64), np.asarray(list(skew.values())))
        sensitive_names = list(skew)
    orders = {qi.name: np.asarray(qi.order, dtype=object) for qi in schema.qis if qi.order}
    table = pd.DataFrame({
        "id": np.arange(n).astype(str).astype(object),
        "age": (age_code + _AGE_START).astype(np.float64),
        "gender": orders["gender"][gender],
        "education": orders["education"][education],
        "birthplace": orders["birthplace"][birthplace],
        sensitive: np.asarray(sensitive_names, dtype=object)[code],
    })
    return table, schema


def _pool_demand(initial: int, r: int, releases: int, reinsert: int) -> int:
    """Rows the series takes from the table: ``initial`` plus fresh insertions."""
    seen = initial
    for _ in range(releases - 1):
        # Rows deleted before this release and absent from the previous one.
        candidates = seen - initial
        seen += r - min(reinsert, candidates)
    return seen


def dynamic_series(
    table: pd.DataFrame,
    initial: int,
    r: int,
    releases: int,
    seed: int,
    reinsert_fraction: float = 0.0,
    identifier: str = "id",
) -> list[pd.DataFrame]:
    """Microdata ``T(1), ..., T(releases)`` following the papers' protocol (§5).

    ``T(1)`` is a random sample of ``initial`` rows; the other rows form the pool.
    ``T(j)`` deletes ``r`` random rows of ``T(j-1)`` and inserts ``r`` rows: a share
    ``reinsert_fraction`` (rounded) drawn from rows deleted in earlier releases and absent
    from ``T(j-1)`` (re-insertions; fewer when not enough exist), the rest taken from
    the pool in random order. Every table has ``initial`` rows, kept in the order of
    ``T(j-1)`` with the insertions appended.

    Raises
    ------
    ParameterError
        when a parameter is out of range or the pool cannot supply the insertions.
    InputError
        when ``identifier`` is missing or repeats a value.
    """
    if identifier not in table.columns:
        raise InputError(f"identifier column {identifier!r} is not in the table.")
    if table[identifier].duplicated().any():
        raise InputError(f"identifier column {identifier!r} repeats values; rows need unique ids.")
    if releases < 1:
        raise ParameterError(f"releases={releases}: at least one release is needed.")
    if not 1 <= initial <= len(table):
        raise ParameterError(f"initial={initial}: must be between 1 and the {len(table)} rows.")
    if not 0 <= r <= initial:
        raise ParameterError(f"r={r}: the update volume must be between 0 and initial={initial}.")
    if not 0.0 <= reinsert_fraction <= 1.0:
        raise ParameterError(f"reinsert_fraction={reinsert_fraction}: must be in [0, 1].")
    reinsert = int(round(reinsert_fraction * r))
    needed = _pool_demand(initial, r, releases, reinsert)
    if needed > len(table):
        raise ParameterError(
            f"initial={initial}, r={r}, releases={releases}, reinsert_fraction="
            f"{reinsert_fraction} need {needed} distinct rows, the table has {len(table)}; "
            "lower r or releases, or raise reinsert_fraction."
        )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table))
    current = order[:initial]
    pool_next = initial
    deleted = np.zeros(len(table), dtype=bool)
    series = [current]
    for _ in range(releases - 1):
        candidates = np.flatnonzero(deleted)
        back = min(reinsert, len(candidates))
        reinserted = rng.choice(candidates, size=back, replace=False) if back else candidates[:0]
        fresh = order[pool_next:pool_next + r - back]
        pool_next += r - back
        removed = rng.choice(len(current), size=r, replace=False)
        keep = np.ones(len(current), dtype=bool)
        keep[removed] = False
        deleted[reinserted] = False
        deleted[current[removed]] = True
        current = np.concatenate([current[keep], reinserted, fresh])
        series.append(current)
    return [_take(table, rows) for rows in series]


def _take(table: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    taken = table.iloc[rows]
    # Setting the index in place avoids reset_index's copy of every column.
    taken.index = pd.RangeIndex(len(rows))
    return taken
