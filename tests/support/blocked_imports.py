"""Run the CLI in a subprocess where some modules cannot be imported (a real import failure, as on
a machine without an optional extra): a ``sitecustomize`` that refuses them from ``sys.meta_path``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BLOCKER = """
import os, sys
BLOCKED = tuple(filter(None, os.environ.get("DPWITNESS_TEST_BLOCK", "").split(",")))
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
"""


def blocking_site(tmp_path: Path) -> Path:
    """A folder holding the blocking ``sitecustomize.py`` (put it on PYTHONPATH)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    return site


def run_without(blocked: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python -m dpwitness ARGS`` with the comma-separated modules ``blocked`` unimportable."""
    env = {**os.environ, "PYTHONPATH": str(blocking_site(tmp_path)), "DPWITNESS_TEST_BLOCK": blocked, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "dpwitness", *args], env=env, capture_output=True, text=True, timeout=120)
