"""Fuzzing: the query parser with hypothesis, the live API with schemathesis (no 5xx, ever)."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dpwitness.common.errors import ParameterError
from dpwitness.query.queries import Query
from dpwitness.serve.app import _REQUEST_PARAMETERS, resolve
from dpwitness.serve.config import AnalystConfig, Limits, load_config
from dpwitness.serve.process import ServerProcess, write_config
from dpwitness.serve.requests import QueryError, QueryRequest, TableRequest, compile_query
from dpwitness.serve.tables import LoadedTable, load_table
from dpwitness.session import Session

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

TOKEN = "fuzz-token-" + "f" * 24
TABLES: dict[str, Any] = {
    "people": {
        "columns": {
            "dept": {"categories": ["A", "B", "C"]},
            "grade": {"type": "integer", "bounds": [1, 5], "categories": [1, 2, 3, 4, 5]},
            "salary": {"bounds": [0, 10_000]},
        }
    }
}


def write_people(path: Path) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dept", "grade", "salary"])
        for i in range(300):
            writer.writerow([("A", "B", "C", "D")[i % 4], 1 + i % 5, 500 + 31 * i])
    return path


def config_file(folder: Path) -> Path:
    tables = {"people": {**TABLES["people"], "path": str(write_people(folder / "people.csv"))}}
    return write_config(
        folder / "service.toml",
        tables=tables,
        analysts={"fuzzer": (TOKEN, 1e9)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1e6, "rate_burst": 1_000_000, "max_groups": 10},
    )


# --- the parser, with hypothesis ----------------------------------------------------------------


@pytest.fixture(scope="module")
def parser_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, LoadedTable], AnalystConfig, Limits, Session]:
    config = load_config(config_file(tmp_path_factory.mktemp("parser")))
    tables = {name: load_table(table) for name, table in config.tables.items()}
    session = Session(tables["people"].frame, epsilon=1e9, schema=tables["people"].schema)
    return tables, config.analysts["fuzzer"], config.limits, session


names = st.sampled_from(["people", "dept", "grade", "salary", "nope", "", "D", "A"])
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**20), 10**20), st.sampled_from([0.1, 0.5, 1.0, -1.0, 0.0])
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=8) | names,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
near_valid = st.fixed_dictionaries(
    {
        "table": st.one_of(names, json_values),
        "statistic": st.sampled_from(["count", "sum", "mean", "variance", "histogram", "max"]),
    },
    optional={
        "epsilon": numbers | json_values,
        "column": names | json_values,
        "bounds": st.lists(numbers, max_size=3) | json_values,
        "by": st.lists(names, max_size=3) | json_values,
        "alpha": numbers,
        "extra": json_values,
    },
)


def parse(body: Any, setup: tuple[dict[str, LoadedTable], AnalystConfig, Limits, Session]) -> tuple[TableRequest, Query] | int:
    """What the server does with a body before spending: the resolved query that passed the
    service's policy, or a 4xx status."""
    tables, analyst, limits, session = setup
    try:
        request = QueryRequest.model_validate(body)
    except ValidationError:
        return 422
    try:
        compiled = compile_query(request, analyst=analyst, tables=tables, alpha=0.05)
        return compiled, resolve(session, compiled, limits)
    except QueryError as error:
        return error.status
    except ParameterError as error:  # the resolver's refusal: a 422 naming the request's parameter
        assert error.parameter in _REQUEST_PARAMETERS, error
        return 422


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(near_valid, json_values))
def test_parser_refuses_cleanly_or_yields_a_query_the_session_accepts(
    body: Any, parser_setup: tuple[dict[str, LoadedTable], AnalystConfig, Limits, Session]
) -> None:
    outcome = parse(body, parser_setup)
    if isinstance(outcome, int):
        assert 400 <= outcome < 500
        return
    compiled, query = outcome
    assert math.isfinite(query.epsilon) and query.epsilon > 0
    assert query.bounds is None or (math.isfinite(query.bounds[0]) and query.bounds[0] < query.bounds[1])
    assert query.keys is None or 0 < len(query.keys) <= 10
    if query.epsilon in (0.1, 0.5, 1.0):  # the first use of an ε builds tables: keep those few
        parser_setup[3].preview(query, alpha=compiled.request.alpha)


# --- the live API, with schemathesis -----------------------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("fuzz")
    with ServerProcess(config_file(folder), log=folder / "server.log") as server:
        yield server


@pytest.fixture
def api_schema(live: ServerProcess) -> Any:
    return schemathesis.openapi.from_url(f"{live.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_5xx(case: Any, live: ServerProcess) -> None:
    for headers in ({"Authorization": f"Bearer {TOKEN}"}, None):
        response = case.call(base_url=live.url, headers=headers)
        assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:200]}"


def test_server_is_alive_after_fuzzing(live: ServerProcess) -> None:
    assert httpx.get(f"{live.url}/health").json() == {"status": "ok"}
