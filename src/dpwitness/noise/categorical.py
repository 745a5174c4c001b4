"""Exact categorical draws for the exponential mechanism: integers and random bits only.

:func:`draw_log_categorical` samples index i with probability exactly proportional to the dyadic
value of exp(l_i) (:func:`dyadic_weights`); the float64 error of the log-weights themselves is the
caller's to charge (see :mod:`dpwitness.mechanisms.joint_quantiles`).
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

from dpwitness.noise.bits import BitSource
from dpwitness.noise.laplace import LN2

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
