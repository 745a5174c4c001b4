"""Scalar functions on released values (post-processing: they never read a row and cost nothing):
``POWER``, ``SQRT``, ``ABS``, ``LN``, ``EXP``, ``LEAST`` and ``GREATEST``.

Each maps released cells (a value and its interval) to a cell. The interval is the image of the
arguments' intervals: whenever every argument's true value lies in its interval, the function of
the true values lies in the result's (each function is monotone on the pieces split at its one
critical point or pole, so the image is taken at the ends and at that point). A value outside a
function's domain (``SQRT`` or ``LN`` of a negative noisy value, ``POWER(x, 0.5)`` of one) is NaN,
never an error, so that no released value can make an answer fail after the spend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

#: sqlglot's node names → the SQL names of the functions on released values.
FUNCTIONS = {
    "Pow": "POWER",
    "Sqrt": "SQRT",
    "Abs": "ABS",
    "Ln": "LN",
    "Exp": "EXP",
    "Least": "LEAST",
    "Greatest": "GREATEST",
}
NAN = math.nan


class Interval(NamedTuple):
    """A released number and its interval (the shape of :class:`dpwitness.sql.answer.Cell`)."""

    value: float
    low: float
    high: float


def apply(name: str, arguments: Sequence[Interval]) -> Interval:
    """``name`` (a value of :data:`FUNCTIONS`) of released ``arguments`` (POWER: base and a constant exponent)."""
    if any(math.isnan(a.value) for a in arguments):
        return Interval(NAN, NAN, NAN)
    if name in ("LEAST", "GREATEST"):  # monotone in each argument
        pick = min if name == "LEAST" else max
        return Interval(pick(a.value for a in arguments), pick(a.low for a in arguments), pick(a.high for a in arguments))
    x = arguments[0]
    if name == "ABS":
        if x.low >= 0:
            return Interval(abs(x.value), x.low, x.high)
        if x.high <= 0:
            return Interval(abs(x.value), -x.high, -x.low)
        return Interval(abs(x.value), 0.0, max(-x.low, x.high))
    if name == "EXP":
        return _monotone(_exp, x)
    if name == "SQRT":
        return _on_positive(math.sqrt, x, at_zero=0.0)
    if name == "LN":
        return _on_positive(math.log, x, at_zero=-math.inf)
    if name == "POWER":
        return _power(x, arguments[1].value)
    raise AssertionError(name)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _monotone(f: Callable[[float], float], x: Interval) -> Interval:
    """An increasing ``f``: the ends of the interval map to the ends."""
    return Interval(f(x.value), f(x.low), f(x.high))


def _on_positive(f: Callable[[float], float], x: Interval, *, at_zero: float) -> Interval:
    """An increasing ``f`` defined on [0, ∞) (``at_zero`` its value or limit at 0)."""

    def safe(v: float) -> float:
        return f(v) if v > 0 else at_zero if v == 0 else NAN

    if x.high < 0:  # no true value in the domain
        return Interval(safe(x.value), NAN, NAN)
    return Interval(safe(x.value), safe(max(x.low, 0.0)), safe(x.high))


def _power(x: Interval, p: float) -> Interval:
    """x^p for a constant exponent p: integers on the whole line (a pole at 0 when p < 0), other
    exponents on [0, ∞)."""
    if p == 0:
        return Interval(1.0, 1.0, 1.0)
    if p != int(p):  # x^p is defined for x ≥ 0 only: increasing (p > 0) or decreasing (p < 0) there
        if p > 0:
            return _on_positive(lambda v: _pow(v, p), x, at_zero=0.0)
        inner = _on_positive(lambda v: _pow(v, -p), x, at_zero=0.0)
        return Interval(*(_reciprocal(v) for v in (inner.value, inner.high, inner.low)))
    n = int(p)
    value = _pow(x.value, p) if not (x.value == 0 and n < 0) else NAN
    even = n % 2 == 0
    if n < 0 and x.low <= 0 <= x.high:  # the pole lies in the interval: unbounded
        return Interval(value, 0.0 if even else -math.inf, math.inf)
    ends = [_pow(x.low, p), _pow(x.high, p)]
    if even and n > 0 and x.low < 0 < x.high:  # the minimum 0 lies inside
        ends.append(0.0)
    return Interval(value, min(ends), max(ends))


def _pow(v: float, p: float) -> float:
    try:
        return float(v**p)
    except OverflowError:
        negative = v < 0 and p == int(p) and int(p) % 2 == 1
        return -math.inf if negative else math.inf
    except ZeroDivisionError:
        return math.inf


def _reciprocal(v: float) -> float:
    if math.isnan(v):
        return NAN
    return math.inf if v == 0 else 1.0 / v


__all__ = ["FUNCTIONS", "Interval", "apply"]
