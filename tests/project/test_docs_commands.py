"""Every command of README.md and docs/guide.md runs as written, on a clone without ../shared.

Each test lays out a temporary folder like a fresh clone (a copy of ``examples/``), points
``DPWITNESS_ADULT`` at a file that does not exist (so nothing finds ../shared), and runs the
documented commands there: ``dpwitness …`` lines through the CLI itself (exit codes as the
line's ``# exit N`` comment says, 0 otherwise), ``dpwitness serve`` and ``dpwitness explore`` as
real servers on 127.0.0.1 with the ``curl`` lines and the client's Python block against them, and
the Python blocks of each page in order in one namespace. The few lines that are not run are
listed in ``NOT_RUN`` with the reason; a test checks that nothing else is left out.
"""

from __future__ import annotations

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


def blocks(page: Path, language: str) -> list[str]:
    """The fenced blocks of one language, in page order."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def commands(block: str) -> list[tuple[str, int]]:
    """A bash block's commands (continuations joined, ``&&`` split) with their documented exit codes."""
    joined = re.sub(r"\\\n\s*", " ", block)
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        code = re.search(r"#\s*exit (\d)", line)
        text = shlex.join(words)
        for part in text.split(" && "):
            found.append((part.strip(), int(code.group(1)) if code else 0))
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


def page_commands(page: Path) -> list[list[tuple[str, int]]]:
    return [commands(block) for block in blocks(page, "bash")]


def test_every_command_is_run_or_named_with_a_reason() -> None:
    every = [c for page in PAGES for block in page_commands(page) for c, _ in block]
    assert len(every) >= 30
    for command in every:
        assert command.startswith(("dpwitness ", "curl ")) or skipped(command), command
    assert sum(1 for c in every if c.startswith("dpwitness ")) >= 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cli_commands_exit_as_documented(page: Path, clone: Path) -> None:
    ran = 0
    for block in page_commands(page):
        if any(c.startswith(SERVERS) for c, _ in block):
            continue  # test_the_service_and_the_explorer_serve_as_documented
        for command, code in block:
            if skipped(command):
                continue
            args, _, redirect = command.partition(" '>' ")  # `dpwitness schema FILE > OUT`: stdout to a file
            result = runner.invoke(app, shlex.split(args)[1:])
            assert result.exit_code == code, (command, result.output[-2000:], repr(result.exception))
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
            for command, code in block:
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
            if port is not None and page.name == "guide.md" and any(c.startswith("dpwitness serve") for c, _ in block):
                client = next(b for b in blocks(page, "python") if "serve.client import Client" in b)
                namespace: dict[str, Any] = {}
                exec(compile(client.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), f"{page.name}:client", "exec"), namespace)
    assert served >= 2  # the guide's explore and serve


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page: Path, clone: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    ran = 0
    for index, block in enumerate(blocks(page, "python")):
        if "serve.client import Client" in block or "local_session" in block:
            continue  # against the server above; Spark below
        exec(compile(block, f"{page.name}:python block {index}", "exec"), namespace)
        ran += 1
    assert ran >= 2


@pytest.mark.spark
def test_the_spark_block_runs(spark: Any, clone: Path) -> None:
    block = next(b for b in blocks(ROOT / "docs" / "guide.md", "python") if "local_session" in b)
    namespace: dict[str, Any] = {}
    exec(compile(block, "guide.md:spark", "exec"), namespace)
    assert namespace["session"].spent.epsilon == pytest.approx(1.0)  # the mean and the histogram, 0.5 each
