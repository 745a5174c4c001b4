"""A column derived from one column of each row, as each engine computes it: SQL's
``CASE WHEN cond THEN 'a' … ELSE 'z' END`` in ``GROUP BY`` (a row's key from its own value).

The conditions are predicates of the filter language (:mod:`dpwitness.query.predicates`), compiled
by the same ``to_polars``/``to_spark`` as a ``where`` (three-valued logic: a condition that is
unknown is not taken, as in SQL); the values are literals of one kind, and ``otherwise`` (the
ELSE) gives every other row its key, so no row's key is null and nothing here can fail because
of a value. The new column is added lazily; nothing is read. Δ is unchanged by it (the key of a
record depends on that record alone): a grouping by it is a grouping by a column with declared
keys, derived in :mod:`dpwitness.query.queries`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import ColumnKind
from dpwitness.query.predicates import parse, to_polars, to_spark


@dataclass(frozen=True)
class CaseColumn:
    """``name`` := the value of the first branch whose condition (filter-language text) holds, else ``otherwise``.

    ``kind`` is the literals' kind (string, integer, float or boolean); ``keys`` the distinct
    values in order (the declared keys of a grouping by it).
    """

    name: str
    branches: tuple[tuple[str, Any], ...]
    otherwise: Any
    kind: ColumnKind

    @property
    def keys(self) -> tuple[Any, ...]:
        return tuple(dict.fromkeys([*(value for _, value in self.branches), self.otherwise]))


def add_case(engine: Any, handle: Any, case: CaseColumn) -> Any:
    """``handle`` (an engine's opened table) with the column ``case.name`` added, lazily."""
    kinds = engine.schema(handle).columns
    if engine.name == "polars":
        import polars as pl

        from dpwitness.engines.polars import PolarsTable

        types = {ColumnKind.INTEGER: pl.Int64, ColumnKind.FLOAT: pl.Float64, ColumnKind.BOOLEAN: pl.Boolean}
        dtype = types.get(case.kind, pl.String)
        schema = handle.frame.collect_schema()
        expression: Any = None
        for text, value in case.branches:
            condition = to_polars(parse(text), kinds, schema)
            branch = pl.when(condition) if expression is None else expression.when(condition)
            expression = branch.then(pl.lit(value, dtype=dtype))
        column = expression.otherwise(pl.lit(case.otherwise, dtype=dtype)).alias(case.name)
        return PolarsTable(handle.frame.with_columns(column), handle.untyped)
    if engine.name == "spark":
        from pyspark.sql import functions as F

        from dpwitness.engines.spark import SparkTable

        names = {ColumnKind.INTEGER: "long", ColumnKind.FLOAT: "double", ColumnKind.BOOLEAN: "boolean"}
        spark_type = names.get(case.kind, "string")
        result: Any = None
        for text, value in case.branches:
            test = to_spark(parse(text), kinds)
            literal = F.lit(value).cast(spark_type)
            result = F.when(test, literal) if result is None else result.when(test, literal)
        column = result.otherwise(F.lit(case.otherwise).cast(spark_type))
        return SparkTable(handle.frame.withColumn(case.name, column), handle.untyped)
    raise ParameterError("engine", "polars or spark for a CASE in GROUP BY", engine.name)


__all__ = ["CaseColumn", "add_case"]
