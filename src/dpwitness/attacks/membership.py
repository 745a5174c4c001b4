"""Likelihood-ratio membership inference against a released mean (Carlini et al. 2022, exact form).

Setting (add/remove neighbours): the attacker knows every record of the population except
whether the target is in it, and sees one release of the mean of the clamped values
computed as a noisy sum over a public cohort size (the sum gets Laplace noise with
Δ = max(|L|, |U|); dividing by the public n is post-processing). It scores each release by the
exact log likelihood ratio log p(y | in) − log p(y | out) of the Laplace mechanism, which is
the most powerful test (Neyman–Pearson); that ratio is a non-decreasing function of y, so
thresholding y itself is the same test with the ties of its flat tails broken, and sweeping
the threshold gives the whole ROC curve.

ε-DP caps every such test: TPR ≤ e^ε·FPR and 1 − FPR ≤ e^ε·(1 − TPR), hence the advantage
TPR − FPR ≤ (e^ε − 1)/(e^ε + 1) = tanh(ε/2), and the likelihood ratio is at most e^ε.

Every rate is an estimate from ``trials`` releases each way, and so is the FPR of a threshold:
the threshold that lets k of the n releases without the target through has a true FPR that is
Beta(k + 1, n − k), not k/n. :meth:`MembershipResult.tpr_check` therefore compares the TPR's
Clopper–Pearson interval with the cap *at the upper Clopper–Pearson end of that FPR*, each at
(1 − confidence)/2, so "exceeds the cap" is wrong with probability at most 1 − confidence
(Bonferroni). The advantage is a maximum over thresholds; its interval is the uniform DKW band
(Massart's constant) of both empirical distributions, not a Clopper–Pearson interval.

:meth:`MembershipResult.to_dict` (and the CLI) report four such comparisons (the TPR at each of
:data:`LEVELS` and the advantage); each is made at 1 − (1 − 0.95)/4, so the report's verdicts are
jointly right with probability ≥ 95% (a mechanism exactly at its cap is flagged in at most one
run in twenty), whatever the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.attacks.rates import CONFIDENCE, CONSISTENT, EXCEEDS, RateCheck, check_confidence, rate_check, upper_end
from dpwitness.common.validation import check_count, check_finite, check_finite_vector, check_positive_finite
from dpwitness.mechanisms.additive import Laplace
from dpwitness.privacy.neighbours import Neighbours, check_bounds, sum_sensitivity

FloatArray = npt.NDArray[np.float64]


def tpr_bound(fpr: npt.ArrayLike, epsilon: float, delta: float = 0.0) -> FloatArray:
    """The largest TPR any test can reach at false-positive rate ``fpr`` (a number or an array)
    against an (``epsilon``, ``delta``)-DP release."""
    f = np.asarray(fpr, dtype=np.float64)
    e = math.exp(epsilon)
    return np.asarray(np.minimum.reduce([np.ones_like(f), e * f + delta, 1.0 - (1.0 - f - delta) / e]), dtype=np.float64)


#: The false-positive rates at which the TPR is reported.
LEVELS = (1e-3, 1e-2, 0.1)
#: The confidence of each of the report's four comparisons (TPR at LEVELS, advantage): 95% jointly.
REPORT_CONFIDENCE = 1.0 - (1.0 - CONFIDENCE) / (len(LEVELS) + 1)


@dataclass(frozen=True)
class TprCheck:
    """The TPR at a false-positive ``level``: the threshold's own (estimated) FPR and the TPR against the cap.

    ``false_positives`` of ``negatives`` releases without the target pass the threshold; the
    threshold's true FPR is at most ``fpr_upper`` (one-sided Clopper–Pearson at (1 − confidence)/2);
    ``tpr.cap`` is the ε-DP cap at ``fpr_upper``, ``cap_at_level`` the cap at ``level`` itself.
    """

    level: float
    false_positives: int
    negatives: int
    fpr_upper: float
    cap_at_level: float
    tpr: RateCheck

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "fpr": self.fpr,
            "false_positives": self.false_positives,
            "negatives": self.negatives,
            "fpr_upper": self.fpr_upper,
            "cap_at_level": self.cap_at_level,
            "tpr": self.tpr.rate,
            "tpr_interval": [self.tpr.lower, self.tpr.upper],
            "cap_at_fpr_upper": self.tpr.cap,
            "confidence": self.tpr.confidence,
            "verdict": self.tpr.verdict,
        }


@dataclass(frozen=True)
class MembershipResult:
    epsilon: float
    auc: float
    advantage: float
    bound: float
    likelihood_ratio_bound: float
    trials: int
    population: int
    target_value: float
    #: The loss this particular target suffers, |value|/b ≤ ε: the attack can reach e^target_loss, not more.
    target_loss: float
    scores_in: FloatArray = field(repr=False)
    scores_out: FloatArray = field(repr=False)
    releases_in: FloatArray = field(repr=False)
    releases_out: FloatArray = field(repr=False)

    @property
    def roc(self) -> tuple[FloatArray, FloatArray]:
        """(fpr, tpr) over every threshold of the likelihood-ratio score, from (0, 0) to (1, 1)."""
        return _roc(self.scores_in, self.scores_out)

    def tpr_at_fpr(self, fpr: float) -> float:
        """The best empirical TPR at an FPR of at most ``fpr``."""
        f, t = self.roc
        return float(t[f <= fpr + 1e-12].max())

    def tpr_check(self, level: float, *, confidence: float = CONFIDENCE, epsilon: float | None = None) -> TprCheck:
        """The best empirical TPR at an FPR of at most ``level``, its interval and the ε-DP cap it is held to.

        The cap is taken at the upper Clopper–Pearson end of the threshold's FPR (the FPR is itself
        estimated from ``trials`` releases without the target), the TPR's interval two-sided; each
        end at (1 − ``confidence``)/2. ``epsilon`` (default: the release's) is the ε of the cap.
        """
        conf = check_confidence(confidence)
        eps = self.epsilon if epsilon is None else check_positive_finite("epsilon", epsilon)
        f, t = self.roc
        allowed = np.flatnonzero(f <= level + 1e-12)
        best = int(allowed[np.argmax(t[allowed])])
        negatives, positives = len(self.scores_out), len(self.scores_in)
        false_positives = round(float(f[best]) * negatives)
        hits = round(float(t[best]) * positives)
        fpr_upper = upper_end(false_positives, negatives, (1.0 - conf) / 2)
        cap = float(tpr_bound(fpr_upper, eps))
        return TprCheck(
            level, false_positives, negatives, fpr_upper, float(tpr_bound(level, eps)), rate_check(hits, positives, cap, conf)
        )

    def advantage_interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The advantage's interval: the empirical maximum ± the DKW widths of both samples (each at (1 − confidence)/2)."""
        alpha = (1.0 - check_confidence(confidence)) / 2
        width = sum(math.sqrt(math.log(2.0 / alpha) / (2.0 * len(s))) for s in (self.scores_in, self.scores_out))
        return max(self.advantage - width, 0.0), min(self.advantage + width, 1.0)

    def to_dict(self) -> dict[str, Any]:
        levels = LEVELS
        advantage_low, advantage_high = self.advantage_interval(REPORT_CONFIDENCE)
        return {
            "epsilon": self.epsilon,
            "auc": self.auc,
            "advantage": self.advantage,
            "advantage_interval": [advantage_low, advantage_high],
            "advantage_verdict": EXCEEDS if advantage_low > self.bound else CONSISTENT,
            "bound": self.bound,
            "likelihood_ratio_bound": self.likelihood_ratio_bound,
            "confidence": REPORT_CONFIDENCE,
            "joint_confidence": CONFIDENCE,
            "tpr_at_fpr": {f"{f:g}": self.tpr_at_fpr(f) for f in levels},
            "tpr_bound_at_fpr": {f"{f:g}": float(tpr_bound(f, self.epsilon)) for f in levels},
            "tpr_check": {f"{f:g}": self.tpr_check(f, confidence=REPORT_CONFIDENCE).to_dict() for f in levels},
            "trials": self.trials,
            "population": self.population,
            "target_value": self.target_value,
            "target_loss": self.target_loss,
            "tpr_bound_for_this_target": {f"{f:g}": float(tpr_bound(f, self.target_loss)) for f in levels},
        }


def _roc(scores_in: FloatArray, scores_out: FloatArray) -> tuple[FloatArray, FloatArray]:
    thresholds = np.unique(np.concatenate([scores_in, scores_out]))[::-1]
    sorted_in, sorted_out = np.sort(scores_in), np.sort(scores_out)
    tpr = (len(sorted_in) - np.searchsorted(sorted_in, thresholds, side="left")) / len(sorted_in)
    fpr = (len(sorted_out) - np.searchsorted(sorted_out, thresholds, side="left")) / len(sorted_out)
    return np.concatenate([[0.0], fpr, [1.0]]), np.concatenate([[0.0], tpr, [1.0]])


def membership_attack(
    population: npt.ArrayLike,
    *,
    target_value: float,
    bounds: tuple[float, float],
    epsilon: float,
    trials: int = 2000,
    seed: int | None = None,
) -> MembershipResult:
    """Run ``trials`` releases with the target in and ``trials`` with it out; score each by the exact LR.

    ``population`` is every record but the target's, whose value is ``target_value``; values are
    clamped to ``bounds`` = (L, U) and the released sum (over a public cohort size) gets Laplace
    noise at ``epsilon``; ``seed`` makes the run reproducible (NOT for production).
    """
    data = check_finite_vector("population", population)
    low, high = check_bounds(*bounds)
    target = float(np.clip(check_finite("target_value", target_value), low, high))
    eps = check_positive_finite("epsilon", epsilon)
    check_count("trials", trials, minimum=10)
    mechanism = Laplace(sensitivity=sum_sensitivity(Neighbours.ADD_REMOVE, low, high), epsilon=eps)
    cohort = len(data) + 1  # public cohort size: the denominator of the released mean
    sum_out = math.fsum(np.clip(data, low, high))
    sum_in = sum_out + target
    rng = np.random.default_rng(seed)
    y_in = np.asarray(mechanism.release(sum_in, size=int(trials), seed=rng).value)
    y_out = np.asarray(mechanism.release(sum_out, size=int(trials), seed=rng).value)
    # The Laplace LR is a non-decreasing function of the release (signed towards "in"), flat
    # beyond both sums; scoring by the release itself is the same test with its ties broken,
    # which reaches the cap TPR = e^ε·FPR at small FPR instead of jumping over it.
    direction = 1.0 if sum_in >= sum_out else -1.0
    scores_in, scores_out = direction * y_in, direction * y_out
    fpr, tpr = _roc(scores_in, scores_out)
    auc = float(np.trapezoid(tpr, fpr))
    return MembershipResult(
        epsilon=eps,
        auc=auc,
        advantage=float(np.max(tpr - fpr)),
        bound=math.tanh(eps / 2),
        likelihood_ratio_bound=math.exp(eps),
        trials=int(trials),
        population=len(data),
        target_value=target,
        target_loss=mechanism.privacy_loss(abs(target)),
        scores_in=scores_in,
        scores_out=scores_out,
        releases_in=y_in / cohort,
        releases_out=y_out / cohort,
    )
