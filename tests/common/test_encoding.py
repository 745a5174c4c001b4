"""The one JSON convention: strict JSON, ±∞ as "inf"/"-inf", NaN as null; numpy and objects made plain."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpwitness.common.encoding import dumps, json_cell, json_number, json_value, read_number


def _strict(text: str) -> object:
    def refuse(literal: str) -> object:
        raise AssertionError(f"non-standard JSON literal {literal}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_follow_the_convention() -> None:
    assert json_number(math.inf) == "inf"
    assert json_number(-math.inf) == "-inf"
    assert json_number(math.nan) is None
    assert json_number(0.1) == 0.1 and json_number(-0.0) == 0.0


def test_dumps_is_strict_json_at_any_depth() -> None:
    payload = {"a": [math.inf, {"b": -math.inf}], "c": (math.nan, 1.5), 3: np.float64("inf")}
    assert _strict(dumps(payload)) == {"a": ["inf", {"b": "-inf"}], "c": [None, 1.5], "3": "inf"}


def test_round_trip_of_every_float() -> None:
    values = [0.0, -0.0, 5e-324, 0.1, -1e308, 1.7976931348623157e308, math.inf, -math.inf]
    back = [read_number(v) for v in _strict(dumps(values))]  # type: ignore[union-attr]
    assert back == values and [math.copysign(1, v) for v in back] == [math.copysign(1, v) for v in values]
    assert math.isnan(read_number(_strict(dumps(math.nan))))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        read_number("Infinity")  # type: ignore[arg-type]


def test_numpy_values_become_python() -> None:
    encoded = json_value({"i": np.int64(7), "f": np.float32(0.5), "b": np.bool_(True), "a": np.array([[1, 2], [3, 4]])})
    assert encoded == {"i": 7, "f": 0.5, "b": True, "a": [[1, 2], [3, 4]]}
    assert type(encoded["i"]) is int and type(encoded["b"]) is bool
    assert json_value(np.array([np.inf, np.nan])) == ["inf", None]


def test_built_in_containers_and_their_subclasses_encode_alike() -> None:
    """json_value takes plain dicts, lists, tuples and floats by their exact type first (a release is
    ~100 values); a subclass or lookalike goes the general way, to the same JSON."""
    from collections import OrderedDict

    class Score(float):
        pass

    plain = {"a": (1.0, math.inf, math.nan), 2: [True, None, "x", 3], "nested": {"b": [-math.inf]}}
    other = OrderedDict([("a", [Score(1.0), Score(math.inf), Score(math.nan)]), (2, (True, None, "x", 3))])
    other["nested"] = OrderedDict(b=(Score(-math.inf),))
    expected = {"a": [1.0, "inf", None], "2": [True, None, "x", 3], "nested": {"b": ["-inf"]}}
    assert json_value(plain) == json_value(other) == expected
    assert json_value(frozenset({1.5})) == [1.5] and json_value(math.inf) == "inf"


@dataclass(frozen=True)
class _Point:
    x: float
    where: Path


class _Described:
    def to_dict(self) -> dict[str, float]:
        return {"loss": math.inf}


def test_objects_dataclasses_paths_and_fractions() -> None:
    assert json_value(_Point(-math.inf, Path("a/b.csv"))) == {"x": "-inf", "where": str(Path("a/b.csv"))}
    assert json_value(_Described()) == {"loss": "inf"}
    assert json_value(Fraction(1, 3)) == "1/3"


def test_a_nan_cell_stays_distinct_from_a_missing_one() -> None:
    assert [json_cell(v) for v in (math.nan, None, math.inf, "x", 2)] == ["nan", None, "inf", "x", 2]


def test_text_is_kept_as_utf8() -> None:
    assert dumps({"ε": "≥ 1"}) == '{"ε": "≥ 1"}'
