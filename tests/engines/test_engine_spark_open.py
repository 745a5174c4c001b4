"""The Spark engine opens a Polars or pandas frame by its dtypes, never by its values.

Spark's schema inference reads the rows: it refused an empty frame (CANNOT_INFER_EMPTY_SCHEMA)
and turned a nullable integer column into doubles. Since a session opens its source before the
spend, an empty frame refused while a non-empty one was answered told anyone whether the table
was empty (emptiness is not public under add/remove). Now the schema comes from the dtypes, so
an empty and a one-row frame open alike and get the same kind of answer at the same cost. Uses
the shared local Spark session (tests/conftest.py); skipped, saying why, without Java or pyspark.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import polars as pl
import pytest

from dpwitness.engines import engine_for
from dpwitness.query.queries import ColumnKind
from dpwitness.session import Session

pytestmark = pytest.mark.spark

BIG = 2**53 + 1  # a double cannot hold it: an integer column read as doubles would lose the 1


def _polars(rows: int) -> pl.DataFrame:
    one = {"x": [1.5], "n": [None], "big": [BIG], "g": ["a"]}
    frame = pl.DataFrame(one, schema={"x": pl.Float64, "n": pl.Int64, "big": pl.Int64, "g": pl.String})
    return frame.head(rows)


def _pandas(rows: int) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "x": pd.Series([1.5], dtype="float64"),
            "n": pd.Series([pd.NA], dtype="Int64"),
            "big": pd.Series([BIG], dtype="Int64"),
            "g": pd.Series(["a"], dtype=object),
        }
    )
    return frame.head(rows)


FRAMES = {"polars": _polars, "pandas": _pandas}


@pytest.mark.parametrize("kind", FRAMES)
def test_an_empty_frame_is_answered_like_a_one_row_frame(spark: Any, kind: str) -> None:
    """The same schema, the same releases (kind, Δ, noise scale) and the same ε spent, empty or not."""
    engine = engine_for("spark")
    schemas, answers = [], []
    for rows in (0, 1):
        frame = FRAMES[kind](rows)
        schemas.append(engine.schema(engine.open(frame)).columns)
        session = Session(frame, epsilon=2.0, engine="spark", seed=7)
        releases = [
            session.count(epsilon=0.5),
            session.sum("x", (0, 10), epsilon=0.5),
            session.count(by="g", keys=["a", "b"], epsilon=0.5),
            session.mean("big", (0, 100), epsilon=0.5),
        ]
        answers.append(([(type(r).__name__, r.sensitivity, r.scale, r.epsilon) for r in releases], session.spent.epsilon))
        assert isinstance(releases[2].value, dict) and set(releases[2].value) == {"a", "b"}
    assert schemas[0] == schemas[1]
    assert schemas[0] == {"x": ColumnKind.FLOAT, "n": ColumnKind.INTEGER, "big": ColumnKind.INTEGER, "g": ColumnKind.STRING}
    assert answers[0] == answers[1]
    assert answers[0][1] == pytest.approx(2.0)


@pytest.mark.parametrize("kind", FRAMES)
def test_a_nullable_integer_column_stays_integer(spark: Any, kind: str) -> None:
    """A null in an integer column keeps it integer (long), exact beyond 2^53, on Spark as on Polars."""
    table = engine_for("spark").open(FRAMES[kind](1))
    types = {field.name: field.dataType.simpleString() for field in table.frame.schema.fields}
    assert types == {"x": "double", "n": "bigint", "big": "bigint", "g": "string"}
    assert table.frame.collect()[0].asDict() == {"x": 1.5, "n": None, "big": BIG, "g": "a"}


def test_a_dtype_spark_cannot_hold_is_refused_by_its_type(spark: Any) -> None:
    """Refused by the dtype (before anything is read), whether the frame is empty or not; the
    message names the column and its type, never a value."""
    from dpwitness.common.errors import ParameterError

    for frame in (pl.DataFrame({"o": [object()]}), pl.DataFrame({"o": []}, schema={"o": pl.Object})):
        with pytest.raises(ParameterError, match="o: Object"):
            engine_for("spark").open(frame)
