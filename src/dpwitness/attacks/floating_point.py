"""Mironov's floating-point attack (CCS 2012) on ``x + numpy_laplace`` and on dpwitness's sampler.

numpy's ``Generator.laplace(0, b)`` draws U = k·2⁻⁵³ (k from 53 random bits) and returns
b·ln(2U) for U < ½ and −b·ln(2 − 2U) otherwise. So the noise takes at most 2⁵³ values, unevenly
spread, and y = fl(x + η) can only take values that depend on x. Given an output y and two
candidate inputs, the attacker checks *exactly* whether some k makes fl(x + η(k)) = y for
each input (the k's that can land on y form a short interval found by inverting η); when
only one input can produce y, the output identifies the input.

dpwitness releases (round(x/γ) + X)·γ with X an exact integer of full support: every output
lies on γ·ℤ and every point of γ·ℤ can be produced from every input, so the same exact test
never identifies anything.

An identifying output has probability 0 under the other input, so the ε-DP cap on the rate of
identifying outputs is 0: each side's rate carries its Clopper–Pearson interval (95%) and
"exceeds the cap" as soon as that interval's lower end is above 0 (one identifying output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.attacks.rates import CONFIDENCE, rate_check
from dpwitness.common.validation import check_count, check_finite, check_positive_finite
from dpwitness.mechanisms.additive import Laplace

FloatArray = npt.NDArray[np.float64]
_UNIT = 2.0**-53
#: When more than this many k can land on an output, some certainly does (no need to list them).
_DENSE = 64
_PAD = 6


def numpy_laplace_noise(k: int, scale: float) -> float:
    """η(k) exactly as numpy's ``random_laplace(loc=0, scale)`` computes it (C libm ``log``)."""
    u = k * _UNIT
    if u >= 0.5:
        return 0.0 - scale * math.log(2.0 - u - u)
    return 0.0 + scale * math.log(u + u)


def _k_of(noise: float, scale: float) -> float:
    """The (real) k with η(k) = noise: the inverse of :func:`numpy_laplace_noise`."""
    if noise >= 0:
        return 2.0**53 - 2.0**52 * math.exp(-noise / scale)
    return 2.0**52 * math.exp(noise / scale)


def naive_can_produce(output: float, value: float, scale: float) -> bool:
    """True when ``value + numpy_laplace(0, scale)`` can return exactly ``output``."""
    gap = output - value
    ulp = math.ulp(output) if output != 0 else 5e-324
    ends = [_k_of(gap - ulp, scale), _k_of(gap + ulp, scale)]
    low, high = math.floor(min(ends)) - _PAD, math.ceil(max(ends)) + _PAD
    low, high = max(low, 1), min(high, 2**53 - 1)
    if high - low > _DENSE + 2 * _PAD:
        return True  # the reals rounding to `output` contain many consecutive η(k)
    return any(value + numpy_laplace_noise(k, scale) == output for k in range(low, high + 1))


def grid_can_produce(output: float, mechanism: Laplace) -> bool:
    """True when dpwitness's release can return ``output`` (any input: the support is γ·ℤ).

    :param mechanism: the Laplace mechanism whose grid γ is checked (without grid noise: False).
    """
    if mechanism.noise is None:
        return False
    steps = math.ldexp(output, -mechanism.noise.granularity_log2)
    return steps == math.floor(steps) and abs(steps) < 2.0**62


@dataclass(frozen=True)
class SideResult:
    identification_rate: float
    identified_value: int
    identified_neighbour: int
    samples: int
    #: The Clopper–Pearson interval of ``identification_rate`` (over 2·samples outputs) at ``confidence``.
    interval: tuple[float, float] = (0.0, 1.0)
    confidence: float = CONFIDENCE
    #: The ε-DP cap on the rate of identifying outputs: 0.
    cap: float = 0.0
    verdict: str = "consistent with the cap"

    def to_dict(self) -> dict[str, Any]:
        return {
            "identification_rate": self.identification_rate,
            "identified_value": self.identified_value,
            "identified_neighbour": self.identified_neighbour,
            "samples": self.samples,
            "interval": list(self.interval),
            "confidence": self.confidence,
            "cap": self.cap,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class FloatingPointResult:
    value: float
    neighbour: float
    sensitivity: float
    epsilon: float
    scale: float
    naive: SideResult
    dpwitness: SideResult
    naive_outputs: tuple[FloatArray, FloatArray] = field(repr=False)
    naive_identified: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "neighbour": self.neighbour,
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "naive": self.naive.to_dict(),
            "dpwitness": self.dpwitness.to_dict(),
        }


def _identify(outputs: FloatArray, truth: float, other: float, can_produce: Any) -> npt.NDArray[np.bool_]:
    """Outputs that the truth can produce and the other input cannot (the input is then known)."""
    return np.array([can_produce(float(y), truth) and not can_produce(float(y), other) for y in outputs], dtype=bool)


def floating_point_attack(
    *,
    value: float = 0.0,
    neighbour: float = 1.0,
    sensitivity: float = 1.0,
    epsilon: float = 1.0,
    samples: int = 10_000,
    seed: int | None = None,
) -> FloatingPointResult:
    """Release ``samples`` outputs from each input both ways; report how many identify their input.

    The two inputs are ``value`` and its ``neighbour``; both mechanisms (naive float Laplace and
    dpwitness's grid Laplace) use scale ``sensitivity``/``epsilon``; ``seed`` makes the draws
    reproducible (NOT for production).
    """
    x0 = check_finite("value", value)
    x1 = check_finite("neighbour", neighbour)
    delta = check_positive_finite("sensitivity", sensitivity)
    eps = check_positive_finite("epsilon", epsilon)
    check_count("samples", samples)
    scale = delta / eps
    rng = np.random.default_rng(seed)
    naive_out = (x0 + rng.laplace(0.0, scale, samples), x1 + rng.laplace(0.0, scale, samples))

    def naive(y: float, x: float) -> bool:
        return naive_can_produce(y, x, scale)

    naive_hits = (_identify(naive_out[0], x0, x1, naive), _identify(naive_out[1], x1, x0, naive))
    mechanism = Laplace(sensitivity=delta, epsilon=eps)

    def grid(y: float, x: float) -> bool:
        return grid_can_produce(y, mechanism)

    grid_out = [np.asarray(mechanism.release(x, size=samples, seed=rng).value) for x in (x0, x1)]
    grid_hits = (_identify(grid_out[0], x0, x1, grid), _identify(grid_out[1], x1, x0, grid))
    return FloatingPointResult(
        value=x0,
        neighbour=x1,
        sensitivity=delta,
        epsilon=eps,
        scale=scale,
        naive=_side(naive_hits, samples),
        dpwitness=_side(grid_hits, samples),
        naive_outputs=naive_out,
        naive_identified=naive_hits,
    )


def _side(hits: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]], samples: int) -> SideResult:
    first, second = int(hits[0].sum()), int(hits[1].sum())
    check = rate_check(first + second, 2 * samples, 0.0)
    return SideResult(check.rate, first, second, samples, (check.lower, check.upper), check.confidence, check.cap, check.verdict)
