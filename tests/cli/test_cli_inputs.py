"""The command line's inputs to the witness: ``MODULE:FUNCTION`` and the ``--columns`` JSON."""

from __future__ import annotations

import polars as pl
import pytest

from dpwitness import ParameterError
from dpwitness.cli.inputs import load_function, parse_columns


def test_parse_columns_reads_dtype_names_and_allowed_values() -> None:
    assert parse_columns('{"x": "Float64", "g": ["a", null]}') == {"x": pl.Float64, "g": ["a", None]}


@pytest.mark.parametrize("text", [None, "not json", "{}", '{"x": "Decimal"}', '{"x": []}'])
def test_parse_columns_refuses_anything_else_naming_the_flag(text: str | None) -> None:
    with pytest.raises(ParameterError, match="columns"):
        parse_columns(text)


def test_load_function_finds_an_importable_function() -> None:
    assert load_function("json:dumps")([1]) == "[1]"


@pytest.mark.parametrize("target", ["no_colon", "no_such_module_here:f", "json:no_such_function"])
def test_load_function_refuses_anything_else_naming_the_flag(target: str) -> None:
    with pytest.raises(ParameterError, match="sensitivity_search"):
        load_function(target)
