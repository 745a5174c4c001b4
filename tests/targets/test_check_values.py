"""Values of every type (issue 28, item 3): a library's noise call may take bytes (a bit vector),
a boolean or any item (randomized response, under the discrete metric), a tuple (a map with
several outputs), a dict; its Δ may come from a map on integer distances (OpenDP's u32
``DiscreteDistance``) or a map returning (l0, l1, l∞). Correct releases raise no false alarm,
broken ones the right finding, and a value whose length changes between neighbours is a finding
of its own ("shape"), never a shift of ∞ read from NaN."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import targets_toyuser as user

import dpwitness
from dpwitness.targets import hooks, opendp
from dpwitness.targets.check import check

pl = pytest.importorskip("polars")

pytestmark = pytest.mark.slow  # checks with audits: not in the fast default
pytest.importorskip("hypothesis")
KEYS = {"k": ["a", "b", "c"]}
TESTS = Path(__file__).resolve().parents[1]
QUICK: dict[str, Any] = dict(epsilon=1.0, libraries=["toylib"], audit=False, trials=30, structured=False, max_seconds=30)


@pytest.mark.parametrize(
    "fn",
    [user.answered_item, user.answered_flag, user.present_bits, user.counted_items, user.counted_items_dict, user.counted_frame],
    ids=["bytes item", "boolean item", "bit vector", "tuple from a map of (l0, l1, l∞)", "dict", "frame"],
)
def test_correct_releases_of_every_type_raise_no_false_alarm(fn: Any) -> None:
    report = check(fn, columns=KEYS, **QUICK)
    assert report.verdict == "inconclusive" and not report.findings, [str(f) for f in report.findings]
    (call,) = report.calls
    assert call.sensitivity == 1.0, call  # never 0 (a float bisection on a u32 map), never the tuple itself
    assert report.pairs_tried >= 30 and report.pairs_skipped == 0, report.notes


def test_randomized_response_is_judged_under_the_discrete_metric() -> None:
    report = check(user.answered_item, columns=KEYS, **QUICK)
    (call,) = report.calls
    assert call.norm == "discrete" and call.value in (b"1", b" ") and call.shape == ("item",)


def test_a_length_leak_is_a_shape_finding(tmp_path: Path) -> None:
    report = check(user.found_key_bytes, columns=KEYS, **QUICK)
    (finding,) = report.findings
    assert finding.kind == "shape" and report.verdict == "violated"
    assert abs(finding.claimed - finding.witnessed) == 1  # the byte lengths on D and D′
    assert "byte(s) on D" in finding.detail and "shift" not in str(finding) and "inf" not in str(finding)
    assert str(finding).startswith("✘ shape: toylib")
    script = tmp_path / "finding.py"  # alone in another folder: the noise removed, the values' lengths compared
    script.write_text(finding.script, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])]),
    }
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and "BUG: the noise calls' transcript differs" in run.stdout, run.stdout + run.stderr


def test_a_frame_whose_rows_follow_the_keys_found_is_a_shape_finding() -> None:
    report = check(user.counted_frame_found_keys, columns=KEYS, **QUICK)
    (finding,) = report.findings
    assert finding.kind == "shape" and abs(finding.claimed - finding.witnessed) == 1, str(finding)
    assert "a frame of" in finding.detail and "inf" not in str(finding)
    (call,) = report.calls
    assert call.value == {"count": (1.0,)} and call.shape == ("frame", 1, ("k", "count"), (("k", ("a",)),))


def test_a_frame_whose_keys_change_at_the_same_size_is_a_shape_finding() -> None:
    report = check(user.counted_frame_found_keys, columns=KEYS, **{**QUICK, "neighbours": "replace-one"})
    assert [f.kind for f in report.findings] == ["shape"], [str(f) for f in report.findings]
    (finding,) = report.findings
    assert finding.claimed == finding.witnessed == 1 and "with other keys or columns on D′" in finding.detail, str(finding)


@pytest.mark.parametrize(
    ("fn", "shifts"),
    [
        (user.counted_items_cumulative, (2.0, 3.0)),
        (user.present_bits_and_size, (2.0,)),
        (user.counted_items_dict_twice, (2.0,)),
        (user.counted_frame_with_rows, (4.0,)),
    ],
    ids=["tuple beyond its map's l1", "two bits flipped by one record", "dict counting each record twice", "frame"],
)
def test_values_moving_beyond_their_delta_are_sensitivity_findings(fn: Any, shifts: tuple[float, ...]) -> None:
    report = check(fn, columns=KEYS, **QUICK)
    (finding,) = report.findings
    assert finding.kind == "sensitivity" and finding.claimed == 1.0 and finding.witnessed in shifts, str(finding)


def test_a_vector_whose_length_follows_the_keys_found_is_a_shape_finding() -> None:
    report = check(user.released_sums_by_key, columns={"k": pl.String, "x": pl.Float64}, **{**QUICK, "structured": True})
    assert [f.kind for f in report.findings] == ["shape"]


class _Measurement:
    """An OpenDP measurement's surface: randomized response's input metric and its u32 privacy map."""

    input_metric = "DiscreteDistance()"
    output_measure = "MaxDivergence"

    def map(self, d_in: int) -> float:
        if not isinstance(d_in, int):
            raise TypeError("inconsistent type: expected u32")
        return 0.5 * d_in


def test_opendp_bisects_an_integer_distance_as_an_integer() -> None:
    assert opendp._largest_distance(_Measurement(), 1.0) == 2.0
    assert opendp._norm(_Measurement()) == "discrete"
    assert hooks.largest_distance(_Measurement().map, 1.0) == 2.0  # probed: the map refuses 1.0
    assert hooks.largest_distance(lambda d: d * 0.5, 1.0) == pytest.approx(2.0)


def test_values_are_made_plain_without_losing_their_type() -> None:
    assert hooks.plain_value(b" ") == b" " and hooks.plain_value(True) == 1.0 and hooks.plain_value("a") == "a"
    assert hooks.plain_value({"a": (1, 2)}) == {"a": (1.0, 2.0)} and math.isnan(hooks.plain_value([1, None])[1])
    assert hooks.value_shape(b"ab") == ("bytes", 2) and hooks.value_shape(b"ab", "discrete") == ("item",)
    assert hooks.value_shape((1.0, 2.0)) != hooks.value_shape((1.0, 2.0, 3.0))
    assert hooks.declared_distance((1, 2, 1)) == 2.0 and hooks.declared_distance(3) == 3.0


@pytest.mark.parametrize(
    "fn",
    [user.answered_flag, user.present_bits, user.counted_items, user.counted_items_dict, user.counted_frame],
    ids=["bool", "bits", "tuple", "dict", "frame"],
)
def test_the_replay_audit_samples_every_type(fn: Any) -> None:
    report = check(fn, columns=KEYS, epsilon=1.0, libraries=["toylib"], trials=10, structured=False, max_seconds=12, replay=True)
    assert report.audit is not None and report.audit.replayed and report.verdict != "adapter-error", report.notes
    # toylib's float Laplace (numpy's) has a porous support: the float test may find the tuple's bit patterns
    assert all(f.kind == "audit" and "float test" in f.detail for f in report.findings), [str(f) for f in report.findings]


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "direct"])
def test_the_audit_samples_bytes(replay: bool) -> None:
    report = check(
        user.answered_item,
        columns=KEYS,
        epsilon=1.0,
        libraries=["toylib"],
        trials=10,
        structured=False,
        max_seconds=30,
        replay=replay,
    )
    assert report.audit is not None and not report.audit.violated and not report.findings, report.notes
    assert report.verdict in ("ok", "inconclusive") and any("audited by replay" in n for n in report.notes) == replay


def test_a_broken_randomized_response_is_caught_by_the_audit(tmp_path: Path) -> None:
    report = check(
        user.answered_item_leaky, columns=KEYS, epsilon=1.0, libraries=["toylib"], trials=10, structured=False, max_seconds=40
    )
    # its u32 map at the claimed ε allows no distance (Δ = 0): the answer moving is a finding, which the audit confirms
    assert [f.kind for f in report.findings] == ["sensitivity", "audit"], report.notes
    assert (report.findings[0].claimed, report.findings[0].witnessed) == (0.0, 1.0) and report.findings[1].witnessed > 1.0
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])]),
    }
    shown = []
    for number, finding in enumerate(report.findings):
        script = tmp_path / f"finding_{number}.py"
        script.write_text(finding.script, encoding="utf-8")
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert run.returncode == 1, run.stdout + run.stderr
        shown.append(next(line for line in run.stdout.splitlines() if line.startswith("BUG")))
    assert shown == [
        "BUG: the shift exceeds the declared sensitivity",  # the discrete metric: b"1" vs b" "
        "BUG: the event is more than e^ε times likelier on one table than on its neighbour",
    ]


def test_the_audit_samples_a_frame_and_the_frames_script_shows_its_shift(tmp_path: Path) -> None:
    report = check(
        user.counted_frame,
        columns=KEYS,
        epsilon=1.0,
        libraries=["toylib"],
        trials=10,
        structured=False,
        max_seconds=12,
        replay=False,
    )
    assert report.audit is not None and not report.audit.replayed and report.verdict != "adapter-error", report.notes
    assert not report.findings or all("float test" in f.detail for f in report.findings), [str(f) for f in report.findings]
    broken = check(user.counted_frame_with_rows, columns=KEYS, **QUICK)
    (finding,) = broken.findings
    script = tmp_path / "finding.py"
    script.write_text(finding.script, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])]),
    }
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and "l1 shift 4.0 vs declared sensitivity 1.0" in run.stdout, run.stdout + run.stderr


def test_a_frame_is_read_as_its_columns_by_every_part() -> None:
    from dpwitness.common.encoding import frame_columns, json_value
    from dpwitness.witness.audit.encode import Encoder, value_paths

    frame = pl.DataFrame({"k": ["a", "b"], "n": [1.5, None]})
    assert frame_columns(frame) == {"k": ["a", "b"], "n": [1.5, None]} and frame_columns({"k": [1]}) is None
    pd = pytest.importorskip("pandas")
    assert frame_columns(pd.DataFrame({"k": ["a"], "n": [2]})) == {"k": ["a"], "n": [2]}
    assert json_value(frame) == {"k": ["a", "b"], "n": [1.5, None]}
    signature, values = Encoder().encode(frame, "d")
    assert signature == "F{'k':(s,s),'n':(n,∅)}" and values == [0.0, 1.0, 1.5, 2.0] and len(value_paths(frame)) == 4
    assert math.isnan(hooks.plain_value(frame)["n"][1]) and hooks.value_shape(frame)[:3] == ("frame", 2, ("k", "n"))


def test_pairs_the_discrete_metric_cannot_rank_are_screened_before_the_audit(tmp_path: Path) -> None:
    """OpenDP's #2708 as a toy: the last of 8 options is never randomized. Every changed answer is at
    discrete distance 1, and the search's first pair ({} against {0}) changes bit 0 only, which is
    randomized correctly; the screening finds the pair that changes the last bit, and the finding's
    script shows the event on its own."""
    columns = {"question": [0, 7]}
    options: dict[str, Any] = dict(epsilon=1.0, libraries=["toylib"], structured=False, max_seconds=30, seed=0)
    report = check(user.ticked_options_last_kept, columns=columns, **options)
    assert [f.kind for f in report.findings] == ["audit"] and report.findings[0].witnessed > 3.0, report.notes
    assert any("screened" in note for note in report.notes), report.notes
    d, d_prime = report.findings[0].d, report.findings[0].d_prime
    sevens = [sum(times for row, times in runs.runs if row == (7,)) for runs in (d, d_prime)]
    assert sevens[0] != sevens[1], (d, d_prime)  # the audited pair changes the last option
    script = tmp_path / "finding.py"
    script.write_text(report.findings[0].script, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])]),
    }
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 1 and "BUG: the event is more than e^ε times likelier" in run.stdout, run.stdout + run.stderr
    correct = check(user.ticked_options, columns=columns, **options)
    assert not correct.findings and correct.verdict in ("ok", "inconclusive"), [str(f) for f in correct.findings]
