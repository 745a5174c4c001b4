"""Events that separate two output distributions, and the search for the best one.

An event E is a yes/no question about one output (``X > t``, ``X ∈ S``, ``w·x > t``…).
The auditor picks, on one set of samples, the event whose *projected* ε lower bound at
the measurement sample size is largest (so it prefers a likely event with a ratio of e^ε
to a rare one with the same ratio: that is what makes the bound tight), then measures it
on fresh samples.  Families:

* thresholds ``X_j > t`` / ``X_j ≤ t`` on each coordinate, swept over quantiles;
* value sets for discrete outputs: values ordered by their likelihood ratio and every
  prefix tried (the Neyman–Pearson family), per coordinate and on whole rows;
* a learned projection for vectors: a logistic-regression score (a density-ratio
  estimate, as in DP-Sniper) thresholded like a scalar;
* in floating-point mode, value sets on the bit pattern of each output (the position of
  its lowest set bit, with and without its exponent): porous supports show up there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dpwitness.witness.stats import wilson_bounds

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Quantile thresholds tried per coordinate (plus every distinct value when there are few).
THRESHOLDS = 4001
#: A coordinate (or a whole row) with at most this many distinct values is treated as discrete.
DISCRETE_LIMIT = 4096
#: Shrinkage level of the search-sample estimates (one-sided, about one standard deviation).
SHRINK = 0.01
#: Rows used to fit the logistic projection.
PROJECTION_ROWS = 20_000


def _names(columns: int) -> list[str]:
    return ["X"] if columns == 1 else [f"X[{j}]" for j in range(columns)]


def row_keys(values: npt.NDArray[np.generic]) -> npt.NDArray[np.void]:
    """One hashable, sortable key per row (−0.0 folded into 0.0)."""
    rows = np.ascontiguousarray(values + 0 if values.dtype.kind == "f" else values)
    if rows.ndim == 1:
        rows = rows[:, None]
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def lowest_bit(values: FloatArray) -> npt.NDArray[np.int64]:
    """Exponent of the lowest set bit of each double (−2000 for zero): y ∈ 2^k·ℤ for k ≤ it."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    exponent = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    fraction = bits & np.uint64((1 << 52) - 1)
    significand = np.where(exponent > 0, fraction | np.uint64(1 << 52), fraction)
    lowest = significand & (~significand + np.uint64(1))
    zeros = np.bitwise_count(lowest - np.uint64(1)).astype(np.int64)
    power = np.where(exponent > 0, exponent, 1) - 1075
    return np.where(significand == 0, -2000, power + zeros)


def exponent_and_lowest_bit(values: FloatArray) -> npt.NDArray[np.int64]:
    """(sign, binary exponent, lowest set bit) packed in one integer."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    exponent = ((bits >> np.uint64(52)) & np.uint64(0x7FFF)).astype(np.int64)  # sign bit included
    return exponent * 4096 + lowest_bit(values) + 2048


@dataclass(frozen=True)
class Event:
    """A yes/no question about one output; ``contains`` answers it for a batch of rows."""

    kind: str
    description: str
    column: int = -1
    above: bool = True
    threshold: float = 0.0
    weights: FloatArray | None = field(default=None, repr=False)
    keys: npt.NDArray[np.generic] | None = field(default=None, repr=False)
    transform: str = "raw"

    def feature(self, rows: FloatArray) -> FloatArray:
        if self.weights is not None:
            return np.asarray(rows @ self.weights, dtype=np.float64)
        return rows[:, self.column]

    def contains(self, rows: FloatArray) -> BoolArray:
        if self.kind == "values":
            assert self.keys is not None
            return np.isin(_keys(rows, self.column, self.transform), self.keys)
        values = self.feature(rows)
        return np.asarray(values > self.threshold if self.above else values <= self.threshold)


def _keys(rows: FloatArray, column: int, transform: str) -> npt.NDArray[np.generic]:
    if column < 0:
        return row_keys(rows)
    values = rows[:, column]
    if transform == "lowest-bit":
        return lowest_bit(values)
    if transform == "exponent+lowest-bit":
        return exponent_and_lowest_bit(values)
    return values + 0.0


@dataclass(frozen=True)
class Candidate:
    """An event, the input it favours (+1: d over d', −1: d' over d) and its projected bound."""

    event: Event
    direction: int
    family: str
    score: float


class Scorer:
    """Projected ε lower bound of an event given its search counts, at the measurement size."""

    def __init__(self, n_search: int, n_measure: int, *, delta: float, alpha: float) -> None:
        self.n_search, self.n_measure, self.delta, self.alpha = n_search, n_measure, delta, alpha

    def best(self, hits_a: npt.ArrayLike, hits_b: npt.ArrayLike) -> tuple[int, int, float]:
        """(index, direction, score) of the best entry over both directions.

        Each probability is first shrunk to its one-sigma Clopper–Pearson bound on the search
        samples (lower for the numerator, upper for the denominator): without that, the
        largest of thousands of noisy ratio estimates is usually a rare event that got lucky.
        """
        i, forward = self.best_one(hits_a, hits_b)
        j, backward = self.best_one(hits_b, hits_a)
        return (i, 1, forward) if forward >= backward else (j, -1, backward)

    def best_one(self, numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> tuple[int, float]:
        """(index, score) of the best entry for one direction: numerator hits over denominator hits."""
        scores = self._projected(np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64))
        index = int(np.argmax(scores))
        return index, float(scores[index])

    def _projected(self, numerator: FloatArray, denominator: FloatArray) -> FloatArray:
        p1 = wilson_bounds(numerator, self.n_search, SHRINK)[0]
        p2 = wilson_bounds(denominator, self.n_search, SHRINK)[1]
        low = wilson_bounds(p1 * self.n_measure, self.n_measure, self.alpha / 2)[0] - self.delta
        high = wilson_bounds(p2 * self.n_measure, self.n_measure, self.alpha / 2)[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(low > 0, np.log(np.clip(low, 1e-300, None)) - np.log(high), -np.inf), dtype=np.float64)


def _threshold_candidate(
    fa: FloatArray, fb: FloatArray, scorer: Scorer, name: str, *, column: int = -1, weights: FloatArray | None = None
) -> Candidate | None:
    pooled = np.concatenate([fa, fb])
    distinct = np.unique(pooled)
    if len(distinct) < 2:
        return None
    if len(distinct) <= THRESHOLDS:
        ts = distinct[:-1]
    else:
        ts = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, THRESHOLDS)))
    sa, sb = np.sort(fa), np.sort(fb)
    n = len(fa)
    le_a = np.searchsorted(sa, ts, side="right").astype(np.float64)
    le_b = np.searchsorted(sb, ts, side="right").astype(np.float64)
    hits_a = np.concatenate([n - le_a, le_a])
    hits_b = np.concatenate([n - le_b, le_b])
    index, direction, score = scorer.best(hits_a, hits_b)
    above = index < len(ts)
    t = float(ts[index % len(ts)])
    description = f"{name} {'>' if above else '≤'} {t:.6g}"
    kind = "projection" if weights is not None else "threshold"
    event = Event(kind, description, column=column, above=above, threshold=t, weights=weights)
    return Candidate(event, direction, kind, score)


def _value_set_candidate(
    ka: npt.NDArray[np.generic], kb: npt.NDArray[np.generic], scorer: Scorer, name: str, family: str, column: int, transform: str
) -> Candidate | None:
    keys, inverse = np.unique(np.concatenate([ka, kb]), return_inverse=True)
    if len(keys) < 2 or len(keys) > DISCRETE_LIMIT:
        return None
    n = len(ka)
    ca = np.bincount(inverse[:n], minlength=len(keys)).astype(np.float64)
    cb = np.bincount(inverse[n:], minlength=len(keys)).astype(np.float64)
    best: tuple[float, int, npt.NDArray[np.generic]] | None = None
    for direction, (num, den) in ((1, (ca, cb)), (-1, (cb, ca))):
        order = np.argsort(-(num + 0.5) / (den + 0.5), kind="stable")
        index, score = scorer.best_one(np.cumsum(num[order]), np.cumsum(den[order]))
        if best is None or score > best[0]:
            best = (score, direction, keys[order[: index + 1]])
    assert best is not None
    score, direction, chosen = best
    shown = _describe_values(chosen, transform)
    event = Event("values", f"{name} ∈ {shown}", column=column, keys=np.sort(chosen), transform=transform)
    return Candidate(event, direction, family, score)


def _describe_values(values: npt.NDArray[np.generic], transform: str, limit: int = 6) -> str:
    if values.dtype.kind == "V":
        width = values.dtype.itemsize // 8
        items = [tuple(float(x) for x in np.frombuffer(v.tobytes(), dtype=np.float64)[:width]) for v in values[:limit]]
        text = ", ".join("(" + ", ".join(f"{x:g}" for x in item) + ")" for item in items)
    elif transform == "lowest-bit":
        text = ", ".join(f"2^{int(v)}·odd" for v in values[:limit])
    elif transform == "exponent+lowest-bit":
        text = ", ".join(
            f"[{'−' if int(v) // 4096 >= 2048 else '+'}2^{int(v) // 4096 % 2048 - 1023}, lsb 2^{int(v) % 4096 - 2048}]"
            for v in values[:limit]
        )
    else:
        text = ", ".join(f"{float(v):g}" for v in values[:limit])
    more = f", … ({len(values)} values)" if len(values) > limit else ""
    return "{" + text + more + "}"


def _logistic_direction(xa: FloatArray, xb: FloatArray, rng: np.random.Generator) -> FloatArray | None:
    """Weights w (original units) of a logistic regression d vs d' (a few Newton steps)."""
    take = min(len(xa), PROJECTION_ROWS)
    ia = rng.choice(len(xa), take, replace=False) if len(xa) > take else slice(None)
    ib = rng.choice(len(xb), take, replace=False) if len(xb) > take else slice(None)
    x = np.concatenate([xa[ia], xb[ib]])
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


def search(xa: FloatArray, xb: FloatArray, scorer: Scorer, *, float_test: bool, rng: np.random.Generator) -> list[Candidate]:
    """The best candidate of each family on the search samples, best first."""
    columns = xa.shape[1]
    names = _names(columns)
    found: list[Candidate | None] = []
    thresholds = [_threshold_candidate(xa[:, j], xb[:, j], scorer, names[j], column=j) for j in range(columns)]
    found.append(max((c for c in thresholds if c), key=lambda c: c.score, default=None))
    discrete = [
        _value_set_candidate(xa[:, j] + 0.0, xb[:, j] + 0.0, scorer, names[j], "values", j, "raw") for j in range(columns)
    ]
    found.append(max((c for c in discrete if c), key=lambda c: c.score, default=None))
    if columns > 1:
        found.append(_value_set_candidate(row_keys(xa), row_keys(xb), scorer, "X", "joint values", -1, "raw"))
        weights = _logistic_direction(xa, xb, rng)
        if weights is not None:
            label = " + ".join(f"{w:.3g}·{n}" for w, n in zip(weights, names, strict=True) if w != 0)
            found.append(_threshold_candidate(xa @ weights, xb @ weights, scorer, f"({label})", weights=weights))
    if float_test:
        bits = []
        for transform in ("lowest-bit", "exponent+lowest-bit"):
            for j in range(columns):
                ka, kb = _keys(xa, j, transform), _keys(xb, j, transform)
                bits.append(_value_set_candidate(ka, kb, scorer, f"bits({names[j]})", "bit pattern", j, transform))
        found.append(max((c for c in bits if c), key=lambda c: c.score, default=None))
    return sorted((c for c in found if c is not None), key=lambda c: -c.score)
