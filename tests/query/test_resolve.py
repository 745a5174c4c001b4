"""One resolver: every face (Python, CLI, SQL, service) hands its request to
:func:`dpwitness.query.resolve.resolve` and gets the same :class:`Query` for the same request;
a bad request is refused with the same reason on every face, before any spend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("polars")
pytest.importorskip("sqlglot")
pytest.importorskip("fastapi")

from typer.testing import CliRunner

import dpwitness as dw
from dpwitness.cli import app
from dpwitness.privacy.budget import check_total
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.query.queries import Query
from dpwitness.query.resolve import Request, resolve
from dpwitness.serve.process import write_config
from dpwitness.session.session import Session

TOKEN = "resolve-token-" + "r" * 24
SCHEMA = dw.Schema(
    {"age": "float", "sex": "string", "town": "string"},
    bounds={"age": (0, 100)},
    categories={"sex": ("F", "M"), "town": ("Ashby", "Brill")},
    declared=True,
)
ROWS = [f"{20 + i % 50},{'FM'[i % 2]},{['Ashby', 'Brill'][i % 3 % 2]}" for i in range(60)]

# (name, request, SQL statement, CLI flags, service body): one request as each face writes it
REQUESTS: list[tuple[str, Request, str, list[str], dict[str, Any]]] = [
    ("count", Request("count", epsilon=1.0), "SELECT COUNT(*) FROM people", ["--count"], {"statistic": "count"}),
    (
        "sum by sex, declared bounds and keys",
        Request("sum", "age", epsilon=1.0, by="sex"),
        "SELECT sex, SUM(age) FROM people GROUP BY sex",
        ["--sum", "age", "--by", "sex"],
        {"statistic": "sum", "column": "age", "by": ["sex"]},
    ),
    (
        "filtered mean with its own bounds",
        Request("mean", "age", epsilon=1.0, bounds=(10.0, 60.0), where="age < 50"),
        "SELECT AVG(CLAMP(age, 10, 60)) FROM people WHERE age < 50",
        ["--mean", "age:10:60", "--where", "age < 50"],
        {"statistic": "mean", "column": "age", "bounds": [10, 60], "where": "age < 50"},
    ),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("resolve")
    table = folder / "people.csv"
    table.write_text("age,sex,town\n" + "\n".join(ROWS) + "\n", encoding="utf-8")
    schema = folder / "people.schema.toml"
    schema.write_text(SCHEMA.to_toml(), encoding="utf-8")
    return table, schema


@pytest.fixture(scope="module")
def service(files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from dpwitness.serve.app import create_app
    from dpwitness.serve.config import load_config

    table, _ = files
    folder = tmp_path_factory.mktemp("resolve-service")
    columns = {"age": {"bounds": [0, 100]}, "sex": {"categories": ["F", "M"]}, "town": {"categories": ["Ashby", "Brill"]}}
    config = write_config(
        folder / "service.toml",
        tables={"people": {"path": str(table), "columns": columns}},
        analysts={"analyst": (TOKEN, 1000.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with TestClient(create_app(load_config(config))) as client:
        yield client


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[Query]:
    """Every Query the one door returns, whichever face asked."""
    seen: list[Query] = []
    real = Session.resolve

    def recording(self: Session, request: Request) -> Query:
        query = real(self, request)
        seen.append(query)
        return query

    monkeypatch.setattr(Session, "resolve", recording)
    return seen


def _preview(service: Any, body: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return service.post("/v1/preview", json={"table": "people", "epsilon": 1.0, **body}, headers=headers)


@pytest.mark.parametrize(("name", "request_", "statement", "flags", "body"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_every_face_gets_the_same_query_for_the_same_request(
    files: tuple[Path, Path],
    service: Any,
    resolved: list[Query],
    name: str,
    request_: Request,
    statement: str,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    table, schema = files
    direct = resolve(request_, schema=SCHEMA, neighbours=Neighbours.ADD_REMOVE, privacy_unit=None)
    session = dw.Session(table, epsilon=10.0, schema=SCHEMA)
    python = session.query(
        request_.statistic,
        request_.column,
        epsilon=1.0,
        bounds=request_.bounds,
        by=request_.by,
        where=request_.where,
    )
    resolved.clear()
    session.sql(statement, epsilon=1.0, explain=True)
    (sql,) = resolved
    resolved.clear()
    result = CliRunner().invoke(app, ["query", str(table), "--schema", str(schema), "--epsilon", "1", "--preview", *flags])
    assert result.exit_code == 0, result.output
    (cli,) = resolved
    resolved.clear()
    answered = _preview(service, body)
    assert answered.status_code == 200, answered.text
    (served,) = resolved
    for face, query in {"python": python, "sql": sql, "cli": cli, "service": served}.items():
        assert query == direct, face
        assert [p.sensitivity for p in query.parts] == [p.sensitivity for p in direct.parts], face
    assert session.spent.epsilon == 0


def test_the_declared_schema_fills_bounds_and_keys_once() -> None:
    query = resolve(
        Request("sum", "age", epsilon=1.0, by="sex"), schema=SCHEMA, neighbours=Neighbours.ADD_REMOVE, privacy_unit=None
    )
    assert query.bounds == (0, 100) and query.keys == ("F", "M") and query.declared
    both = resolve(
        Request("count", epsilon=1.0, by=("sex", "town")), schema=SCHEMA, neighbours=Neighbours.ADD_REMOVE, privacy_unit=None
    )
    assert both.keys == SCHEMA.keys_for(("sex", "town"))


@pytest.mark.parametrize(
    ("rho", "epsilon", "parameter"),
    [(0.5, 1.0, "rho"), (None, None, "epsilon"), (0.5, None, "rho")],
    ids=["both budgets", "no budget", "rho on an epsilon account"],
)
def test_a_budget_the_request_cannot_have_is_refused_naming_it(rho: float | None, epsilon: float | None, parameter: str) -> None:
    with pytest.raises(dw.ParameterError) as refused:
        resolve(
            Request("count", epsilon=epsilon, rho=rho),
            schema=None,
            neighbours=Neighbours.ADD_REMOVE,
            privacy_unit=None,
            total=check_total(epsilon=1.0),
        )
    assert refused.value.parameter == parameter and "\n" not in str(refused.value)


def test_a_bad_request_fails_with_the_same_reason_on_every_face(files: tuple[Path, Path], service: Any) -> None:
    table, schema = files
    with pytest.raises(dw.ParameterError) as core:
        resolve(
            Request("sum", "age", epsilon=1.0, bounds=(60.0, 10.0)),
            schema=SCHEMA,
            neighbours=Neighbours.ADD_REMOVE,
            privacy_unit=None,
        )
    reason = core.value.expected
    session = dw.Session(table, epsilon=10.0, schema=SCHEMA)
    with pytest.raises(dw.ParameterError) as python:
        session.sum("age", (60.0, 10.0), epsilon=1.0)
    with pytest.raises(dw.ParameterError) as sql:  # a SqlError naming the construct, with the core's reason
        session.sql("SELECT SUM(CLAMP(age, 60, 10)) FROM people", epsilon=1.0)
    assert session.spent.epsilon == 0 and not session.releases
    cli = CliRunner().invoke(app, ["query", str(table), "--schema", str(schema), "--epsilon", "1", "--sum", "age:60:10"])
    assert cli.exit_code == 2
    served = _preview(service, {"statistic": "sum", "column": "age", "bounds": [60, 10]})
    assert served.status_code == 422
    for face, text in {"python": str(python.value), "sql": str(sql.value), "cli": cli.output, "service": served.text}.items():
        assert reason in " ".join(text.split()), face
