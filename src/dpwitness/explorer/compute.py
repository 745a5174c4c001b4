"""The numbers behind every picture of the explorer, computed by the project's own code.

Pure functions returning JSON-ready dicts; no web framework here. Parameters are validated
with :mod:`dpwitness.common.errors` (a bad one raises :class:`~dpwitness.ParameterError` naming it)
and rounded to 6 significant digits so that slider moves hit the caches: building a
mechanism (~30-70 ms, table construction) and its witness (~10 ms) happen once per (Δ, ε).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.attacks.tamper import inverted_laplace
from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_finite, check_non_negative_finite, check_positive_finite
from dpwitness.mechanisms.additive import Laplace
from dpwitness.privacy.accounting import analytic_gaussian_sigma, gaussian_delta, laplace_half_width, laplace_kl_divergence
from dpwitness.privacy.budget import Accountant
from dpwitness.privacy.neighbours import (
    Neighbours,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity_public_n,
    sum_sensitivity,
)
from dpwitness.witness import witness

#: The explorer's parameter ranges (wide enough to show the edge cases, bounded so every
#: number stays finite in JSON: e^ε overflows a double beyond ε ≈ 709).
MAX_EPSILON = 100.0
#: The page's smallest ε (the library accepts any ε > 0): below it the noise dwarfs every plot.
MIN_EPSILON = 0.01
MAX_SENSITIVITY = 1e6
MAX_VALUE = 1e9
MAX_SEED = 2**63 - 1
MAX_RELEASES = 1000
ALPHA = 0.05
#: Points per plotted curve.
CURVE_POINTS = 241

Curve = list[float]


def limits() -> dict[str, Any]:
    """The ranges every control of the page enforces: the same numbers the checks below refuse outside.

    The page reads them from the HTML (``app.page_html`` embeds them), so a slider, its number box
    and the server can never disagree about what is allowed.
    """
    from dpwitness.noise import GAUSS_EPSILON_RANGE

    return {
        "epsilon": [MIN_EPSILON, MAX_EPSILON],
        "sensitivity": [0.0, MAX_SENSITIVITY],
        "value": [-MAX_VALUE, MAX_VALUE],
        "releases": [1, MAX_RELEASES],
        "gauss_epsilon": [GAUSS_EPSILON_RANGE[0], GAUSS_EPSILON_RANGE[1]],
    }


# --- parameters -------------------------------------------------------------------------------
def rounded(value: float) -> float:
    """6 significant digits: the cache key and the value actually used."""
    return float(f"{value:.6g}")


def epsilon_param(value: Any) -> float:
    epsilon = check_positive_finite("epsilon", value)
    if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        raise ParameterError("epsilon", f"a number in [{MIN_EPSILON:g}, {MAX_EPSILON:g}] in the explorer", value)
    return rounded(epsilon)


def sensitivity_param(value: Any) -> float:
    sensitivity = check_non_negative_finite("sensitivity", value)
    if sensitivity > MAX_SENSITIVITY:
        raise ParameterError("sensitivity", f"a number in [0, {MAX_SENSITIVITY:g}] in the explorer", value)
    return rounded(sensitivity)


def value_param(value: Any, name: str = "value") -> float:
    number = check_finite(name, value)
    if abs(number) > MAX_VALUE:
        raise ParameterError(name, f"a number with |{name}| ≤ {MAX_VALUE:g} in the explorer", value)
    return rounded(number)


def shift_param(value: Any, sensitivity: float) -> float:
    """d: the gap f(D) − f(D′) for the neighbour shown, |d| ≤ Δ (negative d is allowed)."""
    shift = rounded(check_finite("d", value))
    if abs(shift) > sensitivity:
        raise ParameterError("d", f"a number with |d| ≤ Δ = {sensitivity:g} (one record moves f by at most Δ)", value)
    return shift


def seed_param(value: Any) -> int:
    return check_count("seed", value, minimum=0, maximum=MAX_SEED, expected=f"a whole number in [0, {MAX_SEED}]")


def count_param(value: Any, name: str, low: int, high: int) -> int:
    return check_count(name, value, minimum=low, maximum=high, expected=f"a whole number in [{low}, {high}]")


# --- the mechanism and its witness, cached per rounded (Δ, ε, tamper) -------------------------
def mechanism(sensitivity: float, epsilon: float, tamper: bool = False) -> Laplace:
    """The honest mechanism, or the red team's inverted one (scale ε/Δ while claiming ε); cached."""
    return _mechanism(sensitivity, epsilon, tamper)  # one cache key whatever the call's form


@lru_cache(maxsize=256)
def _mechanism(sensitivity: float, epsilon: float, tamper: bool) -> Laplace:
    if not tamper:
        return Laplace(sensitivity=sensitivity, epsilon=epsilon)
    if sensitivity == 0:
        raise ParameterError("tamper", "off when Δ = 0 (there is no noise to tamper with)", True)
    return inverted_laplace(sensitivity=sensitivity, epsilon=epsilon)


def witness_payload(sensitivity: float, epsilon: float, tamper: bool = False) -> dict[str, Any]:
    """The blue team's badge: the analytic witness for the current setting; cached."""
    return _witness_payload(sensitivity, epsilon, tamper)


@lru_cache(maxsize=256)
def _witness_payload(sensitivity: float, epsilon: float, tamper: bool) -> dict[str, Any]:
    mech = mechanism(sensitivity, epsilon, tamper)
    report = witness(mech)
    return {
        **report.to_dict(),
        "tamper": tamper,
        "realised_scale": realised_scale(mech),
        "claimed_scale": mech.scale,
        "scale_as_claimed": scale_as_claimed(mech),
    }


#: Relative gap between the realised and the claimed scale that is only the grid's rounding: the
#: sampler's m is an integer and its budget is lowered in steps of 2^-26·ε (noise.laplace), so an
#: honest realised scale is up to ~7e-8 above b = Δ/ε (measured over ε in [0.01, 100]); 2^-22 ≈ 2.4e-7.
SCALE_TOLERANCE = 2.0**-22


def scale_as_claimed(mech: Laplace) -> bool:
    """Does the sampler draw with the claimed scale b = Δ/ε, up to the grid's rounding (SCALE_TOLERANCE)?"""
    return abs(realised_scale(mech) - mech.scale) <= SCALE_TOLERANCE * mech.scale


def realised_scale(mech: Laplace) -> float:
    """The Laplace scale the sampler really draws with (its tables' m·γ/ln 2); 0 without noise."""
    return 0.0 if mech.noise is None else mech.noise.scale


@lru_cache(maxsize=1024)
def release_payload(value: float, sensitivity: float, epsilon: float, seed: int, tamper: bool = False) -> dict[str, Any]:
    """The fixed-seed release (reproducible, hence marked not for production)."""
    mech = mechanism(sensitivity, epsilon, tamper)
    result = mech.release(value, seed=seed, query="f(D)")
    return result.to_dict()


def summary(sensitivity: float, epsilon: float) -> dict[str, Any]:
    """b, 2b², std and the 95% half-width b·ln(1/α) of the honest mechanism."""
    mech = mechanism(sensitivity, epsilon)
    return {
        "scale": mech.scale,
        "variance": mech.variance,
        "std": mech.std,
        "alpha": ALPHA,
        "half_width": mech.interval(ALPHA),
        "exp_epsilon": math.exp(epsilon),
        "guarantee": mech.guarantee,
    }


# --- curves -------------------------------------------------------------------------------------
def _grid(centre_low: float, centre_high: float, scale: float) -> npt.NDArray[np.float64]:
    span = 6.0 * scale if scale > 0 else 1.0
    return np.linspace(centre_low - span, centre_high + span, CURVE_POINTS)


def _laplace_density(z: npt.NDArray[np.float64], centre: float, scale: float) -> npt.NDArray[np.float64]:
    result: npt.NDArray[np.float64] = np.exp(-np.abs(z - centre) / scale) / (2.0 * scale)
    return result


def _sampled_log_ratio(mech: Laplace, z: npt.NDArray[np.float64], f1: float, f2: float) -> npt.NDArray[np.float64]:
    """log P(z | f1) − log P(z | f2) read from the sampler's exact integer tables."""
    noise = mech.noise
    assert noise is not None
    gamma = noise.granularity
    x1 = np.rint((z - f1) / gamma).astype(np.int64)
    x2 = np.rint((z - f2) / gamma).astype(np.int64)
    return noise.log_weight(x1) - noise.log_weight(x2)


@lru_cache(maxsize=512)
def curves(sensitivity: float, epsilon: float, value: float, shift: float, tamper: bool = False) -> dict[str, Any]:
    """Densities of the outputs for f(D) = value and f(D′) = value − d, and their log ratio.

    The densities use the scale the sampler really draws with; the log ratio is read from
    the sampler's tables, so a tampered mechanism shows its true curve crossing ±ε.
    """
    mech = mechanism(sensitivity, epsilon, tamper)
    f1, f2 = value, value - shift
    if mech.noise is None:
        return {"z": [], "f1": f1, "f2": f2, "density_1": [], "density_2": [], "log_ratio": [], "ratio": [], "no_noise": True}
    real = realised_scale(mech)
    z = _grid(min(f1, f2), max(f1, f2), max(real, mech.scale))
    log_ratio = _sampled_log_ratio(mech, z, f1, f2)
    return {
        "z": z.tolist(),
        "f1": f1,
        "f2": f2,
        "density_1": _laplace_density(z, f1, real).tolist(),
        "density_2": _laplace_density(z, f2, real).tolist(),
        "log_ratio": log_ratio.tolist(),
        "ratio": np.exp(log_ratio).tolist(),
        "max_abs_log_ratio": float(np.max(np.abs(log_ratio))),
        "no_noise": False,
    }


def composition(sensitivity: float, epsilon: float, releases: int, tamper: bool = False) -> dict[str, Any]:
    """k releases under basic composition: the accountant's kε, and the real k·(worst loss)."""
    mech = mechanism(sensitivity, epsilon, tamper)
    accountant = Accountant()
    claimed_each = mech.epsilon if mech.noise is not None else 0.0
    for i in range(releases):
        accountant.spend(claimed_each, f"release {i + 1}")
    real_each = witness_payload(sensitivity, epsilon, tamper)["worst_log_ratio"]
    return {
        "releases": releases,
        "claimed_total": accountant.spent.epsilon,
        "real_total": releases * real_each,
        "each": claimed_each,
    }


#: Releases drawn for the live panel's histogram (exact sampler, seeded).
HISTOGRAM_RELEASES = 2000


@lru_cache(maxsize=256)
def many_releases(value: float, sensitivity: float, epsilon: float, seed: int, tamper: bool = False) -> list[float]:
    """``HISTOGRAM_RELEASES`` independent releases of ``value`` from the exact sampler (seeded)."""
    mech = mechanism(sensitivity, epsilon, tamper)
    values = mech.release(value, size=HISTOGRAM_RELEASES, seed=seed + 1_000_003 if seed < MAX_SEED - 1_000_003 else seed).value
    return [float(v) for v in np.asarray(values, dtype=np.float64)]


def claimed_and_real(sensitivity: float, epsilon: float, shift: float, tamper: bool) -> dict[str, Any]:
    """The claimed calibration (b = Δ/ε) beside what the sampler really uses (equal unless tampered).

    Claimed loss for this d: |d|/b. Real loss: read from the sampler's integer tables
    (``Laplace.privacy_loss``), so a tampered sampler shows what it really spends.
    """
    mech = mechanism(sensitivity, epsilon, tamper)
    real = realised_scale(mech)
    claimed_loss = 0.0 if mech.scale == 0 else abs(shift) / mech.scale
    return {
        "claimed": {
            "scale": mech.scale,
            "half_width": laplace_half_width(mech.scale, ALPHA),
            "loss_d": claimed_loss,
            "epsilon": epsilon,
        },
        "real": {
            "scale": real,
            "half_width": laplace_half_width(real, ALPHA),
            "loss_d": mech.privacy_loss(abs(shift)),
            "worst_log_ratio": witness_payload(sensitivity, epsilon, tamper)["worst_log_ratio"],
        },
    }


@lru_cache(maxsize=1024)
def gaussian_panel(sensitivity: float, epsilon: float, shift: float, delta: float) -> dict[str, Any] | None:
    """The live Gaussian panel's numbers (None without noise): the analytic Gaussian's σ for (ε, δ)
    and its δ(ε) for the drawn shift d, both from :mod:`dpwitness.privacy.accounting`, so the page
    draws the privacy math of the library instead of a copy of it."""
    if sensitivity == 0:
        return None
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    return {
        "epsilon": epsilon,
        "delta": delta,
        "sigma": sigma,
        "d": shift,
        "delta_at_shift": gaussian_delta(sigma, abs(shift), epsilon),
    }


def live(
    *,
    epsilon: float,
    sensitivity: float,
    value: float,
    shift: float,
    seed: int,
    tamper: bool,
    releases: int,
    gauss_delta: float = 0.01,
) -> dict[str, Any]:
    """Everything the live panel and the badge draw, in one answer (one request per control change).

    ``gauss_delta`` is the δ of the Gaussian panel (the analytic Gaussian drawn beside the Laplace)."""
    mech = mechanism(sensitivity, epsilon, tamper)
    released = release_payload(value, sensitivity, epsilon, seed, tamper)
    return {
        "params": {"epsilon": epsilon, "sensitivity": sensitivity, "value": value, "d": shift, "seed": seed, "tamper": tamper},
        **summary(sensitivity, epsilon),
        "privacy_loss_d": mech.privacy_loss(abs(shift)),
        # the mean loss over releases (exact, at the scale really sampled): KL = |d|/b + e^(−|d|/b) − 1
        "kl_divergence": 0.0 if mech.noise is None else laplace_kl_divergence(shift, realised_scale(mech)),
        **claimed_and_real(sensitivity, epsilon, shift, tamper),
        "release": released,
        "many_releases": many_releases(value, sensitivity, epsilon, seed, tamper),
        "curves": curves(sensitivity, epsilon, value, shift, tamper),
        "composition": composition(sensitivity, epsilon, releases, tamper),
        "witness": witness_payload(sensitivity, epsilon, tamper),
        "gaussian": gaussian_panel(sensitivity, epsilon, shift, gauss_delta),
    }


# --- walkthrough --------------------------------------------------------------------------------
#: A small, fictional spreadsheet for the first steps (ages clamped to BOUNDS).
PEOPLE: tuple[tuple[str, float], ...] = (
    ("Ana", 34.0),
    ("Ben", 71.0),
    ("Chen", 25.0),
    ("Dara", 58.0),
    ("Eli", 46.0),
    ("Fay", 19.0),
)
BOUNDS = (0.0, 100.0)
QUERIES = ("count", "sum")


def _query(name: str, ages: list[float]) -> float:
    return float(len(ages)) if name == "count" else float(sum(ages))


def _query_sensitivity(name: str, relation: Neighbours) -> float:
    return count_sensitivity(relation) if name == "count" else sum_sensitivity(relation, *BOUNDS)


def neighbour(query: str, relation: str, row: int, replacement: float) -> dict[str, Any]:
    """f(D) and f(D′) for one neighbour of the spreadsheet, and the fan of one-person changes.

    Add/remove: D′ drops row ``row``; replace-one: row ``row`` takes the age ``replacement``.
    The fan lists each possible single change (any age in BOUNDS may be added or swapped in);
    the longest arrow is Δ, which :mod:`dpwitness.privacy.neighbours` derives for the query.
    """
    if query not in QUERIES:
        raise ParameterError("query", f"one of {list(QUERIES)}", query)
    rel = Neighbours.parse(relation)
    row = count_param(row, "row", 0, len(PEOPLE) - 1)
    low, high = BOUNDS
    swap_in = check_finite("replacement", replacement)
    if not low <= swap_in <= high:
        raise ParameterError("replacement", f"an age in [{low:g}, {high:g}]", replacement)
    ages = [age for _, age in PEOPLE]
    if rel is Neighbours.ADD_REMOVE:
        other = ages[:row] + ages[row + 1 :]
    else:
        other = [*ages[:row], swap_in, *ages[row + 1 :]]
    f1, f2 = _query(query, ages), _query(query, other)
    fan: list[dict[str, Any]] = []
    for i, (name, _age) in enumerate(PEOPLE):
        without = ages[:i] + ages[i + 1 :]
        if rel is Neighbours.ADD_REMOVE:
            fan.append({"change": "remove", "person": name, "delta": _query(query, without) - f1})
        else:
            for new in BOUNDS:
                fan.append({"change": "replace", "person": name, "age": new, "delta": _query(query, [*without, new]) - f1})
    if rel is Neighbours.ADD_REMOVE:
        for new in BOUNDS:
            fan.append({"change": "add", "person": None, "age": new, "delta": _query(query, [*ages, new]) - f1})
    sensitivity = _query_sensitivity(query, rel)
    longest = max(abs(arrow["delta"]) for arrow in fan)
    return {
        "people": [{"name": n, "age": a} for n, a in PEOPLE],
        "bounds": list(BOUNDS),
        "query": query,
        "relation": rel.value,
        "relation_description": rel.description,
        "row": row,
        "neighbour_ages": other,
        "f_d1": f1,
        "f_d2": f2,
        "gap": f1 - f2,
        "fan": fan,
        "longest_arrow": longest,
        "sensitivity": sensitivity,
    }


def tails(sensitivity: float, epsilon: float, shift: float | None = None) -> dict[str, Any]:
    """Log densities of Laplace and of a Gaussian with the same variance, for f(D′) = 0 and f(D) = d
    (d = Δ unless given), and their log ratios.

    Laplace: log p is a tent, the log ratio stays within ±ε·|d|/Δ (reached in the tails). Gaussian:
    log p is a parabola, the log ratio (2zd − d²)/(2σ²) is a line, unbounded in the tails.
    """
    if sensitivity == 0:
        raise ParameterError("sensitivity", "> 0 here (with Δ = 0 there is no noise to draw)", sensitivity)
    d = sensitivity if shift is None else shift
    mech = mechanism(sensitivity, epsilon)
    b = mech.scale
    sigma = mech.std
    z = np.linspace(min(0.0, d) - 10.0 * b, max(0.0, d) + 10.0 * b, CURVE_POINTS)
    laplace = [(-np.abs(z - f) / b - math.log(2.0 * b)) for f in (0.0, d)]
    gauss = [(-((z - f) ** 2) / (2.0 * sigma**2) - math.log(sigma * math.sqrt(2.0 * math.pi))) for f in (0.0, d)]
    laplace_ratio = mech.log_density_ratio(z, d, 0.0)
    return {
        "z": z.tolist(),
        "f1": d,
        "f2": 0.0,
        "d": d,
        # the Laplace log ratio's far-tail value |d|/b = ε·|d|/Δ (the claimed calibration's loss for d)
        "tail_log_ratio": abs(d) / b,
        "scale": b,
        "sigma": sigma,
        "epsilon": epsilon,
        "laplace_log_density_1": laplace[1].tolist(),
        "laplace_log_density_2": laplace[0].tolist(),
        "gauss_log_density_1": gauss[1].tolist(),
        "gauss_log_density_2": gauss[0].tolist(),
        "laplace_log_ratio": np.asarray(laplace_ratio).tolist(),
        "gauss_log_ratio": (gauss[1] - gauss[0]).tolist(),
    }


def derivation(sensitivity: float, epsilon: float, value: float, shift: float, z: float) -> dict[str, Any]:
    """The reverse-triangle-inequality proof with live numbers at one output z."""
    mech = mechanism(sensitivity, epsilon)
    f1, f2 = value, value - shift
    if mech.scale == 0:
        raise ParameterError("sensitivity", "> 0 here (the proof divides by b = Δ/ε)", sensitivity)
    to_f1, to_f2 = abs(z - f1), abs(z - f2)
    log_ratio = float(mech.log_density_ratio(z, f1, f2))
    return {
        "z": z,
        "f1": f1,
        "f2": f2,
        "scale": mech.scale,
        "distance_1": to_f1,
        "distance_2": to_f2,
        "distance_gap": to_f2 - to_f1,
        "shift": abs(f1 - f2),
        "sensitivity": sensitivity,
        "log_ratio": log_ratio,
        "bound": abs(f1 - f2) / mech.scale,
        "epsilon": epsilon,
        "ratio": math.exp(log_ratio),
        "exp_epsilon": math.exp(epsilon),
        "holds": log_ratio <= epsilon * (1 + 1e-12),
    }


@lru_cache(maxsize=32)
def edge_cases(sensitivity: float, epsilon: float) -> dict[str, Any]:
    """The edge cases, each a number computed from a mechanism."""
    if sensitivity == 0:
        raise ParameterError("sensitivity", "> 0 here (the edge cases compare shifts against Δ)", sensitivity)
    mech = mechanism(sensitivity, epsilon)
    far = 1e6 * max(1.0, sensitivity)
    small, large = mechanism(sensitivity, MIN_EPSILON), mechanism(sensitivity, MAX_EPSILON)
    zero = mechanism(0.0, epsilon)
    gaussian_far = (2.0 * far * sensitivity - sensitivity**2) / (2.0 * mech.variance)
    return {
        "sensitivity": sensitivity,
        "epsilon": epsilon,
        "d_zero_loss": mech.privacy_loss(0.0),
        "negative": {
            "z": -3.0 * mech.scale,
            "forward": float(mech.log_density_ratio(-3.0 * mech.scale, 0.0, sensitivity)),
            "backward": float(mech.log_density_ratio(-3.0 * mech.scale, sensitivity, 0.0)),
            "loss": mech.privacy_loss(abs(-sensitivity)),
        },
        "far_tail": {
            "z": far,
            "laplace_log_ratio": float(mech.log_density_ratio(far, sensitivity, 0.0)),
            "gauss_log_ratio": gaussian_far,
        },
        "small_epsilon": {"epsilon": small.epsilon, "scale": small.scale, "half_width": small.interval(ALPHA)},
        "large_epsilon": {"epsilon": large.epsilon, "scale": large.scale, "half_width": large.interval(ALPHA)},
        "zero_sensitivity": {"loss": zero.privacy_loss(0.0), "guarantee": zero.guarantee},
        "relations": relations_table(),
    }


def relations_table() -> list[dict[str, Any]]:
    """Δ per query under add/remove and replace-one (ages in BOUNDS), from :mod:`dpwitness.privacy.neighbours`."""
    add, rep = Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE
    return [
        {"query": "count", "add_remove": count_sensitivity(add), "replace_one": count_sensitivity(rep)},
        {"query": "sum", "add_remove": sum_sensitivity(add, *BOUNDS), "replace_one": sum_sensitivity(rep, *BOUNDS)},
        {"query": "histogram", "add_remove": histogram_sensitivity(add), "replace_one": histogram_sensitivity(rep)},
    ]


@lru_cache(maxsize=8)
def worked_example(epsilon: float = 1.0) -> dict[str, Any]:
    """Mean of n = 1000 ages in [0, 100] (n public, replace-one), and the two traps."""
    n, (low, high) = 1000, BOUNDS
    delta = mean_sensitivity_public_n(low, high, n)
    mech = mechanism(rounded(delta), epsilon)
    wrong = mechanism(high - low, epsilon)
    add = Neighbours.ADD_REMOVE
    half = epsilon / 2
    noisy_sum, noisy_count = (
        mechanism(sum_sensitivity(add, low, high), rounded(half)),
        mechanism(count_sensitivity(add), rounded(half)),
    )
    return {
        "n": n,
        "bounds": [low, high],
        "epsilon": epsilon,
        "sensitivity": mech.sensitivity,
        "scale": mech.scale,
        "std": mech.std,
        "half_width": mech.interval(ALPHA),
        "witness_ok": witness_payload(mech.sensitivity, epsilon)["ok"],
        "trap_no_division": {
            "sensitivity": wrong.sensitivity,
            "scale": wrong.scale,
            "std": wrong.std,
            "factor": wrong.scale / mech.scale,
        },
        "trap_private_n": {
            "epsilon_each": half,
            "sum_sensitivity": noisy_sum.sensitivity,
            "sum_scale": noisy_sum.scale,
            "count_sensitivity": noisy_count.sensitivity,
            "count_scale": noisy_count.scale,
        },
    }


@lru_cache(maxsize=8)
def myths(epsilon: float = 1.0) -> dict[str, Any]:
    """Numbers for the myths: e^ε is a likelihood factor, not a percentage; uncalibrated noise."""
    sum_delta = sum_sensitivity(Neighbours.ADD_REMOVE, *BOUNDS)
    unit_noise = mechanism(sum_delta, sum_delta)  # scale b = 1 on a sum of ages whose Δ is 100
    return {
        "epsilon": epsilon,
        "factors": [{"epsilon": e, "factor": math.exp(e)} for e in (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)],
        "uncalibrated": {"sensitivity": sum_delta, "scale": unit_noise.scale, "real_epsilon": unit_noise.privacy_loss(sum_delta)},
    }


#: Age groups of the spreadsheet for the vector (histogram) example; each person is in one.
AGE_GROUPS: tuple[tuple[str, float, float], ...] = (
    ("< 20", 0.0, 20.0),
    ("20–39", 20.0, 40.0),
    ("40–59", 40.0, 60.0),
    ("≥ 60", 60.0, 101.0),
)


@lru_cache(maxsize=64)
def vector(relation: str, epsilon: float, seed: int) -> dict[str, Any]:
    """A vector query: the spreadsheet's counts per age group, one Laplace draw per coordinate.

    L1 Δ of a histogram from :mod:`dpwitness.privacy.neighbours` (1 under add/remove, 2 under replace-one:
    one person leaves one group and joins another); each coordinate gets noise of scale Δ/ε, so
    the whole vector is ε-DP (the log ratios of the coordinates add up to at most ε·‖d‖₁/Δ).
    """
    rel = Neighbours.parse(relation)
    counts = [float(sum(1 for _, age in PEOPLE if low <= age < high)) for _, low, high in AGE_GROUPS]
    sensitivity = histogram_sensitivity(rel)
    mech = Laplace(
        sensitivity=sensitivity, epsilon=epsilon, dimension=len(counts), changed_coordinates=2 if sensitivity == 2 else 1
    )
    released = mech.release(np.array(counts), seed=seed)
    # The walkthrough's second trap: replace-one neighbours calibrated with the add/remove Δ (half
    # the noise). One person moving between two groups changes the vector by 2 in L1, so the
    # mechanism's real worst privacy loss is privacy_loss(2) = 2ε: the claim is broken.
    wrong = histogram_sensitivity(Neighbours.ADD_REMOVE)
    true = histogram_sensitivity(Neighbours.REPLACE_ONE)
    trapped = Laplace(sensitivity=wrong, epsilon=epsilon)
    trap_loss = trapped.privacy_loss(true)
    return {
        "trap": {
            "relation": Neighbours.REPLACE_ONE.value,
            "calibrated_sensitivity": wrong,
            "true_sensitivity": true,
            "scale": trapped.scale,
            "correct_scale": true / epsilon,
            "worst_loss": trap_loss,
            "holds": bool(trap_loss <= epsilon * (1 + 1e-12)),
        },
        "relation": rel.value,
        "groups": [name for name, _, _ in AGE_GROUPS],
        "counts": counts,
        "sensitivity": sensitivity,
        "epsilon": epsilon,
        "scale": mech.scale,
        "noisy": np.asarray(released.value, dtype=np.float64).tolist(),
        "younger_than_20": counts[0],
        "draws": len(counts),
    }


@lru_cache(maxsize=64)
def gaussian_payload(sensitivity: float, epsilon: float, delta: float) -> dict[str, Any]:
    """The project's exact discrete Gaussian for (ε, δ) and its witness; cached (building it takes seconds).

    σ is that of the noise really sampled (the analytic Gaussian's σ, raised until the sampled
    distribution's δ(ε), grid rounding included, is ≤ δ); ``delta_sampled`` is that δ(ε).
    """
    from dpwitness.mechanisms.additive import Gaussian

    mech = Gaussian(sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    report = witness(mech)
    return {
        "call": (
            "from dpwitness import Gaussian, witness\n"
            f"mechanism = Gaussian(sensitivity={sensitivity:g}, epsilon={epsilon:g}, delta={delta:g})\n"
            "mechanism.sigma, mechanism.privacy_profile(mechanism.epsilon), witness(mechanism)"
        ),
        "sensitivity": sensitivity,
        "epsilon": epsilon,
        "delta": delta,
        "sigma": mech.sigma,
        "analytic_sigma": mech.analytic_sigma,
        "delta_sampled": mech.privacy_profile(epsilon) if mech.noise is not None else 0.0,
        "witness": report.to_dict(),
    }


def delta_param(value: Any) -> float:
    """δ of the Gaussian panel: the page offers 0.1 … 1e-9 (the mechanism checks its own range)."""
    delta = check_positive_finite("delta", value)
    if delta >= 1:
        raise ParameterError("delta", "a number in (0, 1)", value)
    return float(f"{delta:.3g}")


# --- "how many people are younger than 20?" (the Chinese source's example) -------------------------
#: The example's SQL, answered by :meth:`dpwitness.Session.sql` exactly as a user would type it.
YOUNGER_SQL = "SELECT COUNT(*) FROM people WHERE age < 20"
#: Possible releases shown (each one alone is what one analyst would see).
YOUNGER_DRAWS = 5


def _people_table(young: int, total: int) -> Any:
    """A fictional table of ``total`` ages of which exactly ``young`` are below 20."""
    import polars as pl

    ages = [10.0 + i % 10 for i in range(young)] + [20.0 + (i * 37) % 70 for i in range(total - young)]
    return pl.DataFrame({"age": ages})


@lru_cache(maxsize=64)
def younger_than_20(epsilon: float, seed: int) -> dict[str, Any]:
    """The count of people younger than 20 (true 50 of 1000, and the spreadsheet's true 1), released
    through ``Session.sql`` at ε; then post-processed for free (clamped at 0, rounded): a function of
    a release alone spends no ε and keeps the guarantee.

    Each of the ``YOUNGER_DRAWS`` answers is a separate possible release (seed, seed + 1, …), never
    several releases to one analyst: together they would cost ``YOUNGER_DRAWS``·ε.
    """
    from dpwitness import Session

    cases = []
    for name, young, total in (("table", 50, 1000), ("spreadsheet", 1, len(PEOPLE))):
        frame = _people_table(young, total) if name == "table" else _spreadsheet_frame()
        noisy: list[float] = []
        for k in range(YOUNGER_DRAWS):
            session = Session(frame, epsilon=epsilon, seed=seed + k)
            answer = session.sql(YOUNGER_SQL, epsilon=epsilon, name="people")
            noisy.append(float(answer.releases[0].value))
        cases.append(
            {
                "name": name,
                "rows": total,
                "true": float(young),
                "noisy": noisy,
                "clamped": [max(0.0, v) for v in noisy],
                "rounded": [float(max(0, round(v))) for v in noisy],
            }
        )
    return {
        "sql": YOUNGER_SQL,
        "epsilon": epsilon,
        "sensitivity": count_sensitivity(Neighbours.ADD_REMOVE),
        "scale": count_sensitivity(Neighbours.ADD_REMOVE) / epsilon,
        "seed": seed,
        "cases": cases,
        "call": f'Session(people, epsilon={epsilon:g}, seed={seed}).sql("{YOUNGER_SQL}", epsilon={epsilon:g}, name="people")',
    }


def _spreadsheet_frame() -> Any:
    import polars as pl

    return pl.DataFrame({"age": [age for _, age in PEOPLE]})
