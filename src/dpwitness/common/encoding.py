"""The one JSON encoding of every face (CLI ``--json``, the service, the explorer, ``to_dict``).

The convention: the JSON is strict (``allow_nan=False``: no ``Infinity`` or ``NaN`` literals, which
most parsers refuse), so a float that is not finite is written as

* ``+∞`` → the string ``"inf"``, ``−∞`` → ``"-inf"`` (``float()`` reads both back), and
* NaN → ``null`` (a number that is not defined, as JSON has none).

A record's cell in a counter-example (:func:`json_cell`) is data, not a computed number: there
``null`` is a missing cell, so a NaN cell is written ``"nan"`` to stay distinct from it.

Everything else is made JSON-ready as well: numpy scalars and arrays become Python numbers and
lists, tuples and sets lists, mapping keys text, an object with ``to_dict()`` its dictionary, a
dataclass its fields, and anything else (a path, a fraction, a date) its ``str``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: How +∞ and −∞ are written (the only strings :func:`read_number` turns back into floats).
INFINITY, NEGATIVE_INFINITY = "inf", "-inf"


def json_number(value: float) -> float | str | None:
    """``value`` under the convention: finite unchanged, ±∞ as ``"inf"``/``"-inf"``, NaN as None."""
    if math.isnan(value):
        return None
    if math.isinf(value):
        return INFINITY if value > 0 else NEGATIVE_INFINITY
    return value


def read_number(value: float | int | str | None) -> float:
    """The float that :func:`json_number` wrote as ``value``: ``"inf"``/``"-inf"`` → ±∞, None → NaN (a round trip)."""
    if value is None:
        return math.nan
    if value in (INFINITY, NEGATIVE_INFINITY):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number written by json_number: {value!r}")
    return float(value)


def json_cell(value: Any) -> Any:
    """A record's cell ``value`` for JSON: as :func:`json_value`, except that NaN is ``"nan"`` (null is a missing cell)."""
    if isinstance(value, float | np.floating) and math.isnan(value):
        return "nan"
    return json_value(value)


def json_value(value: Any) -> Any:
    """``value`` made JSON-ready under the module's convention (see the module docstring)."""
    kind = type(value)  # the plain built-in types first: no ABC check (a release's dict is ~100 values)
    if kind is float:
        return json_number(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {str(k): json_value(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [json_value(v) for v in value]
    if isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, np.generic):
        return json_value(value.item())
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        return [json_value(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    frame = frame_columns(value)
    if frame is not None:
        return json_value(frame)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return json_value(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return str(value)


def frame_columns(value: Any) -> dict[str, list[Any]] | None:
    """A data frame (Polars, pandas: an object with ``columns`` and a two-dimensional ``shape``) as
    {column name: its values in row order, as Python objects}; None for anything else. Duck-typed:
    neither library is imported.

    :param value: any object; only a frame gives a dictionary.
    """
    shape = getattr(value, "shape", None)
    columns = getattr(value, "columns", None)
    if isinstance(value, np.ndarray) or columns is None or not isinstance(shape, tuple) or len(shape) != 2:
        return None
    out: dict[str, list[Any]] = {}
    for name in columns:
        column = value[name]
        items = column.to_list() if hasattr(column, "to_list") else column.tolist() if hasattr(column, "tolist") else list(column)
        out[str(name)] = [item.item() if isinstance(item, np.generic) else item for item in items]
    return out


def dumps(value: Any, *, indent: int | None = None) -> str:
    """``value`` as strict JSON text (UTF-8 kept, not escaped) under the module's convention, with
    ``indent`` spaces per level (None: one line)."""
    return json.dumps(json_value(value), indent=indent, ensure_ascii=False, allow_nan=False)


__all__ = ["INFINITY", "NEGATIVE_INFINITY", "dumps", "frame_columns", "json_cell", "json_number", "json_value", "read_number"]
