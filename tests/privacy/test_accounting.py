"""The privacy math has one implementation, rounded in the safe direction (issue 26, item 4)."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext, localcontext
from fractions import Fraction

import numpy as np
import pytest

import dpwitness.explorer.planner as planner
import dpwitness.noise.calibration as calibration
import dpwitness.noise.gaussian as gaussian
import dpwitness.privacy.accounting as accounting
import dpwitness.privacy.budget as budget
from dpwitness import Gaussian, Laplace
from dpwitness.common.errors import ParameterError
from dpwitness.noise import GridGaussian


def _bound_at(rho: float, epsilon: float, alpha: float) -> Decimal:
    """The CKS bound at ``alpha`` in 80-digit arithmetic: a valid δ for every α > 1."""
    with localcontext() as context:
        context.prec = 80
        a, r, e = Decimal(alpha), Decimal(rho), Decimal(epsilon)
        exponent = (a - 1) * (a * r - e) + a * (1 - 1 / a).ln() - (a - 1).ln()
        return Decimal(1) if exponent > 0 else exponent.exp()


def test_calibration_and_the_budget_convert_zcdp_with_the_same_function() -> None:
    assert gaussian.zcdp_delta is calibration.zcdp_delta is accounting.zcdp_delta
    assert budget.zcdp_delta is accounting.zcdp_delta
    assert calibration.analytic_gaussian_sigma is planner.analytic_gaussian_sigma is accounting.analytic_gaussian_sigma


@pytest.mark.parametrize(("rho", "epsilon"), [(0.5, 1.0), (0.125, 1.0), (0.01, 0.5), (2.0, 10.0), (1e-4, 0.1)])
def test_the_conversion_is_never_below_the_bound_at_its_own_alpha(rho: float, epsilon: float) -> None:
    """δ is the bound evaluated at a searched α and rounded up: at that α, in higher precision,
    it is not smaller; and within a few ulps of the best α on a fine grid (so it is not loose)."""
    delta = accounting.zcdp_delta(rho, epsilon)
    low, high = accounting._best_alpha(rho, epsilon)
    exact = min(_bound_at(rho, epsilon, a) for a in {low, high, (low + high) / 2})
    assert Decimal(delta) >= exact
    grid = [1 + 10 ** (k / 200) for k in range(-1800, 800)]
    best = min(_bound_at(rho, epsilon, a) for a in grid if a > 1)
    assert delta <= float(best) * (1 + 1e-9)


def test_the_rigorous_value_is_not_below_the_plain_float_evaluation_at_rho_one_half() -> None:
    """The copy that noise.py had evaluated the bound in plain floats (one ulp below the rigorous
    value at ρ = 0.5, ε = 1, which GridGaussian.delta_for_steps promises never to be): the one
    conversion left rounds up, so it is at least the float value and the 80-digit value at its α."""
    rho, epsilon = 0.5, 1.0
    alpha = sum(accounting._best_alpha(rho, epsilon)) / 2
    plain = math.exp((alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha))
    assert accounting.zcdp_delta(rho, epsilon) >= plain
    assert Decimal(accounting.zcdp_delta(rho, epsilon)) >= _bound_at(rho, epsilon, alpha)


# --- exact references: 60-digit decimal arithmetic, checked at the ulp ------------------------------


def _pi() -> Decimal:
    """π to the context's precision (the recipe of the decimal module's documentation)."""
    with localcontext() as context:
        context.prec += 2
        three = Decimal(3)
        last, t, s, n, na, d, da = Decimal(0), three, three, 1, 0, 0, 24
        while s != last:
            last = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
    return +s


def _erfc(x: Decimal) -> Decimal:
    """erfc(x) = 1 − 2/√π·Σ (−1)^n x^(2n+1) / (n!(2n+1)), in the caller's precision (the terms
    reach e^(x²) before they fall: the callers keep x² well below the digits they carry)."""
    total, term, n = Decimal(0), x, 0
    while abs(term) > Decimal(10) ** -(getcontext().prec + 20) or n < 3:
        total += term / (2 * n + 1)
        n += 1
        term = -term * x * x / n
    return 1 - 2 / _pi().sqrt() * total


def _exact_gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> Decimal:
    s, d, e = Decimal(sigma), Decimal(sensitivity), Decimal(epsilon)
    a, b, root2 = d / (2 * s), e * s / d, Decimal(2).sqrt()
    return _erfc((b - a) / root2) / 2 - e.exp() * _erfc((a + b) / root2) / 2


@pytest.mark.parametrize(("sensitivity", "sigma"), [(1.0, 3.0), (0.1, 7.3), (3.0, 1e-3), (1.0, 2.0**16 + 0.1)])
def test_the_gaussian_rho_is_never_below_the_exact_ratio(sensitivity: float, sigma: float) -> None:
    rho = accounting.gaussian_rho(sensitivity, sigma)
    exact = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)
    assert Fraction(rho) >= exact
    assert rho <= float(exact) * (1 + 8 * 2.0**-52)


@pytest.mark.parametrize(("sensitivity", "rho"), [(1.0, 0.5), (1.0, 1e-3), (7.0, 0.02), (2.0**17, 1e-6)])
def test_the_sigma_for_a_rho_is_never_below_the_needed_one(sensitivity: float, rho: float) -> None:
    sigma = accounting.gaussian_sigma_for_rho(sensitivity, rho)
    assert Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2) <= Fraction(rho)
    assert sigma <= sensitivity / math.sqrt(2 * rho) * (1 + 8 * 2.0**-52)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 1e-3, 1e-9, 0.5])
@pytest.mark.parametrize("scale", [1.0, 0.37, 1e6])
def test_the_laplace_half_width_is_never_below_b_ln_one_over_alpha(scale: float, alpha: float) -> None:
    width = accounting.laplace_half_width(scale, alpha)
    with localcontext() as context:
        context.prec = 60
        exact = Decimal(scale) * -Decimal(alpha).ln()
        assert Decimal(width) >= exact
        assert Decimal(width) <= exact * (1 + Decimal(2) ** -49)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 1e-3, 1e-9])
def test_the_gaussian_half_width_covers_at_least_the_stated_level(alpha: float) -> None:
    """P(|N(0, σ²)| > w) = erfc(w/σ√2) ≤ α, computed in 120 digits, and w is tight to 10^-11."""
    sigma = 4.2
    width = accounting.gaussian_half_width(sigma, alpha)
    with localcontext() as context:
        context.prec = 120
        miss = _erfc(Decimal(width) / (Decimal(sigma) * Decimal(2).sqrt()))
        assert miss <= Decimal(alpha)
        assert _erfc(Decimal(width * (1 - 1e-11)) / (Decimal(sigma) * Decimal(2).sqrt())) > Decimal(alpha)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.5, 0.01), (0.01, 1e-9), (5.0, 1e-10), (50.0, 0.1)])
def test_the_analytic_sigma_is_never_below_the_one_needed(epsilon: float, delta: float) -> None:
    """At the σ returned the exact δ(ε) fits (160 digits); 10^-9 below it, it does not (tight)."""
    sigma = accounting.analytic_gaussian_sigma(1.0, epsilon, delta)
    with localcontext() as context:
        context.prec = 160
        assert _exact_gaussian_delta(sigma, 1.0, epsilon) <= Decimal(delta)
        assert _exact_gaussian_delta(sigma * (1 - 1e-9), 1.0, epsilon) > Decimal(delta)
        assert Decimal(accounting.gaussian_delta(sigma, 1.0, epsilon)) >= _exact_gaussian_delta(sigma, 1.0, epsilon)
    assert accounting.analytic_gaussian_sigma(1.0, 1.0, 1e-6) == pytest.approx(4.2247, abs=1e-4)


def test_the_grid_gaussian_delta_goes_through_the_one_conversion_at_rho_one_half() -> None:
    """GridGaussian.delta_for_steps (several coordinates) and the budget convert ρ = 0.5 at ε = 1
    with the same rounded-up function: both are at least the 80-digit bound at the searched α."""
    noise = GridGaussian(0, 4.0)
    steps = 2.0 * math.sqrt(2.0)  # ρ = k²/2s² = 8/32 … raised to 0.5 by the shift below
    rho = noise.rho_for_steps(steps)
    assert rho == accounting.gaussian_rho(steps, 4.0) and Fraction(rho) >= Fraction(steps) ** 2 / 32
    ideal = noise.delta_for_steps(1.0, steps, changed=2) - (1.0 + math.e) * 2 * noise.tv_distance()
    assert ideal >= accounting.zcdp_delta(rho, 1.0) * (1 - 1e-12) - 1e-15
    alpha = sum(accounting._best_alpha(0.5, 1.0)) / 2
    assert Decimal(budget.zcdp_delta(0.5, 1.0)) >= _bound_at(0.5, 1.0, alpha)


def test_every_interval_is_the_accounting_half_width() -> None:
    laplace = Laplace(sensitivity=1.0, epsilon=0.7)
    gauss = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)
    assert laplace.interval(0.05) == accounting.laplace_half_width(laplace.scale, 0.05)
    assert gauss.interval(0.05) == accounting.gaussian_half_width(gauss.sigma, 0.05)
    assert laplace.release(3.0, seed=1).half_width == accounting.laplace_half_width(laplace.scale, 0.05)


@pytest.mark.parametrize(("shift", "scale"), [(1.0, 2.0), (-0.7, 0.3), (0.01, 1.0), (5.0, 1.0)])
def test_laplace_kl_divergence_is_the_integral_of_the_privacy_loss(shift: float, scale: float) -> None:
    """KL(Lap(0, b) ‖ Lap(−d, b)) = |d|/b + e^(−|d|/b) − 1, checked against E[L] by quadrature."""
    z = np.linspace(-60 * scale - abs(shift), 60 * scale + abs(shift), 2_000_001)
    density = np.exp(-np.abs(z) / scale) / (2 * scale)
    loss = (np.abs(z + shift) - np.abs(z)) / scale
    numeric = float(np.sum(density * loss) * (z[1] - z[0]))
    assert accounting.laplace_kl_divergence(shift, scale) == pytest.approx(numeric, rel=1e-5, abs=1e-13)
    assert accounting.laplace_kl_divergence(0.0, scale) == 0.0


def test_randomized_response_epsilon_truth_and_count_std() -> None:
    """ε = ln((1 + p)/(1 − p)) (never below), p = tanh(ε/2) (never above), std = √(n(1 − p²))/(2p) (never below)."""
    half = accounting.randomized_response_epsilon(0.5)
    assert half >= math.log(3) and half == pytest.approx(math.log(3))
    assert accounting.randomized_response_epsilon(0.0) == 0.0
    for epsilon in (0.01, 0.5, 1.0, 5.0):
        truth = accounting.randomized_response_truth(epsilon)
        assert truth == pytest.approx((math.exp(epsilon) - 1) / (math.exp(epsilon) + 1))
        assert math.log((1 + truth) / (1 - truth)) <= epsilon  # the truth probability spends at most ε
        std = accounting.randomized_response_count_std(1000, epsilon)
        exact = math.sqrt(1000 * (1 - truth**2)) / (2 * truth)
        assert std >= exact and std == pytest.approx(exact)
    with pytest.raises(ParameterError):
        accounting.randomized_response_epsilon(1.0)
