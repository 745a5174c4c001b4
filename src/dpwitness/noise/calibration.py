"""Calibration of the discrete Gaussian: the smallest grid noise whose rigorous δ(ε) (or ρ) fits
the target, tables' deviation and grid rounding charged. (The Laplace sampler calibrates itself:
:meth:`dpwitness.noise.laplace.GridLaplace.calibrate`.)"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpwitness.common.caching import scoped_cache
from dpwitness.noise.gaussian import _TV_SLACK, GAUSS_STEPS_LOG2, GridGaussian, discrete_gaussian_delta
from dpwitness.privacy.accounting import analytic_gaussian_sigma, gaussian_rho, gaussian_sigma_for_rho, zcdp_delta


def _smallest_s(bound: Callable[[float], float], start: float, target: float) -> float:
    """The smallest s ≥ start (to 10^-12 relative) with bound(s) ≤ target; bound decreases in s."""
    low, high = start, start
    while bound(high) > target:
        low, high = high, high * 1.001
    if high == start:
        return start
    for _ in range(60):
        middle = 0.5 * (low + high)
        if bound(middle) > target:
            low = middle
        else:
            high = middle
    return high


@scoped_cache(256, scoped_maxsize=64)
def gaussian_for_delta(*, sensitivity: float, epsilon: float, delta: float, changed: int = 1) -> GridGaussian:
    """The grid Gaussian whose δ(ε) for an L2 shift of ``sensitivity`` (grid rounding charged) is ≤ δ.

    The grid puts s = σ/γ in [2^16, 2^17); the shift is charged in whole rounded steps; s is the
    smallest value whose rigorous bound (tables' deviation η included) fits under δ.

    :param epsilon: ε > 0.
    :param delta: δ in (0, 1); ValueError when too small to leave room for the tables' charge.
    :param changed: the number of coordinates one neighbour may change (default 1); above 1 the
        bound goes through zCDP.
    """
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    granularity_log2 = math.frexp(sigma)[1] - 1 - GAUSS_STEPS_LOG2
    probe = GridGaussian.__new__(GridGaussian)  # steps_for_shift needs only the grid
    object.__setattr__(probe, "granularity_log2", granularity_log2)
    steps = GridGaussian.steps_for_shift(probe, sensitivity, changed)
    charge = (1.0 + math.exp(epsilon)) * changed * 1.05 * _TV_SLACK  # η is ≈ _TV_SLACK; verified below
    while True:
        target = delta - charge
        if target < 0.5 * delta:
            raise ValueError(f"delta {delta:g} is too small for epsilon {epsilon:g} and {changed} changed coordinates")
        if changed == 1:
            start = analytic_gaussian_sigma(steps, epsilon, target)
            s = _smallest_s(lambda v: discrete_gaussian_delta(v, int(steps), epsilon), start, target)
        else:
            start = analytic_gaussian_sigma(steps, epsilon, target)
            s = _smallest_s(lambda v: zcdp_delta(gaussian_rho(steps, v), epsilon), start, target)
        candidate = GridGaussian(granularity_log2, s)
        spent = candidate.delta_for_steps(epsilon, steps, changed)
        if spent <= delta:
            return candidate
        charge += spent - delta + 1e-6 * delta


@scoped_cache(256, scoped_maxsize=64)
def gaussian_for_rho(*, sensitivity: float, rho: float, changed: int = 1) -> GridGaussian:
    """The grid Gaussian whose zCDP ρ = k²/2s² for an L2 shift of ``sensitivity`` (k rounded steps) is ≤ ρ.

    :param rho: ρ > 0.
    :param changed: the number of coordinates one neighbour may change (default 1); each may
        add up to one step of rounding.
    """
    sigma = gaussian_sigma_for_rho(sensitivity, rho)
    granularity_log2 = math.frexp(sigma)[1] - 1 - GAUSS_STEPS_LOG2
    probe = GridGaussian.__new__(GridGaussian)
    object.__setattr__(probe, "granularity_log2", granularity_log2)
    steps = GridGaussian.steps_for_shift(probe, sensitivity, changed)
    return GridGaussian(granularity_log2, gaussian_sigma_for_rho(steps, rho))
