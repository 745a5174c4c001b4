"""Beyond the source documents (after ViP, PETS 2022): the numbers behind the "beyond" panel.

Inverse controls (a target error or risk → the ε that meets it, checked forwards with the project's
own mechanism and risk bounds) and k-fold composition, basic (kε, kδ) against zCDP (ρ adds up, then
converted with :func:`dpwitness.privacy.accounting.zcdp_epsilon`). The frequency framing and the privacy-loss
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
from dpwitness.privacy.accounting import laplace_half_width, zcdp_epsilon, zcdp_rho

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


@lru_cache(maxsize=64)
def composition(epsilon: float, delta: float, releases: int) -> dict[str, Any]:
    """Total ε of k releases, each (ε, δ): basic composition (kε at total δ = kδ) against zCDP
    (each release ρ = the largest ρ whose zCDP implies (ε, δ); k releases kρ; the total ε at the
    same total δ = kδ from :func:`zcdp_epsilon`)."""
    check_count("releases", releases, maximum=MAX_RELEASES, expected=f"a whole number in [1, {MAX_RELEASES}]")
    rho = zcdp_rho(epsilon, delta)
    ks = list(range(1, releases + 1))
    basic = [k * epsilon for k in ks]
    zcdp = [zcdp_epsilon(k * rho, min(0.5, k * delta)) for k in ks]
    return {"epsilon": epsilon, "delta": delta, "rho": rho, "k": ks, "basic": basic, "zcdp": zcdp}
