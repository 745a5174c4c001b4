"""Sequential composition: k releases of an ε mechanism cost kε, never more than the total."""

from __future__ import annotations

import math

import pytest

from dpwitness import Accountant, BudgetExceeded, Laplace, ParameterError


def test_k_releases_cost_k_epsilon() -> None:
    mech = Laplace(sensitivity=1, epsilon=0.25)
    accountant = Accountant(1.0)
    for i in range(4):
        accountant.spend(mech.privacy_loss(1), f"q{i}")
    assert accountant.spent == pytest.approx(1.0, abs=1e-7)
    assert len(accountant.history) == 4
    with pytest.raises(BudgetExceeded, match="nothing was released"):
        accountant.spend(0.25, "one too many")
    assert len(accountant.history) == 4


def test_unbounded_accountant_still_counts() -> None:
    accountant = Accountant()
    accountant.spend(3.0)
    accountant.spend(0.0, "Δ = 0 release")
    assert accountant.spent == 3.0 and math.isinf(accountant.remaining)


@pytest.mark.parametrize("epsilon", [-1, math.nan, math.inf])
def test_bad_spend(epsilon: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        Accountant(1.0).spend(epsilon)


@pytest.mark.parametrize("total", [0, -1, math.nan])
def test_bad_total(total: float) -> None:
    with pytest.raises(ParameterError, match="total_epsilon"):
        Accountant(total)
