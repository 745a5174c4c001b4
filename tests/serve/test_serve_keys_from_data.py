"""Group keys taken from the data on the service (issue 30, item 2, the service face): a table that
declares ``max_rows`` and lists a column in ``keys_from_data`` may be grouped by that column with
Gaussian (or Laplace) thresholding, through the same door as every face; a key is released only
when its noisy count passes τ, the selection's δ is charged to the analyst's δ budget, and a table
that declares neither still refuses, before any spend. Against a real server on 127.0.0.1."""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.serve.config import parse_table
from dpwitness.serve.process import ServerProcess, write_config
from dpwitness.serve.tables import load_table

TOKEN = "dana-token-" + "k" * 24
NO_DELTA = "erin-token-" + "e" * 24  # an analyst with no δ budget
FREQUENT = ("clerk", "nurse", "pilot", "welder")


def _jobs() -> list[str]:
    """600 rows of each frequent job and 25 jobs held by one person each (never released: a
    noisy count of 1 passes τ ≈ 30 with probability far below 1e-9)."""
    return [job for job in FREQUENT for _ in range(600)] + [f"rare-{i:02d}" for i in range(25)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("keysfromdata")
    jobs = _jobs()
    (folder / "staff.csv").write_text("job,age\n" + "".join(f"{job},{20 + i % 40}\n" for i, job in enumerate(jobs)))
    config = write_config(
        folder / "service.toml",
        tables={
            "staff": {
                "path": str(folder / "staff.csv"),
                "max_rows": 10_000,
                "keys_from_data": ["job"],
                "columns": {"age": {"bounds": [0, 100]}},
            },
            "closed": {  # the same file, without max_rows: keys from the data are refused
                "path": str(folder / "staff.csv"),
                "columns": {"age": {"bounds": [0, 100]}},
            },
        },
        analysts={"dana": (TOKEN, 100.0), "erin": (NO_DELTA, 100.0)},
        analyst_options={"dana": {"delta": 1e-3}},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running


def _post(server: ServerProcess, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)


def _budget(server: ServerProcess) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{server.url}/v1/budget", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    return answer


def test_a_gaussian_count_by_keys_from_the_data_releases_the_frequent_keys_only(served: ServerProcess) -> None:
    body = {"table": "staff", "statistic": "count", "by": ["job"], "epsilon": 1.0, "mechanism": "gaussian", "delta": 1e-6}
    response = _post(served, "/v1/query", body)
    assert response.status_code == 200, response.text
    release = response.json()["release"]
    assert set(release["value"]) == set(FREQUENT)  # a wrong τ (or none) would let rare keys through
    assert all(abs(release["value"][job] - 600) < 100 for job in FREQUENT)
    spend = _budget(served)["history"][-1]  # the noise's δ and the selection's, on the analyst's δ budget
    assert spend["epsilon"] == pytest.approx(1.0) and 0 < spend["delta"] <= 2e-6
    assert release["delta"] == pytest.approx(spend["delta"])


def test_an_analyst_without_a_delta_budget_is_refused_before_any_spend(served: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {NO_DELTA}"}
    body = {"table": "staff", "statistic": "count", "by": ["job"], "epsilon": 1.0}
    before = httpx.get(f"{served.url}/v1/budget", headers=headers, timeout=30).json()["spent"]
    response = httpx.post(f"{served.url}/v1/query", json=body, headers=headers, timeout=60)
    assert response.status_code == 422 and "delta_budget must be a total δ > 0" in response.json()["detail"]
    assert httpx.get(f"{served.url}/v1/budget", headers=headers, timeout=30).json()["spent"] == before


def test_sql_groups_by_keys_from_the_data_with_laplace_thresholding(served: ServerProcess) -> None:
    response = _post(
        served,
        "/v1/sql",
        {"sql": "SELECT job, COUNT(*) AS n FROM staff GROUP BY job ORDER BY job", "epsilon": 1.0, "alpha": 1e-9},
    )
    assert response.status_code == 200, response.text
    rows = response.json()["answer"]["rows"]
    assert [row[0] for row in rows] == sorted(FREQUENT)
    assert all(row[1]["low"] <= Counter(_jobs())[row[0]] <= row[1]["high"] for row in rows)


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/v1/query", {"table": "closed", "statistic": "count", "by": ["job"], "epsilon": 1.0}, "keys from the data (none)"),
        ("/v1/sql", {"sql": "SELECT job, COUNT(*) FROM closed GROUP BY job", "epsilon": 1.0}, "unknown column"),
        ("/v1/query", {"table": "staff", "statistic": "sum", "column": "job", "bounds": [0, 1], "epsilon": 1.0}, "numeric"),
    ],
    ids=["query on a table without keys_from_data", "SQL on it", "a sum of the key column"],
)
def test_what_the_table_does_not_declare_is_refused_before_any_spend(
    served: ServerProcess, path: str, body: dict[str, Any], says: str
) -> None:
    before = _budget(served)["spent"]
    response = _post(served, path, body)
    assert response.status_code == 422, response.text
    assert says in response.json()["detail"]
    assert _budget(served)["spent"] == before


def test_the_config_says_what_keys_from_the_data_need(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("job,age\n" + "".join(f"j{i % 3},{i}\n" for i in range(50)))
    for section, parameter in (
        ('path = "t.csv"\nkeys_from_data = ["job"]\n[columns]\nage = { bounds = [0, 100] }', "tables.t.keys_from_data"),
        ('path = "t.csv"\nmax_rows = 10\nkeys_from_data = ["job"]', "tables.t.max_rows"),  # 50 rows > 10: at load
        ('path = "t.csv"\nmax_rows = 0\nkeys_from_data = ["job"]', "tables.t.max_rows"),
        ('path = "t.csv"\nmax_rows = 100\nkeys_from_data = "job"', "tables.t.keys_from_data"),
    ):
        with pytest.raises(ParameterError) as refused:
            load_table(parse_table("t", tomllib.loads(section), base=tmp_path))
        assert refused.value.parameter == parameter
    config = parse_table("t", tomllib.loads('path = "t.csv"\nmax_rows = 100\nkeys_from_data = ["job"]'), base=tmp_path)
    assert config.columns == ("job",) and config.public()["max_rows"] == 100
    assert config.public()["columns"][0]["kinds"] == ["keys from the data"]
