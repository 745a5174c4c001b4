"""The service's limits are a policy on the resolved query (one door): the request is resolved
through the session like every face's, then `Policy.check` refuses what this service does not
release, before any spend."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import MAX_KEYS, Schema
from dpwitness.query.resolve import Request
from dpwitness.serve.config import Limits, parse_table
from dpwitness.serve.policy import Policy
from dpwitness.serve.requests import QueryError
from dpwitness.serve.tables import LoadedTable, load_table
from dpwitness.session import Session


@pytest.fixture
def table(tmp_path: Path) -> LoadedTable:
    path = tmp_path / "t.csv"
    path.write_text("age,town,ward,secret\n" + "".join(f"{20 + i % 50},{'ABC'[i % 3]},{'XY'[i % 2]},{i}\n" for i in range(60)))
    section = """
    path = "t.csv"
    [columns]
    age = { bounds = [0, 100] }
    town = { categories = ["A", "B", "C"] }
    ward = { categories = ["X", "Y"] }
    """
    return load_table(parse_table("t", tomllib.loads(section), base=tmp_path))


def refusal(table: LoadedTable, limits: Limits, request: Request) -> str | None:
    session = Session(table.frame, epsilon=10.0, schema=table.schema)
    query = session.resolve(request)  # the one door: the declared schema's keys and bounds
    try:
        Policy.of(table, limits).check(query)
    except QueryError as error:
        assert error.status == 422 and "\n" not in error.message
        return error.message
    return None


def test_limits_are_checked_on_the_resolved_query(table: LoadedTable) -> None:
    limits = Limits(max_groups=4, max_by_columns=2)
    assert refusal(table, limits, Request("count", epsilon=1.0, by=("town",))) is None
    # 3 × 2 keys, from the schema through the resolver: over the limit of 4 groups
    assert "6 groups; the limit is 4" in str(refusal(table, limits, Request("count", epsilon=1.0, by=("town", "ward"))))
    one_column = Limits(max_groups=10, max_by_columns=1)
    assert "at most 1 distinct" in str(refusal(table, one_column, Request("count", epsilon=1.0, by=("town", "ward"))))
    assert "declared columns" in str(refusal(table, limits, Request("count", "secret", epsilon=1.0)))
    assert "declared columns" in str(refusal(table, limits, Request("count", epsilon=1.0, where="secret < 3")))
    assert "numeric column" in str(refusal(table, limits, Request("sum", "town", epsilon=1.0, bounds=(0.0, 1.0))))
    assert "categorical" in str(refusal(table, limits, Request("count", epsilon=1.0, by=("age",))))
    assert "histogram needs" in str(refusal(table, limits, Request("histogram", "age", epsilon=1.0)))
    few = Limits(max_groups=2)
    assert "3 categories; the limit is 2" in str(refusal(table, few, Request("histogram", "town", epsilon=1.0)))


def test_exact_answers_are_refused_by_the_policy(table: LoadedTable) -> None:
    session = Session(table.frame, epsilon=10.0, schema=table.schema, neighbours="replace-one")
    with pytest.raises(QueryError, match="Δ = 0"):
        Policy.of(table, Limits()).check(session.resolve(Request("count", epsilon=1.0)))


def test_a_product_of_declared_keys_is_capped_before_it_is_built() -> None:
    wide = tuple(range(2000))
    schema = Schema({"a": "integer", "b": "integer"}, categories={"a": wide, "b": wide}, declared=True)
    with pytest.raises(ParameterError, match=str(MAX_KEYS)) as refused:
        schema.keys_for(("a", "b"))
    assert refused.value.parameter == "by"
    assert schema.keys_for(("a", "b"), given={"b": (1, 2)}) == tuple((a, b) for a in wide for b in (1, 2))


def test_a_gaussian_over_keys_the_service_does_not_declare_is_refused_by_its_policy_alone(table: LoadedTable) -> None:
    """Gaussian thresholding runs through the same door (resolve → Session): the service still
    releases only declared keys (it declares no max_rows), so a Gaussian GROUP BY over an undeclared
    column meets the policy's refusal, as a Laplace one does, and a declared one passes."""
    limits = Limits(max_groups=4, max_by_columns=2)
    gaussian = {"mechanism": "gaussian", "delta": 1e-6}
    laplace_refusal = refusal(table, limits, Request("count", epsilon=1.0, by=("age",)))
    assert refusal(table, limits, Request("count", epsilon=1.0, by=("age",), **gaussian)) == laplace_refusal
    assert laplace_refusal is not None and "categorical" in laplace_refusal
    assert refusal(table, limits, Request("count", epsilon=1.0, by=("town",), **gaussian)) is None
