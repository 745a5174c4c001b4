"""The differencing attack: Q_{t+1} − Q_t, where Q_i is the sum of the first i rows, is row t.

Against exact answers it recovers the target's value with certainty. Against answers
released with the Laplace mechanism (Δ = U − L for a sum of values clamped to [L, U] under
replace-one, ε per answer), only Q_{t+1} depends on the target, so one query pair costs the
target ε and no test can tell two candidate values of the target apart with probability above
e^ε/(1 + e^ε) (Kairouz, Oh, Viswanath 2015). Repeating the pair r times and averaging helps the
attacker only as the budget allows: the target then loses rε, the accountant charges 2rε,
and the bound becomes e^(rε)/(1 + e^(rε)).

"Recovered" is a two-point test: the attacker decides between the target's true value and
the farthest value allowed by the bounds (the hardest pair for the attacker to confuse is
the one the bound covers), choosing the nearer to its estimate. ``success_probability`` is
that test's accuracy, measured over ``trials`` repetitions with the project's own releases; it
comes with its Clopper–Pearson interval (``success_interval``, 95%) and ``verdict``: "exceeds the
cap" only when the interval's lower end is above ``bound``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.attacks.rates import CONFIDENCE, CONSISTENT, rate_check
from dpwitness.common.validation import check_count, check_finite_vector, check_positive_finite
from dpwitness.mechanisms.additive import Laplace
from dpwitness.privacy.neighbours import check_bounds

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class DifferencingResult:
    estimate: float
    true_value: float
    alternative: float
    recovered: bool
    success_probability: float
    bound: float
    epsilon: float | None
    epsilon_spent: float
    target_loss: float
    repeats: int
    trials: int
    rows: int
    target: int
    #: The Clopper–Pearson interval of ``success_probability`` at ``confidence`` (exact answers: [1, 1]).
    success_interval: tuple[float, float] = (1.0, 1.0)
    confidence: float = CONFIDENCE
    #: "consistent with the cap" or "exceeds the cap" (the interval's lower end above ``bound``).
    verdict: str = CONSISTENT

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["success_interval"] = list(self.success_interval)
        return out


def success_bound(loss: float) -> float:
    """e^ε/(1 + e^ε): the best accuracy of any test between two neighbours at privacy loss ε."""
    if math.isinf(loss):
        return 1.0
    return 1.0 / (1.0 + math.exp(-loss))


def differencing_attack(
    values: npt.ArrayLike,
    *,
    target: int,
    bounds: tuple[float, float],
    epsilon: float | None = None,
    repeats: int = 1,
    seed: int | None = None,
    trials: int = 20_000,
) -> DifferencingResult:
    """Recover row ``target`` (0-based) of ``values`` from the partial sums Q_target and Q_target+1.

    Values are clamped to ``bounds`` = (L, U). With ``epsilon`` None the sums are exact; otherwise
    each is a Laplace release at ``epsilon``, asked ``repeats`` times and averaged, and the success
    probability of the best guess is estimated over ``trials`` simulated attacks; ``seed`` makes
    the run reproducible (NOT for production).
    """
    data = check_finite_vector("values", values)
    low, high = check_bounds(*bounds)
    check_count("target", target, minimum=0, maximum=len(data) - 1, expected=f"a row index in [0, {len(data) - 1}]")
    check_count("repeats", repeats)
    check_count("trials", trials)
    clipped = np.clip(data, low, high)
    before, after = math.fsum(clipped[:target]), math.fsum(clipped[: target + 1])
    true_value = float(clipped[target])
    alternative = low if true_value - low > high - true_value else high
    if epsilon is None:
        estimate = after - before
        return DifferencingResult(
            estimate,
            true_value,
            alternative,
            bool(abs(estimate - true_value) < abs(estimate - alternative)),
            1.0,
            1.0,
            None,
            math.inf,
            math.inf,
            int(repeats),
            1,
            len(data),
            int(target),
        )
    eps = check_positive_finite("epsilon", epsilon)
    mechanism = Laplace(sensitivity=high - low, epsilon=eps)
    rng = np.random.default_rng(seed)
    runs = int(trials) + 1  # the first run is the one reported as `estimate`
    estimates = np.zeros(runs)
    for _ in range(repeats):
        q_after = np.asarray(mechanism.release(after, size=runs, seed=rng).value)
        q_before = np.asarray(mechanism.release(before, size=runs, seed=rng).value)
        estimates += q_after - q_before
    estimates /= repeats
    correct = np.abs(estimates - true_value) < np.abs(estimates - alternative)
    loss = repeats * mechanism.privacy_loss(high - low)
    bound = success_bound(repeats * eps)  # the claim's cap: the target loses at most rε
    check = rate_check(int(correct[1:].sum()), int(trials), bound)
    return DifferencingResult(
        estimate=float(estimates[0]),
        true_value=true_value,
        alternative=alternative,
        recovered=bool(correct[0]),
        success_probability=float(correct[1:].mean()),
        bound=bound,
        epsilon=eps,
        epsilon_spent=2 * repeats * eps,
        target_loss=loss,
        repeats=int(repeats),
        trials=int(trials),
        rows=len(data),
        target=int(target),
        success_interval=(check.lower, check.upper),
        confidence=check.confidence,
        verdict=check.verdict,
    )
