"""Reaching the inputs a library accepts (issue 28, item 2): a sized domain that refuses every
other size, a model that needs a minimum number of rows, and an estimator chosen on the data's
own size at n = 1,581, written as libraries write them (tests/support/targets_toylib.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import targets_toylib as toylib
import targets_toyuser as user

from dpwitness.targets.check import check
from dpwitness.targets.check.probe import UnnoisedRunner
from dpwitness.targets.check.reach import ladder, size_boundaries, sized_pairs, table_of

pytestmark = pytest.mark.slow  # full checks and a real subprocess: not in the fast default

pl = pytest.importorskip("polars")
pytest.importorskip("hypothesis")
TESTS = Path(__file__).resolve().parents[1]
QUICK = dict(epsilon=1.0, audit=False, trials=20, max_seconds=30, libraries=["toylib"])


def test_a_sized_domain_is_probed_at_its_declared_size_and_its_bug_found_there() -> None:
    report = check(user.released_sized_sum_understated, columns={"x": pl.Float64}, neighbours="replace-one", **QUICK)  # type: ignore[arg-type]
    assert report.verdict == "violated", report.notes
    (finding,) = report.findings
    assert (finding.kind, finding.claimed, finding.witnessed) == ("sensitivity", 1.0, 2.0)
    assert finding.d.rows == finding.d_prime.rows == user.SIZE  # the only size the domain accepts
    assert any(f"start from {user.SIZE} rows, which it accepts (the size its domain declares)" in n for n in report.notes)


def test_the_correct_sized_sum_gives_no_finding_and_is_not_unsupported() -> None:
    report = check(user.released_sized_sum, columns={"x": pl.Float64}, neighbours="replace-one", **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.findings) == ("inconclusive", ()), report.notes
    assert [c.sensitivity for c in report.calls] == [2.0]
    assert report.pairs_tried > report.pairs_skipped  # pairs of the declared size were judged


def test_a_model_needing_a_minimum_number_of_rows_is_reached_above_it() -> None:
    report = check(user.released_histogram, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.findings) == ("inconclusive", ()), report.notes
    assert [c.mechanism for c in report.calls] == ["VectorLaplace"]
    assert any("the check's tables start from 8 rows, which it accepts" in n for n in report.notes), report.notes


def test_an_estimator_chosen_on_the_datas_size_is_found_at_the_size_it_changes() -> None:
    report = check(user.released_mean_by_size, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert report.verdict == "violated", report.notes
    (finding,) = report.findings
    assert finding.kind == "noise-calls" and (finding.claimed, finding.witnessed) == (1.0, 2.0)
    assert (finding.d.rows, finding.d_prime.rows) == (toylib.TWO_PASS_ROWS - 1, toylib.TWO_PASS_ROWS)  # not a power of two
    assert "the noise calls change between 1580 and 1581 rows (1 call(s), then 2)" in report.notes


def test_the_estimator_chosen_on_a_public_size_gives_no_false_alarm() -> None:
    report = check(user.released_mean_public_size, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.findings) == ("inconclusive", ()), report.notes
    assert not any("the noise calls change between" in n for n in report.notes)


def test_under_replace_one_the_size_is_public_and_its_change_is_no_finding() -> None:
    report = check(user.released_mean_by_size, columns={"x": pl.Float64}, neighbours="replace-one", **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.findings) == ("inconclusive", ()), report.notes
    assert "the noise calls change between 1580 and 1581 rows (1 call(s), then 2)" in report.notes


def test_size_boundaries_bisects_between_the_ladders_sizes() -> None:
    user.ADAPTER.ensure_installed()
    runner = UnnoisedRunner(user.released_mean_by_size, (user.ADAPTER,), 1.0, "add-remove")
    template = pl.DataFrame({"x": [0.5]})
    (boundary,) = size_boundaries(runner, template, cap=4096, seconds=30)
    assert (boundary.below.height, boundary.above.height) == (1580, 1581)
    assert [len(boundary.calls_below), len(boundary.calls_above)] == [1, 2]
    assert ladder(1, 1000) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert table_of(template, 3)["x"].to_list() == [0.5] * 3 and table_of(template, 0).height == 0


def test_sized_pairs_are_neighbours_of_the_given_sizes() -> None:
    template = pl.DataFrame({"k": ["a"], "x": [0.5]})
    for d, d_prime in sized_pairs(template, [5], (0.0, 1.0), "replace-one"):
        assert d.height == d_prime.height == 5 and d["k"].to_list() == d_prime["k"].to_list() == ["a"] * 5
        assert sum(a != b for a, b in zip(d["x"], d_prime["x"], strict=True)) == 1
    heights = {(d.height, d_prime.height) for d, d_prime in sized_pairs(template, [5], None, "add-remove")}
    assert heights == {(4, 5), (5, 6)}


def test_the_command_line_finds_the_size_bug(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "dpwitness", "check", "targets_toyuser:released_mean_by_size"]
    command += ["--columns", '{"x": "Float64"}', "--epsilon", "1", "--no-audit", "--trials", "10", "--library", "toylib"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300, env=env)
    payload = json.loads(run.stdout)
    assert run.returncode == 1 and payload["verdict"] == "violated", run.stderr
    (finding,) = payload["findings"]
    assert finding["kind"] == "noise-calls" and [finding["d"][0]["times"], finding["d_prime"][0]["times"]] == [1580, 1581]
    # its script, alone in another folder, runs both tables without the noise and shows the calls differ
    script = tmp_path / "finding.py"
    script.write_text(finding["script"], encoding="utf-8")
    shown = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=script.parent)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "1 noise call(s) on D (1580 rows), 2 on D' (1581 rows)" in shown.stdout
    assert "BUG: the noise calls' transcript differs" in shown.stdout
