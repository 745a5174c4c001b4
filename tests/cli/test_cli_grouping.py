"""CLI grouping and per-statistic options (issue 17 part 4, issue 19 part 4): ``--by a,b`` with
tuple keys or the schema's categories; options apply to the statistic they follow; no flag is
ever silently replaced; messages name flags; the raise-budget flags do what they say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app

runner = CliRunner()


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    rows = [f"{20 + i % 60},{'Female' if i % 3 else 'Male'},{'>50K' if i % 4 == 0 else '<=50K'}" for i in range(3_000)]
    path.write_text("age,sex,income\n" + "\n".join(rows) + "\n")
    return path


def cli(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, ["query", *args, "--json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else result.output


def test_by_two_columns_with_tuple_keys(people: Path) -> None:
    keys = "Female|<=50K,Female|>50K,Male|<=50K,Male|>50K"
    code, out = cli(str(people), "--epsilon", "4", "--count", "--by", "sex,income", "--keys", keys, "--seed", "1")
    assert code == 0, out
    release = out["releases"][0]
    assert release["key_columns"] == ["sex", "income"] and len(release["rows"]) == 4
    exact = {("Female", "<=50K"): 1500, ("Female", ">50K"): 500, ("Male", "<=50K"): 750, ("Male", ">50K"): 250}
    for row in release["rows"]:
        assert abs(row["value"] - exact[(row["sex"], row["income"])]) < 20  # Laplace b = 0.25: never off by 20
    csv = runner.invoke(app, ["query", str(people), "--epsilon", "4", "--count", "--by", "sex,income", "--keys", keys, "--csv"])
    assert csv.exit_code == 0 and csv.stdout.splitlines()[0].startswith("sex,income,value,low,high,epsilon")


def test_by_two_columns_takes_keys_from_the_schema(people: Path, tmp_path: Path) -> None:
    schema = tmp_path / "people.schema.toml"
    schema.write_text(
        '[columns]\nage = { type = "integer" }\nsex = { type = "string", categories = ["Female", "Male"] }\n'
        'income = { type = "string", categories = ["<=50K", ">50K"] }\n'
    )
    code, out = cli(str(people), "--epsilon", "4", "--count", "--by", "sex,income", "--schema", str(schema), "--seed", "2")
    assert code == 0, out
    rows = out["releases"][0]["rows"]
    assert {(r["sex"], r["income"]) for r in rows} == {(s, i) for s in ("Female", "Male") for i in ("<=50K", ">50K")}
    assert out["releases"][0]["delta"] == 0  # declared keys: no δ, no threshold
    code, out = cli(str(people), "--epsilon", "1", "--histogram", "income", "--schema", str(schema), "--seed", "2")
    assert code == 0, out  # no --categories, no --max-rows: the schema declares the histogram's keys
    assert [r["income"] for r in out["releases"][0]["rows"]] == ["<=50K", ">50K"]


def test_a_second_by_for_one_statistic_is_refused_not_replaced(people: Path) -> None:
    code, out = cli(str(people), "--epsilon", "1", "--count", "--by", "sex", "--by", "income", "--keys", "Female,Male")
    assert code == 2 and out["error"]["parameter"] == "--by" and "given once after --count" in out["error"]["message"]
    code, out = cli(str(people), "--epsilon", "1", "--count", "--by", "sex", "--keys", "Female", "--keys", "Male")
    assert code == 2 and out["error"]["parameter"] == "--keys"


def test_by_and_keys_apply_to_the_statistic_they_follow(people: Path) -> None:
    args = [str(people), "--epsilon", "2", "--count", "--mean", "age:0:100", "--by", "sex", "--keys", "Female,Male"]
    code, out = cli(*args, "--dtype", "age:integer", "--seed", "3")
    assert code == 0, out
    count, mean = out["releases"]
    assert count["key_columns"] == [] and "rows" not in count  # the --by follows --mean only
    assert mean["key_columns"] == ["sex"] and {r["sex"] for r in mean["rows"]} == {"Female", "Male"}


def test_tuple_keys_of_the_wrong_width_are_refused(people: Path) -> None:
    code, out = cli(str(people), "--epsilon", "1", "--count", "--by", "sex,income", "--keys", "Female,Male")
    assert code == 2 and out["error"]["parameter"] == "--keys" and "sex|income" in out["error"]["message"]
    code, out = cli(str(people), "--epsilon", "1", "--count", "--keys", "Female,Male")
    assert code == 2 and out["error"]["parameter"] == "--keys"


def test_options_repeated_apply_each_to_the_statistic_it_follows(people: Path) -> None:
    args = [str(people), "--epsilon", "2", "--delta-budget", "1e-5", "--seed", "4"]
    args += ["--count", "--by", "sex", "--keys", "Female,Male", "--mechanism", "gaussian", "--delta", "1e-6"]
    args += ["--histogram", "income", "--categories", "<=50K,>50K", "--mechanism", "laplace", "--alpha", "0.5"]
    code, out = cli(*args)
    assert code == 0, out
    gaussian, laplace = out["releases"]
    assert gaussian["distribution"] == "gaussian" and gaussian["delta"] == 1e-6
    assert laplace["distribution"] == "laplace" and laplace["delta"] == 0
    assert gaussian["alpha"] == laplace["alpha"] == 0.5  # given once: for every statistic, wherever it stands


def test_messages_name_the_flags_and_the_raise_flags_do_what_they_say(people: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.db")
    assert cli(str(people), "--epsilon", "0.5", "--count", "--ledger", ledger, "--budget", "2")[0] == 0  # δ = 0
    code, out = cli(str(people), "--epsilon", "0.5", "--count", "--ledger", ledger, "--delta-budget", "1e-5")
    message = out["error"]["message"]
    assert code == 2 and out["error"]["parameter"] == "--delta-budget" and "--raise-delta-budget" in message
    assert "delta_budget" not in message and "raise_budget" not in message
    code, out = cli(str(people), "--epsilon", "0.5", "--ledger", ledger, "--raise-delta-budget", "1e-5")
    assert code == 0, out
    code, out = cli(str(people), "--epsilon", "0.5", "--count", "--ledger", ledger, "--delta-budget", "1e-5")
    assert code == 0 and out["total"]["delta"] == 1e-5
    code, out = cli(str(people), "--epsilon", "0.1", "--count", "--budget", "0")
    assert code == 2 and out["error"]["message"].startswith("--budget must be")
    code, out = cli(str(people), "--epsilon", "0.1", "--histogram", "sex")
    assert code == 2 and out["error"]["message"].startswith("--max-rows must be") and "max_rows" not in out["error"]["message"]


def test_text_output_states_the_account_rho_only_for_rho_and_justified_digits(people: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["query", str(people), "--epsilon", "1", "--count", "--round", "--seed", "5"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    text = result.output
    assert f"file:{people.resolve()}" in text and "lasts for this call only" in text
    assert "ρ" not in text and "3,0" in text and ".0000" not in text  # a rounded count prints 3,00x, not 3,00x.0000
    _, out = cli(str(people), "--epsilon", "1", "--count")
    assert out["budget_note"].startswith("no --ledger") and out["account"] == f"file:{people.resolve()}"
    assert out["spent"]["rho"] is None and out["remaining"]["epsilon"] == 0.0
    _, out = cli(str(people), "--epsilon", "0.9", "--count", "--budget", "1")
    assert out["remaining"]["epsilon"] == 0.1  # not 0.09999999999999998
    rho = runner.invoke(app, ["query", str(people), "--epsilon", "0.5", "--count", "--rho", "1"], env={"COLUMNS": "200"})
    assert rho.exit_code == 0 and "ρ = " in rho.output


def test_a_flag_before_by_never_hides_it(people: Path) -> None:
    code, out = cli(str(people), "--epsilon", "1", "--count", "--preview", "--by", "sex", "--keys", "Female,Male")
    assert code == 0 and out["previews"][0]["query"].startswith("count() by sex")


@pytest.mark.parametrize("option", [["--epsilon", "2"], ["--where", "age > 30"], ["--budget", "3"]])
def test_an_option_given_twice_is_refused_not_replaced(people: Path, option: list[str]) -> None:
    args = [str(people), "--epsilon", "1", "--count", "--budget", "5", "--where", "age > 20"]
    code, out = cli(*args, *option)
    assert code == 2 and out["error"]["parameter"] == option[0] and "given once" in out["error"]["message"]


def test_a_leading_by_groups_the_variance_too(people: Path) -> None:
    """Grouped variance (issue 30): a --by before every statistic now groups --variance as it groups --mean;
    each key's interval holds the exact population variance of that key's clamped ages."""
    code, out = cli(
        str(people), "--epsilon", "40", "--by", "sex", "--keys", "Female,Male", "--dtype", "age:integer",
        "--count", "--variance", "age:0:100", "--seed", "3",
    )  # fmt: skip
    assert code == 0, out
    count, variance = out["releases"]
    assert count["key_columns"] == variance["key_columns"] == ["sex"]
    ages = {"Female": [20 + i % 60 for i in range(3_000) if i % 3], "Male": [20 + i % 60 for i in range(3_000) if not i % 3]}
    for row in variance["rows"]:
        values = ages[row["sex"]]
        exact = sum(v * v for v in values) / len(values) - (sum(values) / len(values)) ** 2
        assert row["low"] <= exact <= row["high"], row
    assert [p["sensitivity"] for p in variance["parts"]] == [1.0, 50.0, 2500.0]
