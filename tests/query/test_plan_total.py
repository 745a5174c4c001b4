"""An accepted plan is total: on every table that fits the schema it answers, whatever the values.

Each request below is put to a session over an *empty* table of one column type (which reveals
nothing), then over adversarial tables of the same type: the outcome class (answered or refused
before any spend) must be the same, and nothing may fail after the spend. This is the property
that the strict join cast and the unhashable group keys of issue 26 broke: both were accepted on
an empty table and failed once one row passed the filter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("sqlglot")

import dpwitness as dw  # noqa: E402
from dpwitness.common.errors import ParameterError  # noqa: E402
from dpwitness.sql import SqlError  # noqa: E402

# One column type each, with the values an attacker would put in it (extremes, nulls, NaN,
# text that looks like numbers, bytes that are not UTF-8, nested values).
COLUMN_TYPES: dict[str, tuple[Any, list[Any]]] = {
    "Int8": (pl.Int8, [127, -128, None, 0]),
    "Int64": (pl.Int64, [2**63 - 1, -(2**63), None, 3]),
    "UInt32": (pl.UInt32, [2**32 - 1, 0, None]),
    "UInt64": (pl.UInt64, [2**64 - 1, 2**63 + 5, None, 3]),
    "Float32": (pl.Float32, [float("nan"), float("inf"), -float("inf"), None, 3.0]),
    "Float64": (pl.Float64, [float("nan"), float("inf"), -1e308, None, -0.0, 3.0]),
    "Boolean": (pl.Boolean, [True, False, None]),
    "String": (pl.String, ["", " 1e+20 ", "\ufeff", "NaN", "inf", "a\x00b", "日本", "7d", "0x1p4", None, "a"]),
    "Categorical": (pl.Categorical, ["a", "b", "", None]),
    "Enum": (pl.Enum(["a", "b", "c"]), ["a", "b", None]),
    "Date": (pl.Date, [dt.date(1, 1, 1), dt.date(9999, 12, 31), None]),
    "Datetime": (pl.Datetime("us"), [dt.datetime(1970, 1, 1), dt.datetime(2262, 4, 11), None]),
    "Duration": (pl.Duration("us"), [dt.timedelta(days=10**5), dt.timedelta(0), None]),
    "Time": (pl.Time, [dt.time(23, 59, 59), None]),
    "Decimal": (pl.Decimal(38, 2), [Decimal("1e30"), Decimal("-3.25"), None]),
    "Binary": (pl.Binary, [b"\xff\xfe\xfd", b"", None, b"a"]),
    "List": (pl.List(pl.Int64), [[1, 2], [], None, [None]]),
    "Array": (pl.Array(pl.Int64, 2), [[1, 2], [3, 4], None]),
    "Struct": (pl.Struct({"a": pl.Int64, "b": pl.String}), [{"a": 1, "b": "x"}, None, {"a": None, "b": None}]),
    "Null": (pl.Null, [None, None]),
    "Object": (pl.Object, [object(), {"a": 1}, [1]]),
}

#: A request, given a function that opens a session over the table under test (with options).
Request = Callable[[Callable[..., Any]], Any]


def _public() -> dict[str, Any]:
    """The public table the join requests name: keys that the hostile values hit and miss."""
    return {"pub": pl.DataFrame({"k": [0, 1, 3, 127], "label": ["zero", "one", "three", "max"]})}


# Every role a column can play: value (bounded and not), key (declared and undeclared), filter,
# privacy unit, order, join key, SQL grouping; each a request as an analyst would write it.
REQUESTS: dict[str, Request] = {
    "count(column=c)": lambda s: s().count(epsilon=1, column="c"),
    "sum(c, bounds)": lambda s: s().sum("c", (0, 10), epsilon=1),
    "mean(c, bounds)": lambda s: s().mean("c", (0, 10), epsilon=1),
    "median(c, bounds)": lambda s: s().median("c", (0, 10), epsilon=1),
    "max(c, bounds)": lambda s: s().max("c", (0, 10), epsilon=1),
    "histogram(c), keys from the data": lambda s: s().histogram("c", epsilon=1, delta=1e-6),
    "count(by=c), keys from the data": lambda s: s().count(epsilon=1, by="c", delta=1e-6),
    "sum(v, by=c), keys from the data": lambda s: s().sum("v", (0, 10), epsilon=1, by="c", delta=1e-6),
    "count where c > 1": lambda s: s().count(epsilon=1, where="c > 1"),
    "count where c == 'a'": lambda s: s().count(epsilon=1, where="c == 'a'"),
    "count where c is null": lambda s: s().count(epsilon=1, where="c is null"),
    "count of rows 1-2 in c's order": lambda s: s(order_by="c").count(epsilon=1, where="row_number <= 2"),
    "count, privacy unit c": lambda s: s(privacy_unit="c", max_contributions=2).count(epsilon=1),
    "sum(v), privacy unit c": lambda s: s(privacy_unit="c", max_contributions=2).sum("v", (0, 10), epsilon=1),
    "SQL GROUP BY c": lambda s: s().sql("SELECT c, COUNT(*) AS n FROM data GROUP BY c", epsilon=1, name="data"),
    "SQL SUM(CLAMP(c))": lambda s: s().sql("SELECT SUM(CLAMP(c, 0, 10)) AS s FROM data WHERE v >= 0", epsilon=1, name="data"),
    "SQL JOIN ON c": lambda s: s().sql(
        "SELECT COUNT(*) AS n FROM data JOIN pub ON data.c = pub.k WHERE v >= 0", epsilon=1, name="data", public=_public()
    ),
    "SQL GROUP BY CASE WHEN c IS NULL": lambda s: s().sql(
        "SELECT CASE WHEN c IS NULL THEN 'none' ELSE 'some' END AS b, COUNT(*) AS n FROM data GROUP BY b", epsilon=1, name="data"
    ),
    "SQL GROUP BY CASE WHEN c > 1": lambda s: s().sql(
        "SELECT CASE WHEN c > 1 THEN 1 WHEN c <= 1 THEN 0 ELSE -1 END AS b, SUM(CLAMP(v, 0, 10)) AS s FROM data GROUP BY b",
        epsilon=1,
        name="data",
    ),
    "SQL GROUP BY c, VAR(v)": lambda s: s().sql(
        "SELECT c, COUNT(*) AS n, VAR(CLAMP(v, 0, 10)) AS var FROM data GROUP BY c", epsilon=1, name="data"
    ),
    "SQL SQRT(VAR(c)), LN(COUNT)": lambda s: s().sql(
        "SELECT SQRT(VARIANCE(CLAMP(c, 0, 10))) AS sd, LN(COUNT(*)) AS l, POWER(SUM(CLAMP(c, 0, 10)), -1) AS p FROM data",
        epsilon=1,
        name="data",
    ),
    "SQL LEFT JOIN ON c, GROUP BY label": lambda s: s().sql(
        "SELECT label, COUNT(*) AS n, SUM(CLAMP(v, 0, 10)) AS s FROM data LEFT JOIN pub ON data.c = pub.k "
        "WHERE label IS NULL OR v >= 0 GROUP BY label",
        epsilon=1,
        name="data",
        public=_public(),
    ),
    "SQL JOIN ON c, GROUP BY label": lambda s: s().sql(
        "SELECT label, COUNT(*) AS n FROM data JOIN pub ON data.c = pub.k GROUP BY label",
        epsilon=1,
        name="data",
        public=_public(),
    ),
}


def _frame(dtype: Any, values: list[Any]) -> Any:
    column = pl.Series("c", values, dtype=dtype) if dtype != pl.Object else pl.Series("c", values, dtype=pl.Object)
    return pl.DataFrame({"c": column, "v": pl.Series("v", [float(i) for i in range(len(values))], dtype=pl.Float64)})


def _tables(dtype: Any, values: list[Any]) -> list[Any]:
    """Adversarial tables of one type: every value alone, all together, and many copies of each."""
    return [_frame(dtype, [v]) for v in values] + [_frame(dtype, values), _frame(dtype, values * 40)]


def _outcome(request: Request, source: Any, engine: str = "polars") -> str:
    """``answered``, or ``refused`` when a data-free check said no (nothing spent); anything
    else (an engine failure after the spend, an unexpected exception) fails the test."""

    def session(**options: Any) -> Any:
        return dw.Session(source, engine=engine, epsilon=100.0, delta_budget=1e-3, seed=7, max_rows=100, **options)

    try:
        request(session)
    except (ParameterError, SqlError):
        return "refused"
    return "answered"


@pytest.mark.parametrize("type_name", list(COLUMN_TYPES))
@pytest.mark.parametrize("request_name", list(REQUESTS))
def test_an_accepted_request_answers_on_every_table_of_its_schema(type_name: str, request_name: str) -> None:
    dtype, values = COLUMN_TYPES[type_name]
    request = REQUESTS[request_name]
    expected = _outcome(request, _frame(dtype, []))
    for table in _tables(dtype, values):
        assert _outcome(request, table) == expected, (type_name, request_name, table.height)


def test_the_roles_are_accepted_and_refused_as_documented() -> None:
    """The property above could hold by refusing everything; the roles' table (docs/engines.md)
    says what is accepted: keys of integer, float, text and boolean columns, values of numbers."""
    accepted = {
        (t, r)
        for t, (dtype, _) in COLUMN_TYPES.items()
        for r, request in REQUESTS.items()
        if _outcome(request, _frame(dtype, [])) == "answered"
    }
    keyable = {"Int8", "Int64", "UInt32", "Float32", "Float64", "Boolean", "String", "Categorical", "Enum"}
    for type_name in COLUMN_TYPES:
        for role in ("count(by=c), keys from the data", "count, privacy unit c", "SQL GROUP BY c"):
            assert ((type_name, role) in accepted) == (type_name in keyable), (type_name, role)
        assert (type_name, "count(column=c)") in accepted, type_name  # counting non-missing cells reads any type
    for type_name in ("Int8", "Int64", "UInt32", "Float32", "Float64"):
        assert (type_name, "sum(c, bounds)") in accepted
    for type_name in ("UInt64", "Decimal", "List", "Binary", "Duration", "String"):
        assert (type_name, "sum(c, bounds)") not in accepted
    for type_name in COLUMN_TYPES:  # a CASE reads its column as a key does; its IS NULL test reads any keyable type
        assert ((type_name, "SQL GROUP BY CASE WHEN c IS NULL") in accepted) == (type_name in keyable), type_name
        assert ((type_name, "SQL GROUP BY c, VAR(v)") in accepted) == (type_name in keyable), type_name
    for type_name in ("Int8", "Int64", "UInt32", "Float32", "Float64"):
        assert (type_name, "SQL GROUP BY CASE WHEN c > 1") in accepted
        assert (type_name, "SQL SQRT(VAR(c)), LN(COUNT)") in accepted
    for type_name in ("String", "Boolean", "Binary", "List"):  # no order comparison with a number
        assert (type_name, "SQL GROUP BY CASE WHEN c > 1") not in accepted
    joinable = {"Int8", "Int64", "UInt32", "Float32", "Float64", "String", "Categorical", "Enum", "Boolean"}
    for type_name in COLUMN_TYPES:
        assert ((type_name, "SQL JOIN ON c") in accepted) == (type_name in joinable), type_name
        assert ((type_name, "SQL LEFT JOIN ON c, GROUP BY label") in accepted) == (type_name in joinable), type_name


def test_a_wide_integer_is_read_once_its_type_is_declared() -> None:
    """UInt64 is refused as a key from the schema alone; declared as an integer, it is read with a
    non-strict cast (a value beyond Int64 is missing), so the same request answers on any values."""
    frame = _frame(pl.UInt64, [2**64 - 1, 2**63 + 5, 3, 3, None])
    with pytest.raises(ParameterError, match="by"):
        dw.Session(frame, epsilon=1.0).count(epsilon=1, by="c", keys=[3])
    release = dw.Session(frame, epsilon=100.0, seed=1, dtypes={"c": "integer"}).count(epsilon=50, by="c", keys=[3])
    assert abs(release.value[3] - 2) < 1.0  # noise of scale 1/50: far below 1 with overwhelming probability
    answer = dw.Session(frame, epsilon=1.0, dtypes={"c": "integer"}).sql(
        "SELECT COUNT(*) AS n FROM data JOIN pub ON data.c = pub.k", epsilon=1, name="data", public=_public()
    )
    assert answer is not None


# Spark reads the same files: a Parquet file of each type Parquet and Spark can both hold.
SPARK_TYPES = ("Int64", "UInt64", "Float64", "Boolean", "String", "Date", "Datetime", "Decimal", "Binary", "List", "Struct")
SPARK_REQUESTS = (
    "count(column=c)",
    "sum(c, bounds)",
    "count(by=c), keys from the data",
    "count where c > 1",
    "count, privacy unit c",
    "SQL JOIN ON c",
    "SQL GROUP BY CASE WHEN c IS NULL",
    "SQL LEFT JOIN ON c, GROUP BY label",
)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("type_name", SPARK_TYPES)
def test_spark_answers_or_refuses_as_polars_does_on_every_table(
    type_name: str, spark: Any, spark_small_tables: Any, tmp_path: Any
) -> None:
    dtype, values = COLUMN_TYPES[type_name]
    files = {}
    for name, frame in (("empty", _frame(dtype, [])), ("hostile", _frame(dtype, values * 40))):
        files[name] = tmp_path / f"{name}.parquet"
        frame.write_parquet(files[name])
    with spark_small_tables(spark):
        for request_name in SPARK_REQUESTS:
            request = REQUESTS[request_name]
            on_polars = _outcome(request, _frame(dtype, []))

            assert _outcome(request, str(files["empty"]), "spark") == on_polars, (type_name, request_name)
            assert _outcome(request, str(files["hostile"]), "spark") == on_polars, (type_name, request_name)
