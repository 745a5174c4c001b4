"""The samplers' exact integer tables: Walker/Vose alias tables with integer thresholds (their PMFs
are exact rationals), the Laplace sampler's two levels and the discrete Gaussian's blocks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpwitness.common.caching import scoped_cache

#: L ranges over 2^LOW_BITS values (the fine, nearly-uniform level).
LOW_BITS = 20
_LOW_SIZE = 1 << LOW_BITS
_THRESHOLD_ONE = 1 << 32
_LOW_CHUNK = 1 << 16  # entries of the low level computed at a time (1 MB of float64 temporaries)


@dataclass(frozen=True)
class _AliasTable:
    """Walker/Vose alias table with integer thresholds: its PMF is an exact rational."""

    threshold: npt.NDArray[np.uint64]  # accept column c when u32 < threshold[c]
    alias: npt.NDArray[np.int64]

    @property
    def columns(self) -> int:
        return len(self.threshold)

    def pmf_numerators(self) -> npt.NDArray[np.float64]:
        """P(i) · columns · 2^32, exactly (as integers held in float64, < 2^53)."""
        kept = self.threshold.astype(np.float64)
        moved = np.bincount(self.alias, weights=_THRESHOLD_ONE - kept, minlength=self.columns)  # sums < 2^53: exact
        return kept + moved


def _alias_from_weights(
    weights: list[int] | npt.NDArray[np.int64], columns: int, *, one: int = _THRESHOLD_ONE, full: int = _THRESHOLD_ONE
) -> _AliasTable:
    """Exact integer alias table (Walker's chain construction, vectorised); ``sum(weights) == columns · one``.

    Column i keeps itself when its uniform draw is below ``threshold[i]`` and otherwise moves to
    ``alias[i]``. Lay the deficits one − w of the small columns (w < one) end to end on a line,
    D_i their running sums, and the excesses w − one of the large columns likewise, C_j: small
    i is filled by the large whose excess segment holds D_{i−1}, and large j, once it has given
    everything up to the end D of the small deficit that crosses C_j, keeps one − (D − C_j) and
    is filled by large j + 1 (or is exactly full: ``full``, its own alias; ``one`` for 32-bit
    draws compared with ``<``, ``one − 1`` for the 53-bit tables, the same distribution). So
    every column's mass is exactly its weight (tests read it back with :meth:`pmf_numerators`).
    Unsigned 64-bit arithmetic: the running sums stay ≤ columns · one ≤ 2^63.
    """
    w = np.zeros(columns, dtype=np.uint64)
    given = weights.astype(np.uint64) if isinstance(weights, np.ndarray) else np.array([int(v) for v in weights], dtype=np.uint64)
    w[: len(given)] = given
    unit = np.uint64(one)
    small = np.flatnonzero(w < unit)
    large = np.flatnonzero(w >= unit)
    threshold = np.full(columns, np.uint64(full), dtype=np.uint64)
    alias = np.arange(columns, dtype=np.int64)
    if len(small):
        deficit_ends = np.cumsum(unit - w[small])  # D_i
        excess_ends = np.cumsum(w[large] - unit)  # C_j; C_last = D_last
        starts = np.concatenate(([np.uint64(0)], deficit_ends[:-1]))
        threshold[small] = w[small]
        alias[small] = large[np.searchsorted(excess_ends, starts, side="right")]
        crossing = deficit_ends[np.minimum(np.searchsorted(deficit_ends, excess_ends, side="left"), len(small) - 1)]
        short = (crossing > excess_ends) & (excess_ends > 0)  # large j gave past its excess: large j + 1 fills it
        chained = large[:-1][short[:-1]]
        threshold[chained] = unit - (crossing[:-1][short[:-1]] - excess_ends[:-1][short[:-1]])
        alias[chained] = large[1:][short[:-1]]
    return _AliasTable(threshold, alias)


@scoped_cache(64, scoped_maxsize=32)  # per analyst in the service: see dpwitness.common.caching
def _high_table(m: int) -> tuple[_AliasTable, int]:
    """P(J = j) ∝ 2^(−j·c/m) for j < ceil(m / c)."""
    count = -(-m // _LOW_SIZE)
    columns = 1 << (count - 1).bit_length()
    ideal = np.exp2(-np.arange(count, dtype=np.float64) * _LOW_SIZE / m)
    total = columns * _THRESHOLD_ONE
    exact = ideal / ideal.sum() * total
    weights = np.floor(exact).astype(np.int64)
    # Largest-remainder rounding: each weight is within one unit (2^-32 of a column) of ideal.
    shortfall = total - int(weights.sum())
    weights[np.argsort(weights - exact)[:shortfall]] += 1
    return _alias_from_weights(weights, columns), count


@dataclass(frozen=True)
class _LowTable:
    thresholds: npt.NDArray[np.uint32]  # accept L = l when a 32-bit draw is below thresholds[l]
    spread: float  # max − min over l of log(thresholds[l]) + l·ln2/m (the level's deviation from log-linear)


@scoped_cache(16)  # 4 MB each; one copy for every cache scope that asks for the same m
def _low_table(m: int) -> _LowTable:
    """Accept L = l with probability thresholds[l] / 2^32 ≈ 2^(−l/m), and the table's spread.

    log(thresholds[l]) + l·ln2/m = 32·ln2 + log1p(−r_l), r_l = (x_l − thresholds[l])/x_l with
    x_l = 2^32·2^(−l/m) (r_l < 2^-31; the gap x_l − thresholds[l] is exact in float64), and
    |log1p(−r) + r| ≤ r² < 10^-18: so the spread is that of −r_l, inside the deviation's float slack.
    """
    thresholds: npt.NDArray[np.uint32] = np.empty(_LOW_SIZE, dtype=np.uint32)
    low, high = np.inf, -np.inf
    # In chunks: the float64 temporaries of the whole level (16 MB) stayed in the process's heap
    # after the table was built; each value is computed alone, so the chunking changes no bit.
    for start in range(0, _LOW_SIZE, _LOW_CHUNK):
        ideal = np.arange(start, start + _LOW_CHUNK, dtype=np.float64)
        np.divide(ideal, -m, out=ideal)
        np.exp2(ideal, out=ideal)
        ideal *= _THRESHOLD_ONE  # exact: a power of two
        kept = np.floor(ideal)
        if start == 0:
            kept[0] = _THRESHOLD_ONE - 1  # x_0 = 2^32 exactly; every other x_l < 2^32
        thresholds[start : start + _LOW_CHUNK] = kept
        np.subtract(ideal, kept, out=kept)
        kept /= ideal
        low, high = min(low, float(kept.min())), max(high, float(kept.max()))
    return _LowTable(thresholds, high - low)


def _low_thresholds(m: int) -> npt.NDArray[np.uint32]:
    """Accept L = l with probability thresholds[l] / 2^32 ≈ 2^(−l/m)."""
    return _low_table(m).thresholds


# --- the discrete Gaussian's tables (see dpwitness.noise.gaussian) -------------------------------
_GAUSS_BLOCK_BITS = 11
_GAUSS_COLUMN_BITS = 10
_GAUSS_BLOCK = 1 << _GAUSS_BLOCK_BITS
_GAUSS_COLUMNS = 1 << _GAUSS_COLUMN_BITS
_GAUSS_BLOCKS = _GAUSS_COLUMNS - 1  # the last column is the tail
_GAUSS_TABLE = _GAUSS_BLOCKS * _GAUSS_BLOCK
#: Both acceptance tests compare 53 uniform bits with a 53-bit integer threshold (exact in float64).
_ONE53 = 1 << 53


@dataclass(frozen=True)
class _GaussianTables:
    alias: _AliasTable  # 53-bit thresholds; a full column is its own alias
    accept: npt.NDArray[np.uint64]  # ⌊2^53 · exp(−(y² − (c·b)²)/2s²)⌋ for y < K
    weights: tuple[int, ...]  # exact alias-table mass of each column, Σ = columns · 2^53
    q: npt.NDArray[np.float64]  # Q(y) = weights[b] · accept[y] for y < K
    tail: float  # Q's mass on the tail y ≥ K
    normaliser: float  # Σ over x ∈ ℤ of Q(|x|)


def _alias53(weights: list[int]) -> _AliasTable:
    """Exact Vose construction with 53-bit thresholds (full columns alias themselves)."""
    return _alias_from_weights(weights, len(weights), one=_ONE53, full=_ONE53 - 1)


def _alias53_masses(table: _AliasTable) -> list[int]:
    """Each column's exact probability × columns · 2^53, read back from the table."""
    masses = [0] * table.columns
    for column, (kept, other) in enumerate(zip(table.threshold.tolist(), table.alias.tolist(), strict=True)):
        if other == column:
            masses[column] += _ONE53
        else:
            masses[column] += int(kept)
            masses[other] += _ONE53 - int(kept)
    return masses


@scoped_cache(4, scoped_maxsize=2)  # 32 MB each
def _gaussian_tables(s: float) -> _GaussianTables:
    starts = np.arange(_GAUSS_BLOCKS, dtype=np.float64) * _GAUSS_BLOCK
    ideal = np.exp(-(starts**2) / (2.0 * s * s))
    total = _GAUSS_COLUMNS * _ONE53
    exact = [float(v) for v in ideal / ideal.sum()]
    # Python integers: the weights need 63 bits. Each is within one unit of total·ideal (largest
    # remainder) and at least 1, so every block, and the tail column, has positive probability.
    weights = [max(1, int(v * total)) for v in exact] + [1]
    shortfall = total - sum(weights)
    order = np.argsort([-(v * total - int(v * total)) for v in exact])
    i = 0
    while shortfall > 0:
        weights[int(order[i % len(order)])] += 1
        shortfall -= 1
        i += 1
    while shortfall < 0:  # only if clamping to 1 overshot: take from the largest
        biggest = max(range(_GAUSS_BLOCKS), key=weights.__getitem__)
        weights[biggest] += shortfall
        shortfall = 0
    table = _alias53(weights)
    # y = c·b + l: y² − (c·b)² = l·(2·c·b + l), an integer < 2^44, so exact in float64 (one block per row)
    low = np.arange(_GAUSS_BLOCK, dtype=np.float64)
    exponent = low * (2.0 * starts[:, None] + low)
    exponent = -exponent.reshape(-1)
    exponent /= 2.0 * s * s
    within = np.exp(exponent, out=exponent)
    accept_float = np.floor(np.ldexp(within, 53))  # < 2^53 unless within = 1
    accept_float[within >= 1.0] = float(_ONE53 - 1)
    accept = accept_float.astype(np.int64).view(np.uint64)  # exact: integers < 2^53
    masses = tuple(_alias53_masses(table))
    # Q(y) = weight[b]·accept[y] in float64 (relative rounding ≤ 2^-51, inside _TV_SLACK)
    block_masses = np.array([float(w) for w in masses[:_GAUSS_BLOCKS]])[:, None]
    q = (block_masses * accept_float.reshape(_GAUSS_BLOCKS, _GAUSS_BLOCK)).reshape(-1)
    tail = float(masses[-1]) * _GAUSS_BLOCK * float(_ONE53)
    normaliser = 2.0 * (float(np.sum(q)) + tail) - float(q[0])
    return _GaussianTables(table, accept, masses, q, tail, normaliser)
