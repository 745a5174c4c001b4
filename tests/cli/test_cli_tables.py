"""What the command line prints agrees with what was released and accounted (issue 27): one line
per release with its own ε, the notes behind --explain except those that change the meaning, the
JSON and the table state the same spent ε, and ``sql`` says, as ``query`` does, that a budget
without --ledger lasts for the call only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app

runner = CliRunner()
PEOPLE = Path(__file__).resolve().parents[2] / "examples" / "people.csv"


def cells(output: str, first: str) -> list[str]:
    """The cells of the table row whose first cell starts with ``first`` (the ``release`` command's table)."""
    for text in output.splitlines():
        parts = [p.strip() for p in text.replace("┃", "│").strip().strip("│").split("│")]
        if len(parts) > 1 and parts[0].startswith(first):
            return parts
    raise AssertionError(f"no row {first!r} in:\n{output}")


def line(output: str, first: str) -> str:
    """The printed line of the release whose query starts with ``first``."""
    for text in output.splitlines():
        if text.startswith(first):
            return text
    raise AssertionError(f"no line {first!r} in:\n{output}")


def test_each_release_is_one_line_with_its_own_epsilon() -> None:
    result = runner.invoke(app, ["query", str(PEOPLE), "--count", "--sum", "age:0:100", "--epsilon", "1", "--seed", "1"])
    assert result.exit_code == 0, result.output
    for query in ("count()", "sum(age)"):
        shown = line(result.output, query)
        assert "(95% [" in shown and "; ε = 0.5, δ = 0, Δ = " in shown and "neighbours: add/remove one record" in shown
    assert "1, 95% interval" not in result.output and "0.5, 95% interval" not in result.output


def test_different_confidences_are_stated_per_release() -> None:
    args = ["query", str(PEOPLE), "--count", "--alpha", "0.1", "--sum", "age:0:100", "--alpha", "0.2"]
    result = runner.invoke(app, [*args, "--epsilon", "1", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "(90% [" in line(result.output, "count()") and "(80% [" in line(result.output, "sum(age)")


def test_notes_are_behind_explain_but_a_note_that_changes_the_meaning_always_shows() -> None:
    """examples/people.schema.toml is found beside the CSV and the noise is seeded: both always said;
    the clamping note only with --explain (and always in --json)."""
    args = ["query", str(PEOPLE), "--mean", "age:0:100", "--epsilon", "1", "--seed", "1"]
    short = runner.invoke(app, args)
    assert short.exit_code == 0, short.output
    assert "note: schema: people.schema.toml, found beside the file" in short.output
    assert "NOT for production" in short.output and "clamped to [0, 100]" not in short.output
    explained = runner.invoke(app, [*args, "--explain"])
    assert explained.exit_code == 0 and "clamped to [0, 100]" in explained.output and "found beside the file" in explained.output
    notes = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["releases"][0]["notes"]
    assert any("clamped to [0, 100]" in n for n in notes) and "schema: people.schema.toml, found beside the file" in notes


def _strict_json(text: str) -> dict[str, object]:
    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    payload: dict[str, object] = json.loads(text, parse_constant=refuse)
    return payload


@pytest.mark.parametrize(("epsilon", "samples", "spent"), [("1", "5", 5.0), ("0.1", "3", 0.3), ("0.7", "4", 2.8)])
def test_release_states_one_accounted_epsilon_in_json_and_table(epsilon: str, samples: str, spent: float) -> None:
    args = ["release", "--value", "1", "--sensitivity", "1", "--epsilon", epsilon, "--samples", samples]
    payload = _strict_json(runner.invoke(app, [*args, "--json"]).stdout)
    assert payload["epsilon_spent"] == spent  # exactly: not 4.99999992577334 (the grid's loss summed) nor 0.30000000000000004
    table = runner.invoke(app, args).output
    assert cells(table, "ε spent")[1].startswith(f"{spent:g} ({samples} × {epsilon}, ")


def test_a_rho_release_reports_no_epsilon_as_null_not_infinity() -> None:
    args = ["release", "--value", "1", "--sensitivity", "1", "--mechanism", "gaussian", "--rho", "0.1", "--samples", "3"]
    payload = _strict_json(runner.invoke(app, [*args, "--json"]).stdout)
    assert payload["epsilon_spent"] is None and payload["rho_spent"] == 0.3
    assert "ρ = 0.3 (3 releases" in runner.invoke(app, args).output


def test_sql_says_what_query_says_without_a_ledger(tmp_path: Path) -> None:
    note = "no --ledger: this budget lasts for this call only (nothing is recorded; use --ledger to keep an account)"
    query = runner.invoke(app, ["query", str(PEOPLE), "--count", "--epsilon", "1"])
    sql = runner.invoke(app, ["sql", str(PEOPLE), "SELECT COUNT(*) FROM people", "--epsilon", "1"])
    assert query.exit_code == sql.exit_code == 0, sql.output
    assert note in " ".join(query.output.split()) and note in sql.output.splitlines()
    payload = _strict_json(
        runner.invoke(app, ["sql", str(PEOPLE), "SELECT COUNT(*) FROM people", "--epsilon", "1", "--json"]).stdout
    )
    assert payload["budget_note"] == note
    ledger = str(tmp_path / "budget.db")
    kept = runner.invoke(app, ["sql", str(PEOPLE), "SELECT COUNT(*) FROM people", "--epsilon", "1", "--ledger", ledger])
    assert kept.exit_code == 0 and "no --ledger" not in kept.output
