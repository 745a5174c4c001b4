"""The numbers behind the walkthrough's later steps: one ε seen as accuracy and as risk side by side
(after ViP, PETS 2022), randomized response (local) against Laplace (central), group privacy and
the clamp bound's bias–noise trade-off, parallel against sequential composition, the privacy unit
and contribution bounding, the exponential mechanism (report-noisy-max), and where real
deployments put ε.

Every number comes from the project's formulas: the mechanism's scale and interval
(:mod:`dpwitness.mechanisms`), :mod:`dpwitness.privacy.accounting`, the red team's exact ROC
and the planner's posterior bound. Each payload carries the formula behind it, as the page shows it.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_positive_finite
from dpwitness.explorer.compute import ALPHA, CURVE_POINTS, MAX_EPSILON, _laplace_density, count_param, mechanism
from dpwitness.explorer.planner import advantage, posterior
from dpwitness.explorer.redteam import membership_analytic
from dpwitness.privacy.accounting import (
    exponential_mechanism_probabilities,
    gaussian_half_width,
    randomized_response_count_std,
    randomized_response_epsilon,
    randomized_response_truth,
)
from dpwitness.privacy.budget import Accountant
from dpwitness.privacy.neighbours import ContributionBound, Neighbours, row_sensitivity, unit_sensitivity

#: The largest stated total budget of the linked view.
MAX_TOTAL = 100.0
#: The attacker's prior in the linked view: a coin flip between D and D′.
LINKED_PRIOR = 0.5


def total_param(value: Any) -> float:
    total = check_positive_finite("total", value)
    if total > MAX_TOTAL:
        raise ParameterError("total", f"a number in (0, {MAX_TOTAL:g}]", value)
    return float(f"{total:.6g}")


@lru_cache(maxsize=128)
def linked(epsilon: float, sensitivity: float, total: float) -> dict[str, Any]:
    """One ε, four views: the error of a Laplace count (95% half-width b·ln 20), the best test's
    ROC for D against D′ under its ε-DP cap, the posterior from a 50% prior (≤ e^ε/(1 + e^ε)) and
    the budget left of ``total``. Δ = 0 releases the exact answer: no error, no risk, nothing spent."""
    mech = mechanism(sensitivity, epsilon)
    scale = mech.scale
    half_width = mech.interval(ALPHA)
    z = np.linspace(-8.0 * scale, 8.0 * scale, CURVE_POINTS) if scale > 0 else np.array([0.0])
    density = _laplace_density(z, 0.0, scale).tolist() if scale > 0 else [1.0]
    roc = membership_analytic(sensitivity, epsilon)
    spent = epsilon if sensitivity > 0 else 0.0
    doubled = min(2.0 * epsilon, MAX_EPSILON)  # the predict question's "what if ε doubles?"
    return {
        "epsilon": epsilon,
        "sensitivity": sensitivity,
        "error": {
            "scale": scale,
            "half_width": half_width,
            "alpha": ALPHA,
            "z": z.tolist(),
            "density": density,
            "formula": r"$b = \Delta/\varepsilon,\quad \Pr[\lvert z - f(D) \rvert > w] = 5\% \iff w = b \ln 20$",
        },
        "roc": {
            "fpr": roc["roc"]["fpr"],
            "tpr": roc["roc"]["tpr"],
            "bound_fpr": roc["bound"]["fpr"],
            "bound_tpr": roc["bound"]["tpr"],
            "tpr_at_1pct": roc["tpr_at_1pct"],
            "tpr_cap_at_1pct": roc["tpr_cap_at_1pct"],
            "advantage_cap": advantage(epsilon),
            "formula": (
                r"$\mathrm{TPR} \le e^{\varepsilon}\,\mathrm{FPR},\quad "
                r"1 - \mathrm{FPR} \ge e^{\varepsilon}\,(1 - \mathrm{TPR})$"
            ),
        },
        "posterior": {
            "prior": LINKED_PRIOR,
            "bound": posterior(LINKED_PRIOR, spent),
            "curve_prior": np.linspace(0.0, 1.0, 101).tolist(),
            "curve_posterior": [posterior(float(p), spent) for p in np.linspace(0.0, 1.0, 101)],
            "formula": (
                r"$\Pr[D \mid z] \le \dfrac{p\,e^{\varepsilon}}{1 - p + p\,e^{\varepsilon}}"
                r" = \dfrac{e^{\varepsilon}}{1 + e^{\varepsilon}} \quad (p = \tfrac{1}{2})$"
            ),
        },
        "doubled": {
            "epsilon": doubled,
            "half_width": mechanism(sensitivity, doubled).interval(ALPHA),
            "posterior": posterior(LINKED_PRIOR, doubled if sensitivity > 0 else 0.0),
        },
        "budget": {
            "total": total,
            "spent": spent,
            "left": max(0.0, total - spent),
            "releases": math.inf if spent == 0 else math.floor(total / spent + 1e-9),
            "over": spent > total,
            "formula": r"$T - \varepsilon \ge 0,\quad k = \lfloor T/\varepsilon \rfloor$",
        },
    }


#: Randomized response's example: how many of n people say yes, and which share truly would.
RR_PEOPLE = (10, 100_000)
RR_TRUE_SHARE = 0.3


@lru_cache(maxsize=128)
def randomized_response(epsilon: float, people: int) -> dict[str, Any]:
    """Each person flips their own answer (local) or a trusted curator adds Laplace noise to the
    count (central), both at ε: the truth probability p = tanh(ε/2), the likelihood ratio
    (1 + p)/(1 − p) = e^ε, and the 95% half-widths of the two counts' errors against n."""
    people = count_param(people, "people", *RR_PEOPLE)
    truth = randomized_response_truth(epsilon)
    yes_if_yes, yes_if_no = (1.0 + truth) / 2.0, (1.0 - truth) / 2.0
    z95 = -NormalDist().inv_cdf(ALPHA / 2.0)
    central = mechanism(1.0, epsilon).interval(ALPHA)
    local_std = randomized_response_count_std(people, epsilon)
    sizes = np.unique(np.round(np.geomspace(RR_PEOPLE[0], RR_PEOPLE[1], 61))).astype(int).tolist()
    return {
        "epsilon": epsilon,
        "people": people,
        "true_share": RR_TRUE_SHARE,
        "truth": truth,
        "epsilon_of_truth": randomized_response_epsilon(truth),
        "yes_if_yes": yes_if_yes,
        "yes_if_no": yes_if_no,
        "ratio": yes_if_yes / yes_if_no,
        "local_std": local_std,
        "local_half_width": gaussian_half_width(local_std, ALPHA),
        "central_std": mechanism(1.0, epsilon).std,
        "central_half_width": central,
        "sizes": sizes,
        "local_curve": [z95 * randomized_response_count_std(n, epsilon) for n in sizes],
        "central_curve": [central for _ in sizes],
        "formula_truth": r"$p = \tanh(\varepsilon/2),\quad \varepsilon = \ln\dfrac{1+p}{1-p}$",
        "formula_answers": r"$\Pr[1 \mid 1] = \tfrac{1+p}{2},\quad \Pr[1 \mid 0] = \tfrac{1-p}{2}$",
        "formula_local": (
            r"$\hat{c} = \dfrac{Y - n(1-p)/2}{p},\quad \sigma = \dfrac{\sqrt{n(1-p^2)}}{2p},\quad w \approx 1.96\,\sigma$"
        ),
        "formula_central": r"$c + \mathrm{Lap}(1/\varepsilon),\quad w = \ln(20)/\varepsilon$",
    }


MAX_GROUP = 20


@lru_cache(maxsize=128)
def group(epsilon: float, size: int) -> dict[str, Any]:
    """A group of k people (a family, one user's k rows) moves a count by up to k: the Laplace release
    calibrated for one person spends privacy_loss(k) ≈ kε on them, and their likelihood ratio is e^(kε)."""
    size = count_param(size, "size", 1, MAX_GROUP)
    mech = mechanism(1.0, epsilon)
    sizes = list(range(1, MAX_GROUP + 1))
    losses = [mech.privacy_loss(float(k)) for k in sizes]
    return {
        "epsilon": epsilon,
        "size": size,
        "loss": losses[size - 1],
        "factor": math.exp(min(losses[size - 1], 700.0)),
        "posterior": posterior(LINKED_PRIOR, losses[size - 1]),
        "sizes": sizes,
        "losses": losses,
        "formula": r"$\lvert D \,\triangle\, D' \rvert = k \implies p(z \mid D) \le e^{k\varepsilon}\, p(z \mid D')$",
    }


#: The clamp step's fixed, public example: n incomes (thousands), quantiles of a log-normal.
CLAMP_PEOPLE = 100
CLAMP_MEDIAN = 30.0
CLAMP_SPREAD = 0.8
CLAMP_RANGE = (1.0, 1000.0)


@lru_cache(maxsize=1)
def clamp_incomes() -> list[float]:
    """The public example distribution (fixed, no randomness): incomes in thousands."""
    normal = NormalDist(math.log(CLAMP_MEDIAN), CLAMP_SPREAD)
    return [math.exp(normal.inv_cdf((i + 0.5) / CLAMP_PEOPLE)) for i in range(CLAMP_PEOPLE)]


@lru_cache(maxsize=256)
def clamp(epsilon: float, bound: float) -> dict[str, Any]:
    """Mean income with every value clamped to [0, C], n public: Δ = C/n, b = C/(nε). The clamp's bias
    (mean of the clamped values − the true mean) against the noise's std √2·b, and the root mean
    squared error √(bias² + 2b²) against C, with its smallest value on the grid."""
    bound = check_positive_finite("bound", bound)
    if not CLAMP_RANGE[0] <= bound <= CLAMP_RANGE[1]:
        raise ParameterError("bound", f"a number in [{CLAMP_RANGE[0]:g}, {CLAMP_RANGE[1]:g}]", bound)
    incomes = np.array(clamp_incomes())
    unit = mechanism(1.0, epsilon)  # the scale and variance grow linearly with Δ = C/n
    true_mean = float(np.mean(incomes))

    def parts(c: float) -> tuple[float, float, float]:
        bias = float(np.mean(np.minimum(incomes, c))) - true_mean
        std = unit.std * c / CLAMP_PEOPLE
        return bias, std, math.sqrt(bias * bias + std * std)

    bounds = np.geomspace(CLAMP_RANGE[0], CLAMP_RANGE[1], 241).tolist()
    curves = [parts(c) for c in bounds]
    best = int(np.argmin([r for _, _, r in curves]))
    bias, std, rmse = parts(bound)
    return {
        "epsilon": epsilon,
        "bound": bound,
        "people": CLAMP_PEOPLE,
        "true_mean": true_mean,
        "largest": float(incomes[-1]),
        "sensitivity": bound / CLAMP_PEOPLE,
        "scale": unit.scale * bound / CLAMP_PEOPLE,
        "bias": bias,
        "noise_std": std,
        "rmse": rmse,
        "bounds": bounds,
        "bias_curve": [abs(b) for b, _, _ in curves],
        "noise_curve": [s for _, s, _ in curves],
        "rmse_curve": [r for _, _, r in curves],
        "best_bound": bounds[best],
        "best_rmse": curves[best][2],
        "incomes_quantiles": [float(np.quantile(incomes, q)) for q in (0.5, 0.9, 0.99)],
        "formula": r"$\Delta = C/n,\quad b = C/(n\varepsilon),\quad \sqrt{\mathrm{bias}(C)^2 + 2b^2}$",
    }


#: The parallel-composition step: a histogram over k disjoint groups against k queries on the same people.
MAX_GROUPS = 20


@lru_cache(maxsize=128)
def parallel(epsilon: float, groups: int) -> dict[str, Any]:
    """A histogram over k disjoint groups (one person is in one group) at ε per group: its L1 Δ is 1
    whatever k (``neighbours.unit_sensitivity``, grouped, one row per person), so one person loses ε.
    k counts of the same people at ε each: the accountant's kε (basic composition). At one total ε
    the k sequential queries get ε/k each, so each count's 95% half-width is k times wider."""
    groups = count_param(groups, "groups", 1, MAX_GROUPS)
    one_row = ContributionBound.of(1)
    histogram_delta = unit_sensitivity(Neighbours.ADD_REMOVE, 0.0, 1.0, one_row, grouped=True)
    count_delta = unit_sensitivity(Neighbours.ADD_REMOVE, 0.0, 1.0, one_row, grouped=False)
    histogram = mechanism(histogram_delta, epsilon)
    count = mechanism(count_delta, epsilon)
    parallel_loss = histogram.privacy_loss(histogram_delta)
    accountant = Accountant()
    sequential = []
    for k in range(1, MAX_GROUPS + 1):
        accountant.spend(count.privacy_loss(count_delta), f"count {k}")
        sequential.append(accountant.spent.epsilon)
    sizes = list(range(1, MAX_GROUPS + 1))
    return {
        "epsilon": epsilon,
        "groups": groups,
        "histogram_sensitivity": histogram_delta,
        "parallel_loss": parallel_loss,
        "sequential_loss": sequential[groups - 1],
        "half_width": histogram.interval(ALPHA),
        "split_half_width": mechanism(count_delta, epsilon / groups).interval(ALPHA),
        "sizes": sizes,
        "parallel_curve": [parallel_loss for _ in sizes],
        "sequential_curve": sequential,
        "formula": (
            r"$D = D_1 \sqcup \cdots \sqcup D_k:\ \max_i \varepsilon_i = \varepsilon;"
            r"\qquad q_1(D), \dots, q_k(D):\ \textstyle\sum_{i=1}^{k} \varepsilon_i = k\varepsilon$"
        ),
    }


#: The privacy-unit step's fixed, public example: rows per person, the quantiles of a geometric
#: distribution on {1, 2, …} with mean 1/p = 5 (most people have a few rows, a few have many).
UNIT_PEOPLE = 1000
UNIT_ROWS_P = 0.2
MAX_CAP = 40
#: Each row's amount lies in [0, UNIT_AMOUNT] for the sum the step names beside the count.
UNIT_AMOUNT = 50.0


@lru_cache(maxsize=1)
def unit_rows() -> list[int]:
    """Rows per person (fixed, no randomness): the (i + ½)/n quantiles of Geometric(p) on {1, 2, …}."""
    per = math.log1p(-UNIT_ROWS_P)
    return [max(1, math.ceil(math.log1p(-(i + 0.5) / UNIT_PEOPLE) / per - 1e-12)) for i in range(UNIT_PEOPLE)]


@lru_cache(maxsize=256)
def contribution(epsilon: float, cap: int) -> dict[str, Any]:
    """The count of rows (visits) with each person bounded to at most c rows: Δ = c
    (``neighbours.unit_sensitivity``; a sum of amounts in [0, U] has Δ = c·U). The rows dropped by
    the bound are the bias, −Σ max(0, r − c); the noise's std is √2·c/ε; the error √(bias² + 2b²)
    against c, with its smallest value."""
    cap = count_param(cap, "cap", 1, MAX_CAP)
    rows = np.array(unit_rows())

    def parts(c: int) -> tuple[float, float, float, float]:
        delta = unit_sensitivity(Neighbours.ADD_REMOVE, 0.0, 1.0, ContributionBound.of(c), grouped=False)
        bias = -float(np.sum(np.maximum(rows - c, 0)))
        std = mechanism(delta, epsilon).std
        return delta, bias, std, math.sqrt(bias * bias + std * std)

    caps = list(range(1, MAX_CAP + 1))
    curves = [parts(c) for c in caps]
    best = int(np.argmin([r for *_, r in curves]))
    delta, bias, std, rmse = curves[cap - 1]
    return {
        "epsilon": epsilon,
        "cap": cap,
        "people": UNIT_PEOPLE,
        "mean_rows": float(np.mean(rows)),
        "median_rows": float(np.median(rows)),
        "largest": int(rows.max()),
        "true_total": int(rows.sum()),
        "rows_p": UNIT_ROWS_P,
        "sensitivity": delta,
        "amount": UNIT_AMOUNT,
        "sum_sensitivity": unit_sensitivity(Neighbours.ADD_REMOVE, 0.0, UNIT_AMOUNT, ContributionBound.of(cap), grouped=False),
        "bias": bias,
        "dropped_people": int(np.sum(rows > cap)),
        "noise_std": std,
        "rmse": rmse,
        "caps": caps,
        "bias_curve": [abs(b) for _, b, _, _ in curves],
        "noise_curve": [s for _, _, s, _ in curves],
        "rmse_curve": [r for *_, r in curves],
        "best_cap": caps[best],
        "best_rmse": curves[best][3],
        "formula": (
            r"$\Delta = c \cdot \max(\lvert L \rvert, \lvert U \rvert)\ \ ([L, U] = [0, 1]:\ \Delta = c),"
            r"\qquad B(c) = -\textstyle\sum_p \max(0,\, r_p - c)$"
        ),
    }


#: The exponential mechanism's example: how many people name each category (fixed, public).
CHOICE_COUNTS = (48, 45, 30, 12, 5)


@lru_cache(maxsize=128)
def noisy_max(epsilon: float) -> dict[str, Any]:
    """Choose the most common category privately: the exponential mechanism with the counts as
    scores (Δ = 1: one person adds or removes one answer) picks category i with probability
    ∝ exp(ε·count_i/(2Δ)) (``accounting.exponential_mechanism_probabilities``); report-noisy-max
    with Gumbel(2Δ/ε) noise picks with the same probabilities. Also the top category's chance against ε."""
    delta = row_sensitivity(Neighbours.ADD_REMOVE, 0.0, 1.0, grouped=False)
    probabilities = exponential_mechanism_probabilities(CHOICE_COUNTS, epsilon, delta)
    grid = np.geomspace(0.01, 100.0, 121).tolist()
    return {
        "epsilon": epsilon,
        "sensitivity": delta,
        "counts": list(CHOICE_COUNTS),
        "probabilities": probabilities,
        "top": int(np.argmax(CHOICE_COUNTS)),
        "epsilons": grid,
        "top_curve": [exponential_mechanism_probabilities(CHOICE_COUNTS, e, delta)[0] for e in grid],
        "gumbel_scale": 2.0 * delta / epsilon,
        "formula": (
            r"$\Pr[i] = \dfrac{e^{\varepsilon u_i / (2\Delta)}}{\sum_j e^{\varepsilon u_j / (2\Delta)}}"
            r" = \Pr\big[i = \arg\max_j\, (u_j + G_j)\big],\ G_j \sim \mathrm{Gumbel}(2\Delta/\varepsilon)$"
        ),
    }


#: Where real deployments put ε: only figures checked against their primary public source.
DEPLOYMENTS: tuple[dict[str, Any], ...] = (
    {
        "key": "google_vaccination",
        "epsilon": 2.19,
        "delta": 1e-5,
        "unit": "user",
        "period": "day",
        "url": "https://arxiv.org/abs/2107.01179",
    },
    {
        "key": "google_covid_trends",
        "epsilon": 1.68,
        "delta": 0.0,
        "unit": "user",
        "period": "day",
        "url": "https://arxiv.org/abs/2009.01265",
    },
    {
        "key": "linkedin",
        "epsilon": 34.9,
        "delta": 7e-9,
        "unit": "member",
        "period": "month",
        "url": "https://arxiv.org/abs/2002.05839",
    },
)


@lru_cache(maxsize=128)
def deployments(epsilon: float) -> dict[str, Any]:
    """Each deployment's published ε (and δ) with the likelihood-ratio bound e^ε and how far a 50%
    prior may rise (the planner's ``posterior``), beside the page's ε."""
    rows = [
        {
            **row,
            "factor": math.exp(min(row["epsilon"], 700.0)),
            "posterior": posterior(LINKED_PRIOR, row["epsilon"]),
            "posterior_gap": 1.0 / (1.0 + math.exp(min(row["epsilon"], 700.0))),  # 1 − posterior, without cancellation
        }
        for row in sorted(DEPLOYMENTS, key=lambda r: r["epsilon"])
    ]
    return {
        "epsilon": epsilon,
        "factor": math.exp(epsilon),
        "posterior": posterior(LINKED_PRIOR, epsilon),
        "deployments": rows,
        "formula": r"$\Pr[D \mid z] \le \dfrac{e^{\varepsilon}}{1 + e^{\varepsilon}} \quad (p = \tfrac{1}{2})$",
    }
