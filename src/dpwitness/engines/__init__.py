"""Engines compute the exact aggregates a :class:`~dpwitness.queries.Query` asks for. Nothing else.

The contract (every engine implements it the same way; the session does all the rest):

``open(source) -> handle``
    Cheap: no data scan. Turn a path / frame into the engine's lazy handle; raise
    :class:`~dpwitness.ParameterError` (parameter ``"source"``) for a missing file or an
    unsupported source.
``schema(handle) -> Schema``
    Column kinds and whether the table has a row: metadata only (at most one row is read).
``aggregate(handle, query, *, selection_key) -> Aggregates``
    The exact values of ``query.aggregates``; for a grouped query each value is a dict
    ``{key: number}`` over the keys present (a scalar key for one group column, a tuple for
    several; absent keys are zero). Steps, in this order:

    1. drop rows where ``query.column`` (if any), any of ``query.group_columns`` or
       ``query.privacy_unit`` is null (or NaN);
    2. if ``query.keys`` is not None, keep only rows whose key is one of them;
    3. contribution bounding, when ``query.privacy_unit`` is set: with
       ``b = query.contribution`` and ``k = b.max_rows_per_group``: if the query is grouped
       and ``query.max_groups`` is set, keep for each unit ≤ ``b.max_groups`` of its distinct
       keys, chosen uniformly at random, then ≤ k rows in each (unit, key); otherwise keep
       ≤ ``b.max_rows`` rows per unit, chosen uniformly at random. "At random" means ordered
       by a per-row pseudo-random value keyed by ``selection_key`` (four 64-bit words from
       :func:`dpwitness.noise.bit_source`: secure unless the session is seeded); never by
       file order or by the values;
    4. ``v = clamp(query.column, L, U)`` as float64 (``query.bounds``);
    5. ``count`` = rows, ``sum`` = Σ v, ``centred_sum`` = Σ (v − query.centre),
       ``centred_squares`` = Σ (v − query.centre)², per key when grouped.

    No noise, no budget, no rounding: the session adds Laplace noise once, on the driver.

An engine lives in ``dpwitness/engines/<name>.py`` and exposes one instance as ``ENGINE``.
Engines are looked up by name with :func:`engine_for`; ``spark`` is imported only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from dpwitness.errors import ParameterError
from dpwitness.queries import Aggregates, Query, Schema

#: Four 64-bit words that key the random row selection of contribution bounding.
SelectionKey = tuple[int, int, int, int]

_ENGINES = {"polars": "dpwitness.engines.polars", "spark": "dpwitness.engines.spark"}


class Engine(Protocol):
    """What the session needs from an engine (see the module docstring for the semantics)."""

    name: str

    def open(self, source: Any) -> Any: ...

    def schema(self, handle: Any) -> Schema: ...

    def aggregate(self, handle: Any, query: Query, *, selection_key: SelectionKey) -> Aggregates: ...


def engine_for(name: str) -> Engine:
    """The engine called ``name`` ("polars" or "spark"); its module is imported on first use."""
    if name not in _ENGINES:
        raise ParameterError("engine", f"one of {', '.join(_ENGINES)}", name)
    try:
        module = importlib.import_module(_ENGINES[name])
    except ImportError as error:
        raise ParameterError("engine", f"an installed engine (pip install 'dpwitness[{name}]')", f"{name} ({error})") from None
    engine: Engine = module.ENGINE
    return engine


def engine_names() -> tuple[str, ...]:
    return tuple(_ENGINES)
