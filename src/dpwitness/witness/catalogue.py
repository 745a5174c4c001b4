"""Known-verdict mechanisms from the DP-testing literature, re-implemented for the auditor.

Correct: Laplace, geometric, report-noisy-max (index) with Laplace, exponential or Gumbel
noise, a Laplace histogram, and the sparse vector technique as Lyu, Su and Li (VLDB 2017)
prove private (their Alg. 1 and 2). Buggy: noisy max that returns the noisy *value*, their
SVT Alg. 3–6, a histogram with the scale inverted, and the classic calibration mistakes of
:mod:`dpwitness.attacks.tamper`. Every mechanism takes ``(data, rng, size=n)`` and returns n
outputs; inputs are query answers (each answer moves by at most 1 between neighbours).
Outputs of the SVT variants: one code per query, 1 = ⊤, 0 = ⊥, −1 = not answered (halted).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

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


#: Nine answers down, the last one up (StatDP's "one up, rest down" with the ⊤ last): the pair
#: on which SVT Alg. 1 is nearly tight and Alg. 3–6 break.
SVT_PAIR = ([0.0] * 10, [-1.0] * 9 + [1.0])


def laplace(answer: float, rng: np.random.Generator, size: int, *, epsilon: float) -> FloatArray:
    """f + Lap(1/ε): ε-DP for a sensitivity-1 answer."""
    return np.asarray(answer + rng.laplace(0.0, 1.0 / epsilon, size))


def geometric(answer: int, rng: np.random.Generator, size: int, *, epsilon: float) -> npt.NDArray[np.int64]:
    """f + two-sided geometric noise, P(k) ∝ e^(−ε|k|): ε-DP for an integer, sensitivity-1 answer."""
    p = 1.0 - math.exp(-epsilon)
    return np.asarray(int(answer) + rng.geometric(p, size) - rng.geometric(p, size), dtype=np.int64)


def _noisy(answers: Any, rng: np.random.Generator, size: int, noise: str, scale: float) -> FloatArray:
    q = np.asarray(answers, dtype=np.float64)
    shape = (size, q.size)
    if noise == "laplace":
        return q + rng.laplace(0.0, scale, shape)
    if noise == "exponential":
        return q + rng.exponential(scale, shape)
    return q + rng.gumbel(0.0, scale, shape)


def noisy_max_index(answers: Any, rng: np.random.Generator, size: int, *, epsilon: float, noise: str) -> npt.NDArray[np.int64]:
    """argmax(q_i + noise of scale 2/ε): ε-DP (Laplace, exponential; Gumbel = exponential mechanism)."""
    return np.asarray(np.argmax(_noisy(answers, rng, size, noise, 2.0 / epsilon), axis=1), dtype=np.int64)


def noisy_max_value(answers: Any, rng: np.random.Generator, size: int, *, epsilon: float) -> FloatArray:
    """BUG: returns max(q_i + Lap(2/ε)), the noisy value; with k answers all shifted, the loss is kε/2."""
    return np.asarray(np.max(_noisy(answers, rng, size, "laplace", 2.0 / epsilon), axis=1))


def histogram(counts: Any, rng: np.random.Generator, size: int, *, epsilon: float, scale: float | None = None) -> FloatArray:
    """counts + Lap(1/ε) per bin: ε-DP under add/remove (one bin moves by 1). ``scale`` overrides (bugs)."""
    q = np.asarray(counts, dtype=np.float64)
    return q + rng.laplace(0.0, 1.0 / epsilon if scale is None else scale, (size, q.size))


def svt(
    answers: Any, rng: np.random.Generator, size: int, *, epsilon: float, variant: int, cutoff: int = 1, threshold: float = 0.0
) -> Any:
    """Sparse vector, Lyu–Su–Li Alg. ``variant`` (1–6), Δ = 1, ``cutoff`` = c positive answers."""
    q = np.asarray(answers, dtype=np.float64)
    c = cutoff
    e1 = epsilon / 4 if variant == 4 else epsilon / 2
    e2 = epsilon - e1
    rho_scale = c / e1 if variant == 2 else 1.0 / e1
    nu_scale = {1: 2 * c / e2, 2: 2 * c / e1, 3: c / e2, 4: 1 / e2, 5: 0.0, 6: 1 / e2}[variant]
    stops = variant <= 4
    rho = rng.laplace(0.0, rho_scale, size)
    codes = np.full((size, q.size), -1, dtype=np.int64)
    values = np.zeros((size, q.size))
    count = np.zeros(size, dtype=np.int64)
    active = np.ones(size, dtype=bool)
    for i, answer in enumerate(q):
        noisy = answer + (rng.laplace(0.0, nu_scale, size) if nu_scale > 0 else 0.0)
        top = noisy >= threshold + rho
        codes[:, i] = np.where(active, top, -1)
        hit = active & top
        values[:, i] = np.where(hit, noisy, 0.0)
        count += hit
        if variant == 2:
            rho = np.where(hit, rng.laplace(0.0, c / e2, size), rho)
        if stops:
            active &= count < c
    return (codes, values) if variant == 3 else codes


def correct_cases() -> list[Case]:
    """Mechanisms that are ε-DP: the auditor must never flag them."""
    ones, mixed = [1.0] * 5, [2.0, 0.0, 0.0, 0.0, 0.0]
    return [
        Case("laplace", partial(laplace, epsilon=1.0), 0.0, 1.0, 1.0, True, 1.0, "f + Lap(Δ/ε)"),
        Case("geometric", partial(geometric, epsilon=0.5), 0, 1, 0.5, True, 0.5, "f + two-sided geometric(e^-ε)"),
        Case(
            "noisy max index, Laplace",
            partial(noisy_max_index, epsilon=0.5, noise="laplace"),
            ones,
            mixed,
            0.5,
            True,
            math.nan,
            "argmax q + Lap(2/ε)",
        ),
        Case(
            "noisy max index, exponential",
            partial(noisy_max_index, epsilon=0.5, noise="exponential"),
            ones,
            mixed,
            0.5,
            True,
            math.nan,
            "argmax q + Exp(2/ε)",
        ),
        Case(
            "noisy max index, Gumbel",
            partial(noisy_max_index, epsilon=0.5, noise="gumbel"),
            ones,
            mixed,
            0.5,
            True,
            math.nan,
            "argmax q + Gumbel(2/ε)",
        ),
        Case(
            "histogram",
            partial(histogram, epsilon=0.5),
            [3.0, 5.0, 2.0, 7.0],
            [3.0, 6.0, 2.0, 7.0],
            0.5,
            True,
            0.5,
            "counts + Lap(1/ε), add/remove",
        ),
        Case("SVT Alg. 1", partial(svt, epsilon=0.5, variant=1), *SVT_PAIR, 0.5, True, math.nan, "Lyu–Su–Li Alg. 1, c = 1"),
        Case(
            "SVT Alg. 2",
            partial(svt, epsilon=0.5, variant=2),
            *SVT_PAIR,
            0.5,
            True,
            math.nan,
            "Dwork–Roth (Lyu–Su–Li Alg. 2), c = 1",
        ),
    ]


def buggy_cases() -> list[Case]:
    """Mechanisms that break their claimed ε on the given pair: the auditor must flag each."""
    from dpwitness.attacks.tamper import mistake_cases

    return [
        Case(
            "noisy max value",
            partial(noisy_max_value, epsilon=0.5),
            [1.0] * 5,
            [0.0] * 5,
            0.5,
            False,
            1.25,
            "returns max(q + Lap(2/ε)): loss kε/2",
        ),
        Case(
            "SVT Alg. 3",
            partial(svt, epsilon=0.5, variant=3),
            *SVT_PAIR,
            0.5,
            False,
            math.inf,
            "outputs the noisy answer of a ⊤: ∞-DP",
        ),
        Case(
            "SVT Alg. 4",
            partial(svt, epsilon=0.5, variant=4),
            *SVT_PAIR,
            0.5,
            False,
            0.875,
            "query noise independent of c: (1 + 6c)/4·ε",
        ),
        Case(
            "SVT Alg. 5", partial(svt, epsilon=0.5, variant=5), *SVT_PAIR, 0.5, False, math.inf, "no query noise, no cutoff: ∞-DP"
        ),
        Case("SVT Alg. 6", partial(svt, epsilon=0.5, variant=6), *SVT_PAIR, 0.5, False, math.inf, "no cutoff: ∞-DP"),
        Case(
            "histogram, inverted scale",
            partial(histogram, epsilon=0.5, scale=0.5),
            [3.0, 5.0, 2.0, 7.0],
            [3.0, 6.0, 2.0, 7.0],
            0.5,
            False,
            2.0,
            "Lap(ε) instead of Lap(1/ε): loss 1/ε",
        ),
        *mistake_cases(),
    ]


def catalogue() -> list[Case]:
    return correct_cases() + buggy_cases()
