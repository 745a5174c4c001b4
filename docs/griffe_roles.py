"""A griffe extension for the API reference: Sphinx roles in docstrings become cross-references.

The docstrings use Sphinx's roles (``:class:`~dpwitness.query.queries.Query```, ``:func:`audit```),
which mkdocstrings would print as they are. When the package is loaded, each role is rewritten
to an autorefs link (``[`Query`][dpwitness.query.queries.Query]``) when its target is a public object
of a module an API page renders (``::: module`` in docs/api/), and to plain code otherwise. A ``~``
shows the last name only, as in Sphinx. The source files are not changed.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|type):`(~?)([^`<>]+?)`")
#: The modules the API pages render (their ``::: module`` lines).
PAGES = frozenset(
    line.removeprefix(":::").strip()
    for page in (Path(__file__).resolve().parent / "api").glob("*.md")
    for line in page.read_text(encoding="utf-8").splitlines()
    if line.startswith(":::")
)


def _public(path: str) -> bool:
    return not any(part.startswith("_") for part in path.split("."))


def _documented(package: griffe.Module, path: str) -> str | None:
    """The canonical path of ``path`` when a page renders it (its module has a page, and it and its
    parents up to the module have docstrings, which is what mkdocstrings shows), else None."""
    if not path.startswith(package.path + "."):
        return None
    try:
        target: Any = package[path.removeprefix(package.path + ".")]
        while getattr(target, "is_alias", False):
            target = target.final_target
    except Exception:  # not an object of the package, or an alias that does not resolve
        return None
    canonical = str(target.canonical_path)
    if not _public(canonical) or target.module.path not in PAGES:
        return None
    scope = target
    while not scope.is_module:
        if scope.docstring is None:
            return None
        scope = scope.parent
    return canonical


def _resolve(obj: griffe.Object | griffe.Alias, package: griffe.Module, name: str) -> str | None:
    """The full path a role's target names, seen from the object whose docstring holds it."""
    name = name.strip().removesuffix("()").lstrip(".")
    candidates = [name] if name.startswith(package.path + ".") else []
    scope: Any = obj
    while scope is not None:  # the object's class, its module, the package: Sphinx's lookup order
        with contextlib.suppress(Exception):  # not a name in this scope
            candidates.append(scope.resolve(name.split(".")[0]) + name[len(name.split(".")[0]) :])
        candidates.append(f"{scope.path}.{name}")
        scope = scope.parent
    for candidate in candidates:
        found = _documented(package, candidate)
        if found is not None:
            return found
    return None


def rewrite(text: str, obj: griffe.Object | griffe.Alias, package: griffe.Module) -> str:
    """The docstring with every role a link (or plain code when nothing renders its target)."""

    def replace(match: re.Match[str]) -> str:
        short, name = match.group(1) == "~", match.group(2).strip()
        shown = name.removesuffix("()").split(".")[-1] if short else name
        target = _resolve(obj, package, name)
        return f"[`{shown}`][{target}]" if target else f"`{shown}`"

    return ROLE.sub(replace, text)


class SphinxRolesToLinks(griffe.Extension):
    """Rewrites the roles of every docstring of a package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()

        def walk(obj: Any) -> None:
            if id(obj) in seen or getattr(obj, "is_alias", False):
                return
            seen.add(id(obj))
            if obj.docstring is not None and ":`" in obj.docstring.value:
                obj.docstring.value = rewrite(obj.docstring.value, obj, pkg)
            for member in obj.members.values():
                walk(member)

        walk(pkg)
