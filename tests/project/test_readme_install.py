"""README's quick-start install line covers every command of its tour (issue 27: it left out the
``sql`` extra, so the tour's SQL command exited 4). The tour runs in a subprocess where the
optional modules of every extra the line leaves out cannot be imported, as after that install."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from dpwitness.common.errors import OPTIONAL_PARTS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: Runs argv[3]'s commands with argv[1]'s top-level modules unimportable; writes their exit codes to argv[2].
RUNNER = """
import contextlib, importlib.abc, json, sys

blocked = set(filter(None, sys.argv[1].split(",")))


class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Absent())
from dpwitness.cli import app

codes = []
for words, target in json.loads(sys.argv[3]):
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(target, "w")) if target else sys.stderr
        stack.enter_context(contextlib.redirect_stdout(out))
        codes.append(app(words, standalone_mode=False))
with open(sys.argv[2], "w") as handle:
    json.dump(codes, handle)
"""


def installed_extras() -> set[str]:
    """The extras of the quick start's ``pip install -e ".[…]"`` line."""
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    found = re.search(r'pip install -e "\.\[([a-z,]+)\]"', quick_start)
    assert found, 'the quick start has no pip install -e ".[extras]" line'
    return set(found.group(1).split(","))


def tour() -> list[tuple[list[str], str | None, int]]:
    """The tour's ``dpwitness`` commands: (arguments, file their stdout goes to, documented exit code)."""
    section = README.split("## A tour", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"^```bash\n(.*?)^```", section, flags=re.M | re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            assert words[0] == "dpwitness", line
            code = re.search(r"#\s*exit (\d)", line)
            target = None
            if ">" in words:
                target = words[words.index(">") + 1]
                words = words[: words.index(">")]
            found.append((words[1:], target, int(code.group(1)) if code else 0))
    return found


def test_the_install_line_covers_every_command_of_the_tour(tmp_path: Path) -> None:
    extras = installed_extras()
    blocked = sorted(module for module, extra in OPTIONAL_PARTS.items() if extra not in extras)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*.db*", ".ipynb_checkpoints"))
    commands = tour()
    assert {c[0][0] for c in commands} >= {"release", "query", "schema", "sql", "audit", "attack"}
    with socket.socket() as listener:  # the servers of the tour (`explore`, `serve`) on a port in use: 2 once
        listener.bind(("127.0.0.1", 0))  # their modules import, 4 if the web extra is missing
        listener.listen()
        port = str(listener.getsockname()[1])
        servers = [
            (["explore", "--port", port], None, 2),
            (["serve", "--config", "examples/service.toml", "--port", port], None, 2),
        ]
        assert "dpwitness explore" in README and "dpwitness serve --config examples/service.toml" in README
        run = [*commands, *servers]
        result = tmp_path / "codes.json"
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, ",".join(blocked), str(result), json.dumps([[w, t] for w, t, _ in run])],
            cwd=tmp_path,
            env={**_environment(), "DPWITNESS_ADULT": str(tmp_path / "no-adult.csv"), "DPWITNESS_PROGRESS": "0"},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    codes = json.loads(result.read_text())
    wrong = [(" ".join(w), code, expected) for (w, _, expected), code in zip(run, codes, strict=True) if code != expected]
    assert not wrong, f"with only [{','.join(sorted(extras))}] installed: {wrong}\n{done.stderr[-2000:]}"


def _environment() -> dict[str, str]:
    """This process's environment, with the dpwitness it imported first on the path (the subprocess runs in tmp_path)."""
    import os

    import dpwitness

    source = str(Path(dpwitness.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
