"""dpwitness serve against a real server subprocess on 127.0.0.1: auth, isolation, queries,
refusals that cost nothing, rate limit, the Python client and the differencing attack."""

from __future__ import annotations

import csv
import json
import math
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpwitness import BudgetExceeded, Release
from dpwitness.common.data import adult_path
from dpwitness.serve.attack import differencing_against_server
from dpwitness.serve.client import Client, ServiceError
from dpwitness.serve.process import ServerProcess, write_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "service.toml"
TOKENS = {name: f"{name}-token-{'z' * 24}" for name in ("alice", "bob", "tight", "limited", "attacker", "cli")}
ADULT_ROWS = 32_561


def write_people(path: Path) -> Path:
    """A small generated table only alice may read."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dept", "salary"])
        for i in range(500):
            writer.writerow([("A", "B", "C")[i % 3], 1000 + 7 * i])
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data = adult_path()
    if data is None:
        pytest.skip("the Adult table (../shared/data/adult.csv) is not available")
    folder = tmp_path_factory.mktemp("serve")
    tables: dict[str, Any] = {"adult": tomllib.loads(EXAMPLE.read_text())["tables"]["adult"]}
    tables["adult"]["path"] = str(data)
    visits = folder / "visits.csv"
    visits.write_text("person,ward,days\n" + "".join(f"{i % 40},{'AB'[i % 2]},{1 + i % 9}\n" for i in range(400)))
    tables["visits"] = {
        "path": str(visits),
        "privacy_unit": "person",
        "max_contributions": 2,
        "columns": {"ward": {"categories": ["A", "B"]}, "days": {"bounds": [0, 10]}},
    }
    tables["people"] = {
        "path": str(write_people(folder / "people.csv")),
        "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 10_000]}},
    }
    config = write_config(
        folder / "service.toml",
        tables=tables,
        analysts={
            "alice": (TOKENS["alice"], 5.0),
            "bob": (TOKENS["bob"], 1.0),
            "tight": (TOKENS["tight"], 0.1),
            "limited": (TOKENS["limited"], 1.0),
            "attacker": (TOKENS["attacker"], 1.0),
            "cli": (TOKENS["cli"], 0.5),
        },
        analyst_options={"bob": {"tables": ["adult"]}, "limited": {"rate_per_second": 0.5, "rate_burst": 3}},
        service={
            "ledger": str(folder / "ledger.db"),
            "max_groups": 100,
            "max_request_bytes": 4096,
            "rate_per_second": 1000.0,
            "rate_burst": 1000,
        },
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running


def call(server: ServerProcess, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.request(method, f"{server.url}{path}", headers=headers | kwargs.pop("headers", {}), timeout=30, **kwargs)


def spent(server: ServerProcess, analyst: str) -> float:
    """The analyst's ε spent (their budgets here have δ = 0: basic composition)."""
    budget: float = call(server, "GET", "/v1/budget", TOKENS[analyst]).json()["spent"]["epsilon"]
    return budget


def test_openapi_schema_is_published(server: ServerProcess) -> None:
    schema = call(server, "GET", "/openapi.json").json()
    assert {"/v1/tables", "/v1/query", "/v1/preview", "/v1/budget"} <= set(schema["paths"])
    assert "QueryRequest" in schema["components"]["schemas"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKENS['alice']}"}, {"Authorization": "Bearer  x"}],
)
@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/tables"), ("GET", "/v1/budget"), ("POST", "/v1/query"), ("POST", "/v1/preview")]
)
def test_missing_or_invalid_token_is_refused(server: ServerProcess, headers: dict[str, str], method: str, path: str) -> None:
    body = {"table": "adult", "statistic": "count", "epsilon": 0.1} if method == "POST" else None
    response = call(server, method, path, headers=headers, json=body)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_tables_show_public_schema_only(server: ServerProcess) -> None:
    alice = call(server, "GET", "/v1/tables", TOKENS["alice"]).json()["tables"]
    bob = call(server, "GET", "/v1/tables", TOKENS["bob"]).json()["tables"]
    assert [t["name"] for t in alice] == ["adult", "visits", "people"]
    assert [t["name"] for t in bob] == ["adult"]
    adult = bob[0]
    columns = {c["name"]: c for c in adult["columns"]}
    assert columns["age"]["bounds"] == [17, 90]
    assert "fnlwgt" not in columns  # undeclared columns are not exposed at all
    text = str(adult)
    assert str(ADULT_ROWS) not in text and "rows" not in text


def test_other_analysts_tables_and_budgets_are_isolated(server: ServerProcess) -> None:
    refused = call(server, "POST", "/v1/query", TOKENS["bob"], json={"table": "people", "statistic": "count", "epsilon": 0.1})
    assert refused.status_code == 404
    assert call(server, "GET", "/v1/tables/people", TOKENS["bob"]).status_code == 404
    bob_before = call(server, "GET", "/v1/budget", TOKENS["bob"]).json()
    answer = call(
        server, "POST", "/v1/query", TOKENS["alice"], json={"table": "people", "statistic": "count", "epsilon": 0.1}
    ).json()
    bob_after = call(server, "GET", "/v1/budget", TOKENS["bob"]).json()
    assert bob_after == bob_before
    assert bob_after["analyst"] == "bob"
    assert all(answer["request_id"] not in entry["label"] for entry in bob_after["history"])
    alice = call(server, "GET", "/v1/budget", TOKENS["alice"]).json()
    assert any(entry["label"].startswith(answer["request_id"]) for entry in alice["history"])


@pytest.mark.parametrize(
    ("body", "truth"),
    [
        ({"statistic": "count"}, ADULT_ROWS),
        ({"statistic": "mean", "column": "age"}, 38.58),
        ({"statistic": "sum", "column": "hours_per_week", "bounds": [0, 80]}, None),
        ({"statistic": "histogram", "column": "sex"}, None),
        ({"statistic": "count", "by": ["sex", "income"]}, None),
        ({"statistic": "mean", "column": "age", "by": ["sex"]}, None),
        ({"statistic": "variance", "column": "age"}, None),
    ],
)
def test_every_answer_is_noisy_and_paid_for(server: ServerProcess, body: dict[str, Any], truth: float | None) -> None:
    before = spent(server, "alice")
    response = call(server, "POST", "/v1/query", TOKENS["alice"], json={"table": "adult", "epsilon": 0.2, **body})
    assert response.status_code == 200, response.text
    answer = response.json()
    release = answer["release"]
    assert release["epsilon"] == pytest.approx(0.2)
    assert release["sensitivity"] > 0
    assert "keyed from os.urandom (cryptographically secure" in release["randomness"]  # the default secure source
    assert answer["spent"]["epsilon"] == pytest.approx(before + 0.2) and answer["spent"]["delta"] == 0
    value = release["value"]
    if isinstance(value, dict):
        assert set(release["interval"]) == set(value)
    if truth is not None:
        assert value != truth
        width = release["interval"][1] - release["interval"][0]
        assert abs(value - truth) < 5 * width  # noisy, yet calibrated (fails with probability < e^-20)


BAD_BODIES: list[tuple[Any, int]] = [
    ({"table": "adult", "statistic": "count", "epsilon": 0}, 422),
    ({"table": "adult", "statistic": "count", "epsilon": -1}, 422),
    ({"table": "adult", "statistic": "count", "epsilon": "0.1"}, 422),
    ({"table": "adult", "statistic": "count"}, 422),
    ({"table": "adult", "statistic": "median", "column": "age", "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "sum", "column": "salary", "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "sum", "column": "fnlwgt", "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "sum", "column": "sex", "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "sum", "column": "age", "bounds": [90, 17], "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "sum", "column": "age", "bounds": [1], "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "histogram", "column": "age", "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "count", "by": ["age"], "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "count", "by": ["native_country", "education"], "epsilon": 0.1}, 422),
    ({"table": "adult", "statistic": "count", "epsilon": 0.1, "where": "fnlwgt > 40"}, 422),  # an undeclared column
    ({"table": "nowhere", "statistic": "count", "epsilon": 0.1}, 404),
    ([1, 2, 3], 422),
    ("count", 422),
]
RAW_BAD_BODIES = [
    b'{"table": "adult", "statistic": "sum", "column": "age", "bounds": [NaN, 90], "epsilon": 0.1}',
    b'{"table": "adult", "statistic": "count", "epsilon": Infinity}',
    b'{"table": "adult", "statistic": "count", "epsilon": NaN}',
    b'{"table": "adult", "statistic": "count", "epsilon": 0.1',
    b"\xff\xfe not json",
]


@pytest.mark.parametrize(("body", "status"), BAD_BODIES)
def test_bad_queries_get_a_clear_4xx_and_cost_nothing(server: ServerProcess, body: Any, status: int) -> None:
    before = call(server, "GET", "/v1/budget", TOKENS["bob"]).json()
    response = call(server, "POST", "/v1/query", TOKENS["bob"], json=body)
    assert response.status_code == status, response.text
    assert response.json()["detail"]
    assert call(server, "GET", "/v1/budget", TOKENS["bob"]).json() == before


def test_validation_errors_are_one_clear_line(server: ServerProcess) -> None:
    """ε ≤ 0: "epsilon: Input should be greater than 0", not pydantic's raw list; the details stay under "errors"."""
    response = call(server, "POST", "/v1/query", TOKENS["bob"], json={"table": "adult", "statistic": "count", "epsilon": 0})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and detail.startswith("epsilon: ") and "422" not in detail
    assert response.json()["errors"][0]["loc"][-1] == "epsilon"


@pytest.mark.parametrize(("body", "status"), [b for b in BAD_BODIES if isinstance(b[0], dict)])
def test_the_query_route_and_the_framework_refuse_alike(server: ServerProcess, body: dict[str, Any], status: int) -> None:
    """``application/json`` takes dpwitness.serve.route; another JSON type (``+json``) goes through
    FastAPI. Same status, same message, same problem list, nothing spent either way."""
    before = spent(server, "bob")
    raw = json.dumps(body).encode()
    fast = call(server, "POST", "/v1/query", TOKENS["bob"], content=raw, headers={"content-type": "application/json"})
    framework = call(server, "POST", "/v1/query", TOKENS["bob"], content=raw, headers={"content-type": "application/x+json"})
    assert fast.status_code == framework.status_code == status
    assert fast.json() == framework.json()
    assert spent(server, "bob") == before


@pytest.mark.parametrize("raw", RAW_BAD_BODIES)
def test_malformed_json_nan_and_infinity_are_refused(server: ServerProcess, raw: bytes) -> None:
    before = spent(server, "bob")
    response = call(server, "POST", "/v1/query", TOKENS["bob"], content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (400, 422), response.text
    assert spent(server, "bob") == before


def test_oversized_body_is_refused(server: ServerProcess) -> None:
    body = {"table": "adult", "statistic": "count", "epsilon": 0.1, "column": "x" * 5000}
    response = call(server, "POST", "/v1/query", TOKENS["bob"], json=body)
    assert response.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: streamed
        yield b'{"table": "adult", "statistic": "count", "epsilon": 0.1, "column": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    streamed = call(server, "POST", "/v1/query", TOKENS["bob"], content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


def test_error_messages_contain_no_data_values(server: ServerProcess) -> None:
    texts = [call(server, "POST", "/v1/query", TOKENS["bob"], json=body).text for body, _ in BAD_BODIES]
    for text in texts:
        assert str(ADULT_ROWS) not in text
        assert "Holand" not in text and "United-States" not in text  # categories are declared, but never echoed by errors


def test_budget_exceeded_is_402_before_anything_is_released(server: ServerProcess) -> None:
    with Client(server.url, TOKENS["tight"]) as client:
        client.count("adult", epsilon=0.08)
        with pytest.raises(BudgetExceeded):
            client.count("adult", epsilon=0.08)
        assert client.budget()["spent"]["epsilon"] == pytest.approx(0.08)
        assert client.budget()["records"] == 1


def test_preview_spends_nothing(server: ServerProcess) -> None:
    before = spent(server, "bob")
    body = {"table": "adult", "statistic": "mean", "column": "age", "epsilon": 0.5}
    preview = call(server, "POST", "/v1/preview", TOKENS["bob"], json=body).json()["preview"]
    assert preview["epsilon"] == pytest.approx(0.5)
    assert {p["aggregate"] for p in preview["parts"]} == {"count", "centred_sum"}
    count = call(
        server, "POST", "/v1/preview", TOKENS["bob"], json={"table": "adult", "statistic": "count", "epsilon": 0.5}
    ).json()
    assert count["preview"]["scale"] == pytest.approx(2.0)
    assert count["preview"]["interval"][1] == pytest.approx(2.0 * math.log(20))
    assert spent(server, "bob") == before


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"delta": 1e-6}, "delta"),  # δ on a pure-ε account
        ({"mechanism": "gaussian"}, "mechanism"),  # a Gaussian without δ or ρ in the budget
        ({"rho": 0.01, "epsilon": None}, "rho"),  # ρ with an (ε, δ) total
    ],
)
def test_options_conflicting_with_the_budget_are_refused_naming_them(
    server: ServerProcess, extra: dict[str, Any], named: str
) -> None:
    before = spent(server, "bob")
    body = {"table": "adult", "statistic": "count", "by": ["sex"], "epsilon": 0.1, **extra}
    body = {k: v for k, v in body.items() if v is not None}
    for path in ("/v1/query", "/v1/preview"):
        answer = call(server, "POST", path, TOKENS["bob"], json=body)
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"].startswith(named) and "\n" not in answer.json()["detail"]
    assert spent(server, "bob") == before


def test_rate_limit_per_analyst(server: ServerProcess) -> None:
    statuses = [call(server, "GET", "/v1/budget", TOKENS["limited"]).status_code for _ in range(6)]
    assert statuses[:3] == [200, 200, 200]
    assert 429 in statuses[3:]
    assert call(server, "GET", "/v1/budget", TOKENS["bob"]).status_code == 200  # others are not slowed


def test_python_client(server: ServerProcess) -> None:
    with Client(server.url, TOKENS["alice"]) as client:
        assert [t["name"] for t in client.tables()] == ["adult", "visits", "people"]
        assert client.schema("people")["columns"][0]["categories"] == ["A", "B", "C"]
        mean = client.mean("adult", "age", epsilon=0.1)
        assert isinstance(mean, Release) and 17 <= float(mean) <= 90 and mean.epsilon == pytest.approx(0.1)
        assert client.last["table"] == "adult"
        grouped = client.sum("people", "salary", epsilon=0.1, by=["dept"])
        assert set(grouped.value) == {"A", "B", "C"} and grouped.key_columns == ("dept",)
        assert set(client.histogram("adult", "income", epsilon=0.1).value) == {"<=50K", ">50K"}
        two = client.count("adult", epsilon=0.1, by=["sex", "income"], alpha=0.1)  # keys as columns, not joined strings
        assert set(two.value) == {(s, i) for s in ("Female", "Male") for i in ("<=50K", ">50K")} and two.alpha == 0.1
        frame = two.to_polars()
        assert frame.columns[:2] == ["sex", "income"] and frame.height == 4 and set(frame["mechanism"]) == {"laplace"}
        assert client.preview("adult", "count", epsilon=1.0)["scale"] == pytest.approx(1.0)
        with pytest.raises(ServiceError) as refused:
            client.count("nowhere", epsilon=0.1)
        assert refused.value.status == 404
    with Client(server.url, "not-a-token") as stranger, pytest.raises(ServiceError) as unauthorised:
        stranger.tables()
    assert unauthorised.value.status == 401


def test_differencing_attack_is_stopped_by_the_budget(server: ServerProcess) -> None:
    report = differencing_against_server(url=server.url, token=TOKENS["attacker"], column="age", epsilon=0.1, repeats=100)
    assert report["target"] == {"column": "native_country", "key": "Holand-Netherlands"}
    assert report["stopped_by"] == "budget"
    assert report["pairs_answered"] == 5 and report["queries_answered"] == 10
    assert report["epsilon_spent"] == pytest.approx(1.0)
    # with exact answers one pair would give the age exactly; here the 95% interval is wider than the whole range
    assert report["half_width_95"] > 90 - 17
    assert report["guess_success_bound"] == pytest.approx(math.e / (1 + math.e))
    assert spent(server, "attacker") <= 1.0


def test_red_team_cli_attacks_the_live_service(server: ServerProcess) -> None:
    """`dpwitness attack differencing --server URL --token T` calls differencing_against_server."""
    from typer.testing import CliRunner

    from dpwitness.cli import app

    command = [
        "attack",
        "differencing",
        "--server",
        server.url,
        "--token",
        TOKENS["cli"],
        "--epsilon",
        "0.1",
        "--repeats",
        "50",
        "--json",
    ]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["stopped_by"] == "budget" and report["pairs_answered"] == 2 and report["queries_answered"] == 5
    assert report["epsilon_spent"] == pytest.approx(0.5)


def test_repeating_a_query_gives_fresh_noise_and_costs_again(server: ServerProcess) -> None:
    before = spent(server, "alice")
    body = {"table": "adult", "statistic": "sum", "column": "capital_gain", "epsilon": 0.05}
    answers = [call(server, "POST", "/v1/query", TOKENS["alice"], json=body).json() for _ in range(3)]
    values = {a["release"]["value"] for a in answers}
    assert len(values) == 3
    assert spent(server, "alice") == pytest.approx(before + 0.15)


def test_privacy_unit_bounds_contributions(server: ServerProcess) -> None:
    """Each person has 10 visits; the owner keeps ≤ 2 per person, so Δ(count) = 2 and the count is ≈ 80."""
    with Client(server.url, TOKENS["alice"]) as client:
        assert client.schema("visits")["privacy_unit"] == "person"
        count = client.count("visits", epsilon=1.0)
        assert count.sensitivity == 2.0 and count.scale == pytest.approx(2.0)
        assert abs(float(count) - 80) < 40  # 40 people × 2 rows kept, not 400 (fails with probability < e^-20)
        total = client.sum("visits", "days", epsilon=1.0, by=["ward"])
        assert total.sensitivity == 20.0 and set(total.value) == {"A", "B"}
