"""``dpwitness plan FILE --target …``: the budget solved from target errors, its JSON, bad input; nothing spent."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.cli.plan import parse_target
from dpwitness.common.errors import ParameterError

runner = CliRunner()


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pl.DataFrame({"age": [30, 40, 50, 60], "sex": ["F", "M", "F", "M"]}).write_csv(path)
    return path


def test_json_gives_the_exact_laplace_budget_and_the_means_split(people: Path) -> None:
    args = [
        "plan",
        str(people),
        "--dtype",
        "age:integer",
        "--epsilon",
        "1",
        "--target",
        "count ±10",
        "--target",
        "mean age:0:100 ±2",
    ]
    result = runner.invoke(app, [*args, "--min-rows", "2000", "--target", "count by sex ±5", "--keys", "F,M", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    count, mean, by_sex = plan["statistics"]
    assert count["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-12)
    assert by_sex["epsilon"] == pytest.approx(math.log(20) / 5, rel=1e-12)
    assert [p["aggregate"] for p in mean["parts"]] == ["count", "centred_sum"]
    assert all(s["half_width"] <= s["error"] for s in plan["statistics"])
    assert plan["total"]["epsilon"] == pytest.approx(sum(s["epsilon"] for s in plan["statistics"]), rel=1e-12)
    assert plan["fits"] is False  # 1.087 > 1: said, not refused


def test_the_table_and_a_gaussian_plan_on_a_rho_account(people: Path) -> None:
    result = runner.invoke(app, ["plan", str(people), "--rho", "1", "--mechanism", "gaussian", "--target", "count +-10"])
    assert result.exit_code == 0, result.output
    assert "Budget plan (gaussian; nothing spent)" in result.stdout and "ρ = 0.0192073" in result.stdout
    assert "as (ε, δ)" in result.stdout and "fits" in result.stdout


def test_a_gaussian_mean_plan_gives_the_closed_form_rho_split(people: Path) -> None:
    args = ["plan", str(people), "--dtype", "age:integer", "--rho", "1", "--mechanism", "gaussian", "--min-rows", "2000"]
    result = runner.invoke(app, [*args, "--target", "mean age:0:100 ±2", "--json"])
    assert result.exit_code == 0, result.output
    (mean,) = json.loads(result.stdout)["statistics"]
    count, centred = mean["parts"]
    assert count["rho"] / centred["rho"] == pytest.approx((52 / 50) ** (2 / 3), rel=1e-9)  # ((h + e)·Δ_count : Δ_sum)^⅔
    assert mean["half_width"] <= 2 and mean["half_width"] == pytest.approx(2, rel=1e-6)


def test_the_target_grammar_reads_columns_as_query_does() -> None:
    assert parse_target("mean age:0:100 ±2") == ("mean", "age", (0.0, 100.0), (), 2.0)
    assert parse_target("sum income by sex,town +- 500") == ("sum", "income", None, ("sex", "town"), 500.0)
    assert parse_target("count ±1.5") == ("count", None, None, (), 1.5)
    for bad in ("mean age:0:100", "count ±x", "±2", "mean ±2", "count by ±2", "sum a:0:1 b ±2"):
        with pytest.raises(ParameterError, match=r"^--target"):
            parse_target(bad)


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--target", "count ±0"], "--target"),
        (["--target", "count ±-1"], "--target"),
        (["--target", "median age:0:100 ±1"], "--target"),
        (["--target", "count ±1", "--alpha", "1"], "--alpha"),
        (["--target", "mean age:0:100 ±1"], "--min-rows"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(people: Path, extra: list[str], flag: str) -> None:
    ledger = people.parent / "ledger.sqlite"
    result = runner.invoke(app, ["plan", str(people), "--epsilon", "1", "--ledger", str(ledger), *extra])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.count("\n") == 0 and flag in message


def test_planning_records_no_spend(people: Path) -> None:
    ledger = people.parent / "ledger.sqlite"
    args = ["plan", str(people), "--epsilon", "1", "--ledger", str(ledger), "--target", "count ±3", "--json"]
    assert runner.invoke(app, args).exit_code == 0
    from dpwitness.privacy.budget import Ledger

    assert Ledger(ledger).history(f"file:{people.resolve()}") == []
