"""`"where"` in a request to `dpwitness serve`: declared columns only, refused before any spend,
and the filtered answer has the filtered Δ (a real server on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from dpwitness.serve.process import ServerProcess, write_config

TOKEN = "alice-token-" + "w" * 24


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("serve-where")
    people = folder / "people.csv"
    people.write_text("dept,salary,secret\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i},{i}\n" for i in range(600)))
    config = write_config(
        folder / "service.toml",
        tables={
            "people": {
                "path": str(people),
                "neighbours": "replace-one",
                "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 10_000]}},
            }
        },
        analysts={"alice": (TOKEN, 5.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running


def post(server: ServerProcess, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.post(f"{server.url}/v1/query", headers=headers, json={"table": "people", **body}, timeout=30)


def spent(server: ServerProcess) -> float:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    value: float = httpx.get(f"{server.url}/v1/budget", headers=headers, timeout=30).json()["spent"]["epsilon"]
    return value


def test_a_filtered_count_is_answered_with_the_replace_one_delta(server: ServerProcess) -> None:
    """Under replace-one the plain count is refused (Δ = 0, nothing to noise); a filtered one has Δ = 1."""
    response = post(server, {"statistic": "count", "epsilon": 0.5, "where": "salary < 2000 and dept in ['A', 'B']"})
    assert response.status_code == 200, response.text
    release = response.json()["release"] if "release" in response.json() else response.json()
    assert release["sensitivity"] == 1.0
    assert "where salary < 2000" in release["query"]
    total = sum(1 for i in range(600) if 1000 + 7 * i < 2000 and "ABC"[i % 3] in "AB")
    assert abs(release["value"] - total) < 40
    body = {"statistic": "sum", "column": "salary", "bounds": [5000, 6000], "epsilon": 0.5, "where": "dept == 'C'"}
    summed = post(server, body)
    assert summed.status_code == 200, summed.text
    answer = summed.json()["release"] if "release" in summed.json() else summed.json()
    assert answer["sensitivity"] == 6000.0  # [5000, 6000] ∪ {0}: a replaced record may leave the filter


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        ("secret < 3", "declared columns"),  # in the file, but not declared public
        ("(salary < 3", "position 1"),
        ("", "non-empty"),
        ("row_number <= 5", "order"),
        ("dept < 3", "where"),
    ],
)
def test_bad_filters_are_refused_before_any_spend(server: ServerProcess, where: str, fragment: str) -> None:
    before = spent(server)
    response = post(server, {"statistic": "count", "epsilon": 0.5, "where": where})
    assert response.status_code == 422, response.text
    assert fragment in response.text
    assert spent(server) == before
