"""Clopper–Pearson bounds and the ε lower bound they give (Jagielski et al. 2020, DP-Sniper).

For an event E measured on n fresh runs of each input, with c₁ hits under the first input
and c₂ under the second, the statement "p₁ ≥ L and p₂ ≤ U" holds with probability ≥ 1 − α
when each bound is taken at α/2, and then every (ε, δ)-DP mechanism must satisfy
p₁ ≤ e^ε·p₂ + δ, so ε ≥ ln(L − δ) − ln(U).

SciPy (the ``audit`` extra) is imported on first use, so ``import dpwitness`` does not need it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def cp_lower(hits: npt.ArrayLike, n: npt.ArrayLike, alpha: float) -> FloatArray:
    """One-sided lower Clopper–Pearson bound on p at level 1 − alpha (real-valued hits allowed)."""
    from scipy.stats import beta

    c = np.asarray(hits, dtype=np.float64)
    total = np.broadcast_to(np.asarray(n, dtype=np.float64), c.shape)
    safe = np.clip(c, 1.0, None)
    low = beta.ppf(alpha, safe, np.clip(total - c + 1.0, 1e-12, None))
    return np.asarray(np.where(c <= 0, 0.0, low), dtype=np.float64)


def cp_upper(hits: npt.ArrayLike, n: npt.ArrayLike, alpha: float) -> FloatArray:
    """One-sided upper Clopper–Pearson bound on p at level 1 − alpha."""
    from scipy.stats import beta

    c = np.asarray(hits, dtype=np.float64)
    total = np.broadcast_to(np.asarray(n, dtype=np.float64), c.shape)
    high = beta.ppf(1.0 - alpha, c + 1.0, np.clip(total - c, 1e-12, None))
    return np.asarray(np.where(c >= total, 1.0, high), dtype=np.float64)


def epsilon_lower_bound(hits1: npt.ArrayLike, hits2: npt.ArrayLike, n: int | float, *, delta: float, alpha: float) -> FloatArray:
    """ln(p₁_lower − δ) − ln(p₂_upper), each bound at alpha/2; −∞ where p₁_lower ≤ δ."""
    low = cp_lower(hits1, n, alpha / 2.0) - delta
    high = cp_upper(hits2, n, alpha / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(low > 0, np.log(np.clip(low, 1e-300, None)) - np.log(high), -np.inf), dtype=np.float64)


def epsilon_upper_bound(hits1: npt.ArrayLike, hits2: npt.ArrayLike, n: int | float, *, delta: float, alpha: float) -> FloatArray:
    """ln(p₁_upper − δ) − ln(p₂_lower), each bound at alpha/2: the most this event could show."""
    high = cp_upper(hits1, n, alpha / 2.0) - delta
    low = cp_lower(hits2, n, alpha / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(low > 0, np.log(np.clip(high, 1e-300, None)) - np.log(np.clip(low, 1e-300, None)), np.inf)
        return np.asarray(np.where(high <= 0, -np.inf, value), dtype=np.float64)


def epsilon_estimate(hits1: npt.ArrayLike, hits2: npt.ArrayLike, n: int | float, *, delta: float) -> FloatArray:
    """The plug-in ln((p̂₁ − δ)/p̂₂) (±∞ at the edges)."""
    p1 = np.asarray(hits1, dtype=np.float64) / n - delta
    p2 = np.asarray(hits2, dtype=np.float64) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(p2 > 0, np.log(np.clip(p1, 1e-300, None)) - np.log(np.clip(p2, 1e-300, None)), np.inf)
        return np.asarray(np.where(p1 <= 0, -np.inf, value), dtype=np.float64)


def wilson_bounds(hits: npt.ArrayLike, n: float, alpha: float) -> tuple[FloatArray, FloatArray]:
    """Fast one-sided Wilson score bounds (lower, upper) at level 1 − alpha; used to rank events, not to certify."""
    from scipy.special import ndtri

    z = float(ndtri(1.0 - alpha))
    p = np.asarray(hits, dtype=np.float64) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(np.clip(p * (1 - p), 0.0, None) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
