"""Exact discrete Gaussian noise N_ℤ(0, s²) on the grid γ·ℤ, and its rigorous δ(ε) bounds.

X = ±Y on the grid γ·ℤ with the pair (−, 0) rejected, so P(X = x) ∝ Q(|x|), where Y is drawn by
exact integer rejection from a blocked proposal:

    Y = c·B + L,  B from a 53-bit integer alias table over 1023 blocks and one tail column,
                  L uniform on {0, …, c − 1} (c = 2^11),
    accept with probability accept[Y] / 2^53, accept[y] = ⌊2^53 · exp(−(y² − (c·B)²) / 2s²)⌋,

and the tail column draws Y = K + Geometric(1/2) (K = 1023·c ≥ 16 s), accepted always. So
Q(y) = weight[B] · accept[y] exactly, an integer, and every integer has positive probability
(outputs for neighbouring inputs have the same support γ·ℤ). The block weights are
∝ exp(−(c·B)²/2s²), so Q is the discrete Gaussian N_ℤ(0, s²) up to the tables' quantisation,
whose total-variation distance from it, η, is computed from the tables and charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dpwitness.noise.bits import BitSource, _geometric_half, _secure_pairs
from dpwitness.noise.rejection import _GAUSS_SPARE, _scalar_fill, draw_steps
from dpwitness.noise.tables import (
    _GAUSS_BLOCK,
    _GAUSS_BLOCK_BITS,
    _GAUSS_BLOCKS,
    _GAUSS_COLUMN_BITS,
    _GAUSS_COLUMNS,
    _GAUSS_TABLE,
    _gaussian_tables,
)
from dpwitness.privacy.accounting import gaussian_rho, zcdp_delta

#: s = σ/γ lies in [2^GAUSS_STEPS_LOG2, 2^(GAUSS_STEPS_LOG2 + 1)) (then raised by the rounding charge).
GAUSS_STEPS_LOG2 = 16
#: Float rounding in the TV computation (exp within 4 ulp, products within 3 ulp, pairwise sums of
#: terms totalling ≤ 2: ≲ 4·10^-15 in all): added to η.
_TV_SLACK = 5e-15
#: Relative error allowed for libm's erfc in the δ bounds (it is ≲ 10^-15).
_ERFC_SLACK = 1e-12
#: What the Gaussian sampler calibrates exactly (docs/mechanism.md, "Accepted ranges").
GAUSS_EPSILON_RANGE = (1e-3, 5.0)
GAUSS_DELTA_RANGE = (1e-10, 0.5)
GAUSS_RHO_RANGE = (1e-6, 1e3)


@dataclass(frozen=True)
class GridGaussian:
    """Discrete Gaussian noise N_ℤ(0, s²) on the grid γ·ℤ, γ = 2^granularity_log2, s = σ/γ.

    Sampled exactly from integer tables (see the comment above); :meth:`tv_distance` is the
    total-variation distance η between what is sampled and the ideal N_ℤ(0, s²), computed from
    the tables, and every privacy figure charges it.
    """

    granularity_log2: int
    s: float
    _eta: float = field(repr=False, compare=False, default=float("nan"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "_eta", self._tv_from_tables())

    @property
    def granularity(self) -> float:
        return math.ldexp(1.0, self.granularity_log2)

    @property
    def sigma(self) -> float:
        """s·γ: the σ of the discrete Gaussian in real units."""
        return self.s * self.granularity

    def tv_distance(self) -> float:
        """η ≥ TV(sampled, N_ℤ(0, s²)), from the exact tables (float rounding added on top)."""
        return self._eta

    def steps_for_shift(self, shift: float, changed: int = 1) -> float:
        """Largest L2 length, in grid steps, of a rounded input shift of L2 length ``shift``.

        One coordinate: ⌈Δ/γ⌉ (an integer). Several: each rounded coordinate moves by less
        than one step more than its real shift, so ‖r‖₂ < Δ/γ + √changed.
        """
        if shift == 0:
            return 0.0
        if changed == 1:
            return float(math.ceil(math.ldexp(shift, -self.granularity_log2)))
        return math.ldexp(shift, -self.granularity_log2) + math.sqrt(changed)

    def rho_for_steps(self, steps: float) -> float:
        """zCDP ρ = k²/2s² of N_ℤ(0, s²) for shifts of L2 length ≤ k (Canonne–Kamath–Steinke 2020).

        :param steps: k, the shift's L2 length in grid steps (:meth:`steps_for_shift`).
        """
        return gaussian_rho(steps, self.s)

    def delta_for_steps(self, epsilon: float, steps: float, changed: int = 1) -> float:
        """An upper bound on δ(ε) of the sampled noise for shifts of L2 length ≤ ``steps``, never below it.

        One coordinate: the exact hockey-stick divergence of N_ℤ(0, s²) (CKS 2020, Thm 7) with
        its tail sums bounded rigorously by integrals; several coordinates: the zCDP → (ε, δ)
        conversion (CKS 2020, Prop. 12). Plus (1 + e^ε)·changed·η for the tables' deviation.

        :param epsilon: the ε at which δ is bounded (≥ 0).
        """
        if steps == 0:
            return 0.0
        # δ(ε) does not increase with ε, so a bound at any ε' ≤ ε holds at ε: the (1 + e^ε)·η
        # charge makes small ε' the better bound for large ε (and keeps e^ε finite).
        candidates = {cap for cap in (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0) if cap < epsilon}
        if epsilon <= 40.0:
            candidates.add(epsilon)
        return min(self._delta_bound(e, steps, changed) for e in candidates)

    def _delta_bound(self, epsilon: float, steps: float, changed: int) -> float:
        if changed == 1:
            ideal = discrete_gaussian_delta(self.s, int(steps), epsilon)
        else:
            ideal = zcdp_delta(self.rho_for_steps(steps), epsilon)
        return min(1.0, ideal + (1.0 + math.exp(epsilon)) * changed * self._eta)

    # --- the exact PMF, for the witness -----------------------------------------------------
    def magnitude_weights(self) -> tuple[npt.NDArray[np.float64], float, float]:
        """(Q(y) for y < K, Q's tail mass, the normaliser over ℤ), Q(y) = weight[b]·accept[y] as floats.

        P(X = x) = Q(|x|)/Z; the tail mass sits on |x| = K + g with probability ∝ 2^-(g+1).
        """
        tables = _gaussian_tables(self.s)
        return tables.q, tables.tail, tables.normaliser

    def pmf(self, x: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """P(X = x) of the sampled noise, in grid steps (float rounding ≈ 10^-16 relative)."""
        q, tail, z = self.magnitude_weights()
        y = np.abs(np.asarray(x, dtype=np.int64))
        inside = y < _GAUSS_TABLE
        out = np.empty(y.shape, dtype=np.float64)
        out[inside] = q[y[inside]] / z
        beyond = y[~inside] - _GAUSS_TABLE
        out[~inside] = tail * np.exp2(-(beyond + 1.0)) / z
        return out

    def variance_steps(self) -> float:
        """Var(X) in grid steps, from the tables."""
        q, tail, z = self.magnitude_weights()
        y = np.arange(_GAUSS_TABLE, dtype=np.float64)
        k = float(_GAUSS_TABLE)
        return float(2.0 * (float(np.sum(q * y * y)) + tail * (k * k + 2.0 * k + 3.0)) / z)

    def _tv_from_tables(self) -> float:
        q, tail, z = self.magnitude_weights()
        y = np.arange(_GAUSS_TABLE, dtype=np.float64)
        ideal = np.exp(-(y * y) / (2.0 * self.s * self.s)) / (math.sqrt(2.0 * math.pi) * self.s)
        gap = np.abs(q / z - ideal)
        # over ℤ: ±y for y ≥ 1, y = 0 once; the tail of each side and the ideal's mass beyond K
        inside = 2.0 * float(np.sum(gap)) - float(gap[0])  # numpy's pairwise sum: error ≲ 21·2^-53
        beyond = 2.0 * tail / z + math.erfc(_GAUSS_TABLE / (math.sqrt(2.0) * self.s))
        return 0.5 * (inside + beyond) + _TV_SLACK

    # --- sampling --------------------------------------------------------------------------
    def sample(self, n: int, bits: BitSource) -> npt.NDArray[np.int64]:
        """n independent draws of X, in grid steps (up to :data:`SCALAR_DRAWS` on the scalar path, as for Laplace).

        :param bits: the source of random words (:func:`bit_source`).
        """
        return draw_steps(
            n,
            bits,
            draw_one=self._draw_one,
            attempt_one=self._attempt_one,
            attempt_words=self._attempt_words,
            spare=_GAUSS_SPARE,
        )

    def _attempt_words(
        self, a: npt.NDArray[np.uint64], t: npt.NDArray[np.uint64], bits: BitSource
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """Two 64-bit words per attempt: a = sign | column | L | 42 bits, t = 53 bits | 11 bits.

        The alias test uses t's top 53 bits; the acceptance test the 42 spare bits of a and t's
        low 11 bits; no bit is used twice, so the three choices are independent.
        """
        tables = _gaussian_tables(self.s)
        used = 1 + _GAUSS_COLUMN_BITS + _GAUSS_BLOCK_BITS
        negative = (a & np.uint64(1)).astype(np.int64)
        column = ((a >> np.uint64(1)) & np.uint64(_GAUSS_COLUMNS - 1)).astype(np.intp)
        low = ((a >> np.uint64(1 + _GAUSS_COLUMN_BITS)) & np.uint64(_GAUSS_BLOCK - 1)).astype(np.int64)
        alias = tables.alias.alias[column]
        block = alias + (column - alias) * (t >> np.uint64(11) < tables.alias.threshold[column])  # select, no branches
        u_accept = ((a >> np.uint64(used)) << np.uint64(11)) | (t & np.uint64(0x7FF))
        tail = block == _GAUSS_BLOCKS
        y = block * _GAUSS_BLOCK + low
        y[tail] = 0
        accepted = u_accept < tables.accept[y]
        if tail.any():  # probability ≈ 2^-63 per attempt: K + Geometric(1/2), always accepted
            y[tail] = _GAUSS_TABLE + _geometric_half(int(tail.sum()), bits)
            accepted[tail] = True
        accepted &= ~((negative == 1) & (y == 0))
        return y - 2 * negative * y, accepted

    def _attempt_one(self, a: int, t: int, bits: BitSource) -> int | None:
        """:meth:`_attempt_words` for one word pair, in Python integers: the draw, or None if rejected."""
        tables = _gaussian_tables(self.s)
        used = 1 + _GAUSS_COLUMN_BITS + _GAUSS_BLOCK_BITS
        column = (a >> 1) & (_GAUSS_COLUMNS - 1)
        low = (a >> (1 + _GAUSS_COLUMN_BITS)) & (_GAUSS_BLOCK - 1)
        block = column if (t >> 11) < int(tables.alias.threshold[column]) else int(tables.alias.alias[column])
        if block == _GAUSS_BLOCKS:
            y = _GAUSS_TABLE + int(_geometric_half(1, bits)[0])
        else:
            y = block * _GAUSS_BLOCK + low
            if (((a >> used) << 11) | (t & 0x7FF)) >= int(tables.accept[y]):
                return None
        if a & 1:
            return None if y == 0 else -y
        return y

    def _draw_one(self, bits: BitSource) -> int:
        """One draw of X: from a secure source, attempts on fresh word pairs until one is accepted."""
        pair = _secure_pairs(bits)
        if pair is None:
            return _scalar_fill(1, bits, self._attempt_one, spare=_GAUSS_SPARE)[0]
        while True:
            a, t = pair()
            draw = self._attempt_one(a, t, bits)
            if draw is not None:
                return draw


def _normal_tail(z: float) -> float:
    """P(N(0,1) > z) = erfc(z/√2)/2."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


#: Terms of a discrete Gaussian tail summed one by one before the integral bound takes over.
_EXPLICIT_TERMS = 32


def _head(a: int, s: float) -> tuple[float, int]:
    """(Σ_{x=a}^{b−1} exp(−x²/2s²)/(√(2π)s), b): at least J terms, and on to b ≥ s + 1/2 (f convex beyond)."""
    b = max(a + _EXPLICIT_TERMS, math.ceil(s + 0.5))
    x = np.arange(a, b, dtype=np.float64)
    return float(np.sum(np.exp(-(x * x) / (2.0 * s * s)))) / (math.sqrt(2.0 * math.pi) * s), b


def _tail_upper(a: int, s: float) -> float:
    """≥ P(X ≥ a) for X ~ N_ℤ(0, s²), a an integer.

    f(x) = exp(−x²/2s²): the terms up to b (b − 1/2 ≥ s) are summed one by one, then
    Σ_{x≥b} f ≤ ∫_{b−1/2}^∞ f since f is convex there (Hermite–Hadamard); and the normaliser
    Σ_ℤ f ≥ √(2π)·s (Poisson summation).
    """
    if a <= 0:
        return 1.0 - _tail_lower(1 - a, s)
    head, b = _head(a, s)
    return min(1.0, (head + _normal_tail((b - 0.5) / s)) * (1.0 + _ERFC_SLACK))


def _tail_lower(a: int, s: float) -> float:
    """≤ P(X ≥ a) for X ~ N_ℤ(0, s²): the same terms, then Σ_{x≥b} f ≥ ∫_b^∞ f + f(b)/2 (trapezoid,
    f convex); Σ_ℤ f ≤ √(2π)s·(1 + 3e^{−2π²s²})."""
    if a <= 0:
        return 1.0 - _tail_upper(1 - a, s)
    theta_excess = 1.0 + 3.0 * math.exp(-2.0 * math.pi**2 * s * s)
    head, b = _head(a, s)
    trapezoid = 0.5 * math.exp(-b * b / (2.0 * s * s)) / (math.sqrt(2.0 * math.pi) * s)
    return max(0.0, (head + _normal_tail(b / s) + trapezoid) * (1.0 - _ERFC_SLACK) / theta_excess)


def discrete_gaussian_delta(s: float, steps: int, epsilon: float) -> float:
    """δ(ε) of N_ℤ(0, s²) for integer shifts |k| ≤ steps, rounded up (CKS 2020, Theorem 7).

    δ = P[X > εs²/k − k/2] − e^ε·P[X > εs²/k + k/2]; the first tail is bounded above, the
    second below, so the result never understates δ.

    :param s: the discrete Gaussian's scale in grid steps (> 0).
    :param epsilon: the ε at which δ is computed (≥ 0).
    """
    if steps == 0:
        return 0.0
    k = float(steps)
    tau = epsilon * s * s / k - k / 2.0
    first = _tail_upper(math.floor(tau) + 1, s)
    second = _tail_lower(math.floor(tau + k) + 1, s)
    return min(1.0, max(0.0, first - math.exp(epsilon) * second))
