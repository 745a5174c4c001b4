"""User code for tests/support/targets_toynumpy.py: functions written as its users would, with no glue."""

from __future__ import annotations

import polars as pl
import targets_toynumpy as toynumpy

#: The items a count per key releases (public).
ITEMS: list[object] = ["a", "b", "c"]


# --- noise no adapter covers: a library drawing numpy.random itself ---------------------------------


def numpy_sum(table: pl.DataFrame) -> float:
    """A sum of values in [0, 1] noised with np.random.laplace(scale=1/ε) and never clipped (the bug)."""
    return toynumpy.noisy_sum(table["x"].drop_nulls().to_list(), epsilon=1.0)


def numpy_clipped_sum(table: pl.DataFrame) -> float:
    """The same sum, clipped to [0, 1] first (correct)."""
    return toynumpy.clipped_noisy_sum(table["x"].drop_nulls().to_list(), epsilon=1.0)


def numpy_counts(table: pl.DataFrame) -> list[float]:
    """Noisy counts per listed item from a Generator's Laplace draws (correct)."""
    return toynumpy.noisy_counts(table["k"].to_list(), ITEMS, epsilon=1.0)


def python_gaussian_count(table: pl.DataFrame) -> float:
    """A count with Gaussian noise from Python's random.gauss (σ for ε = 1, δ = 1e-5: correct)."""
    return toynumpy.gaussian_count(table["k"].to_list(), sigma=toynumpy.gaussian_sigma(1.0, 1e-5))
