"""``dpwitness query FILE``: the table, the JSON contract, --preview, --html, the ledger and bad input."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness.cli import app

runner = CliRunner()


@pytest.fixture
def people(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "people.parquet"
    pl.DataFrame(
        {"pid": rng.integers(0, 300, 2000), "age": rng.integers(0, 100, 2000), "town": rng.choice(["a", "b", "c"], 2000)}
    ).write_parquet(path)
    return path


def spends(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM spends").fetchone()[0])


def test_json_on_adult_splits_epsilon_evenly(adult: Path) -> None:
    args = ["query", str(adult), "--epsilon", "2", "--count", "--mean", "age:0:100", "--histogram", "education"]
    args += ["--max-rows", "100000", "--delta-budget", "1e-5"]  # undeclared keys: δ sized to a declared bound
    args += ["--dtype", "age:integer", "--dtype", "hours_per_week:integer"]  # a CSV's columns are text until declared
    result = runner.invoke(app, [*args, "--mean", "hours_per_week:0:100", "--seed", "7", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {"releases", "spent", "remaining", "total", "account", "ledger", "budget_note"}
    assert payload["spent"]["epsilon"] == pytest.approx(2.0) and payload["remaining"]["epsilon"] == pytest.approx(0.0)
    assert payload["spent"]["delta"] == pytest.approx(1e-6) and payload["total"] == {"epsilon": 2.0, "delta": 1e-5, "rho": None}
    queries = [r["query"] for r in payload["releases"]]
    assert queries == ["count()", "mean(age) in [0, 100]", "mean(hours_per_week) in [0, 100]", "histogram(education)"]
    assert all(r["epsilon"] == pytest.approx(0.5) for r in payload["releases"])
    count, mean_age, _, education = payload["releases"]
    assert abs(count["value"] - 32561) < 60 and 38 < mean_age["value"] < 39.2
    assert len(mean_age["interval"]) == 2 and mean_age["parts"][1]["sensitivity"] == 50
    assert "HS-grad" in education["value"] and education["delta"] > 0


def test_grouped_table_output(adult: Path) -> None:
    args = ["query", str(adult), "--epsilon", "1", "--mean", "hours_per_week:0:100", "--by", "sex", "--keys", "Female,Male"]
    result = runner.invoke(app, [*args, "--dtype", "hours_per_week:integer"])
    assert result.exit_code == 0, result.output
    assert "Female" in result.stdout and "Male" in result.stdout and "spent ε = 1, δ = 0; remaining ε = 0, δ = 0" in result.stdout


def test_preview_spends_nothing(people: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    args = ["query", str(people), "--epsilon", "1", "--sum", "age:0:100", "--histogram", "town", "--ledger", str(ledger)]
    args += ["--max-rows", "1000", "--delta-budget", "1e-4"]
    result = runner.invoke(app, [*args, "--preview", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["spent"]["epsilon"] == 0 and spends(ledger) == 0
    assert payload["previews"][0]["scale"] == pytest.approx(200.0)  # Δ = 100 at ε = 0.5
    assert payload["previews"][1]["threshold"] > 0
    table = runner.invoke(app, [*args, "--preview"])
    assert table.exit_code == 0 and "nothing spent" in table.stdout


def test_ledger_budget_and_privacy_unit(people: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    base = ["query", str(people), "--privacy-unit", "pid", "--max-contributions", "3", "--ledger", str(ledger), "--budget", "1"]
    first = runner.invoke(app, [*base, "--epsilon", "0.6", "--sum", "age:0:100", "--json"])
    assert first.exit_code == 0, first.output
    release = json.loads(first.stdout)["releases"][0]
    assert release["sensitivity"] == 300 and "each pid keeps at most 3 row(s)" in release["notice"]
    second = runner.invoke(app, [*base, "--epsilon", "0.6", "--count", "--json"])
    assert second.exit_code == 1 and "remains" in second.output and spends(ledger) == 1  # refused: exit 1
    third = runner.invoke(app, [*base, "--epsilon", "0.4", "--count", "--by", "town", "--keys", "a,b,c", "--json"])
    assert third.exit_code == 0, third.output
    payload = json.loads(third.stdout)
    assert payload["remaining"]["epsilon"] == pytest.approx(0.0) and set(payload["releases"][0]["value"]) == {"a", "b", "c"}


def test_declared_keys_are_read_as_the_column_kind(adult: Path) -> None:
    args = ["query", str(adult), "--epsilon", "1", "--histogram", "education_num", "--categories", "9,10,99", "--json"]
    result = runner.invoke(app, [*args, "--seed", "3"])
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)["releases"][0]["value"]
    assert list(value) == ["9", "10", "99"] and value["9"] > 10_000 and abs(value["99"]) < 30
    typed = ["--dtype", "education_num:integer"]  # a CSV column is text unless its type is declared
    args = ["query", str(adult), "--epsilon", "1", "--histogram", "education_num", "--categories", "nine", *typed]
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "--categories" in bad.output  # the flag typed


def test_html_report_draws_error_bars_offline(adult: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    args = ["query", str(adult), "--epsilon", "1", "--histogram", "education", "--mean", "age:0:100", "--by", "sex"]
    args += ["--max-rows", "100000", "--delta-budget", "1e-5", "--dtype", "age:integer"]
    result = runner.invoke(app, [*args, "--html", str(report), "--json"])
    assert result.exit_code == 0, result.output
    text = report.read_text()
    assert text.count("<svg") == 2 and "Bachelors" in text and "spent: <strong>ε = 1, δ = 2e-06" in text
    assert text.count("neighbours: add/remove one record") == 2
    fetches = ['src="http', "src='http", 'href="http', "href='http", "<link", "<script", "@import", "url(http"]
    assert not [f for f in fetches if f in text]  # nothing to fetch: no CDN, no script (namespace URIs are only names)


BAD = [
    (["--count"], "absent.csv", "source"),
    (["--mean", "weight:0:100"], None, "column"),
    (["--sum", "town:0:100"], None, "column"),
    (["--sum", "age:100:0"], None, "bounds"),
    (["--sum", "age:nan:100"], None, "bounds"),
    (["--sum", "age-0-100"], None, "--sum"),
    (["--count", "--engine", "duckdb"], None, "engine"),
    (["--count", "--neighbours", "swap"], None, "neighbours"),
    ([], None, "statistics"),
]


@pytest.mark.parametrize(("extra", "file", "parameter"), BAD, ids=[b[2] + "-" + "-".join(b[0]) for b in BAD])
def test_bad_input_exits_2_and_spends_nothing(
    people: Path, tmp_path: Path, extra: list[str], file: str | None, parameter: str
) -> None:
    ledger = tmp_path / "bad.db"
    good = runner.invoke(app, ["query", str(people), "--epsilon", "0.1", "--count", "--ledger", str(ledger), "--budget", "5"])
    assert good.exit_code == 0 and spends(ledger) == 1
    target = str(tmp_path / file) if file else str(people)
    args = ["query", target, "--epsilon", "1", "--count", "--sum", "age:0:100", *extra, "--ledger", str(ledger), "--budget", "5"]
    if parameter == "statistics":
        args = ["query", target, "--epsilon", "1", "--ledger", str(ledger)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert parameter in result.output and spends(ledger) == 1


def test_epsilon_zero_and_empty_table(tmp_path: Path) -> None:
    """ε = 0 is bad input; an empty table is not (its emptiness is private): it is answered and charged."""
    empty = tmp_path / "empty.csv"
    empty.write_text("age\n")
    ledger = tmp_path / "e.db"
    result = runner.invoke(app, ["query", str(empty), "--epsilon", "0", "--count", "--ledger", str(ledger)])
    assert result.exit_code == 2 and "epsilon" in result.output
    assert spends(ledger) == 0
    result = runner.invoke(app, ["query", str(empty), "--epsilon", "1", "--count", "--ledger", str(ledger), "--json"])
    assert result.exit_code == 0, result.output
    assert spends(ledger) == 1


def test_the_installed_command_runs(people: Path) -> None:
    """The console entry point, in a real process (as a user types it)."""
    command = [sys.executable, "-m", "dpwitness", "query", str(people), "--epsilon", "1", "--count", "--seed", "1", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["releases"][0]["seeded"] is True


@pytest.mark.parametrize(("relation", "said"), [("add-remove", "add/remove one record"), ("replace-one", "replace one record")])
def test_the_table_says_which_neighbour_relation_was_used(people: Path, relation: str, said: str) -> None:
    args = ["query", str(people), "--epsilon", "1", "--count", "--neighbours", relation]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"neighbours: {said}" in result.output


def test_joint_quantiles_one_draw_one_spend(people: Path) -> None:
    """--joint: the --quantile's levels in one JointExp draw, ε charged once; bad levels refused before any spend."""
    flags = ["query", str(people), "--epsilon", "1", "--seed", "3", "--json"]
    result = runner.invoke(app, [*flags, "--quantile", "age:0:100:0.25,0.5,0.75", "--joint"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    (release,) = payload["releases"]
    assert release["distribution"] == "exponential" and release["epsilon"] == 1.0 and release["sensitivity"] == 1.5
    assert len(release["value"]) == 3 and "(joint)" in release["query"]
    refused = runner.invoke(app, [*flags, "--quantile", "age:0:100:0.75,0.25", "--joint"])
    assert refused.exit_code == 2 and "strictly increasing" in refused.output
    alone = runner.invoke(app, [*flags, "--median", "age:0:100", "--joint"])
    assert alone.exit_code == 2 and "--joint" in alone.output
