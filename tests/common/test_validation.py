"""check_count: a whole number in range, never a bool, a float or text; one message naming the parameter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count


@pytest.mark.parametrize("value", [True, False, 1.0, 2.5, "3", None, 0, -1, np.bool_(True), np.float64(2.0)])
def test_refuses_anything_but_a_whole_number_at_least_one(value: Any) -> None:
    with pytest.raises(ParameterError) as raised:
        check_count("max_rows", value)
    assert raised.value.parameter == "max_rows"
    message = str(raised.value)
    assert message.startswith("max_rows must be a whole number ≥ 1; got ") and "\n" not in message


@pytest.mark.parametrize("value", [1, 7, 2**70, np.int64(3), np.uint8(1), np.int32(12)])
def test_accepts_python_and_numpy_integers_as_int(value: Any) -> None:
    checked = check_count("trials", value)
    assert checked == int(value) and type(checked) is int


def test_range_and_expected_text() -> None:
    assert check_count("seed", 0, minimum=0) == 0
    assert check_count("bins", 64, minimum=2, maximum=64) == 64
    with pytest.raises(ParameterError, match=r"^bins must be a whole number from 2 to 64; got 65$"):
        check_count("bins", 65, minimum=2, maximum=64)
    with pytest.raises(ParameterError, match=r"^size must be a whole number ≥ 1 or None; got 0$"):
        check_count("size", 0, expected="a whole number ≥ 1 or None")
