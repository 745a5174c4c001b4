"""The findings table (bench/anchors/findings_catalogue.py, bench/anchors/findings.py, docs/findings.md).

Without any release venv (CI builds none): the catalogue is well formed (columns JSON that parses,
verdicts and kinds from the allowed sets, every function defined, every published bug with its
public reference, the releases that have it and those that fixed it or a control), and the page
lists a row for every entry that applies to every release its own "releases" section says was built.
With ``.venv-versions`` (bench/anchors/versions_setup.sh), one real check of a cheap entry in one
release venv gets the verdict the catalogue expects for that release.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANCHORS = ROOT / "bench" / "anchors"
PAGE = ROOT / "docs" / "findings.md"
VERSIONS = ROOT / ".venv-versions"
sys.path[:0] = [str(ANCHORS), str(ROOT / "bench")]

import findings  # noqa: E402
import findings_catalogue as catalogue  # noqa: E402


@pytest.mark.parametrize("entry", catalogue.CATALOGUE, ids=lambda entry: entry.name)
def test_entry_is_well_formed(entry: catalogue.Entry) -> None:
    columns = json.loads(entry.columns)
    assert isinstance(columns, dict) and columns, entry.columns
    for name, spec in columns.items():
        assert isinstance(name, str)
        assert isinstance(spec, str) or (isinstance(spec, list) and spec), (name, spec)
    assert entry.kind in catalogue.KINDS
    assert entry.library in findings.LIBRARY_ORDER
    assert callable(getattr(catalogue, entry.name, None)), f"no function {entry.name} in findings_catalogue.py"
    assert entry.expected, "no expected verdict"
    for releases, verdict in entry.expected:
        assert verdict in catalogue.VERDICTS, verdict
        assert releases.low in entry.applies, f"{releases} outside {entry.applies}"
    assert entry.epsilon > 0 and entry.max_seconds > 0
    if entry.kind == "control":
        assert all(verdict != "violated" for _, verdict in entry.expected), "a control expects no finding"


@pytest.mark.parametrize("entry", [e for e in catalogue.CATALOGUE if e.kind == "published"], ids=lambda entry: entry.name)
def test_published_bug_has_reference_and_releases(entry: catalogue.Entry) -> None:
    assert re.match(r"https://\S+$", entry.reference), f"no public reference URL: {entry.reference!r}"
    assert entry.buggy is not None, "no buggy release range"
    assert entry.expected_for(entry.buggy.low) == "violated", "the first buggy release must expect a finding"
    if entry.fixed is None:
        # no release fixed it yet: its correct usage is the control
        control = catalogue.BY_NAME.get(entry.control)
        assert control is not None and control.kind == "control", f"no fixed range and no control {entry.control!r}"
        assert control.library == entry.library
    else:
        assert entry.expected_for(entry.fixed.low) in ("ok", "not violated"), "a fixed release must expect no finding"
        assert entry.fixed.low not in entry.buggy, "the buggy and fixed ranges overlap"


def test_range_bounds() -> None:
    releases = catalogue.Range("0.12.0", "0.15.0")
    assert "0.12.0" in releases and "0.14.2" in releases
    assert "0.15.0" not in releases and "0.11.1" not in releases and "0.15.10" not in releases
    assert "1.0" in catalogue.Range("0.15.0")


def _page_rows() -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """The releases the page says were built, and its table's (library, version, entry) rows."""
    text = PAGE.read_text(encoding="utf-8")
    built = set()
    for name, state in re.findall(r"^\| ([\w.-]+-\d[\w.]*) \| (\w+):", text, flags=re.M):
        if state == "ok":
            library, _, version = name.rpartition("-")
            built.add((library, version))
    rows = set(re.findall(r"^\| ([\w-]+) \| (\d[\w.]*) \| `(\w+)` \|", text, flags=re.M))
    return built, rows


def test_page_lists_every_entry_of_every_built_release() -> None:
    built, rows = _page_rows()
    assert built, "docs/findings.md lists no built release"
    expected = {
        (entry.library, version, entry.name)
        for library, version in built
        for entry in catalogue.CATALOGUE
        if entry.library == library and entry.expected_for(version) is not None
    }
    assert expected - rows == set(), "entries missing from the table"
    assert {row[2] for row in rows} <= set(catalogue.BY_NAME), "rows for functions the catalogue no longer has"


def test_page_links_existing_scripts() -> None:
    text = PAGE.read_text(encoding="utf-8")
    links = re.findall(r"\]\((findings/[^)]+\.py)\)", text)
    missing = [link for link in links if not (ROOT / "docs" / link).is_file()]
    assert missing == []


def _cheap_case() -> tuple[catalogue.Entry, str, Path] | None:
    status_file = VERSIONS / "status.json"
    if not status_file.exists():
        return None
    plan = findings.plan(json.loads(status_file.read_text()))
    cheap = ("diffprivlib_histogram_weights", "pydp_count", "opendp_rr_bitvec")
    for name in cheap:
        for entry, version, venv in plan:
            if entry.name == name and (venv / "bin" / "dpwitness").exists():
                return entry, version, venv
    return None


@pytest.mark.slow
def test_one_real_check_gets_the_expected_verdict(tmp_path: Path) -> None:
    case = _cheap_case()
    if case is None:
        pytest.skip("no .venv-versions with a cheap entry's release: run bash bench/anchors/versions_setup.sh")
    entry, version, venv = case
    command = [str(venv / "bin" / "dpwitness"), "check", f"{ANCHORS / 'findings_catalogue.py'}:{entry.name}"]
    command += ["--columns", entry.columns, "--epsilon", repr(entry.epsilon), "--max-seconds", "20", "--json"]
    command += ["--scripts", str(tmp_path)]
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    report = json.loads(run.stdout)
    assert findings.agrees(entry.expected_for(version), report["verdict"]), (version, entry.name, report["verdict"])
