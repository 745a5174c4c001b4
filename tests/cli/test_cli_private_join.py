"""``dpwitness sql --private NAME=PATH``: a JOIN of two private tables on the command line goes
through ``Session.sql`` (the one resolver), releases what the Python face releases, states Δ and
the neighbour relation, and refuses a missing or malformed bound in one line naming its flag,
exit 2, nothing spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.privacy.budget import Ledger
from dpwitness.session import Session

runner = CliRunner()
STATEMENT = (
    "SELECT COUNT(*) AS n, SUM(CLAMP(v.amount, 0, 50)) AS spent "
    "FROM people JOIN visits v ON people.town = v.town WHERE people.age < 60"
)


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    """Two CSV files as people write them (a blank cell, a duplicated key, a unit with many rows), each with its
    declared types beside it (the other private table's are read beside it as the session's own)."""
    people = tmp_path / "people.csv"
    people.write_text("person_id,age,town\n1,34,Ashby\n2,,Dent\n3,71,Ashby\n4,25,\n5,40,Dent\n")
    visits = tmp_path / "visits.csv"
    rows = ["person_id,town,amount", "1,Ashby,12.5", "1,Ashby,40", "2,Dent,7", "5,Dent,", "6,Crow,3"]
    rows += [f"7,Ashby,{i}" for i in range(8)]  # one unit with many rows of one key
    visits.write_text("\n".join(rows) + "\n")
    for path, types in (
        (people, {"person_id": "integer", "age": "integer", "town": "string"}),
        (visits, {"person_id": "integer", "town": "string", "amount": "float"}),
    ):
        columns = "".join(f'[columns."{c}"]\ntype = "{t}"\n' for c, t in types.items())
        path.with_name(path.stem + ".schema.toml").write_text(f'schema_version = 1\nsource = "{path.name}"\n{columns}')
    return people, visits


def _args(people: Path, visits: Path, *more: str) -> list[str]:
    return [
        "sql",
        str(people),
        STATEMENT,
        "--epsilon",
        "1",
        "--privacy-unit",
        "person_id",
        "--private",
        f"visits={visits}",
        *more,
    ]


def test_the_cli_releases_what_session_sql_releases_and_states_delta(tables: tuple[Path, Path]) -> None:
    people, visits = tables
    result = runner.invoke(
        app, _args(people, visits, "--max-rows-per-key", "2,3", "--max-rows-per-unit", "1,2", "--seed", "5", "--json")
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    session = Session(str(people), epsilon=1.0, privacy_unit="person_id", seed=5)
    answer = session.sql(
        STATEMENT, epsilon=1.0, private={"visits": str(visits)}, max_rows_per_key=(2, 3), max_rows_per_unit=(1, 2)
    )
    assert payload["rows"] == answer.to_dict()["rows"]
    # M = m_l·k_r + m_r·k_l = 1·3 + 2·2 = 7 joined rows each way: count Δ 7, sum Δ 7·50
    stated = [r["sensitivity"] for r in payload["releases"]]
    assert stated == [7.0, 350.0]
    assert all("one unit moves ≤ 1·3 + 2·2 = 7 joined rows each way" in r["query"] for r in payload["releases"])


@pytest.mark.parametrize(
    ("more", "flag"),
    [
        ((), "--max-rows-per-key"),  # the bound is required
        (("--max-rows-per-key", "2,x"), "--max-rows-per-key"),
        (("--max-rows-per-key", "1,2,3"), "--max-rows-per-key"),
        (("--max-rows-per-key", "2", "--max-rows-per-unit", "0"), "--max-rows-per-unit"),
    ],
)
def test_a_bad_bound_is_one_line_naming_its_flag_and_spends_nothing(
    tables: tuple[Path, Path], tmp_path: Path, more: tuple[str, ...], flag: str
) -> None:
    people, visits = tables
    ledger = tmp_path / "budget.db"
    result = runner.invoke(app, [*_args(people, visits, *more), "--ledger", str(ledger)])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error:") and flag in message
    assert Ledger(ledger).history(f"file:{people.resolve()}") == []


def test_a_malformed_private_table_names_the_flag(tables: tuple[Path, Path]) -> None:
    people, _ = tables
    result = runner.invoke(
        app, ["sql", str(people), STATEMENT, "--epsilon", "1", "--privacy-unit", "person_id", "--private", "visits"]
    )
    assert (
        result.exit_code == 2
        and result.output.strip().startswith("error: --private")
        and len(result.output.strip().splitlines()) == 1
    )
