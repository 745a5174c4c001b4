"""Events that separate two output distributions, and the search for the best one.

An event E is a yes/no question about one output (``X > t``, ``a < X ≤ b``, ``X ∈ S``,
``w·x > t``…). The auditor picks, on one set of samples, the event whose *projected* ε lower
bound at the measurement sample size is largest (so it prefers a likely event with a ratio
of e^ε to a rare one with the same ratio: that is what makes the bound tight), then measures
it on fresh samples. Families:

* ``threshold``: ``X_j > t`` / ``X_j ≤ t`` on each coordinate, swept over quantiles;
* ``intervals``: ``a < X_j ≤ b`` for windows of many widths (1, 2, 4, … bins of a fine
  adaptive histogram of both inputs' outputs): a leak into a narrow window shows here;
* ``values``: value sets for discrete coordinates, values ordered by their likelihood ratio
  and every prefix tried (the Neyman–Pearson family); ``joint values`` the same on whole rows;
* ``point masses``: the same on the values that repeat exactly in an otherwise continuous
  coordinate (or row): an output that returns its input on 1% of runs shows here;
* ``projection``: a logistic-regression score (a density-ratio estimate, as in DP-Sniper)
  thresholded like a scalar;
* ``sums and differences``: the usual projections of a vector — the sum (equivalently the
  mean), the number of coordinates above their pooled median, the largest and the smallest
  coordinate, differences of coordinates;
* ``ties``: equalities between the coordinates of a vector — the number of distinct values in
  the row, the size of its largest group of equal values, and ``X_i = X_j`` for pairs of
  coordinates (a library that copies one noisy value to several keys shows here: continuous
  noise makes two coordinates equal with probability 0); searched with the sums and
  differences, whose power statement covers both;
* in the tight mode, ``binned rows``: value sets on whole rows whose continuous columns are cut
  into a few pooled-quantile bins (a histogram estimate of the log density ratio, thresholded);
* in the tight mode, for nested outputs whose parts vary in length (a tuple of two sparse
  vectors' answers), every family again on *aligned* rows (:class:`Alignment`: each value keeps one
  column whatever the shape), ``joint values`` and ``binned rows`` on each top-level part alone,
  and ``parts combined``: a threshold on the sum of the parts' log likelihood ratios, each
  estimated on a histogram of the part (parts that draw their own noise multiply their ratios);
* in floating-point mode, ``bit pattern``: value sets on the bit pattern of each output;
* in the tight mode, on paired runs (common random numbers), ``paired thresholds``: thresholds
  on each coordinate, on the vector summaries and on the *coupled shift* w·x (w the mean of
  x − x' over pairs: coordinates that the pairing leaves equal get weight 0), each threshold
  scored by the paired bound (:func:`dpwitness.witness.stats.paired_projection`).

Missing values (NaN: a position that a shorter structured output does not have, or a NaN the
mechanism returned, which the row's shape code tells apart) belong to no threshold, interval or
projection event; they are a value of their own for the value sets. ±∞ are ordinary values
(the largest and the smallest); the projection reads them as 0.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.witness.stats import paired_projection, wilson_bounds

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Quantile thresholds tried per coordinate (plus every distinct value when there are few).
THRESHOLDS = 4001
#: A coordinate (or a whole row) with at most this many distinct values is treated as discrete.
DISCRETE_LIMIT = 4096
#: Shrinkage level of the search-sample estimates (one-sided, about 2.3 standard deviations).
SHRINK = 0.01
#: Rows used to fit the logistic projection.
PROJECTION_ROWS = 20_000
#: Most bins of the adaptive histogram behind the interval events, and the fewest samples per bin.
INTERVAL_BINS = 4096
SAMPLES_PER_BIN = 12
#: Search rows used for the derived vector features (sums, differences…).
FEATURE_ROWS = 400_000
#: Most coordinate differences tried.
MAX_DIFFERENCES = 24
#: Pooled-quantile bins per continuous column for the tight mode's binned rows (few columns, many).
BINS_FEW, BINS_MANY = 8, 4
#: Rows and coordinate pairs looked at to find the pairs of coordinates that are ever equal.
TIE_ROWS, TIE_PAIRS = 20_000, 500
#: Most aligned columns (value paths) of nested outputs; wider outputs are not aligned.
ALIGN_LIMIT = 64
#: Families searched for every output (the others depend on the output's shape and mode).
SCALAR_FAMILIES = ("threshold", "intervals", "values", "point masses")
VECTOR_FAMILIES = ("joint values", "projection", "sums and differences")


def names_of(columns: int) -> list[str]:
    return ["X"] if columns == 1 else [f"X[{j}]" for j in range(columns)]


def row_keys(values: FloatArray) -> npt.NDArray[np.int64]:
    """One 64-bit key per row, a hash of its exact values (−0.0 = 0.0; NaN = missing).

    Two different rows could share a key (probability about n²/2⁶⁵): an event on keys is then a
    slightly larger set of rows, still fixed before measuring, so no bound is affected.
    """
    rows = values[:, None] if values.ndim == 1 else values
    bits = value_keys(np.ascontiguousarray(rows, dtype=np.float64)).view(np.uint64)
    key = np.full(len(rows), np.uint64(0x9E3779B97F4A7C15))
    for j in range(bits.shape[1]):
        key = (key ^ bits[:, j]) * np.uint64(0x100000001B3) + np.uint64(j + 1)
        key ^= key >> np.uint64(29)
    return key.view(np.int64)


def value_keys(values: FloatArray) -> npt.NDArray[np.int64]:
    """Exact values as sortable integer keys (their bit patterns; −0.0 = 0.0, one NaN)."""
    folded = np.where(np.isnan(values), np.nan, values + 0.0)
    return np.ascontiguousarray(folded, dtype=np.float64).view(np.int64)


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


def precision_bits(values: FloatArray) -> int:
    """Bits between the top bit of the largest finite |value| and the finest set bit of any value:
    at most 53 (and far below) when every value lies on one grid 2^k·ℤ that doubles represent exactly;
    53 or more when the values use the doubles' full precision (0 for no nonzero finite value)."""
    finite = values[np.isfinite(values) & (values != 0)]
    if len(finite) == 0:
        return 0
    top = int(np.frexp(np.max(np.abs(finite)))[1])  # |v| < 2^top
    return top - int(np.min(lowest_bit(finite)))


def exponent_and_lowest_bit(values: FloatArray) -> npt.NDArray[np.int64]:
    """(sign, binary exponent, lowest set bit) packed in one integer."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    exponent = ((bits >> np.uint64(52)) & np.uint64(0x7FFF)).astype(np.int64)  # sign bit included
    return exponent * 4096 + lowest_bit(values) + 2048


@dataclass(frozen=True)
class Feature:
    """A number computed from one output row: a coordinate, a weighted sum, or a vector summary."""

    name: str
    kind: str = "column"  # column | weights | sum | max | min | above | difference | distinct | largest tie | equal | parts
    column: int = 0
    other: int = 0
    weights: FloatArray | None = field(default=None, repr=False)
    start: int = 0  # first value column (structured rows start with their shape and length)
    parts: tuple[PartScore, ...] = field(default=(), repr=False, compare=False)

    def __call__(self, rows: FloatArray) -> FloatArray:
        if self.kind == "column":
            return rows[:, self.column]
        if self.kind == "parts":
            return np.asarray(np.sum([part(rows) for part in self.parts], axis=0), dtype=np.float64)
        values = rows[:, self.start :]
        if self.kind == "difference":
            return rows[:, self.column] - rows[:, self.other]
        if self.kind == "equal":
            return np.asarray(rows[:, self.column] == rows[:, self.other], dtype=np.float64)
        if self.kind in ("distinct", "largest tie"):
            return _tie_counts(values)[0 if self.kind == "distinct" else 1]
        if self.kind == "weights":
            assert self.weights is not None
            finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
            return np.asarray(finite @ self.weights, dtype=np.float64)
        plain = self.start == 0  # rows of one shape have no missing values
        if self.kind == "sum":
            return np.asarray(values.sum(axis=1) if plain else np.nansum(values, axis=1), dtype=np.float64)
        if self.kind == "max":
            return np.asarray(np.max(values if plain else np.nan_to_num(values, nan=-np.inf), axis=1), dtype=np.float64)
        if self.kind == "min":
            return np.asarray(np.min(values if plain else np.nan_to_num(values, nan=np.inf), axis=1), dtype=np.float64)
        assert self.weights is not None  # "above": how many coordinates exceed their pooled median
        return np.asarray((values > self.weights).sum(axis=1), dtype=np.float64)


def _tie_counts(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per row: the number of distinct values and the size of the largest group of equal values
    (missing positions, NaN, are not values; −0.0 = 0.0)."""
    ordered = np.sort(values, axis=1)  # NaN sort last and equal nothing
    same = ordered[:, 1:] == ordered[:, :-1]
    present = (~np.isnan(ordered)).sum(axis=1)
    run = np.ones(len(values))
    largest = np.minimum(present, 1).astype(np.float64)
    for j in range(same.shape[1]):
        run = np.where(same[:, j], run + 1, 1.0)
        largest = np.maximum(largest, np.where(same[:, j], run, 0.0))
    return np.asarray(present - same.sum(axis=1), dtype=np.float64), largest


Path = tuple[Any, ...]


def _path_order(path: Path) -> tuple[tuple[bool, Any], ...]:
    return tuple((isinstance(step, str), step) for step in path)


@dataclass(frozen=True)
class Alignment:
    """Rows of nested outputs laid out so that each value keeps one column whatever the shape.

    A structured row is ``[shape code, length, v₀, v₁, …]`` with the values in walking order, so
    the second part of ``(answers, flags)`` starts at a column that moves with the first part's
    length. The aligned row is ``[shape code, length, v(p) for p in paths]``: one column per value
    path (part, index, …) seen in the shapes known when the alignment was made; a shape first seen
    later has all its values missing, so an event on aligned rows stays a fixed function of the
    output. Build with :meth:`of`; ``parts`` are the top-level parts as (name, first column, end).
    """

    paths: tuple[Path, ...]
    table: npt.NDArray[np.int64] = field(repr=False, compare=False)  # shape code → aligned column of each value
    parts: tuple[tuple[str, int, int], ...] = ()
    _memo: list[Any] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def of(cls, paths_by_code: Mapping[int, Sequence[Path]]) -> Alignment | None:
        """The alignment of these shapes' value paths, or None when every value already sits in one
        column (flat outputs), when there are more than ``ALIGN_LIMIT`` paths, or fewer than two parts."""
        known = sorted({p for paths in paths_by_code.values() for p in paths}, key=_path_order)
        if not known or len(known) > ALIGN_LIMIT:
            return None
        column = {p: 2 + i for i, p in enumerate(known)}
        if all(column[p] == 2 + k for paths in paths_by_code.values() for k, p in enumerate(paths)):
            return None
        longest = max(len(paths) for paths in paths_by_code.values())
        discard = 2 + len(known)
        table = np.full((max(paths_by_code) + 2, longest), discard, dtype=np.int64)  # the last row: unknown shapes
        for code, paths in paths_by_code.items():
            table[code, : len(paths)] = [column[p] for p in paths]
        parts: list[tuple[str, int, int]] = []
        for head, group in itertools.groupby(known, key=lambda p: p[0] if len(p) > 1 else None):
            size = len(list(group))
            first = parts[-1][2] if parts else 2
            if head is not None:
                parts.append((f"X[{head!r}]", first, first + size))
            else:
                parts.append(("", first, first + size))
        named = tuple(p for p in parts if p[0])
        if len(named) < 2:
            return None
        return cls(tuple(known), table, named)

    @property
    def names(self) -> list[str]:
        return ["shape", "length", *("X" + "".join(f"[{step!r}]" for step in p) for p in self.paths)]

    def apply(self, rows: FloatArray) -> FloatArray:
        """The aligned rows of ``rows`` (``[shape code, length, values…]``); the last two results are
        kept (the events of a selection read the same two inputs' rows in turn)."""
        for ref, cached in self._memo:
            if ref() is rows:
                return cached  # type: ignore[no-any-return]
        n, width = len(rows), rows.shape[1] - 2
        discard = 2 + len(self.paths)
        codes = rows[:, 0]
        unknown = len(self.table) - 1
        index = np.where((codes >= 0) & (codes < unknown), np.nan_to_num(codes, nan=unknown), unknown).astype(np.int64)
        table = self.table[:, :width]
        if table.shape[1] < width:
            table = np.hstack([table, np.full((len(table), width - table.shape[1]), discard, dtype=np.int64)])
        out = np.full((n, discard + 1), np.nan)
        out[:, :2] = rows[:, :2]
        out[np.arange(n)[:, None], table[index]] = rows[:, 2:]
        aligned = out[:, :discard]
        self._memo[:] = [*self._memo[-1:], (weakref.ref(rows), aligned)]
        return aligned


@dataclass(frozen=True)
class Event:
    """A yes/no question about one output; ``contains`` answers it for a batch of rows.

    ``kind``: "above" (f > threshold), "below" (f ≤ threshold), "interval" (low < f ≤ high) on
    a :class:`Feature` f, or "values" (the row's, a part's, or one column's exact value in
    ``keys``). With ``aligned``, the event reads the rows aligned by that :class:`Alignment`.
    """

    kind: str
    description: str
    feature: Feature | None = None
    threshold: float = 0.0
    low: float = -np.inf
    column: int = -1
    keys: npt.NDArray[np.generic] | None = field(default=None, repr=False)
    transform: str = "raw"
    width: int = 0  # whole-row keys: the row width they were taken at
    bins: tuple[FloatArray | None, ...] | None = field(default=None, repr=False)  # whole rows: bin edges per column
    block: tuple[int, int] | None = None  # whole-row values on these columns only (one part of an aligned row)
    aligned: Alignment | None = field(default=None, repr=False)

    def contains(self, rows: FloatArray) -> BoolArray:
        if self.aligned is not None:
            rows = self.aligned.apply(rows)
        if self.kind == "values":
            assert self.keys is not None
            if self.column >= 0:
                return np.isin(event_keys(rows, self.column, self.transform), self.keys)
            if self.block is not None:
                rows = rows[:, self.block[0] : self.block[1]]
            # A whole row is its values padded with NaN (missing) to the width the keys were taken at;
            # a row with a value beyond that width matches none of them.
            if self.bins is not None:
                rows = binned(rows, self.bins)
            extra = rows[:, self.width :]
            fits = np.all(np.isnan(extra), axis=1) if extra.shape[1] else np.ones(len(rows), dtype=bool)
            padded = rows[:, : self.width]
            if padded.shape[1] < self.width:
                padded = np.hstack([padded, np.full((len(rows), self.width - padded.shape[1]), np.nan)])
            return np.asarray(fits & np.isin(row_keys(padded), self.keys))
        assert self.feature is not None
        values = self.feature(rows)
        if self.kind == "above":
            return np.asarray(values > self.threshold)
        if self.kind == "below":
            return np.asarray(values <= self.threshold)
        return np.asarray((values > self.low) & (values <= self.threshold))


def binned(rows: FloatArray, edges: Sequence[FloatArray | None]) -> FloatArray:
    """Rows with each column that has edges replaced by its bin number (NaN stays missing)."""
    out = np.array(rows, dtype=np.float64, copy=True)
    for j, edge in enumerate(edges):
        if edge is not None and j < rows.shape[1]:
            column = rows[:, j]
            out[:, j] = np.where(np.isnan(column), np.nan, np.searchsorted(edge, column, side="left"))
    return out


def _binned_candidate(
    xa: FloatArray, xb: FloatArray, scorer: Scorer, continuous: Sequence[int], columns: int
) -> Candidate | None:
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
    found = _key_candidate(keys_a, keys_b, scorer, "bins(X)", "binned rows", -1, "raw", repeated_only=True, rows=(ba, bb))
    if found is None:
        return None
    return replace(found, event=replace(found.event, bins=tuple(edges)))


def event_keys(rows: FloatArray, column: int, transform: str) -> npt.NDArray[np.generic]:
    values = rows[:, column]
    if transform == "lowest-bit":
        return lowest_bit(values)
    if transform == "exponent+lowest-bit":
        return exponent_and_lowest_bit(values)
    return value_keys(values)


@dataclass(frozen=True)
class Candidate:
    """An event, the input it favours (+1: d over d', −1: d' over d) and its projected bound."""

    event: Event
    direction: int
    family: str
    score: float


class Scorer:
    """Projected ε lower bound of an event given its search counts, at the measurement size."""

    def __init__(self, n_search: int, n_measure: int, *, delta: float, alpha: float, shrink: float = SHRINK) -> None:
        self.n_search, self.n_measure, self.delta, self.alpha, self.shrink = n_search, n_measure, delta, alpha, shrink

    def best(self, hits_a: npt.ArrayLike, hits_b: npt.ArrayLike) -> tuple[int, int, float]:
        """(index, direction, score) of the best entry over both directions.

        Each probability is first shrunk to its Wilson bound on the search samples (lower for
        the numerator, upper for the denominator): without that, the largest of thousands of
        noisy ratio estimates is usually a rare event that got lucky.
        """
        i, forward = self.best_one(hits_a, hits_b)
        j, backward = self.best_one(hits_b, hits_a)
        return (i, 1, forward) if forward >= backward else (j, -1, backward)

    def best_one(self, numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> tuple[int, float]:
        """(index, score) of the best entry for one direction: numerator hits over denominator hits."""
        scores = self.projected(np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64))
        index = int(np.argmax(scores))
        return index, float(scores[index])

    def projected(self, numerator: FloatArray, denominator: FloatArray) -> FloatArray:
        p1 = wilson_bounds(numerator, self.n_search, self.shrink)[0]
        p2 = wilson_bounds(denominator, self.n_search, self.shrink)[1]
        low = wilson_bounds(p1 * self.n_measure, self.n_measure, self.alpha / 2)[0] - self.delta
        high = wilson_bounds(p2 * self.n_measure, self.n_measure, self.alpha / 2)[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(low > 0, np.log(np.clip(low, 1e-300, None)) - np.log(high), -np.inf), dtype=np.float64)

    def smallest_detectable(self, log_ratio: float, epsilon: float) -> float:
        """The smallest P(E) under the likelier input at which an event with this log ratio
        would be chosen and certified above ``epsilon`` with these sample sizes (inf: none)."""
        p1 = np.geomspace(1e-9, 1.0, 800)
        p2 = p1 * np.exp(-log_ratio)
        scores = self.projected(p1 * self.n_search, p2 * self.n_search)
        ok = np.nonzero(scores > epsilon)[0]
        return float(p1[ok[0]]) if len(ok) else float("inf")


@dataclass(frozen=True)
class _Sorted:
    """One feature's finite values on each input, sorted, and pooled (shared by the families)."""

    a: FloatArray
    b: FloatArray
    pooled: FloatArray
    missing: tuple[int, int]  # NaN counts

    @classmethod
    def of(cls, fa: FloatArray, fb: FloatArray) -> _Sorted:
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


def _thresholds(data: _Sorted) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """(thresholds t, hits on each input): entry k < len(t) counts f > t[k], entry len(t) + k counts f ≤ t[k]."""
    distinct = data.distinct()
    if len(distinct) < 2:
        return None
    ts = distinct[:-1] if len(distinct) <= THRESHOLDS else data.quantiles(THRESHOLDS)
    le_a = np.searchsorted(data.a, ts, side="right").astype(np.float64)
    le_b = np.searchsorted(data.b, ts, side="right").astype(np.float64)
    return ts, np.concatenate([len(data.a) - le_a, le_a]), np.concatenate([len(data.b) - le_b, le_b])


def _threshold_event(ts: FloatArray, index: int, feature: Feature) -> Event:
    """The event of entry ``index`` of :func:`_thresholds`."""
    above = index < len(ts)
    t = float(ts[index % len(ts)])
    return Event("above" if above else "below", f"{feature.name} {'>' if above else '≤'} {t:.6g}", feature, threshold=t)


def _threshold_candidate(data: _Sorted, scorer: Scorer, feature: Feature, family: str) -> Candidate | None:
    found = _thresholds(data)
    if found is None:
        return None
    ts, hits_a, hits_b = found
    index, direction, score = scorer.best(hits_a, hits_b)
    return Candidate(_threshold_event(ts, index, feature), direction, family, score)


def _interval_candidate(data: _Sorted, scorer: Scorer, feature: Feature) -> Candidate | None:
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


def _prefix_candidate(
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


def _column_values_candidate(data: _Sorted, scorer: Scorer, name: str, column: int, *, repeated_only: bool) -> Candidate | None:
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
    found = _prefix_candidate(value_keys(values), ca, cb, scorer)
    if found is None:
        return None
    score, direction, chosen = found
    shown = _describe_values(chosen, "raw")
    event = Event("values", f"{name} ∈ {shown}", column=column, keys=np.sort(chosen))
    return Candidate(event, direction, family, score)


def _key_candidate(
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
    """Value sets on integer keys (whole-row hashes, bit patterns); see :func:`_column_values_candidate`."""
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
    found = _prefix_candidate(keys, ca, cb, scorer)
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


def _logistic_direction(xa: FloatArray, xb: FloatArray, rng: np.random.Generator) -> FloatArray | None:
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


def _vector_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int) -> list[Feature]:
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


def _tie_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int, continuous: Sequence[int]) -> list[Feature]:
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


def _best(candidates: Sequence[Candidate | None]) -> Candidate | None:
    return max((c for c in candidates if c is not None), key=lambda c: c.score, default=None)


def search(
    xa: FloatArray,
    xb: FloatArray,
    scorer: Scorer,
    *,
    float_test: bool,
    rng: np.random.Generator,
    names: list[str] | None = None,
    start: int = 0,
    feature_rows: int = FEATURE_ROWS,
    every: bool = False,
    binned_rows: bool = False,
) -> tuple[list[Candidate], list[str]]:
    """The best candidate of each family on the search samples (best first), and the families searched.

    ``names`` label the columns; ``start`` is the first value column (structured rows begin
    with their shape code and length, which take part in the value families only);
    ``feature_rows`` caps the rows used for the derived vector features. With ``every``, the
    best event of every column and feature is returned, not only the best of each family (for a
    later choice on fresh samples). ``binned_rows`` adds whole rows with their continuous columns
    binned (the tight mode's proposals; see :func:`_binned_candidate`).
    """

    def pick(candidates: Sequence[Candidate | None]) -> list[Candidate | None]:
        return [c for c in candidates if c is not None] if every else [_best(candidates)]

    columns = xa.shape[1]
    names = names or names_of(columns)
    families: list[str] = ["threshold"]
    by_column = [_Sorted.of(xa[:, j], xb[:, j]) for j in range(columns)]
    discrete = [len(c.distinct()) + (1 if any(c.missing) else 0) <= DISCRETE_LIMIT for c in by_column]
    # coordinates whose values mostly differ (continuous, or too few runs to tell): where a tie means something
    spread = [j for j, c in enumerate(by_column) if not discrete[j] or len(c.distinct()) >= 0.5 * len(c.pooled) > 0]
    found = pick([_threshold_candidate(c, scorer, Feature(names[j], column=j), "threshold") for j, c in enumerate(by_column)])
    if any(discrete):
        found.append(
            _best(
                [
                    _column_values_candidate(c, scorer, names[j], j, repeated_only=False)
                    for j, c in enumerate(by_column)
                    if discrete[j]
                ]
            )
        )
        families.append("values")
    ka = kb = None
    if columns > 1:
        ka, kb = row_keys(xa), row_keys(xb)
        found.append(_key_candidate(ka, kb, scorer, "X", "joint values", -1, "raw", rows=(xa, xb)))
        families.append("joint values")
    if not all(discrete):
        continuous = [j for j in range(columns) if not discrete[j]]
        found += pick([_interval_candidate(by_column[j], scorer, Feature(names[j], column=j)) for j in continuous])
        masses = [_column_values_candidate(by_column[j], scorer, names[j], j, repeated_only=True) for j in continuous]
        if ka is not None and kb is not None:
            masses.append(_key_candidate(ka, kb, scorer, "X", "point masses", -1, "raw", repeated_only=True, rows=(xa, xb)))
        found += pick(masses)
        families += ["intervals", "point masses"]
        if binned_rows and columns > 1:
            found.append(_binned_candidate(xa, xb, scorer, continuous, columns))
    del by_column
    if columns - start > 1:
        families.append("projection")
        weights = _logistic_direction(xa[:, start:], xb[:, start:], rng)
        if weights is not None:
            label = " + ".join(f"{w:.3g}·{n}" for w, n in zip(weights, names[start:], strict=True) if w != 0)
            feature = Feature(f"({label})", "weights", weights=weights, start=start)
            found.append(_threshold_candidate(_Sorted.of(feature(xa), feature(xb)), scorer, feature, "projection"))
        derived = _vector_features(xa, xb, names, start)
        if derived:
            families.append("sums and differences")
            ra, rb = xa[:feature_rows], xb[:feature_rows]
            sub = Scorer(len(ra), scorer.n_measure, delta=scorer.delta, alpha=scorer.alpha, shrink=scorer.shrink)
            # the ties compete with the sums and differences (one event measured for both: no extra
            # Bonferroni share), and are reported as their own family
            labelled = [(f, "sums and differences") for f in derived]
            labelled += [(f, "ties") for f in _tie_features(ra, rb, names, start, spread)]
            found += pick([_threshold_candidate(_Sorted.of(f(ra), f(rb)), sub, f, family) for f, family in labelled])
    if float_test:
        bits = []
        for transform in ("lowest-bit", "exponent+lowest-bit"):
            for j in range(start, columns):
                keys_a, keys_b = event_keys(xa, j, transform), event_keys(xb, j, transform)
                bits.append(_key_candidate(keys_a, keys_b, scorer, f"bits({names[j]})", "bit pattern", j, transform))
        found += pick(bits)
        families.append("bit pattern")
    return sorted((c for c in found if c is not None), key=lambda c: -c.score), families


def summary_features(xa: FloatArray, xb: FloatArray, names: list[str], start: int) -> list[Feature]:
    """The sum, count above the pooled medians, max and min of a vector's values (medians from xa, xb)."""
    return _vector_features(xa, xb, names, start)[:4]


def threshold_candidate(fa: FloatArray, fb: FloatArray, scorer: Scorer, feature: Feature, family: str) -> Candidate | None:
    """The best threshold event on one feature's values (NaN: in neither side)."""
    return _threshold_candidate(_Sorted.of(fa, fb), scorer, feature, family)


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
    found = _thresholds(_Sorted.of(fa, fb))
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
        event = _threshold_event(ts, index, feature)
        if np.isfinite(score) and all(p.event.description != event.description for p in proposals):
            proposals.append(Candidate(event, direction, "paired thresholds", score))
    return proposals


def aligned_candidates(
    xa: FloatArray, xb: FloatArray, alignment: Alignment, scorer: Scorer, found: Sequence[Candidate]
) -> list[Candidate]:
    """Events for nested outputs, on rows aligned by ``alignment``: ``found`` (a search's candidates
    on the aligned rows), whole-part value sets (exact, and binned), and a threshold on the sum of
    the parts' estimated log likelihood ratios (:class:`PartScore`: parts that draw their own noise
    multiply their ratios, so the sum approximates the Neyman–Pearson statistic of the whole output).
    Every event returned reads raw rows (it carries the alignment)."""
    extra: list[Candidate] = []
    scores: list[PartScore] = []
    for name, first, end in alignment.parts:
        pa, pb = xa[:, first:end], xb[:, first:end]
        own: list[Candidate | None] = [
            _key_candidate(row_keys(pa), row_keys(pb), scorer, name, "joint values", -1, "raw", rows=(pa, pb))
        ]
        edges = _part_edges(pa, pb)
        continuous = [j for j, edge in enumerate(edges) if edge is not None]
        if continuous:
            own.append(_binned_candidate(pa, pb, scorer, continuous, end - first))
        extra += [replace(c, event=replace(c.event, block=(first, end))) for c in own if c is not None]
        scores.append(PartScore.of(pa, pb, first, end, edges))
    feature = Feature("Σ log ratio(part)", "parts", parts=tuple(scores))
    combined = _threshold_candidate(_Sorted.of(feature(xa), feature(xb)), scorer, feature, "parts combined")
    if combined is not None:
        extra.append(combined)
    return [replace(c, event=replace(c.event, aligned=alignment)) for c in [*found, *extra]]


def _part_edges(pa: FloatArray, pb: FloatArray) -> list[FloatArray | None]:
    """Bin edges for each column of a part with many values (None: a discrete column, kept exact):
    a few pooled quantiles, and each value holding ≥ 1% of the outputs as a bin of its own (a
    ``False`` beside the noisy answers of a sparse vector)."""
    edges: list[FloatArray | None] = []
    count = BINS_FEW if pa.shape[1] <= 2 else BINS_MANY
    for j in range(pa.shape[1]):
        pooled = np.concatenate([pa[:, j], pb[:, j]])
        pooled = pooled[np.isfinite(pooled)]
        values, counts = np.unique(pooled, return_counts=True)
        if len(values) <= DISCRETE_LIMIT // 64:
            edges.append(None)
            continue
        atoms = values[counts >= 0.01 * len(pooled)]
        rest = pooled[~np.isin(pooled, atoms)]
        cuts = np.quantile(rest, np.linspace(0, 1, count + 1)[1:-1]) if len(rest) else np.empty(0)
        # with side="left", x == atom lands between nextafter(atom, −∞) and atom: a bin of its own
        edges.append(np.unique(np.concatenate([cuts, np.nextafter(atoms, -np.inf), atoms])))
    return edges


@dataclass(frozen=True)
class PartScore:
    """The estimated log likelihood ratio of one part of an aligned row (columns ``first:end``):
    its rows binned by ``edges``, each binned row's log((count on d + 1)/(count on d' + 1)) on the
    search sample (0 for a row not seen there)."""

    first: int
    end: int
    edges: tuple[FloatArray | None, ...] = field(repr=False, compare=False)
    keys: npt.NDArray[np.int64] = field(repr=False, compare=False)
    scores: FloatArray = field(repr=False, compare=False)

    @classmethod
    def of(cls, pa: FloatArray, pb: FloatArray, first: int, end: int, edges: Sequence[FloatArray | None]) -> PartScore:
        ka, kb = row_keys(binned(pa, edges)), row_keys(binned(pb, edges))
        keys, index = np.unique(np.concatenate([ka, kb]), return_inverse=True)
        ca = np.bincount(index[: len(ka)], minlength=len(keys))
        cb = np.bincount(index[len(ka) :], minlength=len(keys))
        return cls(first, end, tuple(edges), keys, np.log((ca + 1.0) / (cb + 1.0)))

    def __call__(self, rows: FloatArray) -> FloatArray:
        keys = row_keys(binned(rows[:, self.first : self.end], self.edges))
        if not len(self.keys):
            return np.zeros(len(rows))
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.asarray(np.where(self.keys[at] == keys, self.scores[at], 0.0), dtype=np.float64)


def resolution(family: str, n_search: int) -> float:
    """The smallest event probability a family can represent at this search size (see docs/audit.md)."""
    if family == "point masses":
        return 7.0 / n_search  # a value of this probability repeats in the search samples with probability ≥ 0.99
    if family == "intervals":
        bins = max(4, min(INTERVAL_BINS, 2 * n_search // SAMPLES_PER_BIN))
        return 8.0 / bins  # the window spans at least four bins of the pooled histogram
    if family == "threshold":
        return 2.0 / THRESHOLDS
    return 0.0
