"""Engines compute the exact aggregates a :class:`~dpwitness.query.queries.Query` asks for. Nothing else.

The contract (every engine implements it the same way; the session does all the rest):

``open(source, *, dtypes=None, separator=None, encoding=None) -> handle``
    Cheap: no data scan (a CSV's header, a Parquet footer). Turn a path / frame into the
    engine's lazy handle; raise :class:`~dpwitness.ParameterError` (parameter ``"source"``)
    for a missing file, a CSV without a usable header or an unsupported source. A CSV is read
    by :mod:`dpwitness.io.reader` (one physical line, one record; ``separator`` as declared).
    Types come from declared metadata only: a CSV's columns are text (``untyped``) unless
    ``dtypes`` declares them, and a declared type is a non-strict cast (a cell that does not
    fit is null).
``schema(handle) -> Schema``
    Column names and kinds: metadata only, no row is read (emptiness is not public).
``check(handle, query) -> None``
    Build the plan without running it and raise ``ParameterError`` if it cannot be compiled;
    the session calls it before the spend, so nothing after the spend fails for the query.
``aggregate(handle, query, *, selection_key) -> Aggregates``
    The exact values of ``query.aggregates``; for a grouped query each value is a dict
    ``{key: number}`` over the keys present (a scalar key for one group column, a tuple for
    several; absent keys are zero; declared keys are reported as declared, see
    :func:`declared_keys`). Steps, in this order:

    0. read: a bounded statistic reads an untyped ``query.column`` as float64 numbers under
       the cell grammar of :mod:`dpwitness.io.cells` (as every text cell is read and every typed
       value declared ``string`` is written; text that is not a number there is null);
    1. filter (``query.predicate``): keep the rows at positions ``window`` (1-based) in the
       declared order (``query.order_by``, nulls last, ties broken by the other columns read),
       counted over *every* row; then keep the rows where the value conditions are true
       (SQL's three-valued logic; NaN counts as null; see :mod:`dpwitness.query.predicates`);
    2. drop rows where ``query.column`` (if any), any of ``query.group_columns`` or
       ``query.privacy_unit`` is null (or NaN);
    3. if ``query.keys`` is not None, keep only rows whose key is one of them (a declared key
       is cast to the column's type; text for an untyped column);
    4. contribution bounding, when ``query.privacy_unit`` is set: with
       ``b = query.contribution`` and ``k = b.max_rows_per_group``: if the query is grouped
       and ``query.max_groups`` is set, keep for each unit ≤ ``b.max_groups`` of its distinct
       keys, chosen uniformly at random, then ≤ k rows in each (unit, key); otherwise keep
       ≤ ``b.max_rows`` rows per unit, chosen uniformly at random. "At random" means ordered
       by a per-row pseudo-random value keyed by ``selection_key`` (four 64-bit words from
       :func:`dpwitness.noise.bit_source`: secure unless the session is seeded) of the row's
       unit (and key) and its rank among that unit's rows sorted by the query's columns; never
       by file order, and never depending on another unit's rows (so that, for every key, the
       bounded table moves by one unit's rows);
    5. ``v = clamp(query.column, L, U)`` as float64 (``query.bounds``);
    6. ``count`` = rows, ``sum`` = Σ v, ``centred_sum`` = Σ (v − query.centre),
       ``centred_squares`` = Σ (v − query.centre)², per key when grouped. A quantile
       (``query.bins`` = B is set) counts rows per (``by`` key…, bin): the last
       ``group_columns`` entry is its column, whose key part is the bin
       min(⌊(v − L)·s⌋, B − 1) with s = :func:`dpwitness.mechanisms.quantiles.bin_scale` (these float64
       operations, in this order, so every engine bins every row alike); ``keys`` lists the
       ``by`` keys only (``query.declared_columns``).

    No noise, no budget, no rounding: the session adds Laplace noise once, on the driver.
``aggregate_many(handle, queries) -> list[Aggregates]``
    The aggregates of several queries that :func:`fuse_key` puts together (the same filter,
    groups and keys; no privacy unit, no bins, no row-position window), in one pass over the
    table: one ``group_by``/``select`` holding every query's aggregates, one collect. Each
    query's rows are those of its own plan: its column's null (and NaN) rows are left out of its
    own aggregates only, inside the pass. A declared key absent from a query's rows may come
    back as 0 (absent keys are zero).
    Nothing here may fail because of a value in the data (casts are non-strict, sums are of
    clamped float64 values), and no error may quote one.

An engine lives in ``dpwitness/engines/<name>.py`` and exposes one instance as ``ENGINE``.
Engines are looked up by name with :func:`engine_for`; ``spark`` is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from dpwitness.common.errors import ParameterError, require
from dpwitness.query.queries import Aggregates, Query, Schema

#: Four 64-bit words that key the random row selection of contribution bounding.
SelectionKey = tuple[int, int, int, int]

_ENGINES = {"polars": "dpwitness.engines.polars", "spark": "dpwitness.engines.spark"}


class Engine(Protocol):
    """What the session needs from an engine (see the module docstring for the semantics).

    ``open``'s ``source`` is a path (CSV, TSV or Parquet) or an in-memory frame, ``dtypes``
    the declared column types (None: a CSV's columns are text) and ``separator`` a CSV's
    declared separator (None: a tab for ``.tsv``, else a comma), ``encoding`` its declared text
    encoding (None: UTF-8). ``handle`` is what ``open``
    returned, ``query`` a checked :class:`~dpwitness.query.queries.Query`, and ``selection_key`` the
    four 64-bit words (:data:`SelectionKey`) that key contribution bounding's random choice.
    """

    name: str

    def open(
        self, source: Any, *, dtypes: Mapping[str, Any] | None = None, separator: str | None = None, encoding: str | None = None
    ) -> Any: ...

    def schema(self, handle: Any) -> Schema: ...

    def check(self, handle: Any, query: Query) -> None: ...

    def aggregate(self, handle: Any, query: Query, *, selection_key: SelectionKey) -> Aggregates: ...

    def aggregate_many(self, handle: Any, queries: Sequence[Query]) -> list[Aggregates]: ...


def fuse_key(query: Query) -> tuple[Any, ...] | None:
    """What ``query`` shares with every query computed in the same engine pass, or None when it
    needs a pass of its own.

    Queries with equal keys read the same rows (the same filter, groups and declared keys) and
    differ only in their column, bounds and aggregates, so one ``group_by`` holds them all. A
    query with a privacy unit (its own random row selection, keyed per query), a quantile's bins,
    a row-position window (an order over the columns read) or undeclared groups (the keys present
    are the release's) is computed alone.
    """
    predicate = query.predicate
    if query.privacy_unit is not None or query.bins is not None or query.joint:
        return None
    if predicate is not None and predicate.window is not None:
        return None
    if query.grouped and query.keys is None:
        return None
    return (query.where, query.group_columns, query.keys, query.order_by)


def plan_shape(query: Query) -> str:
    """Everything about ``query`` but its ε (which does not change an engine's plan): the key
    under which a plan check's outcome is remembered (:class:`CheckedShapes`)."""
    fields = {k: v for k, v in query.to_dict().items() if k not in ("epsilon", "parts")}
    extra = (query.where, query.order_by, query.bins, query.quantiles, query.aggregates)
    return repr((sorted(fields.items()), extra))


class CheckedShapes:
    """The plan shapes an engine has checked on an empty table of a schema, with success.

    A plan check builds the query's plan over an empty table of the table's schema, so its
    outcome depends only on the schema (column names and types, which columns are untyped) and
    the query's shape, never on the data: a shape that passed once passes again. Up to
    ``capacity`` shapes are remembered (then the oldest half is forgotten); a failure is never
    remembered."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._seen: dict[tuple[Any, ...], None] = {}

    def __contains__(self, shape: tuple[Any, ...]) -> bool:
        return shape in self._seen

    def add(self, shape: tuple[Any, ...]) -> None:
        if len(self._seen) >= self.capacity:
            for old in list(self._seen)[: self.capacity // 2]:
                self._seen.pop(old, None)
        self._seen[shape] = None


def batches(queries: Sequence[Query]) -> list[list[int]]:
    """The positions of ``queries`` in passes: those with one :func:`fuse_key` together (in order,
    at the place of the first), each other query alone."""
    out: list[list[int]] = []
    shared: dict[tuple[Any, ...], list[int]] = {}
    for n, query in enumerate(queries):
        key = fuse_key(query)
        if key is None:
            out.append([n])
        elif key in shared:
            shared[key].append(n)
        else:
            shared[key] = [n]
            out.append(shared[key])
    return out


def declared_keys(query: Query, untyped: Collection[str], out: Aggregates) -> Aggregates:
    """Key the aggregates of a declared-key query by the declared keys themselves.

    An untyped (text) key column matches a declared key by its text as the cell grammar writes it
    (``9`` matches the cell ``"9"``, ``True`` the cell ``"true"``; :func:`dpwitness.io.cells.write`),
    so the engine's keys are text there; this maps each such component back to the declared
    value, so the session finds every declared key whatever the column's type. (The
    declared columns are the leading components of an engine's key: a quantile's bin follows.)
    ``untyped`` names the table's text columns; ``out`` is the engine's aggregates, returned
    unchanged when no declared key column is untyped.
    """
    columns = query.declared_columns
    positions = [i for i, c in enumerate(columns) if c in untyped]
    if query.keys is None or not positions:
        return out
    several = len(columns) > 1
    from dpwitness.io.cells import write

    lookups = {i: {write(k[i] if several else k): (k[i] if several else k) for k in query.keys} for i in positions}

    def back(key: Any) -> Any:
        parts = list(key) if isinstance(key, tuple) else [key]
        for i in positions:
            parts[i] = lookups[i].get(parts[i], parts[i])
        return tuple(parts) if isinstance(key, tuple) else parts[0]

    return {
        name: {back(key): value for key, value in values.items()} if isinstance(values, dict) else values
        for name, values in out.items()
    }


def engine_for(name: str) -> Engine:
    """The engine called ``name`` ("polars" or "spark"); its module is imported on first use."""
    if name not in _ENGINES:
        raise ParameterError("engine", f"one of {', '.join(_ENGINES)}", name)
    module = require(_ENGINES[name], name, f"the {name} engine")
    engine: Engine = module.ENGINE
    return engine


def engine_names() -> tuple[str, ...]:
    return tuple(_ENGINES)
