"""The grid γ·ℤ, γ = 2^k: exact rounding of inputs to it and the exact sum of a centre and a draw,
converted to a double once (so every input has the same set of possible outputs)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


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
