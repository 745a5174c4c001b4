"""One set of conventions for every command of the CLI (see the docstring of ``dpwitness.cli``).

Commands are discovered from the registered app, so a new command is checked without editing
this file. Missing optional parts are tested for real: the CLI runs in a subprocess whose
``sitecustomize`` makes the import of the blocked module fail (``DPWITNESS_TEST_BLOCK``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from blocked_imports import blocking_site, run_without
from typer.main import get_command
from typer.testing import CliRunner

import dpwitness
from dpwitness.cli import CommandGroup, app
from dpwitness.common.errors import ExitCode

pytestmark = pytest.mark.slow  # real subprocesses: not in the fast default

runner = CliRunner()
#: A type placeholder as typer prints it: <bool>, <float>, <list[str]>, <path>…
PLACEHOLDER = re.compile(r"<(bool|int|float|str|path|text|list\[[a-z]+\])>", re.IGNORECASE)
MECHANISM = (
    "import numpy as np\n"
    "def laplace(d, rng, size):\n"
    "    x = np.atleast_1d(np.asarray(d, dtype=float))\n"
    "    return x + rng.laplace(0.0, float(x.size), size=(size, x.size))\n"  # each answer moves by 1: scale k
)


def all_commands() -> list[tuple[list[str], Any]]:
    """(path of names, click command) for every command and group under the root."""
    found: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        found.append((path, command))
        for name in sorted(getattr(command, "commands", {})):
            walk(command.commands[name], [*path, name])

    walk(get_command(app), [])
    return found


def json_commands() -> list[list[str]]:
    return [path for path, command in all_commands() if any("--json" in p.opts for p in command.params)]


def test_every_command_is_discovered() -> None:
    names = {" ".join(path) for path, _ in all_commands()}
    for expected in ["release", "witness", "query", "audit", "serve", "explore", "attack tamper", "attack membership"]:
        assert expected in names


@pytest.mark.parametrize("path", [path for path, _ in all_commands()], ids=lambda p: " ".join(p) or "root")
def test_help_has_no_type_placeholders(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "--help" in result.output
    assert not PLACEHOLDER.search(result.output), PLACEHOLDER.findall(result.output)


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"dpwitness {dpwitness.__version__}"


@pytest.mark.parametrize("path", json_commands(), ids=" ".join)
def test_usage_errors_are_json_under_json(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--json", "--no-such-option"])
    assert result.exit_code == ExitCode.BAD_INPUT
    error = json.loads(result.stdout)["error"]
    assert error["exit_code"] == 2 and error["kind"] == "bad_input" and "no-such-option" in error["message"]


def test_parameter_errors_are_json_under_json_and_name_the_parameter() -> None:
    result = runner.invoke(app, ["release", "--value", "1", "--sensitivity", "1", "--epsilon", "-1", "--json"])
    assert result.exit_code == ExitCode.BAD_INPUT
    error = json.loads(result.stdout)["error"]
    assert error["parameter"] == "--epsilon" and error["message"].startswith("--epsilon")  # the flag typed
    plain = runner.invoke(app, ["release", "--value", "1", "--sensitivity", "1", "--epsilon", "-1"])
    assert plain.exit_code == 2 and plain.stdout == "" and "epsilon" in plain.stderr and len(plain.stderr.splitlines()) == 1


def test_user_text_is_never_markup_or_emoji() -> None:
    result = runner.invoke(app, ["query", "nowhere.csv", "--epsilon", "1", "--mean", "age:zero:100"])
    assert result.exit_code == 2
    assert "age:zero:100" in result.stderr and "0️⃣" not in result.stderr
    brackets = runner.invoke(app, ["query", "nowhere.csv", "--epsilon", "1", "--sum", "[bold]age:[web]:3"])
    assert "[bold]age:[web]:3" in brackets.stderr


def test_release_and_query_use_the_same_json_keys(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("age\n" + "\n".join(str(20 + i % 50) for i in range(200)) + "\n")
    one = runner.invoke(app, ["release", "--value", "3", "--sensitivity", "1", "--epsilon", "1", "--seed", "1", "--json"])
    many = runner.invoke(app, ["query", str(table), "--epsilon", "1", "--count", "--seed", "1", "--json"])
    assert one.exit_code == 0 and many.exit_code == 0, (one.output, many.output)
    released, queried = json.loads(one.stdout), json.loads(many.stdout)["releases"][0]
    shared = {"value", "interval", "epsilon", "delta", "sensitivity", "scale", "variance", "alpha", "seeded", "notice"}
    assert shared <= set(released) and shared <= set(queried)
    assert "release" not in released  # the old key
    assert isinstance(released["value"], float) and len(released["interval"]) == 2


def test_refused_spend_exits_1(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("age\n" + "\n".join(str(20 + i % 50) for i in range(200)) + "\n")
    base = ["query", str(table), "--ledger", str(tmp_path / "l.db"), "--budget", "1", "--count"]
    assert runner.invoke(app, [*base, "--epsilon", "0.8"]).exit_code == 0
    refused = runner.invoke(app, [*base, "--epsilon", "0.8", "--json"])
    assert refused.exit_code == ExitCode.VIOLATED, refused.output
    assert json.loads(refused.stdout)["error"]["kind"] == "refused"  # a refused spend, not a violated claim


def test_an_internal_error_exits_5_without_its_text() -> None:
    """A bug: exit 5, one line naming the exception's type only (its text may quote data)."""
    broken = typer.Typer(cls=CommandGroup)

    @broken.command()
    def boom() -> None:
        raise ZeroDivisionError("secret cell 73512.25")

    @broken.command()
    def other() -> None: ...

    result = runner.invoke(broken, ["boom"])
    assert result.exit_code == ExitCode.INTERNAL
    assert "ZeroDivisionError" in result.stderr and "73512" not in result.output


def test_explain_states_delta_zero_once() -> None:
    result = runner.invoke(app, ["explain"])
    assert result.exit_code == 0
    assert "Δ = 0: Δ = 0" not in result.stdout and "Δ = 0: the query cannot change" in result.stdout


def test_missing_adult_names_the_path_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPWITNESS_ADULT", "/nonexistent.csv")
    result = runner.invoke(app, ["attack", "membership", "--column", "fnlwgt", "--trials", "10"])
    assert result.exit_code == 2 and "DPWITNESS_ADULT=/nonexistent.csv" in result.stderr
    assert "../shared/data" not in result.stderr
    demo = runner.invoke(app, ["demo"], env={"COLUMNS": "200"})
    assert demo.exit_code == 0 and "/nonexistent.csv" in demo.stdout


@pytest.mark.slow
def test_audit_plot_with_neighbour_search_reports_runs_per_input(tmp_path: Path) -> None:
    (tmp_path / "mech.py").write_text(MECHANISM)
    plot = tmp_path / "audit.png"
    args = ["audit", f"{tmp_path / 'mech.py'}:laplace", "--d", "[0, 0, 0]", "--epsilon", "1", "--samples", "4000"]
    result = runner.invoke(app, [*args, "--seed", "3", "--json", "--plot", str(plot)])
    assert result.exit_code in (0, 3), result.output
    assert plot.is_file() and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = json.loads(result.stdout)
    runs = [int(re.search(r"([\d,]+) runs per input", line).group(1).replace(",", "")) for line in payload["pairs_tried"]]  # type: ignore[union-attr]
    assert len(runs) > 1 and payload["samples"] in runs and payload["samples"] < sum(runs)


# --- missing optional parts: a real import failure in a subprocess ------------------------------------


def test_the_blocker_really_blocks(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(blocking_site(tmp_path)), "DPWITNESS_TEST_BLOCK": "scipy"}
    probe = subprocess.run([sys.executable, "-c", "import scipy.stats"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr


@pytest.mark.parametrize(
    ("blocked", "extra", "args"),
    [
        ("scipy", "audit", ["audit", "{mech}:laplace", "--d", "0", "--d-prime", "1", "--epsilon", "1", "--samples", "1000"]),
        ("scipy", "audit", ["attack", "tamper", "--name", "invert", "--samples", "1000"]),
        ("matplotlib", "plot", ["attack", "membership", "--trials", "10", "--plot", "{tmp}/m.png"]),
        ("uvicorn", "web", ["serve", "--config", "{tmp}/none.toml"]),
        ("fastapi", "web", ["serve", "--config", "{tmp}/none.toml"]),
        ("uvicorn", "web", ["explore"]),
        ("polars", "polars", ["query", "{tmp}/t.csv", "--epsilon", "1", "--count"]),
        ("httpx", "web", ["attack", "differencing", "--server", "http://127.0.0.1:9", "--token", "x"]),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value[:2]),
)
def test_a_missing_part_is_one_line_and_exit_4(blocked: str, extra: str, args: list[str], tmp_path: Path) -> None:
    (tmp_path / "mech.py").write_text(MECHANISM)
    (tmp_path / "t.csv").write_text("age\n30\n40\n")
    filled = [a.format(mech=tmp_path / "mech.py", tmp=tmp_path) for a in args]
    result = run_without(blocked, filled, tmp_path)
    assert result.returncode == ExitCode.MISSING_PART, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'dpwitness[{extra}]'" in lines[0], result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "m.png").exists()
    as_json = run_without(blocked, [*filled, "--json"], tmp_path) if "--json" in _options(filled) else None
    if as_json is not None:
        assert as_json.returncode == 4 and json.loads(as_json.stdout)["error"]["kind"] == "missing_part"


def _options(args: list[str]) -> set[str]:
    """The options of the command these arguments call (to know whether it takes --json)."""
    names = [a for a in args if not a.startswith("-")]
    for path, command in all_commands():
        if path and names[: len(path)] == path and not getattr(command, "commands", None):
            return {opt for p in command.params for opt in p.opts}
    return set()
