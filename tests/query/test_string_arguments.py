"""A string is one value, never a sequence of them (issue 27): ``keys="Ashby"`` is refused,
naming ``keys``, before any spend (it used to release the keys A, s, h, b, y), and bounds given
as text are refused naming ``bounds`` without echoing their characters."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dpwitness import ParameterError
from dpwitness.io.schema import Schema
from dpwitness.query.queries import Query
from dpwitness.session import Session

PEOPLE = Path(__file__).resolve().parents[2] / "examples" / "people.csv"


@pytest.fixture
def session() -> Session:
    return Session(PEOPLE, epsilon=100)


@pytest.mark.parametrize(
    ("ask", "parameter"),
    [
        (lambda s: s.count(epsilon=10, by="town", keys="Ashby"), "keys"),
        (lambda s: s.sum("age", (0, 100), epsilon=1, by="town", keys="Ashby"), "keys"),
        (lambda s: s.mean("age", (0, 100), epsilon=1, by="town", keys=b"Ashby"), "keys"),
        (lambda s: s.quantile("age", 0.5, (0, 100), epsilon=1, by="town", keys="Ashby"), "keys"),
        (lambda s: s.median("age", (0, 100), epsilon=1, by="town", keys="Ashby"), "keys"),
        (lambda s: s.histogram("town", "Ashby", epsilon=1), "categories"),
        (lambda s: s.preview("count", epsilon=1, by="town", keys="Ashby"), "keys"),
        (lambda s: s.query("count", epsilon=1, by="town", keys="Ashby"), "keys"),
    ],
)
def test_a_keys_string_is_refused_before_any_spend(session: Session, ask: object, parameter: str) -> None:
    with pytest.raises(ParameterError) as caught:
        ask(session)  # type: ignore[operator]
    assert caught.value.parameter == parameter
    message = str(caught.value)
    assert "\n" not in message and "Ashby" not in message and "'A'" not in message
    assert session.releases == [] and session.spent.epsilon == 0


def test_a_query_built_directly_refuses_a_keys_string() -> None:
    with pytest.raises(ParameterError) as caught:
        Query(statistic="count", epsilon=1.0, by=("town",), keys="Ashby")  # type: ignore[arg-type]
    assert caught.value.parameter == "keys"


def test_keys_in_a_list_still_work(session: Session) -> None:
    release = session.count(epsilon=10, by="town", keys=["Ashby"])
    assert list(release.value) == ["Ashby"]
    pair = session.count(epsilon=10, by=["town", "sex"], keys=[["Ashby", "F"]])
    assert list(pair.value) == [("Ashby", "F")]


@pytest.mark.parametrize("bounds", ["0,100", b"0,100", "01", 5])
def test_bounds_must_be_two_numbers_and_text_is_not_echoed(session: Session, bounds: object) -> None:
    with pytest.raises(ParameterError) as caught:
        session.sum("age", bounds, epsilon=1)  # type: ignore[arg-type]
    assert caught.value.parameter == "bounds"
    message = str(caught.value)
    assert "two numbers" in message and "','" not in message and "'0'" not in message and "100" not in message
    assert session.releases == [] and session.spent.epsilon == 0


def test_a_schema_groups_by_a_column_named_as_a_string() -> None:
    schema = Schema({"town": "string"}, categories={"town": ["Ashby", "Dent"]})
    assert schema.keys_for("town") == schema.keys_for(["town"]) == ("Ashby", "Dent")


def test_a_frame_session_refuses_a_keys_string_too() -> None:
    frame = pl.DataFrame({"town": ["Ashby", "Dent"]})
    session = Session(frame, epsilon=1)
    with pytest.raises(ParameterError, match=r"^keys must be"):
        session.count(epsilon=0.5, by="town", keys="Dent")
    assert session.spent.epsilon == 0
