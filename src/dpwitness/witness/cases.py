"""Known-verdict cases shared by the blue team's catalogue and the red team's tamper attack.

A :class:`Case` is a mechanism, a neighbouring pair on which its verdict shows, and its claim.
The classic calibration mistakes live here (not in :mod:`dpwitness.attacks.tamper`), so that
:mod:`catalogue` can list them without importing the attacks: both import
this module, which imports only the mechanism and noise layers.

The mistakes (each a real mechanism, the project's own :class:`~dpwitness.Laplace` where it
applies):

* ``invert``: scale ε/Δ instead of Δ/ε (real loss Δ²/ε);
* ``not-divided-by-n``: a mean's noise (Δ = (U − L)/n) added to the sum, which was never
  divided by n (real loss n·ε for a worst-case record);
* ``add-remove``: a histogram's add/remove Δ = 1 used under replace-one, where Δ = 2;
* ``unclipped``: a sum calibrated to bounds [L, U] whose values were never clamped;
* ``fixed-seed``: the noise comes from a constant seed, so the output is a function of the input;
* ``gaussian``: Gaussian noise of the Laplace scale claimed as pure ε-DP (unbounded log ratio).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.mechanisms.additive import Laplace
from dpwitness.noise import GridLaplace

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Case:
    """One catalogue entry: a mechanism, a neighbouring pair on which its verdict shows, its claim."""

    name: str
    mechanism: Callable[..., Any]
    d: Any
    d_prime: Any
    epsilon: float
    private: bool
    true_loss: float
    note: str


def inverted_laplace(*, sensitivity: float, epsilon: float, dimension: int = 1) -> Laplace:
    """Claims ε but samples scale ε/Δ instead of Δ/ε: its real loss is Δ/(ε/Δ) = Δ²/ε."""
    return Laplace(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dimension=dimension,
        noise=GridLaplace.calibrate(sensitivity=epsilon, epsilon=sensitivity, dimension=dimension),
    )


def add_remove_laplace(*, sensitivity: float, epsilon: float, dimension: int = 1) -> Laplace:
    """Claims Δ (replace-one) but calibrates the noise to Δ/2 (the add/remove Δ of a count or histogram)."""
    return Laplace(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dimension=dimension,
        noise=GridLaplace.calibrate(sensitivity=sensitivity / 2, epsilon=epsilon, dimension=dimension),
    )


def releases(mechanism: Laplace) -> Callable[..., Any]:
    """``(value, rng, size)`` → the values of n releases by ``mechanism`` (the auditor's calling convention)."""

    def run(value: Any, rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(value, size=size, seed=rng).value

    return run


AGES = [23.0, 35.0, 41.0, 52.0, 19.0, 64.0, 38.0, 29.0, 47.0, 33.0, 58.0, 26.0, 44.0, 31.0, 70.0, 22.0, 39.0, 50.0, 36.0, 30.0]
BOUNDS = (0.0, 100.0)


def not_divided_by_n(epsilon: float) -> Laplace:
    """The mean's mechanism (Δ = (U − L)/n), which the mistake applies to the sum."""
    return Laplace(sensitivity=(BOUNDS[1] - BOUNDS[0]) / len(AGES), epsilon=epsilon)


def _sum_forgot_n(mechanism: Laplace) -> Callable[..., Any]:
    def run(ages: list[float], rng: np.random.Generator, size: int) -> Any:
        total = float(np.clip(ages, *BOUNDS).sum())  # BUG: the mean is never divided by n
        return mechanism.release(total, size=size, seed=rng).value

    return run


def _unclipped_sum(mechanism: Laplace) -> Callable[..., Any]:
    def run(values: list[float], rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(float(np.sum(values)), size=size, seed=rng).value  # BUG: never clamped to BOUNDS

    return run


def _fixed_seed(mechanism: Laplace, seed: int = 42) -> Callable[..., Any]:
    def run(value: float, rng: np.random.Generator, size: int) -> Any:
        # BUG: every call draws the same noise, so each release is a fixed function of the input.
        return np.full(size, float(mechanism.release(value, seed=seed)))

    return run


def _gaussian(epsilon: float) -> Callable[..., Any]:
    def run(value: float, rng: np.random.Generator, size: int) -> Any:
        return value + rng.normal(0.0, 1.0 / epsilon, size)  # BUG: Gaussian tails, claimed pure ε-DP

    return run


def replaced_ages() -> list[float]:
    """AGES with its last record replaced by the upper bound (the worst replace-one neighbour)."""
    return [*AGES[:-1], 100.0]


def _mistake(name: str, mechanism: Callable[..., Any], d: Any, d_prime: Any, epsilon: float, loss: float, note: str) -> Case:
    return Case(f"tamper: {name}", mechanism, d, d_prime, epsilon, False, loss, note)


#: name → (description, case at a claimed ε)
MISTAKE_CASES: dict[str, tuple[str, Callable[[float], Case]]] = {
    "invert": (
        "Laplace scale ε/Δ instead of Δ/ε",
        lambda e: _mistake(
            "invert", releases(inverted_laplace(sensitivity=1.0, epsilon=e)), 0.0, 1.0, e, 1.0 / e, "real loss Δ²/ε"
        ),
    ),
    "not-divided-by-n": (
        f"mean of n = {len(AGES)} ages in [0, 100]: noise for Δ = (U − L)/n added to the sum, never divided by n",
        lambda e: _mistake(
            "not-divided-by-n",
            _sum_forgot_n(not_divided_by_n(e)),
            AGES,
            replaced_ages(),
            e,
            (100.0 - AGES[-1]) / not_divided_by_n(e).scale,
            "released value moves by up to U − L, not (U − L)/n",
        ),
    ),
    "add-remove": (
        "histogram under replace-one (Δ = 2) released with the add/remove Δ = 1",
        lambda e: _mistake(
            "add-remove",
            releases(Laplace(sensitivity=1.0, epsilon=e, dimension=4)),
            [3.0, 5.0, 2.0, 7.0],
            [3.0, 4.0, 3.0, 7.0],
            e,
            2.0 * e,
            "two bins move by 1 each: loss 2ε",
        ),
    ),
    "unclipped": (
        "sum calibrated to values in [0, 100] whose values are never clamped (one record is 400)",
        lambda e: _mistake(
            "unclipped",
            _unclipped_sum(Laplace(sensitivity=100.0, epsilon=e)),
            [20.0, 30.0, 40.0],
            [20.0, 30.0, 400.0],
            e,
            360.0 * e / 100.0,
            "the record moves the sum by 360 > Δ = 100",
        ),
    ),
    "fixed-seed": (
        "every release draws its noise from the same seed (42)",
        lambda e: _mistake(
            "fixed-seed",
            _fixed_seed(Laplace(sensitivity=1.0, epsilon=e)),
            0.0,
            1.0,
            e,
            math.inf,
            "the output is a deterministic function of the input",
        ),
    ),
    "gaussian": (
        "Gaussian noise N(0, (Δ/ε)²) claimed as pure ε-DP",
        lambda e: _mistake("gaussian", _gaussian(e), 0.0, 1.0, e, math.inf, "log density ratio (2z − 1)ε²/2 grows without bound"),
    ),
}


def mistake_cases(epsilon: float = 0.5) -> list[Case]:
    """Every calibration mistake as a catalogue case at the claimed ``epsilon``."""
    return [build(epsilon) for _, build in MISTAKE_CASES.values()]
