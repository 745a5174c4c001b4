"""The explorer's JSON API: thin FastAPI routes over :mod:`~dpwitness.explorer.compute`.

Bad input never crashes the server: FastAPI's type errors and the project's
:class:`~dpwitness.ParameterError` both become a 422 whose ``detail`` names the parameter,
what it must be and what was given; any other ``ValueError`` becomes a 400.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import APIRouter, Query

from dpwitness.common.encoding import json_value
from dpwitness.explorer import beyond, compute, lessons, planner, redteam
from dpwitness.explorer.strings import DEFAULT_LANGUAGE, languages, strings

router = APIRouter(prefix="/api")

Epsilon = Annotated[float, Query(description="ε > 0 (at most 100 here)")]
Sensitivity = Annotated[float, Query(description="Δ ≥ 0: the most one record moves the query (L1)")]
Value = Annotated[float, Query(description="the true answer f(D)")]
Shift = Annotated[float, Query(description="d = f(D) − f(D′), |d| ≤ Δ")]
Seed = Annotated[int, Query(description="seed of the reproducible release (not for production)")]
Tamper = Annotated[bool, Query(description="red team: invert the calibration (scale ε/Δ)")]


def _safe(payload: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json_value(payload)
    return result


@router.get("/strings")
def get_strings(lang: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
    """The page's strings table (English fills any gap) and the languages available."""
    return {"lang": lang, "languages": languages(), "strings": strings(lang)}


@router.get("/live")
def get_live(
    epsilon: Epsilon = 0.5,
    sensitivity: Sensitivity = 1.0,
    value: Value = 42.0,
    d: Shift = 1.0,
    seed: Seed = 1,
    tamper: Tamper = False,
    releases: Annotated[int, Query(description="k releases for composition")] = 1,
    gauss_delta: Annotated[float, Query(description="δ of the Gaussian panel")] = 0.01,
) -> dict[str, Any]:
    """Everything the live panel and the witness badge draw, for one setting."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    return _safe(
        compute.live(
            epsilon=eps,
            sensitivity=delta,
            value=compute.value_param(value),
            shift=compute.shift_param(d, delta),
            seed=compute.seed_param(seed),
            tamper=tamper,
            releases=compute.count_param(releases, "releases", 1, compute.MAX_RELEASES),
            gauss_delta=compute.delta_param(gauss_delta),
        )
    )


@router.get("/witness")
def get_witness(epsilon: Epsilon = 0.5, sensitivity: Sensitivity = 1.0, tamper: Tamper = False) -> dict[str, Any]:
    """The analytic witness: worst log density ratio and variance against the claim."""
    return _safe(compute.witness_payload(compute.sensitivity_param(sensitivity), compute.epsilon_param(epsilon), tamper))


@router.get("/release")
def get_release(
    epsilon: Epsilon = 0.5, sensitivity: Sensitivity = 1.0, value: Value = 42.0, seed: Seed = 1, tamper: Tamper = False
) -> dict[str, Any]:
    """One fixed-seed release f(D) + noise (the same seed always gives the same release)."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    return _safe(compute.release_payload(compute.value_param(value), delta, eps, compute.seed_param(seed), tamper))


@router.get("/walkthrough/neighbour")
def get_neighbour(query: str = "sum", relation: str = "add-remove", row: int = 1, replacement: float = 100.0) -> dict[str, Any]:
    """The spreadsheet, one neighbour, the gap f(D) − f(D′) and the fan of one-person changes."""
    return _safe(compute.neighbour(query, relation, row, replacement))


@router.get("/walkthrough/tails")
def get_tails(
    epsilon: Epsilon = 1.0,
    sensitivity: Sensitivity = 1.0,
    d: Annotated[float | None, Query(description="d = f(D) − f(D′), |d| ≤ Δ (Δ if left out)")] = None,
) -> dict[str, Any]:
    """Log densities of Laplace and Gaussian (same variance) for f(D′) = 0 and f(D) = d (Δ if not given), and their log ratios."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    shift = None if d is None else compute.shift_param(d, delta)
    return _safe(compute.tails(delta, eps, shift))


@router.get("/walkthrough/derivation")
def get_derivation(
    epsilon: Epsilon = 1.0, sensitivity: Sensitivity = 1.0, value: Value = 0.0, d: Shift = 1.0, z: float = 2.5
) -> dict[str, Any]:
    """The reverse triangle inequality at one output z, live numbers filled in."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    return _safe(
        compute.derivation(delta, eps, compute.value_param(value), compute.shift_param(d, delta), compute.value_param(z, "z"))
    )


@router.get("/walkthrough/edge-cases")
def get_edge_cases(epsilon: Epsilon = 1.0, sensitivity: Sensitivity = 1.0) -> dict[str, Any]:
    """d = 0, negative d, far tails, ε → 0, ε → ∞, Δ = 0, add/remove vs replace-one."""
    return _safe(compute.edge_cases(compute.sensitivity_param(sensitivity), compute.epsilon_param(epsilon)))


@router.get("/walkthrough/worked-example")
def get_worked_example(epsilon: Epsilon = 1.0) -> dict[str, Any]:
    """Mean of 1000 ages at ε, and the two traps."""
    return _safe(compute.worked_example(compute.epsilon_param(epsilon)))


@router.get("/myths")
def get_myths(epsilon: Epsilon = 1.0) -> dict[str, Any]:
    """Numbers behind the myths (likelihood factors e^ε, uncalibrated noise)."""
    return _safe(compute.myths(compute.epsilon_param(epsilon)))


@router.get("/redteam/membership")
def get_membership(
    epsilon: Epsilon = 0.5,
    sensitivity: Sensitivity = 1.0,
    tamper: Tamper = False,
    simulate: bool = False,
    trials: int = 4000,
    seed: Seed = 1,
) -> dict[str, Any]:
    """The attacker's likelihood ratio vs e^ε, the best test's ROC vs its cap; optionally the simulated attack."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    payload = {"analytic": redteam.membership_analytic(delta, eps, tamper)}
    if simulate:
        runs = compute.count_param(trials, "trials", 10, redteam.MAX_SAMPLES)
        payload["simulation"] = redteam.membership_simulation(eps, runs, compute.seed_param(seed))
    return _safe(payload)


@router.get("/redteam/differencing")
def get_differencing(
    epsilon: Annotated[float | None, Query(description="ε per answer; leave out for exact answers")] = None,
    seed: Seed = 1,
) -> dict[str, Any]:
    """Q5 − Q4 on the fictional clinic: exact answers reveal patient 5, noisy ones do not."""
    eps = None if epsilon is None else compute.epsilon_param(epsilon)
    return _safe(redteam.differencing(eps, compute.seed_param(seed)))


@router.get("/redteam/floating-point")
def get_floating_point(epsilon: Epsilon = 1.0, samples: int = 5000, seed: Seed = 1) -> dict[str, Any]:
    """Mironov's floating-point leak: naive sampler vs the project's grid sampler."""
    runs = compute.count_param(samples, "samples", 10, redteam.MAX_SAMPLES)
    return _safe(redteam.floating_point(compute.epsilon_param(epsilon), runs, compute.seed_param(seed)))


@router.get("/walkthrough/vector")
def get_vector(relation: str = "add-remove", epsilon: Epsilon = 1.0, seed: Seed = 1) -> dict[str, Any]:
    """Counts per age group of the spreadsheet: L1 Δ of the vector and one noise draw per coordinate."""
    return _safe(compute.vector(relation, compute.epsilon_param(epsilon), compute.seed_param(seed)))


@router.get("/beyond/inverse")
def get_inverse(
    target: Annotated[str, Query(description="error, posterior or advantage")] = "error",
    value: Annotated[float, Query(description="the target: a 95% half-width, a posterior from 1%, or an advantage")] = 5.0,
    sensitivity: Sensitivity = 1.0,
) -> dict[str, Any]:
    """The ε that meets a target error or risk, checked forwards."""
    return _safe(beyond.inverse(target, value, compute.sensitivity_param(sensitivity)))


@router.get("/beyond/composition")
def get_beyond_composition(
    epsilon: Epsilon = 0.5,
    releases: Annotated[int, Query(description="k, the number of Laplace releases")] = 50,
    delta: Annotated[float, Query(description="the one δ at which the zCDP total is stated")] = beyond.COMPARISON_DELTA,
) -> dict[str, Any]:
    """kε against zCDP composition (ρ = ε²/2 each, stated at one fixed δ) for k Laplace releases."""
    return _safe(beyond.composition(compute.epsilon_param(epsilon), releases, compute.delta_param(delta)))


@router.get("/walkthrough/younger-than-20")
def get_younger_than_20(epsilon: Epsilon = 0.5, seed: Seed = 1) -> dict[str, Any]:
    """How many people are younger than 20? Released with Session.sql, then clamped and rounded (free)."""
    return _safe(compute.younger_than_20(compute.epsilon_param(epsilon), compute.seed_param(seed)))


PlanEpsilon = Annotated[float, Query(description="ε of this query in the plan (0 leaves it out)")]
PlanDelta = Annotated[float, Query(description="the plan's total δ (0: pure ε-DP), split across its Gaussian queries")]
PlanMechanism = Annotated[str, Query(description="laplace or gaussian")]


@router.get("/planner")
def get_plan(
    total_epsilon: Annotated[float, Query(description="the plan's total ε budget")] = 1.0,
    count_epsilon: PlanEpsilon = 0.2,
    mean_epsilon: PlanEpsilon = 0.5,
    histogram_epsilon: PlanEpsilon = 0.3,
    total_delta: PlanDelta = 0.0,
    count_mechanism: PlanMechanism = "laplace",
    histogram_mechanism: PlanMechanism = "laplace",
) -> dict[str, Any]:
    """Each query's Δ and expected error (a curve against ε), the composed (ε, δ) and the disclosure risk."""
    return _safe(
        planner.plan(
            total_epsilon, count_epsilon, mean_epsilon, histogram_epsilon, total_delta, count_mechanism, histogram_mechanism
        )
    )


_ledger: planner.PlanLedger | None = None
_ledger_lock = threading.Lock()


def plan_ledger() -> planner.PlanLedger:
    """The server's plan ledger (created on first use, in a temporary folder)."""
    global _ledger
    with _ledger_lock:
        if _ledger is None:
            _ledger = planner.PlanLedger()
        return _ledger


@router.post("/planner/release")
def post_plan_release(
    plan_id: Annotated[str, Query(description="the page's plan id: the ledger account")],
    total_epsilon: Annotated[float, Query(description="the plan's total ε budget")] = 1.0,
    count_epsilon: PlanEpsilon = 0.2,
    mean_epsilon: PlanEpsilon = 0.5,
    histogram_epsilon: PlanEpsilon = 0.3,
    total_delta: PlanDelta = 0.0,
    count_mechanism: PlanMechanism = "laplace",
    histogram_mechanism: PlanMechanism = "laplace",
) -> dict[str, Any]:
    """Release the plan through a real Session and its ledger; a spent plan is refused (409)."""
    ledger = plan_ledger()
    return _safe(
        ledger.release(
            plan_id,
            total_epsilon,
            count_epsilon,
            mean_epsilon,
            histogram_epsilon,
            total_delta,
            count_mechanism,
            histogram_mechanism,
        )
    )


@router.get("/gaussian")
def get_gaussian(
    epsilon: Epsilon = 0.5,
    sensitivity: Sensitivity = 1.0,
    delta: Annotated[float, Query(description="δ of the (ε, δ) claim")] = 0.01,
) -> dict[str, Any]:
    """The exact discrete Gaussian for (ε, δ): σ really sampled, its δ(ε), and the witness's verdict."""
    eps, sens = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    return _safe(compute.gaussian_payload(sens, eps, compute.delta_param(delta)))


@router.get("/walkthrough/linked")
def get_linked(
    epsilon: Epsilon = 0.5,
    sensitivity: Sensitivity = 1.0,
    total: Annotated[float, Query(description="the stated total budget (ε)")] = 2.0,
) -> dict[str, Any]:
    """One ε, side by side: the Laplace error, the attacker's ROC, the posterior from 50% and the budget left."""
    eps, delta = compute.epsilon_param(epsilon), compute.sensitivity_param(sensitivity)
    return _safe(lessons.linked(eps, delta, lessons.total_param(total)))


@router.get("/walkthrough/randomized-response")
def get_randomized_response(
    epsilon: Epsilon = 1.0, people: Annotated[int, Query(description="n, the people answering")] = 1000
) -> dict[str, Any]:
    """Randomized response (local) against a Laplace count (central) at the same ε."""
    return _safe(lessons.randomized_response(compute.epsilon_param(epsilon), people))


@router.get("/walkthrough/group")
def get_group(
    epsilon: Epsilon = 0.5, size: Annotated[int, Query(description="k, the people in the group")] = 4
) -> dict[str, Any]:
    """Group privacy: what a release calibrated for one person spends on a group of k."""
    return _safe(lessons.group(compute.epsilon_param(epsilon), size))


@router.get("/walkthrough/clamp")
def get_clamp(epsilon: Epsilon = 0.5, bound: Annotated[float, Query(description="C, the clamp bound")] = 100.0) -> dict[str, Any]:
    """The clamp bound's bias–noise trade-off on a fixed public example, with its optimum."""
    return _safe(lessons.clamp(compute.epsilon_param(epsilon), float(f"{bound:.6g}")))


@router.get("/walkthrough/parallel")
def get_parallel(
    epsilon: Epsilon = 0.5, groups: Annotated[int, Query(description="k, the disjoint groups (or the queries)")] = 4
) -> dict[str, Any]:
    """Parallel composition: a histogram over k disjoint groups costs ε; k queries on the same people kε."""
    return _safe(lessons.parallel(compute.epsilon_param(epsilon), groups))


@router.get("/walkthrough/contribution")
def get_contribution(
    epsilon: Epsilon = 0.5, cap: Annotated[int, Query(description="c, the most rows kept per person")] = 10
) -> dict[str, Any]:
    """The privacy unit: bounding each person to c rows (Δ = c), noise against the bias of the rows dropped."""
    return _safe(lessons.contribution(compute.epsilon_param(epsilon), cap))


@router.get("/walkthrough/noisy-max")
def get_noisy_max(epsilon: Epsilon = 0.5) -> dict[str, Any]:
    """The exponential mechanism (report-noisy-max with Gumbel noise): each category's chance of being chosen."""
    return _safe(lessons.noisy_max(compute.epsilon_param(epsilon)))


@router.get("/walkthrough/deployments")
def get_deployments(epsilon: Epsilon = 0.5) -> dict[str, Any]:
    """Where real deployments put ε (primary sources only), beside the page's ε."""
    return _safe(lessons.deployments(compute.epsilon_param(epsilon)))
