"""The analytic witness re-derives ε and the variance from the sampler's tables."""

from __future__ import annotations

import numpy as np
import pytest

from dpwitness import Gaussian, Laplace, witness
from dpwitness.attacks.tamper import inverted_laplace
from dpwitness.noise import GridGaussian, GridLaplace


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1, 1), (0.1, 1), (100, 0.5), (2, 0.01), (1, 30)])
def test_correct_mechanisms_pass(sensitivity: float, epsilon: float) -> None:
    report = witness(Laplace(sensitivity=sensitivity, epsilon=epsilon))
    assert report.ok, report.verdict
    assert report.worst_log_ratio <= epsilon
    assert report.worst_log_ratio == pytest.approx(epsilon, rel=1e-6)
    # the supremum is attained (up to table quantisation) at real outputs, tails included
    assert report.observed_log_ratio <= report.worst_log_ratio
    assert report.observed_log_ratio == pytest.approx(report.worst_log_ratio, rel=1e-6)
    assert report.variance == pytest.approx(2 * (sensitivity / epsilon) ** 2, rel=1e-5)


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(2, 0.5), (1, 0.1), (10, 1)])
def test_inverted_calibration_is_caught_with_the_true_loss(sensitivity: float, epsilon: float) -> None:
    report = witness(inverted_laplace(sensitivity=sensitivity, epsilon=epsilon))
    assert not report.ok
    assert "VIOLATED" in report.verdict
    assert report.worst_log_ratio == pytest.approx(sensitivity**2 / epsilon, rel=1e-6)
    assert report.variance == pytest.approx(2 * (epsilon / sensitivity) ** 2, rel=1e-5)


def test_inversion_is_harmless_when_delta_equals_epsilon() -> None:
    assert witness(inverted_laplace(sensitivity=1, epsilon=1)).ok


def test_too_much_noise_is_flagged_as_miscalibrated_not_violated() -> None:
    wasteful = Laplace(sensitivity=1, epsilon=1, noise=GridLaplace.calibrate(sensitivity=1, epsilon=0.5))
    report = witness(wasteful)
    assert not report.ok and "MISCALIBRATED" in report.verdict
    # the loss and variance read from the tables are those of the ε = 0.5 noise really sampled
    assert report.worst_log_ratio == pytest.approx(0.5, rel=1e-6)
    assert report.variance == pytest.approx(8.0, rel=1e-5)


def test_slightly_too_little_noise_is_a_violation() -> None:
    greedy = Laplace(sensitivity=1, epsilon=1, noise=GridLaplace.calibrate(sensitivity=1, epsilon=1.001))
    report = witness(greedy)
    assert not report.ok and "VIOLATED" in report.verdict
    assert report.worst_log_ratio == pytest.approx(1.001, rel=1e-6)


def test_zero_sensitivity() -> None:
    report = witness(Laplace(sensitivity=0, epsilon=1))
    assert report.ok and report.worst_log_ratio == 0 and report.variance == 0


def test_release_carries_its_witness() -> None:
    release = Laplace(sensitivity=1, epsilon=1).release(1.0, seed=1)
    assert release.witness().ok
    assert set(release.witness().to_dict()) >= {"ok", "claimed_epsilon", "worst_log_ratio", "variance", "expected_variance"}


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1e-3), (1.0, 1.2e-3), (3.0, 1e3), (1e-100, 1e-3), (1e100, 1e3)])
def test_loss_is_within_epsilon_at_the_ends_of_the_accepted_range(sensitivity: float, epsilon: float) -> None:
    report = witness(Laplace(sensitivity=sensitivity, epsilon=epsilon))
    assert report.ok, report.verdict
    assert report.worst_log_ratio <= epsilon
    assert report.observed_log_ratio <= report.worst_log_ratio
    assert report.variance == pytest.approx(2 * (sensitivity / epsilon) ** 2, rel=1e-5)


class _NarrowTables(GridGaussian):
    """A tampered sampler: its tables are those of 0.9·s, but it reports the honest η of s, so the
    rigorous δ bound (computed from s and η) still passes; only the sum over the PMF can see it."""

    def magnitude_weights(self) -> tuple[np.ndarray, float, float]:  # type: ignore[override]
        return GridGaussian(self.granularity_log2, 0.9 * self.s).magnitude_weights()


def test_gaussian_verdict_needs_both_the_bound_and_the_exact_sum() -> None:
    honest = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)
    assert honest.noise is not None
    report = witness(honest)
    assert report.ok and report.observed_delta is not None and report.observed_delta <= report.delta <= 1e-6
    assert "bound ≤ claim" in report.verdict and "exact sum over the sampled PMF" in report.verdict
    tampered = _NarrowTables(honest.noise.granularity_log2, honest.noise.s)
    object.__setattr__(tampered, "_eta", honest.noise.tv_distance())  # misreports η
    bad = witness(Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6, noise=tampered))
    assert bad.delta <= 1e-6  # the formula check alone would pass ...
    assert bad.observed_delta is not None and bad.observed_delta > 1e-6  # ... the sum over the real PMF does not
    assert not bad.ok and "VIOLATED" in bad.verdict and "bound ≤ claim" in bad.verdict and "> claim" in bad.verdict
