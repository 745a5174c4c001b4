"""Run the anchors' code of docs/coming-from.md (OpenDP, diffprivlib, Tumult) and count lines.

    .venv-anchors/bin/python bench/anchors/coming_from.py [--json]     # OpenDP 0.16, diffprivlib 0.6.6
    bash bench/anchors/coming_from_tumult.sh [--json]                   # Tumult Analytics 0.21 (its own venv)

The page is the one source of truth: every ```python block whose first line is ``# OpenDP 0.16``,
``# diffprivlib 0.6.6``, ``# Tumult Analytics 0.21`` or ``# dpwitness`` is one library's code for the task of its ``## N.``
heading. Each anchor block runs in a fresh namespace, in a temporary folder holding a copy of
examples/, in this interpreter, when it can import that library (the anchors venv:
``bash bench/anchors/setup.sh``; Tumult's venv: bench/anchors/coming_from_tumult.sh); a result
with ``collect`` (a Spark DataFrame) is collected. Spark runs local[2] on 127.0.0.1 without UI.
The table printed gives each task's lines of code and whether the block ran here. tests/project/test_coming_from.py
imports ``tasks`` and ``lines_of_code`` from here to run the dpwitness blocks and check the page's
table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "coming-from.md"
LIBRARIES = ("dpwitness", "OpenDP 0.16", "diffprivlib 0.6.6", "Tumult Analytics 0.21")
MODULES = {"OpenDP 0.16": "opendp", "diffprivlib 0.6.6": "diffprivlib", "Tumult Analytics 0.21": "tmlt.analytics"}


def tasks(page: Path = PAGE) -> list[tuple[str, dict[str, str]]]:
    """Each task's title and its code per library, in page order."""
    found: list[tuple[str, dict[str, str]]] = []
    for section in re.split(r"^## ", page.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        code = {}
        for block in re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S):
            first = block.splitlines()[0].removeprefix("#").strip()
            if first in LIBRARIES:
                code[first] = block
        found.append((title, code))
    return found


def lines_of_code(code: str) -> int:
    """Lines that are neither blank nor only a comment (imports count)."""
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def run_block(code: str, folder: Path) -> tuple[bool, str, float]:
    """Runs one block in ``folder``; (ran, error, seconds)."""
    here = Path.cwd()
    os.chdir(folder)
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            *body, last = code.rstrip().splitlines()
            namespace = {"__name__": "__coming_from__"}
            exec(compile("\n".join(body), "coming-from.md", "exec"), namespace)
            result = eval(compile(last, "coming-from.md", "eval"), namespace)
            if hasattr(result, "collect"):
                result.collect()
        return True, "", time.perf_counter() - started
    except Exception as error:  # report every failure in the table, do not stop at the first
        return False, f"{type(error).__name__}: {error}"[:300], time.perf_counter() - started
    finally:
        os.chdir(here)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        "--master local[2] --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 "
        "--conf spark.ui.enabled=false pyspark-shell",
    )
    here = [lib for lib in LIBRARIES[1:] if importlib.util.find_spec(MODULES[lib].split(".")[0]) is not None]
    rows = []
    with tempfile.TemporaryDirectory(prefix="coming-from-") as folder:
        shutil.copytree(ROOT / "examples", Path(folder) / "examples", ignore=shutil.ignore_patterns("*.db*"))
        for title, code in tasks():
            row: dict[str, object] = {"task": title}
            for library in LIBRARIES[1:]:
                if library in code and library in here:
                    ran, error, seconds = run_block(code[library], Path(folder))
                    lines = lines_of_code(code[library])
                    row[library] = {"lines": lines, "ran": ran, "error": error, "seconds": round(seconds, 3)}
                elif library in code:
                    row[library] = {"lines": lines_of_code(code[library]), "ran": None, "error": "not in this venv", "seconds": 0}
                else:
                    row[library] = None
            row["dpwitness"] = {"lines": lines_of_code(code["dpwitness"])}
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'task':36} {'dpwitness':>9} {'OpenDP':>12} {'diffprivlib':>12} {'Tumult':>12}")
    for row in rows:
        cells = []
        for library in LIBRARIES[1:]:
            cell = row[library]
            state = "—" if cell is None else {True: "ran", False: "FAILED", None: "not here"}[cell["ran"]]  # type: ignore[index]
            cells.append(state if cell is None else f"{cell['lines']} {state}")  # type: ignore[index]
        print(f"{row['task']:36} {row['dpwitness']['lines']:>9} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}")  # type: ignore[index]
        for library in LIBRARIES[1:]:
            cell = row[library]
            if cell is not None and cell["ran"] is False:  # type: ignore[index]
                print(f"    {library}: {cell['error']}")  # type: ignore[index]


if __name__ == "__main__":
    main()
