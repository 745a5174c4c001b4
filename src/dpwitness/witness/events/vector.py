"""The features of vector outputs: a logistic projection, sums and differences, ties between coordinates."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from dpwitness.witness.events.model import MAX_DIFFERENCES, PROJECTION_ROWS, TIE_PAIRS, TIE_ROWS, Feature, FloatArray


def logistic_direction(xa: FloatArray, xb: FloatArray, rng: np.random.Generator) -> FloatArray | None:
    """Weights w (original units, NaN read as 0) of a logistic regression d vs d' (a few Newton steps)."""
    take = min(len(xa), PROJECTION_ROWS)
    ia = rng.choice(len(xa), take, replace=False) if len(xa) > take else slice(None)
    ib = rng.choice(len(xb), take, replace=False) if len(xb) > take else slice(None)
    x = np.nan_to_num(np.concatenate([xa[ia], xb[ib]]), nan=0.0, posinf=0.0, neginf=0.0)
    y = np.concatenate([np.ones(len(x) // 2), np.zeros(len(x) - len(x) // 2)])
    mean, std = x.mean(axis=0), x.std(axis=0)
    keep = std > 0
    if not np.any(keep):
        return None
    z = np.column_stack([(x[:, keep] - mean[keep]) / std[keep], np.ones(len(x))])
    w = np.zeros(z.shape[1])
    ridge = 1e-6 * len(x) * np.eye(z.shape[1])
    for _ in range(8):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        gradient = z.T @ (y - p) - ridge @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + ridge
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        w += step
        if not np.all(np.isfinite(w)):
            return None
        if np.max(np.abs(step)) < 1e-8:
            break
    weights = np.zeros(x.shape[1])
    weights[keep] = w[:-1] / std[keep]
    return weights if np.any(weights != 0) else None


def vector_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int) -> list[Feature]:
    """Sum (= mean for thresholds), count above the pooled medians, max, min, differences."""
    values = np.concatenate([xa[:, start:], xb[:, start:]])
    if values.shape[1] < 2:
        return []
    medians = np.nanmedian(values, axis=0) if not np.all(np.isnan(values)) else np.zeros(values.shape[1])
    features = [
        Feature("sum(X)", "sum", start=start),
        Feature("#{j: X[j] > median_j}", "above", weights=np.nan_to_num(medians), start=start),
        Feature("max(X)", "max", start=start),
        Feature("min(X)", "min", start=start),
    ]
    columns = list(range(start, xa.shape[1]))
    pairs = [(i, j) for k, i in enumerate(columns) for j in columns[k + 1 :]]
    if len(pairs) > MAX_DIFFERENCES:
        adjacent = list(itertools.pairwise(columns))
        first = [(columns[0], j) for j in columns[2:]]
        pairs = (adjacent + first)[:MAX_DIFFERENCES]
    features += [Feature(f"{names[i]} − {names[j]}", "difference", column=i, other=j) for i, j in pairs]
    return features


def tie_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int, continuous: Sequence[int]) -> list[Feature]:
    """The number of distinct values, the largest group of equal values, and X_i = X_j for the
    pairs of spread-out coordinates (``continuous``: most of their values differ) that are ever
    equal in the search samples (at most ``MAX_DIFFERENCES``). Only for rows with two such
    coordinates or more: a tie between discrete values (two ⊥ of a sparse vector) means nothing."""
    continuous = [j for j in continuous if j >= start]
    if len(continuous) < 2:
        return []
    features = [Feature("#distinct(X)", "distinct", start=start), Feature("largest tie(X)", "largest tie", start=start)]
    ha, hb = xa[:TIE_ROWS], xb[:TIE_ROWS]
    for i, j in itertools.islice(itertools.combinations(continuous, 2), TIE_PAIRS):
        if len(features) >= 2 + MAX_DIFFERENCES:
            break
        if np.any(ha[:, i] == ha[:, j]) or np.any(hb[:, i] == hb[:, j]):
            features.append(Feature(f"{names[i]} = {names[j]}", "equal", column=i, other=j))
    return features


def summary_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int) -> list[Feature]:
    """The sum, count above the pooled medians, max and min of a vector's values (medians from xa, xb)."""
    return vector_features(xa, xb, names, start)[:4]
