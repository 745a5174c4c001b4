"""Smoke test of bench/bench_noise.py at a tiny size, so the benchmark script cannot rot.

Times nothing that matters (no thresholds on speed): it only checks that the measurement and
report functions run against the current API and return positive figures. No anchors venv needed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_noise.py"


@pytest.fixture(scope="module")
def bench_noise() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_noise", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_noise"] = module
    spec.loader.exec_module(module)
    return module


def test_throughput_rows_are_positive(bench_noise: ModuleType) -> None:
    rows = bench_noise.measure_throughput(size=2000, repeats=2)
    names = {row["name"] for row in rows}
    assert "dpwitness release, secure (default)" in names
    assert "dpwitness release, seeded" in names
    assert "NumPy Generator.laplace (insecure)" in names
    for row in rows:
        assert row["size"] == 2000
        assert len(row["times"]) == 2
        assert row["best_rate"] > 0
        assert row["median_rate"] > 0
        assert row["best_rate"] >= row["median_rate"]
    table = bench_noise.throughput_table(rows)
    assert table.count("\n") == len(rows) + 1
    assert len(bench_noise.verdict(rows)) == 2
    tables = bench_noise.table_seconds(2)
    assert len(tables) == 2 and all(t >= 0 for t in tables)
    assert len(bench_noise.verdict(rows, tables)) == 3


def test_samplers_draw_the_requested_size(bench_noise: ModuleType) -> None:
    for name, _secure, call, _note in bench_noise.samplers(500):
        out = call()
        value = getattr(out, "value", out)
        assert len(value) in (500, 16 * 500), name  # the bit-supply rows return 16 bytes per sample


def test_peak_memory_in_process(bench_noise: ModuleType) -> None:
    row = bench_noise.peak_memory(20_000, "dpwitness", reset_peak=False)
    assert row["tracemalloc_peak"] >= 8 * 20_000  # at least the float64 output
    assert "| dpwitness |" in bench_noise.memory_table([row])
    bigger = bench_noise.peak_memory(40_000, "dpwitness", reset_peak=False)
    assert bigger["tracemalloc_peak"] > row["tracemalloc_peak"]
    assert len(bench_noise.memory_fit([row, bigger])) == 1


def test_missing_anchors_venv_is_skipped_with_a_message(
    bench_noise: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DPW_ANCHORS_VENV", str(tmp_path / "absent"))
    rows, skipped = bench_noise.measure_anchors(10, 1)
    assert rows == []
    assert skipped is not None and "setup.sh" in skipped


def test_csv_scan_benchmark_runs_and_only_the_line_scan_is_sound(tmp_path: Path) -> None:
    """bench/bench_csv_scan.py at a tiny size: every scan answers every query, and one
    unclosed-quote record added to 1,000 is one record only for dpwitness's line scan."""
    path = BENCH.parent / "bench_csv_scan.py"
    spec = importlib.util.spec_from_file_location("bench_csv_scan", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.measure(module.generate(3000, tmp_path / "scan.csv"), repeats=1)
    assert len(rows) == len(module.SCANS) * len(module.QUERIES) and all(row["best_s"] > 0 for row in rows)
    counts = module.unclosed_quote_counts(tmp_path)
    assert counts["lines"] == 1001
    assert counts["quoted"] < 1001 and counts["arrow"] < 1001  # the two rejected scans swallow lines


def test_bounding_benchmark_runs_on_a_small_table(tmp_path: Path) -> None:
    """bench/bench_bounding.py at 20,000 rows: both sides of every statistic are timed, and the report has a row each."""
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_bounding", BENCH.parent / "bench_bounding.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = module.generate(20_000, directory=tmp_path, quiet=True)
    rows = module.measure(path, 5, 1)
    assert [r["stat"] for r in rows] == list(module.STATS)
    assert all(r["dpwitness_cpu_s"] >= 0 and r["polars_first_k_wall_s"] > 0 for r in rows)
    assert module.table(rows, 5).count("\n") == len(rows) + 1
    growth = module.scaling([4_000, 8_000], 5, 1, directory=tmp_path)
    assert [r["rows"] for r in growth] == [4_000, 8_000] and growth[0]["dpwitness_cpu_per_row_vs_smallest"] == 1.0
    assert module.scaling_table(growth).count("\n") == len(growth) + 1


def _explorer_frames() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_explorer_frames", BENCH.parent / "bench_explorer_frames.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_explorer_frames_benchmark_summarises_per_width() -> None:
    """bench/bench_explorer_frames.py's report: nearest-rank p50 and p95 per width, the 8 ms target, the machine."""
    module = _explorer_frames()
    assert module.percentile([4.0, 1.0, 3.0, 2.0], 0.95) == 4.0 and module.percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    drags = [{"frames": 2, "durations_ms": [1.0, 2.0], "measuring": 1}, {"frames": 1, "durations_ms": [9.0], "measuring": 0}]
    row = module.summarise(375, drags)
    assert (row["frames"], row["measuring_frames"], row["p50_ms"], row["p95_ms"], row["max_ms"], row["met"]) == (
        3, 1, 2.0, 9.0, 9.0, False,
    )  # fmt: skip
    assert module.table([row]).splitlines()[-1].startswith("| 375 px | 2 | 3 | 1 | 2.00 ms | 9.00 ms |")
    assert module.cpu_model()


@pytest.mark.browser
@pytest.mark.slow
def test_explorer_frames_benchmark_drags_in_a_real_browser() -> None:
    """One short drag through the script's own code (it cannot rot): frames are measured, none negative."""
    pytest.importorskip("playwright.sync_api")
    module = _explorer_frames()
    executable = module.chromium()
    if executable is None:
        pytest.skip("no Chromium: set DPWITNESS_CHROMIUM or install it (bash scripts/install-browser)")
    from playwright.sync_api import sync_playwright

    with module.explorer() as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=module.CHROMIUM_ARGS)
        try:
            drag = module.drag_frames(browser, url, 375, moves=8)
            paints = module.first_paints(browser, url, 2)
        finally:
            browser.close()
    assert drag["frames"] >= 1 and all(d >= 0 for d in drag["durations_ms"])
    assert len(paints) == 2 and all(p > 0 for p in paints)


def test_interleaved_rounds_report_medians_and_verdicts(
    bench_noise: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 31's interleaved figures at a tiny size: every round times every row; the summary has the verdicts."""
    monkeypatch.setenv("DPW_ANCHORS_VENV", str(tmp_path / "absent"))
    result = bench_noise.measure_interleaved(size=2000, calls=50, rounds=2)
    assert len(result["rounds"]) == 2 and "setup.sh" in result["anchors_skipped"]
    for row in result["rounds"]:
        assert set(row) == {
            "secure batch release",
            "NumPy Generator.laplace (insecure)",
            "secure scalar draw",
            "secure release(3.0)",
        }
        assert all(cpu >= 0 and wall > 0 for cpu, wall in row.values())
    text = "\n".join(bench_noise.interleaved_summary(result))
    assert "÷ NumPy" in text and "one secure draw" in text and text.count("MET") >= 2


def _bench(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location(name, BENCH.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_pass_and_fixed_cost_benchmarks_run_at_a_tiny_size(tmp_path: Path) -> None:
    """bench_sql --one-pass and bench_statistics --fixed-cost (issue 31, items 1 and 3) at a tiny size."""
    sql = _bench("bench_sql")
    path = _bench("gen_parquet").generate(20_000, directory=tmp_path, quiet=True)
    figures = sql.one_pass(path, 1)
    assert set(figures) == {"SQL, one pass", "SQL, one pass per release (before)", "Polars, exact"}
    assert all(cpu >= 0 and wall > 0 for cpu, wall in figures.values())
    statistics_bench = _bench("bench_statistics")
    cost = statistics_bench.fixed_cost(20)
    assert cost["releases"] == 20 and cost["wall_us"] > 0
    count = statistics_bench.count_in_memory(1_000, 2)
    assert count["dp_wall_s"] > 0 and count["polars_wall_s"] > 0
