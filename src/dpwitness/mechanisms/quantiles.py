"""Quantiles, the median, and min/max within bounds: post-processing of one noisy histogram.

The method (docs/statistics.md, "Quantiles"): the column, clamped to [L, U], is cut into B
equal bins; the engine counts the rows in each bin (per declared key when grouped); the
session adds one exact Laplace vector to the B counts (L1 Δ from :mod:`dpwitness.privacy.neighbours`:
k under add/remove, 2k under replace-one, one row moving one count, or two); everything here
is post-processing of that noisy vector, so it costs no ε beyond the histogram's and the
release's ``witness()`` is the histogram's Laplace witness.

From the noisy counts: the cumulative sums, made monotone (the mean of the running maximum
from the left and the running minimum from the right: each stays within t of the true
cumulative counts whenever the raw sums do, so the bound below survives), then for each q the
first bin where the cumulative count reaches the target rank q·ñ (ñ the noisy total), with
linear interpolation inside the bin. Several q share one histogram: one spend.

Accuracy, stated before the spend (:func:`rank_error`): the prefix sums of B independent
Laplace(b) noises form a martingale, so by Doob's maximal inequality and the Laplace moment
generating function E[e^{λX}] = 1/(1 − λ²b²),

    P(max_m |S_m| ≥ t) ≤ 2·inf_λ e^{−λt} (1 − λ²b²)^{−B}.

The t that makes this α bounds every noisy cumulative count at once, so the released value's
true rank is within (1 + q)·t of q·n (the target uses the noisy total, off by ≤ t too), and
its value within the bins that rank range spans, plus one bin width (resolution).

Min and max: the exact minimum or maximum is not releasable (one record moves it anywhere in
[L, U]). Here they are the 0 and 1 quantiles, and every target rank is kept at least the
rank error away from the ends (the guard, t at α = 0.05): below it the noisy counts cannot be
told from noise, so a "minimum" is a value with at most about 2t records below it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_alpha, check_count, check_finite
from dpwitness.mechanisms.release import Release
from dpwitness.noise import GridLaplace

#: Bins of [L, U] unless ``bins=`` says otherwise: finer bins resolve more, but the cumulative
#: noise grows like √B (rank error bound ≈ 31 rows at B = 64, b = 1, α = 0.05; 44 at B = 128).
#: 64 bins kept the Adult median within ±1 year at ε = 0.01 in 97% of releases (128: 80%),
#: and at ε ≥ 0.1 both always did (docs/statistics.md, "Quantiles").
DEFAULT_BINS = 64
MAX_BINS = 1 << 16
#: Released cells (keys × bins) in one quantile query: one Laplace vector of this length.
MAX_CELLS = 1 << 20
MAX_QUANTILES = 1000
#: α of the guard that keeps target ranks away from the ends (min/max), fixed so that the
#: released value does not depend on the alpha asked for the interval.
GUARD_ALPHA = 0.05
#: The grid sampler's realised scale is within ≈ 2^-26 of the calibrated one; the rank bound
#: uses a slightly wider scale so that it covers the discrete distribution actually sampled.
_SCALE_MARGIN = 1.0 + 2.0**-20


# --- validation (before any spend) ----------------------------------------------------------
def check_quantiles(value: Any) -> tuple[float, ...]:
    """q as a number or a non-empty sequence of numbers in [0, 1] (at most 1000).

    :param value: the ``q=`` given; anything else, or repeated numbers, raises ``ParameterError("q", …)``.
    """
    expected = "a number in [0, 1] or a non-empty list of them"
    items = [value] if isinstance(value, int | float) and not isinstance(value, bool) else value
    if isinstance(items, str | bytes) or not isinstance(items, Sequence) or not 0 < len(items) <= MAX_QUANTILES:
        raise ParameterError("q", expected, value)
    out = []
    for item in items:
        number = check_finite("q", item, expected)
        if not 0.0 <= number <= 1.0:
            raise ParameterError("q", expected, value)
        out.append(number)
    if len(set(out)) != len(out):
        raise ParameterError("q", "distinct numbers in [0, 1]", value)
    return tuple(out)


def check_bins(value: Any) -> int:
    """The ``bins=`` given (``value``): a whole number from 2 to :data:`MAX_BINS`, else ``ParameterError("bins", …)``."""
    check_count("bins", value, minimum=2, maximum=MAX_BINS)
    return int(value)


def bin_scale(bounds: tuple[float, float], bins: int) -> float:
    """s = B/(U − L): every engine puts a clamped value v in bin min(⌊(v − L)·s⌋, B − 1).

    One subtraction and one multiplication, in float64: the same operations in every engine,
    so every engine assigns every row to the same bin.

    :param bounds: the clamping bounds (L, U), L < U.
    :param bins: B, the number of equal bins of [L, U].
    """
    return bins / (bounds[1] - bounds[0])


# --- accuracy ------------------------------------------------------------------------------
def rank_error(scale: float, bins: int, alpha: float) -> float:
    """t with P(some noisy cumulative count is off by ≥ t) ≤ α, for B = ``bins`` Laplace(``scale``) noises.

    Solves 2·inf_λ e^{−λt}(1 − λ²b²)^{−B} = α (Doob's maximal inequality; see the module
    docstring). In units of b, the optimal λb is u = τ/(B + √(B² + τ²)) at t = τ·b.

    :param scale: b, the Laplace scale of each bin count (0 gives t = 0).
    :param alpha: α, strictly between 0 and 1.
    """
    alpha = check_alpha(alpha)
    if scale == 0:
        return 0.0
    target = math.log(alpha / 2.0)

    def log_bound(tau: float) -> float:
        u = tau / (bins + math.hypot(bins, tau))
        return -u * tau - bins * math.log1p(-u * u)

    low, high = 0.0, 1.0
    while log_bound(high) > target:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (low, middle) if log_bound(middle) <= target else (middle, high)
    return high * scale * _SCALE_MARGIN


def accuracy_note(*, rank: float, bounds: tuple[float, float], bins: int, alpha: float) -> str:
    """The release's accuracy statement: with probability ≥ 1 − ``alpha`` every true rank is within
    (1 + q)·``rank`` rows (:func:`rank_error`), values resolved to bins of width (U − L)/``bins``
    of ``bounds`` (L, U)."""
    width = (bounds[1] - bounds[0]) / bins
    return (
        f"with probability ≥ {1 - alpha:g}, every released quantile's true rank is within (1 + q)·{rank:.4g} rows "
        f"of q·n; values are resolved to bins of width {width:.4g}"
    )


def quantile_notes(quantiles: Sequence[float], bins: int, bounds: tuple[float, float]) -> tuple[str, ...]:
    """What every quantile release states about its method: one noisy histogram of ``bins`` bins
    of ``bounds`` (L, U), and for 0 or 1 among ``quantiles`` what min/max mean here."""
    width = (bounds[1] - bounds[0]) / bins
    notes = [
        f"quantiles post-processed from one noisy histogram of {bins} bins of width {width:.4g} "
        "(cumulative counts made monotone, linear inside a bin); all q share its ε; witness() is the histogram's"
    ]
    if any(q in (0.0, 1.0) for q in quantiles):
        notes.append(
            "min/max are the 0/1 quantiles within the bounds, their rank kept above the noise level: "
            "the exact minimum and maximum are not releasable"
        )
    return tuple(notes)


# --- post-processing -----------------------------------------------------------------------
def monotone_cumulative(counts: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """[0, c₁, c₁+c₂, …] made non-decreasing: the mean of the running max and the reversed running min.

    If every raw cumulative count is within t of a non-decreasing truth, so is each of the two
    envelopes, hence their mean: the fix-up never loosens the rank bound.

    :param counts: the B noisy bin counts, in bin order (B + 1 cumulative values come back).
    """
    raw = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    upper = np.maximum.accumulate(raw)
    lower = np.minimum.accumulate(raw[::-1])[::-1]
    return (upper + lower) / 2.0


def value_at_rank(cumulative: npt.NDArray[np.float64], rank: float, bounds: tuple[float, float]) -> float:
    """The smallest x where the (monotone) cumulative count reaches ``rank``, linear inside its bin.

    :param cumulative: the B + 1 monotone cumulative counts (:func:`monotone_cumulative`).
    :param bounds: the clamping bounds (L, U), cut into B equal bins; the result is in [L, U].
    """
    low, high = bounds
    bins = cumulative.size - 1
    width = (high - low) / bins
    j = int(np.searchsorted(cumulative[1:], rank, side="left"))  # first bin whose end reaches the rank
    if j >= bins:
        return high
    start, end = float(cumulative[j]), float(cumulative[j + 1])
    fraction = 0.0 if end <= start else min(max((rank - start) / (end - start), 0.0), 1.0)
    return min(max(low + width * (j + fraction), low), high)


def target_rank(q: float, total: float, guard: float) -> float:
    """q·ñ, kept within [guard, ñ − guard]; ñ/2 when the total cannot hold both guards."""
    if total <= 2.0 * guard:
        return total / 2.0
    return min(max(q * total, guard), total - guard)


def estimate(
    counts: npt.NDArray[np.float64], quantiles: Sequence[float], bounds: tuple[float, float], guard: float
) -> list[float]:
    """The released values for ``quantiles`` from one vector of noisy bin counts.

    :param counts: the B noisy bin counts, in bin order.
    :param bounds: the clamping bounds (L, U); a total ≤ 0 gives their centre for every q.
    :param guard: the rank kept away from each end (:func:`target_rank`; t at :data:`GUARD_ALPHA`).
    """
    cumulative = monotone_cumulative(counts)
    total = float(cumulative[-1])
    if total <= 0:  # nothing, or noise only: the centre, the least wrong guess
        return [(bounds[0] + bounds[1]) / 2.0] * len(quantiles)
    return [value_at_rank(cumulative, target_rank(q, total, guard), bounds) for q in quantiles]


def interval(
    counts: npt.NDArray[np.float64], q: float, bounds: tuple[float, float], margin: float, guard: float
) -> tuple[float, float]:
    """Values whose noisy rank is within (1 + q)·``margin`` of the target, widened to whole bins.

    :param counts: the B noisy bin counts, in bin order.
    :param bounds: the clamping bounds (L, U); the interval stays inside them.
    :param guard: the rank kept away from each end, as for :func:`estimate`.
    """
    cumulative = monotone_cumulative(counts)
    total = max(float(cumulative[-1]), 0.0)
    low, high = bounds
    width = (high - low) / (cumulative.size - 1)
    rank = target_rank(q, total, guard)
    spread = (1.0 + q) * margin
    below = value_at_rank(cumulative, rank - spread, bounds)
    above = value_at_rank(cumulative, rank + spread, bounds)
    return (max(low, low + width * math.floor((below - low) / width)), min(high, low + width * math.ceil((above - low) / width)))


# --- the release ---------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)  # the readable repr of Release (dpwitness.mechanisms.report)
class QuantileRelease(Release):
    """Quantiles post-processed from one noisy histogram (``histogram``, a Laplace release).

    ``value`` is a number (one q, ungrouped), {q: value} (several q), {key: value} (grouped,
    one q) or {(key, q): value}. ``scale`` is the Laplace scale of each bin count, not of the
    quantile; ``interval`` is the rank-based interval (see :func:`interval`). ``witness()``
    witnesses the histogram's Laplace mechanism, the only noisy step.
    """

    histogram: Release | None = None
    quantiles: tuple[float, ...] = ()
    bounds: tuple[float, float] = (0.0, 0.0)
    bins: int = DEFAULT_BINS
    keys: tuple[Any, ...] | None = None
    guard: float = 0.0
    #: The Laplace scale the rank bound uses: the realised sampler's, with a margin.
    noise_scale: float = 0.0
    _counts: dict[Any, npt.NDArray[np.float64]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def rank_error(self) -> float:
        """t at this release's alpha: every noisy cumulative count (per key) is within t, w.p. ≥ 1 − α."""
        return rank_error(self.noise_scale, self.bins, self.alpha)

    @property
    def half_width(self) -> float:
        return math.nan

    @property
    def interval(self) -> Any:
        margin = self.rank_error
        pairs = {
            (key, q): interval(counts, q, self.bounds, margin, self.guard)
            for key, counts in self._counts.items()
            for q in self.quantiles
        }
        return _shaped(pairs, self.keys, self.quantiles)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(
            quantiles=list(self.quantiles),
            bins=self.bins,
            bin_width=(self.bounds[1] - self.bounds[0]) / self.bins,
            rank_error=self.rank_error,
            variance=None,
            parts=[] if self.histogram is None else [self.histogram.to_dict()],
        )
        return data


def quantile_release(
    histogram: Release,
    *,
    quantiles: tuple[float, ...],
    bounds: tuple[float, float],
    bins: int,
    keys: tuple[Any, ...] | None,
    common: dict[str, Any],
) -> QuantileRelease:
    """Compose the release from the noisy histogram: ``histogram.value`` maps each cell (a bin,
    or (key…, bin) when grouped by ``keys``) to its noisy count. ``quantiles`` are the q
    (checked, distinct), ``bounds`` (L, U) and ``bins`` the histogram's, and ``common`` the
    fields every release of the query carries (epsilon, query, neighbours, notes, …)."""
    assert isinstance(histogram.value, dict) and histogram.mechanism is not None
    noise = histogram.mechanism.noise
    scale = _SCALE_MARGIN * max(histogram.scale, noise.scale if isinstance(noise, GridLaplace) else 0.0)
    guard = rank_error(scale, bins, GUARD_ALPHA)
    cells = histogram.value
    counts: dict[Any, npt.NDArray[np.float64]] = {}
    for key in keys if keys is not None else (None,):
        prefix = () if key is None else (key if isinstance(key, tuple) else (key,))
        counts[key] = np.array([cells[(*prefix, j) if prefix else j] for j in range(bins)], dtype=np.float64)
    values = {
        (key, q): value
        for key, vector in counts.items()
        for q, value in zip(quantiles, estimate(vector, quantiles, bounds, guard), strict=True)
    }
    return QuantileRelease(
        value=_shaped(values, keys, quantiles),
        sensitivity=histogram.sensitivity,
        scale=histogram.scale,
        randomness=histogram.randomness,
        seeded=histogram.seeded,
        mechanism=histogram.mechanism,
        histogram=histogram,
        quantiles=quantiles,
        bounds=bounds,
        bins=bins,
        keys=keys,
        guard=guard,
        noise_scale=scale,
        _counts=counts,
        **common,
    )


def _shaped(pairs: dict[tuple[Any, float], Any], keys: tuple[Any, ...] | None, quantiles: tuple[float, ...]) -> Any:
    if keys is None:
        if len(quantiles) == 1:
            return pairs[None, quantiles[0]]
        return {q: pairs[None, q] for q in quantiles}
    if len(quantiles) == 1:
        return {key: pairs[key, quantiles[0]] for key in keys}
    return dict(pairs)


__all__ = [
    "DEFAULT_BINS",
    "QuantileRelease",
    "check_bins",
    "check_quantiles",
    "estimate",
    "monotone_cumulative",
    "quantile_notes",
    "quantile_release",
    "rank_error",
]
