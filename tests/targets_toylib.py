"""A small DP library written the way people write one (the hook machinery's test subject).

It knows nothing of dpwitness: numpy noise, a float sum added up row by row, a per-key count.
"""

from __future__ import annotations

import numpy as np


class LaplaceNoise:
    """Laplace noise of scale sensitivity/epsilon (float noise, as such libraries often do)."""

    def __init__(self, epsilon: float, sensitivity: float, rng: np.random.Generator | None = None) -> None:
        if epsilon <= 0 or sensitivity < 0:
            raise ValueError("epsilon must be > 0 and sensitivity ≥ 0")
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.rng = rng or np.random.default_rng()

    def randomise(self, value: float) -> float:
        return float(value + self.rng.laplace(0.0, self.sensitivity / self.epsilon))


class ClampedLaplace(LaplaceNoise):
    """Laplace noise, then clamped to [lower, upper] (calls its parent's randomise)."""

    def __init__(self, epsilon: float, sensitivity: float, lower: float, upper: float) -> None:
        super().__init__(epsilon, sensitivity)
        self.lower, self.upper = lower, upper

    def randomise(self, value: float) -> float:
        return min(max(super().randomise(value), self.lower), self.upper)


def private_sum(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """Sum of the values clamped to [lower, upper], plus Laplace noise for Δ = max(|lower|, |upper|)."""
    total = 0.0
    for value in values:
        if value == value:  # skip NaN
            total += min(max(value, lower), upper)
    return LaplaceNoise(epsilon, max(abs(lower), abs(upper))).randomise(total)


def exact_private_sum(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """The same sum, computed exactly before the one rounding (math.fsum): its Δ holds."""
    import math

    clamped = [min(max(v, lower), upper) for v in values if v == v]
    return LaplaceNoise(epsilon, max(abs(lower), abs(upper))).randomise(math.fsum(clamped))


def count_by_key(keys: list[str], *, epsilon: float) -> dict[str, float]:
    """A noisy count for every key present (one noise call per key seen: the key set leaks)."""
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return {key: LaplaceNoise(epsilon, 1.0).randomise(count) for key, count in sorted(counts.items())}


def clamped_mean(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """A mean with its noise clamped to the bounds (nested randomise calls)."""
    n = max(len(values), 1)
    total = sum(min(max(v, lower), upper) for v in values)
    return ClampedLaplace(epsilon, (upper - lower), lower, upper).randomise(total / n)


class VectorLaplace:
    """Laplace noise on a vector of numbers, one draw per coordinate, for an L1 sensitivity."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon, self.sensitivity = epsilon, sensitivity
        self.rng = np.random.default_rng()

    def randomise(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float) + self.rng.laplace(0.0, self.sensitivity / self.epsilon, len(values))


def sum_by_key(
    keys: list[object],
    values: list[float],
    *,
    lower: float,
    upper: float,
    epsilon: float,
    public_keys: list[object] | None = None,
) -> dict[object, float]:
    """A noisy sum per key, one vector of noise for them all (each record clamped, each sum exact
    before its one rounding, Δ = max(|lower|, |upper|)).

    With ``public_keys`` the released keys are those (records of other keys are dropped); without,
    they are the keys found in the data, in order of appearance (no partition selection).
    """
    import math

    released = list(dict.fromkeys(keys)) if public_keys is None else list(public_keys)
    groups: dict[object, list[float]] = {key: [] for key in released}
    for key, value in zip(keys, values, strict=True):
        if key in groups and value == value:  # NaN skipped
            groups[key].append(min(max(value, lower), upper))
    totals = np.array([math.fsum(groups[key]) for key in released])
    noisy = VectorLaplace(epsilon, max(abs(lower), abs(upper))).randomise(totals)
    return dict(zip(released, noisy.tolist(), strict=True))


def group_totals(
    keys: list[object], values: list[float], *, public_keys: list[object], lower: float, upper: float, epsilon: float
) -> dict[object, float]:
    """A noisy total per public key: each group's total starts at its first record, then adds the others clamped.

    (The first record of a group is never clamped: a record that opens a new group moves its total
    by its whole value, beyond the declared Δ.)
    """
    totals: dict[object, float] = {}
    for key, value in zip(keys, values, strict=True):
        if key not in public_keys or value != value:  # other keys and NaN skipped
            continue
        if key in totals:
            totals[key] += min(max(value, lower), upper)
        else:
            totals[key] = value
    vector = np.array([totals.get(key, 0.0) for key in public_keys])
    noisy = VectorLaplace(epsilon, max(abs(lower), abs(upper))).randomise(vector)
    return dict(zip(public_keys, noisy.tolist(), strict=True))
