"""The vocabulary of the event search: features of a row, events on them, the alignment of nested
outputs, candidates and the scorer that ranks them by their projected ε lower bound."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.witness.stats import wilson_bounds

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
