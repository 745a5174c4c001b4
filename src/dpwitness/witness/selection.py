"""The witness's δ check of key selection on the distribution really sampled.

A release over undeclared keys (Laplace partition selection, Gaussian thresholding) releases a
key only if its noisy count is ≥ τ. For the neighbours D (without one unit) and D′ (with it),
the unit's own keys, at most L0 of them with counts c_i ≤ Δ∞, exist in D′ only: an output that
names one of them is impossible under D, so its probability under D′ is the δ the selection
costs, and it must be ≤ δ_threshold.

:func:`selection_check` draws the mechanism's own release of those counts (its sampler, its grid,
the threshold compared as the session compares it: noisy count ≥ τ) ``samples`` times with a
fixed seed, counts the runs that release any of the keys, and decides with one-sided
Clopper–Pearson bounds: a violation when the rate's lower bound at confidence 1 − ``alpha`` is
above δ_threshold, "ok" when its upper bound is at or below it, otherwise inconclusive (a
threshold that is exact, as the union bound nearly is for one key, sits at δ itself: its check is
"not a violation", and a wrong τ is one). SciPy (the ``audit`` extra) is needed for the bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_finite
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.witness.stats import cp_lower, cp_upper


@dataclass(frozen=True)
class SelectionCheck:
    """The sampled rate at which a unit's own keys are released, against δ_threshold.

    ``hits`` of ``samples`` runs released at least one of the keys; ``lower``/``upper`` bound the
    rate at confidence 1 − ``alpha`` each; ``delta`` is the δ_threshold claimed.
    """

    hits: int
    samples: int
    delta: float
    lower: float
    upper: float
    alpha: float

    @property
    def rate(self) -> float:
        return self.hits / self.samples

    @property
    def verdict(self) -> str:
        """ "violation" (the rate is above δ with confidence 1 − alpha), "ok" (at or below it), or "inconclusive"."""
        if self.lower > self.delta:
            return "violation"
        return "ok" if self.upper <= self.delta else "inconclusive"

    def __str__(self) -> str:
        return (
            f"selection: {self.hits} of {self.samples} runs released a key only one neighbour holds "
            f"(rate {self.rate:.4g}, in [{self.lower:.4g}, {self.upper:.4g}] at 1 − {self.alpha:g} each side) "
            f"against δ_threshold = {self.delta:.4g}: {self.verdict}"
        )


def selection_check(
    mechanism: Laplace | Gaussian,
    *,
    threshold: float,
    counts: Sequence[float],
    delta: float,
    samples: int = 200_000,
    seed: int = 0,
    alpha: float = 1e-9,
) -> SelectionCheck:
    """Sample how often the keys one unit alone holds pass ``threshold`` under ``mechanism``'s noise.

    :param mechanism: the count's mechanism (a plan's first part), whose release path is sampled.
    :param threshold: τ, compared as the session does (noisy count ≥ τ releases the key).
    :param counts: the unit's count in each of its own keys (≤ L0 keys of ≤ Δ∞ rows: the worst
        case puts Δ∞ in each).
    :param delta: δ_threshold, the probability the release claims for this event.
    :param samples: runs drawn (a fixed count, so the verdict is the same on every machine).
    :param seed: the generator's seed (the draws are seeded: a check, not a release).
    :param alpha: each Clopper–Pearson bound's miss probability (default 1e-9: a false verdict is negligible).
    """
    values = np.asarray([check_finite("counts", float(c)) for c in counts], dtype=np.float64)
    if values.size == 0:
        raise ParameterError("counts", "at least one count (the unit's own keys)", list(counts))
    samples = check_count("samples", samples)
    tau = check_finite("threshold", threshold)
    noisy = replace(mechanism, dimension=values.size).release(values, size=samples, seed=np.random.default_rng(seed))
    runs = np.asarray(noisy.value, dtype=np.float64).reshape(samples, values.size)
    hits = int(np.count_nonzero(np.any(runs >= tau, axis=1)))
    lower = float(cp_lower(hits, samples, alpha))
    upper = float(cp_upper(hits, samples, alpha))
    return SelectionCheck(hits, samples, float(delta), lower, upper, alpha)


__all__ = ["SelectionCheck", "selection_check"]
