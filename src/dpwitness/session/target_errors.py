"""A budget from target errors (``Session.plan``): the smallest ε (or ρ) per statistic, and its
split over the statistic's noisy parts, that gives each statistic the half-width asked for at
confidence 1 − α; shown before anything is spent.

Every target is resolved through the one resolver (:meth:`Session.resolve`), so each part's Δ is
the project's; every candidate is planned as :meth:`Session.run` would plan it (the mechanisms
really calibrated), and the half-width is read from that plan with the accounting module's
functions, so the answer is never narrower than the release it describes:

- a count, sum or histogram (one noisy part, Δ): Laplace needs ε = Δ·ln(1/α)/e (the half-width
  :func:`~dpwitness.privacy.accounting.laplace_half_width` of b = Δ/ε is b·ln(1/α)); Gaussian
  needs σ = e/Φ⁻¹(1 − α/2), which is ρ = Δ₂²/2σ² (zCDP, :func:`~dpwitness.privacy.accounting.gaussian_rho`),
  or on an (ε, δ) account the smallest ε whose analytic Gaussian at the session's δ has that σ;
- a mean (a noisy count and a noisy centred sum) needs ``min_rows``, a public lower bound n on
  the rows it averages (per key when grouped). Its interval is the release's own rule
  (:class:`~dpwitness.session.composite.CompositeRelease`): each part within its half-width at
  α/2 (Bonferroni), so |error| ≤ (w_sum + h·w_count)/(n − w_count) with h = (U − L)/2, which
  shrinks as n grows. Laplace (w_i = b_i·ln(2/α)): meeting e costs
  ε = ln(2/α)·(√Δ_sum + √((h + e)·Δ_count))²/(e·n), split √Δ_sum : √((h + e)·Δ_count) between
  the sum and the count (the split that minimises it). Gaussian (w_i = σ_i·Φ⁻¹(1 − α/4), L2 Δ):
  on a ρ account ρ_i ∝ (c_i·Δ_i)^⅔ with c_count = h + e, c_sum = 1 (closed form,
  :func:`_gaussian_mean`); at (ε, δ) each part has δ/2 and the split is searched.

The total is what the account would record for these spends (Σε, Σδ, Σρ: basic composition; ρ
also converted to (ε, δ) at the session's δ for a Gaussian plan); a plan that does not fit the
remaining budget is returned with ``fits`` False and says so (nothing is refused for that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.common.validation import check_alpha, check_count, check_finite
from dpwitness.mechanisms.additive import Gaussian
from dpwitness.privacy.accounting import (
    analytic_gaussian_sigma,
    gaussian_half_width,
    gaussian_rho,
    laplace_half_width,
    zcdp_epsilon,
)
from dpwitness.privacy.budget import Budget, Spend, Usage
from dpwitness.query.planning import Plan
from dpwitness.query.queries import Query, Statistic
from dpwitness.query.resolve import Request

if TYPE_CHECKING:
    from dpwitness.session.session import Session

#: The statistics a target error can be planned for (their error is a noise interval, not a rank).
PLANNED_STATISTICS = ("count", "sum", "histogram", "mean")


@dataclass(frozen=True)
class Target:
    """A statistic and the half-width it needs: ``request`` (a :class:`~dpwitness.query.resolve.Request`
    without ``epsilon``/``rho``: the plan solves for them) released within ±``error`` with
    probability ≥ 1 − α. A mean also needs ``min_rows``, a public lower bound on the (non-null,
    filtered; per key) rows it averages: its error shrinks with n."""

    request: Request
    error: float
    min_rows: int | None = None


@dataclass(frozen=True)
class PlannedStatistic:
    """One target's answer: the budget of the statistic (``epsilon``, or ``rho`` for a Gaussian on a
    ρ account), its ``parts`` (aggregate, Δ, ε or ρ, scale and half-width of each noisy part), the
    ``half_width`` it will have (≤ ``error``) and the ``request`` to ask (``Session.ask``)."""

    label: str
    error: float
    half_width: float
    epsilon: float
    delta: float
    rho: float
    parts: tuple[dict[str, float | str], ...]
    request: Request

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.label,
            "error": self.error,
            "half_width": self.half_width,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "delta": self.delta,
            "rho": self.rho,
            "parts": list(self.parts),
        }


@dataclass(frozen=True)
class BudgetPlan:
    """The smallest budget meeting every target at confidence 1 − ``alpha``: ``total`` (Σε, Σδ, Σρ,
    as the account would record it), for a Gaussian plan ``converted`` (Σρ as (ε, δ) at the
    session's δ), the split per statistic, and whether it ``fits`` the remaining budget. Nothing
    has been spent; ``requests()`` are the statistics to ask to release it."""

    statistics: tuple[PlannedStatistic, ...]
    total: Budget
    alpha: float
    mechanism: str
    fits: bool
    remaining: Budget
    account_total: Budget
    converted: Budget | None = None

    def requests(self) -> list[Request]:
        """The planned statistics, each with its ε (or ρ) and split: ``session.ask_all(plan.requests())``
        (or ``[session.ask(r) for r in plan.requests()]``, one engine pass each)."""
        return [s.request for s in self.statistics]

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "mechanism": self.mechanism,
            "total": self.total.to_dict(),
            "converted": None if self.converted is None else self.converted.to_dict(),
            "fits": self.fits,
            "remaining": self.remaining.to_dict(),
            "statistics": [s.to_dict() for s in self.statistics],
        }

    def __str__(self) -> str:
        level = f"{1 - self.alpha:.0%}"
        lines = [f"Budget plan ({self.mechanism}, {level} intervals; nothing spent)"]
        for s in self.statistics:
            cost = f"ε = {s.epsilon:.6g}" if math.isfinite(s.epsilon) else f"ρ = {s.rho:.6g}"
            split = ", ".join(f"{p['aggregate']} {_budget_of(p)}" for p in s.parts) if len(s.parts) > 1 else ""
            lines.append(f"  {s.label}: ±{s.half_width:.6g} (target ±{s.error:g}) for {cost}" + (f" ({split})" if split else ""))
        return "\n".join([*lines, *self.summary()])

    def summary(self) -> tuple[str, str]:
        """Two lines: the total (and a Gaussian plan's (ε, δ)), and the remaining budget and whether it fits."""
        from dpwitness.mechanisms.report import budget_text

        total = f"total: {budget_text(self.total, self.account_total)}"
        if self.converted is not None:
            total += f"; as (ε, δ): ε = {self.converted.epsilon:.6g}, δ = {self.converted.delta:g}"
        fits = "fits" if self.fits else "the plan does NOT fit the remaining budget"
        return total, f"remaining: {budget_text(self.remaining, self.account_total)}: {fits}"

    __repr__ = __str__


def _budget_of(part: dict[str, float | str]) -> str:
    return f"ρ = {float(part['rho']):.4g}" if "epsilon" not in part else f"ε = {float(part['epsilon']):.4g}"


def plan_targets(session: Session, targets: Sequence[Target], *, alpha: float, mechanism: str) -> BudgetPlan:
    """The :class:`BudgetPlan` for ``targets`` on ``session`` (see the module docstring); spends nothing.

    :param alpha: each interval's miss probability, strictly between 0 and 1.
    :param mechanism: "laplace" or "gaussian" (a count, sum, histogram or mean over declared keys).
    """
    alpha = check_alpha(alpha)
    if mechanism not in ("laplace", "gaussian"):
        raise ParameterError("mechanism", "laplace or gaussian for a plan (the noise its errors are solved for)", mechanism)
    if isinstance(targets, Target) or not targets or not all(isinstance(t, Target) for t in targets):
        raise ParameterError("targets", "a non-empty list of dpwitness.session.Target", targets)
    planned = [_plan_one(session, t, alpha, mechanism) for t in targets]
    spends = [spend for _, spend in planned]
    usage = Usage.of(spends)
    total = Budget(usage.epsilon, usage.delta, usage.rho)
    converted = None
    if mechanism == "gaussian":
        converted = Budget(zcdp_epsilon(usage.rho, session.delta), session.delta, usage.rho)
    try:
        session._accountant.check_all(spends)  # records nothing
        fits = True
    except BudgetExceeded:
        fits = False
    statistics = tuple(s for s, _ in planned)
    return BudgetPlan(statistics, total, alpha, mechanism, fits, session.remaining, session.total, converted)


def _plan_one(session: Session, target: Target, alpha: float, mechanism: str) -> tuple[PlannedStatistic, Spend]:
    request, error = target.request, _check_error(target.error)
    if not isinstance(request, Request):
        raise ParameterError("request", "a dpwitness.query.resolve.Request (the statistic to plan)", request)
    if request.statistic not in PLANNED_STATISTICS:
        raise ParameterError("statistic", f"one of {', '.join(PLANNED_STATISTICS)} for a target error", request.statistic)
    if request.epsilon is not None or request.rho is not None:
        raise ParameterError("epsilon", "left out of a target (the plan solves for it)", request.epsilon or request.rho)
    sized = session.resolve(replace(request, epsilon=1.0, split=None, mechanism=mechanism, alpha=alpha))  # Δ per part
    rows = _check_min_rows(target.min_rows, sized)
    if sized.statistic is Statistic.MEAN:
        if error >= 2 * sized.half_range:
            raise ParameterError("error", f"below U − L = {2 * sized.half_range:g} (every mean is within [L, U])", error)
    elif len(sized.parts) != 1:
        raise ParameterError("keys", "declared for a sum's target error (undeclared keys need a selection count too)", None)
    zcdp = mechanism == "gaussian" and session.total.is_zcdp
    amount, split = _first_guess(sized, error, alpha, rows, mechanism, zcdp)
    for _ in range(200):  # each candidate planned as the release would be; raised until it meets the target
        asked = replace(
            request,
            epsilon=None if zcdp else amount,
            rho=amount if zcdp else None,
            split=split,
            mechanism=mechanism,
            alpha=alpha,
        )
        query = session.resolve(asked)
        plan = session._plan(query, mechanism, rho=asked.rho, max_rows=request.max_rows)
        parts = _parts(plan, alpha)
        achieved = _half_width(plan.query, parts, rows)
        if achieved <= error:
            spend = plan.spend(plan.query.label)
            statistic = PlannedStatistic(
                plan.query.label, error, achieved, plan.cost, plan.delta, plan.rho, tuple(p[0] for p in parts), asked
            )
            return statistic, spend
        power = 2.0 if zcdp else 1.0  # the half-width goes as 1/ρ^½ or 1/ε
        amount = amount * (2.0 if math.isinf(achieved) else max((achieved / error) ** power, 1.0 + 1e-12))
    raise AssertionError(f"no budget met the target error {error!r} of {request.statistic}")  # pragma: no cover


def _check_error(error: Any) -> float:
    value = check_finite("error", error, "a number > 0 (the half-width wanted)")
    if value <= 0:
        raise ParameterError("error", "a number > 0 (no budget gives an error of 0 or less)", error)
    return value


def _check_min_rows(min_rows: Any, query: Query) -> int | None:
    if query.statistic is not Statistic.MEAN:
        if min_rows is not None:
            raise ParameterError("min_rows", "None for a count, sum or histogram (only a mean's error depends on n)", min_rows)
        return None
    return check_count("min_rows", min_rows, expected="a whole number ≥ 1, a public lower bound on the rows a mean averages")


def _first_guess(
    query: Query, error: float, alpha: float, rows: int | None, mechanism: str, zcdp: bool
) -> tuple[float, tuple[float, ...] | None]:
    """The exact answer before the calibrated plan checks it: ε (or ρ) and the mean's split."""
    part = query.parts[-1]
    if query.statistic is Statistic.MEAN and mechanism == "gaussian":
        assert rows is not None
        return _gaussian_mean(query, error, alpha, rows, zcdp)
    if query.statistic is Statistic.MEAN:
        assert rows is not None
        count, centred = (p.sensitivity for p in query.parts)
        per_unit = laplace_half_width(1.0, alpha / 2)  # ln(2/α): each part at α/2 (Bonferroni)
        weights = (math.sqrt((query.half_range + error) * count), math.sqrt(centred))
        return per_unit * sum(weights) ** 2 / (error * rows), weights
    if part.sensitivity == 0:
        return 1.0, None  # nothing to noise: any budget (none is charged)
    if mechanism == "gaussian":
        sigma = error / gaussian_half_width(1.0, alpha)
        if zcdp:
            return gaussian_rho(part.l2_sensitivity, sigma), None
        return _gaussian_epsilon(part.l2_sensitivity, sigma, query.delta), None
    return laplace_half_width(part.sensitivity, alpha) / error, None


def _gaussian_mean(query: Query, error: float, alpha: float, rows: int, zcdp: bool) -> tuple[float, tuple[float, ...]]:
    """A Gaussian mean's ρ (or ε) and split: the parts' half-widths w_i = σ_i·z, z = Φ⁻¹(1 − α/4)
    (α/2 each), must satisfy w_sum + (h + e)·w_count = e·n. On a ρ account, minimising Σ Δ_i²/2σ_i²
    on that line gives σ_i ∝ (Δ_i²/c_i)^⅓ (c_count = h + e, c_sum = 1), so ρ_i ∝ (c_i·Δ_i)^⅔. At
    (ε, δ) each part has δ/2 and ε_i is the smallest ε whose analytic Gaussian has σ_i; the split
    of the line minimising ε_count + ε_sum is found by golden-section search (the sum is convex)."""
    z = gaussian_half_width(1.0, alpha / 2)  # the release's rule: each part at α/2 (Bonferroni)
    deltas = [p.l2_sensitivity for p in query.parts]  # count, centred sum
    weights = [query.half_range + error, 1.0]
    budget = error * rows / z  # Σ c_i·σ_i
    if zcdp:
        shape = [(d * d / c) ** (1 / 3) for d, c in zip(deltas, weights, strict=True)]
        scale = budget / sum(c * t for c, t in zip(weights, shape, strict=True))
        rhos = [gaussian_rho(d, scale * t) for d, t in zip(deltas, shape, strict=True)]
        return sum(rhos), tuple(rhos)
    half = query.delta / len(query.parts)

    def epsilons(share: float) -> list[float]:  # share of Σ c_i·σ_i given to the count
        sigmas = (share * budget / weights[0], (1 - share) * budget / weights[1])
        return [_gaussian_epsilon(d, sigma, half) for d, sigma in zip(deltas, sigmas, strict=True)]

    low, high, golden = 1e-6, 1 - 1e-6, (math.sqrt(5) - 1) / 2
    for _ in range(40):
        left, right = high - golden * (high - low), low + golden * (high - low)
        if sum(epsilons(left)) <= sum(epsilons(right)):
            high = right
        else:
            low = left
    best = epsilons((low + high) / 2)
    return sum(best), tuple(best)


def _gaussian_epsilon(sensitivity: float, sigma: float, delta: float) -> float:
    """The smallest ε (to ≈ 1e-9 relative) whose analytic Gaussian σ at δ is ≤ ``sigma``."""
    low, high = 1e-6, 1.0
    while analytic_gaussian_sigma(sensitivity, high, delta) > sigma:
        low, high = high, high * 2
    for _ in range(60):
        middle = math.sqrt(low * high)
        if analytic_gaussian_sigma(sensitivity, middle, delta) > sigma:
            low = middle
        else:
            high = middle
    return high


def _parts(plan: Plan, alpha: float) -> list[tuple[dict[str, float | str], float]]:
    """Each noisy part's description and its scale (b for Laplace, σ for Gaussian)."""
    query = plan.query
    level = alpha / len(query.parts) if query.statistic is Statistic.MEAN else alpha  # the release's own rule
    out: list[tuple[dict[str, float | str], float]] = []
    for part, mechanism in zip(query.parts, plan.mechanisms, strict=True):
        if isinstance(mechanism, Gaussian):
            budget: dict[str, float | str] = (
                {"rho": mechanism.rho} if mechanism.rho is not None else {"epsilon": query.epsilon_of(part)}
            )
            scale, width = mechanism.sigma, mechanism.interval(level)
        else:
            budget = {"epsilon": query.epsilon_of(part)}
            scale = part.sensitivity / query.epsilon_of(part)
            width = laplace_half_width(scale, level)
        described = {
            "aggregate": part.aggregate.value,
            "sensitivity": part.sensitivity,
            **budget,
            "scale": scale,
            "half_width": width,
        }
        out.append((described, width))
    return out


def _half_width(query: Query, parts: list[tuple[dict[str, float | str], float]], rows: int | None) -> float:
    """The statistic's half-width: its one part's, or a mean's (w_sum + h·w_count)/(n − w_count)."""
    if query.statistic is not Statistic.MEAN:
        return parts[-1][1]
    assert rows is not None
    count, centred = parts[0][1], parts[1][1]
    if rows - count < 1:  # the noisy count could fall below 1, where the release is the centre
        return math.inf
    return (centred + query.half_range * count) / (rows - count)
