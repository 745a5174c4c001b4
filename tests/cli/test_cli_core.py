"""The release machine's command line: demo, release, witness, explain."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.common.data import adult_path

runner = CliRunner()


def test_release_json_has_the_contract_keys() -> None:
    result = runner.invoke(app, ["release", "--value", "3", "--sensitivity", "1", "--epsilon", "0.5", "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"value", "scale", "epsilon", "variance", "interval", "witness"} <= set(payload)
    assert payload["scale"] == pytest.approx(2.0) and payload["variance"] == pytest.approx(8.0)
    assert payload["witness"]["ok"] is True and payload["seeded"] is True
    assert "NOT for production" in payload["notice"]


def test_samples_are_reproducible_and_compose() -> None:
    args = ["release", "--value", "0", "--sensitivity", "1", "--epsilon", "1", "--seed", "10", "--samples", "3", "--json"]
    first = json.loads(runner.invoke(app, args).stdout)
    second = json.loads(runner.invoke(app, args).stdout)
    assert first["value"] == second["value"] and len(set(first["value"])) == 3
    assert first["epsilon_spent"] == pytest.approx(3.0, abs=1e-6)
    # resampling steps the seed: the second release is the release with seed + 1
    alone = json.loads(runner.invoke(app, [*args[:8], "11", "--json"]).stdout)
    assert alone["value"] == first["value"][1]


def test_witness_exit_status_and_tamper() -> None:
    ok = runner.invoke(app, ["witness", "--sensitivity", "2", "--epsilon", "0.5", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    bad = runner.invoke(app, ["witness", "--sensitivity", "2", "--epsilon", "0.5", "--tamper", "invert", "--json"])
    assert bad.exit_code == 1
    payload = json.loads(bad.stdout)
    assert payload["ok"] is False and payload["worst_log_ratio"] == pytest.approx(8.0, rel=1e-6)
    assert {"claimed_epsilon", "variance", "expected_variance"} <= set(payload)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["release", "--value", "1", "--sensitivity", "1", "--epsilon", "0"], "epsilon"),
        (["release", "--value", "nan", "--sensitivity", "1", "--epsilon", "1"], "value"),
        (["release", "--value", "1", "--sensitivity", "-2", "--epsilon", "1"], "sensitivity"),
        (["release", "--value", "1", "--sensitivity", "1", "--epsilon", "1", "--samples", "0"], "samples"),
        (["witness", "--sensitivity", "1", "--epsilon", "1", "--tamper", "nope"], "tamper"),
    ],
)
def test_bad_input_is_a_clear_error(args: list[str], needle: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert needle in result.output and "must be" in result.output


def test_explain_states_the_worked_example() -> None:
    result = runner.invoke(app, ["explain"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for needle in ["Δ = (U − L)/n = 0.1", "b = Δ/ε = 0.1", "std = √2·b = 0.141", "±0.30", "1000× the noise", "not 10×"]:
        assert needle in text, needle
    assert "replace one" in text and "add/remove one" in text and "not a percentage" in text


def test_demo_on_adult() -> None:
    if adult_path() is None:
        pytest.skip("../shared/data/adult.csv not found: the demo falls back to generated data")
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "UCI Adult" in text and "32,561" in text and "claim holds" in text


def test_demo_falls_back_to_generated_data(tmp_path: object) -> None:
    env = {**os.environ, "DPWITNESS_ADULT": "/nonexistent/adult.csv", "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-m", "dpwitness", "demo"], env=env, capture_output=True, text=True, check=True)
    assert "generated ages" in result.stdout and "claim holds" in result.stdout


def test_error_messages_are_printed_literally() -> None:
    """A message with brackets (an extra's name, a user's input) must not be eaten as markup."""
    result = runner.invoke(app, ["query", "nowhere.csv", "--epsilon", "1", "--sum", "age:[web]:3"])
    assert result.exit_code == 2
    assert "age:[web]:3" in result.output
