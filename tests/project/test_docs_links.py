"""Every relative link of README.md and docs/*.md points at a file that exists, and every
``#anchor`` at a heading id the site generates (Python-Markdown's toc, as mkdocs renders it)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import markdown
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
GENERATED = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)


@cache
def anchors(page: Path) -> frozenset[str]:
    """The ids of a page's headings as the site generates them."""
    html = markdown.markdown(page.read_text(encoding="utf-8"), extensions=["toc", "tables", "fenced_code"])
    return frozenset(re.findall(r'\bid="([^"]+)"', html))


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_checker_sees_links_and_anchors() -> None:
    assert "results-the-black-box-auditor-issue-10-benchbench_auditpy" in anchors(ROOT / "docs" / "benchmarks.md")
    assert sum(len(links(p)) for p in PAGES) > 50
    assert "docs/benchmarks.md#results-the-discrete-gaussian-issue-12" in links(ROOT / "README.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = page if not path else (page.parent / path).resolve()
        if file == GENERATED and not anchor:
            continue  # docs/notebook_hook.py writes it at build time (the executed tutorial notebook)
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with id {anchor!r}")
    assert not broken, broken
