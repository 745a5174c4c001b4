"""The Gaussian mechanism: analytic calibration, the discrete sampler really used, its δ and its witness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpwitness import Gaussian, ParameterError, audit, witness
from dpwitness.noise import (
    GAUSS_DELTA_RANGE,
    GAUSS_EPSILON_RANGE,
    SECURE_BITS,
    SeededBits,
    discrete_gaussian_delta,
    gaussian_for_delta,
    gaussian_for_rho,
)
from dpwitness.privacy.accounting import analytic_gaussian_sigma, zcdp_delta

N = 200_000


@pytest.fixture(scope="module")
def unit() -> Gaussian:
    return Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)


@pytest.fixture(scope="module")
def draws(unit: Gaussian) -> np.ndarray:
    return np.asarray(unit.release(0.0, size=N, seed=2018).value)


def test_sigma_is_the_analytic_gaussian_value(unit: Gaussian) -> None:
    assert unit.analytic_sigma == pytest.approx(4.2247, abs=5e-4)
    # the classic √(2 ln(1.25/δ))·Δ/ε is 25% larger
    assert math.sqrt(2 * math.log(1.25 / 1e-6)) / unit.analytic_sigma == pytest.approx(1.254, abs=1e-3)
    # the noise really sampled: at least the analytic σ, and within 10^-4 of it (grid rounding, tail bounds)
    assert unit.analytic_sigma <= unit.sigma <= unit.analytic_sigma * (1 + 1e-4)
    assert unit.variance == pytest.approx(unit.sigma**2) and unit.std == unit.sigma


def test_privacy_profile_meets_the_claim_and_is_tight(unit: Gaussian) -> None:
    assert 0.999e-6 <= unit.privacy_profile(1.0) <= 1e-6
    profile = [unit.privacy_profile(e) for e in (0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0, 100.0, 1e6)]
    assert profile == sorted(profile, reverse=True)
    assert unit.privacy_profile(0.5) > 1e-6  # at a smaller ε the same noise costs more δ


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(GAUSS_EPSILON_RANGE[0], 1e-6), (GAUSS_EPSILON_RANGE[1], GAUSS_DELTA_RANGE[0]), (0.3, 0.5), (2.0, 1e-9)],
)
def test_calibration_holds_across_the_accepted_range(epsilon: float, delta: float) -> None:
    mech = Gaussian(sensitivity=3.0, epsilon=epsilon, delta=delta)
    assert mech.privacy_profile(epsilon) <= delta
    # documented: σ exceeds the analytic value by at most one grid step of Δ (γ/Δ ≤ (σ/Δ)·2^-16)
    # plus the η charge (≤ 10^-3 at the corners of the range)
    assert mech.analytic_sigma <= mech.sigma <= mech.analytic_sigma * (1 + mech.analytic_sigma / 3.0 * 2.0**-16 + 1e-3)
    report = witness(mech)
    assert report.ok, report.verdict
    assert report.delta <= delta


def test_discrete_delta_bound_never_understates_the_exact_sum() -> None:
    """Brute force on discrete Gaussians: the bound is never below the true δ (any shift ≤ k), and tight for large s."""
    for s, k, tightness in ((6.5, 2, 1.0001), (300.0, 60, 1.003)):
        x = np.arange(-int(40 * s), int(40 * s) + 1)
        weight = np.exp(-(x.astype(float) ** 2) / (2 * s * s))
        p = weight / weight.sum()
        for eps in (0.1, 0.5, 1.0, 2.0):
            exact = max(float(np.sum(np.maximum(p[shift:] - math.exp(eps) * p[:-shift], 0))) for shift in range(1, k + 1))
            bound = discrete_gaussian_delta(s, k, eps)
            assert exact <= bound <= exact * tightness + 1e-15, (s, eps, exact, bound)


def test_zcdp_conversion_is_a_valid_looser_bound() -> None:
    sigma = analytic_gaussian_sigma(1.0, 1.0, 1e-6)
    converted = zcdp_delta(1.0 / (2 * sigma**2), 1.0)
    assert 1e-6 < converted < 1e-5
    assert zcdp_delta(0.01, 1.0) > zcdp_delta(0.01, 2.0)


def test_rho_calibration() -> None:
    mech = Gaussian(sensitivity=2.0, rho=0.5)
    assert mech.analytic_sigma == pytest.approx(2.0)
    assert mech.sigma == pytest.approx(2.0, rel=1e-4) and mech.sigma >= 2.0
    assert mech.rho_spent <= 0.5
    # δ(1) of the noise sampled: the Gaussian's exact profile Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) = 0.1269
    # (the grid is fine), below the zCDP conversion's 0.2468, which is valid but loose
    s = mech.sigma / 2.0
    exact = stats.norm.cdf(1 / (2 * s) - s) - math.e * stats.norm.cdf(-1 / (2 * s) - s)
    assert mech.privacy_profile(1.0) == pytest.approx(exact, rel=1e-3)
    assert mech.privacy_profile(1.0) < zcdp_delta(0.5, 1.0) == pytest.approx(0.2468, abs=1e-4)
    report = witness(mech)
    assert report.ok and report.rho <= 0.5, report.verdict


def test_samples_follow_the_gaussian_and_reject_five_percent_off(unit: Gaussian, draws: np.ndarray) -> None:
    sigma = unit.sigma
    assert stats.kstest(draws, stats.norm(scale=sigma).cdf).pvalue > 1e-3
    # the same sample rejects 5% too little and 5% too much noise
    assert stats.kstest(draws, stats.norm(scale=0.95 * sigma).cdf).pvalue < 1e-9
    assert stats.kstest(draws, stats.norm(scale=1.05 * sigma).cdf).pvalue < 1e-9
    # second moment: sd of mean(x²)/σ² is √(2/N) ≈ 0.003
    ratio = float(np.mean(draws**2)) / sigma**2
    assert abs(ratio - 1) < 0.015 and abs(ratio - 0.95**2) > 0.08 and abs(ratio - 1.05**2) > 0.08


def test_secure_source_is_the_default_and_moments_hold() -> None:
    mech = Gaussian(sensitivity=1.0, rho=0.125)  # σ = 2
    out = mech.release(5.0, size=100_000)
    assert not out.seeded and "secure" in out.randomness
    noise = np.asarray(out.value) - 5.0
    assert abs(float(noise.std()) - 2.0) < 0.03 and abs(float(noise.mean())) < 0.03


def test_sampler_pmf_matches_counts_in_grid_steps() -> None:
    noise = gaussian_for_rho(sensitivity=1.0, rho=0.5)
    steps = noise.sample(N, SeededBits(7))
    edges = np.array([-np.inf, -2, -1, -0.5, 0, 0.5, 1, 2, np.inf]) * noise.s
    observed = np.histogram(steps, bins=edges)[0]
    expected = np.diff(stats.norm.cdf(edges / noise.s)) * N
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    wrong = np.diff(stats.norm.cdf(edges / (1.05 * noise.s))) * N
    assert stats.chisquare(observed, wrong).pvalue < 1e-9


def test_every_integer_is_reachable_and_tables_are_near_ideal(unit: Gaussian) -> None:
    noise = unit.noise
    assert noise is not None
    far = np.array([0, 1, -1, int(10 * noise.s), int(30 * noise.s), -int(30 * noise.s)], dtype=np.int64)
    assert np.all(noise.pmf(far) > 0)  # the tail column gives every grid point positive probability
    assert noise.tv_distance() < 1e-13
    assert noise.variance_steps() == pytest.approx(noise.s**2, rel=1e-9)


def test_neighbouring_inputs_have_identical_support(unit: Gaussian) -> None:
    assert unit.noise is not None
    gamma = unit.noise.granularity
    for value in (0.0, 1.0, 0.1, 123.456):
        steps = np.asarray(unit.release(value, size=20_000, seed=3).value) / gamma
        assert np.array_equal(steps, np.round(steps))
    a = np.asarray(unit.release(0.0, size=1000, seed=9).value)
    b = np.asarray(unit.release(1.0, size=1000, seed=9).value)
    assert np.allclose(b - a, 1.0)


def test_vector_release_and_multi_coordinate_bound() -> None:
    mech = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6, dimension=4)
    out = np.asarray(mech.release([1.0, 2.0, 3.0, 4.0], size=40_000, seed=5).value)
    assert out.shape == (40_000, 4)
    noise = out - np.array([1.0, 2.0, 3.0, 4.0])
    assert np.allclose(noise.std(axis=0), mech.sigma, rtol=0.02)
    assert abs(np.corrcoef(noise.T)[0, 1]) < 0.03
    assert mech.privacy_profile(1.0) <= 1e-6
    assert mech.sigma >= mech.analytic_sigma  # the zCDP conversion is looser: a little more noise
    assert witness(mech).ok


def test_seeded_release_is_reproducible_and_interval_covers(unit: Gaussian, draws: np.ndarray) -> None:
    first = unit.release(10.0, seed=42)
    assert first.value == unit.release(10.0, seed=42).value and "NOT for production" in first.notice
    assert first.epsilon == 1.0 and first.delta == 1e-6 and first.scale == unit.sigma
    low, high = first.interval
    assert high - low == pytest.approx(2 * unit.interval(0.05)) and unit.interval(0.05) == pytest.approx(
        1.96 * unit.sigma, rel=1e-3
    )
    for alpha in (0.05, 0.2):
        assert abs(float(np.mean(np.abs(draws) > unit.interval(alpha))) - alpha) < 0.005
    assert first.to_dict()["variance"] == pytest.approx(unit.variance)


def test_zero_sensitivity_releases_the_exact_value() -> None:
    mech = Gaussian(sensitivity=0.0, epsilon=1.0, delta=1e-6)
    release = mech.release(5.25)
    assert release.value == 5.25 and release.epsilon == 0.0 and release.delta == 0.0
    assert mech.privacy_profile(1.0) == 0.0 and witness(mech).ok


def test_witness_catches_a_tampered_sigma() -> None:
    # σ calibrated for ε = 2 but claimed at ε = 1: too little noise
    greedy = Gaussian(sensitivity=1, epsilon=1, delta=1e-6, noise=gaussian_for_delta(sensitivity=1, epsilon=2, delta=1e-6))
    report = witness(greedy)
    assert not report.ok and "VIOLATED" in report.verdict
    assert report.delta > 1e-4 and report.observed_delta is not None and report.observed_delta <= report.delta
    # a σ only 1% too small is caught too
    slightly = Gaussian(
        sensitivity=1, epsilon=1, delta=1e-6, noise=gaussian_for_rho(sensitivity=1, rho=1 / (2 * (0.99 * 4.2247) ** 2))
    )
    assert not witness(slightly).ok
    # too much noise is MISCALIBRATED, not violated
    wasteful = Gaussian(sensitivity=1, epsilon=1, delta=1e-6, noise=gaussian_for_delta(sensitivity=1, epsilon=0.5, delta=1e-6))
    report = witness(wasteful)
    assert not report.ok and "MISCALIBRATED" in report.verdict
    # a ρ claim with a tampered σ
    assert not witness(Gaussian(sensitivity=1, rho=0.1, noise=gaussian_for_rho(sensitivity=1, rho=0.2))).ok


def test_witness_observed_delta_confirms_the_bound(unit: Gaussian) -> None:
    report = witness(unit)
    assert report.ok, report.verdict
    assert report.observed_delta is not None
    assert 0.99 * report.delta <= report.observed_delta <= report.delta <= 1e-6
    assert report.rho == pytest.approx(1 / (2 * unit.sigma**2), rel=1e-3)
    assert unit.release(1.0, seed=1).witness().ok


def test_audit_flags_sigma_too_small_for_its_delta_claim() -> None:
    tampered = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6, noise=gaussian_for_rho(sensitivity=1.0, rho=8.0))  # σ = 0.25

    def run(value: float, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.asarray(tampered.release(value, size=size, seed=rng).value)

    result = audit(run, 0.0, 1.0, epsilon=1.0, delta=1e-6, samples=100_000, seed=1, progress=False)
    assert result.violated, result.verdict


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"sensitivity": 1, "epsilon": 1, "delta": 0}, "delta"),
        ({"sensitivity": 1, "epsilon": 1, "delta": 1}, "delta"),
        ({"sensitivity": 1, "epsilon": 1, "delta": -0.1}, "delta"),
        ({"sensitivity": 1, "epsilon": 1, "delta": 1.5}, "delta"),
        ({"sensitivity": 1, "epsilon": 1, "delta": math.nan}, "delta"),
        ({"sensitivity": 1, "epsilon": 1, "delta": 1e-300}, "delta"),
        ({"sensitivity": 1, "epsilon": 1}, "delta"),
        ({"sensitivity": 1, "delta": 1e-6}, "epsilon"),
        ({"sensitivity": 1, "rho": 0}, "rho"),
        ({"sensitivity": 1, "rho": -1}, "rho"),
        ({"sensitivity": 1, "rho": math.inf}, "rho"),
        ({"sensitivity": 1, "epsilon": 1, "delta": 1e-6, "rho": 0.5}, "rho"),
        ({"sensitivity": 1, "epsilon": 1e308, "delta": 1e-6}, "epsilon"),
        ({"sensitivity": 1, "epsilon": 1e-9, "delta": 1e-6}, "epsilon"),
        ({"sensitivity": 1e300, "epsilon": 1, "delta": 1e-6}, "sensitivity"),
        ({"sensitivity": -1, "rho": 0.5}, "sensitivity"),
        ({"sensitivity": 1, "rho": 0.5, "dimension": 0}, "dimension"),
    ],
)
def test_bad_parameters_are_one_line_errors(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(ParameterError) as info:
        Gaussian(**kwargs)  # type: ignore[arg-type]
    assert info.value.parameter == parameter
    assert "\n" not in str(info.value)


def test_bad_release_input() -> None:
    mech = Gaussian(sensitivity=1.0, rho=0.5)
    for value, size in ((math.nan, None), ([1.0, 2.0], None), (1.0, 0)):
        with pytest.raises(ParameterError):
            mech.release(value, size=size)
    # any finite value is released (past 2^61 grid steps through the exact big-integer path):
    # σ = 1 is far below the ulp of 1e30, so the release is exactly the value
    assert mech.release(1e30, seed=1).value == 1e30 and mech.release(-1e300, seed=2).value == -1e300
    with pytest.raises(ParameterError, match="alpha"):
        mech.interval(1.5)
    with pytest.raises(ParameterError, match="epsilon"):
        mech.privacy_profile(-1)


def test_secure_sampling_is_vectorised() -> None:
    noise = gaussian_for_rho(sensitivity=1.0, rho=0.5)
    out = noise.sample(300_000, SECURE_BITS)
    assert out.dtype == np.int64 and out.shape == (300_000,)


# --- the command line --------------------------------------------------------------------------


def test_cli_release_gaussian_json() -> None:
    import json

    from typer.testing import CliRunner

    from dpwitness.cli import app

    runner = CliRunner()
    args = ["release", "--value", "10", "--sensitivity", "1", "--epsilon", "1", "--mechanism", "gaussian", "--delta", "1e-6"]
    result = runner.invoke(app, [*args, "--seed", "4", "--samples", "2", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["mechanism"] == "gaussian" and payload["witness"]["ok"] is True
    assert payload["sigma"] == pytest.approx(4.2247, abs=1e-3) and payload["scale"] == payload["sigma"]
    assert payload["variance"] == pytest.approx(payload["sigma"] ** 2)
    assert payload["delta"] == 1e-6 and len(payload["value"]) == 2
    assert payload["epsilon_spent"] <= 2.0 + 1e-9 and payload["delta_spent"] <= 2e-6 + 1e-15
    # the default stays Laplace
    laplace = json.loads(runner.invoke(app, ["release", "--value", "1", "--sensitivity", "1", "--epsilon", "1", "--json"]).stdout)
    assert laplace["mechanism"] == "laplace" and laplace["scale"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("extra", "parameter"),
    [
        (["--mechanism", "gaussian"], "delta"),
        (["--mechanism", "gaussian", "--delta", "1"], "delta"),
        (["--mechanism", "gaussian", "--delta", "1e-6", "--rho", "0.5"], "rho"),
        (["--delta", "1e-6"], "delta"),
        (["--mechanism", "uniform"], "mechanism"),
    ],
)
def test_cli_bad_gaussian_input_is_one_line_exit_2(extra: list[str], parameter: str) -> None:
    from typer.testing import CliRunner

    from dpwitness.cli import app

    result = CliRunner().invoke(app, ["release", "--value", "1", "--sensitivity", "1", "--epsilon", "1", *extra])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and parameter in result.output


def test_cli_witness_gaussian() -> None:
    from typer.testing import CliRunner

    from dpwitness.cli import app

    runner = CliRunner()
    ok = runner.invoke(app, ["witness", "--sensitivity", "1", "--mechanism", "gaussian", "--rho", "0.5"])
    assert ok.exit_code == 0 and "claim holds" in ok.output
    ok = runner.invoke(app, ["witness", "--sensitivity", "1", "--epsilon", "1", "--mechanism", "gaussian", "--delta", "1e-6"])
    assert ok.exit_code == 0 and "exact sum" in ok.output


def test_a_reloaded_gaussian_release_keeps_its_interval(unit: Gaussian) -> None:
    from dpwitness import Release

    release = unit.release(3.0, seed=1)
    again = Release.from_dict(release.to_dict())
    assert again.mechanism is None and again.distribution == "gaussian"
    assert again.interval == pytest.approx(release.interval)
    assert again.to_dict()["variance"] == pytest.approx(unit.variance)
