"""Privacy accounting math, in one place for every layer: the zCDP → (ε, δ) conversion.

Calibration (:mod:`dpwitness.noise`), the budget (:mod:`dpwitness.privacy.budget`) and everything that
reports a δ call :func:`zcdp_delta` here, so the conversion has one implementation, rounded in
the safe direction (a δ never below the true one). Needs only the standard library.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

from dpwitness.common.validation import check_non_negative_finite


def zcdp_delta(rho: float, epsilon: float) -> float:
    """A δ, never smaller than the true one, such that ρ-zCDP implies (ε, δ)-DP.

    CKS 2020 (Corollary 13): δ = inf over α > 1 of exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α.
    Every α > 1 gives a valid bound, so α is searched in floating point (bisection on the
    derivative of the exponent) and the bound is then evaluated *at that α* in 60-digit
    decimal arithmetic and rounded up to the next float: the result is rigorous.

    :param rho: ρ ≥ 0 (finite); 0 gives δ = 0.
    :param epsilon: ε ≥ 0 (finite). The result is at most 1.
    """
    rho = check_non_negative_finite("rho", rho)
    epsilon = check_non_negative_finite("epsilon", epsilon)
    if rho == 0:
        return 0.0
    low, high = _best_alpha(rho, epsilon)
    best = min(_cks_bound(rho, epsilon, a) for a in {low, high, (low + high) / 2, 1.0 + 1e-6})
    return min(best, 1.0)


def _best_alpha(rho: float, epsilon: float) -> tuple[float, float]:
    """A float bracket of the α minimising the CKS bound (the root of its exponent's derivative)."""
    low, high = 1.0 + 1e-9, (epsilon + 1) / (2 * rho) + 2
    for _ in range(200):
        alpha = (low + high) / 2
        if alpha in (low, high):
            break
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1.0 / alpha) < 0:
            low = alpha
        else:
            high = alpha
    return low, high


def _cks_bound(rho: float, epsilon: float, alpha: float) -> float:
    """exp((α−1)(αρ−ε) + α·ln(1 − 1/α)) / (α−1) at this α, rounded up (valid for any α > 1)."""
    if not alpha > 1:
        return 1.0
    with localcontext() as context:
        context.prec = 60
        a, r, e = Decimal(alpha), Decimal(rho), Decimal(epsilon)
        exponent = (a - 1) * (a * r - e) + a * (1 - 1 / a).ln() - (a - 1).ln()
        if exponent > 0:
            return 1.0
        if exponent < -745:  # below the smallest float
            return 5e-324
        value = exponent.exp()
    return math.nextafter(float(value), math.inf)


def _approximate_delta(rho: float, epsilon: float) -> float:
    """:func:`zcdp_delta` in plain floating point (for searches; never the final answer)."""
    if rho == 0:
        return 0.0
    alpha = sum(_best_alpha(rho, epsilon)) / 2
    exponent = (alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
    return 1.0 if exponent > 0 else math.exp(exponent)
