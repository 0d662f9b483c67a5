"""Shared fixtures: a small local Spark session and repo paths.

The Spark fixture follows Splink's test set-up: no UI, few shuffle partitions,
UTC session time zone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The recorded real-world inputs beside the repo; tests skip without them."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from hdwm.spark import get_spark

    session = get_spark(
        "washline-tests",
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
        },
    )
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()
