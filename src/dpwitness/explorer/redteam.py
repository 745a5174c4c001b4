"""The red team's windows: membership inference, differencing, the floating-point leak.

The attacks are :mod:`dpwitness.attacks`, called as they are; the analytic parts (likelihood
ratio, best-test ROC, exact and noisy differencing queries) use the core mechanism directly.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.attacks.differencing import differencing_attack
from dpwitness.attacks.floating_point import floating_point_attack, naive_can_produce, numpy_laplace_noise
from dpwitness.attacks.membership import membership_attack
from dpwitness.common.encoding import json_value
from dpwitness.explorer.compute import BOUNDS, CURVE_POINTS, PEOPLE, mechanism, realised_scale
from dpwitness.privacy.neighbours import Neighbours, count_sensitivity

#: A clearly fictional clinic: patient number → diagnosed with diabetes (1) or not (0).
DIABETES: tuple[tuple[str, int], ...] = (
    ("Patient 1 (fictional)", 0),
    ("Patient 2 (fictional)", 1),
    ("Patient 3 (fictional)", 0),
    ("Patient 4 (fictional)", 1),
    ("Patient 5 (fictional)", 1),
)
#: Most samples/trials an attack may be asked for from the page (keeps a click under a few seconds).
MAX_SAMPLES = 20_000


# --- membership inference ---------------------------------------------------------------------
def _survival(x: npt.NDArray[np.float64], scale: float) -> npt.NDArray[np.float64]:
    """P(Laplace(0, scale) > x)."""
    result: npt.NDArray[np.float64] = np.where(x >= 0, 0.5 * np.exp(-np.abs(x) / scale), 1.0 - 0.5 * np.exp(-np.abs(x) / scale))
    return result


@lru_cache(maxsize=128)
def membership_analytic(sensitivity: float, epsilon: float, tamper: bool = False) -> dict[str, Any]:
    """ "Was this record in D?" for a count (in: f = 1, out: f = 0 … shifted by Δ).

    The attacker's likelihood ratio p(z | in)/p(z | out), from ``Laplace.log_density_ratio``
    at the scale the sampler really uses, never exceeds e^ε for an honest mechanism; the ROC
    of the best test (threshold on z, Neyman-Pearson) stays under TPR ≤ e^ε·FPR and
    TPR ≤ 1 − e^-ε·(1 − FPR) (Kairouz, Oh, Viswanath 2015, δ = 0).
    """
    mech = mechanism(sensitivity, epsilon, tamper)
    if mech.noise is None:
        return _membership_without_noise(epsilon)
    scale = realised_scale(mech)
    f_in, f_out = sensitivity, 0.0
    span = 6.0 * max(scale, mech.scale)
    z = np.linspace(f_out - span, f_in + span, CURVE_POINTS)
    # The ratio at the realised scale: the honest formula's log ratio, rescaled from b to the real scale.
    log_ratio = np.asarray(mech.log_density_ratio(z, f_in, f_out), dtype=np.float64) * (mech.scale / scale)
    thresholds = z[::-1]  # reject "out" when z > t; from strict to lax
    fpr = np.concatenate([[0.0], _survival(thresholds - f_out, scale), [1.0]])
    tpr = np.concatenate([[0.0], _survival(thresholds - f_in, scale), [1.0]])
    fpr_grid = np.linspace(0.0, 1.0, 101)
    bound = np.minimum(np.minimum(math.exp(epsilon) * fpr_grid, 1.0 - math.exp(-epsilon) * (1.0 - fpr_grid)), 1.0)
    return {
        "z": z.tolist(),
        "likelihood_ratio": np.exp(log_ratio).tolist(),
        "max_likelihood_ratio": float(np.exp(np.max(log_ratio))),
        "cap": math.exp(epsilon),
        "epsilon": epsilon,
        "scale": scale,
        "roc": {"fpr": fpr.tolist(), "tpr": tpr.tolist()},
        "bound": {"fpr": fpr_grid.tolist(), "tpr": bound.tolist()},
        "tpr_at_1pct": float(_survival(np.array([f_out + _threshold_at(0.01, scale) - f_in]), scale)[0]),
        "tpr_cap_at_1pct": min(1.0, math.exp(epsilon) * 0.01),
    }


def _membership_without_noise(epsilon: float) -> dict[str, Any]:
    """Δ = 0: the answer is the same with or without the record, so its release is exact and
    tells the attacker nothing: the likelihood ratio is 1 everywhere and the best test is a coin."""
    grid = np.linspace(0.0, 1.0, 101)
    bound = np.minimum(np.minimum(math.exp(epsilon) * grid, 1.0 - math.exp(-epsilon) * (1.0 - grid)), 1.0)
    return {
        "no_noise": True,
        "z": [0.0],
        "likelihood_ratio": [1.0],
        "max_likelihood_ratio": 1.0,
        "cap": math.exp(epsilon),
        "epsilon": epsilon,
        "scale": 0.0,
        "roc": {"fpr": grid.tolist(), "tpr": grid.tolist()},
        "bound": {"fpr": grid.tolist(), "tpr": bound.tolist()},
        "tpr_at_1pct": 0.01,
        "tpr_cap_at_1pct": min(1.0, math.exp(epsilon) * 0.01),
    }


def _threshold_at(fpr: float, scale: float) -> float:
    """The threshold t with P(Laplace(0, b) > t) = fpr (fpr < 1/2)."""
    return -scale * math.log(2.0 * fpr)


@lru_cache(maxsize=32)
def membership_simulation(epsilon: float, trials: int, seed: int) -> dict[str, Any]:
    """The red team's simulated attack on the spreadsheet (target: its oldest person)."""
    population = np.array([age for _, age in PEOPLE], dtype=np.float64)
    target = float(population.max())
    result = membership_attack(population, target_value=target, bounds=BOUNDS, epsilon=epsilon, trials=trials, seed=seed)
    tpr = float(result.tpr_at_fpr(0.01))
    # 95% Wilson interval of the TPR: `trials` releases with the target in (the FPR's own
    # sampling error, from as many releases without it, is not included).
    z = 1.959963984540054
    centre = (tpr + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(tpr * (1 - tpr) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    ages = ", ".join(f"{age:g}" for _, age in PEOPLE)
    call = (
        "import numpy as np\nfrom dpwitness.attacks.membership import membership_attack\n"
        f"membership_attack(np.array([{ages}]), target_value={target:g}, bounds=({BOUNDS[0]:g}, {BOUNDS[1]:g}), "
        f"epsilon={epsilon:g}, trials={trials}, seed={seed})"
    )
    return {
        "call": call,
        "available": True,
        "target_value": target,
        "sensitivity": BOUNDS[1] - BOUNDS[0],
        "trials": trials,
        "auc": float(result.auc),
        "advantage": float(result.advantage),
        "tpr_at_1pct": tpr,
        "tpr_at_1pct_interval": [max(0.0, centre - half), min(1.0, centre + half)],
        "bound": json_value(result.bound),
        "result": json_value(result.to_dict()),
    }


# --- differencing -------------------------------------------------------------------------------
#: Trials the attack library repeats the noisy query pair to measure the attacker's success rate.
DIFFERENCING_TRIALS = 20_000


@lru_cache(maxsize=128)
def differencing(epsilon: float | None, seed: int) -> dict[str, Any]:
    """Q5 − Q4 on the fictional clinic D and on D′ (patient 5's bit flipped to 0).

    Q4 counts the diagnosed among patients 1-4, Q5 among patients 1-5. Exact answers tell D
    from D′ with certainty. The noisy answers are releases of the core mechanism (count,
    add/remove: Δ = 1) at ε each, seeds ``seed`` and ``seed + 1`` (the same seeds on D and D′:
    the same noise draws, only the data differ). The attacker's estimate is the displayed
    noisy Q5 − noisy Q4 and its guess the nearer of 0 and 1, so the page never shows numbers
    that disagree; the success rate over many pairs comes from ``dpwitness.attacks.differencing``.
    """
    values = [diagnosis for _, diagnosis in DIABETES]
    flipped = [*values[:-1], 1 - values[-1]]
    payload: dict[str, Any] = {
        "patients": [{"name": n, "diagnosis": v} for n, v in DIABETES],
        "patients_d2": [{"name": n, "diagnosis": v} for (n, _), v in zip(DIABETES, flipped, strict=True)],
        "epsilon": epsilon,
        "target": len(values),
        "target_value": values[-1],
        "target_value_d2": flipped[-1],
    }
    for name, data in (("d1", values), ("d2", flipped)):
        q4, q5 = float(sum(data[:4])), float(sum(data))
        payload[name] = {"exact": {"q4": q4, "q5": q5, "difference": q5 - q4}}
        if epsilon is not None:
            mech = mechanism(count_sensitivity(Neighbours.ADD_REMOVE), epsilon)
            noisy4 = float(mech.release(q4, seed=seed).value)  # type: ignore[arg-type]
            noisy5 = float(mech.release(q5, seed=seed + 1).value)  # type: ignore[arg-type]
            estimate = noisy5 - noisy4
            guess = 1 if estimate >= 0.5 else 0
            payload[name]["noisy"] = {
                "q4": noisy4,
                "q5": noisy5,
                "difference": estimate,
                "guess": guess,
                "right": guess == data[-1],
                "scale": mech.scale,
                "seeds": [seed, seed + 1],
            }
    payload["exact"] = payload["d1"]["exact"]
    if epsilon is not None:
        payload["noisy"] = payload["d1"]["noisy"]
    result = differencing_attack(
        values, target=len(values) - 1, bounds=(0.0, 1.0), epsilon=epsilon, repeats=1, seed=seed, trials=DIFFERENCING_TRIALS
    )
    payload["call"] = (
        "from dpwitness.attacks.differencing import differencing_attack\n"
        f"differencing_attack({values}, target={len(values) - 1}, bounds=(0.0, 1.0), epsilon={epsilon!r}, repeats=1, "
        f"seed={seed}, trials={DIFFERENCING_TRIALS})"
    )
    payload["attack"] = {
        "available": True,
        "success_probability": float(result.success_probability),
        "bound": json_value(result.bound),
        "trials": int(result.trials),
        "target_loss": json_value(result.target_loss),
        "result": json_value(result.to_dict()),
    }
    return payload


# --- floating point ------------------------------------------------------------------------------
@lru_cache(maxsize=32)
def floating_point(epsilon: float, samples: int, seed: int) -> dict[str, Any]:
    """Mironov's leak: how often one output identifies the input, naive sampler vs the project's."""
    result = floating_point_attack(value=0.0, neighbour=1.0, sensitivity=1.0, epsilon=epsilon, samples=samples, seed=seed)
    data = json_value(result.to_dict())
    return {
        "call": (
            "from dpwitness.attacks.floating_point import floating_point_attack\n"
            "floating_point_attack(value=0.0, neighbour=1.0, sensitivity=1.0, "
            f"epsilon={epsilon:g}, samples={samples}, seed={seed})"
        ),
        "value": 0.0,
        "neighbour": 1.0,
        "epsilon": epsilon,
        "doubles": reachable_doubles(0.0, 1.0, 1.0 / epsilon),
        "available": True,
        "naive_rate": float(data["naive"]["identification_rate"]),
        "dpwitness_rate": float(data["dpwitness"]["identification_rate"]),
        "samples": samples,
        "result": data,
    }


#: Consecutive doubles shown in the picture of reachable outputs.
WINDOW_DOUBLES = 24


def reachable_doubles(value: float, neighbour: float, scale: float) -> dict[str, Any]:
    """Which of ``WINDOW_DOUBLES`` consecutive doubles the naive sampler ``x + numpy.laplace(0, b)`` can
    output from each input. The window starts at ``value + η(2⁵¹)`` (η = −b·ln 2, where consecutive
    η(k) are about one double apart): there many doubles are reachable from one input only, and for
    such an output the likelihood ratio, hence the privacy loss, is infinite. The project's grid
    sampler outputs multiples of its grid γ only, the same set from every input.
    """
    start = value + numpy_laplace_noise(2**51, scale)
    cells = []
    output = start
    for _ in range(WINDOW_DOUBLES):
        from_value, from_neighbour = naive_can_produce(output, value, scale), naive_can_produce(output, neighbour, scale)
        cells.append(
            {
                "output": output,
                "from_value": from_value,
                "from_neighbour": from_neighbour,
                "infinite_loss": from_value != from_neighbour,
            }
        )
        output = math.nextafter(output, math.inf)
    return {"start": start, "ulp": math.ulp(start), "cells": cells}
