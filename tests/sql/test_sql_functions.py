"""Scalar functions on released values: the interval of f(x) holds f(t) for every t in x's interval.

Random intervals (around 0, one-sided, wide, degenerate) and random points inside them: the
function of the points must lie in the computed interval, for each function and each exponent
kind of POWER (even, odd, negative, fractional). A naive image (f of the two ends) fails this for
ABS, an even POWER and a negative POWER across 0, which the last test shows.
"""

from __future__ import annotations

import math
import random

import pytest

from dpwitness.sql.functions import Interval, _pow, apply

pytest.importorskip("sqlglot")


def _truth(name: str, values: list[float]) -> float:
    x = values[0]
    if name == "ABS":
        return abs(x)
    if name == "EXP":
        return math.exp(x) if x < 700 else math.inf
    if name == "SQRT":
        return math.sqrt(x) if x >= 0 else math.nan
    if name == "LN":
        return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
    if name == "LEAST":
        return min(values)
    if name == "GREATEST":
        return max(values)
    raise AssertionError(name)


def _intervals(rng: random.Random) -> list[tuple[float, float]]:
    out = []
    for _ in range(400):
        kind = rng.choice(["around 0", "positive", "negative", "wide", "point"])
        a = rng.uniform(-5, 5)
        width = rng.uniform(0, 3) if kind != "wide" else rng.uniform(0, 300)
        if kind == "around 0":
            out.append((-rng.uniform(0, 3), rng.uniform(0, 3)))
        elif kind == "positive":
            out.append((abs(a), abs(a) + width))
        elif kind == "negative":
            out.append((-abs(a) - width, -abs(a)))
        elif kind == "point":
            out.append((a, a))
        else:
            out.append((a - width, a + width))
    return out


def _inside(result: Interval, truth: float) -> bool:
    if math.isnan(truth):
        return True  # outside the domain: SQL has no value either
    slack = 1e-9 * max(1.0, abs(truth)) if math.isfinite(truth) else 0.0
    return result.low - slack <= truth <= result.high + slack


@pytest.mark.parametrize("name", ["ABS", "EXP", "SQRT", "LN", "LEAST", "GREATEST"])
def test_each_functions_interval_holds_the_function_of_every_point(name: str) -> None:
    rng = random.Random(11)
    arity = 3 if name in ("LEAST", "GREATEST") else 1
    intervals = _intervals(rng)
    for index, (low, high) in enumerate(intervals):
        arguments = [(low, high)] + [intervals[(index * 7 + k) % len(intervals)] for k in range(1, arity)]
        for _ in range(20):
            points = [
                rng.uniform(a, b) if rng.random() < 0.8 else rng.choice([a, b, 0.0 if a <= 0 <= b else a]) for a, b in arguments
            ]
            cells = [Interval(p, a, b) for p, (a, b) in zip(points, arguments, strict=True)]
            result = apply(name, cells)
            truth = _truth(name, points)
            assert _inside(result, truth), (name, arguments, points, result)
            if not math.isnan(truth):
                assert result.value == truth or math.isclose(result.value, truth)


@pytest.mark.parametrize("exponent", [2.0, 3.0, 4.0, -1.0, -2.0, -3.0, 0.5, 1.5, -0.5, 0.0, 1.0])
def test_powers_interval_holds_every_point(exponent: float) -> None:
    rng = random.Random(12)
    for low, high in _intervals(rng):
        for _ in range(20):
            point = rng.uniform(low, high) if rng.random() < 0.8 else rng.choice([low, high])
            result = apply("POWER", [Interval(point, low, high), Interval(exponent, exponent, exponent)])
            if (point < 0 and exponent != int(exponent)) or (point == 0 and exponent < 0):
                assert math.isnan(result.value)
                continue
            truth = _pow(point, exponent)
            assert _inside(result, truth), (exponent, low, high, point, result)
            assert math.isclose(result.value, truth)


def test_a_value_outside_the_domain_is_nan_never_an_error() -> None:
    assert math.isnan(apply("SQRT", [Interval(-1.0, -3.0, -0.5)]).value)
    assert math.isnan(apply("SQRT", [Interval(-1.0, -3.0, -0.5)]).low)
    assert apply("SQRT", [Interval(-1.0, -3.0, 4.0)])[1:] == (0.0, 2.0)
    assert apply("LN", [Interval(1.0, -2.0, math.e)])[1:] == (-math.inf, 1.0)
    assert apply("EXP", [Interval(1e6, 0.0, 1e6)]).high == math.inf
    assert apply("POWER", [Interval(1e200, 1e199, 1e201), Interval(2.0, 2.0, 2.0)]).value == math.inf
    assert math.isnan(apply("ABS", [Interval(math.nan, 0.0, 1.0)]).value)


def test_the_naive_image_of_the_ends_would_be_wrong() -> None:
    """The checks above can fail: f(low), f(high) alone misses the minimum of |x| and x² inside (−1, 2)
    and the pole of 1/x; the computed intervals hold them."""
    naive_abs = (abs(-1.0), abs(2.0))
    assert not min(naive_abs) <= 0.0  # |0| = 0 is below both ends
    assert apply("ABS", [Interval(0.5, -1.0, 2.0)])[1:] == (0.0, 2.0)
    assert apply("POWER", [Interval(0.5, -1.0, 2.0), Interval(2.0, 2.0, 2.0)])[1:] == (0.0, 4.0)
    assert apply("POWER", [Interval(0.5, -1.0, 2.0), Interval(-1.0, -1.0, -1.0)])[1:] == (-math.inf, math.inf)
    assert apply("POWER", [Interval(0.5, -1.0, 2.0), Interval(-2.0, -2.0, -2.0)])[1:] == (0.0, math.inf)
