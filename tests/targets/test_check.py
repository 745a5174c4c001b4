"""dw.check and dpwitness check on a small library written as people write one (no anchors needed)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import targets_toyuser as user

import dpwitness
from dpwitness.targets.check import CheckReport, check
from dpwitness.witness.structured import Runs, Shape, structured_search

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

pl = pytest.importorskip("polars")
pytest.importorskip("hypothesis")
TESTS = Path(__file__).resolve().parents[1]
SUPPORT = TESTS / "support"
#: The dpwitness under test (the user's module registers its adapter with it).
SOURCE = Path(dpwitness.__file__).resolve().parents[1]


def _script_env(*folders: Path) -> dict[str, str]:
    """The environment a reproduction script runs in: the user's module and its library on ``folders``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [*folders, SOURCE]))}


@pytest.fixture(scope="module")
def sum_report() -> CheckReport:
    return check(user.released_sum, columns={"x": pl.Float64}, epsilon=1.0, libraries=["toylib"], audit=False, trials=50)


def test_the_structured_search_finds_the_float_sum_class_on_its_own(sum_report: CheckReport) -> None:
    report = sum_report
    assert report.verdict == "violated"
    (finding,) = report.findings
    assert finding.kind == "sensitivity" and finding.claimed == 1.0
    assert finding.witnessed > 1 + 2**-30  # far beyond the search's 1e-9 tolerance, exact
    assert finding.largest is not None and finding.largest >= 1 + 2**-13  # grown to ≥ 2^20 rows
    assert finding.d.rows > 2**14 and abs(finding.d.rows - finding.d_prime.rows) == 1
    assert finding.site.endswith("targets_toylib.py:42")


def test_small_tables_alone_cannot_see_it() -> None:
    report = check(
        user.released_sum, columns={"x": pl.Float64}, epsilon=1.0, libraries=["toylib"], audit=False, trials=50, structured=False
    )
    assert report.verdict == "inconclusive" and not report.findings


def test_an_exact_sum_raises_no_false_alarm() -> None:
    report = check(user.released_exact_sum, columns={"x": pl.Float64}, epsilon=1.0, libraries=["toylib"], audit=False, trials=50)
    assert not report.findings and report.verdict == "inconclusive"


def test_a_changed_number_of_noise_calls_is_a_finding() -> None:
    report = check(user.released_counts, columns={"k": ["a", "b"]}, epsilon=1.0, libraries=["toylib"], audit=False, trials=50)
    assert [f.kind for f in report.findings] == ["noise-calls"]
    finding = report.findings[0]
    assert abs(finding.d.rows - finding.d_prime.rows) == 1 and finding.claimed != finding.witnessed


def test_the_audit_certifies_a_bound_on_the_worst_pair(tmp_path: Path) -> None:
    report = check(
        user.released_counts,
        columns={"k": ["a", "b"]},
        epsilon=1.0,
        libraries=["toylib"],
        trials=20,
        max_seconds=60,
        replay=False,  # the function's own output is audited, whatever the machine's load
    )
    assert report.audit is not None and report.audit.violated
    assert [f.kind for f in report.findings] == ["noise-calls", "audit"]
    assert report.findings[1].witnessed > 1.0 and report.findings[1].confidence == 0.95
    script = tmp_path / "audit_repro.py"  # samples the event on both tables with the library alone, compares with e^ε
    script.write_text(report.findings[1].script, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_script_env(SUPPORT), timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "BUG: the event is more than e^ε times likelier on one table than on its neighbour" in run.stdout, run.stdout
    assert "rate ratio (on " in run.stdout and "vs e^ε = 2.718" in run.stdout


def test_outside_the_contract_is_unsupported_never_violated() -> None:
    report = check(user.released_large, columns={"x": [0.0]}, epsilon=1.0, libraries=["toylib"], audit=False, trials=20)
    assert report.verdict == "unsupported" and not report.findings


def test_the_reproduction_script_runs_alone_and_shows_the_bug(tmp_path: Path, sum_report: CheckReport) -> None:
    report = sum_report
    script = tmp_path / "repro.py"
    script.write_text(report.findings[0].script, encoding="utf-8")
    # it never imports dpwitness itself (the checkout's path, which the script names, may hold the word)
    assert not re.search(r"^\s*(import|from)\s+dpwitness\b", report.findings[0].script, re.MULTILINE)
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=_script_env(SUPPORT),
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert "BUG: the shift exceeds the declared sensitivity" in run.stdout


def test_the_reproduction_script_is_relocatable(tmp_path: Path, sum_report: CheckReport) -> None:
    """No folder of the user's is written into it; moved to another folder, run from a third, with the
    checked module nowhere on the path (only its library installed), it still shows the bug."""
    text = sum_report.findings[0].script
    assert str(TESTS) not in text and str(TESTS.parent) not in text
    library = tmp_path / "site"  # the library, as installed on another machine: not the user's module
    library.mkdir()
    (library / "targets_toylib.py").write_text(
        (TESTS / "support" / "targets_toylib.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    first, elsewhere, moved = tmp_path / "findings", tmp_path / "elsewhere", tmp_path / "moved" / "deeper"
    for folder in (first, elsewhere, moved):
        folder.mkdir(parents=True)
    script = first / "finding_1.py"
    script.write_text(text, encoding="utf-8")
    for step in ("written", "moved"):
        if step == "moved":
            script = script.rename(moved / "renamed.py")
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=_script_env(library), cwd=elsewhere, timeout=120
        )
        assert run.returncode == 1 and "BUG: the shift exceeds the declared sensitivity" in run.stdout, (step, run.stderr)
    assert sorted(p.name for p in tmp_path.rglob("*.py")) == ["renamed.py", "targets_toylib.py"]  # moved, not copied


def test_the_check_leaves_nothing_where_it_runs(tmp_path: Path) -> None:
    """No .hypothesis folder (the caches of the constants its float strategies read from the user's
    files, under their absolute paths) nor anything else in the working directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    command = [sys.executable, "-m", "dpwitness", "check", str(TESTS / "support" / "targets_toyuser.py") + ":released_exact_sum"]
    command += ["--columns", '{"x": "Float64"}', "--epsilon", "1", "--library", "toylib", "--trials", "20"]
    command += ["--max-seconds", "20", "--no-structured", "--scripts", str(tmp_path / "scripts"), "--json"]
    run = subprocess.run(command, capture_output=True, text=True, env=_script_env(SUPPORT), cwd=empty, timeout=300)
    assert json.loads(run.stdout)["verdict"] in ("violated", "inconclusive", "ok"), run.stderr
    assert list(empty.iterdir()) == []


def test_the_runs_of_a_table_round_trip() -> None:
    frame = pl.DataFrame({"x": [1.0, 1.0, math.nan, math.nan, None, 2.0], "k": ["a", "a", "b", "b", "b", "c"]})
    runs = Runs.of_frame(frame)
    assert [n for _, n in runs.runs] == [2, 2, 1, 1]
    assert runs.frame(dict(frame.schema)).equals(frame)
    assert runs.to_dicts()[1] == {"row": {"x": "nan", "k": "b"}, "times": 2}


def test_a_shape_sits_at_its_binade_edge() -> None:
    shape = Shape(1.0, 0.5 + 2**-10, 1.0, "remove-big", "first", True)
    pair = shape.pair(12, (0.0,), 0, ("x",))
    assert pair is not None
    with_record, without = pair
    assert with_record.rows == without.rows + 1
    big = {row[0]: n for row, n in with_record.runs}
    assert big[1.0] == 2**12 and math.isclose(min(big), 2**-40 * (0.5 + 2**-10))  # ulp(2^12) = 2^-40


def test_the_structured_search_alone_on_a_plain_function() -> None:
    def total(frame: object) -> dict[str, float]:
        value = 0.0
        for x in frame["x"].to_list():  # type: ignore[index]
            value += min(max(x, 0.0), 1.0) if keep_nan or x == x else 0.0
        return {"sum": value}

    keep_nan = False
    found = structured_search(total, columns={"x": pl.Float64}, claims={"sum": 1.0}, seconds=6, max_rows=2**17)
    assert found.results["sum"].violated and found.pairs["sum"][0].rows >= 2**14
    keep_nan = True  # a NaN record makes the sum NaN: an out-of-range outlier shows it on small tables
    outlier = structured_search(total, columns={"x": pl.Float64}, claims={"sum": 1.0}, seconds=6, max_rows=2**17)
    assert outlier.results["sum"].shift == math.inf and outlier.pairs["sum"][0].rows <= 2**11 + 1
    exact = structured_search(
        lambda frame: {"sum": math.fsum(min(max(x, 0.0), 1.0) for x in frame["x"].to_list() if x == x)},
        columns={"x": pl.Float64},
        claims={"sum": 1.0},
        seconds=10,
    )
    assert not exact.results["sum"].violated


def test_the_command_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpwitness",
            "check",
            str(TESTS / "support" / "targets_toyuser.py") + ":released_counts",
            "--columns",
            '{"k": ["a", "b"]}',
            "--epsilon",
            "1",
            "--no-audit",
            "--trials",
            "20",
            "--library",
            "toylib",
            "--scripts",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    payload = json.loads(run.stdout)
    assert payload["verdict"] == "violated" and payload["findings"][0]["kind"] == "noise-calls"
    assert payload["calls"][0]["library"] == "toylib"
    bad = subprocess.run(
        [sys.executable, "-m", "dpwitness", "check", "nosuch.py:f", "--columns", '{"x": "Float64"}', "--epsilon", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "FUNCTION" in bad.stderr


def _cli_check(*flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "dpwitness", "check", str(TESTS / "support" / "targets_toyuser.py") + ":released_exact_sum"]
    command += ["--columns", '{"x": "Float64"}', "--epsilon", "1", "--library", "toylib", "--no-structured"]
    return subprocess.run(
        [*command, "--trials", "10", "--max-seconds", "30", "--json", *flags], capture_output=True, text=True, timeout=120
    )


def test_the_command_line_replay_flag() -> None:
    replayed = {}
    for mode in ("always", "never"):
        run = _cli_check("--replay", mode)
        payload = json.loads(run.stdout)
        # toylib's float Laplace (numpy's) has a porous support: the float test sees it either way
        assert run.returncode == 1 and payload["audit"]["verdict"] == "violated", run.stderr
        replayed[mode] = [note for note in payload["notes"] if "audited by replay" in note]
    assert replayed["always"] and not replayed["never"]
    bad = _cli_check("--replay", "sometimes")
    error = json.loads(bad.stdout)["error"]  # with --json the one-line error is JSON on stdout
    assert bad.returncode == 2 and error["parameter"] == "--replay" and error["kind"] == "bad_input"
    assert error["message"] == "--replay must be 'auto', 'always' or 'never'; got 'sometimes'"


def test_replay_is_chosen_when_faster_and_the_release_is_the_noise_calls_output() -> None:
    report = check(
        user.released_exact_sum,
        columns={"x": pl.Float64},
        epsilon=1.0,
        libraries=["toylib"],
        structured=False,
        trials=10,
        max_seconds=60,
    )
    assert any(note.startswith("the noise alone takes") and "audited by replay" in note for note in report.notes), report.notes
    # toylib does not claim exact noise: its float outputs keep the bit-pattern test, which sees numpy's porous Laplace
    assert report.audit is not None and report.audit.violated and not any("bit patterns not judged" in n for n in report.notes)
    assert report.cpu_seconds <= 60 + 5  # the budget is CPU seconds
