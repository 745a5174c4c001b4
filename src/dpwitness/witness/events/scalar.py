"""The families on one feature's values or on whole rows: thresholds, intervals, value sets, point
masses and binned rows (value sets sorted by likelihood ratio: the Neyman–Pearson family)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dpwitness.witness.events.model import (
    BINS_FEW,
    BINS_MANY,
    DISCRETE_LIMIT,
    INTERVAL_BINS,
    SAMPLES_PER_BIN,
    THRESHOLDS,
    Candidate,
    Event,
    Feature,
    FloatArray,
    Scorer,
    binned,
    row_keys,
    value_keys,
)


def binned_candidate(xa: FloatArray, xb: FloatArray, scorer: Scorer, continuous: Sequence[int], columns: int) -> Candidate | None:
    """Whole rows with their continuous columns cut into a few pooled-quantile bins, then value sets
    sorted by likelihood ratio (Neyman–Pearson on a histogram of the rows): the event thresholds an
    estimated log density ratio, as DP-Sniper's classifier does, and sees a value's meaning change
    with the row's shape (the noisy answer of the k-th query of a sparse vector)."""
    count = BINS_FEW if len(continuous) <= 2 else BINS_MANY
    edges: list[FloatArray | None] = [None] * columns
    for j in continuous:
        pooled = np.concatenate([xa[:, j], xb[:, j]])
        pooled = pooled[np.isfinite(pooled)]
        if len(pooled):
            edges[j] = np.unique(np.quantile(pooled, np.linspace(0, 1, count + 1)[1:-1]))
    ba, bb = binned(xa, edges), binned(xb, edges)
    keys_a, keys_b = row_keys(ba), row_keys(bb)
    found = key_candidate(keys_a, keys_b, scorer, "bins(X)", "binned rows", -1, "raw", repeated_only=True, rows=(ba, bb))
    if found is None:
        return None
    return replace(found, event=replace(found.event, bins=tuple(edges)))


@dataclass(frozen=True)
class SortedValues:
    """One feature's finite values on each input, sorted, and pooled (shared by the families)."""

    a: FloatArray
    b: FloatArray
    pooled: FloatArray
    missing: tuple[int, int]  # NaN counts

    @classmethod
    def of(cls, fa: FloatArray, fb: FloatArray) -> SortedValues:
        sa, sb = np.sort(fa[~np.isnan(fa)]), np.sort(fb[~np.isnan(fb)])
        pooled = np.sort(np.concatenate([sa, sb]), kind="stable")  # a merge of two sorted runs
        return cls(sa, sb, pooled + 0.0, (len(fa) - len(sa), len(fb) - len(sb)))

    def distinct(self) -> FloatArray:
        if len(self.pooled) == 0:
            return self.pooled
        first = np.concatenate([[True], self.pooled[1:] != self.pooled[:-1]])
        return np.asarray(self.pooled[first], dtype=np.float64)

    def counts(self, values: FloatArray) -> tuple[FloatArray, FloatArray]:
        """How often each of ``values`` occurs exactly on each input."""
        ca = np.searchsorted(self.a, values, side="right") - np.searchsorted(self.a, values, side="left")
        cb = np.searchsorted(self.b, values, side="right") - np.searchsorted(self.b, values, side="left")
        return ca.astype(np.float64), cb.astype(np.float64)

    def quantiles(self, count: int) -> FloatArray:
        index = np.round(np.linspace(0, len(self.pooled) - 1, count)).astype(np.int64)
        return np.unique(self.pooled[index])


def thresholds_of(data: SortedValues) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """(thresholds t, hits on each input): entry k < len(t) counts f > t[k], entry len(t) + k counts f ≤ t[k]."""
    distinct = data.distinct()
    if len(distinct) < 2:
        return None
    ts = distinct[:-1] if len(distinct) <= THRESHOLDS else data.quantiles(THRESHOLDS)
    le_a = np.searchsorted(data.a, ts, side="right").astype(np.float64)
    le_b = np.searchsorted(data.b, ts, side="right").astype(np.float64)
    return ts, np.concatenate([len(data.a) - le_a, le_a]), np.concatenate([len(data.b) - le_b, le_b])


def threshold_event(ts: FloatArray, index: int, feature: Feature) -> Event:
    """The event of entry ``index`` of :func:`thresholds_of`."""
    above = index < len(ts)
    t = float(ts[index % len(ts)])
    return Event("above" if above else "below", f"{feature.name} {'>' if above else '≤'} {t:.6g}", feature, threshold=t)


def sorted_threshold_candidate(data: SortedValues, scorer: Scorer, feature: Feature, family: str) -> Candidate | None:
    found = thresholds_of(data)
    if found is None:
        return None
    ts, hits_a, hits_b = found
    index, direction, score = scorer.best(hits_a, hits_b)
    return Candidate(threshold_event(ts, index, feature), direction, family, score)


def interval_candidate(data: SortedValues, scorer: Scorer, feature: Feature) -> Candidate | None:
    """Windows (edges[s], edges[s + w]] of w = 1, 2, 4… bins of a quantile histogram, stride w/2."""
    bins = int(min(INTERVAL_BINS, len(data.pooled) // SAMPLES_PER_BIN))
    if bins < 4:
        return None
    edges = data.quantiles(bins + 1)
    if len(edges) < 3:
        return None
    edges[0] = -np.inf  # the first window includes the smallest value
    ca = np.searchsorted(data.a, edges, side="right").astype(np.float64)
    cb = np.searchsorted(data.b, edges, side="right").astype(np.float64)
    nb = len(edges) - 1
    starts, ends = [], []
    width = 1
    while width < nb:
        s = np.arange(0, nb - width + 1, max(1, width // 2))
        starts.append(s)
        ends.append(s + width)
        width *= 2
    lo, hi = np.concatenate(starts), np.concatenate(ends)
    index, direction, score = scorer.best(ca[hi] - ca[lo], cb[hi] - cb[lo])
    low, high = float(edges[lo[index]]), float(edges[hi[index]])
    event = Event("interval", f"{low:.6g} < {feature.name} ≤ {high:.6g}", feature, threshold=high, low=low)
    return Candidate(event, direction, "intervals", score)


def prefix_candidate(
    keys: npt.NDArray[np.generic], ca: FloatArray, cb: FloatArray, scorer: Scorer
) -> tuple[float, int, npt.NDArray[np.generic]] | None:
    """Neyman–Pearson: keys sorted by likelihood ratio, every prefix scored; (score, direction, keys)."""
    if len(keys) == 0:
        return None
    best: tuple[float, int, npt.NDArray[np.generic]] | None = None
    for direction, (num, den) in ((1, (ca, cb)), (-1, (cb, ca))):
        order = np.argsort(-(num + 0.5) / (den + 0.5), kind="stable")
        index, score = scorer.best_one(np.cumsum(num[order]), np.cumsum(den[order]))
        if best is None or score > best[0]:
            best = (score, direction, keys[order[: index + 1]])
    return best


def column_values_candidate(
    data: SortedValues, scorer: Scorer, name: str, column: int, *, repeated_only: bool
) -> Candidate | None:
    """Value sets on one column: every value (discrete columns, missing included) or, for point
    masses, the values seen at least twice in the pooled search samples (a continuous distribution
    repeats a value with probability 0), at most ``DISCRETE_LIMIT`` of them, the most frequent first."""
    if repeated_only:
        pooled = data.pooled
        repeats = pooled[1:][pooled[1:] == pooled[:-1]]
        values = repeats[np.concatenate([[True], repeats[1:] != repeats[:-1]])] if len(repeats) else repeats
        ca, cb = data.counts(values)
        if len(values) > DISCRETE_LIMIT:
            keep = np.argsort(-(ca + cb), kind="stable")[:DISCRETE_LIMIT]
            values, ca, cb = values[keep], ca[keep], cb[keep]
        family = "point masses"
    else:
        values = data.distinct()
        ca, cb = data.counts(values)
        if any(data.missing):
            values = np.append(values, np.nan)
            ca, cb = np.append(ca, data.missing[0]), np.append(cb, data.missing[1])
        if len(values) < 2:
            return None
        family = "values"
    found = prefix_candidate(value_keys(values), ca, cb, scorer)
    if found is None:
        return None
    score, direction, chosen = found
    shown = _describe_values(chosen, "raw")
    event = Event("values", f"{name} ∈ {shown}", column=column, keys=np.sort(chosen))
    return Candidate(event, direction, family, score)


def key_candidate(
    ka: npt.NDArray[np.generic],
    kb: npt.NDArray[np.generic],
    scorer: Scorer,
    name: str,
    family: str,
    column: int,
    transform: str,
    *,
    repeated_only: bool = False,
    rows: tuple[FloatArray, FloatArray] | None = None,
) -> Candidate | None:
    """Value sets on integer keys (whole-row hashes, bit patterns); see :func:`column_values_candidate`."""
    sa, sb = np.sort(ka), np.sort(kb)
    pooled = np.sort(np.concatenate([sa, sb]), kind="stable")
    if len(pooled) == 0:
        return None
    if repeated_only:
        repeats = pooled[1:][pooled[1:] == pooled[:-1]]
        keys = np.unique(repeats)
    else:
        keys = pooled[np.concatenate([[True], pooled[1:] != pooled[:-1]])]
        if len(keys) < 2 or len(keys) > DISCRETE_LIMIT:
            return None
    ca = (np.searchsorted(sa, keys, side="right") - np.searchsorted(sa, keys, side="left")).astype(np.float64)
    cb = (np.searchsorted(sb, keys, side="right") - np.searchsorted(sb, keys, side="left")).astype(np.float64)
    if len(keys) > DISCRETE_LIMIT:
        keep = np.argsort(-(ca + cb), kind="stable")[:DISCRETE_LIMIT]
        keys, ca, cb = keys[keep], ca[keep], cb[keep]
    found = prefix_candidate(keys, ca, cb, scorer)
    if found is None:
        return None
    score, direction, chosen = found
    shown = _describe_rows(chosen, ka, kb, rows) if rows is not None else _describe_values(chosen, transform)
    width = rows[0].shape[1] if rows is not None else 0
    event = Event("values", f"{name} ∈ {shown}", column=column, keys=np.sort(chosen), transform=transform, width=width)
    return Candidate(event, direction, family, score)


def _describe_rows(
    chosen: npt.NDArray[np.generic],
    ka: npt.NDArray[np.generic],
    kb: npt.NDArray[np.generic],
    rows: tuple[FloatArray, FloatArray],
    limit: int = 6,
) -> str:
    """The chosen row keys shown as the rows they stand for (a representative of each)."""
    items = []
    for key in chosen[:limit]:
        hits = np.flatnonzero(ka == key)
        row = rows[0][hits[0]] if len(hits) else rows[1][np.flatnonzero(kb == key)[0]]
        items.append("(" + ", ".join(_show(float(x)) for x in row) + ")")
    more = f", … ({len(chosen)} values)" if len(chosen) > limit else ""
    return "{" + ", ".join(items) + more + "}"


def _describe_values(values: npt.NDArray[np.generic], transform: str, limit: int = 6) -> str:
    if transform == "lowest-bit":
        text = ", ".join(f"2^{int(v)}·odd" for v in values[:limit])
    elif transform == "exponent+lowest-bit":
        text = ", ".join(
            f"[{'−' if int(v) // 4096 >= 2048 else '+'}2^{int(v) // 4096 % 2048 - 1023}, lsb 2^{int(v) % 4096 - 2048}]"
            for v in values[:limit]
        )
    else:
        floats = np.ascontiguousarray(values[:limit], dtype=np.int64).view(np.float64)
        text = ", ".join(_show(float(v)) for v in floats)
    more = f", … ({len(values)} values)" if len(values) > limit else ""
    return "{" + text + more + "}"


def _show(value: float) -> str:
    return "missing" if np.isnan(value) else f"{value:g}"


def threshold_candidate(fa: FloatArray, fb: FloatArray, scorer: Scorer, feature: Feature, family: str) -> Candidate | None:
    """The best threshold event on one feature's values (NaN: in neither side)."""
    return sorted_threshold_candidate(SortedValues.of(fa, fb), scorer, feature, family)
