"""mkdocs hook: the tutorial notebook, executed at build time, as the site's page ``tutorial.md``.

examples/tutorial.ipynb is committed without outputs. At each build it runs top to bottom with
nbclient (in the docs extra, with nbformat and ipykernel) in a temporary folder, and its cells and
outputs become one markdown page: markdown cells as they are, code cells as Python blocks, text
outputs as text blocks, HTML outputs (a release, the report's table and chart) as HTML, images as
inline PNG. A cell that raises fails the build. Set DPWITNESS_DOCS_NOTEBOOK=0 to skip running it
(the page then shows the code without outputs, and says so).
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "tutorial.ipynb"
PAGE = "tutorial.md"


def _execute(notebook: Any) -> bool:
    if os.environ.get("DPWITNESS_DOCS_NOTEBOOK") == "0":
        return False
    import nbclient

    with tempfile.TemporaryDirectory(prefix="dpwitness-tutorial-") as folder:
        client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": folder}})
        client.execute(env={**os.environ, "DPWITNESS_PROGRESS": "0"})
    return True


def _output(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"```text\n{''.join(output.get('text', '')).rstrip()}\n```\n"
    if kind == "error":
        raise RuntimeError(f"the tutorial notebook raised {output.get('ename')}: {output.get('evalue')}")
    data = output.get("data", {})
    if "image/png" in data:
        return f'<p><img alt="output" src="data:image/png;base64,{data["image/png"].strip()}"></p>\n'
    if "text/html" in data:
        page = re.sub(r"\n\s*\n", "\n", "".join(data["text/html"]).strip())
        return f'<div class="notebook-output">\n{page}\n</div>\n'
    if "text/plain" in data:
        return f"```text\n{''.join(data['text/plain']).rstrip()}\n```\n"
    return ""


def render(notebook: Any, executed: bool) -> str:
    """The notebook as one markdown page."""
    parts = [] if executed else ["*The notebook was not run for this build (DPWITNESS_DOCS_NOTEBOOK=0).*\n"]
    for cell in notebook.cells:
        source = "".join(cell.source).rstrip()
        if cell.cell_type == "markdown":
            parts.append(source.replace("](../docs/", "](") + "\n")
        elif cell.cell_type == "code" and source:
            parts.append(f"```python\n{source}\n```\n")
            parts.extend(_output(output) for output in cell.get("outputs", []))
    link = html.escape("examples/tutorial.ipynb")
    parts.append(f"\n*This page is {link}, run when the site was built.*\n")
    return "\n".join(parts)


def on_files(files: Files, config: Any) -> Files:
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    executed = _execute(notebook)
    files.append(File.generated(config, PAGE, content=render(notebook, executed)))
    return files
