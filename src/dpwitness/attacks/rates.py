"""An attack's empirical rate with its Clopper–Pearson interval, and its comparison with the DP cap.

A rate measured on n runs is an estimate: at n = 2000 a true TPR of 0.002 is seen as 0.0035 more
than one time in twenty. So every rate an attack reports carries its two-sided Clopper–Pearson
interval (:func:`dpwitness.witness.stats.cp_lower` / ``cp_upper``, each end at (1 − confidence)/2),
and is compared with the cap DP puts on it through that interval: *consistent with the cap* when
the interval's lower end is at most the cap, *exceeds the cap* only when the lower end is above it
(then, with probability ≥ confidence, the mechanism does not keep its claim).

SciPy (the ``audit`` extra) computes the intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpwitness.common.errors import ParameterError, require

CONSISTENT = "consistent with the cap"
EXCEEDS = "exceeds the cap"
#: The confidence of every interval an attack reports unless told otherwise.
CONFIDENCE = 0.95


def check_confidence(confidence: float) -> float:
    """``confidence`` as a float in (0, 1), or a :class:`ParameterError` naming it."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 < float(confidence) < 1.0:
        raise ParameterError("confidence", "a number strictly between 0 and 1", confidence)
    return float(confidence)


def interval(hits: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval of a rate seen ``hits`` times in ``n`` runs."""
    require("scipy", "audit", "an attack's confidence intervals")
    from dpwitness.witness.stats import cp_lower, cp_upper

    alpha = (1.0 - check_confidence(confidence)) / 2
    return float(cp_lower(hits, n, alpha)), float(cp_upper(hits, n, alpha))


def upper_end(hits: int, n: int, alpha: float) -> float:
    """The one-sided upper Clopper–Pearson bound at level 1 − ``alpha``."""
    require("scipy", "audit", "an attack's confidence intervals")
    from dpwitness.witness.stats import cp_upper

    return float(cp_upper(hits, n, alpha))


@dataclass(frozen=True)
class RateCheck:
    """``hits`` of ``n`` runs, the interval [``lower``, ``upper``] at ``confidence``, and the DP ``cap``."""

    hits: int
    n: int
    lower: float
    upper: float
    confidence: float
    cap: float

    @property
    def rate(self) -> float:
        return self.hits / self.n

    @property
    def exceeds(self) -> bool:
        """True only when the whole interval lies above the cap."""
        return self.lower > self.cap

    @property
    def verdict(self) -> str:
        return EXCEEDS if self.exceeds else CONSISTENT

    def interval_text(self, digits: int = 4) -> str:
        return f"{self.rate:.{digits}f} [{self.lower:.{digits}f}, {self.upper:.{digits}f}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "hits": self.hits,
            "n": self.n,
            "interval": [self.lower, self.upper],
            "confidence": self.confidence,
            "cap": self.cap,
            "verdict": self.verdict,
        }


def rate_check(hits: int, n: int, cap: float, confidence: float = CONFIDENCE) -> RateCheck:
    """``hits`` of ``n`` runs against ``cap``, with its Clopper–Pearson interval at ``confidence``."""
    if n < 1 or not 0 <= hits <= n:
        raise ParameterError("hits", f"a count in [0, {n}] of n ≥ 1 runs", hits)
    low, high = interval(hits, n, confidence)
    return RateCheck(int(hits), int(n), low, high, check_confidence(confidence), float(cap))
