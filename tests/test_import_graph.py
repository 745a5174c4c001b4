"""The package's own import graph has no cycle, and the low layers never import their judges.

Every ``import`` of a ``dpwitness`` module counts, at module level or inside a function;
imports under ``if TYPE_CHECKING:`` do not (they never run). ``from package import module``
is an edge to that module, not to the package's ``__init__`` (which Python imports first anyway).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "dpwitness"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                skipped.update(id(inner) for inner in ast.walk(statement))
    return skipped


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the package modules it imports (at run time)."""
    paths = {module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in paths]
                targets = submodules if len(submodules) == len(node.names) else [base, *submodules]
            else:
                continue
            edges.update(target for target in targets if target in paths and target != name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("low", ["dpwitness.noise", "dpwitness.mechanisms", "dpwitness.release", "dpwitness.report"])
def test_low_layers_do_not_import_the_witness_or_the_attacks(low: str) -> None:
    imported = import_graph()[low]
    assert not {m for m in imported if m.startswith(("dpwitness.witness", "dpwitness.attacks", "dpwitness.cli"))}, imported


def test_the_witness_never_imports_the_attacks() -> None:
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith("dpwitness.witness"):
            assert not {m for m in imported if m.startswith("dpwitness.attacks")}, name


def test_the_checker_finds_a_cycle(tmp_path: Path) -> None:
    """The checker is not vacuous: a function-level import closes a cycle; a TYPE_CHECKING one does not."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.sub import judge\n")
    (package / "low.py").write_text("def f():\n    from pkg.sub.judge import g\n")
    (package / "sub" / "judge.py").write_text("from pkg import low\n")
    (package / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import low\n")
    (package / "lower.py").write_text("from pkg.typed import x\n")
    graph = import_graph(package)
    assert graph["pkg.low"] == {"pkg.sub.judge"} and graph["pkg.sub.judge"] == {"pkg.low"}
    assert graph["pkg.typed"] == set() and graph["pkg.sub"] == {"pkg.sub.judge"}
    assert cycles(graph) == [["pkg.low", "pkg.sub.judge"]]
