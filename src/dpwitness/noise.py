"""Randomness: bit sources and an exact discrete Laplace sampler on a power-of-two grid.

Why a grid (Mironov 2012): ``x + float_laplace`` produces doubles whose set of reachable
values depends on ``x``, so an output can identify the input.  Here every release is
``(round(x / γ) + X) · γ`` where γ = 2^k and X is an integer drawn *exactly* from the
distribution described below, using only integer operations on random bits.  The set of
possible outputs is γ·ℤ whatever the input, and the privacy loss is computed from the
integer tables the sampler really uses (see :meth:`GridLaplace.max_log_ratio`).

The sampled distribution.  With an integer ``m`` (≈ 2^27) and G ≥ 0,

    G = m·H + R,   H ~ Geometric(1/2)  (trailing zeros of random bits: exact),
    R = c·J + L < m,  P(J = j) ∝ alias table,  P(L = l) ∝ thresholds[l] / 2^32,

and X = ±G with the pair (−, 0) rejected, so P(X = x) ∝ w(|x|) with
w(g) ∝ 2^(−g/m) up to the tables' 32-bit quantisation, which the privacy map charges
exactly.  That is a discrete Laplace with scale m·γ/ln 2 in real units.

Timing: rejected draws are discarded independently of the value finally accepted, so the
number of draws says nothing about the noise or the input (cf. Jin et al., S&P 2022).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import numpy as np
import numpy.typing as npt

LN2 = math.log(2.0)
#: m lies in [2^TABLE_BITS, 2^(TABLE_BITS+1)); sets the grid's fineness relative to the scale.
GRID_STEPS_LOG2 = 27
#: L ranges over 2^LOW_BITS values (the fine, nearly-uniform level).
LOW_BITS = 20
_LOW_SIZE = 1 << LOW_BITS
_THRESHOLD_ONE = 1 << 32
#: Relative safety margin so that table quantisation never pushes the loss above ε.
_MARGIN = 2.0**-26
_CHUNK = 1 << 16
#: The tables' typical quantisation charge (measured ≈ 4·10^-10); reserving it up front means
#: calibration almost always needs one pass.
_EXPECTED_DEVIATION = 1e-9


class BitSource(Protocol):
    """Anything that returns uniformly random 64-bit words."""

    name: str
    secure: bool

    def words(self, n: int) -> npt.NDArray[np.uint64]: ...


class SecureBits:
    """The operating system's CSPRNG (``os.urandom`` → getrandom(2)). The default."""

    name = "os.urandom (cryptographically secure)"
    secure = True

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)


class SeededBits:
    """Deterministic PCG64 stream for reproducible runs. NOT for production releases."""

    secure = False

    def __init__(self, seed: int | np.random.SeedSequence | np.random.Generator) -> None:
        if isinstance(seed, np.random.Generator):
            self._bit_generator = seed.bit_generator
            self.name = "numpy Generator supplied by caller (seeded, not for production)"
        else:
            sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
            self._bit_generator = np.random.PCG64(sequence)
            self.name = f"PCG64 seeded with {seed!r} (reproducible, NOT for production)"

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        raw: npt.NDArray[np.uint64] = self._bit_generator.random_raw(n)
        return raw


SECURE_BITS = SecureBits()


def bit_source(seed: int | np.random.Generator | None) -> BitSource:
    """The secure source when ``seed`` is None, otherwise a seeded, reproducible one."""
    if seed is None:
        return SECURE_BITS
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer, np.random.Generator)):
        raise TypeError(f"seed must be an integer, a numpy Generator or None, got {seed!r}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return SeededBits(seed if isinstance(seed, np.random.Generator) else int(seed))


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
        moved = _THRESHOLD_ONE - kept
        counts = kept.copy()
        np.add.at(counts, self.alias, moved)
        return counts


def _alias_from_weights(weights: list[int], columns: int) -> _AliasTable:
    """Exact integer Vose construction; ``sum(weights) == columns · 2^32``."""
    scaled = list(weights) + [0] * (columns - len(weights))
    threshold = [0] * columns
    alias = list(range(columns))
    small = [i for i, w in enumerate(scaled) if w < _THRESHOLD_ONE]
    large = [i for i, w in enumerate(scaled) if w >= _THRESHOLD_ONE]
    while small and large:
        s, g = small.pop(), large.pop()
        threshold[s] = scaled[s]
        alias[s] = g
        scaled[g] -= _THRESHOLD_ONE - scaled[s]
        (small if scaled[g] < _THRESHOLD_ONE else large).append(g)
    for i in small + large:  # exactly full columns remain
        threshold[i] = _THRESHOLD_ONE
    return _AliasTable(np.array(threshold, dtype=np.uint64), np.array(alias, dtype=np.int64))


@lru_cache(maxsize=64)
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
    return _alias_from_weights([int(w) for w in weights], columns), count


@lru_cache(maxsize=16)
def _low_thresholds(m: int) -> npt.NDArray[np.uint64]:
    """Accept L = l with probability thresholds[l] / 2^32 ≈ 2^(−l/m)."""
    ideal = np.exp2(-np.arange(_LOW_SIZE, dtype=np.float64) / m) * _THRESHOLD_ONE
    thresholds: npt.NDArray[np.uint64] = np.minimum(np.floor(ideal), _THRESHOLD_ONE - 1).astype(np.uint64)
    return thresholds


def _trailing_zeros(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    lowest = x & (~x + np.uint64(1))
    return np.bitwise_count(lowest - np.uint64(1)).astype(np.int64)


@dataclass(frozen=True)
class GridLaplace:
    """Exact discrete Laplace noise on the grid γ·ℤ, γ = 2^granularity_log2.

    ``m`` grid steps halve the probability, so the real-unit scale is m·γ/ln 2.
    """

    granularity_log2: int
    m: int
    _deviation: float = field(repr=False, compare=False, default=float("nan"))

    @staticmethod
    @lru_cache(maxsize=256)
    def calibrate(*, sensitivity: float, epsilon: float, dimension: int = 1) -> GridLaplace:
        """The grid noise whose privacy loss for an L1 shift of ``sensitivity`` is ≤ ε.

        Inputs are rounded to the grid; a rounded shift is at most
        ceil(Δ/γ) + dimension − 1 steps, and that whole count is charged, together with
        the tables' quantisation (so m is raised until the exact loss fits under ε).
        """
        scale = sensitivity / epsilon
        exponent = math.frexp(scale * LN2)[1] - 1  # 2^exponent ≤ scale·ln2 < 2^(exponent+1)
        granularity_log2 = exponent - GRID_STEPS_LOG2
        steps = _max_steps(sensitivity, granularity_log2, dimension)
        budget = epsilon * (1.0 - _MARGIN) - _EXPECTED_DEVIATION
        while True:
            candidate = GridLaplace(granularity_log2, math.ceil(steps * LN2 / budget))
            if candidate.loss_for_steps(steps) <= epsilon:
                return candidate
            budget -= max(candidate.loss_for_steps(steps) - epsilon, epsilon * _MARGIN)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_deviation", self._table_deviation())

    @property
    def granularity(self) -> float:
        return math.ldexp(1.0, self.granularity_log2)

    @property
    def scale(self) -> float:
        """The realised Laplace scale in real units (m·γ/ln 2)."""
        return self.m * self.granularity / LN2

    def steps_for_shift(self, shift: float, dimension: int = 1) -> int:
        """Largest grid-step shift that an L1 input shift of ``shift`` can cause after rounding."""
        if shift == 0:
            return 0
        return _max_steps(shift, self.granularity_log2, dimension)

    def loss_for_steps(self, steps: int) -> float:
        """Exact worst |log P(x)/P(x+s)| over all integer outputs x, for a shift of s steps.

        For s steps, log w(a) − log w(b) = (|b| − |a|)·ln2/m + e(|a|) − e(|b|), where e is the
        tables' deviation from the ideal log-linear shape; so the supremum is
        s·ln2/m + (max e − min e), attained up to the tables' own quantisation.
        """
        if steps == 0:
            return 0.0
        return steps * LN2 / self.m + self._deviation

    def _table_deviation(self) -> float:
        table, count = _high_table(self.m)
        high = np.log(table.pmf_numerators()[:count]) + np.arange(count) * _LOW_SIZE * LN2 / self.m
        low = np.log(_low_thresholds(self.m).astype(np.float64)) + np.arange(_LOW_SIZE) * LN2 / self.m
        float_slack = 1e-13
        return float(np.ptp(high) + np.ptp(low)) + float_slack

    # --- the exact PMF, for the witness ---------------------------------------------------
    def _low_level_pmf(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
        table, count = _high_table(self.m)
        p_high = table.pmf_numerators()[:count]
        p_low = _low_thresholds(self.m).astype(np.float64)
        last = self.m - (count - 1) * _LOW_SIZE  # valid L values in the last J block
        return p_high, p_low, last

    def variance_steps(self) -> float:
        """Var(X) in grid steps, from the sampler's exact tables."""
        p_high, p_low, last = self._low_level_pmf()
        count = len(p_high)
        ells = np.arange(_LOW_SIZE, dtype=np.float64)
        full = (p_low.sum(), (p_low * ells).sum(), (p_low * ells**2).sum())
        part = (p_low[:last].sum(), (p_low[:last] * ells[:last]).sum(), (p_low[:last] * ells[:last] ** 2).sum())
        mass = m1 = m2 = 0.0
        for j in range(count):
            s0, s1, s2 = full if j < count - 1 else part
            base = j * _LOW_SIZE
            mass += p_high[j] * s0
            m1 += p_high[j] * (base * s0 + s1)
            m2 += p_high[j] * (base * base * s0 + 2 * base * s1 + s2)
        mean_r, mean_r2 = m1 / mass, m2 / mass
        m = self.m
        p_r0 = p_high[0] * p_low[0] / mass
        mean_g2 = m * m * 3.0 + 2.0 * m * 1.0 * mean_r + mean_r2  # E[H]=1, E[H²]=3
        w0 = 0.5 * p_r0  # P(G = 0) = P(H = 0)·P(R = 0)
        return float(2.0 * mean_g2 / (2.0 - w0))

    def log_weight(self, x: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Unnormalised log P(X = x) from the exact tables (for spot checks of the bound)."""
        p_high, p_low, _ = self._low_level_pmf()
        g = np.abs(np.asarray(x, dtype=np.int64))
        h, r = np.divmod(g, self.m)
        j, ell = np.divmod(r, _LOW_SIZE)
        return -h * LN2 + np.log(p_high[j]) + np.log(p_low[ell])

    # --- sampling --------------------------------------------------------------------------
    def sample(self, n: int, bits: BitSource) -> npt.NDArray[np.int64]:
        """n independent draws of X, in grid steps (in cache-sized chunks: about 2× faster)."""
        out = np.empty(n, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            out[start:stop] = self._sample_chunk(stop - start, bits)
        return out

    def _sample_chunk(self, n: int, bits: BitSource) -> npt.NDArray[np.int64]:
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            need = n - filled
            draws, accepted = self._attempt(need + (need >> 6) + 8, bits)
            kept = draws[accepted][:need]
            out[filled : filled + len(kept)] = kept
            filled += len(kept)
        return out

    def _attempt(self, n: int, bits: BitSource) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        table, _ = _high_table(self.m)
        low = _low_thresholds(self.m)
        column_bits = table.columns.bit_length() - 1
        words = bits.words(2 * n)
        a, t = words[:n], words[n:]
        negative = (a & np.uint64(1)).astype(bool)
        column = ((a >> np.uint64(1)) & np.uint64(table.columns - 1)).astype(np.intp)
        ell = ((a >> np.uint64(1 + column_bits)) & np.uint64(_LOW_SIZE - 1)).astype(np.intp)
        geometric_bits = 64 - 1 - column_bits - LOW_BITS
        rest = a >> np.uint64(64 - geometric_bits)
        h = _trailing_zeros(rest)
        empty = np.flatnonzero(rest == 0)
        if len(empty):
            h[empty] = geometric_bits + _geometric_half(len(empty), bits)
        u_high = t & np.uint64(0xFFFFFFFF)
        u_low = t >> np.uint64(32)
        j = np.where(u_high < table.threshold[column], column, table.alias[column])
        accepted = u_low < low[ell]
        r = j * _LOW_SIZE + ell
        accepted &= r < self.m
        g = h * self.m + r
        accepted &= ~(negative & (g == 0))
        return np.where(negative, -g, g), accepted


def _geometric_half(n: int, bits: BitSource) -> npt.NDArray[np.int64]:
    """Exact Geometric(1/2) on {0, 1, …}: trailing zeros of an unbounded bit string."""
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while len(pending):
        w = bits.words(len(pending))
        done = w != 0
        out[pending[done]] += _trailing_zeros(w[done])
        out[pending[~done]] += 64
        pending = pending[~done]
    return out


def _max_steps(shift: float, granularity_log2: int, dimension: int) -> int:
    """ceil(shift/γ) + dimension − 1: a bound on the L1 change of rounded inputs, in steps.

    Rounding is round-half-up, for which round(b) − round(a) ≤ ceil(b − a) per coordinate.
    """
    return math.ceil(math.ldexp(shift, -granularity_log2)) + dimension - 1


def round_to_grid(values: npt.NDArray[np.float64], granularity_log2: int) -> npt.NDArray[np.int64]:
    """round-half-up(values / γ) exactly (division by a power of two is exact)."""
    scaled = np.ldexp(values, -granularity_log2)
    whole = np.floor(scaled)
    return (whole + (scaled - whole >= 0.5)).astype(np.int64)
