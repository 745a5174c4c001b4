"""The privacy math has one implementation, rounded in the safe direction (issue 26, item 4)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import pytest

import dpwitness.noise as noise
import dpwitness.privacy.accounting as accounting
import dpwitness.privacy.budget as budget


def _bound_at(rho: float, epsilon: float, alpha: float) -> Decimal:
    """The CKS bound at ``alpha`` in 80-digit arithmetic: a valid δ for every α > 1."""
    with localcontext() as context:
        context.prec = 80
        a, r, e = Decimal(alpha), Decimal(rho), Decimal(epsilon)
        exponent = (a - 1) * (a * r - e) + a * (1 - 1 / a).ln() - (a - 1).ln()
        return Decimal(1) if exponent > 0 else exponent.exp()


def test_calibration_and_the_budget_convert_zcdp_with_the_same_function() -> None:
    assert noise.zcdp_delta is accounting.zcdp_delta
    assert budget.zcdp_delta is accounting.zcdp_delta


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
