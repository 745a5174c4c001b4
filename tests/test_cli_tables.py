"""What the command line's tables print agrees with what was released and accounted (issue 27):
the ε column holds each release's ε alone, the JSON and the table state the same spent ε, and
``sql`` says, as ``query`` does, that a budget without --ledger lasts for the call only."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dpwitness.cli import app

runner = CliRunner()
PEOPLE = Path(__file__).resolve().parent.parent / "examples" / "people.csv"


def cells(output: str, first: str) -> list[str]:
    """The cells of the table row whose first cell starts with ``first``."""
    for line in output.splitlines():
        parts = [p.strip() for p in line.replace("┃", "│").strip().strip("│").split("│")]
        if len(parts) > 1 and parts[0].startswith(first):
            return parts
    raise AssertionError(f"no row {first!r} in:\n{output}")


def test_the_epsilon_column_shows_each_releases_epsilon_alone() -> None:
    result = runner.invoke(app, ["query", str(PEOPLE), "--count", "--sum", "age:0:100", "--epsilon", "1", "--seed", "1"])
    assert result.exit_code == 0, result.output
    header = cells(result.output, "statistic")
    assert header[2] == "95% interval" and header[3] == "ε"
    assert cells(result.output, "count()")[3] == "0.5"
    assert cells(result.output, "sum(age)")[3] == "0.5"
    assert "1, 95% interval" not in result.output and "0.5, 95% interval" not in result.output


def test_different_confidences_are_stated_per_release() -> None:
    args = ["query", str(PEOPLE), "--count", "--alpha", "0.1", "--sum", "age:0:100", "--alpha", "0.2"]
    result = runner.invoke(app, [*args, "--epsilon", "1", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert cells(result.output, "statistic")[2] == "interval"
    assert cells(result.output, "count()")[3] == "0.5, 90% interval"
    assert cells(result.output, "sum(age)")[3] == "0.5, 80% interval"
