"""A small DP library that adds its noise with NumPy directly, as many hand-written ones do: no class
or primitive of its own that an adapter could hook, so only the draws themselves show its noise.

It knows nothing of dpwitness.
"""

from __future__ import annotations

import random

import numpy as np

#: The grid every release is snapped to (Mironov's remedy for the porous support of float noise).
GRID = 2.0**-20


def snap(x: float) -> float:
    """``x`` rounded to the nearest multiple of :data:`GRID`."""
    with np.errstate(over="ignore"):
        return float(np.round(x / GRID) * GRID)


def noisy_sum(values: list[float], *, epsilon: float) -> float:
    """The sum of values documented to lie in [0, 1], plus Laplace noise of scale 1/ε (Δ = 1), snapped.

    The values are never clipped (the bug): one record outside [0, 1] moves the sum without limit.
    """
    return snap(np.sum(values) + np.random.laplace(scale=1 / epsilon))


def clipped_noisy_sum(values: list[float], *, epsilon: float, lower: float = 0.0, upper: float = 1.0) -> float:
    """The same sum with every value clipped to [lower, upper] first and NaN skipped (correct: Δ = max(|lower|, |upper|))."""
    bound = max(abs(lower), abs(upper))
    kept = np.clip([v for v in values if v == v], lower, upper)
    return snap(np.sum(kept) + np.random.laplace(scale=bound / epsilon))


def noisy_counts(keys: list[object], items: list[object], *, epsilon: float, seed: int | None = None) -> list[float]:
    """A noisy count per listed item, one vector of Laplace draws from a Generator (correct: Δ₁ = 1)."""
    rng = np.random.default_rng(seed)
    counts = np.array([sum(k == item for k in keys) for item in items], dtype=float)
    return (counts + rng.laplace(0.0, 1 / epsilon, size=len(items))).tolist()  # type: ignore[no-any-return]


def gaussian_count(keys: list[object], *, sigma: float) -> float:
    """The number of records plus Gaussian noise drawn with Python's ``random`` (Δ₂ = 1)."""
    return len(keys) + random.gauss(0.0, sigma)


def gaussian_sigma(epsilon: float, delta: float) -> float:
    """The classical Gaussian mechanism's σ for Δ = 1: √(2 ln(1.25/δ)) / ε (Dwork & Roth, Thm A.1)."""
    return float(np.sqrt(2 * np.log(1.25 / delta)) / epsilon)


def gaussian_sigma_wrong(epsilon: float, delta: float) -> float:
    """The σ with ln(1.25/δ) where √(2 ln(1.25/δ)) belongs… (the bug): the square root and factor 2
    are lost, so σ = ln(1.25/δ)/ε² — below the correct σ for ε > ln(1.25/δ)/√(2 ln(1.25/δ))."""
    return float(np.log(1.25 / delta) / epsilon**2)
