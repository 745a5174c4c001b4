"""``Session.plan``: the smallest budget meeting target errors, solved exactly, shown before any spend."""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.privacy.budget import Ledger
from dpwitness.query.resolve import Request
from dpwitness.session import Session, Target

KEYS = list(range(2000))


def _keyed(rows_per_key: int, value: float = 30.0) -> pl.DataFrame:
    """``rows_per_key`` rows in each of 2000 keys, every ``age`` = ``value``: one release, 2000 samples."""
    n = rows_per_key * len(KEYS)
    return pl.DataFrame({"g": np.repeat(KEYS, rows_per_key), "age": np.full(n, value)})


def _binomial_margin(alpha: float, trials: int) -> float:
    """4 standard deviations of a share of ``trials`` with success probability 1 − α."""
    return 4 * math.sqrt(alpha * (1 - alpha) / trials)


def test_laplace_count_needs_delta_ln_one_over_alpha_over_error() -> None:
    session = Session(pl.DataFrame({"x": [1.0, 2.0]}), epsilon=5)
    for alpha, error in ((0.05, 10.0), (0.01, 3.0), (0.2, 0.5)):
        plan = session.plan([Target(Request("count"), error=error)], alpha=alpha)
        expected = math.log(1 / alpha) / error  # Δ = 1
        assert plan.statistics[0].epsilon == pytest.approx(expected, rel=1e-12)
        assert plan.statistics[0].epsilon >= expected * (1 - 1e-15)  # never below: the safe side
        assert plan.statistics[0].half_width <= error
        assert plan.total.epsilon == pytest.approx(expected, rel=1e-12)


def test_the_total_is_the_sum_and_each_sum_uses_its_own_sensitivity() -> None:
    session = Session(pl.DataFrame({"x": [1.0, 2.0]}), epsilon=5)
    targets = [Target(Request("count"), error=10.0), Target(Request("sum", "x", bounds=(0.0, 50.0)), error=100.0)]
    plan = session.plan(targets)
    count, total = plan.statistics
    assert count.epsilon == pytest.approx(math.log(20) / 10, rel=1e-12)
    assert total.epsilon == pytest.approx(50 * math.log(20) / 100, rel=1e-12)  # Δ of a sum in [0, 50]: 50
    assert plan.total.epsilon == pytest.approx(count.epsilon + total.epsilon, rel=1e-12)
    assert plan.fits and plan.total.delta == 0


def test_a_mean_meets_its_documented_bound_exactly_with_the_optimal_split() -> None:
    """The mean's rule: parts within w_i = b_i·ln(2/α) (α/2 each), |error| ≤ (w_sum + h·w_count)/(n − w_count)."""
    session = Session(pl.DataFrame({"age": [1.0, 2.0]}), epsilon=5)
    alpha, error, n, h = 0.05, 2.0, 4000, 50.0
    plan = session.plan([Target(Request("mean", "age", bounds=(0.0, 100.0)), error=error, min_rows=n)], alpha=alpha)
    (mean,) = plan.statistics
    count, centred = mean.parts
    assert (count["sensitivity"], centred["sensitivity"]) == (1.0, h)  # centred sum: Δ = h (add-remove)
    w_count = float(count["scale"]) * math.log(2 / alpha)
    w_sum = float(centred["scale"]) * math.log(2 / alpha)
    assert (w_sum + h * w_count) / (n - w_count) == pytest.approx(error, rel=1e-9)
    expected = math.log(2 / alpha) * (math.sqrt(h) + math.sqrt(h + error)) ** 2 / (error * n)
    assert mean.epsilon == pytest.approx(expected, rel=1e-9)
    assert float(count["epsilon"]) / float(centred["epsilon"]) == pytest.approx(math.sqrt((h + error) / h), rel=1e-9)
    assert mean.half_width <= error


def test_gaussian_on_a_rho_account_needs_rho_of_the_sigma_and_converts_at_the_sessions_delta() -> None:
    session = Session(pl.DataFrame({"x": [1.0, 2.0]}), rho=1.0, delta=1e-7)
    alpha, error = 0.05, 10.0
    plan = session.plan([Target(Request("count"), error=error)], alpha=alpha, mechanism="gaussian")
    sigma = error / NormalDist().inv_cdf(1 - alpha / 2)
    assert plan.statistics[0].rho == pytest.approx(1 / (2 * sigma**2), rel=1e-6)  # Δ₂ = 1; grid rounding ≪ 1e-6
    assert plan.statistics[0].half_width <= error
    assert plan.requests()[0].rho == plan.statistics[0].rho
    assert plan.converted is not None and plan.converted.delta == 1e-7
    from dpwitness.privacy.accounting import zcdp_epsilon

    assert plan.converted.epsilon == zcdp_epsilon(plan.total.rho, 1e-7)


def test_gaussian_on_an_epsilon_delta_account_meets_the_target() -> None:
    session = Session(pl.DataFrame({"x": [1.0, 2.0]}), epsilon=3, delta_budget=1e-5)
    plan = session.plan([Target(Request("count"), error=10.0)], mechanism="gaussian")
    (count,) = plan.statistics
    assert count.half_width <= 10.0 and count.half_width == pytest.approx(10.0, rel=1e-6)
    assert count.delta == session.delta
    looser = session.plan([Target(Request("count"), error=10.0 * 1.001)], mechanism="gaussian")
    assert looser.statistics[0].epsilon < count.epsilon  # the smallest ε: a wider target costs less


def _coverage(session: Session, plan_request: Request, truth: float, error: float, runs: int) -> float:
    inside = 0
    for _ in range(runs):
        values = session.ask(plan_request).value
        assert isinstance(values, dict)
        inside += sum(abs(v - truth) <= error for v in values.values())
    return inside / (runs * len(KEYS))


def test_releases_at_the_planned_laplace_epsilon_cover_one_minus_alpha() -> None:
    """Seeded releases at the plan: the share within ±e is 1 − α up to a binomial margin.

    4000 samples (2 releases of 2000 independent keys): 4σ = 4·√(0.05·0.95/4000) ≈ 0.0138.
    The right ε (b = e/ln(1/α)) covers 0.95; ln(2/α) in place of ln(1/α) would cover 0.975
    (off by 0.025 > 0.0138: fails), and ε half as large (a missing factor 2) would cover
    1 − √α ≈ 0.776 (fails).
    """
    alpha, error = 0.05, 3.0
    session = Session(_keyed(5), epsilon=10, seed=11)
    plan = session.plan([Target(Request("count", by="g", keys=KEYS), error=error)], alpha=alpha)
    share = _coverage(session, plan.requests()[0], 5.0, error, runs=2)
    assert abs(share - (1 - alpha)) <= _binomial_margin(alpha, 4000)


def test_releases_at_the_planned_gaussian_rho_cover_one_minus_alpha() -> None:
    """As for Laplace: σ = e/Φ⁻¹(1 − α/2) covers 0.95 ± 0.0138; Φ⁻¹(1 − α) in place of
    Φ⁻¹(1 − α/2) would cover 0.90, and ρ twice too small 1 − 2Φ(−1.96/√2) ≈ 0.834: both fail."""
    alpha, error = 0.05, 3.0
    session = Session(_keyed(5), rho=10, seed=12)
    plan = session.plan([Target(Request("count", by="g", keys=KEYS), error=error)], alpha=alpha, mechanism="gaussian")
    share = _coverage(session, plan.requests()[0], 5.0, error, runs=2)
    assert abs(share - (1 - alpha)) <= _binomial_margin(alpha, 4000)


def test_releases_at_the_planned_mean_epsilon_cover_at_least_one_minus_alpha() -> None:
    """The mean's rule is a bound (a union bound over its two parts, and the worst |mean − centre|
    = h), so its coverage is ≥ 1 − α, not = 1 − α: simulated, ≈ 0.999 at the plan and ≈ 0.97 at
    half of it. So this checks the guarantee (≥ 0.95 − 0.0138 over 4000 samples, here with the
    mean far from the centre, 30 in [0, 100] at n = 20); a missing factor 2 in the formula is
    caught exactly by the bound test above, not by coverage."""
    alpha, error, n = 0.05, 5.0, 20
    session = Session(_keyed(n), epsilon=100, seed=13)
    target = Target(Request("mean", "age", bounds=(0.0, 100.0), by="g", keys=KEYS), error=error, min_rows=n)
    plan = session.plan([target], alpha=alpha)
    share = _coverage(session, plan.requests()[0], 30.0, error, runs=2)
    assert share >= 1 - alpha - _binomial_margin(alpha, 4000)


def test_planning_spends_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger(tmp_path / "budget.sqlite")
    session = Session(pl.DataFrame({"x": [1.0, 2.0]}), epsilon=1, ledger=ledger, account="a")
    before = (session.history, session.spent, session.remaining)
    plan = session.plan([Target(Request("count"), error=1.0), Target(Request("sum", "x", bounds=(0.0, 1.0)), error=1.0)])
    assert (session.history, session.spent, session.remaining) == before
    assert ledger.history("a") == [] and session.releases == []
    assert not plan.fits  # 2·ln 20 > 1: said, not refused
    assert plan.remaining == session.remaining
    assert "does NOT fit" in str(plan)


def test_the_planned_requests_release_within_the_budget_the_plan_states() -> None:
    session = Session(pl.DataFrame({"x": [1.0, 2.0, 3.0]}), epsilon=2, seed=1)
    plan = session.plan(
        [Target(Request("count"), error=10.0), Target(Request("mean", "x", bounds=(0.0, 4.0)), error=1.0, min_rows=50)]
    )
    assert plan.fits
    for request in plan.requests():
        session.ask(request)
    assert session.spent.epsilon == pytest.approx(plan.total.epsilon, rel=1e-12)


@pytest.mark.parametrize(
    ("target", "options", "parameter"),
    [
        (Target(Request("count"), error=0.0), {}, "error"),
        (Target(Request("count"), error=-1.0), {}, "error"),
        (Target(Request("count"), error=math.nan), {}, "error"),
        (Target(Request("count"), error=1.0), {"alpha": 0.0}, "alpha"),
        (Target(Request("count"), error=1.0), {"alpha": 1.0}, "alpha"),
        (Target(Request("count"), error=1.0), {"mechanism": "auto"}, "mechanism"),
        (Target(Request("count", epsilon=1.0), error=1.0), {}, "epsilon"),
        (Target(Request("quantile", "x", bounds=(0.0, 1.0), quantiles=0.5), error=1.0), {}, "statistic"),
        (Target(Request("mean", "x", bounds=(0.0, 1.0)), error=0.1), {}, "min_rows"),
        (Target(Request("mean", "x", bounds=(0.0, 1.0)), error=1.0, min_rows=10), {}, "error"),
        (Target(Request("count"), error=1.0, min_rows=10), {}, "min_rows"),
        (Target(Request("mean", "x", bounds=(0.0, 1.0), by="g"), error=0.1, min_rows=10), {"mechanism": "gaussian"}, "mechanism"),
    ],
)
def test_bad_targets_are_one_line_errors_naming_the_parameter(target: Target, options: dict[str, object], parameter: str) -> None:
    """(The Gaussian mean over undeclared keys: its count would also select the keys; not released.)"""
    session = Session(pl.DataFrame({"x": [1.0, 2.0], "g": ["a", "b"]}), epsilon=1, delta_budget=1e-5, max_rows=100)
    with pytest.raises(ParameterError) as caught:
        session.plan([target], **options)  # type: ignore[arg-type]
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert session.history == []


def test_targets_must_be_a_list_of_targets() -> None:
    session = Session(pl.DataFrame({"x": [1.0]}), epsilon=1)
    for bad in ([], Target(Request("count"), error=1.0), [Request("count")]):
        with pytest.raises(ParameterError, match=r"^targets"):
            session.plan(bad)  # type: ignore[arg-type]


def _mean_bound(release: object, alpha: float, h: float, n: int) -> float:
    """The mean's documented bound from the release's own parts: w_i = σ_i·Φ⁻¹(1 − α/4) (α/2 each)."""
    from dpwitness.privacy.accounting import gaussian_half_width

    count, centred = (gaussian_half_width(p.scale, alpha / 2) for p in release.parts)  # type: ignore[attr-defined]
    return (centred + h * count) / (n - count)


def test_a_gaussian_mean_on_a_rho_account_meets_its_bound_with_the_closed_form_split() -> None:
    """ρ_i ∝ ((h + e)·Δ_count)^⅔ : Δ_sum^⅔; released at the plan the bound is e, at ρ·(1 − 10⁻⁴) above e."""
    from dpwitness.privacy.accounting import gaussian_sigma_for_rho

    alpha, error, n, h = 0.05, 2.0, 4000, 50.0
    session = Session(pl.DataFrame({"age": [1.0, 2.0]}), rho=10.0, delta=1e-7, seed=3)
    target = Target(Request("mean", "age", bounds=(0.0, 100.0)), error=error, min_rows=n)
    plan = session.plan([target], alpha=alpha, mechanism="gaussian")
    (mean,) = plan.statistics
    count, centred = mean.parts
    assert float(count["rho"]) / float(centred["rho"]) == pytest.approx(((h + error) / h) ** (2 / 3), rel=1e-9)
    z = NormalDist().inv_cdf(1 - alpha / 4)
    sigmas = [gaussian_sigma_for_rho(d, float(p["rho"])) for d, p in ((1.0, count), (h, centred))]
    assert (z * sigmas[1] + h * z * sigmas[0]) / (n - z * sigmas[0]) == pytest.approx(error, rel=1e-6)
    release = session.ask(plan.requests()[0])
    assert [p.distribution for p in release.parts] == ["gaussian", "gaussian"]  # type: ignore[attr-defined]
    assert _mean_bound(release, alpha, h, n) <= error
    assert _mean_bound(release, alpha, h, n) == pytest.approx(error, rel=1e-6)
    assert release.witness().ok and session.spent.rho == pytest.approx(mean.rho, rel=1e-12)
    smaller = session.ask(replace(plan.requests()[0], rho=mean.rho * (1 - 1e-4)))
    assert _mean_bound(smaller, alpha, h, n) > error  # a smaller budget misses the target


def _epsilon_of_sigma(sensitivity: float, sigma: float, delta: float) -> float:
    """The smallest ε whose analytic Gaussian σ at δ is ≤ σ (bisection, independent of the planner's)."""
    from dpwitness.privacy.accounting import analytic_gaussian_sigma

    low, high = 1e-4, 50.0
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (middle, high) if analytic_gaussian_sigma(sensitivity, middle, delta) > sigma else (low, middle)
    return high


def test_a_gaussian_mean_on_an_epsilon_delta_account_meets_its_bound_with_the_cheapest_split() -> None:
    """Each part at δ/2; the bound is e at the plan, above e at ε·(1 − 10⁻⁴); moving the split either
    way along w_sum + (h + e)·w_count = e·n costs more ε."""
    alpha, error, n, h = 0.05, 2.0, 4000, 50.0
    session = Session(pl.DataFrame({"age": [1.0, 2.0]}), epsilon=5, delta_budget=1e-5, seed=4)
    target = Target(Request("mean", "age", bounds=(0.0, 100.0)), error=error, min_rows=n)
    plan = session.plan([target], alpha=alpha, mechanism="gaussian")
    (mean,) = plan.statistics
    release = session.ask(plan.requests()[0])
    assert [p.mechanism.delta for p in release.parts] == [session.delta / 2] * 2  # type: ignore[attr-defined]
    assert _mean_bound(release, alpha, h, n) <= error
    assert _mean_bound(release, alpha, h, n) == pytest.approx(error, rel=1e-6)
    assert release.witness().ok and release.delta == plan.total.delta == session.delta  # δ/2 + δ/2
    smaller = session.ask(replace(plan.requests()[0], epsilon=mean.epsilon * (1 - 1e-4)))
    assert _mean_bound(smaller, alpha, h, n) > error
    z = NormalDist().inv_cdf(1 - alpha / 4)
    line = error * n / z  # (h + e)·σ_count + σ_sum
    share = (h + error) * release.parts[0].scale / line  # type: ignore[attr-defined]
    for moved in (share * 0.97, share * 1.03):
        sigmas = (moved * line / (h + error), (1 - moved) * line)
        cost = sum(_epsilon_of_sigma(d, s, session.delta / 2) for d, s in zip((1.0, h), sigmas, strict=True))
        assert cost > mean.epsilon


def test_releases_at_the_planned_gaussian_mean_cover_at_least_one_minus_alpha() -> None:
    """As for the Laplace mean (a bound: ≥ 1 − α up to 4 binomial σ over 4000 samples), with ρ."""
    alpha, error, n = 0.05, 5.0, 20
    session = Session(_keyed(n), rho=100, seed=14)
    target = Target(Request("mean", "age", bounds=(0.0, 100.0), by="g", keys=KEYS), error=error, min_rows=n)
    plan = session.plan([target], alpha=alpha, mechanism="gaussian")
    share = _coverage(session, plan.requests()[0], 30.0, error, runs=2)
    assert share >= 1 - alpha - _binomial_margin(alpha, 4000)


def test_a_composite_of_laplace_and_gaussian_parts_is_not_witnessed_as_one() -> None:
    from dpwitness.mechanisms.additive import Gaussian, Laplace
    from dpwitness.witness.analytic import compose, witness

    reports = [witness(Laplace(sensitivity=1.0, epsilon=1.0)), witness(Gaussian(sensitivity=1.0, rho=0.5))]
    with pytest.raises(ValueError, match="all Laplace or all Gaussian"):
        compose(reports)  # type: ignore[arg-type]


def test_auto_keeps_a_mean_laplace_and_a_gaussian_mean_over_undeclared_keys_is_refused() -> None:
    session = Session(pl.DataFrame({"age": [1.0, 2.0], "g": ["a", "b"]}), epsilon=5, delta_budget=1e-5, max_rows=100)
    release = session.ask(Request("mean", "age", bounds=(0.0, 100.0), epsilon=1.0, mechanism="auto"))
    assert [p.distribution for p in release.parts] == ["laplace", "laplace"]  # type: ignore[attr-defined]
    assert "a mean is Gaussian when asked" in release.notice
    spent = session.spent
    with pytest.raises(ParameterError) as caught:
        session.ask(Request("mean", "age", bounds=(0.0, 100.0), by="g", epsilon=1.0, mechanism="gaussian"))
    assert caught.value.parameter == "mechanism" and "\n" not in str(caught.value)
    assert session.spent == spent
