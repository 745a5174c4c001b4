"""Shared test fixtures: only what several test modules need."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpwitness.data import adult_path


@pytest.fixture(scope="session")
def adult() -> Path:
    """The UCI Adult extract; the test is skipped, saying why, when it is absent."""
    path = adult_path()
    if path is None:
        pytest.skip("the Adult extract is absent (set DPWITNESS_ADULT or put it at ../shared/data/adult.csv)")
    return path
