"""The Python client checks its parameters as a Session does (issue 27), against a real server:
a NaN or infinite ε is a ParameterError naming ``epsilon`` (it was httpx's raw ValueError), nothing
sent or spent; ``by="dept"`` is one column, as for a Session (the service answered 422)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dpwitness import ParameterError
from dpwitness.serve.client import Client
from dpwitness.serve.process import ServerProcess, write_config

TOKEN = f"carol-token-{'q' * 24}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("client-inputs")
    people = folder / "people.csv"
    people.write_text("dept,salary\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i}\n" for i in range(300)))
    config = write_config(
        folder / "service.toml",
        tables={
            "people": {"path": str(people), "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 5000]}}}
        },
        analysts={"carol": (TOKEN, 5.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.url, TOKEN) as connected:
        yield connected


def spent(client: Client) -> float:
    value: float = client.budget()["spent"]["epsilon"]
    return value


@pytest.mark.parametrize(
    ("ask", "parameter"),
    [
        (lambda c: c.count("people", epsilon=float("nan")), "epsilon"),
        (lambda c: c.count("people", epsilon=float("inf")), "epsilon"),
        (lambda c: c.count("people", epsilon=-1), "epsilon"),
        (lambda c: c.count("people"), "epsilon"),
        (lambda c: c.mean("people", "salary", epsilon=float("nan"), by="dept"), "epsilon"),
        (lambda c: c.query("people", "count", epsilon=0.1, rho=0.1), "rho"),
        (lambda c: c.sum("people", "salary", epsilon=0.1, bounds="0,100"), "bounds"),
        (lambda c: c.sum("people", "salary", epsilon=0.1, bounds=[0, float("nan")]), "bounds"),
        (lambda c: c.count("people", epsilon=0.1, alpha=float("nan")), "alpha"),
        (lambda c: c.count("people", epsilon=0.1, by=b"dept"), "by"),
        (lambda c: c.preview("people", "count", epsilon=float("nan")), "epsilon"),
    ],
)
def test_bad_parameters_are_refused_as_a_session_refuses_them(client: Client, ask: Any, parameter: str) -> None:
    before = spent(client)
    with pytest.raises(ParameterError) as caught:
        ask(client)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert spent(client) == before


def test_a_by_string_is_one_column_as_for_a_session(client: Client) -> None:
    one = client.count("people", epsilon=0.1, by="dept")
    listed = client.count("people", epsilon=0.1, by=["dept"])
    assert set(one.value) == set(listed.value) == {"A", "B", "C"} and one.key_columns == ("dept",)
    assert set(client.mean("people", "salary", epsilon=0.2, by="dept").value) == {"A", "B", "C"}
    assert client.preview("people", "count", epsilon=0.1, by="dept")["scale"] > 0
