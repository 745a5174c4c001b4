"""Beyond the source documents (after ViP, PETS 2022): the numbers behind the "beyond" panel.

Inverse controls (a target error or risk → the ε that meets it, checked forwards with the project's
own mechanism and risk bounds) and k-fold composition of Laplace releases, basic (kε, δ = 0) against
zCDP (ρ = ε²/2 each, kρ in all, converted with :func:`dpwitness.privacy.accounting.zcdp_epsilon` at
one fixed, stated δ). The frequency framing and the privacy-loss
histogram use the live panel's 2000 exact releases (``/api/live``).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_positive_finite
from dpwitness.explorer.compute import ALPHA, MAX_EPSILON, MIN_EPSILON, mechanism
from dpwitness.explorer.planner import advantage, posterior
from dpwitness.privacy.accounting import laplace_half_width, pure_dp_rho, zcdp_epsilon

#: What a target may be, and its range.
TARGETS = {"error": (1e-9, 1e12), "posterior": (0.0100001, 0.999), "advantage": (1e-6, 0.999)}
#: The prior of the posterior target (as in the planner: an attacker 1% sure).
PRIOR = 0.01
MAX_RELEASES = 100


def inverse(target: str, value: float, sensitivity: float) -> dict[str, Any]:
    """The ε meeting ``target``: ``error`` (the 95% half-width b·ln(1/α) of the Laplace release),
    ``posterior`` (the most a 1% prior can rise to) or ``advantage`` (TPR − FPR, pure ε). The ε is
    then put back through the forward formula (the mechanism's real scale, the risk bound) and the
    achieved value returned beside it; an ε outside the explorer's range is returned with
    ``within: false`` (the page says so and offers nothing to use)."""
    if target not in TARGETS:
        raise ParameterError("target", f"one of {list(TARGETS)}", target)
    low, high = TARGETS[target]
    value = check_positive_finite("value", value)
    if not low <= value <= high:
        raise ParameterError("value", f"a number in [{low:g}, {high:g}] for the target {target}", value)
    if target == "error":
        sensitivity = check_positive_finite("sensitivity", sensitivity)
        epsilon = laplace_half_width(sensitivity, ALPHA) / value  # b = Δ/ε, w = b·ln(1/α)
    elif target == "posterior":
        epsilon = math.log(value * (1 - PRIOR) / (PRIOR * (1 - value)))
    else:
        epsilon = 2 * math.atanh(value)
    epsilon = float(f"{epsilon:.6g}")
    if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        # a fair question whose answer lies outside the explorer's range: said, not refused
        return {
            "target": target,
            "value": value,
            "sensitivity": sensitivity,
            "epsilon": epsilon,
            "within": False,
            "range": [MIN_EPSILON, MAX_EPSILON],
            "achieved": None,
            "prior": PRIOR,
        }
    if target == "error":
        achieved = laplace_half_width(mechanism(float(f"{sensitivity:.6g}"), epsilon).scale, ALPHA)
    elif target == "posterior":
        achieved = posterior(PRIOR, epsilon)
    else:
        achieved = advantage(epsilon)
    return {
        "target": target,
        "value": value,
        "sensitivity": sensitivity,
        "epsilon": epsilon,
        "within": True,
        "range": [MIN_EPSILON, MAX_EPSILON],
        "achieved": achieved,
        "prior": PRIOR,
    }


#: The one δ at which the zCDP total is stated: fixed and shown, so that k = 1 and k = 50 are
#: compared at the same δ (never a δ that grows with k).
COMPARISON_DELTA = 1e-5


@lru_cache(maxsize=64)
def composition(epsilon: float, releases: int, delta: float = COMPARISON_DELTA) -> dict[str, Any]:
    """Total ε of k Laplace releases, each ε-DP (δ = 0): basic composition kε (still pure, δ = 0)
    against zCDP (each release ρ = ε²/2, :func:`pure_dp_rho`; k releases kρ; stated as ε at the one
    fixed ``delta`` by :func:`zcdp_epsilon`). Both bounds hold, so the total is the smaller one;
    ``crossover`` is the first k where zCDP's is smaller (None if it never is up to ``releases``)."""
    check_count("releases", releases, maximum=MAX_RELEASES, expected=f"a whole number in [1, {MAX_RELEASES}]")
    rho = pure_dp_rho(epsilon)
    ks = list(range(1, releases + 1))
    basic = [k * epsilon for k in ks]
    zcdp = [zcdp_epsilon(k * rho, delta) for k in ks]
    crossover = next((k for k, a, z in zip(ks, basic, zcdp, strict=True) if z < a), None)
    return {
        "epsilon": epsilon,
        "delta": delta,
        "rho": rho,
        "k": ks,
        "basic": basic,
        "zcdp": zcdp,
        "best": [min(a, z) for a, z in zip(basic, zcdp, strict=True)],
        "crossover": crossover,
    }
