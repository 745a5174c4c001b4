"""Clopper–Pearson bounds and the ε lower bound they give (Jagielski et al. 2020, DP-Sniper).

For an event E measured on n fresh runs of each input, with c₁ hits under the first input
and c₂ under the second, the statement "p₁ ≥ L and p₂ ≤ U" holds with probability ≥ 1 − α
when each bound is taken at α/2, and then every (ε, δ)-DP mechanism must satisfy
p₁ ≤ e^ε·p₂ + δ, so ε ≥ ln(L − δ) − ln(U).

**Paired runs** (common random numbers): when the k-th run of both inputs draws from one
generator state, each pair lands in one of four cells: E under both (n₁₁ of them), under the
first only (n₁₀), under the second only (n₀₁), under neither. Given the T = n₁₁ + n₁₀ + n₀₁
pairs where E occurs at all, n₁₀ and n₀₁ are binomial in T with probabilities π₁₀ and π₀₁,
and p₁/p₂ = (1 − π₀₁)/(1 − π₁₀) exactly, whatever the coupling. So the ratio is bounded by two
Clopper–Pearson bounds on those conditional probabilities (Bonferroni), valid for any joint law
of the pair, and far tighter when the coupling makes E under both inputs nearly nested: the
uncertainty is then that of n₁₀ alone, not of two large counts whose difference is small.

SciPy (the ``audit`` extra) is imported on first use, so ``import dpwitness`` does not need it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def cp_lower(hits: npt.ArrayLike, n: npt.ArrayLike, alpha: npt.ArrayLike) -> FloatArray:
    """One-sided lower Clopper–Pearson bound on p at level 1 − alpha (real-valued hits allowed)."""
    from scipy.stats import beta

    c = np.asarray(hits, dtype=np.float64)
    total = np.broadcast_to(np.asarray(n, dtype=np.float64), c.shape)
    safe = np.clip(c, 1.0, None)
    low = beta.ppf(alpha, safe, np.clip(total - c + 1.0, 1e-12, None))
    return np.asarray(np.where(c <= 0, 0.0, low), dtype=np.float64)


def cp_upper(hits: npt.ArrayLike, n: npt.ArrayLike, alpha: npt.ArrayLike) -> FloatArray:
    """One-sided upper Clopper–Pearson bound on p at level 1 − alpha."""
    from scipy.stats import beta

    c = np.asarray(hits, dtype=np.float64)
    total = np.broadcast_to(np.asarray(n, dtype=np.float64), c.shape)
    high = beta.ppf(1.0 - np.asarray(alpha, dtype=np.float64), c + 1.0, np.clip(total - c, 1e-12, None))
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


#: The shares of the ratio's α that the bound on π₁₀ may take (the rest goes to π₀₁); one is chosen
#: per event before the final sample, from the selection's counts: a nearly nested coupling (n₀₁ ≈ 0)
#: spends almost all of α where the uncertainty is.
PAIRED_SPLITS = (0.5, 0.8, 0.95)


def _paired_alphas(alpha: float, delta: float, split: npt.ArrayLike) -> tuple[FloatArray, FloatArray, float]:
    ratio = alpha * 2.0 / 3.0 if delta > 0 else alpha
    share = np.asarray(split, dtype=np.float64)
    return ratio * share, ratio * (1.0 - share), alpha / 3.0


def paired_epsilon_lower_bound(
    both: npt.ArrayLike,
    first_only: npt.ArrayLike,
    second_only: npt.ArrayLike,
    n: int | float,
    *,
    delta: float,
    alpha: float,
    split: npt.ArrayLike = 0.5,
) -> FloatArray:
    """ln(p₁ − δ) − ln(p₂) bounded below from paired runs (see the module's docstring) at level
    1 − alpha: ln((1 − π₀₁_upper)/(1 − π₁₀_lower)), π₁₀'s bound at ``split`` of α and π₀₁'s at
    the rest; when δ > 0 those two share 2α/3 and ln(1 − δ/p₁_lower) is added, p₁_lower at α/3
    from the n₁₁ + n₁₀ hits of n pairs. −∞ where nothing is certified."""
    n11, n10, n01 = (np.asarray(x, dtype=np.float64) for x in (both, first_only, second_only))
    first_alpha, second_alpha, delta_alpha = _paired_alphas(alpha, delta, split)
    total = n11 + n10 + n01
    seen = np.maximum(total, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log1p(-cp_upper(n01, seen, second_alpha)) - np.log1p(-cp_lower(n10, seen, first_alpha))
        if delta > 0:
            first = cp_lower(n11 + n10, n, delta_alpha)
            log_ratio = np.where(first > delta, log_ratio + np.log1p(-delta / np.clip(first, 1e-300, None)), -np.inf)
        return np.asarray(np.where((total > 0) & np.isfinite(log_ratio), log_ratio, -np.inf), dtype=np.float64)


def paired_projection(
    both: FloatArray,
    first_only: FloatArray,
    second_only: FloatArray,
    n_seen: float,
    n_measure: float,
    *,
    delta: float,
    alpha: float,
    shrink: float,
) -> tuple[FloatArray, FloatArray]:
    """(projected bound, split): what :func:`paired_epsilon_lower_bound` should give on
    ``n_measure`` pairs, from counts on ``n_seen`` pairs, at the best of :data:`PAIRED_SPLITS`.
    Each conditional probability is first shrunk to its Wilson bound at ``shrink`` (so that a lucky
    rare event does not rank first), then given Wilson bounds at the measurement size (fast: used
    to rank events and choose the split, never to certify)."""
    total = both + first_only + second_only
    seen = np.maximum(total, 1.0)
    first = wilson_bounds(first_only, seen, shrink)[0]
    second = wilson_bounds(second_only, seen, shrink)[1]
    scale = n_measure / max(n_seen, 1.0)
    expected = np.maximum(total * scale, 1.0)
    delta_term = np.zeros(total.shape)  # ln(1 − δ/p₁_lower), the same for every split
    if delta > 0:
        p1 = wilson_bounds((both + first_only) * scale, n_measure, _paired_alphas(alpha, delta, 0.5)[2])[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            delta_term = np.where(p1 > delta, np.log1p(-delta / np.clip(p1, 1e-300, None)), -np.inf)
    best = np.full(total.shape, -np.inf)
    chosen = np.full(total.shape, PAIRED_SPLITS[0])
    for split in PAIRED_SPLITS:
        first_alpha, second_alpha, _ = _paired_alphas(alpha, delta, split)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (
                np.log1p(-wilson_bounds(second * expected, expected, float(second_alpha))[1])
                - np.log1p(-wilson_bounds(first * expected, expected, float(first_alpha))[0])
                + delta_term
            )
        value = np.where((total > 0) & np.isfinite(value), value, -np.inf)
        better = value > best
        best, chosen = np.where(better, value, best), np.where(better, split, chosen)
    return np.asarray(best, dtype=np.float64), np.asarray(chosen, dtype=np.float64)


def wilson_bounds(hits: npt.ArrayLike, n: npt.ArrayLike, alpha: float) -> tuple[FloatArray, FloatArray]:
    """Fast one-sided Wilson score bounds (lower, upper) at level 1 − alpha; used to rank events, not to certify."""
    from scipy.special import ndtri

    z = float(ndtri(1.0 - alpha))
    n = np.asarray(n, dtype=np.float64)
    p = np.asarray(hits, dtype=np.float64) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(np.clip(p * (1 - p), 0.0, None) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
