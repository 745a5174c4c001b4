"""The analytic witness: re-derive ε and the variance from the sampler's own tables.

It never trusts the mechanism's formula. It reads the integer tables that
:class:`dpwitness.noise.GridLaplace` samples from and computes

* the worst log density ratio between the outputs for f(D) and f(D') over every shift
  d ≤ Δ and every output, tails included (the supremum, from the tables' structure),
  cross-checked by evaluating the exact PMF at outputs near 0 and deep in both tails;
* the variance of the noise actually added,

and compares them with the claimed ε and 2(Δ/ε)².
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np

if TYPE_CHECKING:
    from dpwitness.mechanisms.additive import Gaussian, Laplace

#: Relative slack allowed on the variance (the grid adds ≲ 10^-7; a mis-calibration is far larger).
VARIANCE_TOLERANCE = 1e-4


class _Verdict:
    """What every witness report shows: its verdict as text, and all its fields as a dict or HTML."""

    verdict: str

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return fields

    def __str__(self) -> str:
        return self.verdict

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import record_html

        return record_html(self.verdict, self.to_dict())


@dataclass(frozen=True)
class WitnessReport(_Verdict):
    ok: bool
    claimed_epsilon: float
    worst_log_ratio: float
    observed_log_ratio: float
    variance: float
    expected_variance: float
    sensitivity: float
    granularity: float
    verdict: str
    #: What this report proves: the sampler against the claim *for the declared Δ*, not Δ itself.
    proves: str = "the noise actually sampled against the claimed privacy loss, for the declared Δ"
    #: Which sensitivity search backs that Δ (:attr:`dpwitness.Release.sensitivity_search`; None: nothing checked it).
    sensitivity_search: str | None = None


@overload
def witness(mechanism: Laplace) -> WitnessReport: ...
@overload
def witness(mechanism: Gaussian) -> GaussianWitnessReport: ...
def witness(mechanism: Laplace | Gaussian) -> WitnessReport | GaussianWitnessReport:
    """Check a mechanism's claim against the noise it really samples.

    Laplace: ε and 2(Δ/ε)². Gaussian: δ(ε) (or ρ) and σ² (see :func:`witness_gaussian`).
    """
    from dpwitness.mechanisms.additive import Gaussian

    if isinstance(mechanism, Gaussian):
        return witness_gaussian(mechanism)
    claimed, sensitivity = mechanism.epsilon, mechanism.sensitivity
    expected_variance = 2.0 * (sensitivity / claimed) ** 2
    noise = mechanism.noise
    if noise is None:
        return WitnessReport(
            ok=sensitivity == 0,
            claimed_epsilon=claimed,
            worst_log_ratio=0.0,
            observed_log_ratio=0.0,
            variance=0.0,
            expected_variance=expected_variance,
            sensitivity=sensitivity,
            granularity=0.0,
            verdict="✔ Δ = 0: the value cannot change between neighbours; no noise, no privacy loss",
        )
    steps = noise.steps_for_shift(sensitivity, mechanism.charged_coordinates)
    worst = noise.loss_for_steps(steps)
    observed = _observed_log_ratio(noise, steps)
    variance = noise.variance_steps() * noise.granularity**2
    privacy_ok = worst <= claimed * (1 + 1e-12)
    # Grid rounding may add a step per changed coordinate to Δ, so the realised scale may exceed Δ/ε by that much.
    rounding_slack = 4.0 * mechanism.charged_coordinates * noise.granularity / sensitivity
    variance_ok = abs(variance / expected_variance - 1.0) <= VARIANCE_TOLERANCE + rounding_slack
    if privacy_ok and variance_ok:
        verdict = (
            f"✔ claim holds: worst log density ratio {worst:.6f} ≤ ε = {claimed:g}; "
            f"variance {variance:.6g} ≈ 2(Δ/ε)² = {expected_variance:.6g}"
        )
    elif not privacy_ok:
        verdict = (
            f"✘ VIOLATED: worst log density ratio {worst:.6g} > claimed ε = {claimed:g} "
            f"(variance {variance:.6g} vs 2(Δ/ε)² = {expected_variance:.6g})"
        )
    else:
        verdict = (
            f"✘ MISCALIBRATED: variance {variance:.6g} ≠ 2(Δ/ε)² = {expected_variance:.6g} "
            f"(privacy holds: worst log ratio {worst:.6f} ≤ ε = {claimed:g}, but the noise is not what is claimed)"
        )
    return WitnessReport(
        ok=bool(privacy_ok and variance_ok),
        claimed_epsilon=claimed,
        worst_log_ratio=worst,
        observed_log_ratio=observed,
        variance=float(variance),
        expected_variance=expected_variance,
        sensitivity=sensitivity,
        granularity=noise.granularity,
        verdict=verdict,
    )


@overload
def compose(reports: list[WitnessReport]) -> WitnessReport: ...
@overload
def compose(reports: list[GaussianWitnessReport]) -> GaussianWitnessReport: ...
def compose(reports: list[WitnessReport] | list[GaussianWitnessReport]) -> WitnessReport | GaussianWitnessReport:
    """The witness of a statistic built from several releases (basic composition: losses add;
    Gaussian parts: their ε, δ and ρ add, as the account records them).

    :param reports: the witness report of each part (at least one), all Laplace or all Gaussian.
    """
    if any(isinstance(r, GaussianWitnessReport) for r in reports):
        if not all(isinstance(r, GaussianWitnessReport) for r in reports):
            raise ValueError("compose: a statistic's parts are all Laplace or all Gaussian")
        return _compose_gaussian([r for r in reports if isinstance(r, GaussianWitnessReport)])
    reports = [r for r in reports if isinstance(r, WitnessReport)]
    claimed = math.fsum(r.claimed_epsilon for r in reports)
    worst = math.fsum(r.worst_log_ratio for r in reports)
    ok = all(r.ok for r in reports)
    mark = "✔" if ok else "✘"
    verdict = (
        f"{mark} {len(reports)} parts, each witnessed: total worst log density ratio {worst:.6f} "
        f"{'≤' if worst <= claimed * (1 + 1e-12) else '>'} ε = {claimed:g} (basic composition)"
    )
    if not ok:
        verdict += "; failing part: " + next(r.verdict for r in reports if not r.ok)
    return WitnessReport(
        ok=ok,
        claimed_epsilon=claimed,
        worst_log_ratio=worst,
        observed_log_ratio=math.fsum(r.observed_log_ratio for r in reports),
        variance=math.nan,  # the derived statistic's error is not one Laplace's: see each part
        expected_variance=math.nan,
        sensitivity=max(r.sensitivity for r in reports),
        granularity=min(r.granularity for r in reports),
        verdict=verdict,
    )


def _total(values: list[float | None]) -> float | None:
    """Σ of the parts' claims, or None when a part claims none (a ρ part has no ε)."""
    return None if any(v is None for v in values) else math.fsum(v for v in values if v is not None)


def _compose_gaussian(reports: list[GaussianWitnessReport]) -> GaussianWitnessReport:
    """Gaussian parts composed: claimed and witnessed ε, δ and ρ each add (basic composition for
    (ε, δ), zCDP composition for ρ); each part's own bound was checked against its own claim."""
    ok = all(r.ok for r in reports)
    claimed_rho, claimed_eps, claimed_delta = (
        _total([r.claimed_rho for r in reports]),
        _total([r.claimed_epsilon for r in reports]),
        _total([r.claimed_delta for r in reports]),
    )
    rho, delta = math.fsum(r.rho for r in reports), math.fsum(r.delta for r in reports)
    if claimed_rho is not None:
        found = f"total ρ = {rho:.6g} {'≤' if rho <= claimed_rho * (1 + 1e-12) else '>'} ρ = {claimed_rho:g} (zCDP composition)"
    else:
        found = f"total δ({claimed_eps:g}) ≤ {delta:.6g}, claim δ = {claimed_delta:g} (basic composition)"
    verdict = f"{'✔' if ok else '✘'} {len(reports)} Gaussian parts, each witnessed: {found}"
    if not ok:
        verdict += "; failing part: " + next(r.verdict for r in reports if not r.ok)
    return GaussianWitnessReport(
        ok=ok,
        claimed_epsilon=claimed_eps,
        claimed_delta=claimed_delta,
        claimed_rho=claimed_rho,
        delta=delta,
        observed_delta=_total([r.observed_delta for r in reports]),
        rho=rho,
        tv_distance=math.fsum(r.tv_distance for r in reports),
        variance=math.nan,  # the derived statistic's error is not one Gaussian's: see each part
        expected_variance=math.nan,
        sensitivity=max(r.sensitivity for r in reports),
        granularity=min(r.granularity for r in reports),
        verdict=verdict,
    )


def _observed_log_ratio(noise: Any, steps: int) -> float:
    """max |log P(x) − log P(x + s)| evaluated exactly at outputs around 0 and in far tails."""
    m = noise.m
    near = np.arange(-2 * steps - 2048, 2 * steps + 2048, max(1, steps // 4096), dtype=np.int64)
    block_edges = (np.arange(1, 200, dtype=np.int64)[:, None] * m + np.arange(-64, 64)[None, :]).ravel()
    far = np.concatenate([block_edges, 1000 * m + np.arange(-4096, 4096)])
    x = np.concatenate([near, far, -far - steps])
    ratio = np.abs(noise.log_weight(x) - noise.log_weight(x + steps))
    return float(ratio.max())


@dataclass(frozen=True)
class GaussianWitnessReport(_Verdict):
    """The witness of a Gaussian: δ(ε) (or ρ) and σ² recomputed from the sampler's tables."""

    ok: bool
    claimed_epsilon: float | None
    claimed_delta: float | None
    claimed_rho: float | None
    delta: float  # rigorous upper bound on δ(claimed ε) of the sampled noise (0 when ρ alone is claimed)
    observed_delta: float | None  # the hockey-stick sum over the exact PMF (one changed coordinate)
    rho: float  # k²/2s² for the rounded shift k of the sampled discrete Gaussian
    tv_distance: float  # η: the tables' distance from the ideal discrete Gaussian, charged in δ
    variance: float
    expected_variance: float
    sensitivity: float
    granularity: float
    verdict: str
    #: What this report proves: the sampler against the claim *for the declared Δ*, not Δ itself.
    proves: str = "the noise actually sampled against the claimed privacy loss, for the declared Δ"
    #: Which sensitivity search backs that Δ (:attr:`dpwitness.Release.sensitivity_search`; None: nothing checked it).
    sensitivity_search: str | None = None


def witness_gaussian(mechanism: Gaussian) -> GaussianWitnessReport:
    """Check a Gaussian's (ε, δ) or ρ claim and its σ² against the discrete noise it really samples.

    From the sampler's tables: the rounded shift k (grid steps) that Δ can cause, the tables'
    total-variation distance η from N_ℤ(0, s²), the rigorous δ(ε) bound (CKS 2020 Thm 7 with
    integral tail bounds, or the zCDP conversion for several coordinates, plus (1 + e^ε)·η),
    and, for one coordinate, the sum of max(0, P(x) − e^ε·P(x − k)) over the exact PMF: both must
    be ≤ the claimed δ; ρ = k²/2s²; and the variance of the sampled PMF against the claimed σ².

    :param mechanism: the Gaussian mechanism whose claim and sampler are checked.
    """
    claimed_eps, claimed_delta, claimed_rho = mechanism.epsilon, mechanism.delta, mechanism.rho
    expected_variance = mechanism.analytic_sigma**2
    noise = mechanism.noise
    if noise is None:
        return GaussianWitnessReport(
            ok=mechanism.sensitivity == 0,
            claimed_epsilon=claimed_eps,
            claimed_delta=claimed_delta,
            claimed_rho=claimed_rho,
            delta=0.0,
            observed_delta=0.0,
            rho=0.0,
            tv_distance=0.0,
            variance=0.0,
            expected_variance=expected_variance,
            sensitivity=mechanism.sensitivity,
            granularity=0.0,
            verdict="✔ Δ = 0: the value cannot change between neighbours; no noise, no privacy loss",
        )
    changed = mechanism.charged_coordinates
    steps = noise.steps_for_shift(mechanism.sensitivity, changed)
    rho = noise.rho_for_steps(steps)
    eta = noise.tv_distance()
    delta = noise.delta_for_steps(claimed_eps, steps, changed) if claimed_eps is not None else 0.0
    observed = _observed_delta(noise, int(steps), claimed_eps) if claimed_eps is not None and changed == 1 else None
    variance = noise.variance_steps() * noise.granularity**2
    if claimed_rho is not None:
        privacy_ok = rho <= claimed_rho * (1 + 1e-12)
        claim = f"ρ = {claimed_rho:g}"
        found = f"ρ = k²/2s² = {rho:.6g} (tables within TV {eta:.1e} of N_ℤ(0, s²))"
    else:
        assert claimed_delta is not None and claimed_eps is not None
        # Both must hold: the rigorous bound (the same formula calibration used) and the
        # hockey-stick sum over the sampler's own PMF (independent of that formula: it catches
        # tables that do not match s, or a misreported η).
        bound_ok = delta <= claimed_delta
        sum_ok = observed is None or observed <= claimed_delta
        privacy_ok = bound_ok and sum_ok
        claim = f"δ({claimed_eps:g}) ≤ {claimed_delta:g}"
        found = f"δ({claimed_eps:g}) ≤ {delta:.6g} (bound {'≤' if bound_ok else '>'} claim)"
        if observed is not None:
            found += f", exact sum over the sampled PMF {observed:.6g} ({'≤' if sum_ok else '>'} claim)"
    # The rounding charge raises σ by ≲ (√c + 1)·γ/Δ; the integral tail bounds by ≲ 10^-4.
    slack = 2.0 * ((math.sqrt(changed) + 1.0) * noise.granularity / mechanism.sensitivity + 1e-3)
    variance_ok = (
        abs(variance / expected_variance - 1.0) <= slack
        if changed == 1 or claimed_rho is not None
        else (variance >= expected_variance * (1 - slack))
    )
    if privacy_ok and variance_ok:
        verdict = f"✔ claim holds: {found} for {claim}; variance {variance:.6g} ≈ σ² = {expected_variance:.6g}"
    elif not privacy_ok:
        verdict = f"✘ VIOLATED: {found}, but the claim is {claim} (variance {variance:.6g} vs σ² = {expected_variance:.6g})"
    else:
        verdict = (
            f"✘ MISCALIBRATED: variance {variance:.6g} ≠ σ² = {expected_variance:.6g} "
            f"(privacy holds: {found}, but the noise is not what is claimed)"
        )
    return GaussianWitnessReport(
        ok=bool(privacy_ok and variance_ok),
        claimed_epsilon=claimed_eps,
        claimed_delta=claimed_delta,
        claimed_rho=claimed_rho,
        delta=delta,
        observed_delta=observed,
        rho=rho,
        tv_distance=eta,
        variance=float(variance),
        expected_variance=expected_variance,
        sensitivity=mechanism.sensitivity,
        granularity=noise.granularity,
        verdict=verdict,
    )


def _observed_delta(noise: Any, steps: int, epsilon: float) -> float:
    """Σ_x max(0, P(x) − e^ε·P(x − k)) over the exact PMF, wherever it is above 10^-300."""
    reach = int(40 * noise.s) + steps
    x = np.arange(-reach, reach + steps + 1, dtype=np.int64)
    p = noise.pmf(x)
    gap = p[steps:] - math.exp(epsilon) * p[:-steps]
    return float(np.sum(np.maximum(gap, 0.0)))
