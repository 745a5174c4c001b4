"""One door: the same request through every face (Python API, SQL, CLI, service) and both engines
resolves to the same query (Δ, ε, scale, mechanism, neighbour relation), the same exact aggregate
(seeded faces give the same number, on a file with hostile cells), and the same refusals before
any spend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import dpwitness as dw
from dpwitness.cli import app
from dpwitness.serve.process import write_config

pytest.importorskip("sqlglot")
pytest.importorskip("fastapi")

SEED = 7
TOKEN = "conformance-token-" + "c" * 24
# Cells as people's files hold them: padded numbers, an exponent, text in a number column, NaN,
# empty cells, a key outside the declared ones, a missing key, a quoted cell with a comma.
ROWS = [
    "30,F,Ashby",
    " 40 ,M,Brill",
    ",F,Ashby",
    "abc,M,Crewe",
    "1e2,X,Dent",
    "NaN,F,Ashby",
    "55,M,",
    '61,F,"Crewe, North"',
    "-5,M,Dent",
    "250,F,Brill",
] + [f"{20 + (i * 7) % 60},{'FM'[i % 2]},{['Ashby', 'Brill', 'Crewe', 'Dent'][i % 4]}" for i in range(190)]
SCHEMA = dw.Schema(
    {"age": "float", "sex": "string", "town": "string"},
    bounds={"age": (0, 100)},
    categories={"sex": ("F", "M"), "town": ("Ashby", "Brill", "Crewe", "Dent")},
    declared=True,
)

# (name, Python call, SQL statement or None, CLI flags, service body)
REQUESTS: list[tuple[str, dict[str, Any], str | None, list[str], dict[str, Any]]] = [
    ("count", {"statistic": "count"}, "SELECT COUNT(*) AS n FROM people", ["--count"], {"statistic": "count"}),
    (
        "count by sex",
        {"statistic": "count", "by": "sex"},
        "SELECT sex, COUNT(*) AS n FROM people GROUP BY sex",
        ["--count", "--by", "sex"],
        {"statistic": "count", "by": ["sex"]},
    ),
    (
        "sum by sex",
        {"statistic": "sum", "column": "age", "by": "sex"},
        "SELECT sex, SUM(age) AS s FROM people GROUP BY sex",
        ["--sum", "age", "--by", "sex"],
        {"statistic": "sum", "column": "age", "by": ["sex"]},
    ),
    (
        "mean",
        {"statistic": "mean", "column": "age"},
        "SELECT AVG(age) AS m FROM people",
        ["--mean", "age"],
        {"statistic": "mean", "column": "age"},
    ),
    (
        "filtered count",
        {"statistic": "count", "where": "age < 50"},
        "SELECT COUNT(*) AS n FROM people WHERE age < 50",
        ["--count", "--where", "age < 50"],
        {"statistic": "count", "where": "age < 50"},
    ),
    (
        "histogram",
        {"statistic": "histogram", "column": "town"},
        None,
        ["--histogram", "town"],
        {"statistic": "histogram", "column": "town"},
    ),
    (  # SQL has no joint form yet (docs/statistics.md)
        "joint quantiles",
        {"statistic": "quantile", "column": "age", "quantiles": [0.25, 0.5, 0.75], "joint": True},
        None,
        ["--quantile", "age:0:100:0.25,0.5,0.75", "--joint"],
        {"statistic": "quantile", "column": "age", "q": [0.25, 0.5, 0.75], "joint": True},
    ),
]

#: What every face states about a release: the resolved query and its calibration.
FIELDS = ("query", "epsilon", "delta", "sensitivity", "scale", "distribution", "neighbours")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("conformance")
    table = folder / "people.csv"
    table.write_text("age,sex,town\n" + "\n".join(ROWS) + "\n", encoding="utf-8")
    schema = folder / "people.schema.toml"
    schema.write_text(SCHEMA.to_toml(), encoding="utf-8")
    return table, schema


def _python(table: Path, request: dict[str, Any], engine: str = "polars") -> dict[str, Any]:
    session = dw.Session(table, epsilon=10.0, seed=SEED, schema=SCHEMA, engine=engine)
    options = {k: v for k, v in request.items() if k not in ("statistic", "column")}
    release = session.run(session.query(request["statistic"], request.get("column"), epsilon=1.0, **options))
    return release.to_dict()


def _sql(table: Path, statement: str, engine: str = "polars") -> dict[str, Any]:
    session = dw.Session(table, epsilon=10.0, seed=SEED, schema=SCHEMA, engine=engine)
    answer = session.sql(statement, epsilon=1.0)
    (release,) = answer.releases
    return release.to_dict()


def _cli(table: Path, schema: Path, flags: list[str]) -> dict[str, Any]:
    command = ["query", str(table), "--schema", str(schema), "--epsilon", "1", "--seed", str(SEED), "--json", *flags]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    (release,) = json.loads(result.stdout)["releases"]
    return dict(release)


@pytest.fixture(scope="module")
def service(files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    from fastapi.testclient import TestClient

    from dpwitness.serve.app import create_app
    from dpwitness.serve.config import load_config

    table, _ = files
    folder = tmp_path_factory.mktemp("conformance-service")
    columns = {
        "age": {"bounds": [0, 100]},
        "sex": {"categories": ["F", "M"]},
        "town": {"categories": ["Ashby", "Brill", "Crewe", "Dent"]},
    }
    config = write_config(
        folder / "service.toml",
        tables={"people": {"path": str(table), "columns": columns}},
        analysts={"analyst": (TOKEN, 1000.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with TestClient(create_app(load_config(config))) as client:
        yield client


def _served(client: Any, body: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return client.post("/v1/query", json={"table": "people", "epsilon": 1.0, **body}, headers=headers)


def _stated(release: dict[str, Any]) -> dict[str, Any]:
    return {name: release.get(name) for name in FIELDS}


@pytest.mark.parametrize(("name", "python", "statement", "flags", "body"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_every_face_resolves_the_same_query_and_answers_the_same_number(
    files: tuple[Path, Path],
    service: Any,
    name: str,
    python: dict[str, Any],
    statement: str | None,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    table, schema = files
    reference = _python(table, python)
    faces = {"cli": _cli(table, schema, flags)}
    if statement is not None:
        faces["sql"] = _sql(table, statement)
    for face, release in faces.items():
        assert _stated(release) == _stated(reference), face
        assert release["value"] == reference["value"], face  # the same exact aggregate and the same seeded noise
    answered = _served(service, body)
    assert answered.status_code == 200, answered.text
    served = answered.json()["release"]
    assert _stated(served) == _stated(reference)  # the service is not seeded: its number differs, its query does not


@pytest.mark.spark
@pytest.mark.parametrize(("name", "python", "statement", "flags", "body"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_spark_resolves_and_answers_as_polars(
    spark: Any,
    files: tuple[Path, Path],
    name: str,
    python: dict[str, Any],
    statement: str | None,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    table, _ = files
    polars, on_spark = _python(table, python), _python(table, python, engine="spark")
    assert _stated(on_spark) == _stated(polars)
    assert on_spark["value"] == polars["value"]  # the same typed table from the same file, the same noise
    if statement is not None:
        assert _sql(table, statement, engine="spark")["value"] == _sql(table, statement)["value"]


# (what is wrong, Python call, SQL statement, CLI flags, service body): each refused before any spend
REFUSALS: list[tuple[str, dict[str, Any], str, list[str], dict[str, Any]]] = [
    (
        "a bounded statistic of a text column",
        {"statistic": "sum", "column": "town", "bounds": (0, 1)},
        "SELECT SUM(CLAMP(town, 0, 1)) AS s FROM people",
        ["--sum", "town:0:1"],
        {"statistic": "sum", "column": "town", "bounds": [0, 1]},
    ),
    (
        "an undeclared column",
        {"statistic": "mean", "column": "salary", "bounds": (0, 1)},
        "SELECT AVG(CLAMP(salary, 0, 1)) AS m FROM people",
        ["--mean", "salary:0:1"],
        {"statistic": "mean", "column": "salary", "bounds": [0, 1]},
    ),
    (
        "bounds beyond 2^50",
        {"statistic": "sum", "column": "age", "bounds": (0, 2.0**51)},
        f"SELECT SUM(CLAMP(age, 0, {2**51})) AS s FROM people",
        ["--sum", f"age:0:{2**51}"],
        {"statistic": "sum", "column": "age", "bounds": [0, 2.0**51]},
    ),
]


@pytest.mark.parametrize(("what", "python", "statement", "flags", "body"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_every_face_refuses_the_same_requests_before_any_spend(
    files: tuple[Path, Path],
    service: Any,
    what: str,
    python: dict[str, Any],
    statement: str,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    table, schema = files
    session = dw.Session(table, epsilon=10.0, seed=SEED, schema=SCHEMA)
    options = {k: v for k, v in python.items() if k not in ("statistic", "column")}
    with pytest.raises(dw.ParameterError):
        session.run(session.query(python["statistic"], python["column"], epsilon=1.0, **options))
    with pytest.raises(dw.ParameterError):  # SqlError is a ParameterError naming the SQL construct
        session.sql(statement, epsilon=1.0)
    assert session.spent.epsilon == 0 and not session.releases
    cli = CliRunner().invoke(app, ["query", str(table), "--schema", str(schema), "--epsilon", "1", "--json", *flags])
    assert cli.exit_code == 2, cli.output
    headers = {"Authorization": f"Bearer {TOKEN}"}
    before = service.get("/v1/budget", headers=headers).json()["spent"]
    refused = _served(service, body)
    assert refused.status_code == 422, refused.text
    assert service.get("/v1/budget", headers=headers).json()["spent"] == before


@pytest.mark.parametrize("levels", [[0.5, 0.25], [0.0, 0.5], [0.5, 1.0]], ids=["decreasing", "zero", "one"])
def test_joint_quantile_levels_are_refused_alike_on_every_face(
    files: tuple[Path, Path], service: Any, levels: list[float]
) -> None:
    """Levels not strictly increasing in (0, 1): one message naming q (the CLI: its --quantile), nothing spent."""
    table, schema = files
    session = dw.Session(table, epsilon=10.0, seed=SEED, schema=SCHEMA)
    with pytest.raises(dw.ParameterError) as python:
        session.quantile("age", levels, epsilon=1.0, joint=True)
    assert python.value.parameter == "q" and session.spent.epsilon == 0
    flags = ["--quantile", "age:0:100:" + ",".join(map(str, levels)), "--joint"]
    cli = CliRunner().invoke(app, ["query", str(table), "--schema", str(schema), "--epsilon", "1", *flags])
    assert cli.exit_code == 2 and python.value.expected in " ".join(cli.output.split()), cli.output
    headers = {"Authorization": f"Bearer {TOKEN}"}
    before = service.get("/v1/budget", headers=headers).json()["spent"]
    refused = _served(service, {"statistic": "quantile", "column": "age", "q": levels, "joint": True})
    assert refused.status_code == 422 and refused.json()["detail"] == str(python.value), refused.text
    assert service.get("/v1/budget", headers=headers).json()["spent"] == before
