"""Randomness: bit sources and exact discrete Laplace and Gaussian samplers on a power-of-two grid.

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

The discrete Gaussian (:class:`GridGaussian`) is described where it is defined, further down.
The exponential mechanism's categorical draw (:func:`draw_log_categorical`) is exact on the
dyadic values of its float64 log-weights: integers and random bits only, at the end of the module.

Timing: rejected draws are discarded independently of the value finally accepted, so the
number of draws says nothing about the noise or the input (cf. Jin et al., S&P 2022).
"""

from __future__ import annotations

import bisect
import math
import os
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dpwitness.common.caching import scoped_cache
from dpwitness.privacy.accounting import zcdp_delta

LN2 = math.log(2.0)
#: m ≥ 2^GRID_STEPS_LOG2 and Δ/γ ≥ 2^GRID_STEPS_LOG2: the grid's fineness relative to the scale and to Δ.
GRID_STEPS_LOG2 = 27
#: L ranges over 2^LOW_BITS values (the fine, nearly-uniform level).
LOW_BITS = 20
_LOW_SIZE = 1 << LOW_BITS
_LITTLE_ENDIAN = sys.byteorder == "little"
_THRESHOLD_ONE = 1 << 32
#: Relative safety margin so that table quantisation never pushes the loss above ε.
_MARGIN = 2.0**-26
_CHUNK = 1 << 16
#: Requests of at most this many draws use the samplers' scalar path (Python integers).
SCALAR_DRAWS = 4
#: A rejection round attempts 2^-spare more draws than it needs, plus 8 (Laplace rejects ≈ 0.5%, the Gaussian ≈ 2%).
_LAPLACE_SPARE = 6
_GAUSS_SPARE = 5

#: What the Laplace sampler calibrates exactly (docs/mechanism.md, "Accepted ranges"): ε, Δ > 0
#: and the scale b = Δ/ε. Outside them the mechanisms raise a one-line ParameterError.
EPSILON_RANGE = (1e-3, 1e3)
SENSITIVITY_RANGE = (1e-100, 1e100)
SCALE_RANGE = (1e-100, 1e100)


class BitSource(Protocol):
    """Anything that returns uniformly random 64-bit words: ``words(n)`` gives ``n`` (≥ 0) of
    them as a uint64 array; ``name`` says what it is, ``secure`` whether it is cryptographically secure."""

    name: str
    secure: bool

    def words(self, n: int) -> npt.NDArray[np.uint64]: ...


class SecureBits:
    """The operating system's CSPRNG (``os.urandom`` → getrandom(2)): one system call per request.

    Secure, and the fallback default when ``cryptography`` is not installed; select it with
    ``DPWITNESS_SECURE_SOURCE=os.urandom``. About 24–38 M samples/s on the 2-core benchmark machine.
    ``words(n)`` reads 8·``n`` bytes of os.urandom as ``n`` uint64 words.
    """

    name = "os.urandom (cryptographically secure)"
    secure = True

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def pair(self) -> tuple[int, int]:
        """One rejection attempt's two words (a, t) as Python integers: 16 bytes of os.urandom, no state kept."""
        both = os.urandom(16)
        return int.from_bytes(both[:8], "little"), int.from_bytes(both[8:], "little")


#: Cipher keystream generators offered by :class:`CipherBits` (OpenSSL through ``cryptography``).
CIPHERS = ("aes-256-ctr", "chacha20")
#: Bytes of keystream after which :class:`CipherBits` draws a fresh key and counter from os.urandom.
REKEY_BYTES = 1 << 32
_RESERVE_WORDS = 1 << 12  # small requests are served from a 32 KiB block of keystream
#: Words of keystream converted to Python integers at once for :meth:`CipherBits.pair` (the scalar samplers).
_POOL_WORDS = 1 << 12
_ZEROS = bytes(1 << 20)


class CipherBits:
    """A cryptographically secure generator: the keystream of AES-256-CTR (or ChaCha20), keyed from os.urandom.

    The key (32 bytes) and the initial counter block / nonce (16 bytes) come from ``os.urandom``;
    the output is the cipher applied to zeros, i.e. its keystream, through OpenSSL (the
    ``cryptography`` package). It is re-keyed from ``os.urandom`` every :data:`REKEY_BYTES`
    (2^32 bytes = 2^28 AES blocks, far below the 2^64-block birthday bound of a 128-bit block
    cipher: distinguishing advantage ≤ 2^-73 per key) and in a child process after ``fork``
    (``os.register_at_fork``, and a process-id check for forks that skip the hooks), so parent and
    child never share a stream. Thread-safe (one lock around the cipher state). Requests of up
    to 4,096 words are cut from a 32 KiB block of keystream; larger ones are produced directly.
    The scalar samplers take their words two at a time through :meth:`pair`, from a pool of
    keystream already converted to Python integers (see there).
    Known-answer tests (NIST SP 800-38A F.5.5, RFC 8439 §2.4.2) check the keystream.
    ``cipher`` is one of :data:`CIPHERS` (default "aes-256-ctr"); ``words(n)`` returns the next
    ``n`` uint64 words of the keystream.
    """

    secure = True

    def __init__(self, cipher: str = "aes-256-ctr") -> None:
        if cipher not in CIPHERS:
            raise ValueError(f"cipher must be one of {CIPHERS}, got {cipher!r}")
        self.cipher = cipher
        label = "AES-256-CTR" if cipher == "aes-256-ctr" else "ChaCha20"
        self.name = f"{label} keystream keyed from os.urandom (cryptographically secure, OpenSSL)"
        self._lock = threading.Lock()
        self._rekey()
        alive = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: None if (source := alive()) is None else source._rekey())

    def _keyed(self, key: bytes, counter: bytes) -> None:
        """Start the keystream at (key, counter); the known-answer tests call this directly."""
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        if self.cipher == "aes-256-ctr":
            engine = Cipher(algorithms.AES(key), modes.CTR(counter))
        else:  # cryptography's 16-byte ChaCha20 nonce: 4-byte little-endian block counter, then RFC 8439's 12-byte nonce
            engine = Cipher(algorithms.ChaCha20(key, counter), mode=None)  # type: ignore[arg-type]
        self._encryptor = engine.encryptor()
        self._produced = 0
        self._reserve = np.empty(0, dtype=np.uint64)
        self._pool: list[int] = []
        self._pid = os.getpid()

    def _rekey(self) -> None:
        self._lock = threading.Lock()  # a lock held by another thread at fork time is never released in the child
        self._keyed(os.urandom(32), os.urandom(16))

    def _keystream(self, n: int) -> npt.NDArray[np.uint64]:
        """The next 8·n bytes of keystream as n words (the caller holds the lock)."""
        size = 8 * n
        if size > REKEY_BYTES - self._produced:
            self._keyed(os.urandom(32), os.urandom(16))
        self._produced += size
        out = np.empty(n + 2, dtype=np.uint64)  # OpenSSL may write up to a block past the data
        view = memoryview(out).cast("B")  # type: ignore[arg-type]
        for done in range(0, size, len(_ZEROS)):
            chunk = min(len(_ZEROS), size - done)
            self._encryptor.update_into(_ZEROS[:chunk], view[done : done + chunk + 16])
        return out[:n]

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        if os.getpid() != self._pid:
            self._rekey()
        with self._lock:
            if n > _RESERVE_WORDS:
                return self._keystream(n)
            if len(self._reserve) < n:
                self._reserve = self._keystream(_RESERVE_WORDS)
            out, self._reserve = self._reserve[:n], self._reserve[n:]
            return out

    def pair(self) -> tuple[int, int]:
        """The next two words of keystream as Python integers: one rejection attempt's (a, t).

        For the scalar samplers. The words come from a pool of :data:`_POOL_WORDS` words of
        keystream converted to Python integers at once (refilled under the lock, and emptied with
        the key after a fork); ``list.pop`` is atomic, so no word is handed out twice, whichever
        threads ask, and a word left alone when the pool runs dry is discarded, never reused. The
        process-id check runs on every call, as in :meth:`words` (a child forked without the
        hooks re-keys before it takes a word, so it never hands out the parent's pool).
        """
        if os.getpid() != self._pid:
            self._rekey()
        pool = self._pool
        try:
            return pool.pop(), pool.pop()
        except IndexError:
            with self._lock:
                fresh: list[int] = self._keystream(_POOL_WORDS).tolist()
            a, t = fresh.pop(), fresh.pop()  # before the pool is shared: these two are this caller's
            self._pool = fresh
            return a, t


def secure_source(name: str | None = None) -> BitSource:
    """The secure generator called ``name``: "aes-256-ctr" (the default), "chacha20" or "os.urandom".

    Without a name, ``$DPWITNESS_SECURE_SOURCE`` or else "aes-256-ctr". When ``cryptography`` is
    not installed (it comes with the ``crypto`` extra), the default falls back to os.urandom:
    secure as well, but bound by one system call per request.
    """
    chosen = name or os.environ.get("DPWITNESS_SECURE_SOURCE") or "aes-256-ctr"
    if chosen == "os.urandom":
        return SecureBits()
    if chosen not in CIPHERS:
        raise ValueError(f"secure source must be 'os.urandom' or one of {CIPHERS}, got {chosen!r}")
    try:
        import cryptography.hazmat.primitives.ciphers  # noqa: F401
    except ImportError:
        if name is not None:
            raise
        return SecureBits()
    return CipherBits(chosen)


class SeededBits:
    """Deterministic PCG64 stream for reproducible runs. NOT for production releases.

    ``seed`` is an integer or a SeedSequence (a fresh PCG64 is seeded with it) or a numpy
    Generator (its bit generator is used, and advanced); ``words(n)`` returns its next ``n``
    raw 64-bit words.
    """

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


#: The default secure source (see :func:`secure_source`): AES-256-CTR keyed from os.urandom.
SECURE_BITS = secure_source()
#: os.urandom itself, one system call per request (the fallback and an option).
OS_BITS = SecureBits()


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
    ideal = np.arange(_LOW_SIZE, dtype=np.float64)
    np.divide(ideal, -m, out=ideal)
    np.exp2(ideal, out=ideal)
    ideal *= _THRESHOLD_ONE  # exact: a power of two
    kept = np.floor(ideal)
    kept[0] = _THRESHOLD_ONE - 1  # x_0 = 2^32 exactly; every other x_l < 2^32
    thresholds: npt.NDArray[np.uint32] = kept.astype(np.uint32)
    np.subtract(ideal, kept, out=kept)
    kept /= ideal
    return _LowTable(thresholds, float(np.ptp(kept)))


def _low_thresholds(m: int) -> npt.NDArray[np.uint32]:
    """Accept L = l with probability thresholds[l] / 2^32 ≈ 2^(−l/m)."""
    return _low_table(m).thresholds


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


def _secure_pairs(bits: BitSource) -> Callable[[], tuple[int, int]] | None:
    """The secure sources' :meth:`CipherBits.pair` (two fresh words per attempt), else None.

    Seeded sources keep :func:`_scalar_fill`, whose words are the vector path's, so that a seeded
    run is reproducible whichever path runs; a secure run is not reproducible anyway, and each
    attempt of either path uses two fresh, uniform words once, so the draws have the same law.
    """
    return bits.pair if isinstance(bits, (CipherBits, SecureBits)) else None


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
        if n <= SCALAR_DRAWS:
            return np.array(
                [self._draw_one(bits) for _ in range(n)]
                if _secure_pairs(bits)
                else _scalar_fill(n, bits, self._attempt_one, spare=_LAPLACE_SPARE),
                dtype=np.int64,
            )
        out = np.empty(n, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            _fill(stop - start, lambda k: self._attempt(k, bits), spare=_LAPLACE_SPARE, out=out[start:stop])
        return out

    def _attempt(self, n: int, bits: BitSource) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        words = bits.words(2 * n)
        return self._attempt_words(words[:n], words[n:], bits)

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
    """round-half-up(values / γ) exactly (division by a power of two is exact); |values/γ| < 2^62.

    :param granularity_log2: k, the grid's exponent: γ = 2^k.
    """
    scaled = np.ldexp(values, -granularity_log2)
    whole = np.floor(scaled)
    return (whole + (scaled - whole >= 0.5)).astype(np.int64)


#: Below this many grid steps, centre and noise each fit int64 with room for their sum (< 2^62).
FAST_PATH_STEPS = 1 << 61


def add_noise_on_grid(
    values: npt.NDArray[np.float64], noise_steps: npt.NDArray[np.int64], granularity_log2: int
) -> npt.NDArray[np.float64]:
    """float((round(x/γ) + X)·γ) for every finite x, rounded to the nearest double once.

    ``noise_steps`` has shape (n, *values.shape) and is consumed (overwritten). The result is a function of the exact noisy
    integer N + X alone (post-processing), so every input has the same support. When every
    centre and every draw is below 2^61 steps (all the usual cases) the sum is exact in int64 and
    numpy's int64 → float64 conversion (correctly rounded) times 2^k (exact) is used; otherwise
    the same value is computed in Python integers (:func:`exact_add_noise_on_grid`). Which path
    runs depends only on whether |x| ≥ 2^61·γ, which the output itself shows (the noise is
    ≲ 2^40 steps), or on a draw ≥ 2^61 steps (never in practice).

    :param granularity_log2: k, the grid's exponent: γ = 2^k.
    """
    limit = math.ldexp(float(FAST_PATH_STEPS), granularity_log2)  # 2^61 steps in real units (a normal float)
    small = values.size == 0 or (
        float(np.max(np.abs(values))) < limit
        and int(noise_steps.max()) < FAST_PATH_STEPS
        and int(noise_steps.min()) > -FAST_PATH_STEPS
    )
    if not small:
        return exact_add_noise_on_grid(values, noise_steps, granularity_log2)
    noise_steps += round_to_grid(values, granularity_log2)  # in place: the caller's fresh draws become N + X
    # converted in place too (element by element over the same 8 bytes; NumPy copies first if it ever must)
    result: npt.NDArray[np.float64] = noise_steps.view(np.float64)
    np.multiply(noise_steps, math.ldexp(1.0, granularity_log2), out=result, dtype=np.float64)
    return result


def exact_add_noise_on_grid(
    values: npt.NDArray[np.float64], noise_steps: npt.NDArray[np.int64], granularity_log2: int
) -> npt.NDArray[np.float64]:
    """:func:`add_noise_on_grid` in Python integers: exact for any finite x and any draw.

    x = num/den exactly (``float.as_integer_ratio``, den a power of two), so round-half-up(x/γ)
    = ⌊(2·num + den')/(2·den')⌋ with den' = den·2^k (or num·2^-k); then N + X is an exact
    integer, and (N + X)·2^k is converted to the nearest double once (Python's int → float and
    int / int are correctly rounded; past the float range it is ±∞, still a function of N + X).

    :param values: the finite true values x (any shape).
    :param noise_steps: the draws X in grid steps, shape (n, *values.shape).
    :param granularity_log2: k, the grid's exponent: γ = 2^k.
    """
    flat = values.reshape(-1)
    centres = [grid_steps(float(x), granularity_log2) for x in flat.tolist()]
    draws = noise_steps.reshape(len(noise_steps), flat.size).tolist()
    out = np.array(
        [[grid_to_float(centre + int(x), granularity_log2) for centre, x in zip(centres, row, strict=True)] for row in draws],
        dtype=np.float64,
    )
    return out.reshape(noise_steps.shape)


def grid_steps(x: float, granularity_log2: int) -> int:
    """round-half-up(x / 2^k) exactly, as a Python integer, for any finite x.

    :param granularity_log2: k, the grid's exponent.
    """
    numerator, denominator = x.as_integer_ratio()
    if granularity_log2 >= 0:
        denominator <<= granularity_log2
    else:
        numerator <<= -granularity_log2
    return (2 * numerator + denominator) // (2 * denominator)


def grid_to_float(steps: int, granularity_log2: int) -> float:
    """steps·2^k rounded to the nearest double (ties to even) once; ±∞ beyond the float range.

    :param granularity_log2: k, the grid's exponent.
    """
    try:
        if granularity_log2 >= 0:
            return float(steps << granularity_log2)
        return steps / (1 << -granularity_log2)
    except OverflowError:
        return math.inf if steps > 0 else -math.inf


# --- the discrete Gaussian ------------------------------------------------------------------
#
# X = ±Y on the grid γ·ℤ with the pair (−, 0) rejected, so P(X = x) ∝ Q(|x|), where Y is drawn by
# exact integer rejection from a blocked proposal:
#
#     Y = c·B + L,  B from a 53-bit integer alias table over 1023 blocks and one tail column,
#                   L uniform on {0, …, c − 1} (c = 2^11),
#     accept with probability accept[Y] / 2^53, accept[y] = ⌊2^53 · exp(−(y² − (c·B)²) / 2s²)⌋,
#
# and the tail column draws Y = K + Geometric(1/2) (K = 1023·c ≥ 16 s), accepted always. So
# Q(y) = weight[B] · accept[y] exactly, an integer, and every integer has positive probability
# (outputs for neighbouring inputs have the same support γ·ℤ). The block weights are
# ∝ exp(−(c·B)²/2s²), so Q is the discrete Gaussian N_ℤ(0, s²) up to the tables' quantisation,
# whose total-variation distance from it, η, is computed from the tables and charged.

#: s = σ/γ lies in [2^GAUSS_STEPS_LOG2, 2^(GAUSS_STEPS_LOG2 + 1)) (then raised by the rounding charge).
GAUSS_STEPS_LOG2 = 16
_GAUSS_BLOCK_BITS = 11
_GAUSS_COLUMN_BITS = 10
_GAUSS_BLOCK = 1 << _GAUSS_BLOCK_BITS
_GAUSS_COLUMNS = 1 << _GAUSS_COLUMN_BITS
_GAUSS_BLOCKS = _GAUSS_COLUMNS - 1  # the last column is the tail
_GAUSS_TABLE = _GAUSS_BLOCKS * _GAUSS_BLOCK
#: Both acceptance tests compare 53 uniform bits with a 53-bit integer threshold (exact in float64).
_ONE53 = 1 << 53
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
        return steps * steps / (2.0 * self.s * self.s)

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
        if n <= SCALAR_DRAWS:
            return np.array(
                [self._draw_one(bits) for _ in range(n)]
                if _secure_pairs(bits)
                else _scalar_fill(n, bits, self._attempt_one, spare=_GAUSS_SPARE),
                dtype=np.int64,
            )
        out = np.empty(n, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            _fill(stop - start, lambda k: self._attempt(k, bits), spare=_GAUSS_SPARE, out=out[start:stop])
        return out

    def _attempt(self, n: int, bits: BitSource) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        words = bits.words(2 * n)
        return self._attempt_words(words[:n], words[n:], bits)

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


def _scalar_fill(n: int, bits: BitSource, attempt_one: Callable[[int, int, BitSource], int | None], *, spare: int) -> list[int]:
    """:func:`_fill` in Python integers for a few draws: the same words in the same roles.

    Each round asks for the words of ``need + need >> spare + 8`` attempts at once and pairs
    a = first half, t = second half, as the vector path does, so both paths return the same
    draws from the same bits (seeded runs are reproducible whichever path runs). Only in the
    event rest = 0 of an attempt (probability ≈ 2^-36) is the geometric tail's extra word drawn
    in another order.
    """
    out: list[int] = []
    while len(out) < n:
        need = n - len(out)
        count = need + (need >> spare) + 8
        words = bits.words(2 * count).tolist()
        for a, t in zip(words[:count], words[count:], strict=True):
            draw = attempt_one(a, t, bits)
            if draw is not None:
                out.append(draw)
                if len(out) == n:
                    break
    return out


def _fill(
    n: int,
    attempt: Callable[[int], tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]],
    *,
    spare: int,
    out: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]:
    """Repeat vectorised rejection attempts until n draws are accepted (order kept: rejections are data-independent).

    Each round attempts 2^-spare more than it needs (and 8), so one round nearly always suffices.
    The draws are written into ``out`` (n int64) when given, else into a new array; returned.
    """
    if out is None:
        out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = n - filled
        draws, accepted = attempt(need + (need >> spare) + 8)
        kept = draws[accepted][:need]
        out[filled : filled + len(kept)] = kept
        filled += len(kept)
    return out


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


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The exact σ of the (continuous) analytic Gaussian mechanism (Balle & Wang 2018, Thm 8).

    The smallest σ with Φ(Δ/2σ − εσ/Δ) − e^ε·Φ(−Δ/2σ − εσ/Δ) ≤ δ, solved by bisection on σ/Δ
    (the left side decreases in σ). ≈ 4.2247 for ε = 1, δ = 10^-6, Δ = 1.

    :param sensitivity: Δ, the L2 sensitivity (σ scales with it).
    :param epsilon: ε > 0.
    :param delta: δ in (0, 1).
    """

    def excess(ratio: float) -> float:
        a, b = 0.5 / ratio, epsilon * ratio
        return 0.5 * math.erfc((b - a) / math.sqrt(2.0)) - math.exp(epsilon) * 0.5 * math.erfc((a + b) / math.sqrt(2.0)) - delta

    low, high = 1e-9, 1.0
    while excess(high) > 0:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = math.sqrt(low * high)
        if excess(middle) > 0:
            low = middle
        else:
            high = middle
    return high * sensitivity


def _smallest_s(bound: Callable[[float], float], start: float, target: float) -> float:
    """The smallest s ≥ start (to 10^-12 relative) with bound(s) ≤ target; bound decreases in s."""
    low, high = start, start
    while bound(high) > target:
        low, high = high, high * 1.001
    if high == start:
        return start
    for _ in range(60):
        middle = 0.5 * (low + high)
        if bound(middle) > target:
            low = middle
        else:
            high = middle
    return high


@scoped_cache(256, scoped_maxsize=64)
def gaussian_for_delta(*, sensitivity: float, epsilon: float, delta: float, changed: int = 1) -> GridGaussian:
    """The grid Gaussian whose δ(ε) for an L2 shift of ``sensitivity`` (grid rounding charged) is ≤ δ.

    The grid puts s = σ/γ in [2^16, 2^17); the shift is charged in whole rounded steps; s is the
    smallest value whose rigorous bound (tables' deviation η included) fits under δ.

    :param epsilon: ε > 0.
    :param delta: δ in (0, 1); ValueError when too small to leave room for the tables' charge.
    :param changed: the number of coordinates one neighbour may change (default 1); above 1 the
        bound goes through zCDP.
    """
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    granularity_log2 = math.frexp(sigma)[1] - 1 - GAUSS_STEPS_LOG2
    probe = GridGaussian.__new__(GridGaussian)  # steps_for_shift needs only the grid
    object.__setattr__(probe, "granularity_log2", granularity_log2)
    steps = GridGaussian.steps_for_shift(probe, sensitivity, changed)
    charge = (1.0 + math.exp(epsilon)) * changed * 1.05 * _TV_SLACK  # η is ≈ _TV_SLACK; verified below
    while True:
        target = delta - charge
        if target < 0.5 * delta:
            raise ValueError(f"delta {delta:g} is too small for epsilon {epsilon:g} and {changed} changed coordinates")
        if changed == 1:
            start = analytic_gaussian_sigma(steps, epsilon, target)
            s = _smallest_s(lambda v: discrete_gaussian_delta(v, int(steps), epsilon), start, target)
        else:
            start = analytic_gaussian_sigma(steps, epsilon, target)
            s = _smallest_s(lambda v: zcdp_delta(steps * steps / (2.0 * v * v), epsilon), start, target)
        candidate = GridGaussian(granularity_log2, s)
        spent = candidate.delta_for_steps(epsilon, steps, changed)
        if spent <= delta:
            return candidate
        charge += spent - delta + 1e-6 * delta


@scoped_cache(256, scoped_maxsize=64)
def gaussian_for_rho(*, sensitivity: float, rho: float, changed: int = 1) -> GridGaussian:
    """The grid Gaussian whose zCDP ρ = k²/2s² for an L2 shift of ``sensitivity`` (k rounded steps) is ≤ ρ.

    :param rho: ρ > 0.
    :param changed: the number of coordinates one neighbour may change (default 1); each may
        add up to one step of rounding.
    """
    sigma = sensitivity / math.sqrt(2.0 * rho)
    granularity_log2 = math.frexp(sigma)[1] - 1 - GAUSS_STEPS_LOG2
    probe = GridGaussian.__new__(GridGaussian)
    object.__setattr__(probe, "granularity_log2", granularity_log2)
    steps = GridGaussian.steps_for_shift(probe, sensitivity, changed)
    s = steps / math.sqrt(2.0 * rho)
    while steps * steps / (2.0 * s * s) > rho:
        s = math.nextafter(s, math.inf)
    return GridGaussian(granularity_log2, s)


# --- exact categorical draws (the exponential mechanism) --------------------------------------
#: Weights within 2^-HEAD_BITS of the largest are summed as integers; the others are reached by rejection.
HEAD_BITS = 64


def dyadic_weights(log_weights: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(M, k) with M_i·2^(k_i) ∝ exp(l_i): the exact weights that :func:`draw_log_categorical` samples.

    With t_i = (l_i − max l)/ln 2 = k_i + f_i (k_i an integer, 0 ≤ f_i < 1), M_i = round(2^(f_i)·2^52)
    (a 53-bit integer): an exact dyadic number for every weight, however small (no underflow), so
    M_i·2^(k_i) / Σ equals exp(l_i)/Σ exp(l) up to one rounding of t_i, 2^(f_i) and M_i (a relative
    error ≲ 2^-51 plus |t_i|·2^-53); the float64 error of the log-weights themselves is the
    caller's to charge. −inf gives M_i = 0; at least one l_i must be finite.

    :param log_weights: the log-weights, a 1-D array (NaN and +inf are refused).
    """
    values = np.asarray(log_weights, dtype=np.float64)
    finite = np.isfinite(values)
    if values.ndim != 1 or np.isnan(values).any() or np.isposinf(values).any() or not finite.any():
        raise ValueError("log_weights must be a 1-D array of numbers < +inf, at least one finite")
    t = np.where(finite, (values - values[finite].max()) / LN2, 0.0)
    exponents = np.floor(t)
    mantissas = np.rint(np.ldexp(np.exp2(t - exponents), 52)).astype(np.int64)
    return np.where(finite, mantissas, 0), exponents.astype(np.int64)


def uniform_below(bound: int, bits: BitSource) -> int:
    """An integer uniform on {0, …, ``bound`` − 1}, exactly: rejection of ⌈log2 bound⌉-bit draws from ``bits`` (accepts ≥ 1/2)."""
    if bound < 1:
        raise ValueError(f"bound must be ≥ 1, got {bound}")
    width = (bound - 1).bit_length()
    while True:
        raw = bits.words(-(-width // 64)) if width else np.zeros(0, dtype=np.uint64)
        draw = int.from_bytes(raw.astype("<u8").tobytes(), "little") & ((1 << width) - 1)
        if draw < bound:
            return draw


def draw_log_categorical(log_weights: npt.NDArray[np.float64], bits: BitSource) -> int:
    """i with probability M_i·2^(k_i) / Σ exactly, (M, k) = :func:`dyadic_weights` (``log_weights``), from ``bits``.

    No floating point in the draw. The weights within 2^-HEAD_BITS of the largest (the head) are
    exact integers M_i·2^(k_i − K + H) (K the largest k, H = HEAD_BITS); every other weight (the
    tail, each < 2^52 in those units) is proposed with the envelope 2^53 and accepted with
    probability M_j·2^(k_j − K + H) / 2^53 < 1, exactly (one uniform integer); a rejection
    restarts the whole draw. So index i is returned with probability ∝ its weight, the tail's
    included, whatever its size, and the tail is proposed with probability < (tail size)·2^-H.
    """
    mantissas, exponents = dyadic_weights(log_weights)
    positive = np.flatnonzero(mantissas > 0)
    top = int(exponents[positive].max())
    in_head = exponents[positive] >= top - HEAD_BITS
    head, tail = positive[in_head], positive[~in_head]
    shifts = (exponents[head] - (top - HEAD_BITS)).astype(object)
    running = np.cumsum(mantissas[head].astype(object) * (2**shifts)).tolist()
    head_total = int(running[-1])
    envelope = 1 << 53
    while True:
        draw = uniform_below(head_total + len(tail) * envelope, bits)
        if draw < head_total:
            return int(head[bisect.bisect_right(running, draw)])
        j = int(tail[(draw - head_total) // envelope])
        deficit = top - HEAD_BITS - int(exponents[j])  # ≥ 1: the weight is M_j / 2^deficit in these units
        if uniform_below(1 << (53 + deficit), bits) < int(mantissas[j]):
            return j
