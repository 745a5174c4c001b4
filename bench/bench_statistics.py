"""Benchmark: DP statistics through the Session against Polars without privacy, OpenDP, and Spark.

    python3 bench/bench_statistics.py [--rows 10000000] [--spark-rows 10000000,100000000] [--json out.json]

On a generated Parquet table (``bench/gen_parquet.py``: ``user_id`` with ~4 rows per user,
``age`` in [0, 100], ``category`` with 20 values; generated once and cached under the
gitignored ``bench/data/``) it times, in one run:

* count, sum(age), mean(age) and histogram(category) with no privacy, in plain Polars
  (``pl.scan_parquet(...).select(pl.len())``, ``pl.col("age").sum()``, ``.mean()``,
  ``group_by("category").agg(pl.len())``);
* the same four as DP releases through ``dpwitness.Session`` (Polars engine, ε = 1 each,
  bounds (0, 100), the 20 categories declared), then again with
  ``privacy_unit="user_id", max_contributions=5``; for the bounded run, also plain Polars
  keeping the *first* 5 rows per user (the cheapest non-private bounding) to show what the
  random selection costs;
* the same DP queries through OpenDP 0.16's Polars integration (``dp.Context.compositor``,
  run by ``bench/anchors/opendp_polars.py`` in the anchors venv: ``bash bench/anchors/setup.sh``);
  the column is reported missing when that venv is absent;
* the DP queries and their plain Spark equivalents through a local Spark session
  (``local[2]``) at each ``--spark-rows`` size, to show how time grows.

Every measurement runs in its own subprocess (this script with ``--worker``), so its peak
RSS (``ru_maxrss``) is its own. Each worker runs the query once to warm up (file in the page
cache, plans compiled) and then ``--repeats`` timed times; the median is reported. For the
DP runs the worker also times the engine's exact aggregation alone (``engine_s``) and the
noise calibration alone (``calibrate_s``), so that the session's overhead can be located.

Targets (issue 3): each DP statistic within 1.5× of plain Polars' time for the same aggregate;
≥ 10× faster than OpenDP's Polars context; peak memory within 1.5× of plain Polars'.

``--fixed-cost N`` (issue 31, item 3) measures only the fixed cost per release: the median CPU
and wall time of a DP count on a 1-row in-memory frame over N releases (target ≤ 0.3 ms CPU), and
a DP count on a ``--rows``-row in-memory frame against Polars' exact count (target ≤ 2×).

``--clamped N`` (issue 31, item 3) times only the unbounded DP sum and mean (the whole release)
against Polars' own clamped aggregate and the plain one, N interleaved rounds in one process, CPU
and wall (target: DP ≤ 1.2× the clamped aggregate, CPU).

``filtered`` (issue 11) is a DP mean of ``age`` over the rows where ``FILTER`` holds, against
plain Polars running the same filter, clamp and mean (and the same in Spark, at each size):
target within 1.5× of Polars at 10M rows, and Spark's time growing linearly with the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from gen_parquet import CATEGORIES, generate  # noqa: E402  (bench/ is not a package)

STATS = ("count", "sum", "mean", "histogram", "filtered")
BOUNDS = (0, 100)
#: The row filter of the ``filtered`` statistic (a DP mean of age), in dpwitness' language.
FILTER = "category in ['c00', 'c01', 'c02', 'c03', 'c04'] and age >= 30"
FILTER_CATEGORIES = ["c00", "c01", "c02", "c03", "c04"]
TARGET_TIME = 1.5
TARGET_OPENDP = 10.0
TARGET_MEMORY = 1.5


# --- workers: one measurement per process ----------------------------------------------------


def _timed(run: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    value = run()  # warm-up: not counted
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - started)
    return times, value


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _age_aggregate(stat: str, *, clamp: bool) -> Any:
    """Polars' own ``sum`` or ``mean`` of ``age`` as a user writes it, clamped to BOUNDS with ``clip`` or not."""
    import polars as pl

    age = pl.col("age").clip(*BOUNDS) if clamp else pl.col("age")
    return age.sum() if stat == "sum" else age.mean()


def worker_polars(path: str, stat: str, repeats: int, first_k: int | None) -> dict[str, Any]:
    """Plain Polars, no privacy: the aggregate as a user would write it (optionally first-k rows per user).

    Timed with both the streaming and the default (in-memory) engine; the faster median is the
    time baseline, so the DP engine (which always streams) is not flattered by a slower default.
    The memory baseline is the peak RSS after the streaming runs (the DP engine's mode); the
    peak after both is ``peak_rss_all_mb``.
    """
    import polars as pl

    def frame() -> pl.LazyFrame:
        scan = pl.scan_parquet(path)
        if first_k is not None:
            scan = scan.filter(pl.int_range(pl.len()).over("user_id") < first_k)
        return scan

    plans: dict[str, Callable[[], pl.LazyFrame]] = {
        "count": lambda: frame().select(pl.len()),
        "sum": lambda: frame().select(_age_aggregate("sum", clamp=False)),
        "mean": lambda: frame().select(_age_aggregate("mean", clamp=False)),
        "histogram": lambda: frame().group_by("category").agg(pl.len()),
        "filtered": lambda: (
            frame()
            .filter(pl.col("category").is_in(FILTER_CATEGORIES) & (pl.col("age") >= 30))
            .select(pl.col("age").clip(*BOUNDS).mean())
        ),
    }
    streaming, value = _timed(lambda: plans[stat]().collect(engine="streaming"), repeats)
    streaming_rss = _peak_rss_mb()  # the DP engine streams: this is the memory baseline
    in_memory, _ = _timed(lambda: plans[stat]().collect(), repeats)
    fastest = min((in_memory, streaming), key=statistics.median)
    clamped: dict[str, Callable[[], pl.LazyFrame]] = {  # what DP must add to the scan: the clamp
        "sum": lambda: frame().select(_age_aggregate("sum", clamp=True)),
        "mean": lambda: frame().select(_age_aggregate("mean", clamp=True)),
    }
    extra: dict[str, Any] = {}
    if stat in clamped:
        clamped_times, _ = _timed(lambda: clamped[stat]().collect(engine="streaming"), repeats)
        extra["clamped_s"] = statistics.median(clamped_times)
    return {
        **extra,
        "times_s": fastest,
        "streaming_peak_rss_mb": streaming_rss,
        "in_memory_s": statistics.median(in_memory),
        "streaming_s": statistics.median(streaming),
        "value": value.item() if value.shape == (1, 1) else value.height,
        "polars": pl.__version__,
    }


def _dp_call(session: Any, stat: str) -> Callable[[], Any]:
    calls: dict[str, Callable[[], Any]] = {
        "count": lambda: session.count(epsilon=1.0),
        "sum": lambda: session.sum("age", BOUNDS, epsilon=1.0),
        "mean": lambda: session.mean("age", BOUNDS, epsilon=1.0),
        "histogram": lambda: session.histogram("category", CATEGORIES, epsilon=1.0),
        "filtered": lambda: session.mean("age", BOUNDS, epsilon=1.0, where=FILTER),
    }
    return calls[stat]


def _dp_query(session: Any, stat: str) -> Any:
    options: dict[str, dict[str, Any]] = {
        "count": {},
        "sum": {"bounds": BOUNDS},
        "mean": {"bounds": BOUNDS},
        "histogram": {"keys": CATEGORIES},
        "filtered": {"bounds": BOUNDS, "where": FILTER},
    }
    column = None if stat == "count" else ("category" if stat == "histogram" else "age")
    return session.query("mean" if stat == "filtered" else stat, column, epsilon=1.0, **options[stat])


def worker_dpwitness(path: str, stat: str, repeats: int, bound: int | None, engine: str = "polars") -> dict[str, Any]:
    """The DP release through the Session, plus the engine alone and the calibration alone."""
    from dpwitness.noise import GridLaplace
    from dpwitness.session import Session

    unit = {"privacy_unit": "user_id", "max_contributions": bound} if bound is not None else {}
    started = time.perf_counter()
    source: Any = path
    if engine == "spark":
        from dpwitness.engines.spark import local_session

        source = local_session(driver_memory="6g", shuffle_partitions=16).read.parquet(path)
    session = Session(source, epsilon=1e6, engine=engine, **unit)  # type: ignore[arg-type]
    setup = time.perf_counter() - started
    times, release = _timed(_dp_call(session, stat), repeats)
    query = _dp_query(session, stat)
    handle = session._opened()
    key = (1, 2, 3, 4)
    engine_times, _ = _timed(lambda: session.engine.aggregate(handle, query, selection_key=key), repeats)

    def calibrate() -> None:
        for part in query.parts:
            epsilon = query.epsilon_of(part)
            GridLaplace.calibrate(sensitivity=part.sensitivity, epsilon=epsilon, dimension=part.changed_coordinates)

    calibrate_times, _ = _timed(calibrate, repeats)
    value = release.value
    if isinstance(value, dict):
        value = len(value)
    return {
        "times_s": times,
        "engine_s": statistics.median(engine_times),
        "calibrate_s": statistics.median(calibrate_times),
        "setup_s": setup,
        "value": value,
        "epsilon": release.epsilon,
        "sensitivity": release.sensitivity,
    }


def worker_spark_plain(path: str, stat: str, repeats: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from dpwitness.engines.spark import local_session

    spark = local_session(driver_memory="6g", shuffle_partitions=16)
    frame = spark.read.parquet(path)
    queries: dict[str, Callable[[], Any]] = {
        "count": lambda: frame.count(),
        "sum": lambda: frame.agg(F.sum("age")).first()[0],
        "mean": lambda: frame.agg(F.mean("age")).first()[0],
        "histogram": lambda: len(frame.groupBy("category").count().collect()),
        "filtered": lambda: (
            frame.filter(F.col("category").isin(FILTER_CATEGORIES) & (F.col("age") >= 30))
            .agg(F.mean(F.least(F.greatest(F.col("age").cast("double"), F.lit(0.0)), F.lit(100.0))))
            .first()[0]
        ),
    }
    times, value = _timed(queries[stat], repeats)
    return {"times_s": times, "value": value}


def run_worker(args: argparse.Namespace) -> None:
    kind = args.worker
    if kind == "polars":
        result = worker_polars(args.path, args.stat, args.repeats, args.first_k)
    elif kind == "dpwitness":
        result = worker_dpwitness(args.path, args.stat, args.repeats, args.bound)
    elif kind == "spark-dp":
        result = worker_dpwitness(args.path, args.stat, args.repeats, args.bound, engine="spark")
    elif kind == "spark":
        result = worker_spark_plain(args.path, args.stat, args.repeats)
    else:
        raise SystemExit(f"unknown worker {kind}")
    result["median_s"] = statistics.median(result["times_s"])
    result["peak_rss_mb"] = result.pop("streaming_peak_rss_mb", None) or _peak_rss_mb()
    result["peak_rss_all_mb"] = _peak_rss_mb()
    json.dump(result, sys.stdout, default=str)
    print()


# --- the driver ---------------------------------------------------------------------------------


def _subprocess(command: list[str], timeout: float) -> dict[str, Any]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONWARNINGS="ignore")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    parsed: dict[str, Any] = json.loads(lines[-1])
    return parsed


def measure(
    kind: str, path: Path, stat: str, repeats: int, *, bound: int | None = None, first_k: int | None = None, timeout: float = 1800
) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        kind,
        "--path",
        str(path),
        "--stat",
        stat,
        "--repeats",
        str(repeats),
    ]
    if bound is not None:
        command += ["--bound", str(bound)]
    if first_k is not None:
        command += ["--first-k", str(first_k)]
    result = _subprocess(command, timeout)
    result.update(system=kind, stat=stat, bound=bound, first_k=first_k)
    return result


def anchors_python() -> Path | None:
    venv = Path(os.environ.get("DPW_ANCHORS_VENV", REPO / ".venv-anchors"))
    python = venv / "bin" / "python"
    return python if python.exists() else None


def measure_opendp(path: Path, rows: int, stat: str, repeats: int, *, bound: int | None = None) -> dict[str, Any]:
    python = anchors_python()
    if python is None:
        return {
            "system": "opendp",
            "stat": stat,
            "bound": bound,
            "error": "anchors venv missing (run: bash bench/anchors/setup.sh)",
        }
    command = [
        str(python),
        str(HERE / "anchors" / "opendp_polars.py"),
        str(path),
        "--stat",
        stat,
        "--rows",
        str(rows),
        "--repeats",
        str(repeats),
    ]
    if bound is not None:
        command += ["--max-contributions", str(bound)]
    result = _subprocess(command, 1800)
    if result.get("error") is None:
        result.pop("error", None)
    result.update(system="opendp", stat=stat, bound=bound)
    return result


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 0.01:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _verdict(value: float | None, target: float, *, at_least: bool = False) -> str:
    if value is None:
        return "—"
    ok = value >= target if at_least else value <= target
    return f"{value:.2f}× {'✓' if ok else '✗'}" if value < 100 else f"{value:.0f}× {'✓' if ok else '✗'}"


def _find(results: list[dict[str, Any]], system: str, stat: str, bound: int | None, first_k: int | None = None) -> dict[str, Any]:
    for r in results:
        if (r["system"], r["stat"], r.get("bound"), r.get("first_k")) == (system, stat, bound, first_k) and r.get("rows") is None:
            return r
    return {}


def _measured(results: list[dict[str, Any]]) -> list[str]:
    """The statistics of ``STATS`` that this run measured (in ``STATS`` order)."""
    return [stat for stat in STATS if any(r["stat"] == stat for r in results)]


def polars_table(results: list[dict[str, Any]], bound: int | None) -> tuple[list[str], list[dict[str, Any]]]:
    """One Markdown table: the DP Session against plain Polars and OpenDP (``bound``: max_contributions or None).

    Without bounding the baseline is the plain aggregate. With bounding it is plain Polars
    keeping the first ``bound`` rows per user (the same work without the privacy); the ratio
    to the plain, unbounded aggregate is shown as well.
    """
    if bound is None:
        title = "one row per person (add/remove one row)"
        header = "| statistic | Polars, no privacy (with clamp) | dpwitness DP (engine alone) | DP ÷ Polars (≤ 1.5×) "
    else:
        title = f"privacy_unit=user_id, max_contributions={bound}"
        header = f"| statistic | Polars, first {bound} rows per user, no privacy | dpwitness DP (engine alone) "
        header += "| DP ÷ Polars (≤ 1.5×) "
    lines = [
        f"#### {title}",
        "",
        header + "| OpenDP | OpenDP ÷ DP (≥ 10×) | RSS Polars | RSS DP | RSS ratio (≤ 1.5×) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    summary = []
    for stat in _measured(results):
        plain = _find(results, "polars", stat, None)
        baseline = plain if bound is None else _find(results, "polars", stat, None, bound)
        dp, opendp = _find(results, "dpwitness", stat, bound), _find(results, "opendp", stat, bound)
        time_ratio = _ratio(dp.get("median_s"), baseline.get("median_s"))
        plain_ratio = _ratio(dp.get("median_s"), plain.get("median_s"))
        opendp_ratio = _ratio(opendp.get("median_s"), dp.get("median_s"))
        memory_ratio = _ratio(dp.get("peak_rss_mb"), baseline.get("peak_rss_mb"))
        base_cell = _fmt(baseline.get("median_s"))
        if bound is None and "clamped_s" in baseline:
            base_cell += f" ({_fmt(baseline['clamped_s'])})"
        dp_cell = f"error: {dp['error'][:60]}" if dp.get("error") else f"{_fmt(dp.get('median_s'))} ({_fmt(dp.get('engine_s'))})"
        ratio_cell = _verdict(time_ratio, TARGET_TIME)
        if bound is not None:
            ratio_cell += f"; {plain_ratio:.0f}× the plain aggregate" if plain_ratio is not None else ""
        opendp_cell = _fmt(opendp.get("median_s")) if opendp and not opendp.get("error") else "missing"
        lines.append(
            f"| {stat} | {base_cell} | {dp_cell} | {ratio_cell} | {opendp_cell} "
            f"| {_verdict(opendp_ratio, TARGET_OPENDP, at_least=True)} | {baseline.get('peak_rss_mb', 0):.0f} MB "
            f"| {dp.get('peak_rss_mb', 0):.0f} MB | {_verdict(memory_ratio, TARGET_MEMORY)} |"
        )
        summary.append(
            {
                "stat": stat,
                "bound": bound,
                "dp_over_polars": time_ratio,
                "dp_over_plain_polars": plain_ratio,
                "opendp_over_dp": opendp_ratio,
                "memory_ratio": memory_ratio,
            }
        )
    return lines, summary


def spark_table(results: list[dict[str, Any]], sizes: list[int]) -> list[str]:
    """Spark: the plain aggregate, the DP release, and the DP release with bounding, per table size."""

    def cell(system: str, stat: str, rows: int, bounded: bool) -> str:
        found = [
            r
            for r in results
            if r["system"] == system and r["stat"] == stat and r.get("rows") == rows and (r.get("bound") is not None) == bounded
        ]
        if not found:
            return "—"
        last = found[-1]
        return f"error: {last['error'][:40]}" if last.get("error") else _fmt(last.get("median_s"))

    bound = next((r["bound"] for r in results if r.get("rows") is not None and r.get("bound") is not None), "k")
    header = (
        "| statistic | "
        + " | ".join(f"{n / 1e6:g}M: plain | {n / 1e6:g}M: DP | {n / 1e6:g}M: DP, ≤ {bound} rows/user" for n in sizes)
        + " |"
    )
    lines = ["#### Spark (local[2]), time as the table grows", "", header, "|---|" + "---|---|---|" * len(sizes)]
    for stat in _measured([r for r in results if r.get("rows") is not None]):
        cells = []
        for rows in sizes:
            cells += [cell("spark", stat, rows, False), cell("spark-dp", stat, rows, False), cell("spark-dp", stat, rows, True)]
        lines.append(f"| {stat} | " + " | ".join(cells) + " |")
    return lines


def render(payload: dict[str, Any]) -> str:
    """The Markdown report of a run (also from a saved ``--json`` file: ``--report FILE``)."""
    results, k = payload["results"], payload["max_contributions"]
    load = payload["machine"].get("load_average")
    report = [
        f"### Statistics benchmark: {payload['rows']:,} rows",
        "",
        f"Median of {payload['repeats']} runs (Spark: {payload.get('spark_repeats', 2)}, bounded Spark: 1) "
        "after one warm-up, one process per measurement; "
        f"{payload['machine']['cpus']} CPUs, load average at the end {load[0]:.1f}"
        if load
        else "",
        "",
    ]
    for bound in (None, k) if any(r.get("rows") is None for r in results) else ():
        lines, _ = polars_table(results, bound)
        report += [*lines, ""]
    spark_sizes = sorted({r["rows"] for r in results if r.get("rows") is not None})
    if spark_sizes:
        report += spark_table(results, spark_sizes)
    return "\n".join(report)


def fixed_cost(releases: int = 2000) -> dict[str, float]:
    """The fixed cost per release (issue 31, item 3): a DP count on a 1-row in-memory frame,
    ``releases`` times after a warm-up; CPU (``process_time``) and wall µs per release."""
    import polars as pl

    import dpwitness as dw

    session = dw.Session(pl.DataFrame({"age": [1.0]}), epsilon=1e12)
    for _ in range(50):  # warm-up: the calibration tables of this (Δ, ε), the plan check
        session.count(epsilon=1.0)
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(releases):
        c, w = time.process_time(), time.perf_counter()
        session.count(epsilon=1.0)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return {"cpu_us": statistics.median(cpu) * 1e6, "wall_us": statistics.median(wall) * 1e6, "releases": releases}


def count_in_memory(rows: int, repeats: int) -> dict[str, float]:
    """A DP count on a ``rows``-row in-memory frame against Polars' exact count of it (medians, s)."""
    import polars as pl

    import dpwitness as dw

    frame = pl.DataFrame({"age": pl.int_range(rows, eager=True) % 101})
    session = dw.Session(frame, epsilon=1e12)
    runs = {
        "dp": lambda: session.count(epsilon=1.0),
        "polars": lambda: frame.lazy().select(pl.len()).collect(),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(repeats):
        for name, run in runs.items():
            c, w = time.process_time(), time.perf_counter()
            run()
            times[name].append((time.process_time() - c, time.perf_counter() - w))
    out: dict[str, float] = {}
    for name, pairs in times.items():
        out[f"{name}_cpu_s"] = statistics.median(c for c, _ in pairs)
        out[f"{name}_wall_s"] = statistics.median(w for _, w in pairs)
    return out


def report_fixed_cost(releases: int, rows: int, repeats: int) -> None:
    import polars as pl

    from machine import cpu_model

    print(f"load {os.getloadavg()[0]:.2f}; CPU {cpu_model()}; polars {pl.__version__}")
    cost = fixed_cost(releases)
    verdict = "met" if cost["cpu_us"] <= 300 else "missed"
    print(
        f"fixed cost per release (DP count, 1-row frame, median of {releases}): "
        f"CPU {cost['cpu_us']:.0f} µs, wall {cost['wall_us']:.0f} µs  (target ≤ 300 µs CPU: {verdict})"
    )
    if rows:
        c = count_in_memory(rows, repeats)
        ratio = c["dp_cpu_s"] / c["polars_cpu_s"]
        print(
            f"DP count on {rows:,} rows in memory: CPU {c['dp_cpu_s'] * 1e3:.3f} ms, wall {c['dp_wall_s'] * 1e3:.3f} ms; "
            f"Polars' exact count CPU {c['polars_cpu_s'] * 1e3:.3f} ms, wall {c['polars_wall_s'] * 1e3:.3f} ms; "
            f"ratio {ratio:.2f}× CPU (median of {repeats})"
        )
    print(f"load {os.getloadavg()[0]:.2f}")


def clamped_ratio(path: Path, repeats: int) -> dict[tuple[str, str], dict[str, float]]:
    """The unbounded DP sum and mean (the whole release, Session over the Parquet file) against Polars'
    own clamped aggregate (``clip(0, 100).sum()`` / ``.mean()``, streaming) and the plain one, interleaved
    in this process (issue 31, item 3: DP ≤ 1.2× the clamped aggregate, CPU)."""
    import polars as pl

    import dpwitness as dw
    from machine import interleaved, spread

    session = dw.Session(str(path), epsilon=1e12)
    runs: dict[tuple[str, str], Callable[[], object]] = {}
    for stat in ("sum", "mean"):
        for side, clamp in (("polars", False), ("polars clamped", True)):
            aggregate = _age_aggregate(stat, clamp=clamp)
            runs[(stat, side)] = lambda e=aggregate: pl.scan_parquet(path).select(e).collect(engine="streaming")  # type: ignore[misc]
        runs[(stat, "dpwitness")] = _dp_call(session, stat)
    samples = interleaved(runs, repeats)
    return {key: spread(values) for key, values in samples.items()}


def report_clamped(rows: int, repeats: int) -> None:
    import polars as pl

    from machine import cpu_model

    path = generate(rows)
    load = os.getloadavg()[0]
    result = clamped_ratio(path, repeats)
    rounds = f"median of {repeats} interleaved rounds [min–max]"
    print(f"{rows:,} rows of Parquet; CPU {cpu_model()}; polars {pl.__version__}; {rounds}")
    for stat in ("sum", "mean"):
        cells = []
        for side in ("polars", "polars clamped", "dpwitness"):
            r = result[(stat, side)]
            cells.append(
                f"{side} CPU {r['cpu_s'] * 1e3:.1f} ms [{r['cpu_min_s'] * 1e3:.1f}–{r['cpu_max_s'] * 1e3:.1f}], "
                f"wall {r['wall_s'] * 1e3:.1f} ms"
            )
        ratio = result[(stat, "dpwitness")]["cpu_s"] / result[(stat, "polars clamped")]["cpu_s"]
        wall = result[(stat, "dpwitness")]["wall_s"] / result[(stat, "polars clamped")]["wall_s"]
        verdict = "met" if ratio <= 1.2 else "missed"
        judged = f"DP ÷ clamped {ratio:.2f}× CPU, {wall:.2f}× wall (target ≤ 1.2× CPU: {verdict})"
        print(f"{stat}: " + "; ".join(cells) + "; " + judged)
    print(f"load {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--spark-rows", default="10000000,100000000", help="comma-separated sizes; empty to skip Spark")
    parser.add_argument("--spark-bounded-rows", default="10000000", help="sizes for Spark DP with bounding; empty to skip")
    parser.add_argument("--spark-from", type=Path, default=None, help="reuse the Spark results of an earlier --json file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--spark-repeats", type=int, default=2)
    parser.add_argument("--max-contributions", type=int, default=5)
    parser.add_argument("--stats", default=",".join(STATS))
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument("--no-polars", action="store_true", help="skip the Polars/OpenDP part (Spark only)")
    parser.add_argument("--json", type=Path, default=None, help="write every measurement here")
    parser.add_argument("--report", type=Path, default=None, help="only print the report of an earlier --json file")
    parser.add_argument(
        "--fixed-cost",
        type=int,
        default=None,
        metavar="RELEASES",
        help="only the fixed cost per release (a DP count on a 1-row frame, RELEASES times) and a count on --rows rows in memory",
    )
    parser.add_argument(
        "--clamped",
        type=int,
        default=None,
        metavar="ROUNDS",
        help="only the unbounded DP sum and mean against Polars' own clamped aggregate, ROUNDS interleaved rounds",
    )
    # worker mode (internal)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--stat", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bound", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--first-k", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args)
        return
    if args.report is not None:
        print(render(json.loads(args.report.read_text())))
        return
    if args.fixed_cost is not None:
        report_fixed_cost(args.fixed_cost, args.rows, args.repeats)
        return
    if args.clamped is not None:
        report_clamped(args.rows, args.clamped)
        return

    stats = [s for s in args.stats.split(",") if s]
    k = args.max_contributions
    started = time.perf_counter()
    t0 = time.perf_counter()
    path = generate(args.rows)
    generated = {str(args.rows): time.perf_counter() - t0}
    results: list[dict[str, Any]] = []

    def log(result: dict[str, Any]) -> None:
        results.append(result)
        label = f"first_k={result['first_k']}" if result.get("first_k") else f"bound={result.get('bound')}"
        what = f"{result['system']:<10} {result['stat']:<9} {label:<10} rows={result.get('rows', args.rows)}"
        outcome = result.get("error") or f"median {_fmt(result.get('median_s'))}, peak RSS {result.get('peak_rss_mb', 0):.0f} MB"
        print(f"  {what}  {outcome}", file=sys.stderr, flush=True)

    for bound in (None, k) if not args.no_polars else ():
        for stat in stats:
            log(measure("polars", path, stat, args.repeats, first_k=bound))
            log(measure("dpwitness", path, stat, args.repeats, bound=bound))
            if not args.no_opendp and stat != "filtered":  # the anchor script has no filter
                log(measure_opendp(path, args.rows, stat, args.repeats if bound is None else 2, bound=bound))

    if args.spark_from is not None:
        earlier = json.loads(args.spark_from.read_text())
        results += [r for r in earlier["results"] if r.get("rows") is not None]
        generated.update({n: t for n, t in earlier.get("generated_s", {}).items() if n not in generated})
    else:
        spark_sizes = [int(x) for x in args.spark_rows.split(",") if x.strip()]
        spark_bounded = {int(x) for x in args.spark_bounded_rows.split(",") if x.strip()}
        for rows in spark_sizes:
            t0 = time.perf_counter()
            spark_path = generate(rows)
            generated.setdefault(str(rows), time.perf_counter() - t0)
            for stat in stats:
                for kind in ("spark", "spark-dp"):
                    result = measure(kind, spark_path, stat, args.spark_repeats)
                    result["rows"] = rows
                    log(result)
                if rows in spark_bounded:
                    result = measure("spark-dp", spark_path, stat, 1, bound=k)
                    result["rows"] = rows
                    log(result)

    summary: list[dict[str, Any]] = []
    for bound in (None, k):
        summary += polars_table(results, bound)[1]
    payload = {
        "rows": args.rows,
        "max_contributions": k,
        "repeats": args.repeats,
        "spark_repeats": args.spark_repeats,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": os.getloadavg(),
        },
        "generated_s": generated,
        "targets": {"dp_over_polars": TARGET_TIME, "opendp_over_dp": TARGET_OPENDP, "memory_ratio": TARGET_MEMORY},
        "summary": summary,
        "results": results,
        "total_s": time.perf_counter() - started,
    }
    print(render(payload))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2, default=str))
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
