"""Known-verdict mechanisms from the DP-testing literature, re-implemented for the auditor.

Correct: Laplace, geometric, report-noisy-max (index) with Laplace, exponential or Gumbel
noise, a Laplace histogram, and the sparse vector technique as Lyu, Su and Li (VLDB 2017)
prove private (their Alg. 1 and 2), vectorised and in its natural form (answer queries until
c positives, then stop: outputs of varying length). Buggy: noisy max that returns the noisy
*value*, their SVT Alg. 3–6 (both forms), a histogram with the scale inverted, leaks of small
probability into a point or a narrow window, a list whose length leaks, Gaussian noise claimed
as pure ε at several σ, and the classic calibration mistakes of :mod:`dpwitness.witness.cases`.
:func:`dp_sniper_cases` re-implements the mechanisms of DP-Sniper's published table (Bichsel
et al., S&P 2021) at their ε = 0.1, with the published lower confidence bounds.

Vectorised mechanisms take ``(data, rng, size=n)`` and return n outputs; natural-form ones
take ``(data, rng)`` and return one output. Inputs are query answers (each answer moves by at
most 1 between neighbours). Outputs of the vectorised SVT: one code per query, 1 = ⊤, 0 = ⊥,
−1 = not answered (halted); of the natural form: a list of booleans (Alg. 3: the noisy answer
instead of True), as long as the queries answered.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.witness.cases import Case, mistake_cases

__all__ = [
    "SVT_PAIR",
    "Case",
    "SniperCase",
    "buggy_cases",
    "catalogue",
    "correct_cases",
    "dp_sniper_cases",
    "dp_sniper_table",
    "wide_gaussian_cases",
]

FloatArray = npt.NDArray[np.float64]

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


def sparse_vector(
    answers: Any, rng: np.random.Generator, *, epsilon: float, variant: int, cutoff: int = 1, threshold: float = 0.0
) -> list[Any]:
    """Sparse vector as usually written: one run, answering queries until ``cutoff`` positives.

    Lyu–Su–Li Alg. ``variant``: 1 and 2 are ε-DP; 3 reports the noisy answer of a positive,
    4 under-noises the queries, 5 has no query noise and 6 no cutoff (5 and 6 answer all queries).
    """
    c = cutoff
    e1 = epsilon / 4 if variant == 4 else epsilon / 2
    e2 = epsilon - e1
    query_scale = {1: 2 * c / e2, 2: 2 * c / e1, 3: c / e2, 4: 1 / e2, 5: 0.0, 6: 1 / e2}[variant]
    noisy_threshold = threshold + rng.laplace(0.0, c / e1 if variant == 2 else 1 / e1)
    out: list[Any] = []
    positives = 0
    for answer in answers:
        noisy = float(answer) + (rng.laplace(0.0, query_scale) if query_scale else 0.0)
        if noisy >= noisy_threshold:
            out.append(noisy if variant == 3 else True)
            positives += 1
            if variant == 2:
                noisy_threshold = threshold + rng.laplace(0.0, c / e2)
            if variant <= 4 and positives >= c:
                break
        else:
            out.append(False)
    return out


def laplace_with_debug_path(answer: float, rng: np.random.Generator, size: int, *, epsilon: float, leak: float) -> FloatArray:
    """BUG: a debugging branch, taken on a fraction ``leak`` of runs, returns the exact answer (∞-DP)."""
    noisy = answer + rng.laplace(0.0, 1.0 / epsilon, size)
    return np.asarray(np.where(rng.random(size) < leak, answer, noisy))


def laplace_with_unit_slip(answer: float, rng: np.random.Generator, size: int, *, epsilon: float, leak: float) -> FloatArray:
    """BUG: on a fraction ``leak`` of runs the scale is taken in thousandths (b/1000): a narrow window leaks."""
    scale = np.where(rng.random(size) < leak, 1e-3 / epsilon, 1.0 / epsilon)
    return np.asarray(answer + rng.laplace(0.0, 1.0, size) * scale)


def unit_slip_loss(epsilon: float, leak: float) -> float:
    """The exact loss of :func:`laplace_with_unit_slip` on answers 0 and 1: the log density ratio at 0."""
    b, small = 1.0 / epsilon, 1e-3 / epsilon
    at_home = (1 - leak) / (2 * b) + leak / (2 * small)
    away = (1 - leak) / (2 * b) * math.exp(-1 / b) + leak / (2 * small) * math.exp(-1 / small)
    return math.log(at_home / away)


def noisy_answers_above(answers: Any, rng: np.random.Generator, *, epsilon: float, threshold: float = 0.5) -> list[float]:
    """BUG: the noisy answers of the queries whose *true* answer exceeds the threshold: the length leaks."""
    return [float(a) + rng.laplace(0.0, 1.0 / epsilon) for a in answers if a > threshold]


def gaussian_as_pure(answer: float, rng: np.random.Generator, size: int, *, sigma: float) -> FloatArray:
    """BUG: Gaussian noise N(0, σ²) claimed pure ε-DP: its log density ratio grows without bound in the tails."""
    return np.asarray(answer + rng.normal(0.0, sigma, size))


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
        *[
            Case(
                f"SVT Alg. {v}, natural form" + (f", c = {c}" if c > 1 else ""),
                partial(sparse_vector, epsilon=0.5, variant=v, cutoff=c),
                *SVT_PAIR,
                0.5,
                True,
                math.nan,
                f"Lyu–Su–Li Alg. {v}, c = {c}: a list of ⊤/⊥ that stops at the c-th ⊤",
            )
            for v, c in ((1, 1), (2, 1), (1, 2))
        ],
    ]


def buggy_cases() -> list[Case]:
    """Mechanisms that break their claimed ε on the given pair: the auditor must flag each."""
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
        *[
            Case(
                f"SVT Alg. {v}, natural form",
                partial(sparse_vector, epsilon=0.5, variant=v),
                *SVT_PAIR,
                0.5,
                False,
                loss,
                note,
            )
            for v, loss, note in (
                (3, math.inf, "a list ending with the noisy answer of the ⊤: ∞-DP"),
                (4, 0.875, "query noise independent of c: (1 + 6c)/4·ε"),
                (5, math.inf, "no query noise, no cutoff: ∞-DP"),
                (6, math.inf, "no cutoff: ∞-DP"),
            )
        ],
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
        Case(
            "leak: exact answer on 1% of runs",
            partial(laplace_with_debug_path, epsilon=1.0, leak=0.01),
            0.0,
            1.0,
            1.0,
            False,
            math.inf,
            "a point mass of 1% at the true answer in a continuous output",
        ),
        Case(
            "leak: scale b/1000 on 1% of runs",
            partial(laplace_with_unit_slip, epsilon=1.0, leak=0.01),
            0.0,
            1.0,
            1.0,
            False,
            unit_slip_loss(1.0, 0.01),
            "1% of the mass within about ±10⁻³·b of the answer",
        ),
        Case(
            "leak: list of the answers above a threshold",
            partial(noisy_answers_above, epsilon=1.0),
            [1.0, 1.0, 0.0],
            [1.0, 1.0, 1.0],
            1.0,
            False,
            math.inf,
            "noisy values, but their number is the exact count of true answers above 0.5",
        ),
        *[
            Case(
                f"Gaussian σ = {m:g}/ε claimed pure ε",
                partial(gaussian_as_pure, sigma=m / 1.0),
                0.0,
                1.0,
                1.0,
                False,
                math.inf,
                "log density ratio (2x − 1)/(2σ²) grows without bound",
            )
            for m in (1.0, 1.5, 2.0)
        ],
        *mistake_cases(),
    ]


def catalogue() -> list[Case]:
    return correct_cases() + buggy_cases()


def wide_gaussian_cases() -> list[Case]:
    """Gaussian noise claimed as pure ε at wider σ (relative to Δ/ε) than :func:`buggy_cases`: the
    log density ratio passes ε only in the tails, so they need the adaptive audit's millions of
    runs (a fixed 2·10⁵ runs shows a bound below the claim, never more)."""
    return [
        Case(
            f"Gaussian σ = {sigma:g}·Δ/ε claimed pure ε = {e:g}",
            partial(gaussian_as_pure, sigma=sigma / e),
            0.0,
            1.0,
            e,
            False,
            math.inf,
            "log density ratio (1 − 2x)/(2σ²): above ε only beyond x ≈ −σ²ε",
        )
        for sigma, e in ((3.0, 1.0), (2.0, 0.5))
    ]


# --- DP-Sniper's table (Bichsel, Steffen, Bogunovic, Vechev, S&P 2021), at ε = 0.1 -------------


@dataclass(frozen=True)
class SniperCase:
    """A mechanism of DP-Sniper's table, its pair, and DP-Sniper's published lower confidence
    bounds (logistic regression, neural network). ``target`` is the smallest of the larger
    published bound, 0.98 × the exact loss where known and 0.98 × ε where the mechanism is
    proven ε-DP: what the tight mode must certify."""

    case: Case
    published: tuple[float, float]
    proven: bool

    @property
    def target(self) -> float:
        bounds = [max(self.published)]
        if math.isfinite(self.case.true_loss):
            bounds.append(0.98 * self.case.true_loss)
        if self.proven:
            bounds.append(0.98 * self.case.epsilon)
        return min(bounds)


def truncated_geometric_cdf(count: int, *, epsilon: float, n: int) -> list[int]:
    """Balcer–Vadhan's GeoSample (2018, Alg. 4.8) on {0, …, n}: its CDF as exact integers F(0..n),
    out of D = (2^(k+1) + 1)·(2^k + 1)^(n−1) with k = ⌈ln(2/ε)⌉; it is ln(1 + 2^−k)-DP."""
    k = math.ceil(math.log(2.0 / epsilon))
    total = (2 ** (k + 1) + 1) * (2**k + 1) ** (n - 1)
    below = [2 ** (k * (count - z)) * (2**k + 1) ** (n - (count - z)) for z in range(count)]
    above = [total - 2 ** (k * (z - count + 1)) * (2**k + 1) ** (n - 1 - (z - count)) for z in range(count, n)]
    return [*below, *above, total]


def truncated_geometric(count: Any, rng: np.random.Generator, size: int, *, epsilon: float, n: int = 5) -> npt.NDArray[np.int64]:
    """A count in {0, …, n} released by inverse-CDF sampling of GeoSample (a uniform integer in 1..D)."""
    cdf = truncated_geometric_cdf(int(np.asarray(count).ravel()[0]), epsilon=epsilon, n=n)
    draws = rng.integers(1, cdf[-1] + 1, size)
    return np.asarray(np.searchsorted(np.asarray(cdf, dtype=np.int64), draws, side="left"), dtype=np.int64)


def truncated_geometric_loss(*, epsilon: float, n: int, first: int, second: int) -> float:
    """The exact loss of GeoSample between two counts (the largest log ratio of their probabilities)."""
    pa, pb = (np.diff([0, *truncated_geometric_cdf(c, epsilon=epsilon, n=n)]) for c in (first, second))
    return float(np.max(np.abs(np.log(np.asarray(pa, dtype=np.float64) / np.asarray(pb, dtype=np.float64)))))


def parallel_laplace(answer: Any, rng: np.random.Generator, size: int, *, epsilon: float, copies: int) -> FloatArray:
    """``copies`` independent Laplace releases of one answer, each at ε/copies: ε-DP in all."""
    value = float(np.asarray(answer).ravel()[0])
    return np.asarray(value + rng.laplace(0.0, copies / epsilon, (size, copies)))


def snapping(answer: Any, rng: np.random.Generator, size: int, *, epsilon: float, bound: float = 100.0) -> FloatArray:
    """Mironov's snapping mechanism (CCS 2012): clamp to [−B, B], add sign·λ·ln(u) with
    λ = (1 + B·2⁻⁴⁹)/ε, round to the nearest multiple of Λ (the smallest power of two ≥ λ), clamp."""
    scale = (1.0 + bound * 2.0**-49) / epsilon
    grid = 2.0 ** math.ceil(math.log2(scale))
    value = min(bound, max(-bound, float(np.asarray(answer).ravel()[0])))
    sign = rng.choice([-1.0, 1.0], size)
    noisy = value + sign * scale * np.log(rng.random(size))
    return np.asarray(np.clip(np.round(noisy / grid) * grid, -bound, bound))


def _laplace_first(answer: Any, rng: np.random.Generator, size: int, *, epsilon: float) -> FloatArray:
    return laplace(float(np.asarray(answer).ravel()[0]), rng, size, epsilon=epsilon)


def noisy_max_exponential_value(answers: Any, rng: np.random.Generator, size: int, *, epsilon: float) -> FloatArray:
    """BUG: max(q_i + Exp(2/ε)): exponential noise is one-sided, so the support moves with the answers (∞-DP)."""
    return np.asarray(np.max(_noisy(answers, rng, size, "exponential", 2.0 / epsilon), axis=1))


def dp_sniper_cases(epsilon: float = 0.1) -> list[SniperCase]:
    """The mechanisms of DP-Sniper's table that dpwitness re-implements, on the pairs DP-Sniper found.

    Published bounds: ``eps_lcb`` of eth-sri/dp-sniper's reference results (logistic regression,
    neural network), for ε = 0.1. Not re-implemented: SVT variants with their pairs (dpwitness
    audits SVT on its own pair above), RAPPOR, one-time RAPPOR, prefix sum, numerical SVT,
    SVT 3–4 in parallel.
    """
    ones, shifted = [1.0] * 5, [0.0, 2.0, 2.0, 2.0, 2.0]
    geometric_loss = truncated_geometric_loss(epsilon=epsilon, n=5, first=2, second=1)
    e = epsilon
    return [
        SniperCase(
            Case("DP-Sniper: Laplace", partial(_laplace_first, epsilon=e), [0.0], [1.0], e, True, e, "f + Lap(1/ε)"),
            (0.0968, 0.0976),
            True,
        ),
        SniperCase(
            Case(
                "DP-Sniper: truncated geometric",
                partial(truncated_geometric, epsilon=e, n=5),
                [2],
                [1],
                e,
                False,
                geometric_loss,
                "Balcer–Vadhan GeoSample, n = 5: ln(1 + 2^−k)-DP with k = ⌈ln(2/ε)⌉, more than ε",
            ),
            (0.1156, 0.1155),
            False,
        ),
        SniperCase(
            Case(
                "DP-Sniper: histogram",
                partial(histogram, epsilon=e),
                [0.0, 1, 1, 1, 1],
                [1.0] * 5,
                e,
                True,
                e,
                "counts + Lap(1/ε)",
            ),
            (0.0978, 0.0977),
            True,
        ),
        SniperCase(
            Case(
                "DP-Sniper: histogram, scale ε",
                partial(histogram, epsilon=e, scale=e),
                [0.0, 1, 1, 1, 1],
                [1.0] * 5,
                e,
                False,
                1.0 / e,
                "counts + Lap(ε): loss 1/ε",
            ),
            (4.6020, 4.6015),
            False,
        ),
        SniperCase(
            Case(
                "DP-Sniper: report noisy max, Laplace",
                partial(noisy_max_index, epsilon=e, noise="laplace"),
                ones,
                shifted,
                e,
                True,
                math.nan,
                "argmax q + Lap(2/ε)",
            ),
            (0.0923, 0.0925),
            True,
        ),
        SniperCase(
            Case(
                "DP-Sniper: report noisy max, exponential",
                partial(noisy_max_index, epsilon=e, noise="exponential"),
                ones,
                shifted,
                e,
                True,
                math.nan,
                "argmax q + Exp(2/ε)",
            ),
            (0.0975, 0.0979),
            True,
        ),
        SniperCase(
            Case(
                "DP-Sniper: noisy max value, Laplace",
                partial(noisy_max_value, epsilon=e),
                ones,
                [2.0] * 5,
                e,
                False,
                5 * e / 2,
                "max q + Lap(2/ε): loss kε/2",
            ),
            (0.2478, 0.2488),
            False,
        ),
        SniperCase(
            Case(
                "DP-Sniper: noisy max value, exponential",
                partial(noisy_max_exponential_value, epsilon=e),
                ones,
                [2.0] * 5,
                e,
                False,
                math.inf,
                "max q + Exp(2/ε): the support moves",
            ),
            (0.3463, 0.3534),
            False,
        ),
        SniperCase(
            Case(
                "DP-Sniper: 20 parallel Laplace",
                partial(parallel_laplace, epsilon=e, copies=20),
                [0.0],
                [1.0],
                e,
                True,
                e,
                "20 releases of f + Lap(20/ε)",
            ),
            (0.0350, 0.0299),
            True,
        ),
        SniperCase(
            Case("DP-Sniper: snapping", partial(snapping, epsilon=e), [0.0], [1.0], e, True, math.nan, "Mironov 2012, B = 100"),
            (0.0979, 0.0979),
            True,
        ),
    ]


# --- DP-Sniper's whole table, written as people write them: one run per call -------------------
#
# Each function takes (data, rng) and returns one output, as a user's mechanism does; the auditor
# calls it once per run. Pairs and parameters are DP-Sniper's (eth-sri/dp-sniper,
# ``dpsniper/experiments/exp_default.py`` and the witness pairs of its reference logs).


def laplace_once(answer: Any, rng: np.random.Generator, *, epsilon: float) -> float:
    """f + Lap(1/ε) for a sensitivity-1 answer."""
    return float(answer[0]) + rng.laplace(0.0, 1.0 / epsilon)


@lru_cache(maxsize=64)
def _geometric_table(count: int, epsilon: float, n: int) -> tuple[int, ...]:
    return tuple(truncated_geometric_cdf(count, epsilon=epsilon, n=n))


def truncated_geometric_once(count: Any, rng: np.random.Generator, *, epsilon: float, n: int = 5) -> int:
    """GeoSample on {0, …, n} by inverse CDF: a uniform integer in 1..D looked up in the exact CDF."""
    cdf = _geometric_table(int(count[0]), epsilon, n)
    return bisect.bisect_left(cdf, int(rng.integers(1, cdf[-1] + 1)))


def noisy_histogram_once(counts: Any, rng: np.random.Generator, *, scale: float) -> FloatArray:
    """counts + Lap(scale) per bin (NoisyHist1: scale 1/ε; NoisyHist2, the bug: scale ε)."""
    q = np.asarray(counts, dtype=np.float64)
    return q + rng.laplace(0.0, scale, len(q))


def report_noisy_max_once(answers: Any, rng: np.random.Generator, *, epsilon: float, noise: str, value: bool) -> float:
    """argmax (or, the bug, max) of q + Lap(2/ε) or q + Exp(2/ε)."""
    q = np.asarray(answers, dtype=np.float64)
    noisy = q + (rng.laplace(0.0, 2.0 / epsilon, len(q)) if noise == "laplace" else rng.exponential(2.0 / epsilon, len(q)))
    return float(noisy.max()) if value else int(noisy.argmax())


def bloom_filter(value: Any, *, hashes: int = 4, size: int = 20) -> npt.NDArray[np.bool_]:
    """The bits of ``value`` in a Bloom filter of ``size`` bits, ``hashes`` salted SHA-256 hashes."""
    bits = np.zeros(size, dtype=bool)
    for i in range(hashes):
        bits[int.from_bytes(hashlib.sha256(f"{i}:{value}".encode()).digest()[:8], "big") % size] = True
    return bits


def rappor_once(value: Any, rng: np.random.Generator, *, f: float, p: float = 0.45, q: float = 0.55, instantaneous: bool) -> Any:
    """RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014), steps 1–3 (one-time RAPPOR: steps 1–2):
    Bloom filter, permanent randomised response (each bit set with prob. f/2, cleared with f/2),
    then instantaneous randomised response (report 1 with prob. q on a 1, p on a 0)."""
    bits = bloom_filter(value[0])
    u = rng.random(len(bits))
    permanent = np.where(u < f / 2, True, np.where(u < f, False, bits))
    if not instantaneous:
        return permanent
    return np.where(permanent, rng.random(len(bits)) < q, rng.random(len(bits)) < p)


def rappor_loss(*, f: float, p: float, q: float, differing: int) -> float:
    """The exact loss of RAPPOR's report between two values whose filters differ in ``differing`` bits."""
    one = (1 - f / 2) * q + f / 2 * p  # P(report 1 | bit 1)
    zero = f / 2 * q + (1 - f / 2) * p  # P(report 1 | bit 0)
    return differing * max(math.log(one / zero), math.log((1 - zero) / (1 - one)))


def parallel_laplace_once(answer: Any, rng: np.random.Generator, *, epsilon: float, copies: int) -> FloatArray:
    """``copies`` Laplace releases of one answer at ε/copies each (ε in all)."""
    return float(answer[0]) + rng.laplace(0.0, copies / epsilon, copies)


def prefix_sum_once(answers: Any, rng: np.random.Generator, *, epsilon: float) -> FloatArray:
    """Wang et al. (PLDI 2019): the running sums of q_i + Lap(1/ε)."""
    q = np.asarray(answers, dtype=np.float64)
    return np.cumsum(q + rng.laplace(0.0, 1.0 / epsilon, len(q)))


def numerical_svt_once(
    answers: Any, rng: np.random.Generator, *, epsilon: float, cutoff: int = 2, threshold: float = 1.0
) -> list[float]:
    """Numerical sparse vector (Wang et al., PLDI 2019): for each query above the noisy threshold
    a fresh noisy answer q + Lap(3c/ε), else 0; stops after c answers. ε-DP."""
    noisy_threshold = threshold + rng.laplace(0.0, 3.0 / epsilon)
    out: list[float] = []
    answered = 0
    for answer in answers:
        if float(answer) + rng.laplace(0.0, 6.0 * cutoff / epsilon) >= noisy_threshold:
            out.append(float(answer) + rng.laplace(0.0, 3.0 * cutoff / epsilon))
            answered += 1
            if answered >= cutoff:
                break
        else:
            out.append(0.0)
    return out


def svt34_parallel_once(
    answers: Any, rng: np.random.Generator, *, epsilon: float, cutoff: int = 2
) -> tuple[list[Any], list[Any]]:
    """SVT Alg. 3 and Alg. 4 run side by side on the same answers (each claiming ε)."""
    return (
        sparse_vector(answers, rng, epsilon=epsilon, variant=3, cutoff=cutoff, threshold=1.0),
        sparse_vector(answers, rng, epsilon=epsilon, variant=4, cutoff=cutoff, threshold=1.0),
    )


#: DP-Sniper's published 90% lower confidence bounds at ε = 0.1 (logistic regression, neural
#: network): eth-sri/dp-sniper's reference logs, the table in ../shared/data/dpsniper_reference_table.csv.
DP_SNIPER_PUBLISHED: dict[str, tuple[float, float]] = {
    "LaplaceMechanism": (0.097, 0.098),
    "TruncatedGeometricMechanism": (0.116, 0.116),
    "NoisyHist1": (0.098, 0.098),
    "NoisyHist2": (4.602, 4.601),
    "ReportNoisyMax1": (0.092, 0.092),
    "ReportNoisyMax2": (0.098, 0.098),
    "ReportNoisyMax3": (0.248, 0.249),
    "ReportNoisyMax4": (0.346, 0.353),
    "SparseVectorTechnique1": (0.086, 0.086),
    "SparseVectorTechnique2": (0.086, 0.085),
    "SparseVectorTechnique3": (0.172, 0.182),
    "SparseVectorTechnique4": (0.169, 0.170),
    "SparseVectorTechnique5": (1.761, 1.761),
    "SparseVectorTechnique6": (0.272, 0.270),
    "Rappor": (0.293, 0.301),
    "OneTimeRappor": (0.598, 0.600),
    "LaplaceParallel": (0.035, 0.030),
    "SVT34Parallel": (0.261, 0.262),
    "PrefixSum": (0.504, 0.577),
    "NumericalSVT": (0.034, 0.035),
}


def dp_sniper_table(epsilon: float = 0.1) -> list[SniperCase]:
    """All 20 mechanisms of DP-Sniper's table, one run per call, on DP-Sniper's witness pairs.

    Case names are DP-Sniper's class names. ``epsilon`` of a case is its claim (ε = 0.1, or
    RAPPOR's own claim from f); ``true_loss`` the exact loss on the pair where known (NaN
    otherwise); ``private`` whether the mechanism is ε-DP for its claim.
    """
    e = epsilon
    down_up = ([0.0] * 5 + [1.0] * 5, [1.0] * 5 + [0.0] * 5)
    ones_vs_split = ([1.0] * 10, [2.0] * 5 + [0.0] * 5)
    ones, shifted = [1.0] * 5, [0.0, 2.0, 2.0, 2.0, 2.0]
    p, q = 0.45, 0.55
    differing = int(np.sum(bloom_filter(1) ^ bloom_filter(0)))

    def rappor_claim(f: float, hashes: int = 4) -> float:  # RAPPOR's ε∞ of the permanent response: 2h·ln((1 − f/2)/(f/2))
        return 2 * hashes * math.log((1 - f / 2) / (f / 2))

    svt_loss4 = (1 + 6 * 1) / 4 * e  # Lyu–Su–Li: Alg. 4 is ((1 + 6c)/4)ε-DP
    rows: list[tuple[str, Any, Any, Any, float, bool, float, str]] = [
        ("LaplaceMechanism", partial(laplace_once, epsilon=e), [1.0], [2.0], e, True, e, "f + Lap(1/ε)"),
        (
            "TruncatedGeometricMechanism",
            partial(truncated_geometric_once, epsilon=e),
            [2],
            [1],
            e,
            False,
            truncated_geometric_loss(epsilon=e, n=5, first=2, second=1),
            "GeoSample, n = 5",
        ),
        ("NoisyHist1", partial(noisy_histogram_once, scale=1 / e), [0, 1, 1, 1, 1], [1] * 5, e, True, e, "counts + Lap(1/ε)"),
        ("NoisyHist2", partial(noisy_histogram_once, scale=e), [0, 1, 1, 1, 1], [1] * 5, e, False, 1 / e, "counts + Lap(ε)"),
        (
            "ReportNoisyMax1",
            partial(report_noisy_max_once, epsilon=e, noise="laplace", value=False),
            ones,
            shifted,
            e,
            True,
            math.nan,
            "argmax q + Lap(2/ε)",
        ),
        (
            "ReportNoisyMax2",
            partial(report_noisy_max_once, epsilon=e, noise="exponential", value=False),
            ones,
            shifted,
            e,
            True,
            math.nan,
            "argmax q + Exp(2/ε)",
        ),
        (
            "ReportNoisyMax3",
            partial(report_noisy_max_once, epsilon=e, noise="laplace", value=True),
            [0.0] * 5,
            [1.0] * 5,
            e,
            False,
            5 * e / 2,
            "max q + Lap(2/ε): loss kε/2",
        ),
        (
            "ReportNoisyMax4",
            partial(report_noisy_max_once, epsilon=e, noise="exponential", value=True),
            ones,
            [2.0] * 5,
            e,
            False,
            math.inf,
            "max q + Exp(2/ε): the support moves",
        ),
        *[
            (
                f"SparseVectorTechnique{v}",
                partial(sparse_vector, epsilon=e, variant=v, cutoff=1, threshold=0.5 if v == 1 else 1.0),
                *pair,
                e,
                v <= 2,
                loss,
                f"Lyu–Su–Li Alg. {v}, c = 1, natural form",
            )
            for v, pair, loss in (
                (1, down_up, math.nan),
                (2, down_up, math.nan),
                (3, ones_vs_split, math.inf),
                (4, ones_vs_split, svt_loss4),
                (5, (ones_vs_split[1], ones_vs_split[0]), math.inf),
                (6, (down_up[1], down_up[0]), math.inf),
            )
        ],
        (
            "Rappor",
            partial(rappor_once, f=0.75, p=p, q=q, instantaneous=True),
            [1],
            [0],
            rappor_claim(0.75),
            True,
            rappor_loss(f=0.75, p=p, q=q, differing=differing),
            f"h = 4, 20 bits, f = 0.75, p = 0.45, q = 0.55; the pair's filters differ in {differing} bits",
        ),
        (
            "OneTimeRappor",
            partial(rappor_once, f=0.95, instantaneous=False),
            [1],
            [0],
            rappor_claim(0.95),
            True,
            rappor_loss(f=0.95, p=0.0, q=1.0, differing=differing),
            f"h = 4, 20 bits, f = 0.95; the pair's filters differ in {differing} bits",
        ),
        ("LaplaceParallel", partial(parallel_laplace_once, epsilon=e, copies=20), [1.0], [0.0], e, True, e, "20 × Lap(20/ε)"),
        (
            "SVT34Parallel",
            partial(svt34_parallel_once, epsilon=e, cutoff=2),
            *ones_vs_split,
            e,
            False,
            math.inf,
            "SVT Alg. 3 and 4 side by side, c = 2",
        ),
        ("PrefixSum", partial(prefix_sum_once, epsilon=e), [1.0] * 10, [0.0] * 10, e, False, 10 * e, "running sums of Lap(1/ε)"),
        ("NumericalSVT", partial(numerical_svt_once, epsilon=e), [2.0] * 10, [1.0] * 10, e, True, math.nan, "Wang et al., c = 2"),
    ]
    return [
        SniperCase(Case(name, mechanism, d, d_prime, claim, private, loss, note), DP_SNIPER_PUBLISHED[name], private)
        for name, mechanism, d, d_prime, claim, private, loss, note in rows
    ]
