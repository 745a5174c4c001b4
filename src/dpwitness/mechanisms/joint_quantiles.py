"""Several quantiles of one column in one ε-DP release: JointExp on a public grid.

The mechanism is JointExp (Gillenwater, Joseph, Kulesza, "Differentially Private Quantiles",
ICML 2021, Section 3), run over the edges of a public grid instead of the gaps between data
points. The column, clamped to [L, U], is cut into B equal bins exactly as for the single
quantiles (:func:`dpwitness.mechanisms.quantiles.bin_scale`); the engine's exact count per
bin is the input. With C(e) the number of records in bins below edge e (e = 0…B, value
L + e·(U − L)/B), levels q₁ < … < q_m, w_j = q_j − q_{j−1} (q₀ = 0, q_{m+1} = 1) and n = C(B),
the output is a non-decreasing tuple of edges e₁ ≤ … ≤ e_m (e₀ = 0, e_{m+1} = B) with utility

    u(e) = −Σ_{j=1}^{m+1} | C(e_j) − C(e_{j−1}) − w_j·n |,

drawn with probability ∝ exp(ε·u(e) / (2Δ)) (the exponential mechanism, McSherry and Talwar
2007, over a finite output set with the counting base measure: ε-DP for any utility of
sensitivity Δ). The grid replaces the paper's data intervals and their lengths; the proof is
the same, and the released values are grid edges, a set that does not depend on the data.

Δ of the utility, from the relation (the paper states Δ = 2 for swap neighbours; its code,
google-research/dp_multiq ``compute_log_phi``, uses 2(1 − min_j w_j) for add/remove; both
re-derived here):

* replace one record (n fixed): one record leaves one gap and enters another, two terms move
  by 1 each: Δ = 2.
* add/remove one record: n moves by 1, so every target w_j·n moves by w_j, and the gap k that
  holds the record moves its count by 1: term k moves by ≤ 1 − w_k, every other by ≤ w_j,
  in all ≤ 2(1 − w_k). Δ = 2(1 − min_j w_j), reached when gap k is over its target and the
  others under theirs. Not 1: calibrated with Δ = 1 (or with Δ/2) the loss exceeds ε, and the
  tests show it on 3–4 records.

Sampling: the forward dynamic program A_j(e) = log Σ_{a ≤ e} exp(A_{j−1}(a) + φ_j(a, e)) in
log space, O(m·B·log B) (:func:`joint_tables`), then e_m, e_{m−1}, … drawn backwards, each
from its exact conditional. Exact: every draw (:func:`dpwitness.noise.draw_log_categorical` on the secure bit
source, or a seeded one marked NOT for production), which samples the dyadic weights of
:func:`dpwitness.noise.dyadic_weights` with no floating point at all, so no output, however
unlikely, is rounded to probability 0 or inflated. Floating point: the log-weights (the DP
tables), in float64. Their rounding error is bounded by :func:`float_margin` (a hand-derived
bound, not a machine-checked one) and taken out of ε before calibrating: ε − margin, the margin
< ε·2^-6 (≈ 0.14% of ε for 3 levels on 4096 bins), from public numbers only (B, m, ε, Δ and the
cap n ≤ 2^30), as the Laplace sampler charges its table quantisation. The tests enumerate the
realised distribution exactly on small inputs and check its worst log-ratio over neighbours.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_alpha, check_finite, check_positive_finite
from dpwitness.mechanisms.release import Release
from dpwitness.noise import BitSource, bit_source, draw_log_categorical
from dpwitness.privacy.neighbours import Neighbours, check_bounds

#: Bins of [L, U] for :func:`bin_counts` unless told otherwise. The values released are bin
#: edges, so B sets the resolution; the utility loss grows only like m·log B, and the program
#: costs m·B·log B, so the grid is fine (the single quantiles' 64 bins are set by their noise).
DEFAULT_BINS = 4096
#: Largest B, the single quantiles' too (an engine aggregate of up to 2^16 cells).
MAX_BINS = 1 << 16
#: Most levels in one release (keeps the float64 margin under ε·2^-6).
MAX_QUANTILES = 16
#: Largest total count: the float64 margin is computed for it, so that it does not depend on the data.
MAX_RECORDS = 1 << 30
#: The float64 rounding of the log-weights may cost at most this share of ε (see float_margin).
MAX_MARGIN_SHARE = 2.0**-6


# --- validation (before any spend) ----------------------------------------------------------
def check_levels(value: Any) -> tuple[float, ...]:
    """The quantile levels ``value``: numbers strictly increasing in (0, 1), else ``ParameterError("quantiles", …)``."""
    expected = f"a non-empty list of at most {MAX_QUANTILES} numbers strictly increasing in (0, 1)"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not 0 < len(value) <= MAX_QUANTILES:
        raise ParameterError("quantiles", expected, value)
    levels = tuple(check_finite("quantiles", item, expected) for item in value)
    if not all(0.0 < q < 1.0 for q in levels) or any(b <= a for a, b in itertools.pairwise(levels)):
        raise ParameterError("quantiles", expected, value)
    return levels


def check_counts(value: Any) -> npt.NDArray[np.int64]:
    """The exact counts per bin ``value``: 2 to :data:`MAX_BINS` whole numbers ≥ 0, else ``ParameterError("counts", …)``."""
    expected = f"2 to {MAX_BINS} whole numbers ≥ 0 (the exact count in each bin), at most 2^30 in all"
    try:
        counts = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("counts", expected, "not numbers") from None
    if counts.ndim != 1 or not 2 <= counts.size <= MAX_BINS:
        raise ParameterError("counts", expected, f"shape {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts != np.floor(counts)) or counts.sum() > MAX_RECORDS:
        raise ParameterError("counts", expected, "other numbers")
    return counts.astype(np.int64)


def bin_counts(values: Any, bounds: tuple[float, float], bins: int = DEFAULT_BINS) -> npt.NDArray[np.int64]:
    """The exact count per bin of ``values`` clamped to ``bounds``: what an engine's quantile aggregate holds.

    Each value goes to bin min(⌊(clamp(v) − L)·s⌋, B − 1), s = B/(U − L), the engines' rule
    (:func:`dpwitness.mechanisms.quantiles.bin_scale`). For arrays held in memory (tests, benchmarks).

    :param values: the column's values (any numbers; clamped here).
    :param bounds: the clamping bounds (L, U).
    :param bins: B, the number of equal bins (default :data:`DEFAULT_BINS`).
    """
    low, high = check_bounds(*bounds)
    data = np.clip(np.asarray(values, dtype=np.float64), low, high)
    scale = bins / (high - low)
    index = np.clip(np.floor((data - low) * scale), 0, bins - 1).astype(np.int64)
    return np.bincount(index, minlength=bins).astype(np.int64)


def utility_sensitivity(levels: Sequence[float], neighbours: Neighbours) -> float:
    """Δ of JointExp's utility: 2 under replace-one, 2(1 − min_j w_j) under add/remove (module docstring).

    :param levels: the checked levels q₁ < … < q_m; w_j are the gaps of (0, q₁, …, q_m, 1).
    :param neighbours: the relation.
    """
    if neighbours is Neighbours.REPLACE_ONE:
        return 2.0
    widths = np.diff(np.concatenate(([0.0], np.asarray(levels, dtype=np.float64), [1.0])))
    return 2.0 * (1.0 - float(widths.min()))


def float_margin(*, beta: float, bins: int, levels: int) -> float:
    """A bound on how far float64 rounding moves the log-probability of an output, for both neighbours.

    It depends on public numbers only (n at its cap :data:`MAX_RECORDS`), so both neighbours are
    drawn with the same β. Every log-weight has magnitude ≤ Λ = β·2n + (m + 1)·ln(B + 1)
    (|u| ≤ 2n); a step of the program and of the draw does ≤ 2·log2(B + 2) + 12 float64
    operations on numbers ≤ 2Λ, each off by ≤ (2Λ + 1)·2^-52. A_j carries the errors of j steps,
    and the output's probability is a product of m conditionals, each a weight over a sum:
    ≤ 2(m + 1)(m + 2) steps' errors in its logarithm, and twice that between two neighbours.
    A hand-derived bound, not a machine-checked one.

    :param beta: β, the weight of the utility (an upper bound of the one used).
    :param bins: B.
    :param levels: m, the number of levels.
    """
    size = beta * 2.0 * MAX_RECORDS + (levels + 1) * math.log(bins + 1)
    per_step = (2.0 * math.log2(bins + 2) + 12.0) * (2.0 * size + 1.0) * 2.0**-52
    return 2.0 * 2.0 * (levels + 1) * (levels + 2) * per_step


def calibrated_beta(*, epsilon: float, sensitivity: float, bins: int, levels: int) -> float:
    """β = (ε − margin)/(2Δ), the margin :func:`float_margin` at β₀ = ε/(2Δ) (< ε·2^-6 for B ≤ 2^16, m ≤ 16).

    :param epsilon: ε, checked.
    :param sensitivity: Δ of the utility (:func:`utility_sensitivity`).
    :param bins: B.
    :param levels: m, the number of levels.
    """
    margin = float_margin(beta=epsilon / (2.0 * sensitivity), bins=bins, levels=levels)
    assert margin <= MAX_MARGIN_SHARE * epsilon, "the float64 margin outgrew its share of ε"
    return (epsilon - margin) / (2.0 * sensitivity)


# --- the dynamic program --------------------------------------------------------------------
def _logaddexp(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(np.logaddexp(a, b), dtype=np.float64)


class _RangeLogSumExp:
    """log Σ_{low ≤ a < high} exp(x_a) for many ranges at once, from the aligned dyadic blocks of x.

    Every range is a union of ≤ 2·log2(E) aligned blocks, each a log-sum-exp of its terms: no
    prefix sums are subtracted, so a small sum keeps its relative precision.
    """

    def __init__(self, values: npt.NDArray[np.float64]) -> None:
        self.blocks = [np.asarray(values, dtype=np.float64)]
        while self.blocks[-1].size > 1:
            below = self.blocks[-1]
            pairs = below[: below.size // 2 * 2].reshape(-1, 2)
            self.blocks.append(_logaddexp(pairs[:, 0], pairs[:, 1]))

    def __call__(self, low: npt.NDArray[np.int64], high: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        out = np.full(low.shape, -np.inf)
        start = low.copy()
        ascending = [(p, True) for p in range(len(self.blocks))]
        for p, aligning in ascending + [(p, False) for p, _ in reversed(ascending)]:
            size = 1 << p
            take = start + size <= high
            if aligning:  # take the block of this size only where the start is not yet aligned to the next
                take &= (start & size) != 0
            if take.any():
                index = np.minimum(start >> p, self.blocks[p].size - 1)
                out = np.where(take, _logaddexp(out, self.blocks[p][index]), out)
                start = np.where(take, start + size, start)
        return out


@dataclass(frozen=True)
class JointTables:
    """The forward tables of JointExp on one grid: everything the backward draws read.

    ``cumulative[e]`` = C(e), ``targets[j]`` = w_{j+1}·n, ``beta`` = ε′/(2Δ), ``forward[j]`` = A_{j+1}
    (one row per level, B + 1 edges each).
    """

    cumulative: npt.NDArray[np.float64]
    targets: npt.NDArray[np.float64]
    beta: float
    forward: npt.NDArray[np.float64]

    def gap(self, j: int, start: npt.NDArray[np.int64] | int, end: npt.NDArray[np.int64] | int) -> Any:
        """log φ_{j+1}(start, end) = −β·|C(end) − C(start) − w_{j+1}·n| (−inf where start > end)."""
        value = -self.beta * np.abs(self.cumulative[end] - self.cumulative[start] - self.targets[j])
        return np.where(np.asarray(start) <= np.asarray(end), value, -np.inf)

    def conditional(self, j: int, following: int) -> npt.NDArray[np.float64]:
        """Log-weights of e_{j+1} (0-based level j) given the next edge ``following`` (B for the last level)."""
        edges = np.arange(self.cumulative.size)
        return np.asarray(self.forward[j] + self.gap(j + 1, edges, following), dtype=np.float64)


def joint_tables(counts: npt.NDArray[np.int64], levels: Sequence[float], beta: float) -> JointTables:
    """The forward program on the B + 1 edges for ``counts`` (checked), ``levels`` (checked) and ``beta`` = ε′/(2Δ).

    A_j(e) = log Σ_{a ≤ e} exp(A_{j−1}(a) − β·|C(e) − C(a) − t_j|) in O(B log B): C is
    non-decreasing, so the a with C(a) < C(e) − t_j form a prefix [0, s(e)), where the term is
    (A_{j−1}(a) + β·C(a)) + β·(t_j − C(e)), and the others the range [s(e), e], where it is
    (A_{j−1}(a) − β·C(a)) + β·(C(e) − t_j): two range sums of fixed sequences (:class:`_RangeLogSumExp`).
    """
    cumulative = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    widths = np.diff(np.concatenate(([0.0], np.asarray(levels, dtype=np.float64), [1.0])))
    tables = JointTables(cumulative, widths * cumulative[-1], beta, np.empty((len(levels), cumulative.size)))
    edges = np.arange(cumulative.size)
    forward = tables.forward
    forward[0] = tables.gap(0, 0, edges)
    for j in range(1, len(levels)):
        target = tables.targets[j]
        split = np.searchsorted(cumulative, cumulative - target, side="left")  # first a with C(a) ≥ C(e) − t_j
        split = np.minimum(split, edges)
        over = _RangeLogSumExp(forward[j - 1] + beta * cumulative)(np.zeros_like(edges), split)
        under = _RangeLogSumExp(forward[j - 1] - beta * cumulative)(split, edges + 1)
        forward[j] = _logaddexp(over + beta * (target - cumulative), under + beta * (cumulative - target))
    return tables


def sample_edges(tables: JointTables, bits: BitSource) -> list[int]:
    """e₁ ≤ … ≤ e_m drawn backwards from the exact conditionals of ``tables``, each one
    :func:`dpwitness.noise.draw_log_categorical` on ``bits``."""
    levels = tables.forward.shape[0]
    following = tables.cumulative.size - 1
    edges = [0] * levels
    for j in range(levels - 1, -1, -1):
        following = draw_log_categorical(tables.conditional(j, following), bits)
        edges[j] = following
    return edges


# --- the release ---------------------------------------------------------------------------
def utility_loss(*, sensitivity: float, epsilon: float, bins: int, levels: int, alpha: float) -> float:
    """R with P(u(released) < u_max − R) ≤ α: R = (2Δ/ε)·(ln C(B + m, m) + ln(1/α)) (the exponential mechanism's bound).

    Every released edge's rank C(e_j) is then within R + (−u_max) of q_j·n, −u_max being the
    grid's own resolution loss (0 when the levels' ranks fall on edges).

    :param sensitivity: Δ of the utility.
    :param epsilon: ε.
    :param bins: B (C(B + m, m) non-decreasing edge tuples).
    :param levels: m.
    :param alpha: α, strictly between 0 and 1.
    """
    outputs = math.lgamma(bins + levels + 1) - math.lgamma(levels + 1) - math.lgamma(bins + 1)
    return 2.0 * sensitivity / epsilon * (outputs + math.log(1.0 / check_alpha(alpha)))


@dataclass(frozen=True, repr=False)  # the readable repr of Release (dpwitness.mechanisms.report)
class JointQuantileRelease(Release):
    """Quantile estimates q₁ < … < q_m from one JointExp draw: ``value`` is a non-decreasing array.

    ``sensitivity`` is Δ of the utility, ``scale`` the exponential mechanism's 2Δ/ε′ (utility
    units per e-fold of probability). There is no value interval: the accuracy is stated in ranks
    (:attr:`rank_error`); ``interval`` is NaN. No ``mechanism``: witness it with the exact
    enumeration of the tests, not the Laplace witness.
    """

    quantiles: tuple[float, ...] = ()
    bounds: tuple[float, float] = (0.0, 0.0)
    bins: int = DEFAULT_BINS
    edges: tuple[int, ...] = ()

    @property
    def rank_error(self) -> float:
        """R at this release's alpha (:func:`utility_loss`): w.p. ≥ 1 − α, Σ_j |gap error| ≤ the best edge tuple's + R."""
        return utility_loss(
            sensitivity=self.sensitivity, epsilon=self.epsilon, bins=self.bins, levels=len(self.quantiles), alpha=self.alpha
        )

    @property
    def half_width(self) -> float:
        return math.nan

    def witness(self) -> Any:
        raise ValueError(
            "a JointExp release has no Laplace or Gaussian mechanism to witness: its privacy map is checked by "
            "exact enumeration of the sampled distribution (tests/mechanisms/test_joint_quantiles.py)"
        )

    @property
    def interval(self) -> Any:
        """NaN (no value interval), in the value's shape: an array, a {q: value} map or one number."""
        if isinstance(self.value, dict):
            return {q: (math.nan, math.nan) for q in self.value}
        if np.ndim(self.value) == 0:
            return (math.nan, math.nan)
        nan = np.full(len(self.quantiles), math.nan)
        return (nan, nan.copy())

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(
            quantiles=list(self.quantiles),
            bounds=list(self.bounds),
            bins=self.bins,
            bin_width=(self.bounds[1] - self.bounds[0]) / self.bins,
            edges=list(self.edges),
            rank_error=self.rank_error,
            variance=None,
        )
        return data


def joint_quantiles(
    counts: Any,
    quantiles: Sequence[float],
    *,
    bounds: tuple[float, float],
    epsilon: float,
    neighbours: Neighbours | str,
    seed: int | np.random.Generator | None = None,
    query: str = "quantiles",
    alpha: float = 0.05,
    sensitivity: float | None = None,
) -> JointQuantileRelease:
    """Release the ``quantiles`` of one column at once: JointExp on the grid of ``counts``, ε-DP, ε charged once.

    :param counts: the exact count per bin of the column clamped to ``bounds`` (B = len(counts)
        equal bins, the engines' quantile aggregate; :func:`bin_counts` for an array).
    :param quantiles: the levels, strictly increasing in (0, 1).
    :param bounds: the clamping bounds (L, U), finite, L < U.
    :param epsilon: ε > 0, spent once for every level.
    :param neighbours: the relation Δ of the utility is derived for (:func:`utility_sensitivity`).
    :param seed: None for the secure bit source; a seed gives a reproducible, NOT-for-production draw.
    :param query: what the release names (default "quantiles").
    :param alpha: α of the stated rank bound (default 0.05).
    :param sensitivity: Δ of the utility as the query derived it (a privacy unit of k rows: k
        times the relation's, :meth:`dpwitness.query.queries.Query.parts`); None: one row's
        (:func:`utility_sensitivity`). Never below one row's.
    """
    levels = check_levels(quantiles)
    low, high = check_bounds(*bounds)
    epsilon = check_positive_finite("epsilon", epsilon)
    relation = Neighbours.parse(neighbours)
    exact = check_counts(counts)
    bins = exact.size
    per_row = utility_sensitivity(levels, relation)
    if sensitivity is None:
        sensitivity = per_row
    elif not (check_positive_finite("sensitivity", sensitivity) >= per_row):
        raise ParameterError("sensitivity", f"at least one row's utility Δ ({per_row:g} under {relation})", sensitivity)
    beta = calibrated_beta(epsilon=epsilon, sensitivity=sensitivity, bins=bins, levels=len(levels))
    bits = bit_source(seed)
    edges = sample_edges(joint_tables(exact, levels, beta), bits)
    width = (high - low) / bins
    values = np.array([high if e == bins else low + width * e for e in edges], dtype=np.float64)
    notes = (
        f"JointExp (Gillenwater et al. 2021) over the {bins + 1} edges of {bins} bins of width {width:.4g}: "
        f"all {len(levels)} levels in one draw, ε charged once; values are grid edges",
        f"utility Δ = {sensitivity:g} under {relation.description} "
        + ("(one record moves two gap counts)" if relation is Neighbours.REPLACE_ONE else "(2·(1 − smallest level gap))")
        + ("" if sensitivity == per_row else f" × {sensitivity / per_row:g} rows per unit"),
        f"with probability ≥ {1 - alpha:g}, every released edge's rank is within "
        f"{utility_loss(sensitivity=sensitivity, epsilon=epsilon, bins=bins, levels=len(levels), alpha=alpha):.4g} rows "
        "of q·n, plus the best grid tuple's own Σ_j |gap count − target|; no value interval",
    )
    return JointQuantileRelease(
        value=values,
        epsilon=epsilon,
        sensitivity=sensitivity,
        scale=1.0 / beta,
        query=query,
        neighbours=str(relation),
        alpha=check_alpha(alpha),
        randomness=bits.name,
        seed=None if seed is None or isinstance(seed, np.random.Generator) else int(seed),
        seeded=not bits.secure,
        notes=notes,
        distribution="exponential",
        quantiles=levels,
        bounds=(low, high),
        bins=bins,
        edges=tuple(edges),
    )


__all__ = [
    "DEFAULT_BINS",
    "JointQuantileRelease",
    "JointTables",
    "bin_counts",
    "check_counts",
    "check_levels",
    "float_margin",
    "joint_quantiles",
    "joint_tables",
    "sample_edges",
    "utility_loss",
    "utility_sensitivity",
]
