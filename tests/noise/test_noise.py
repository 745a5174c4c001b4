"""The exact grid sampler: its distribution, its tables and its support."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpwitness.noise import (
    LN2,
    SECURE_BITS,
    GridLaplace,
    SeededBits,
    add_noise_on_grid,
    bit_source,
    exact_add_noise_on_grid,
    grid_steps,
    grid_to_float,
    round_to_grid,
)
from dpwitness.noise.tables import _alias_from_weights

N = 200_000


def laplace_cdf(scale: float):  # type: ignore[no-untyped-def]
    return lambda x: stats.laplace.cdf(x, scale=scale)


@pytest.fixture(scope="module")
def unit_noise() -> GridLaplace:
    return GridLaplace.calibrate(sensitivity=1.0, epsilon=1.0)


@pytest.fixture(scope="module")
def draws(unit_noise: GridLaplace) -> np.ndarray:
    return unit_noise.sample(N, SeededBits(20061)) * unit_noise.granularity


def test_realised_scale_is_the_calibrated_one(unit_noise: GridLaplace) -> None:
    assert unit_noise.scale == pytest.approx(1.0, rel=1e-7)
    assert unit_noise.scale >= 1.0  # never less noise than claimed


def test_samples_follow_laplace_and_reject_wrong_scales(draws: np.ndarray) -> None:
    assert stats.kstest(draws, laplace_cdf(1.0)).pvalue > 1e-3
    # The same test must reject 0.8× and 1.25× the scale: too little and too much noise.
    assert stats.kstest(draws, laplace_cdf(0.8)).pvalue < 1e-12
    assert stats.kstest(draws, laplace_cdf(1.25)).pvalue < 1e-12


def test_moments_match_and_wrong_variance_is_excluded(draws: np.ndarray) -> None:
    # Var(X²) for Laplace(1) is E[X⁴] − 4 = 20; the mean of N draws of X² has sd sqrt(20/N) ≈ 0.01.
    second_moment = float(np.mean(draws**2))
    assert abs(second_moment - 2.0) < 0.06
    assert abs(second_moment - 2.0 * 0.8**2) > 0.6 and abs(second_moment - 2.0 * 1.25**2) > 1.0
    assert abs(float(np.mean(draws))) < 0.02


def test_block_index_is_exactly_geometric_half(unit_noise: GridLaplace) -> None:
    steps = unit_noise.sample(N, SeededBits(7))
    blocks = np.abs(steps) // unit_noise.m
    observed = np.bincount(np.minimum(blocks, 8), minlength=9)
    # P(|X| in block h) for the sign-symmetric law: ≈ 2^-(h+1) (the rejected (−, 0) pair is negligible).
    expected_p = np.array([2.0 ** -(h + 1) for h in range(8)] + [2.0**-8])
    chi2 = stats.chisquare(observed, expected_p * N)
    assert chi2.pvalue > 1e-3
    wrong = np.array([(2 / 3) * (1 / 3) ** h for h in range(8)] + [(1 / 3) ** 8])
    assert stats.chisquare(observed, wrong / wrong.sum() * N).pvalue < 1e-12


def test_sign_is_balanced(unit_noise: GridLaplace) -> None:
    steps = unit_noise.sample(N, SeededBits(8))
    positive, nonzero = int((steps > 0).sum()), int((steps != 0).sum())
    assert stats.binomtest(positive, nonzero).pvalue > 1e-3
    # and the same counts would expose a sign bias of 2 points either way
    assert stats.binomtest(positive, nonzero, p=0.52).pvalue < 1e-12
    assert stats.binomtest(positive, nonzero, p=0.48).pvalue < 1e-12


def test_alias_table_reproduces_its_weights_exactly() -> None:
    one = 1 << 32
    weights = [3 * one, one // 2, one // 2, 0]
    table = _alias_from_weights(weights, 4)
    assert table.pmf_numerators().tolist() == [float(w) for w in weights]


def test_alias_sampling_matches_pmf() -> None:
    one = 1 << 32
    table = _alias_from_weights([2 * one, one, one // 2, one // 2], 4)
    rng = np.random.default_rng(3)
    column = rng.integers(0, 4, size=N)
    u = rng.integers(0, one, size=N, dtype=np.uint64)
    picked = np.where(u < table.threshold[column], column, table.alias[column])
    counts = np.bincount(picked, minlength=4)
    pmf = table.pmf_numerators() / (4 * one)
    assert pmf.tolist() == [0.5, 0.25, 0.125, 0.125]
    assert stats.chisquare(counts, pmf * N).pvalue > 1e-3
    # the same counts reject a table that ignores its aliases and a 5% shift of mass between columns
    assert stats.chisquare(counts, np.full(4, N / 4)).pvalue < 1e-12
    assert stats.chisquare(counts, np.array([0.475, 0.275, 0.125, 0.125]) * N).pvalue < 1e-12


@pytest.mark.parametrize(
    ("sensitivity", "epsilon", "dimension"), [(1, 1, 1), (0.1, 1, 1), (3, 0.01, 1), (1, 20, 5), (1e-6, 1e3, 1)]
)
def test_calibration_never_exceeds_epsilon_and_wastes_little(sensitivity: float, epsilon: float, dimension: int) -> None:
    noise = GridLaplace.calibrate(sensitivity=sensitivity, epsilon=epsilon, dimension=dimension)
    loss = noise.loss_for_steps(noise.steps_for_shift(sensitivity, dimension))
    assert loss <= epsilon
    assert loss >= epsilon * (1 - 1e-6)
    assert noise.scale == pytest.approx(sensitivity / epsilon, rel=1e-5)


def test_variance_from_tables_matches_discrete_laplace(unit_noise: GridLaplace) -> None:
    t = unit_noise.m / LN2
    q = math.exp(-1 / t)
    ideal_steps = 2 * q / (1 - q) ** 2  # variance of the ideal discrete Laplace with ratio q
    assert unit_noise.variance_steps() == pytest.approx(ideal_steps, rel=1e-7)


def test_rounding_is_half_up_and_exact() -> None:
    values = np.array([0.5, 1.5, -0.5, -1.5, 2.4999999999999996, 1e6 + 0.25])
    assert round_to_grid(values, 0).tolist() == [1, 2, 0, -1, 2, 1_000_000]
    assert round_to_grid(np.array([0.75]), -1).tolist() == [2]


def test_exact_path_rounds_half_up_like_the_int64_path() -> None:
    values = np.array([0.5, 1.5, -0.5, -1.5, 2.4999999999999996, 1e6 + 0.25, 0.75, -0.75, 5e-324, -3.0])
    for k in (0, -1, 3, -40):
        assert [grid_steps(float(v), k) for v in values] == round_to_grid(values, k).tolist()
    assert grid_steps(1e30, -10) == int(1e30) * 2**10  # an integer-valued float: exact, no rounding
    half = float((2**52 + 1) * 2**27)  # (2^51 + 0.5)·2^28: a tie at the float's last bit
    assert grid_steps(half, 28) == 2**51 + 1 and grid_steps(-half, 28) == -(2**51)  # half up, both signs


@pytest.mark.parametrize("k", [-38, -27, 0, 5])
def test_exact_path_is_the_same_function_as_the_int64_path(k: int) -> None:
    """Forced onto the big-integer path, small values give bit-for-bit the int64 path's output:
    one function of the noisy integer, whichever path computes it."""
    rng = np.random.default_rng(k & 0xFFFF)
    values = np.ldexp(rng.normal(size=40) * 2.0 ** rng.integers(0, 58, size=40), k)
    draws = rng.integers(-(2**45), 2**45, size=(6, 40), dtype=np.int64)
    fast = add_noise_on_grid(values, draws.copy(), k)  # consumes its draws
    assert np.array_equal(fast, exact_add_noise_on_grid(values, draws, k))
    assert np.array_equal(fast, np.ldexp((round_to_grid(values, k) + draws).astype(np.float64), k))


def test_values_past_2_to_the_61_steps_have_the_same_support() -> None:
    """A value at 2^61+ steps and a small one: every output is (N + X)·γ rounded to a double, so a
    multiple of γ; and the big one's outputs are exactly the nearest doubles of the exact sums."""
    noise = GridLaplace.calibrate(sensitivity=1.0, epsilon=1.0)
    k = noise.granularity_log2
    draws = noise.sample(2000, SeededBits(1)).reshape(2000, 1)
    for value in (0.3, math.ldexp(1.0, 61 + k) + 3.5 * 2.0**k, math.ldexp(1.0, 70 + k) + 1.0, 1e300):
        out = add_noise_on_grid(np.array([value]), draws.copy(), k)  # consumes its draws
        assert np.all(np.isfinite(out))
        assert all((Fraction(v) / Fraction(2) ** k).denominator == 1 for v in out.ravel().tolist())  # on γ·ℤ
        centre = grid_steps(value, k)
        expected = [grid_to_float(centre + int(x), k) for x in draws.ravel().tolist()]
        assert out.ravel().tolist() == expected
    # the noise is visible where the float spacing allows it: 2^61 steps + X has spacing 2^9 steps
    big = add_noise_on_grid(np.array([math.ldexp(1.0, 61 + k)]), draws.copy(), k)
    assert len(set(big.ravel().tolist())) > 1000


def test_grid_to_float_rounds_once_and_saturates() -> None:
    assert grid_to_float(2**53 + 1, 0) == 2.0**53  # tie to even
    assert grid_to_float(2**53 + 3, 0) == 2.0**53 + 4
    assert grid_to_float((2**53 + 1) * 2**40, -40) == 2.0**53
    assert grid_to_float(3, -2) == 0.75
    assert grid_to_float(2**1100, 0) == math.inf and grid_to_float(-(2**1100), -3) == -math.inf


def test_rounded_shift_never_exceeds_the_charged_steps() -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(-50, 50, size=100_000)
    d = rng.uniform(0, 3.7, size=a.size)
    shift = round_to_grid(a + d, 0) - round_to_grid(a, 0)
    assert shift.max() <= math.ceil(3.7)


def test_seeded_source_is_reproducible_and_secure_source_is_not() -> None:
    assert np.array_equal(SeededBits(5).words(10), SeededBits(5).words(10))
    assert not np.array_equal(SeededBits(5).words(10), SeededBits(6).words(10))
    assert not np.array_equal(SECURE_BITS.words(4), SECURE_BITS.words(4))
    assert bit_source(None).secure and not bit_source(3).secure
    assert "NOT for production" in bit_source(3).name


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seeds_are_refused(seed: object) -> None:
    with pytest.raises((TypeError, ValueError), match="seed"):
        bit_source(seed)  # type: ignore[arg-type]


def _documented_excess(epsilon: float) -> float:
    """docs/mechanism.md: realised scale / (Δ/ε) − 1 ≤ 3·2^-27 + 10^-9/ε (margin, one rounding step, table deviation)."""
    return 3 * 2.0**-27 + 1e-9 / epsilon


@pytest.mark.parametrize("epsilon", [1e-3, 1.01e-3, 1.2e-3, 2e-3, 1e-2, 0.1, 1.0, 30.0, 1e3])
@pytest.mark.parametrize("sensitivity", [1.0, 0.1, 7.3e5])
def test_realised_scale_is_exact_across_the_accepted_range(sensitivity: float, epsilon: float) -> None:
    """No fixed absolute reservation: just above the lower end the scale is still Δ/ε (issue 9 saw 4×–404×)."""
    noise = GridLaplace.calibrate(sensitivity=sensitivity, epsilon=epsilon)
    loss = noise.loss_for_steps(noise.steps_for_shift(sensitivity))
    assert loss <= epsilon
    excess = noise.scale / (sensitivity / epsilon) - 1
    assert 0 <= excess <= _documented_excess(epsilon), excess
    # the grid is fine relative to Δ as well as to the scale: rounding costs ≤ 2^-27 of ε
    assert noise.steps_for_shift(sensitivity) >= 2**27
