"""docs/coming-from.md: the dpwitness side of the ten tasks runs from the page itself, and the page's
line-count table is what the code blocks hold, with dpwitness never longer than the shortest anchor.

The anchors' blocks (OpenDP, diffprivlib, Tumult) run in their own venvs through
bench/anchors/coming_from.py, which also holds the page's parser used here.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dpwitness.mechanisms.release import Release

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("coming_from", ROOT / "bench" / "anchors" / "coming_from.py")
assert SPEC is not None and SPEC.loader is not None
COMING_FROM: Any = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(COMING_FROM)
TASKS = COMING_FROM.tasks()
EXPECTED = [
    "Count with a filter", "Grouped mean", "Histogram over undeclared keys", "Median", "Gaussian histogram with δ",
    "A budget split", "Reopening a ledger", "Two-column grouping", "A Parquet source", "A pandas source",
]  # fmt: skip


def test_the_page_has_the_ten_tasks_each_with_dpwitness_code() -> None:
    assert [re.sub(r"^\d+\. ", "", title) for title, _ in TASKS] == EXPECTED
    assert all("dpwitness" in code for _, code in TASKS)


@pytest.mark.parametrize(("title", "code"), TASKS, ids=[t for t, _ in TASKS])
def test_the_dpwitness_code_runs(title: str, code: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*.db*"))
    monkeypatch.chdir(tmp_path)
    *body, last = code["dpwitness"].rstrip().splitlines()
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(body), title, "exec"), namespace)
    result = eval(compile(last, title, "eval"), namespace)
    if title.startswith("7."):  # the reopened ledger: what remains of ε = 1 after 0.5
        assert result.epsilon == pytest.approx(0.5)
    else:
        assert isinstance(result, Release) and result.epsilon > 0, result


def test_the_table_counts_the_blocks_and_dpwitness_is_never_longer() -> None:
    page = COMING_FROM.PAGE.read_text(encoding="utf-8")
    for title, code in TASKS:
        row = next(line for line in page.splitlines() if line.startswith(f"| {title} |"))
        cells = [c.strip() for c in row.strip("|").split("|")][1:5]
        counted = [str(COMING_FROM.lines_of_code(code[lib])) if lib in code else "—" for lib in COMING_FROM.LIBRARIES]
        assert cells == counted, (title, cells, counted)
        anchors = [COMING_FROM.lines_of_code(code[lib]) for lib in COMING_FROM.LIBRARIES[1:] if lib in code]
        if anchors:
            assert COMING_FROM.lines_of_code(code["dpwitness"]) <= min(anchors), title
