"""The command line's inputs to the witness: a function named ``MODULE:FUNCTION`` and a ``--columns``
JSON of column types or allowed values (the witness itself takes Python objects; only the CLI parses text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpwitness.common.errors import ParameterError, import_failed

#: Polars dtypes a ``--columns`` JSON may name.
DTYPE_NAMES = (
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
    "Boolean",
    "String",
)


def load_function(target: str) -> Callable[..., Any]:
    """The function named ``MODULE:FUNCTION`` (the current directory is importable, as for ``python -m``).

    :param target: ``MODULE:FUNCTION`` text, e.g. ``mystats:total_income``; anything else, an
        unimportable module or a missing function raises ``ParameterError("sensitivity_search", …)``.
    """
    import importlib
    import os
    import sys

    module_name, _, name = target.partition(":") if isinstance(target, str) else ("", "", "")
    if not module_name or not name:
        raise ParameterError("sensitivity_search", "MODULE:FUNCTION, e.g. mystats:total_income", target)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:  # the module exists but imports something missing
            raise import_failed("sensitivity_search", target, error) from None
        raise ParameterError("sensitivity_search", "MODULE:FUNCTION with an importable MODULE", f"{target} ({error})") from None
    except Exception as error:  # the user's module failed to import: bad input, not our bug
        raise import_failed("sensitivity_search", target, error) from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ParameterError("sensitivity_search", f"MODULE:FUNCTION where {module_name} has a function {name!r}", target)
    return fn  # type: ignore[no-any-return]


def parse_columns(text: str | None) -> dict[str, Any]:
    """``--columns`` JSON: {"name": "Float64" (a Polars dtype name) or [allowed values, null allowed]}.

    :param text: the JSON text; None, invalid JSON or an empty object raises ``ParameterError("columns", …)``.
    """
    import json

    import polars as pl

    expected = 'a JSON object {"column": "Float64" or [allowed values]} (dtypes: ' + ", ".join(DTYPE_NAMES) + ")"
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not data:
        raise ParameterError("columns", expected, text)
    out: dict[str, Any] = {}
    for name, spec in data.items():
        if isinstance(spec, str) and spec in DTYPE_NAMES:
            out[name] = getattr(pl, spec)
        elif isinstance(spec, list) and spec:
            out[name] = spec
        else:
            raise ParameterError("columns", expected, {name: spec})
    return out
