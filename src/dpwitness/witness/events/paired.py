"""Paired thresholds: on paired runs (common random numbers), thresholds scored by the paired bound."""

from __future__ import annotations

import numpy as np

from dpwitness.witness.events.model import SHRINK, Candidate, Feature, FloatArray
from dpwitness.witness.events.scalar import SortedValues, threshold_event, thresholds_of
from dpwitness.witness.events.vector import summary_features
from dpwitness.witness.stats import paired_projection


def paired_candidates(
    xa: FloatArray,
    xb: FloatArray,
    names: list[str],
    start: int,
    *,
    n_measure: int,
    delta: float,
    alpha: float,
    shrink: float,
) -> list[Candidate]:
    """The best threshold of each coordinate, of the vector summaries and of the coupled shift
    w·x, on paired rows (row k of ``xa`` and of ``xb`` from one generator state), scored by the
    paired bound projected to ``n_measure`` pairs. NaN is in neither side of a threshold."""
    columns = list(range(start, xa.shape[1]))
    features = [Feature(names[j], column=j) for j in columns]
    if len(columns) > 1:
        shift = np.nan_to_num(np.nanmean(xa[:, start:] - xb[:, start:], axis=0) if len(xa) else np.zeros(len(columns)))
        if np.any(shift != 0):
            features.append(Feature("(coupled shift)·X", "weights", weights=shift, start=start))
        features += summary_features(xa, xb, names, start)
    found: list[Candidate] = []
    for feature in features:
        fa, fb = feature(xa), feature(xb)
        found += _paired_thresholds(fa, fb, feature, n_measure=n_measure, delta=delta, alpha=alpha, shrink=shrink)
    return found


def _paired_thresholds(
    fa: FloatArray, fb: FloatArray, feature: Feature, *, n_measure: int, delta: float, alpha: float, shrink: float
) -> list[Candidate]:
    """The best threshold on one feature at ``shrink``, and the best at the stricter ``SHRINK`` when it
    differs: among thresholds of one true ratio (every t ≤ 0 for the noisy max of Laplace noise) the
    lighter shrinkage picks the luckiest, the stricter one the likeliest; the selection's fresh
    counts then choose between the two."""
    found = thresholds_of(SortedValues.of(fa, fb))
    if found is None:
        return []
    ts, hits_a, hits_b = found
    # pairs in the event on both inputs: min(fa, fb) > t, max(fa, fb) ≤ t (NaN, in neither side, sorts last)
    low, high = np.sort(np.minimum(fa, fb)), np.sort(np.maximum(fa, fb))
    low, high = low[~np.isnan(low)], high[~np.isnan(high)]
    above_both = len(low) - np.searchsorted(low, ts, side="right").astype(np.float64)
    both = np.concatenate([above_both, np.searchsorted(high, ts, side="right").astype(np.float64)])
    proposals: list[Candidate] = []
    for level in dict.fromkeys((shrink, SHRINK)):
        options = {"delta": delta, "alpha": alpha, "shrink": level}
        scored = paired_projection(both, hits_a - both, hits_b - both, len(fa), n_measure, **options)
        reverse = paired_projection(both, hits_b - both, hits_a - both, len(fa), n_measure, **options)
        i, j = int(np.argmax(scored[0])), int(np.argmax(reverse[0]))
        index, direction, score = (i, 1, float(scored[0][i])) if scored[0][i] >= reverse[0][j] else (j, -1, float(reverse[0][j]))
        event = threshold_event(ts, index, feature)
        if np.isfinite(score) and all(p.event.description != event.description for p in proposals):
            proposals.append(Candidate(event, direction, "paired thresholds", score))
    return proposals
