"""
Why a grid (Mironov 2012): ``x + float_laplace`` produces doubles whose set of reachable
values depends on ``x``, so an output can identify the input.  Here every release is
``(round(x / γ) + X) · γ`` where γ = 2^k and X is an integer drawn *exactly* from the
distribution described below, using only integer operations on random bits.  The set of
possible outputs is γ·ℤ whatever the input, and the privacy loss is computed from the
integer tables the sampler really uses (see :meth:`GridLaplace.max_log_ratio`).

The sampled Laplace distribution.  With an integer ``m`` (≥ 2^27, and ≥ 2^27·ln2/ε so that Δ
spans ≥ 2^27 steps) and G ≥ 0,

    G = m·H + R,   H ~ Geometric(1/2)  (trailing zeros of random bits: exact),
    R = c·J + L < m,  P(J = j) ∝ alias table,  P(L = l) ∝ thresholds[l] / 2^32,

and X = ±G with the pair (−, 0) rejected, so P(X = x) ∝ w(|x|) with
w(g) ∝ 2^(−g/m) up to the tables' 32-bit quantisation, which the privacy map charges
exactly.  That is a discrete Laplace with scale m·γ/ln 2 in real units.

The discrete Gaussian is in :mod:`dpwitness.noise.gaussian`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dpwitness.common.caching import scoped_cache
from dpwitness.noise.bits import BitSource, _geometric_half, _secure_pairs
from dpwitness.noise.grid import _max_steps
from dpwitness.noise.rejection import _LAPLACE_SPARE, _scalar_fill, draw_steps
from dpwitness.noise.tables import _LOW_SIZE, LOW_BITS, _high_table, _low_table, _low_thresholds

LN2 = math.log(2.0)
#: m ≥ 2^GRID_STEPS_LOG2 and Δ/γ ≥ 2^GRID_STEPS_LOG2: the grid's fineness relative to the scale and to Δ.
GRID_STEPS_LOG2 = 27
_LITTLE_ENDIAN = sys.byteorder == "little"
#: Relative safety margin so that table quantisation never pushes the loss above ε.
_MARGIN = 2.0**-26

#: What the Laplace sampler calibrates exactly (docs/mechanism.md, "Accepted ranges"): ε, Δ > 0
#: and the scale b = Δ/ε. Outside them the mechanisms raise a one-line ParameterError.
EPSILON_RANGE = (1e-3, 1e3)
SENSITIVITY_RANGE = (1e-100, 1e100)
SCALE_RANGE = (1e-100, 1e100)


#: The Laplace tables as the scalar path reads them: (m, columns − 1, column bits, geometric bits,
#: alias thresholds, aliases, low thresholds); memoryviews index to Python integers.
_ScalarLaplace = tuple[int, int, int, int, memoryview, memoryview, memoryview]


@scoped_cache(8)  # views of _high_table's and _low_table's arrays (no copies); few, so as not to pin many 4 MB tables
def _laplace_scalar(m: int) -> _ScalarLaplace:
    table, _ = _high_table(m)
    column_bits = table.columns.bit_length() - 1
    geometric_bits = 64 - 1 - column_bits - LOW_BITS
    views = (memoryview(table.threshold), memoryview(table.alias), memoryview(_low_thresholds(m)))  # type: ignore[arg-type]
    return (m, table.columns - 1, column_bits, geometric_bits, *views)


def _laplace_one(tables: _ScalarLaplace, a: int, t: int, bits: BitSource) -> int | None:
    """:meth:`GridLaplace._attempt_words` for one word pair, in Python integers: the draw, or None if rejected."""
    m, column_mask, column_bits, geometric_bits, threshold, alias, low = tables
    column = (a >> 1) & column_mask
    ell = (a >> (1 + column_bits)) & (_LOW_SIZE - 1)
    rest = a >> (64 - geometric_bits)
    h = (rest & -rest).bit_length() - 1 if rest else geometric_bits + int(_geometric_half(1, bits)[0])
    r = ((column if (t & 0xFFFFFFFF) < threshold[column] else alias[column]) << LOW_BITS) | ell
    if (t >> 32) >= low[ell] or r >= m:
        return None
    g = h * m + r
    if a & 1:
        return None if g == 0 else -g
    return g


@dataclass(frozen=True)
class GridLaplace:
    """Exact discrete Laplace noise on the grid γ·ℤ, γ = 2^granularity_log2.

    ``m`` grid steps halve the probability, so the real-unit scale is m·γ/ln 2.
    """

    granularity_log2: int
    m: int
    _deviation: float = field(repr=False, compare=False, default=float("nan"))

    @staticmethod
    @scoped_cache(256)
    def calibrate(*, sensitivity: float, epsilon: float, dimension: int = 1) -> GridLaplace:
        """The grid noise whose privacy loss for an L1 shift of ``sensitivity`` is ≤ ε.

        Inputs are rounded to the grid; a rounded shift is at most
        ceil(Δ/γ) + dimension − 1 steps, and that whole count is charged, together with
        the tables' quantisation (so m is raised until the exact loss fits under ε).
        The grid is chosen so that both m ≥ 2^27 and Δ/γ ≥ 2^27: one step of rounding costs
        at most 2^-27 of ε and the scale is never more than that much coarser than asked,
        whatever ε in :data:`EPSILON_RANGE` (no absolute reservation: the tables' measured
        deviation is charged relative to the ε at hand).

        :param sensitivity: Δ, the L1 shift to cover (in real units, > 0).
        :param epsilon: ε > 0, the privacy loss the shift may cost at most.
        :param dimension: the number of coordinates released together (default 1): each may
            add one step of rounding.
        """
        scale = sensitivity / epsilon
        granularity_log2 = math.frexp(min(sensitivity, scale * LN2))[1] - 1 - GRID_STEPS_LOG2
        steps = _max_steps(sensitivity, granularity_log2, dimension)
        budget = epsilon * (1.0 - _MARGIN)
        while True:
            candidate = GridLaplace(granularity_log2, math.ceil(steps * LN2 / budget))
            loss = candidate.loss_for_steps(steps)
            if loss <= epsilon:
                return candidate
            budget -= max(loss - epsilon, epsilon * _MARGIN)

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
        """Largest grid-step shift that an L1 input shift of ``shift`` can cause after rounding.

        :param dimension: the number of coordinates (default 1); each may add one step of rounding.
        """
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
        float_slack = 1e-13
        return float(np.ptp(high)) + _low_table(self.m).spread + float_slack

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
        """n independent draws of X, in grid steps (in cache-sized chunks: about 2× faster).

        Up to :data:`SCALAR_DRAWS` draws take the scalar path (Python integers on the same two
        words per attempt, the same tests: :meth:`_attempt_one`), which costs a few µs instead
        of tens of µs of NumPy calls on tiny arrays; tests check both paths give identical draws
        from the same words. From a secure source the scalar path takes two fresh words per
        attempt (:meth:`CipherBits.pair`); from a seeded one, the vector path's words.

        :param bits: the source of random words (:func:`bit_source`).
        """
        return draw_steps(
            n,
            bits,
            draw_one=self._draw_one,
            attempt_one=self._attempt_one,
            attempt_words=self._attempt_words,
            spare=_LAPLACE_SPARE,
        )

    def _attempt_words(
        self, a: npt.NDArray[np.uint64], t: npt.NDArray[np.uint64], bits: BitSource
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """One attempt per word pair: a = sign | column | L | geometric bits, t = alias draw | L's acceptance draw.

        Bit 0 of a is the sign, then the alias column, then L (20 bits), then the geometric bits
        (H = their trailing zeros, more words if all are zero); t's low 32 bits choose between the
        column and its alias, its high 32 bits accept L. Written for few passes over the arrays
        (signed views, ``take``, in-place updates); :meth:`_attempt_one` is the same function.
        """
        table, _ = _high_table(self.m)
        low = _low_thresholds(self.m)
        column_bits = table.columns.bit_length() - 1
        geometric_bits = 64 - 1 - column_bits - LOW_BITS
        signed = a.view(np.int64)  # the masks below make the arithmetic shift's sign bits irrelevant
        column = signed >> 1
        column &= table.columns - 1
        ell = signed >> (1 + column_bits)
        ell &= _LOW_SIZE - 1
        rest = a >> np.uint64(64 - geometric_bits)
        through_lowest = rest - np.uint64(1)
        through_lowest ^= rest  # the bits up to and including rest's lowest set bit: H + 1 of them (64 if rest = 0)
        h_plus_one = np.bitwise_count(through_lowest)  # uint8: 64 only where rest = 0
        if _LITTLE_ENDIAN and t.flags.c_contiguous:  # t's two 32-bit halves as strided views, no pass over t
            halves = t.view(np.uint32)
            t_low, t_high = halves[0::2], halves[1::2]
        else:
            t_low, t_high = t & np.uint64(0xFFFFFFFF), t >> np.uint64(32)
        keep = t_low < table.threshold.take(column)
        alias = table.alias.take(column)
        r = column - alias  # J: the column where kept, else its alias, by arithmetic (np.where measured ≈ 3× slower here)
        r *= keep
        r += alias
        r <<= LOW_BITS
        r |= ell  # R = J·2^20 + L
        accepted = t_high < low.take(ell)
        accepted &= r < self.m
        g = h_plus_one * np.int64(self.m)
        g += r - self.m  # G = H·m + R
        if h_plus_one.max() == 64:  # probability ≈ 2^-35 per attempt: H continues in fresh words
            empty = np.flatnonzero(rest == 0)
            g[empty] = (geometric_bits + _geometric_half(len(empty), bits)) * self.m + r[empty]
        sign = signed & 1
        np.negative(sign, out=sign)  # 0 or −1 (all bits set)
        g ^= sign  # G, or −G − 1 when negative
        accepted &= g != -1  # the pair (−, 0)
        g -= sign  # ±G
        return g, accepted

    def _attempt_one(self, a: int, t: int, bits: BitSource) -> int | None:
        """:meth:`_attempt_words` for one word pair, in Python integers: the draw, or None if rejected."""
        return _laplace_one(_laplace_scalar(self.m), a, t, bits)

    def _draw_one(self, bits: BitSource) -> int:
        """One draw of X: from a secure source, attempts on fresh word pairs until one is accepted."""
        tables = _laplace_scalar(self.m)
        pair = _secure_pairs(bits)
        if pair is None:
            return _scalar_fill(1, bits, lambda a, t, b: _laplace_one(tables, a, t, b), spare=_LAPLACE_SPARE)[0]
        while True:
            a, t = pair()
            draw = _laplace_one(tables, a, t, bits)
            if draw is not None:
                return draw
