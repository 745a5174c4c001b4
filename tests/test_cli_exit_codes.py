"""Exit codes match the README's table for every command (one test per command), and every
message names the flag typed, never the Python parameter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.errors import ExitCode

runner = CliRunner()


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("age,sex\n" + "".join(f"{20 + i % 50},{'FM'[i % 2]}\n" for i in range(300)))
    return path


def code(*args: str) -> int:
    return runner.invoke(app, list(args)).exit_code


def test_demo() -> None:
    assert code("demo") == ExitCode.OK


def test_release() -> None:
    assert code("release", "--value", "1", "--sensitivity", "1", "--epsilon", "1") == ExitCode.OK
    bad = runner.invoke(app, ["release", "--value", "1", "--sensitivity", "-1", "--epsilon", "1"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "--sensitivity must be" in bad.output


def test_witness() -> None:
    assert code("witness", "--sensitivity", "2", "--epsilon", "0.5") == ExitCode.OK
    assert code("witness", "--sensitivity", "2", "--epsilon", "0.5", "--tamper", "invert") == ExitCode.VIOLATED


def test_explain() -> None:
    assert code("explain") == ExitCode.OK


def test_query(table: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.db")
    base = ["query", str(table), "--count", "--ledger", ledger, "--budget", "1"]
    assert code(*base, "--epsilon", "0.8") == ExitCode.OK
    refused = runner.invoke(app, [*base, "--epsilon", "0.8", "--json"])
    assert refused.exit_code == ExitCode.VIOLATED and json.loads(refused.stdout)["error"]["kind"] == "refused"
    bad = runner.invoke(app, [*base, "--epsilon", "-1", "--json"])
    assert bad.exit_code == ExitCode.BAD_INPUT and json.loads(bad.stdout)["error"]["kind"] == "bad_input"


def test_sql(table: Path) -> None:
    bad = runner.invoke(app, ["sql", str(table.parent / "absent.csv"), "SELECT COUNT(*) FROM absent", "--epsilon", "1"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "SOURCE must be" in bad.output


def test_schema(table: Path) -> None:
    assert code("schema", str(table)) == ExitCode.OK
    assert code("schema", str(table.parent / "absent.csv")) == ExitCode.BAD_INPUT


def test_audit() -> None:
    bad = runner.invoke(app, ["audit", "math:sqrt", "--d", "[0]", "--epsilon", "-1"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "--epsilon" in bad.output


def test_check() -> None:
    assert code("check", "not-a-function-spec") == ExitCode.BAD_INPUT


def test_explore() -> None:
    assert code("explore", "--port", "-5") == ExitCode.BAD_INPUT


def test_serve(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["serve", "--config", str(tmp_path / "absent.toml")])
    assert bad.exit_code == ExitCode.BAD_INPUT and "--config must be" in bad.output


def test_serve_token() -> None:
    assert code("serve-token", "alice") == ExitCode.OK
    assert code("serve-token", "alice", "--epsilon", "-1") == ExitCode.BAD_INPUT


@pytest.mark.parametrize("attack", ["differencing", "membership", "floating-point"])
def test_attacks_refuse_bad_input(attack: str) -> None:
    bad = runner.invoke(app, ["attack", attack, "--epsilon", "-1"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "--epsilon must be" in bad.output


def test_attack_differencing() -> None:
    assert code("attack", "differencing", "--seed", "1") == ExitCode.OK


def test_attack_tamper_exits_1_when_it_flags_the_mistake() -> None:
    result = runner.invoke(app, ["attack", "tamper", "--name", "invert", "--samples", "20000", "--seed", "5", "--json"])
    assert result.exit_code == ExitCode.VIOLATED, result.output  # a flagged mistake is a violated claim
    assert json.loads(result.stdout)["all_flagged"] is True
    assert code("attack", "tamper", "--name", "nonsense") == ExitCode.BAD_INPUT
