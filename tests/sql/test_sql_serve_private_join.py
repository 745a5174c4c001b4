"""A JOIN of two of the service's private tables (``POST /v1/sql`` and ``Client.sql``) against a
real server subprocess on 127.0.0.1: answered when both tables declare one privacy unit and one
relation, with the request's truncation bounds, its ε spent once and the join stated in the
release; refused before any spend otherwise (issue 30, item 1, the service face)."""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.serve.process import ServerProcess, write_config

TOKEN = "carol-token-" + "j" * 24
JOIN = "FROM people JOIN purchases p ON people.person_id = p.person_id"


def _tables(folder: Path) -> tuple[dict[str, int], list[tuple[str, float]]]:
    """people: one row per person; purchases: 0–3 rows per person (amounts 0–120, some above the
    clamp's 100). Returns each person's age and every purchase (person, amount)."""
    rng = random.Random(5)
    ages = {f"p{i:04d}": rng.randint(18, 80) for i in range(1500)}
    purchases = [(person, float(rng.randint(0, 120))) for person in ages for _ in range(rng.randint(0, 3))]
    with (folder / "people.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["person_id", "age"])
        writer.writerows(ages.items())
    with (folder / "purchases.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["person_id", "amount"])
        writer.writerows(purchases)
    (folder / "visits.csv").write_text("visitor,minutes\nv1,3\nv2,5\n")
    (folder / "notes.csv").write_text("person_id,words\np0001,3\np0002,5\n")
    return ages, purchases


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, dict[str, int], list[tuple[str, float]]]]:
    folder = tmp_path_factory.mktemp("sqljoin")
    ages, purchases = _tables(folder)
    config = write_config(
        folder / "service.toml",
        tables={
            "people": {
                "path": str(folder / "people.csv"),
                "privacy_unit": "person_id",
                "columns": {"age": {"bounds": [0, 100], "type": "integer"}},
            },
            "purchases": {
                "path": str(folder / "purchases.csv"),
                "privacy_unit": "person_id",
                "max_contributions": 3,
                "columns": {"amount": {"bounds": [0, 100]}},
            },
            "visits": {  # another unit: no join with people
                "path": str(folder / "visits.csv"),
                "privacy_unit": "visitor",
                "columns": {"minutes": {"bounds": [0, 60]}},
            },
            "notes": {  # the same unit under another relation: no join with people
                "path": str(folder / "notes.csv"),
                "privacy_unit": "person_id",
                "neighbours": "replace-one",
                "columns": {"words": {"bounds": [0, 60]}},
            },
        },
        analysts={"carol": (TOKEN, 1000.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with ServerProcess(config, log=folder / "server.log") as running:
        yield running, ages, purchases


def _post(server: ServerProcess, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/sql", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)


def _spent(server: ServerProcess) -> float:
    answer = httpx.get(f"{server.url}/v1/budget", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    return float(answer["spent"]["epsilon"])


def test_a_join_of_two_private_tables_is_answered_and_spends_its_epsilon_once(served: Any) -> None:
    """Every person has ≤ 1 row in people and ≤ 3 in purchases, so bounds (1, 3) truncate nothing and
    the exact answer is known; at α = 1e-9 each interval holds it (a wrong join, or Δ from one side
    only, would not: M = 1·3 + 3·1 = 6)."""
    server, ages, purchases = served
    before = _spent(server)
    statement = f"SELECT COUNT(*) AS n, SUM(CLAMP(p.amount, 0, 100)) AS spent {JOIN} WHERE people.age < 40"
    body = {"sql": statement, "epsilon": 200.0, "alpha": 1e-9, "max_rows_per_key": [1, 3], "max_rows_per_unit": [1, 3]}
    response = _post(server, body)
    assert response.status_code == 200, response.text
    answer = response.json()["answer"]
    young = [(person, amount) for person, amount in purchases if ages[person] < 40]
    n, total = answer["rows"][0]
    assert n["low"] <= len(young) <= n["high"]
    assert total["low"] <= sum(min(a, 100.0) for _, a in young) <= total["high"]
    count, summed = answer["releases"]
    assert count["parts"][0]["sensitivity"] == 6.0 and summed["parts"][0]["sensitivity"] == 600.0
    assert "private join on person_id = person_id" in count["query"]
    assert count["neighbours"] == "add/remove one unit's rows in both joined tables (n is private)"
    assert _spent(server) - before == pytest.approx(200.0)
    # without max_rows_per_unit each side keeps its table's max_contributions: (1, 3), the same Δ
    default = _post(server, {"sql": f"SELECT COUNT(*) {JOIN}", "epsilon": 1.0, "max_rows_per_key": [1, 3]})
    assert default.status_code == 200, default.text
    assert default.json()["answer"]["releases"][0]["parts"][0]["sensitivity"] == 6.0


@pytest.mark.parametrize(
    ("extra", "statement", "says"),
    [
        ({}, f"SELECT COUNT(*) {JOIN}", "max_rows_per_key"),
        ({"max_rows_per_key": [1, 0]}, f"SELECT COUNT(*) {JOIN}", "max_rows_per_key must be a whole number ≥ 1"),
        ({"max_rows_per_key": [1, 2, 3]}, f"SELECT COUNT(*) {JOIN}", "max_rows_per_key must be"),
        ({"max_rows_per_key": "1"}, f"SELECT COUNT(*) {JOIN}", "max_rows_per_key"),
        ({"max_rows_per_key": 1, "max_rows_per_unit": True}, f"SELECT COUNT(*) {JOIN}", "max_rows_per_unit"),
        ({"max_rows_per_key": 1}, "SELECT COUNT(*) FROM people JOIN visits v ON people.person_id = v.visitor", "privacy_unit"),
        ({"max_rows_per_key": 1}, "SELECT COUNT(*) FROM people JOIN notes n ON people.person_id = n.person_id", "neighbours"),
        ({"max_rows_per_key": 1}, f"SELECT AVG(CLAMP(p.amount, 0, 100)) {JOIN}", "AVG"),
    ],
    ids=["no per-key bound", "zero", "three sides", "text", "boolean", "another unit", "another relation", "AVG"],
)
def test_a_join_that_cannot_be_bounded_is_refused_before_any_spend(
    served: Any, extra: dict[str, Any], statement: str, says: str
) -> None:
    server, _, _ = served
    before = _spent(server)
    response = _post(server, {"sql": statement, "epsilon": 1.0, **extra})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert says in detail and "p0" not in detail  # names the field or construct, never a value of the data
    assert _spent(server) == before


def test_the_client_sends_the_join_bounds(served: Any) -> None:
    from dpwitness.serve.client import Client, SqlAnswer

    server, _, purchases = served
    with Client(server.url, TOKEN) as client:
        before = client.budget()["spent"]["epsilon"]
        with pytest.raises(ParameterError) as bad:  # checked before sending
            client.sql(f"SELECT COUNT(*) {JOIN}", epsilon=1.0, max_rows_per_key=(1, 0))
        assert bad.value.parameter == "max_rows_per_key"
        assert client.budget()["spent"]["epsilon"] == before
        plan = client.sql(f"SELECT COUNT(*) {JOIN}", epsilon=1.0, explain=True, max_rows_per_key=(1, 3))
        assert isinstance(plan, dict) and plan["queries"][0]["parts"][0]["sensitivity"] == 6.0
        assert client.budget()["spent"]["epsilon"] == before
        answer = client.sql(f"SELECT COUNT(*) AS n {JOIN}", epsilon=200.0, alpha=1e-9, max_rows_per_key=(1, 3))
        assert isinstance(answer, SqlAnswer)
        (n,) = answer.rows[0]
        assert n.low <= len(purchases) <= n.high
