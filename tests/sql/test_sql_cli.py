"""``dpwitness sql SOURCE STATEMENT``: answers, plans, refusals and outputs from the shell."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.common.errors import ExitCode
from dpwitness.privacy.budget import Ledger

runner = CliRunner()


def _people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "sex", "town"])
        writer.writerows([[15 + i % 60, "FM"[i % 2], ("Ashby", "Brill", "Crane")[i % 3]] for i in range(600)])
    # The data owner's declaration beside the file, found by `dpwitness sql` without --schema.
    (tmp_path / "people.schema.toml").write_text(
        "[columns.age]\ntype = 'integer'\n[columns.sex]\ntype = 'string'\n[columns.town]\ntype = 'string'\n", encoding="utf-8"
    )
    return path


def test_the_younger_than_20_count_as_json(tmp_path: Path) -> None:
    people = _people(tmp_path)
    result = runner.invoke(app, ["sql", str(people), "SELECT COUNT(*) FROM people WHERE age < 20", "--epsilon", "50", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert "schema: people.schema.toml, found beside the file" in answer["releases"][0]["notes"]
    (cell,) = answer["rows"][0]
    exact = sum(1 for i in range(600) if 15 + i % 60 < 20)
    assert abs(cell["value"] - exact) < 2 and answer["releases"][0]["parts"][0]["sensitivity"] == 1.0


def test_csv_output_has_each_interval(tmp_path: Path) -> None:
    people = _people(tmp_path)
    statement = "SELECT sex, COUNT(*) AS n FROM people WHERE sex IN ('F', 'M') GROUP BY sex"
    result = runner.invoke(app, ["sql", str(people), statement, "--epsilon", "1", "--csv", "--seed", "3"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["sex", "n", "n_low", "n_high"] and [r[0] for r in rows[1:]] == ["F", "M"]


def test_explain_spends_nothing(tmp_path: Path) -> None:
    people, ledger = _people(tmp_path), tmp_path / "budget.db"
    statement = "SELECT COUNT(*), AVG(CLAMP(age, 0, 100)) FROM people"
    args = ["sql", str(people), statement, "--epsilon", "1", "--ledger", str(ledger), "--explain"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "nothing spent" in result.stdout and "Δ = 50" in result.stdout
    assert Ledger(ledger).history(f"file:{people.resolve()}") == []


def test_a_refusal_is_one_line_exit_2_and_spends_nothing(tmp_path: Path) -> None:
    people, ledger = _people(tmp_path), tmp_path / "budget.db"
    args = ["sql", str(people), "SELECT age FROM people", "--epsilon", "1", "--ledger", str(ledger), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == ExitCode.BAD_INPUT
    error = json.loads(result.stdout)["error"]
    assert error["parameter"].lower() == "statement" and "position 8" in error["message"]  # the CLI may name it as its argument
    assert Ledger(ledger).history(f"file:{people.resolve()}") == []


def test_a_join_with_a_public_table(tmp_path: Path) -> None:
    people = _people(tmp_path)
    towns = tmp_path / "towns.csv"
    towns.write_text("town,county\nAshby,North\nBrill,North\nCrane,South\n", encoding="utf-8")
    statement = "SELECT t.county, COUNT(*) AS n FROM people p JOIN towns t ON p.town = t.town GROUP BY t.county"
    result = runner.invoke(app, ["sql", str(people), statement, "--epsilon", "50", "--public", f"towns={towns}", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row[0]: row[1]["value"] for row in json.loads(result.stdout)["rows"]}
    assert abs(rows["North"] - 400) < 2 and abs(rows["South"] - 200) < 2


def test_without_sqlglot_the_command_names_the_extra(tmp_path: Path) -> None:
    """A real import failure (the module blocked in a subprocess): one line, exit 4, the `sql` extra."""
    from blocked_imports import run_without

    people = _people(tmp_path)
    result = run_without("sqlglot", ["sql", str(people), "SELECT COUNT(*) FROM people", "--epsilon", "1"], tmp_path)
    assert result.returncode == ExitCode.MISSING_PART, result.stderr
    assert "pip install 'dpwitness[sql]'" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_documented_commands_work_from_examples_alone() -> None:
    """docs/sql.md's shell examples, on the project's own examples/people.csv (no ../shared needed)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "sql.md").read_text(encoding="utf-8")
    commands = [line.removeprefix("$ dpwitness ") for line in docs.splitlines() if line.startswith("$ dpwitness sql examples/")]
    assert len(commands) >= 2
    import shlex

    root = Path(__file__).resolve().parents[2]
    for command in commands:
        args = shlex.split(command)
        args[1] = str(root / args[1])
        args = [
            re.sub(r"^(\w+=)(examples/)", lambda m: f"{m.group(1)}{root}/{m.group(2)}", a) for a in args
        ]  # --private NAME=PATH
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (command, result.output)
