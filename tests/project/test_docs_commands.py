"""Every command of README.md and docs/guide.md runs as written, on a clone without ../shared.

Each test lays out a temporary folder like a fresh clone (a copy of ``examples/``), points
``DPWITNESS_ADULT`` at a file that does not exist (so nothing finds ../shared), and runs the
documented commands there: ``dpwitness …`` lines through the CLI itself (exit codes as the
line's ``# exit N`` comment says, 0 otherwise), ``dpwitness serve`` and ``dpwitness explore`` as
real servers on 127.0.0.1 with the ``curl`` lines and the client's Python block against them, and
the Python blocks of each page in order in one namespace. The few lines that are not run are
listed in ``NOT_RUN`` with the reason; a test checks that nothing else is left out.

Every output the pages show is checked against what the code prints (scripts/docs_outputs.py):
each ``<!-- output of: … -->`` block is regenerated and compared exactly, and every figure of a
result comment (``mech.scale  # 0.1``, ``dpwitness witness … # exit 1: worst log ratio 8``) must
be one the statement or the command shows.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "guide.md"]
NOT_RUN = {
    "pip install": "installs packages: the test runs in the installed checkout",
    "bash scripts/check": "the whole CI run; CI runs it",
    "python3 -m pytest": "runs the test suite itself",
    "cat test-output/": "prints a file the browser tests write",
    "python bench/": "a 60 s benchmark (tests/project/test_bench_smoke.py runs the benchmarks small)",
}
SERVERS = ("dpwitness serve", "dpwitness explore")
runner = CliRunner()
_spec = importlib.util.spec_from_file_location("docs_outputs", ROOT / "scripts" / "docs_outputs.py")
assert _spec is not None and _spec.loader is not None
docs_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_outputs)


def blocks(page: Path, language: str) -> list[str]:
    """The fenced blocks of one language, in page order."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def commands(block: str) -> list[tuple[str, int, str | None]]:
    """A bash block's commands (continuations joined, ``&&`` split) with their documented exit
    codes and their comments (a result comment: docs_outputs.stale_figures)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        code = re.search(r"#\s*exit (\d)", line)
        text = shlex.join(words)
        for part in text.split(" && "):
            found.append((part.strip(), int(code.group(1)) if code else 0, docs_outputs.command_comment(line)))
    return found


def skipped(command: str) -> bool:
    return any(command.startswith(prefix) for prefix in NOT_RUN)


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder laid out like a fresh clone's (examples/ only), as the working directory, without Adult."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*.db*", ".ipynb_checkpoints"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPWITNESS_ADULT", str(tmp_path / "no-adult-here.csv"))
    monkeypatch.setenv("DPWITNESS_PROGRESS", "0")
    return tmp_path


def page_commands(page: Path) -> list[list[tuple[str, int, str | None]]]:
    return [commands(block) for block in blocks(page, "bash")]


def test_every_command_is_run_or_named_with_a_reason() -> None:
    every = [c for page in PAGES for block in page_commands(page) for c, _, _ in block]
    assert len(every) >= 30
    for command in every:
        assert command.startswith(("dpwitness ", "curl ")) or skipped(command), command
    assert sum(1 for c in every if c.startswith("dpwitness ")) >= 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cli_commands_exit_as_documented(page: Path, clone: Path) -> None:
    ran = 0
    for block in page_commands(page):
        if any(c.startswith(SERVERS) for c, _, _ in block):
            continue  # test_the_service_and_the_explorer_serve_as_documented
        for command, code, comment in block:
            if skipped(command):
                continue
            args, _, redirect = command.partition(" '>' ")  # `dpwitness schema FILE > OUT`: stdout to a file
            result = runner.invoke(app, shlex.split(args)[1:])
            assert result.exit_code == code, (command, result.output[-2000:], repr(result.exception))
            stale = docs_outputs.stale_figures(comment or "", result.output)
            assert not stale, (command, comment, stale, result.output[-2000:])
            if redirect:
                Path(redirect.strip()).write_text(result.stdout, encoding="utf-8")
            ran += 1
    assert ran >= 5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(clone: Path) -> Iterator[Any]:
    """Starts a documented server command on a free port; stops it at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(command: str) -> int:
        port = free_port()
        args = [sys.executable, "-m", "dpwitness", *shlex.split(command)[1:], "--port", str(port)]
        started.append(subprocess.Popen(args, cwd=clone, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if started[-1].poll() is not None:
                raise AssertionError((command, started[-1].stdout.read().decode() if started[-1].stdout else ""))
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
                return port
            except urllib.error.HTTPError:
                return port  # listening (the service answers / with 404)
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{command} did not listen within 60 s")

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=20)


def test_the_service_and_the_explorer_serve_as_documented(server: Any, clone: Path) -> None:
    served = 0
    for page in PAGES:
        for block in page_commands(page):
            port = None
            for command, code, _ in block:
                if skipped(command):
                    continue
                if command.startswith(SERVERS):
                    port = server(command)
                    served += 1
                elif command.startswith("curl "):
                    assert port is not None, command
                    args = [a.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for a in shlex.split(command)]
                    result = subprocess.run([*args, "--fail-with-body"], capture_output=True, text=True, timeout=60)
                    assert result.returncode == code, (command, result.stdout, result.stderr)
                    assert '"error"' not in result.stdout and "detail" not in result.stdout, result.stdout
            if port is not None and page.name == "guide.md" and any(c.startswith("dpwitness serve") for c, _, _ in block):
                client = next(b for b in blocks(page, "python") if "serve.client import Client" in b)
                namespace: dict[str, Any] = {}
                stale = docs_outputs.run_python_block(client.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), namespace, "client")
                assert not stale, stale
    assert served >= 2  # the guide's explore and serve


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page: Path, clone: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    ran, stale = 0, []
    for index, block in enumerate(blocks(page, "python")):
        if "serve.client import Client" in block or "local_session" in block:
            continue  # against the server above; Spark below
        stale += docs_outputs.run_python_block(block, namespace, f"{page.name}:python block {index}")
        ran += 1
    assert ran >= 2
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_output_block_is_the_codes_output(page: Path) -> None:
    shown = docs_outputs.output_blocks(page)
    with docs_outputs.clone() as folder:
        for command, output in shown:
            assert "--seed" in command, f"{command}: an output shown must be seeded"
            code, produced = docs_outputs.run_command(command, folder)
            assert code == 0, (command, produced)
            assert produced.rstrip() == output.rstrip(), f"{command}: stale; python3 scripts/docs_outputs.py --write"
    if page.name == "README.md":
        assert shown, "the README shows at least one output"


@pytest.mark.spark
def test_the_spark_block_runs(spark: Any, clone: Path) -> None:
    block = next(b for b in blocks(ROOT / "docs" / "guide.md", "python") if "local_session" in b)
    namespace: dict[str, Any] = {}
    stale = docs_outputs.run_python_block(block, namespace, "guide.md:spark")
    assert not stale, stale
    assert namespace["session"].spent.epsilon == pytest.approx(1.0)  # the mean and the histogram, 0.5 each


def test_a_result_comment_is_held_to_every_figure_it_states() -> None:
    shown = repr((0.1, 0.020000000000000004, 0.2995732273553992))
    assert docs_outputs.stale_figures("0.1, 0.02, 0.2996 (= b·ln 20)", shown) == []  # parentheses explain
    assert docs_outputs.stale_figures("0.1, 0.02, 0.2995", shown) == ["0.2995"]  # rounded, not cut
    assert docs_outputs.stale_figures("0.1, 0.02, 0.2995…", shown) == []  # cut where it ends in …
    assert docs_outputs.stale_figures("'violated', 7.99, 'X ≤ 47.7303'", "('violated', 7.863, 'X > 53.1275')") == [
        "7.99",
        "47.7303",
        "'X ≤ 47.7303'",
    ]
    assert docs_outputs.stale_figures("exit 1: worst log ratio 8 = Δ²/ε", "ratio 8 > claimed") == []
    assert docs_outputs.stale_figures("from 20,000 runs", "from 20,000 runs per input") == []
    assert docs_outputs.stale_figures("Δ = 1", "sensitivity=0.6") == ["1"]  # a whole number is exact
    assert docs_outputs.command_comment("dpwitness sql f.csv \"SELECT '#' FROM t\"  # exit 2: bad") == "exit 2: bad"
