"""Privacy math, in one place for every layer: ε/δ/ρ conversions, the analytic Gaussian σ and
accuracy half-widths.

Calibration (:mod:`dpwitness.noise`), the mechanisms, the budget (:mod:`dpwitness.privacy.budget`),
the planner, the reports and the explorer call these functions, so each formula has one
implementation, rounded in the safe direction: a δ or a ρ never below the true one, an ε for a
given δ never below the one needed, a σ never below the one needed, and an interval's half-width
for a stated coverage never below the true quantile. Needs only the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from statistics import NormalDist

from dpwitness.common.caching import scoped_cache
from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_alpha, check_finite, check_non_negative_finite, check_positive_finite

#: Relative error allowed for libm's erfc and for NormalDist.inv_cdf (both are ≲ 10^-15 where used).
_LIBM_SLACK = 1e-12


def _up(x: float, ulps: int = 1) -> float:
    """x raised by ``ulps`` units in the last place (towards +∞): covers that many roundings."""
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def zcdp_delta(rho: float, epsilon: float) -> float:
    """A δ, never smaller than the true one, such that ρ-zCDP implies (ε, δ)-DP.

    CKS 2020 (Corollary 13): δ = inf over α > 1 of exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α.
    Every α > 1 gives a valid bound, so α is searched in floating point (bisection on the
    derivative of the exponent) and the bound is then evaluated *at that α* in 60-digit
    decimal arithmetic and rounded up to the next float: the result is rigorous.

    :param rho: ρ ≥ 0 (finite); 0 gives δ = 0.
    :param epsilon: ε ≥ 0 (finite). The result is at most 1.
    """
    rho = check_non_negative_finite("rho", rho)
    epsilon = check_non_negative_finite("epsilon", epsilon)
    if rho == 0:
        return 0.0
    low, high = _best_alpha(rho, epsilon)
    best = min(_cks_bound(rho, epsilon, a) for a in {low, high, (low + high) / 2, 1.0 + 1e-6})
    return min(best, 1.0)


def _best_alpha(rho: float, epsilon: float) -> tuple[float, float]:
    """A float bracket of the α minimising the CKS bound (the root of its exponent's derivative)."""
    low, high = 1.0 + 1e-9, (epsilon + 1) / (2 * rho) + 2
    for _ in range(200):
        alpha = (low + high) / 2
        if alpha in (low, high):
            break
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1.0 / alpha) < 0:
            low = alpha
        else:
            high = alpha
    return low, high


def _cks_bound(rho: float, epsilon: float, alpha: float) -> float:
    """exp((α−1)(αρ−ε) + α·ln(1 − 1/α)) / (α−1) at this α, rounded up (valid for any α > 1)."""
    if not alpha > 1:
        return 1.0
    with localcontext() as context:
        context.prec = 60
        a, r, e = Decimal(alpha), Decimal(rho), Decimal(epsilon)
        exponent = (a - 1) * (a * r - e) + a * (1 - 1 / a).ln() - (a - 1).ln()
        if exponent > 0:
            return 1.0
        if exponent < -745:  # below the smallest float
            return 5e-324
        value = exponent.exp()
    return math.nextafter(float(value), math.inf)


def _approximate_delta(rho: float, epsilon: float) -> float:
    """:func:`zcdp_delta` in plain floating point (for searches; never the final answer)."""
    if rho == 0:
        return 0.0
    alpha = sum(_best_alpha(rho, epsilon)) / 2
    exponent = (alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
    return 1.0 if exponent > 0 else math.exp(exponent)


@scoped_cache(256)  # per analyst in the service, like every query-dependent cache
def zcdp_epsilon(rho: float, delta: float) -> float:
    """The smallest ε (to ≈ 1e-12 relative, rounded up) with :func:`zcdp_delta`(ρ, ε) ≤ δ.

    Searched in floating point, then confirmed with the rigorous :func:`zcdp_delta` and
    raised in tiny steps until it holds: the result is never an ε that does not hold.

    :param rho: ρ ≥ 0 (finite); 0 gives ε = 0.
    :param delta: δ; outside (0, 1) (or not finite) the result is ∞ (0 when ρ = 0).
    """
    rho = check_non_negative_finite("rho", rho)
    if not (math.isfinite(delta) and 0 < delta < 1):
        return math.inf if rho > 0 else 0.0
    if rho == 0:
        return 0.0
    low, high = 0.0, rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12  # the classic bound is valid
    while _approximate_delta(rho, high) > delta:
        high *= 2
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        if _approximate_delta(rho, middle) <= delta:
            high = middle
        else:
            low = middle
    while zcdp_delta(rho, high) > delta:
        high = high * (1 + 1e-12) + 1e-300
    return high


@scoped_cache(256)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ (to ≈ 1e-12 relative, rounded down) with :func:`zcdp_delta`(ρ, ε) ≤ δ
    (searched in floating point, then confirmed rigorously and lowered until it holds).

    :param epsilon: ε ≥ 0 (finite).
    :param delta: δ; outside (0, 1) (or not finite) the result is 0.
    """
    epsilon = check_non_negative_finite("epsilon", epsilon)
    if not (math.isfinite(delta) and 0 < delta < 1):
        return 0.0
    low, high = 0.0, epsilon * epsilon / 2 + epsilon + 1
    while _approximate_delta(high, epsilon) <= delta:
        high *= 2
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        if _approximate_delta(middle, epsilon) <= delta:
            low = middle
        else:
            high = middle
    while low > 0 and zcdp_delta(low, epsilon) > delta:
        low *= 1 - 1e-12
    return low


def pure_dp_rho(epsilon: float) -> float:
    """ρ = ε²/2, rounded up: an ε-DP release is ρ-zCDP (Bun–Steinke 2016, Prop. 1.4).

    :param epsilon: ε ≥ 0 (∞ gives ∞).
    """
    if not math.isfinite(epsilon):
        return epsilon * epsilon / 2
    return _at_least(epsilon * epsilon / 2, Fraction(epsilon) ** 2 / 2)


def gaussian_rho(sensitivity: float, sigma: float) -> float:
    """ρ = Δ²/2σ², rounded up: the zCDP of Gaussian noise of std σ for L2 shifts ≤ Δ (Bun–Steinke 2016).

    Also exact for the discrete Gaussian N_ℤ(0, σ²) and integer shifts (CKS 2020).

    :param sensitivity: Δ ≥ 0 (0 gives ρ = 0).
    :param sigma: σ > 0.
    """
    if sensitivity == 0:
        return 0.0
    return _at_least(sensitivity * sensitivity / (2.0 * sigma * sigma), Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2))


def _at_least(value: float, exact: Fraction) -> float:
    """``value`` (a float near ``exact``) raised ulp by ulp until it is not below ``exact``."""
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    return value


def gaussian_sigma_for_rho(sensitivity: float, rho: float) -> float:
    """The smallest float σ with :func:`gaussian_rho`(Δ, σ) ≤ ρ: Δ/√(2ρ), never below it.

    :param sensitivity: Δ > 0.
    :param rho: ρ > 0.
    """
    sigma = sensitivity / math.sqrt(2.0 * rho)
    while gaussian_rho(sensitivity, sigma) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """δ(ε) of Gaussian noise of std σ for an L2 shift Δ, rounded up (Balle & Wang 2018, Thm 8).

    δ = Φ(Δ/2σ − εσ/Δ) − e^ε·Φ(−Δ/2σ − εσ/Δ), the hockey-stick divergence of N(0, σ²) and
    N(Δ, σ²); the first term is raised and the second lowered by libm's relative error, so the
    result is never below the true δ.

    :param sigma: σ > 0.
    :param sensitivity: Δ ≥ 0 (0 gives δ = 0).
    :param epsilon: ε ≥ 0.
    """
    if sensitivity == 0:
        return 0.0
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    first = 0.5 * math.erfc((b - a) / math.sqrt(2.0)) * (1.0 + _LIBM_SLACK)
    second = 0.5 * math.erfc((a + b) / math.sqrt(2.0)) * (1.0 - _LIBM_SLACK)
    return min(1.0, max(0.0, first - math.exp(epsilon) * second))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The σ of the (continuous) analytic Gaussian mechanism (Balle & Wang 2018, Thm 8), never below it.

    The smallest σ (to float precision) with :func:`gaussian_delta`(σ, Δ, ε) ≤ δ, by bisection
    on σ/Δ (δ decreases in σ); the side returned is always one where the rounded-up δ fits.
    ≈ 4.2247 for ε = 1, δ = 10^-6, Δ = 1.

    :param sensitivity: Δ, the L2 sensitivity (σ scales with it).
    :param epsilon: ε > 0.
    :param delta: δ in (0, 1).
    """
    low, high = 1e-9, 1.0
    while gaussian_delta(high, 1.0, epsilon) > delta:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = math.sqrt(low * high)
        if middle in (low, high):
            break
        if gaussian_delta(middle, 1.0, epsilon) > delta:
            low = middle
        else:
            high = middle
    sigma = _up(high * sensitivity)
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:  # the product's rounding, checked
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def laplace_kl_divergence(shift: float, scale: float) -> float:
    """KL(Lap(f, b) ‖ Lap(f − d, b)) = |d|/b + e^(−|d|/b) − 1: the mean privacy loss of a Laplace release.

    Exact (no sampling); ``expm1`` keeps it accurate for small |d|/b. 0 when d = 0; the page draws
    it beside the worst case |d|/b ≤ ε.

    :param shift: d, the gap f(D) − f(D′) (its sign does not matter).
    :param scale: b > 0.
    """
    ratio = abs(check_finite("shift", shift)) / check_positive_finite("scale", scale)
    return max(0.0, ratio + math.expm1(-ratio))


def laplace_half_width(scale: float, alpha: float) -> float:
    """w with P(|X| > w) = α for X ~ Laplace(b): b·ln(1/α), rounded up (never a narrower interval).

    :param scale: b ≥ 0.
    :param alpha: α strictly between 0 and 1 (else ``ParameterError("alpha", …)``).
    """
    alpha = check_alpha(alpha)
    return 0.0 if scale == 0 else _up(scale * -math.log(alpha), 2)


def gaussian_half_width(sigma: float, alpha: float) -> float:
    """w with P(|X| > w) = α for X ~ N(0, σ²): σ·Φ⁻¹(1 − α/2), rounded up (never a narrower interval).

    Computed as −Φ⁻¹(α/2) (α/2 is exact, 1 − α/2 would round) and raised by the quantile's
    relative error.

    :param sigma: σ ≥ 0.
    :param alpha: α strictly between 0 and 1 (else ``ParameterError("alpha", …)``).
    """
    alpha = check_alpha(alpha)
    if sigma == 0:
        return 0.0
    z = -NormalDist().inv_cdf(alpha / 2.0) * (1.0 + _LIBM_SLACK)
    return _up(sigma * z)


#: The share of a Gaussian release's δ over undeclared keys given to key selection (the rest is
#: the noise's): :func:`gaussian_selection_split`.
SELECTION_DELTA_SHARE = 0.5


def gaussian_selection_split(delta: float) -> tuple[float, float]:
    """(δ_noise, δ_threshold): how a Gaussian release over undeclared keys splits its total δ.

    Gaussian thresholding is (ε, δ_noise + δ_threshold)-DP: the noise on the values of the keys
    both neighbours hold is (ε, δ_noise)-DP, and a key only one neighbour holds is released with
    probability ≤ δ_threshold (Wilkins, Kifer, Zhang, Karrer 2024, "Exact privacy analysis of the
    Gaussian sparse histogram mechanism"; OpenDP's ``make_gaussian_threshold``, whose privacy map
    is (ρ, δ_threshold) and adds δ_noise when ρ is converted). In both directions: with p_D, p_D′
    ≤ δ_threshold the chances that D's (D′'s) own keys are released, independent of the common
    keys' noise, and A the common-key outputs of an event S, P_D(S) ≤ p_D + (1 − p_D)·min(1,
    e^ε·y + δ_noise) and P_D′(S) ≥ (1 − p_D′)·y with y = P_D′(A); for e^ε·y ≤ 1 the gap to
    e^ε·P_D′(S) + δ_noise + δ_threshold is ≥ (δ_threshold − p_D)(1 − e^ε·y) ≥ 0, else P_D(S) ≤ 1 ≤ it.
    Half each, exactly (δ/2 is exact in binary): δ_noise + δ_threshold = δ with no rounding.

    :param delta: the release's total δ, strictly between 0 and 1.
    """
    if not (isinstance(delta, float | int) and 0 < delta < 1):
        raise ParameterError("delta", "a number strictly between 0 and 1", delta)
    threshold = float(delta) * SELECTION_DELTA_SHARE
    return float(delta) - threshold, threshold


def gaussian_tail_point(sigma: float, probability: float) -> float:
    """t with P(N(0, σ²) ≥ t) ≤ p: σ·Φ⁻¹(1 − p), rounded up (never a point with a larger tail).

    Computed as −Φ⁻¹(p) (p is exact, 1 − p would round), moved away from 0 by the quantile's
    relative error, then confirmed with erfc (lowered by libm's error) and raised until it holds.

    :param sigma: σ > 0.
    :param probability: p strictly between 0 and 1.
    """
    sigma = check_positive_finite("sigma", sigma)
    if not (isinstance(probability, float | int) and 0 < probability < 1):
        raise ParameterError("probability", "a number strictly between 0 and 1", probability)
    z = -NormalDist().inv_cdf(probability)
    z *= (1.0 + _LIBM_SLACK) if z > 0 else (1.0 - _LIBM_SLACK)
    point = _up(sigma * z)
    while 0.5 * math.erfc(point / (sigma * math.sqrt(2.0))) * (1.0 + _LIBM_SLACK) > probability:
        point = _up(point + sigma * 1e-12)
    return point


def gaussian_tail(sigma: float, point: float) -> float:
    """P(N(0, σ²) ≥ t), rounded up: erfc(t/σ√2)/2 raised by libm's relative error.

    :param sigma: σ > 0.
    :param point: t (any finite number).
    """
    sigma = check_positive_finite("sigma", sigma)
    return min(1.0, 0.5 * math.erfc(check_finite("point", point) / (sigma * math.sqrt(2.0))) * (1.0 + _LIBM_SLACK))


def gaussian_threshold(
    *, sigma: float, step: float, tv: float, max_keys: int, max_count: float, delta: float
) -> tuple[float, float]:
    """Threshold τ on Gaussian-noised counts (σ ``sigma``) so that undeclared keys cost ``delta``.

    Gaussian thresholding (Wilkins, Kifer, Zhang, Karrer 2024, "Exact privacy analysis of the
    Gaussian sparse histogram mechanism"; OpenDP's ``make_gaussian_threshold``, after Rogers 2023,
    Thm 7): a key is released only if its noisy count is ≥ τ. Keys both neighbours hold get the
    Gaussian's (ε, δ_noise) or ρ as usual; the risk is a key only the added unit creates. It
    holds c ≤ Δ∞ = ``max_count`` of the unit's rows, and one unit creates at most L0 =
    ``max_keys`` such keys. With the noise really sampled, X = γ·Y, Y ~ N_ℤ(0, s²) on the grid γ
    (``step``) and within total variation η (``tv``) of it, the released value (round(c/γ) + Y)·γ
    is ≥ τ only if γ·Y ≥ τ − c − γ (rounding to the grid and to a double moves it < γ), and
    P(N_ℤ(0, s²) ≥ m) ≤ P(N(0, s²) ≥ m − 1) (Canonne, Kamath, Steinke 2020, Prop. 25) costs one
    more step. By the union bound over the ≤ L0 keys,

        δ_threshold ≤ L0 · (P(N(0, σ²) ≥ τ − Δ∞ − 2γ) + η),

    so τ = Δ∞ + 2γ + σ·Φ⁻¹(1 − (δ/L0 − η)), rounded up. OpenDP states 1 − (1 − p)^L0, which L0·p
    bounds above (slightly more conservative); the grid's and the tables' terms are added here.
    Returns (τ, the δ bound at that τ, never above ``delta``).

    :param sigma: σ > 0 of the noise on each count.
    :param step: γ ≥ 0, the noise's grid step (0 for continuous noise).
    :param tv: η ≥ 0, the sampled noise's total-variation distance from N_ℤ(0, s²) per coordinate.
    :param max_keys: L0 ≥ 1, the most keys one unit can create.
    :param max_count: Δ∞ > 0, the most one unit adds to one key's count.
    :param delta: δ_threshold, strictly between 0 and 1.
    """
    if not (isinstance(delta, float | int) and 0 < delta < 1):
        raise ParameterError("delta", "a number strictly between 0 and 1", delta)
    per_key = delta / max_keys - tv
    if not per_key > 0:
        raise ParameterError("delta", f"above {max_keys}·η = {max_keys * tv:.3g} (the Gaussian tables' distance per key)", delta)
    margin = check_positive_finite("max_count", max_count) + 2.0 * check_non_negative_finite("step", step)
    tau = margin + gaussian_tail_point(sigma, per_key)
    return tau, min(float(delta), max_keys * (gaussian_tail(sigma, tau - margin) + tv))


def randomized_response_epsilon(truth: float) -> float:
    """ε of randomized response that tells the truth with probability p and otherwise answers a fair
    coin: P(yes | yes)/P(yes | no) = (1 + p)/(1 − p), so ε = ln((1 + p)/(1 − p)) = 2·atanh(p), rounded up.

    :param truth: p in [0, 1) (p = 1 answers truthfully always: no privacy, ε = ∞, refused).
    """
    truth = check_non_negative_finite("truth", truth)
    if truth >= 1.0:
        raise ParameterError("truth", "a probability in [0, 1)", truth)
    return 0.0 if truth == 0.0 else _up(2.0 * math.atanh(truth), 2)


def randomized_response_truth(epsilon: float) -> float:
    """The largest p with randomized_response_epsilon(p) ≤ ε: tanh(ε/2) = (e^ε − 1)/(e^ε + 1), rounded down.

    :param epsilon: ε > 0.
    """
    epsilon = check_positive_finite("epsilon", epsilon)
    return max(0.0, math.nextafter(math.nextafter(math.tanh(epsilon / 2.0), 0.0), 0.0))


def randomized_response_count_std(people: int, epsilon: float) -> float:
    """Standard deviation of the unbiased count estimate (Y − n(1 − p)/2)/p from n randomized-response
    answers at ε (p = tanh(ε/2)): each answer has variance (1 − p²)/4, so the std is √(n(1 − p²))/(2p),
    rounded up.

    :param people: n ≥ 1, the number of people answering.
    :param epsilon: ε > 0.
    """
    truth = randomized_response_truth(epsilon)
    return _up(math.sqrt(people * (1.0 - truth * truth)) / (2.0 * truth), 4)


def exponential_mechanism_probabilities(scores: Sequence[float], epsilon: float, sensitivity: float) -> list[float]:
    """The exponential mechanism's choice probabilities (McSherry and Talwar, 2007):
    P(i) = exp(ε·u_i/(2Δ)) / Σ_j exp(ε·u_j/(2Δ)) for the scores u, each moving by at most Δ between
    neighbours. Report-noisy-max with Gumbel noise of scale 2Δ/ε added to every score picks index i
    with exactly these probabilities. Computed from the largest score down (no overflow); exact up
    to float rounding, not a bound, so nothing is rounded in a direction.

    :param scores: the candidates' scores u_i, finite (at least one).
    :param epsilon: ε > 0.
    :param sensitivity: Δ > 0, the most one unit moves any score.
    """
    epsilon = check_positive_finite("epsilon", epsilon)
    sensitivity = check_positive_finite("sensitivity", sensitivity)
    values = [check_finite("score", u) for u in scores]
    if not values:
        raise ParameterError("scores", "at least one score", scores)
    top = max(values)
    weights = [math.exp(epsilon * (u - top) / (2.0 * sensitivity)) for u in values]
    total = math.fsum(weights)
    return [w / total for w in weights]
