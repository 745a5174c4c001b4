"""Exit codes match the README's table for every command (one test per command), and every
message names the flag typed, never the Python parameter."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.common.errors import ExitCode

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


# --- issue 27: a port in use, a user module that fails to import, a bad service file: bad input (2) --------


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A port on 127.0.0.1 that a real socket is listening on for the test's duration."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_explore_on_a_port_in_use_is_bad_input_before_the_url(occupied_port: int) -> None:
    result = runner.invoke(app, ["explore", "--port", str(occupied_port)])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --port must be") and "in use" in lines[0]
    assert "http://" not in result.output and "Errno" not in result.output


def test_serve_on_a_port_in_use_is_bad_input_before_the_url(occupied_port: int) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "service.toml"
    result = runner.invoke(app, ["serve", "--config", str(example), "--port", str(occupied_port)])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --port must be") and "in use" in lines[0]
    assert "http://" not in result.output and "Errno" not in result.output


@pytest.fixture
def broken_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real module file whose import fails: it imports a package that is not installed."""
    path = tmp_path / "needs_missing.py"
    path.write_text("import dpwitness_absent_package_27\n\n\ndef f(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    return path


@pytest.mark.parametrize("form", ["file", "module"])
def test_check_of_a_module_that_fails_to_import_is_bad_input(broken_module: Path, form: str) -> None:
    target = f"{broken_module}:f" if form == "file" else "needs_missing:f"
    result = runner.invoke(app, ["check", target, "--columns", '{"x": "Float64"}', "--epsilon", "1"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    line = " ".join(result.output.split())  # rich may wrap the one line
    assert line.startswith("error: FUNCTION must be a module that imports without error")
    assert "ModuleNotFoundError" in line and "dpwitness_absent_package_27" in line and "internal error" not in line


@pytest.mark.parametrize("form", ["file", "module"])
def test_audit_of_a_module_that_fails_to_import_is_bad_input(broken_module: Path, form: str) -> None:
    target = f"{broken_module}:f" if form == "file" else "needs_missing:f"
    result = runner.invoke(app, ["audit", target, "--d", "[0]", "--epsilon", "1", "--json"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    error = json.loads(result.stdout)["error"]
    assert error["parameter"] == "MECHANISM" and error["kind"] == "bad_input"
    assert "ModuleNotFoundError: No module named 'dpwitness_absent_package_27'" in error["message"]


def test_a_module_that_raises_on_import_is_named_by_its_error_type_only(tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text("raise ValueError('a value from the data: 4217')\n\n\ndef f(x):\n    return x\n")
    result = runner.invoke(app, ["audit", f"{path}:f", "--d", "[0]", "--epsilon", "1"])
    assert result.exit_code == ExitCode.BAD_INPUT and "ValueError" in result.output and "4217" not in result.output


@pytest.mark.parametrize("kind", ["folder", "not-utf8", "bad-setting"])
def test_a_bad_service_file_is_bad_input_naming_the_file(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "my-service.toml"
    if kind == "folder":
        config.mkdir()
    elif kind == "not-utf8":
        config.write_bytes(b"\xff\xfe[service]\n")
    else:
        config.write_text("tables = 5\n")
    result = runner.invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    line = " ".join(result.output.split())
    assert line.startswith("error: --config") and "my-service.toml" in line
