"""The checks of a parameter, each raising :class:`~dpwitness.common.errors.ParameterError` that
names it: one line, "``parameter`` must be ``expected``; got ``value``", before anything is spent.

Use these rather than an inline ``isinstance`` test, so that every face refuses the same values
with the same words (a bool is never a number or a count; a float is never a count).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import ParameterError


def check_count(parameter: str, value: Any, *, minimum: int = 1, maximum: int | None = None, expected: str | None = None) -> int:
    """``value`` as an int if it is a whole number (a Python or numpy integer, never a bool, a float
    or text) in [``minimum``, ``maximum``], else ``ParameterError`` naming ``parameter``.

    :param expected: the message's description of what was expected; by default "a whole number ≥ minimum"
        (or "a whole number from minimum to maximum").
    """
    if expected is None:
        expected = f"a whole number ≥ {minimum}" if maximum is None else f"a whole number from {minimum} to {maximum}"
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ParameterError(parameter, expected, value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ParameterError(parameter, expected, value)
    return int(value)


def check_positive_finite(parameter: str, value: Any) -> float:
    """``value`` as a float if it is a finite number > 0, else ``ParameterError`` naming ``parameter``."""
    number = check_finite(parameter, value, "a finite number > 0")
    if number <= 0:
        raise ParameterError(parameter, "a finite number > 0", value)
    return number


def check_non_negative_finite(parameter: str, value: Any) -> float:
    """``value`` as a float if it is a finite number ≥ 0, else ``ParameterError`` naming ``parameter``."""
    number = check_finite(parameter, value, "a finite number ≥ 0")
    if number < 0:
        raise ParameterError(parameter, "a finite number ≥ 0", value)
    return number


def check_finite(parameter: str, value: Any, expected: str = "a finite number") -> float:
    """``value`` as a float if it is a finite number (not a bool), else ``ParameterError`` naming
    ``parameter`` and saying it was ``expected`` (default "a finite number")."""
    if isinstance(value, bool):
        raise ParameterError(parameter, expected, value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(parameter, expected, value) from None
    if not math.isfinite(number):
        raise ParameterError(parameter, expected, value)
    return number


def check_alpha(alpha: Any) -> float:
    """``alpha`` (an interval's miss probability) as a float strictly between 0 and 1, else ``ParameterError("alpha", …)``."""
    number = check_finite("alpha", alpha, "a number strictly between 0 and 1")
    if not 0.0 < number < 1.0:
        raise ParameterError("alpha", "a number strictly between 0 and 1", alpha)
    return number


def check_finite_vector(parameter: str, values: Any) -> npt.NDArray[np.float64]:
    """A non-empty 1-D array of finite numbers.

    :param parameter: the parameter named in the error.
    :param values: anything numpy reads as a 1-D float array.
    """
    try:
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(parameter, "a 1-D list of numbers", values) from None
    if data.ndim != 1 or data.size == 0 or not np.all(np.isfinite(data)):
        raise ParameterError(parameter, "a non-empty 1-D list of finite numbers", f"shape {data.shape}")
    return data
