"""Rejection sampling shared by both samplers: repeated attempts on fresh words until enough are
accepted, on the vector path (NumPy) and on the scalar path (Python integers, the same words in the same roles).

Timing: rejected draws are discarded independently of the value finally accepted, so the
number of draws says nothing about the noise or the input (cf. Jin et al., S&P 2022).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dpwitness.noise.bits import BitSource

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
