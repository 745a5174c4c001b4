"""The lock (requirements/lock.txt) pins a version of everything pyproject.toml asks for, inside its ranges."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_normal(name)] = version
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    out, todo, seen = [Requirement(r) for r in project["dependencies"]], ["test"], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            requirement = Requirement(text)
            if _normal(requirement.name) == "dpwitness":
                todo.extend(requirement.extras)
            else:
                out.append(requirement)
    return out


def test_every_requirement_is_pinned_inside_its_range() -> None:
    pins = _locked()
    problems = []
    for requirement in _requirements():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        version = pins.get(_normal(requirement.name))
        if version is None:
            problems.append(f"{requirement.name}: not in the lock")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}: locked {version} is outside {requirement.specifier}")
    assert not problems, "requirements/lock.txt is stale: " + "; ".join(problems) + " (run bash scripts/lock)"


def test_the_known_breaking_releases_are_excluded() -> None:
    """pytest 9.2 broke schemathesis 4.32 overnight; pyspark 4 does not support pandas 3."""
    by_name = {_normal(r.name): r for r in _requirements()}
    assert not by_name["pytest"].specifier.contains("9.2.0")
    assert not by_name["pandas"].specifier.contains("3.0.0")
    assert _locked()["pytest"].startswith("8.")
