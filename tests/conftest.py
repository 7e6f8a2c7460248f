"""Shared fixtures: the bundled small schema and the optional shared datasets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


def shared_datasets() -> Path | None:
    """``../shared/datasets`` next to the repository (or $REPUBLISH_DATASETS), if present."""
    env = os.environ.get("REPUBLISH_DATASETS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "datasets")
    for candidate in candidates:
        if (candidate / "adult" / "adult.csv").is_file():
            return candidate
    return None


@pytest.fixture
def adult_dir() -> Path:
    directory = shared_datasets()
    if directory is None:
        pytest.skip("shared datasets (../shared/datasets/adult) not present")
    return directory / "adult"


@pytest.fixture
def data_dir() -> Path:
    return DATA
