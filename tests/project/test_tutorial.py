"""The tutorial notebook runs from top to bottom (on Adult, or on its generated stand-in)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "tutorial.ipynb"


def _hook() -> Any:
    """docs/notebook_hook.py, the mkdocs hook that puts the executed notebook in the site."""
    spec = importlib.util.spec_from_file_location("notebook_hook", NOTEBOOK.parents[1] / "docs" / "notebook_hook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("adult", ["as found", "absent"])
def test_the_tutorial_runs(adult: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if adult == "absent":
        monkeypatch.setenv("DPWITNESS_ADULT", str(tmp_path / "no-adult.csv"))  # the generated table instead
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env={**os.environ})
    outputs = {i: cell.get("outputs", []) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"}
    errors = [o for cell in outputs.values() for o in cell if o.get("output_type") == "error"]
    assert not errors
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for cell in outputs.values() for o in cell
    )
    assert "claim holds" in text and "VIOLATED" in text and "refused:" in text and "advantage" in text
    assert "verdict='ok'" in text  # the release's own audit reaches a verdict (enough samples for power)
    page = _hook().render(notebook, True)  # the site's tutorial page, from these outputs
    assert "OK: ε_lb" in page and "<svg" in page and "](../docs/" not in page
    html = "".join(str(o.get("data", {}).get("text/html", "")) for cell in outputs.values() for o in cell)
    assert "<table>" in html and "<svg" in html  # the report's key table and chart, rendered
