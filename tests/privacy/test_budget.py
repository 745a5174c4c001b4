"""Composition: (ε, δ) by basic composition, ρ by zCDP with the CKS conversion, the better of the two."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import pytest

from dpwitness import Accountant, BudgetExceeded, Gaussian, Laplace, ParameterError
from dpwitness.privacy.budget import (
    Budget,
    Ledger,
    Spend,
    Usage,
    admits,
    guarantee,
    remaining,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_rho,
)


def test_k_releases_cost_k_epsilon() -> None:
    mech = Laplace(sensitivity=1, epsilon=0.25)
    accountant = Accountant(1.0)
    for i in range(4):
        accountant.spend(mech.privacy_loss(1), f"q{i}")
    assert accountant.spent.epsilon == pytest.approx(1.0, abs=1e-7) and accountant.spent.delta == 0
    assert len(accountant.history) == 4
    with pytest.raises(BudgetExceeded, match="nothing was released"):
        accountant.spend(0.25, "one too many")
    assert len(accountant.history) == 4


def test_unbounded_accountant_still_counts() -> None:
    accountant = Accountant()
    accountant.spend(3.0)
    accountant.spend(0.0, "Δ = 0 release")
    accountant.spend(1.0, "with δ", delta=1e-3)
    assert accountant.spent.epsilon == 4.0 and accountant.spent.delta == 1e-3 and math.isinf(accountant.remaining.epsilon)


def test_budget_reads_as_epsilon_and_delta() -> None:
    assert str(Budget(0.5, 1e-6, math.inf)) == "ε = 0.5, δ = 1e-06"
    assert str(Budget(math.inf, 0.0, 0.25)) == "δ = 0, ρ = 0.25"
    assert Budget(1.0, 0.0, math.inf).to_dict() == {"epsilon": 1.0, "delta": 0.0, "rho": None}


@pytest.mark.parametrize("epsilon", [-1, math.nan])
def test_bad_spend(epsilon: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        Accountant(1.0).spend(epsilon)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"total_epsilon": 0}, "epsilon"),
        ({"total_epsilon": -1}, "epsilon"),
        ({"total_epsilon": math.nan}, "epsilon"),
        ({"total_epsilon": 1, "rho": 0.5}, "rho"),  # both (ε, δ) and ρ
        ({"rho": 0}, "rho"),
        ({"rho": -0.1}, "rho"),
        ({"total_epsilon": 1, "delta": 1.0}, "delta_budget"),
        ({"total_epsilon": 1, "delta": -1e-9}, "delta_budget"),
    ],
)
def test_bad_total(kwargs: dict[str, float], parameter: str) -> None:
    with pytest.raises(ParameterError) as caught:
        Accountant(**kwargs)  # type: ignore[arg-type]
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


# --- the CKS conversion -------------------------------------------------------------------------


def gaussian_delta(rho: float, epsilon: float) -> float:
    """The exact δ(ε) of the continuous Gaussian with ρ = Δ²/(2σ²) (Balle–Wang 2018): a ρ-zCDP
    mechanism, so any valid zCDP → (ε, δ) conversion must give at least this."""
    mu, normal = math.sqrt(2 * rho), NormalDist()
    return normal.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * normal.cdf(-epsilon / mu - mu / 2)


CASES = [(0.5, 1.0), (0.01, 1.0), (0.1, 2.0), (1e-6, 0.01), (2.0, 5.0), (0.005, 0.43)]


@pytest.mark.parametrize(("rho", "epsilon"), CASES)
def test_cks_delta_is_valid_and_tighter_than_the_classic_bound(rho: float, epsilon: float) -> None:
    delta = zcdp_delta(rho, epsilon)
    classic = math.exp(-((epsilon - rho) ** 2) / (4 * rho))  # Bun–Steinke 2016, Prop. 1.3
    assert gaussian_delta(rho, epsilon) <= delta < classic


@pytest.mark.parametrize(("rho", "epsilon"), CASES)
def test_cks_delta_is_the_infimum_over_alpha(rho: float, epsilon: float) -> None:
    """Against an independent minimisation of the same expression (scipy, over log(α − 1))."""
    optimize = pytest.importorskip("scipy.optimize")

    def log_delta(t: float) -> float:
        alpha = 1 + math.exp(t)
        return (alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)

    found = optimize.minimize_scalar(log_delta, bounds=(-30, 30), method="bounded", options={"xatol": 1e-12})
    reference = math.exp(found.fun)
    ours = zcdp_delta(rho, epsilon)
    assert reference * (1 - 1e-9) <= ours <= reference * (1 + 1e-6)


def test_cks_conversions_invert_each_other() -> None:
    for rho, delta in [(0.005, 1e-6), (0.5, 1e-5), (0.0243, 1e-6)]:
        epsilon = zcdp_epsilon(rho, delta)
        assert zcdp_delta(rho, epsilon) <= delta < zcdp_delta(rho, epsilon * (1 - 1e-9))
        assert epsilon < rho + 2 * math.sqrt(rho * math.log(1 / delta))
    for epsilon, delta in [(1.0, 1e-6), (0.3, 1e-6), (2.0, 1e-9)]:
        rho = zcdp_rho(epsilon, delta)
        assert zcdp_delta(rho, epsilon) <= delta < zcdp_delta(rho * (1 + 1e-9), epsilon)
    assert zcdp_delta(0.0, 1.0) == 0.0 and zcdp_epsilon(0.0, 1e-6) == 0.0


# --- composition against a total ---------------------------------------------------------------


def test_a_delta_budget_lets_zcdp_composition_admit_more_laplace_releases() -> None:
    """100 × ε = 0.01 exhaust ε = 1 by basic composition; with δ = 1e-6, zCDP composition of the
    same releases (ρ = ε²/2 each) fits ⌊ρ_max / 5e-5⌋ of them, ρ_max = zcdp_rho(1, 1e-6)."""
    pure, relaxed = Accountant(1.0), Accountant(1.0, delta=1e-6)
    for accountant in (pure, relaxed):
        admitted = 0
        while True:
            try:
                accountant.spend(0.01, f"q{admitted}")
            except BudgetExceeded:
                break
            admitted += 1
        accountant.admitted = admitted  # type: ignore[attr-defined]
    expected = math.floor(zcdp_rho(1.0, 1e-6) / 5e-5 * (1 + 1e-12))
    assert pure.admitted == 100  # type: ignore[attr-defined]
    assert relaxed.admitted == expected > 400  # type: ignore[attr-defined]
    spent = relaxed.spent
    assert spent.epsilon <= 1.0 and spent.delta == 1e-6 and spent.rho == pytest.approx(expected * 5e-5)
    assert Accountant(1.0, delta=1e-6).spent == Budget(0.0, 0.0, 0.0)


def test_selection_delta_is_not_zcdp_and_adds_to_the_converted_delta() -> None:
    total = Budget(1.0, 1e-6, math.inf)
    laplace = [Spend(f"q{i}", 0.01) for i in range(300)]  # ρ = 0.015 in all: fits by zCDP alone
    assert admits(total, Usage.of(laplace))
    used = zcdp_delta(0.015, 1.0)
    room = 1e-6 - used
    assert admits(total, Usage.of([*laplace, Spend("keys", 0.0, room * 0.99)]))
    assert not admits(total, Usage.of([*laplace, Spend("keys", 0.0, room * 1.01)]))
    # a Gaussian-like spend: its own (ε, δ) for basic composition, its ρ for zCDP, no selection δ
    gaussian = Spend("gaussian", 1.0, 1e-6, rho=0.0281, selection_delta=0.0)
    assert admits(total, Usage.of([gaussian]))  # basic: (1, 1e-6)
    assert not admits(total, Usage.of([gaussian, Spend("one more", 0.01)]))


def test_the_gaussian_tables_tv_distance_adds_one_plus_e_to_the_epsilon_to_the_converted_delta() -> None:
    """A Gaussian's ρ is that of the ideal N_ℤ(0, s²); its tables are within TV η·c of it, which
    costs (1 + e^ε)·η·c of δ on the zCDP route (and nothing on the basic route, whose δ already has it)."""
    total = Budget(1.0, 1e-6, math.inf)
    laplace = [Spend(f"q{i}", 0.01) for i in range(300)]  # ρ = 0.015: fits by zCDP alone
    room = 1e-6 - zcdp_delta(0.015, 1.0)
    factor = 1.0 + math.e
    fits = Spend("gaussian", math.inf, 0.0, rho=0.0, selection_delta=0.0, tv_distance=room * 0.99 / factor)
    too_much = Spend("gaussian", math.inf, 0.0, rho=0.0, selection_delta=0.0, tv_distance=room * 1.01 / factor)
    assert admits(total, Usage.of([*laplace, fits]))
    assert not admits(total, Usage.of([*laplace, too_much]))  # 1.01·room/(1+e): refused only through the e^ε factor
    assert Usage.of([*laplace, fits]).tv_distance == fits.tv_distance
    # the reported guarantee converts Σρ with the charge: a larger ε than without it
    plain = guarantee(total, Usage.of(laplace))
    charged = guarantee(total, Usage.of([*laplace, Spend("t", math.inf, 0.0, 0.0, 0.0, tv_distance=room / 10)]))
    assert charged.epsilon > plain.epsilon and charged.delta == plain.delta == 1e-6
    assert remaining(total, Usage.of([*laplace, fits])).rho < remaining(total, Usage.of(laplace)).rho
    with pytest.raises(ParameterError) as bad:
        Accountant(1.0, delta=1e-6).spend(0.1, tv_distance=-1e-15)
    assert bad.value.parameter == "tv_distance"


def test_a_gaussian_release_records_its_tables_tv_distance(tmp_path: Path) -> None:
    gaussian = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6, dimension=5, changed_coordinates=2)
    assert gaussian.noise is not None
    assert gaussian.tv_spent == 2 * gaussian.noise.tv_distance() and 0 < gaussian.tv_spent < 1e-13
    ledger = Ledger(tmp_path / "l.db")
    accountant = Accountant(10.0, delta=1e-5, ledger=ledger, account="a")
    accountant.spend(math.inf, "g", delta=0.0, rho=gaussian.rho_spent, selection_delta=0.0, tv_distance=gaussian.tv_spent)
    assert [s.tv_distance for s in ledger.history("a")] == [gaussian.tv_spent]
    assert ledger.usage("a").tv_distance == gaussian.tv_spent


def test_a_rho_total_charges_laplace_epsilon_squared_over_two() -> None:
    accountant = Accountant(rho=0.5)
    accountant.spend(1.0, "ε = 1 is ρ = 0.5")
    assert accountant.spent.rho == 0.5 and accountant.remaining.rho == 0
    with pytest.raises(BudgetExceeded, match=r"ρ = 0\.5"):
        accountant.spend(0.01)
    with pytest.raises(BudgetExceeded):  # no δ budget: selection δ is refused
        Accountant(rho=1.0).spend(0.1, delta=1e-9)
    assert Accountant(rho=1.0, delta=1e-6).spend(0.1, delta=1e-9).selection_delta == 1e-9


def test_guarantee_and_remaining_report_the_better_route() -> None:
    total = Budget(1.0, 1e-6, math.inf)
    few = Usage.of([Spend("a", 0.5)])
    assert guarantee(total, few) == Budget(0.5, 0.0, 0.125)  # basic is better for one release
    many = Usage.of([Spend(f"q{i}", 0.01) for i in range(200)])
    converted = guarantee(total, many)
    assert converted.delta == 1e-6 and converted.epsilon == zcdp_epsilon(0.01, 1e-6) < 2.0
    left = remaining(total, many)
    assert left.epsilon == pytest.approx(math.sqrt(2 * (zcdp_rho(1.0, 1e-6) - 0.01)))


def test_raising_a_budget_in_memory() -> None:
    accountant = Accountant(1.0)
    accountant.spend(1.0)
    assert accountant.raise_budget(epsilon=2.0, delta=1e-6) == Budget(2.0, 1e-6, math.inf)
    accountant.spend(1.0)
    with pytest.raises(ParameterError, match="can only be raised") as caught:
        accountant.raise_budget(epsilon=1.5)
    assert caught.value.parameter == "epsilon"
    with pytest.raises(ParameterError) as wrong_kind:
        accountant.raise_budget(rho=1.0)
    assert wrong_kind.value.parameter == "rho"


def test_the_running_sums_are_those_of_the_whole_history_bit_for_bit() -> None:
    import random

    from dpwitness.privacy.budget import RunningUsage, Spend, Usage

    rng = random.Random(5)
    running, history = RunningUsage(), []
    for n in range(3000):
        epsilon = rng.choice([0.1, 1e-9, 0.3, 7.0, 1 / 3, 1e-17]) * rng.random()
        spend = Spend(f"q{n}", epsilon, rng.random() * 1e-7, math.nan, math.nan, rng.random() * 1e-12)
        history.append(spend)
        running.add(spend)
        if n % 97 == 0 or n > 2990:
            assert running.value(history) == Usage.of(history)
    assert running.value(history) != Usage.of(history[:-1])
    running.add(Spend("rho", math.inf, 0.0, 0.5, 0.0, 0.0))  # ε = ∞ (a ρ release): the sums over the history
    history.append(Spend("rho", math.inf, 0.0, 0.5, 0.0, 0.0))
    assert running.value(history) == Usage.of(history) and running.value(history).epsilon == math.inf


def test_an_accountant_after_many_spends_still_refuses_exactly_at_the_total() -> None:
    accountant = Accountant(1.0)
    for _ in range(10):
        accountant.spend(0.1)
    assert accountant.usage.epsilon == math.fsum([0.1] * 10) and accountant.usage.records == 10
    with pytest.raises(BudgetExceeded):
        accountant.spend(1e-9)
