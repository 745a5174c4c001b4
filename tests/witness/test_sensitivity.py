"""dpwitness.sensitivity_search: it finds pairs that break a wrong Δ, holds a right one, and says so.

Each "holds" test is paired with a wrong claim for the same function that the search must
break, so no test here passes by a search that tries nothing. The library's own queries are
swept in tests/witness/test_sensitivity_library.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import dpwitness
from dpwitness import ParameterError, sensitivity_search
from dpwitness.cli import app
from dpwitness.witness.sensitivity import RELATIVE_TOLERANCE, output_shift

runner = CliRunner()


def clamped_sum(frame: pl.DataFrame) -> float:
    """Σ clamp(x, 10, 20) over the non-null, non-NaN values (as the engines compute a sum)."""
    return float(frame["x"].fill_nan(None).clip(10.0, 20.0).sum())


# --- the replace-one bug of issue 10 --------------------------------------------------------------


def test_finds_the_old_replace_one_sum_delta_and_shrinks_the_pair() -> None:
    """Old derivation: Δ = U − L = 10. A null (adds 0) replaced by a value ≥ 10 moves the sum by up to 20."""
    result = sensitivity_search(clamped_sum, columns={"x": pl.Float64}, claimed=20.0 - 10.0, neighbours="replace-one", seed=1)
    assert result.violated and not result.ok
    assert 10.0 < result.shift <= 20.0 and result.worst >= result.shift
    assert result.d.height == result.d_prime.height == 1  # shrunk to one record
    before, after = result.d["x"][0], result.d_prime["x"][0]
    missing = [v for v in (before, after) if v is None or (isinstance(v, float) and math.isnan(v))]
    assert len(missing) == 1  # null (or NaN) ↔ a value
    assert abs(clamped_sum(result.d) - clamped_sum(result.d_prime)) == result.shift


def test_the_fixed_replace_one_delta_holds_and_is_reached() -> None:
    result = sensitivity_search(
        clamped_sum, columns={"x": pl.Float64}, claimed=max(20.0, 0) - min(10.0, 0), neighbours="replace-one", seed=1
    )
    assert not result.violated
    assert result.worst == 20.0 and result.shift == 20.0  # the search reaches Δ: null ↔ a value ≥ 20
    assert abs(clamped_sum(result.d) - clamped_sum(result.d_prime)) == 20.0


def test_add_remove_count_and_its_wrong_claim() -> None:
    assert not sensitivity_search(lambda f: f.height, columns={"x": pl.Int64}, claimed=1, seed=0).violated
    wrong = sensitivity_search(lambda f: f.height, columns={"x": pl.Int64}, claimed=0.5, seed=0)
    assert wrong.violated and wrong.shift == 1.0 and wrong.d.height == 0 and wrong.d_prime.height == 1


def test_nan_that_reaches_the_output_is_an_unbounded_shift() -> None:
    """A sum that forgets NaN (clip keeps NaN) returns NaN on one table: no Δ covers that."""
    result = sensitivity_search(lambda f: f["x"].clip(0.0, 1.0).sum(), columns={"x": pl.Float64}, claimed=1.0, seed=2)
    assert result.violated and result.shift == math.inf
    assert any(math.isnan(v) for v in result.d_prime["x"].drop_nulls().to_list() + result.d["x"].drop_nulls().to_list())


# --- keyed outputs, vectors, L2 ----------------------------------------------------------------------


def counts_by_key(frame: pl.DataFrame) -> dict[Any, float]:
    return {row["g"]: float(row["len"]) for row in frame.group_by("g").len().to_dicts()}


def test_keyed_counts_a_missing_key_is_zero_and_a_record_moves_between_keys() -> None:
    columns = {"g": ["a", "b", None]}
    assert not sensitivity_search(counts_by_key, columns=columns, claimed=1, seed=3).violated
    moved = sensitivity_search(counts_by_key, columns=columns, claimed=1, neighbours="replace-one", seed=3)
    assert moved.violated and moved.shift == 2.0  # one key −1, another +1
    assert set(moved.d["g"].to_list()) != set(moved.d_prime["g"].to_list())
    assert not sensitivity_search(counts_by_key, columns=columns, claimed=2, neighbours="replace-one", seed=3).violated


def test_l2_norm_for_a_vector_output() -> None:
    def histogram(frame: pl.DataFrame) -> list[float]:
        return [float((frame["g"] == key).sum()) for key in ("a", "b")]

    columns = {"g": ["a", "b"]}
    l2 = sensitivity_search(histogram, columns=columns, claimed=math.sqrt(2), neighbours="replace-one", norm="l2", seed=4)
    assert not l2.violated and l2.worst == pytest.approx(math.sqrt(2))
    tight = sensitivity_search(histogram, columns=columns, claimed=1.2, neighbours="replace-one", norm="l2", seed=4)
    assert tight.violated and tight.shift == pytest.approx(math.sqrt(2))
    assert tight.norm == "l2" and "L2 shift" in str(tight)


def test_output_shift_rules() -> None:
    assert output_shift(1.0, 3.5) == 2.5
    assert output_shift({"a": 1.0}, {"b": 2.0}) == 3.0  # a key missing on one side counts as 0
    assert output_shift([3.0, 0.0], [0.0, 4.0], "l2") == 5.0
    assert output_shift({"a": 1.0, "b": 5.0}, {"a": 3.0}, "linf") == 5.0  # the largest move of one key
    assert output_shift(math.inf, math.inf) == 0.0 and output_shift(math.nan, math.nan) == 0.0
    assert output_shift(math.nan, 1.0) == math.inf and output_shift(math.inf, 1.0) == math.inf
    with pytest.raises(ParameterError) as caught:
        output_shift([1.0], [1.0, 2.0])
    assert caught.value.parameter == "fn"


def test_the_tolerance_is_relative_and_tiny() -> None:
    """A shift of Δ·(1 + 1e-12) (float rounding) is not a violation; Δ·(1 + 1e-6) is; with Δ = 0 any shift is."""
    assert RELATIVE_TOLERANCE == 1e-9

    def nudged(factor: float) -> Any:
        return lambda frame: float(frame.height) * factor

    assert not sensitivity_search(nudged(1 + 1e-12), columns={"x": pl.Boolean}, claimed=1, seed=0).violated
    assert sensitivity_search(nudged(1 + 1e-6), columns={"x": pl.Boolean}, claimed=1, seed=0).violated
    assert sensitivity_search(nudged(1e-300), columns={"x": pl.Boolean}, claimed=0, seed=0).violated


# --- privacy units -----------------------------------------------------------------------------------


def kept_rows(k: int) -> Any:
    """Rows with a non-null unit, at most k per unit (deterministic bounding by value)."""

    def count(frame: pl.DataFrame) -> float:
        units = frame.filter(pl.col("pid").is_not_null()).group_by("pid").len()
        return float(units["len"].clip(upper_bound=k).sum())

    return count


def test_a_unit_is_added_whole_and_bounding_caps_it() -> None:
    unbounded = sensitivity_search(
        lambda f: f.filter(pl.col("pid").is_not_null()).height, columns={"x": pl.Int8}, claimed=1, privacy_unit="pid", seed=5
    )
    assert unbounded.violated and unbounded.shift == 2.0  # the shrunk unit: 2 rows, one more than the claim
    assert unbounded.d_prime.height - unbounded.d.height == 2
    assert unbounded.d_prime["pid"].n_unique() >= 1 and "pid" in unbounded.d.columns
    for relation, delta in (("add-remove", 2), ("replace-one", 4)):
        # replace-one: the unit's 2 kept rows leave (null unit, or a new one) and 2 others arrive.
        held = sensitivity_search(
            kept_rows(2),
            columns={"x": pl.Int8},
            claimed=delta,
            privacy_unit="pid",
            max_contributions=2,
            neighbours=relation,
            seed=6,
        )
        assert not held.violated, held
    assert sensitivity_search(
        kept_rows(3), columns={"x": pl.Int8}, claimed=2, privacy_unit="pid", max_contributions=2, seed=6
    ).violated


def test_units_hold_more_rows_than_the_bound() -> None:
    seen: list[int] = []

    def watch(frame: pl.DataFrame) -> float:
        seen.append(int(frame.filter(pl.col("pid") == 100).height))
        return 0.0

    sensitivity_search(
        watch, columns={"x": pl.Boolean}, claimed=0, privacy_unit="pid", max_contributions=2, max_groups=2, trials=300, seed=7
    )
    assert max(seen) == 2 * 2 + 1  # one row beyond k·g


# --- columns, reproducibility, the result --------------------------------------------------------------


def test_list_columns_draw_only_the_allowed_values_and_dtypes_draw_edge_cases() -> None:
    values: dict[str, set[Any]] = {"g": set(), "x": set()}

    def watch(frame: pl.DataFrame) -> float:
        values["g"].update(frame["g"].to_list())
        values["x"].update(repr(v) for v in frame["x"].to_list())
        return 0.0

    sensitivity_search(watch, columns={"g": ["a", "b"], "x": pl.Float64}, claimed=0, trials=300, seed=8)
    assert values["g"] == {"a", "b"}
    assert {"None", "nan", "inf", "-inf"} <= values["x"]


def test_seeded_searches_repeat() -> None:
    first = sensitivity_search(clamped_sum, columns={"x": pl.Float64}, claimed=10, neighbours="replace-one", seed=11)
    second = sensitivity_search(clamped_sum, columns={"x": pl.Float64}, claimed=10, neighbours="replace-one", seed=11)
    assert first.d.equals(second.d) and first.d_prime.equals(second.d_prime) and first.trials == second.trials


def test_the_result_reads_well_and_is_frozen() -> None:
    result = sensitivity_search(clamped_sum, columns={"x": pl.Float64}, claimed=10, neighbours="replace-one", seed=1)
    text = str(result)
    assert text.startswith("✘ VIOLATED") and "replace-one" in text and "D′ =" in text and "minimal violating pair" in text
    assert json.loads(json.dumps(result.to_dict(), default=str))["violated"] is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.violated = False  # type: ignore[misc]
    assert isinstance(result, dpwitness.SensitivityResult)
    fine = sensitivity_search(clamped_sum, columns={"x": pl.Float64}, claimed=20, neighbours="replace-one", seed=1)
    assert str(fine).startswith("✔ claim holds") and "largest L1 shift 20" in str(fine)


def test_an_exception_in_fn_propagates() -> None:
    def broken(frame: pl.DataFrame) -> float:
        if frame.height > 1:
            raise ZeroDivisionError("boom")
        return 0.0

    with pytest.raises(ZeroDivisionError):
        sensitivity_search(broken, columns={"x": pl.Int8}, claimed=1, seed=0)


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"fn": "not callable"}, "fn"),
        ({"columns": {}}, "columns"),
        ({"columns": {"x": pl.List(pl.Int8)}}, "columns"),
        ({"columns": {"x": []}}, "columns"),
        ({"claimed": -1}, "claimed"),
        ({"claimed": math.inf}, "claimed"),
        ({"claimed": None}, "claimed"),
        ({"neighbours": "swap"}, "neighbours"),
        ({"norm": "l3"}, "norm"),  # l1, l2 and linf are the norms
        ({"trials": 0}, "trials"),
        ({"trials": True}, "trials"),
        ({"seed": -1}, "seed"),
        ({"privacy_unit": ""}, "privacy_unit"),
        ({"max_contributions": 2}, "max_contributions"),
        ({"privacy_unit": "pid", "max_contributions": 0}, "max_contributions"),
        ({"max_groups": 2}, "max_groups"),
        ({"columns": {"pid": ["p1"]}, "privacy_unit": "pid"}, "columns"),
    ],
)
def test_bad_input_names_the_parameter(options: dict[str, Any], parameter: str) -> None:
    arguments: dict[str, Any] = {"fn": lambda f: 0.0, "columns": {"x": pl.Int8}, "claimed": 1.0, "trials": 5, **options}
    fn = arguments.pop("fn")
    with pytest.raises(ParameterError) as caught:
        sensitivity_search(fn, **arguments)
    assert caught.value.parameter == parameter
    assert "\n" not in str(caught.value)


def test_an_output_that_is_not_numbers_is_refused() -> None:
    with pytest.raises(ParameterError) as caught:
        sensitivity_search(lambda f: "text", columns={"x": pl.Int8}, claimed=1, seed=0)
    assert caught.value.parameter == "fn"


# --- the command line -----------------------------------------------------------------------------------


@pytest.fixture
def functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    module = tmp_path / "dpw_search_functions.py"
    module.write_text(
        "import polars as pl\n"
        "def clamped_sum(frame):\n"
        "    return float(frame['x'].fill_nan(None).clip(10.0, 20.0).sum())\n"
        "def broken(frame):\n"
        "    raise RuntimeError('broken on purpose')\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "dpw_search_functions", raising=False)
    return "dpw_search_functions"


def test_cli_finds_the_old_delta_and_holds_the_fixed_one(functions: str) -> None:
    base = [
        "witness",
        "--sensitivity-search",
        f"{functions}:clamped_sum",
        "--columns",
        '{"x": "Float64"}',
        "--neighbours",
        "replace-one",
        "--seed",
        "1",
    ]
    broken = runner.invoke(app, [*base, "--claimed", "10", "--json"])
    assert broken.exit_code == 1, broken.output
    payload = json.loads(broken.output)
    assert payload["violated"] is True and payload["shift"] > 10 and len(payload["d"]) == 1
    held = runner.invoke(app, [*base, "--claimed", "20"])
    assert held.exit_code == 0, held.output
    assert "claim holds" in held.output


@pytest.mark.parametrize(
    ("extra", "parameter"),
    [
        (["--sensitivity-search", "no_colon", "--columns", '{"x": "Float64"}', "--claimed", "1"], "sensitivity_search"),
        (
            ["--sensitivity-search", "no_such_module_here:f", "--columns", '{"x": "Float64"}', "--claimed", "1"],
            "sensitivity_search",
        ),
        (["--sensitivity-search", "FUNCS:missing", "--columns", '{"x": "Float64"}', "--claimed", "1"], "sensitivity_search"),
        (["--sensitivity-search", "FUNCS:clamped_sum", "--columns", '{"x": "Decimal"}', "--claimed", "1"], "columns"),
        (["--sensitivity-search", "FUNCS:clamped_sum", "--columns", "not json", "--claimed", "1"], "columns"),
        (["--sensitivity-search", "FUNCS:clamped_sum", "--columns", '{"x": "Float64"}'], "claimed"),
        (
            ["--sensitivity-search", "FUNCS:clamped_sum", "--columns", '{"x": "Float64"}', "--claimed", "1", "--norm", "l3"],
            "norm",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(functions: str, extra: list[str], parameter: str) -> None:
    result = runner.invoke(app, ["witness", *[e.replace("FUNCS", functions) for e in extra]])
    assert result.exit_code == 2, result.output
    flag = "--" + parameter.replace("_", "-")  # the message names the flag typed
    assert flag in result.output and "Traceback" not in result.output


def test_cli_a_failing_function_is_reported_in_one_line(functions: str) -> None:
    result = runner.invoke(
        app, ["witness", "--sensitivity-search", f"{functions}:broken", "--columns", '{"x": "Int8"}', "--claimed", "1"]
    )
    assert result.exit_code == 2 and "RuntimeError" in result.output and "Traceback" not in result.output


# --- what a release's witness says it proved --------------------------------------------------------------


def test_a_release_witness_names_what_it_proved_and_the_search_behind_delta() -> None:
    frame = pl.DataFrame({"x": [12.0, None, 15.0]})
    session = dpwitness.Session(frame, epsilon=3.0, neighbours="replace-one", seed=1)
    total = session.sum("x", (10, 20), epsilon=1.0)
    report = total.witness()
    assert report.ok and "declared Δ" in report.proves
    assert report.sensitivity_search is not None
    assert "sensitivity_search" in report.sensitivity_search and "sum under replace-one" in report.sensitivity_search
    assert "test_sensitivity_library.py" in report.sensitivity_search
    composite = session.mean("x", (10, 20), epsilon=1.0).witness()
    assert composite.sensitivity_search is not None and "mean under replace-one" in composite.sensitivity_search
    bare = dpwitness.Laplace(sensitivity=1.0, epsilon=1.0).release(0.0, seed=1).witness()
    assert bare.sensitivity_search is None  # Δ declared by the caller: nothing checked it
    assert report.to_dict()["sensitivity_search"] == report.sensitivity_search


def test_the_benchmark_finds_the_old_bug_at_a_tiny_size() -> None:
    """bench/bench_sensitivity.py at one seed, so that the benchmark script cannot rot."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "bench_sensitivity.py"
    spec = importlib.util.spec_from_file_location("bench_sensitivity", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.find_the_old_bug(1)
    assert [r["found"] for r in rows] == [True, True]
    assert all(r["fixed_delta"] == 20.0 and r["shift"] > bench.OLD_DELTA for r in rows)
    assert "| Polars engine, library Query | 1 | 1/1 |" in bench.table(rows)
