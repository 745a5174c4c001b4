"""Key-set changes as structured shapes: grouped releases of a small library written as people write one."""

from __future__ import annotations

import pytest
import targets_toyuser as user

from dpwitness.common.errors import ParameterError
from dpwitness.targets.check import check
from dpwitness.witness.structured import KeyShape, key_shapes

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

pl = pytest.importorskip("polars")
pytest.importorskip("hypothesis")
LISTED = {"k": ["a", "b", "c"], "x": pl.Float64}  # c: the key the structured shapes add
TYPED = {"k": pl.String, "x": pl.Float64}


def _from_key_shape(notes: tuple[str, ...]) -> bool:
    return any("structured table 'key set:" in note for note in notes)


def test_a_key_set_released_without_partition_selection_is_found_by_the_structured_search() -> None:
    report = check(user.released_sums_by_key, columns=TYPED, epsilon=1.0, libraries=["toylib"], audit=False, trials=0)
    assert report.verdict == "violated" and [f.kind for f in report.findings] == ["shape"]  # the vector has one sum per key found
    finding = report.findings[0]
    keys_d = {row[0] for row, _ in finding.d.runs}
    keys_d_prime = {row[0] for row, _ in finding.d_prime.runs}
    assert keys_d < keys_d_prime and finding.d_prime.rows == finding.d.rows + 1  # one record, with a new key
    assert _from_key_shape(report.notes)


def test_a_new_groups_first_record_left_unclamped_is_found() -> None:
    report = check(user.released_group_totals, columns=LISTED, epsilon=1.0, libraries=["toylib"], audit=False, trials=0)
    (finding,) = report.findings
    assert finding.kind == "sensitivity" and finding.claimed == 1.0 and finding.witnessed == 3.0  # 2·upper + 1, unclamped
    assert ("c", 3.0) in [row for row, _ in finding.d_prime.runs] and "c" not in {row[0] for row, _ in finding.d.runs}
    assert _from_key_shape(report.notes)


def test_a_per_key_delta_that_ignores_a_move_to_a_new_key_is_found_under_replace_one() -> None:
    report = check(
        user.released_sums_for_public_keys,
        columns=LISTED,
        epsilon=1.0,
        libraries=["toylib"],
        audit=False,
        trials=0,
        neighbours="replace-one",
    )
    (finding,) = report.findings
    assert finding.kind == "sensitivity" and finding.claimed == 1.0 and finding.witnessed == 2.0  # two keys move by 1
    assert finding.d.rows == finding.d_prime.rows and _from_key_shape(report.notes)


@pytest.mark.parametrize("columns", [LISTED, TYPED], ids=["listed keys", "typed keys"])
def test_public_keys_and_exact_sums_raise_no_false_alarm(columns: dict[str, object]) -> None:
    report = check(user.released_sums_for_public_keys, columns=columns, epsilon=1.0, libraries=["toylib"], audit=False, trials=50)
    assert report.verdict == "inconclusive" and not report.findings and report.pairs_tried > 100


def test_the_key_shapes_add_one_record_with_a_key_no_group_has() -> None:
    found = key_shapes(["a", "b"], ["c", None], [1.0, 3.0], neighbours="add-remove")
    assert {shape.position for shape in found} == {"first", "between", "last"} and {s.new_key for s in found} == {"c", None}
    shape = KeyShape("new-key", "between", 1, 16, "c", 3.0)
    d, d_prime = shape.pair(("a", 1.0), 0, 1, ["a", "b"], ("k", "x"))
    assert d.runs == ((("a", 1.0), 16),)
    assert d_prime.runs == ((("a", 1.0), 8), (("c", 3.0), 1), (("a", 1.0), 8))  # inside the one group
    moved = KeyShape("out-of-group", "last", 2, 1, "c", 1.0).pair(("a", 1.0), 0, 1, ["a", "b"], ("k", "x"))
    assert moved[0].rows == moved[1].rows == 3 and moved[1].runs[-1] == (("a", 1.0), 1)


@pytest.mark.parametrize("trials", [-1, 1.5, True])
def test_trials_is_a_whole_number_from_zero(trials: object) -> None:
    with pytest.raises(ParameterError, match=r"^trials must be a whole number from 0 to 1000000"):
        check(user.released_sums_by_key, columns=TYPED, epsilon=1.0, libraries=["toylib"], audit=False, trials=trials)  # type: ignore[arg-type]
