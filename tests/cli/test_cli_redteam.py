"""``dpwitness audit`` and ``dpwitness attack …`` from the command line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app

runner = CliRunner()

MECHANISMS = """
import numpy as np

def good(x, rng, size):
    return x + rng.laplace(0.0, 1.0, size)

def bad(x, rng, size):
    return x + rng.laplace(0.0, 0.25, size)

def per_query(answers, rng):
    return [bool(a + rng.laplace(0.0, 2.0) > 0.5) for a in answers]

def broken(x, rng):
    raise RuntimeError("cannot run")
"""


@pytest.fixture()
def module(tmp_path: Path) -> Path:
    path = tmp_path / "mechs.py"
    path.write_text(MECHANISMS)
    return path


def test_audit_ok_exits_zero(module: Path) -> None:
    result = runner.invoke(
        app, ["audit", f"{module}:good", "--d", "0", "--d-prime", "1", "--epsilon", "1", "--samples", "200000", "--seed", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "OK" in result.output


def test_audit_violation_exits_one_with_json(module: Path) -> None:
    result = runner.invoke(
        app, ["audit", f"{module}:bad", "--d", "0", "--d-prime", "1", "--epsilon", "1", "--seed", "1", "--json"]
    )
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["violated"] is True and payload["verdict"] == "violated"
    assert payload["epsilon_lower_bound"] > 1


def test_audit_searches_neighbours_and_plots(module: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["audit", f"{module}:per_query", "--d", "[1, 1, 1]", "--epsilon", "1", "--samples", "20000", "--seed", "2"]
    )
    assert result.exit_code == 1, result.output
    assert "worst pair" in result.output
    plot = tmp_path / "audit.png"
    result = runner.invoke(
        app,
        [
            "audit",
            f"{module}:good",
            "--d",
            "0",
            "--d-prime",
            "1",
            "--epsilon",
            "1",
            "--samples",
            "20000",
            "--seed",
            "2",
            "--plot",
            str(plot),
        ],
    )
    assert result.exit_code in (0, 3), result.output  # ok or inconclusive: a correct mechanism is never "violated"
    assert plot.stat().st_size > 10_000


def test_audit_bad_input_is_a_clear_error(module: Path) -> None:
    cases = [
        (
            [f"{module}:broken", "--d", "0", "--d-prime", "1", "--epsilon", "1", "--samples", "100"],
            "RuntimeError on d: cannot run",
        ),
        ([f"{module}:good", "--d", "0", "--d-prime", "1", "--epsilon", "0"], "epsilon must be"),
        ([f"{module}:good", "--d", "{oops", "--d-prime", "1", "--epsilon", "1"], "--d must be JSON"),
        ([f"{module}:missing", "--d", "0", "--d-prime", "1", "--epsilon", "1"], "MECHANISM"),
        (["no_such_module_here:f", "--d", "0", "--d-prime", "1", "--epsilon", "1"], "importable module"),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["audit", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output.replace("\n", " ")


def test_attack_differencing_shows_exact_and_dp(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "attack",
            "differencing",
            "--rows",
            "200",
            "--target",
            "4",
            "--epsilon",
            "1",
            "--repeats",
            "10",
            "--trials",
            "5000",
            "--seed",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["exact"]["recovered"] is True and payload["exact"]["success_probability"] == 1.0
    assert [d["repeats"] for d in payload["dp"]] == [1, 10]
    for row in payload["dp"]:
        assert row["success_probability"] <= row["bound"] + 0.01
    # the noisy attack still beats a coin, and repeating the query helps it
    assert 0.5 < payload["dp"][0]["success_probability"] < payload["dp"][1]["success_probability"]
    plot = tmp_path / "diff.png"
    result = runner.invoke(
        app, ["attack", "differencing", "--rows", "50", "--trials", "1000", "--repeats", "2", "--plot", str(plot)]
    )
    assert result.exit_code == 0 and plot.stat().st_size > 5_000
    assert "bound" in result.output


def test_attack_differencing_against_a_server_reports_failures_clearly() -> None:
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = runner.invoke(app, ["attack", "differencing", "--server", f"http://127.0.0.1:{port}", "--token", "t", "--json"])
    assert result.exit_code == 2
    assert "error" in result.output
    result = runner.invoke(app, ["attack", "differencing", "--server", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 2 and "--token" in result.output


def test_attack_membership(tmp_path: Path) -> None:
    plot = tmp_path / "roc.png"
    result = runner.invoke(
        app, ["attack", "membership", "--epsilon", "1", "--trials", "3000", "--seed", "3", "--json", "--plot", str(plot)]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["advantage"] <= payload["bound"] + 0.03
    assert {"auc", "tpr_at_fpr", "tpr_bound_at_fpr", "likelihood_ratio_bound"} <= set(payload)
    assert plot.stat().st_size > 10_000


def test_attack_floating_point_json_contract(tmp_path: Path) -> None:
    plot = tmp_path / "fp.png"
    result = runner.invoke(app, ["attack", "floating-point", "--samples", "2000", "--seed", "4", "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["naive"]["identification_rate"] > 0.5
    assert payload["dpwitness"]["identification_rate"] == 0.0
    assert plot.stat().st_size > 10_000
    table = runner.invoke(app, ["attack", "floating-point", "--samples", "500", "--seed", "4"])
    assert "numpy" in table.output and "0.00%" in table.output


def test_attack_tamper_flags_every_mistake(tmp_path: Path) -> None:
    result = runner.invoke(app, ["attack", "tamper", "--samples", "200000", "--seed", "5", "--json"])
    assert result.exit_code == 1, result.output  # every mistake flagged: claims violated (the README's exit 1)
    payload = json.loads(result.stdout)
    assert payload["all_flagged"] is True and len(payload["mistakes"]) == 6
    plot = tmp_path / "tamper.png"
    one = runner.invoke(app, ["attack", "tamper", "--name", "invert", "--samples", "20000", "--seed", "5", "--plot", str(plot)])
    assert one.exit_code == 1, one.output
    assert "invert" in one.output and plot.stat().st_size > 10_000
    assert runner.invoke(app, ["attack", "tamper", "--name", "nonsense"]).exit_code == 2


def test_witness_cli_accepts_the_new_tamper() -> None:
    result = runner.invoke(app, ["witness", "--sensitivity", "2", "--epsilon", "0.5", "--tamper", "add-remove"])
    assert result.exit_code == 1 and "VIOLATED" in result.output


@pytest.mark.slow
def test_attack_differencing_against_a_real_server(tmp_path: Path) -> None:
    """The CLI hands --server to the service helper, which runs into the analyst's budget."""
    from dpwitness.serve import process

    table = tmp_path / "people.csv"
    table.write_text("dept,salary\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i}\n" for i in range(300)))
    token = "attacker-token-" + "z" * 24
    config = process.write_config(
        tmp_path / "service.toml",
        tables={
            "people": {
                "path": str(table),
                "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 10_000]}},
            }
        },
        analysts={"attacker": (token, 1.0)},
        service={"ledger": str(tmp_path / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    with process.ServerProcess(config, log=tmp_path / "server.log") as server:
        args = ["attack", "differencing", "--server", server.url, "--token", token, "--table", "people", "--column", "salary"]
        result = runner.invoke(app, [*args, "--epsilon", "0.1", "--repeats", "100", "--json"])
        assert result.exit_code == 0, result.output
        payload = json.loads(result.stdout)
        assert payload["epsilon_spent"] <= 1.0 + 1e-9
        assert payload["stopped_by"] == "budget"
        table_output = runner.invoke(app, [*args, "--epsilon", "0.1", "--repeats", "1"])
        assert "differencing attack against" in table_output.output
