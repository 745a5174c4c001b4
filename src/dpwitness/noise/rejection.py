"""Rejection sampling shared by both samplers: repeated attempts on fresh words until enough are
accepted, on the vector path (NumPy) and on the scalar path (Python integers, the same words in the same roles).

Timing: rejected draws are discarded independently of the value finally accepted, so the
number of draws says nothing about the noise or the input (cf. Jin et al., S&P 2022).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dpwitness.noise.bits import BitSource, _secure_pairs

_CHUNK = 1 << 16
#: Requests of at most this many draws use the samplers' scalar path (Python integers).
SCALAR_DRAWS = 4
#: A rejection round attempts 2^-spare more draws than it needs, plus 8 (Laplace rejects ≈ 0.5%, the Gaussian ≈ 2%).
_LAPLACE_SPARE = 6
_GAUSS_SPARE = 5


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


Attempt = Callable[[int], tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]]
AttemptWords = Callable[
    [npt.NDArray[np.uint64], npt.NDArray[np.uint64], BitSource], tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]
]


def paired_attempts(attempt_words: AttemptWords, bits: BitSource) -> Attempt:
    """k attempts on 2k fresh words from ``bits``: a = the first k, t = the last k (both samplers' layout)."""

    def attempt(k: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        words = bits.words(2 * k)
        return attempt_words(words[:k], words[k:], bits)

    return attempt


def draw_steps(
    n: int,
    bits: BitSource,
    *,
    draw_one: Callable[[BitSource], int],
    attempt_one: Callable[[int, int, BitSource], int | None],
    attempt_words: AttemptWords,
    spare: int,
) -> npt.NDArray[np.int64]:
    """n draws in grid steps, the loop both samplers share.

    Up to :data:`SCALAR_DRAWS` draws take the scalar path (Python integers: ``draw_one`` on two
    fresh words per attempt from a secure source, else ``attempt_one`` on the vector path's
    words, so seeded runs give the same draws on either path); more take vectorised rounds of
    ``attempt_words`` in chunks of 2^16.
    """
    if n <= SCALAR_DRAWS:
        scalar = [draw_one(bits) for _ in range(n)] if _secure_pairs(bits) else _scalar_fill(n, bits, attempt_one, spare=spare)
        return np.array(scalar, dtype=np.int64)
    attempt = paired_attempts(attempt_words, bits)
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        _fill(stop - start, attempt, spare=spare, out=out[start:stop])
    return out
