"""The layer contract (pyproject.toml, ``[tool.importlinter]``), checked by import-linter: imports
point down, randomness and mechanisms need numpy only, no package has an import cycle. Imports
inside functions count; ``if TYPE_CHECKING:`` ones do not (they never run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()", "--no-cache"]


def lint(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, over the ``dpwitness`` package found in ``package_parent``."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(LINT, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_its_layer_contract() -> None:
    run = lint(ROOT / "src")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # a function-level import closes a cycle inside the witness
        (
            "witness/events/search.py",
            "def _probe() -> None:\n    from dpwitness.witness import audit  # noqa: F401\n",
            "No import cycle",
        ),
        # the randomness layer reaching up to the orchestration
        ("noise/gaussian.py", "def _probe() -> None:\n    from dpwitness import session  # noqa: F401\n", "Layers"),
        # the witness importing the attacks (the attacks use the witness, never the reverse)
        ("witness/stats.py", "def _probe() -> None:\n    from dpwitness.attacks import membership  # noqa: F401\n", "Layers"),
        # SQL running its statements on a session (it compiles to requests; the session runs them)
        ("sql/compile.py", "def _probe() -> None:\n    from dpwitness.session import sql  # noqa: F401\n", "SQL never imports"),
        # noise needing an engine
        ("noise/bits.py", "def _probe() -> None:\n    import polars  # noqa: F401\n", "numpy only"),
    ],
)
def test_the_contract_catches_a_breach(tmp_path: Path, module: str, line: str, contract: str) -> None:
    """The check is not vacuous: each breach, written as people write them, breaks its contract."""
    shutil.copytree(ROOT / "src" / "dpwitness", tmp_path / "dpwitness", ignore=shutil.ignore_patterns("static", "__pycache__"))
    with (tmp_path / "dpwitness" / module).open("a", encoding="utf-8") as handle:
        handle.write("\n\n" + line)
    run = lint(tmp_path)
    assert run.returncode != 0, run.stdout
    broken = [text for text in run.stdout.splitlines() if text.endswith("BROKEN")]
    assert any(contract in text for text in broken) or contract in run.stdout.split("Broken contracts")[-1], run.stdout
