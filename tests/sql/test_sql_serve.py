"""The service's SQL request (``POST /v1/sql``) against a real server subprocess on 127.0.0.1:
answers within their interval of the exact answer, refusals before any spend, EXPLAIN for free."""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.serve.process import ServerProcess, write_config

TOKEN = "alice-token-" + "q" * 24


def _people(path: Path) -> list[tuple[int, str, int]]:
    rng = random.Random(11)
    rows = [(rng.randint(15, 80), rng.choice(["F", "M"]), rng.randint(1, 80)) for _ in range(3000)]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "sex", "hours_per_week", "town"])
        writer.writerows([(*row, ("Ashby", "Brill", "Crane")[i % 3]) for i, row in enumerate(rows)])
    (path.parent / "towns.csv").write_text("town,county\nAshby,North\nBrill,North\nCrane,South\nCrane,Ridge\n")
    (path.parent / "visits.csv").write_text("town,amount\nAshby,3\nCrane,5\n")
    return rows


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, list[tuple[int, str, int]]]]:
    folder = tmp_path_factory.mktemp("sqlserve")
    rows = _people(folder / "people.csv")
    config = write_config(
        folder / "service.toml",
        tables={
            "people": {
                "path": str(folder / "people.csv"),
                "columns": {
                    "age": {"bounds": [0, 100], "type": "integer"},
                    "sex": {"categories": ["F", "M"]},
                    "hours_per_week": {"bounds": [0, 100]},
                    "town": {"categories": ["Ashby", "Brill", "Crane"]},
                },
            },
            "visits": {  # another private table: no privacy unit is declared, so a JOIN with it is refused
                "path": str(folder / "visits.csv"),
                "columns": {"town": {"categories": ["Ashby", "Brill", "Crane"]}, "amount": {"bounds": [0, 10]}},
            },
            "towns": {
                "path": str(folder / "towns.csv"),
                "public": True,
                "columns": {
                    "town": {"categories": ["Ashby", "Brill", "Crane"]},
                    "county": {"categories": ["North", "Ridge", "South"]},
                },
            },
        },
        analysts={"alice": (TOKEN, 2000.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running, rows


def _post(server: ServerProcess, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/sql", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)


def _spent(server: ServerProcess) -> float:
    answer = httpx.get(f"{server.url}/v1/budget", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    return float(answer["spent"]["epsilon"])


def test_the_younger_than_20_count(served: tuple[ServerProcess, list[tuple[int, str, int]]]) -> None:
    server, rows = served
    response = _post(server, {"sql": "SELECT COUNT(*) AS n FROM people WHERE age < 20", "epsilon": 100.0, "alpha": 1e-9})
    assert response.status_code == 200, response.text
    answer = response.json()["answer"]
    (cell,) = answer["rows"][0]
    exact = sum(1 for age, _, _ in rows if age < 20)
    assert cell["low"] <= exact <= cell["high"] and cell["high"] - cell["low"] < 1
    (release,) = answer["releases"]
    assert release["epsilon"] == 100.0 and release["parts"][0]["sensitivity"] == 1.0 and release["neighbours"]


def test_grouped_by_declared_categories_with_bounds_from_the_config(served: tuple[ServerProcess, list[Any]]) -> None:
    server, rows = served
    body = {
        "sql": "SELECT sex, COUNT(*), AVG(age) AS mean_age FROM people GROUP BY sex ORDER BY sex",
        "epsilon": 200.0,
        "alpha": 1e-9,
    }
    response = _post(server, body)
    assert response.status_code == 200, response.text
    answer = response.json()["answer"]
    assert [row[0] for row in answer["rows"]] == ["F", "M"]
    for sex, count, mean in answer["rows"]:
        ages = [age for age, s, _ in rows if s == sex]
        assert count["low"] <= len(ages) <= count["high"]
        assert mean["low"] <= sum(ages) / len(ages) <= mean["high"]


@pytest.mark.parametrize(
    ("statement", "status", "says"),
    [
        ("SELECT age FROM people", 422, "row-level output"),
        ("SELECT SUM(age + hours_per_week) FROM people", 422, "Δ cannot be derived"),
        ("SELECT COUNT(*) FROM others", 404, "no table named 'others'"),
        ("SELECT hours_per_week, COUNT(*) FROM people GROUP BY hours_per_week", 422, "declared keys"),
        ("SELECT COUNT(*) FROM people a JOIN people b ON a.age = b.age", 422, "a self-join"),
        ("SELECT COUNT(*) FROM people JOIN visits v ON people.town = v.town", 422, "a JOIN of two private tables needs"),
        ("EXPLAIN SELECT SUM(CLAMP(v.amount, 0, 9)) FROM people p JOIN Visits v ON p.town = v.town", 422, "same privacy_unit"),
        ("SELECT COUNT(*) FROM people WHERE salary > 3", 422, "unknown column"),
    ],
)
def test_refused_statements_cost_nothing(served: tuple[ServerProcess, list[Any]], statement: str, status: int, says: str) -> None:
    server, _ = served
    before = _spent(server)
    response = _post(server, {"sql": statement, "epsilon": 1.0})
    assert response.status_code == status, response.text
    assert says in response.json()["detail"]
    assert _spent(server) == before


def test_explain_spends_nothing_and_budget_is_checked_for_the_whole_statement(served: tuple[ServerProcess, list[Any]]) -> None:
    server, _ = served
    before = _spent(server)
    plan = _post(server, {"sql": "SELECT COUNT(*), AVG(age) FROM people", "epsilon": 1.0, "explain": True})
    assert plan.status_code == 200, plan.text
    assert [q["epsilon"] for q in plan.json()["plan"]["queries"]] == [0.5, 0.5]
    assert _spent(server) == before
    too_much = _post(server, {"sql": "SELECT COUNT(*), AVG(age) FROM people", "epsilon": 10_000.0})
    assert too_much.status_code in (402, 422) and _spent(server) == before


def test_explain_with_target_errors_needs_no_epsilon_and_spends_nothing(served: tuple[ServerProcess, list[Any]]) -> None:
    server, _ = served
    before = _spent(server)
    statement = "EXPLAIN SELECT WITHIN(COUNT(*), 10), WITHIN(AVG(age), 2, 1000) FROM people WHERE sex IN ('F', 'M') GROUP BY sex"
    plan = _post(server, {"sql": statement})
    assert plan.status_code == 200, plan.text
    targets = plan.json()["plan"]["targets"]
    count, mean = targets["statistics"]
    assert count["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-12) and count["half_width"] <= 10
    assert [p["aggregate"] for p in mean["parts"]] == ["count", "centred_sum"] and mean["half_width"] <= 2
    released = _post(server, {"sql": statement.removeprefix("EXPLAIN "), "epsilon": 1.0})
    assert released.status_code == 422 and "planned, not released" in released.json()["detail"]
    no_epsilon = _post(server, {"sql": "SELECT COUNT(*) FROM people"})
    assert no_epsilon.status_code == 422 and no_epsilon.json()["detail"].startswith("epsilon")
    assert _spent(server) == before


def test_a_join_with_a_public_table_of_the_config(served: tuple[ServerProcess, list[Any]]) -> None:
    server, rows = served
    statement = "SELECT t.county, COUNT(*) AS n FROM people p JOIN towns t ON p.town = t.town GROUP BY t.county ORDER BY t.county"
    response = _post(server, {"sql": statement, "epsilon": 100.0, "alpha": 1e-9})
    assert response.status_code == 200, response.text
    answer = response.json()["answer"]
    counts = {row[0]: row[1] for row in answer["rows"]}
    exact = {"North": 2000, "Ridge": 1000, "South": 1000}  # Crane matches two towns rows: M = 2
    assert sorted(counts) == sorted(exact)
    assert all(counts[k]["low"] <= v <= counts[k]["high"] for k, v in exact.items())
    assert answer["releases"][0]["parts"][0]["sensitivity"] == 2.0
    # the same shape over the private table alone is not answered from the join (nor the reverse)
    alone = _post(server, {"sql": "SELECT COUNT(*) FROM people", "epsilon": 100.0, "alpha": 1e-9}).json()["answer"]
    (cell,) = alone["rows"][0]
    assert cell["low"] <= len(rows) <= cell["high"]


# --- Client.sql: the Python client over the same endpoint (issue 30) --------------------------------


def test_the_client_answers_sql_with_cells_and_the_release_set(served: tuple[ServerProcess, list[Any]]) -> None:
    """Client.sql against the real server: rows of keys and Cells holding the exact answers, the new
    constructs included (grouped STDDEV, a CASE key, SQRT of a released value, a LEFT JOIN)."""
    from dpwitness.serve.client import Client, SqlAnswer
    from dpwitness.sql import Cell

    server, rows = served
    statement = (
        "SELECT sex, CASE WHEN age < 40 THEN 'under 40' ELSE '40+' END AS band, COUNT(*) AS n, "
        "STDDEV(age) AS sd, SQRT(COUNT(*)) AS root FROM people GROUP BY sex, band ORDER BY sex, band"
    )
    with Client(server.url, TOKEN) as client:
        before = client.budget()["spent"]["epsilon"]
        answer = client.sql(statement, epsilon=300.0, alpha=1e-9)
        assert isinstance(answer, SqlAnswer) and answer.columns == ("sex", "band", "n", "sd", "root")
        assert [row[:2] for row in answer.rows] == [("F", "40+"), ("F", "under 40"), ("M", "40+"), ("M", "under 40")]
        for sex, band, n, sd, root in answer.rows:
            ages = [age for age, s, _ in rows if s == sex and (age < 40) == (band == "under 40")]
            mean = sum(ages) / len(ages)
            exact_sd = math.sqrt(sum((a - mean) ** 2 for a in ages) / len(ages))
            assert isinstance(n, Cell) and n.low <= len(ages) <= n.high
            assert sd.low <= exact_sd <= sd.high and root.low <= math.sqrt(len(ages)) <= root.high
        assert math.isclose(client.budget()["spent"]["epsilon"] - before, 300.0)
        assert [p["sensitivity"] for p in answer.releases[1]["parts"]] == [1.0, 50.0, 2500.0]
        assert any("root is computed from the released (noisy) aggregates" in note for note in answer.notes)
        assert answer.table[0]["sex"] == "F" and answer.table_name == "people"

        left = client.sql(
            "SELECT COUNT(*) AS n, COUNT(t.county) AS matched FROM people p LEFT JOIN towns t ON p.town = t.town "
            "WHERE t.county IS NULL OR t.county = 'North'",
            epsilon=100.0,
            alpha=1e-9,
        )
        assert isinstance(left, SqlAnswer)
        n, matched = left.rows[0]
        assert n.low <= 2000 <= n.high and matched.low <= 2000 <= matched.high  # Ashby and Brill: North
        assert left.releases[0]["parts"][0]["sensitivity"] == 2.0  # Crane matches two towns rows: M = 2


def test_the_client_refuses_before_sending_and_reports_refusals(served: tuple[ServerProcess, list[Any]]) -> None:
    from dpwitness.common.errors import BudgetExceeded
    from dpwitness.serve.client import MAX_SQL, Client, ServiceError

    server, _ = served
    with Client(server.url, TOKEN) as client:
        before = client.budget()["spent"]["epsilon"]
        for bad, parameter in (
            ({"statement": "", "epsilon": 1.0}, "statement"),
            ({"statement": "SELECT COUNT(*) FROM people " + " " * MAX_SQL, "epsilon": 1.0}, "statement"),
            ({"statement": "SELECT COUNT(*) FROM people", "epsilon": float("nan")}, "epsilon"),
            ({"statement": "SELECT COUNT(*) FROM people", "epsilon": 1.0, "alpha": 1.5}, "alpha"),
        ):
            with pytest.raises(ParameterError) as raised:
                client.sql(**bad)
            assert raised.value.parameter == parameter
        with pytest.raises(ServiceError) as refused:
            client.sql("SELECT SUM(ABS(age)) FROM people", epsilon=1.0)
        assert refused.value.status == 422 and "ABS of row values inside an aggregate" in refused.value.message
        with pytest.raises(BudgetExceeded):  # 2,700 in all: beyond the analyst's 2,000, whatever ran before
            over = "SELECT EPSILON(COUNT(*), 900), EPSILON(COUNT(age), 900), EPSILON(SUM(age), 900) FROM people"
            client.sql(over, epsilon=2700.0)
        plan = client.sql("SELECT sex, VAR(age) FROM people GROUP BY sex", epsilon=1.0, explain=True)
        assert isinstance(plan, dict) and [p["sensitivity"] for p in plan["queries"][0]["parts"]] == [1.0, 50.0, 2500.0]
        assert client.budget()["spent"]["epsilon"] == before


def test_two_cases_with_one_alias_are_not_answered_from_each_others_cache(served: tuple[ServerProcess, list[Any]]) -> None:
    """The service caches exact aggregates by query shape; a CASE key column is computed per statement,
    so two CASEs named alike (same alias, same literals) must each be read afresh."""
    server, rows = served
    for cut in (30, 60):
        statement = f"SELECT CASE WHEN age < {cut} THEN 'low' ELSE 'high' END AS b, COUNT(*) FROM people GROUP BY b ORDER BY b"
        response = _post(server, {"sql": statement, "epsilon": 50.0, "alpha": 1e-9})
        assert response.status_code == 200, response.text
        counts = {row[0]: row[1] for row in response.json()["answer"]["rows"]}
        low = sum(1 for age, _, _ in rows if age < cut)
        assert counts["low"]["low"] <= low <= counts["low"]["high"], cut
        assert counts["high"]["low"] <= len(rows) - low <= counts["high"]["high"], cut


def test_the_clients_grouped_variance_is_the_sql_grouped_variance(served: tuple[ServerProcess, list[Any]]) -> None:
    """POST /v1/query with statistic variance and by (Client.variance(by=…)) now answers per declared key."""
    from dpwitness.serve.client import Client

    server, rows = served
    with Client(server.url, TOKEN) as client:
        release = client.variance("people", "age", epsilon=100.0, by="sex", alpha=1e-9)
    assert isinstance(release.value, dict) and isinstance(release.interval, dict)
    for key, (low, high) in release.interval.items():
        sex = key[0] if isinstance(key, tuple) else key
        ages = [age for age, s, _ in rows if s == sex]
        mean = sum(ages) / len(ages)
        assert low <= sum((a - mean) ** 2 for a in ages) / len(ages) <= high, key
