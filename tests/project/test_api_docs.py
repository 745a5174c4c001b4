"""The API reference: no raw Sphinx role reaches the site, and every public parameter is documented.

The modules are loaded with griffe and the site's own extension (docs/griffe_roles.py), as
mkdocstrings loads them. A parameter counts as documented when its name appears as a word in its
function's docstring (or, for a method, its class's; for ``__init__``, the class's). The
parameters undocumented when this test was written are listed in tests/project/api_undocumented.txt: a
new undocumented one fails, and so does an entry that has since been documented (delete it), so
the list only shrinks. ``python3 tests/project/test_api_docs.py`` rewrites the list from the code.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("api_undocumented.txt")


def _roles_module() -> Any:
    spec = importlib.util.spec_from_file_location("griffe_roles", ROOT / "docs" / "griffe_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROLES = _roles_module()


@pytest.fixture(scope="module")
def package() -> Any:
    extensions = griffe.load_extensions(f"{ROOT / 'docs' / 'griffe_roles.py'}:SphinxRolesToLinks")
    return griffe.load("dpwitness", search_paths=[str(ROOT / "src")], extensions=extensions)


def rendered(package: Any) -> list[Any]:
    """The objects the API pages render: public members of the modules named by ``:::``."""
    found: list[Any] = []

    def walk(obj: Any) -> None:
        found.append(obj)
        for name, member in obj.members.items():
            if member.is_alias or (name.startswith("_") and name != "__init__"):
                continue
            if member.is_function or member.is_class or member.is_attribute:
                walk(member)

    for path in sorted(ROLES.PAGES):
        walk(package if path == "dpwitness" else package[path.removeprefix("dpwitness.")])
    return found


def undocumented(package: Any) -> set[str]:
    missing = set()
    for obj in rendered(package):
        if not obj.is_function:
            continue
        owner = obj.parent
        if obj.name == "__init__" and "dataclass" in owner.labels:
            continue  # generated from the fields: a result's attributes, not a call users write
        text = obj.docstring.value if obj.docstring else ""
        text += owner.docstring.value if owner.is_class and owner.docstring else ""
        for parameter in obj.parameters:
            if parameter.name in {"self", "cls"} or parameter.name.startswith("_"):
                continue
            if parameter.kind.value in {"variadic positional", "variadic keyword"}:
                continue
            if not re.search(rf"(?<!\w){re.escape(parameter.name)}(?!\w)", text):
                missing.add(f"{obj.path}({parameter.name})")
    return missing


def test_no_raw_sphinx_role_reaches_the_site(package: Any) -> None:
    raw = [o.path for o in rendered(package) if o.docstring is not None and re.search(r":[a-z:]+:`", o.docstring.value)]
    assert not raw, raw
    text = ROLES.rewrite(":class:`~dpwitness.query.queries.Query` and :func:`dpwitness.nowhere`", package["session"], package)
    assert text == "[`Query`][dpwitness.query.queries.Query] and `dpwitness.nowhere`"


def test_every_public_parameter_is_documented(package: Any) -> None:
    baseline = {line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")}
    missing = undocumented(package)
    assert sorted(missing - baseline) == [], "document these parameters in their docstrings"
    assert sorted(baseline - missing) == [], f"documented now: delete these lines from {BASELINE.name}"


if __name__ == "__main__":
    extensions = griffe.load_extensions(f"{ROOT / 'docs' / 'griffe_roles.py'}:SphinxRolesToLinks")
    names = sorted(undocumented(griffe.load("dpwitness", search_paths=[str(ROOT / "src")], extensions=extensions)))
    header = "# Public parameters not yet documented (tests/project/test_api_docs.py): this list may only shrink.\n"
    BASELINE.write_text(header + "".join(f"{name}\n" for name in names), encoding="utf-8")
    print(f"{len(names)} undocumented public parameters written to {BASELINE}")
