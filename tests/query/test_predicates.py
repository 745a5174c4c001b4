"""The row-filter language: parsed without eval, every error names `where` and a position, the
same semantics compiled to Polars (Spark parity is in tests/engines/test_engine_spark.py)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from dpwitness import ParameterError
from dpwitness.query.predicates import parse, to_polars

KINDS = {"age": "integer", "x": "float", "sex": "string", "flag": "boolean", "raw": "untyped"}
FRAME = pl.DataFrame(
    {
        "age": [15, 25, 35, None, 45],
        "x": [1.0, float("nan"), None, 3.0, 2.0],
        "sex": ["Female", "Male", None, "Female", "Male"],
        "flag": [True, False, None, True, False],
        "raw": ["1", " 2 ", "x", None, "3.5"],
    }
)


def kept(text: str) -> list[int]:
    """The row indices the predicate keeps (true only: false and unknown are dropped)."""
    predicate = parse(text)
    predicate.check(KINDS)
    mask = FRAME.select(to_polars(predicate, KINDS)).to_series().to_list()
    return [i for i, m in enumerate(mask) if m is True]


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("age < 20", [0]),
        ("age >= 25 and sex == 'Male'", [1, 4]),
        ("age < 20 or sex = 'Male'", [0, 1, 4]),
        ("not (age < 30)", [2, 4]),  # the null age stays unknown, so dropped
        ("age in [15, 45]", [0, 4]),
        ("age not in [15, 45]", [1, 2]),
        ("age between 20 and 40", [1, 2]),
        ("age not between 20 and 40", [0, 4]),
        ("age is null", [3]),
        ("x is null", [1, 2]),  # NaN counts as missing
        ("x is not null", [0, 3, 4]),
        ("x > 1.5", [3, 4]),
        ("not x > 1.5", [0]),  # NaN and null are unknown under not
        ("flag == true", [0, 3]),
        ("flag != true", [1, 4]),
        ("raw < 3", [0, 1]),  # untyped text read as numbers where compared with a number
        ("raw == 'x'", [2]),  # ... and as text where compared with text
        ("20 > age", [0]),  # literal first: flipped
        ("sex == 'Female' and (age < 20 or age > 40)", [0]),
        ("sex <> 'Female'", [1, 4]),
        ("`age` <= 25", [0, 1]),
        ("AGE < 20 OR SEX == 'Male'", []),  # keywords are case-insensitive, column names are not
    ],
)
def test_semantics(text: str, rows: list[int]) -> None:
    if text.startswith("AGE"):
        with pytest.raises(ParameterError):
            kept(text)
        return
    assert kept(text) == rows


def test_quotes_and_numbers() -> None:
    frame = pl.DataFrame({"name": ["it's", 'say "hi"', "x"]})
    for text, row in (("name == 'it''s'", 0), ('name == "say ""hi"""', 1)):
        predicate = parse(text)
        assert frame.select(to_polars(predicate, {"name": "string"})).to_series().to_list().index(True) == row
    assert parse("age < -1.5e2").value_tree.value == -150.0  # type: ignore[union-attr]
    assert parse("age < 3").value_tree.value == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", None, "non-empty"),
        ("   ", None, "non-empty"),
        ("(age < 20", 1, "never closed"),
        ("age < 20)", 9, "without its"),
        ("((age < 20) and (sex == 'Male')", 1, "never closed"),
        ("age <", 6, "its end"),
        ("age < 20 and", 13, "end of the predicate"),
        ("age 20", 5, "comparison"),
        ("age < 'twenty'", 1, "a number"),
        ("sex == 3", 1, "text in quotes"),
        ("flag < true", 1, "== or !="),
        ("height < 3", 1, "unknown column"),
        ("age < sex", 7, "two columns"),
        ("1 < 2", 5, "two literals"),
        ("age in [1, 'a']", 1, "one type"),
        ("age in 1, 2", 8, "'['"),
        ("sex == 'Male", 8, "unterminated"),
        ("age < 1e400", 7, "finite"),
        ("age ; drop", 5, "operator"),
        ("__import__('os').system('x')", 17, "operator"),
        ("__import__('os')", 11, "comparison"),
        ("age is 3", 8, "null"),
        ("age between 1 or 3", 15, "'and'"),
        ("row_number <= 3 or age < 2", 1, "top level"),
        ("not row_number <= 3", 5, "top level"),
        ("row_number != 3", 1, "one window"),
        ("row_number <= 'a'", 1, "a number"),
    ],
)
def test_bad_predicates_name_where_and_the_position(text: str, position: int | None, fragment: str) -> None:
    with pytest.raises(ParameterError) as caught:
        parse(text).check(KINDS)
    assert caught.value.parameter == "where"
    message = str(caught.value)
    assert fragment in message
    if position is not None:
        assert message.endswith(f"at position {position}"), message
    assert "\n" not in message


def test_depth_and_length_limits() -> None:
    with pytest.raises(ParameterError, match="nesting"):
        parse("(" * 40 + "age < 1" + ")" * 40)
    with pytest.raises(ParameterError, match="nesting"):
        parse("not " * 40 + "age < 1")
    with pytest.raises(ParameterError, match="characters"):
        parse("age < 1 or " * 300 + "age < 2")
    assert parse("(" * 10 + "age < 1" + ")" * 10).columns == ("age",)


def test_a_window_of_positions() -> None:
    assert parse("row_number <= 5").window == (1, 5)
    assert parse("row_number < 5").window == (1, 4)
    assert parse("row_number > 2 and row_number <= 7 and age > 3").window == (3, 7)
    assert parse("row_number between 2.5 and 6.5").window == (3, 6)
    assert parse("row_number == 4").window == (4, 4)
    only = parse("row_number >= 10")
    assert only.window == (10, math.inf) and only.value_tree is None and not only.record_wise
    assert parse("age < 3").window is None and parse("age < 3").record_wise
    assert parse("row_number <= 5 and sex == 'Male'").columns == ("sex",)


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
@pytest.mark.parametrize(
    "text",
    [
        "c in ['a', 'b']",
        "not c in ['a', 'b']",
        "c not in ['a', 'zz']",
        "c in ['a', 'b'] or n > 2",
        "not (c in ['b', 'b'] and n < 3)",
    ],
)
def test_a_text_list_is_one_membership_test_with_the_equalities_answer(dtype: pl.DataType, text: str) -> None:
    frame = pl.DataFrame({"c": pl.Series(["a", None, "b", "c", None, "a"], dtype=dtype), "n": [1, 2, 3, 4, None, 6]})
    predicate, kinds = parse(text), {"c": "string", "n": "integer"}
    predicate.check(kinds)
    lookup = to_polars(predicate, kinds, frame.schema)  # the schema given: `in` is one is_in
    equalities = to_polars(predicate, kinds)  # no schema: the equalities
    assert "is_in" in str(lookup) and "is_in" not in str(equalities)
    assert frame.select(lookup).to_series().to_list() == frame.select(equalities).to_series().to_list()
