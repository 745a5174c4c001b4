"""Throughput and memory of dpwitness's Laplace release, against NumPy and the DP anchors.

    python3 bench/bench_noise.py                          # size 10^6, best of 5, anchors if set up
    python3 bench/bench_noise.py --size 1000000 --repeats 5 --json bench/results/noise.json
    python3 bench/bench_noise.py --no-anchors --no-memory # dpwitness and NumPy only
    python3 bench/bench_noise.py --interleaved-only --rounds 7   # issue 31's figures alone (medians, spread)

What is timed (all in one run, the process pinned to one CPU core):

- ``dpwitness.Laplace(sensitivity=1, epsilon=1).release(0.0, size=N)``, with the default secure
  generator (AES-256-CTR keyed from os.urandom, or os.urandom without ``cryptography``) and with
  ``seed=`` (PCG64, not for production): the whole public call, grid rounding, exact integer
  sampling, conversion and the ``Release`` object included; and the discrete Gaussian's release;
- the same secure release one sample per call, in a Python loop of 10^4 calls (per-call cost);
- the raw sampler alone (``GridLaplace.sample``), secure (default and os.urandom) and seeded;
- NumPy's insecure ``Generator.laplace(size=N)`` (float inversion, PCG64): the speed ceiling,
  with none of the guarantees;
- the bit supply alone: ``os.urandom`` and the AES keystream, 16 bytes per draw (what the sampler consumes);
- the CPU time of calibrating 20 never-seen (Δ, ε), tables included (a new query shape's cost);
- the anchors (OpenDP, diffprivlib, python-dp) through ``bench/anchors/noise_anchors.py``, run
  with the anchors venv's Python (``bash bench/anchors/setup.sh`` builds it; it is skipped with a
  message when absent). Their scalar APIs make 10^6 draws slow, so they use ``--anchor-size``.

Issue 31 ("noise at the limit") first, by :func:`measure_interleaved`: ``--rounds`` rounds (≥ 5),
each timing once, in turn, the secure batch release (N samples), NumPy's insecure
``Generator.laplace`` (N), the scalar secure draw ``GridLaplace._draw_one`` (``--calls`` draws,
one Python call each) and the one-number ``release(3.0)`` (``--calls``), then, when the anchors
venv exists, diffprivlib's and python-dp's one-sample calls (a subprocess of the anchors venv per
round, ``--calls`` calls). Each figure is the median over the rounds with its min–max spread, on
CPU time (``process_time``) and wall time, the batch ratio taken per round; the load average is
read before and after, and the targets (batch ≥ 0.5× NumPy, a scalar draw ≤ 5 µs CPU) judged on
the CPU medians.

The older throughput table: samples per second, N / wall time of the best of ``--repeats`` calls (and of the
median), and N / the best CPU time, after one warm-up call. Memory: for N in 10^5, 10^6, 10^7,
each in a fresh child process, the peak RSS growth and the tracemalloc peak of one call; linear
in N means a constant number of bytes per sample. docs/benchmarks.md explains the method and
its limits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpwitness
from dpwitness.noise import OS_BITS, SECURE_BITS, GridLaplace, SeededBits

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from machine import cpu_model  # noqa: E402  (bench/ is not a package)

ANCHORS_SCRIPT = HERE / "anchors" / "noise_anchors.py"
DEFAULT_ANCHORS_VENV = REPO / ".venv-anchors"
MEMORY_SIZES = (10**5, 10**6, 10**7)
TARGET_SECURE_RATE = 1e7
#: Issue 21: the secure release at ≥ 50% of NumPy's insecure sampler, the discrete Gaussian at ≥ 40 M/s,
#: a one-sample release in ≤ 10 µs and a new (Δ, ε)'s tables in ≤ 10 ms.
TARGET_NUMPY_SHARE = 0.5
TARGET_GAUSSIAN_RATE = 4e7
TARGET_CALL_SECONDS = 10e-6
TARGET_TABLE_SECONDS = 10e-3
#: Issue 31, item 4: the secure batch release at ≥ 0.5× NumPy's insecure Laplace (CPU), one secure draw ≤ 5 µs CPU.
TARGET_BATCH_SHARE = 0.5
TARGET_DRAW_SECONDS = 5e-6
SEED = 20240229


def mechanism() -> dpwitness.Laplace:
    return dpwitness.Laplace(sensitivity=1, epsilon=1)


# --- timing ----------------------------------------------------------------------------------
def time_call(run: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) times of ``repeats`` calls of ``run`` after one warm-up call.

    CPU time excludes the time the process waited for the core while other processes ran, so
    it is the steadier figure on a busy machine; wall time is the one a user sees.
    """
    run()
    wall, cpu = [], []
    for _ in range(repeats):
        start_cpu = time.process_time()
        start = time.perf_counter()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def _row(name: str, secure: bool, size: int, timed: tuple[list[float], list[float]], note: str = "") -> dict[str, Any]:
    wall, cpu = timed
    return {
        "name": name,
        "secure": secure,
        "size": size,
        "times": wall,
        "cpu_times": cpu,
        "best_rate": size / min(wall),
        "median_rate": size / statistics.median(wall),
        "cpu_rate": size / max(min(cpu), 1e-9),
        "note": note,
    }


def samplers(size: int) -> list[tuple[str, bool, Callable[[], object], str]]:
    """(name, secure, call, note) for every in-process sampler; each call draws ``size`` samples."""
    laplace = mechanism()
    grid = laplace.noise
    assert grid is not None
    gaussian = dpwitness.Gaussian(sensitivity=1, epsilon=1, delta=1e-6)
    rng = np.random.default_rng(SEED)
    return [
        ("dpwitness release, secure (default)", True, lambda: laplace.release(0.0, size=size), SECURE_BITS.name),
        ("dpwitness release, seeded", False, lambda: laplace.release(0.0, size=size, seed=SEED), "PCG64, not for production"),
        ("dpwitness raw sampler, secure", True, lambda: grid.sample(size, SECURE_BITS), "GridLaplace.sample, integers"),
        ("dpwitness raw sampler, os.urandom", True, lambda: grid.sample(size, OS_BITS), "one syscall per chunk"),
        ("dpwitness raw sampler, seeded", False, lambda: grid.sample(size, SeededBits(SEED)), "GridLaplace.sample, integers"),
        ("dpwitness discrete Gaussian release, secure", True, lambda: gaussian.release(0.0, size=size), "ε = 1, δ = 10^-6"),
        ("NumPy Generator.laplace (insecure)", False, lambda: rng.laplace(0.0, 1.0, size=size), "float inversion, PCG64"),
        ("os.urandom, 16 bytes per sample", True, lambda: os.urandom(16 * size), "bit supply only, no sampling"),
        ("AES-256-CTR keystream, 16 bytes per sample", True, lambda: SECURE_BITS.words(2 * size).view(np.uint8), "bits only"),
    ]


def table_seconds(count: int = 20) -> list[float]:
    """CPU seconds to calibrate ``count`` never-seen (Δ, ε) (tables included), ε spread over [0.01, 10]."""
    out = []
    for i, epsilon in enumerate(np.geomspace(0.01, 10.0, count).tolist()):
        start = time.process_time()
        GridLaplace.calibrate(sensitivity=1.0 + i * 1e-7 + time.time_ns() % 997 * 1e-12, epsilon=epsilon)
        out.append(time.process_time() - start)
    return out


def scalar_loop(calls: int) -> Callable[[], object]:
    """``calls`` one-sample releases, one Python call each: the per-call cost, as the anchors' scalar APIs pay it."""
    laplace = mechanism()

    def run() -> list[object]:
        return [laplace.release(0.0) for _ in range(calls)]

    return run


def measure_throughput(size: int = 10**6, repeats: int = 5, scalar_calls: int = 10_000) -> list[dict[str, Any]]:
    """Best and median samples/s of dpwitness (secure, seeded, raw, one per call) and NumPy at ``size``."""
    rows = [_row(name, secure, size, time_call(call, repeats), note) for name, secure, call, note in samplers(size)]
    calls = min(size, scalar_calls)
    rows.insert(
        2,
        _row(
            "dpwitness release, secure, 1 sample per call",
            True,
            calls,
            time_call(scalar_loop(calls), repeats),
            "release(0.0) in a Python loop",
        ),
    )
    return rows


# --- issue 31: interleaved rounds, medians and spread -------------------------------------------
def _once(run: Callable[[], object]) -> tuple[float, float]:
    """(CPU, wall) seconds of one call."""
    start_cpu, start = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - start_cpu, time.perf_counter() - start


def _anchor_calls(calls: int) -> tuple[dict[str, tuple[float, float]], str | None]:
    """One round of the anchors' one-sample calls: {library: (CPU, wall) seconds per call}, or why not."""
    python = anchors_python()
    if not python.exists():
        return {}, f"anchors skipped: {python} not found; run `bash bench/anchors/setup.sh` to build the venv"
    command = [str(python), str(ANCHORS_SCRIPT), "--size", str(calls), "--repeats", "1"]
    command += ["--only", "diffprivlib", "--only", "python-dp"]
    env = dict(os.environ, OMP_NUM_THREADS="1", POLARS_MAX_THREADS="1", RAYON_NUM_THREADS="1")
    try:
        out = subprocess.run(command, capture_output=True, text=True, check=True, env=env, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return {}, f"anchors skipped: noise_anchors.py failed: {exc} {getattr(exc, 'stderr', '')}"
    figures: dict[str, tuple[float, float]] = {}
    notes = []
    for row in json.loads(out.stdout)["rows"]:
        if "skipped" in row:
            notes.append(f"{row['name']}: {row['skipped']}")
        else:
            figures[f"{row['library']} {row['version']}"] = (row["cpu_times"][0] / calls, row["times"][0] / calls)
    return figures, ("; ".join(notes) or None)


def measure_interleaved(size: int = 10**6, calls: int = 20_000, rounds: int = 7, anchors: bool = True) -> dict[str, Any]:
    """Issue 31's figures: every sampler timed once per round, in turn, for ``rounds`` rounds.

    Returns {"rounds": [{name: (CPU s, wall s) per sample or per call}], "load": (before, after),
    "anchors_skipped": reason or None}; :func:`interleaved_summary` takes medians and spread.
    """
    laplace = mechanism()
    grid = laplace.noise
    assert grid is not None
    rng = np.random.default_rng(SEED)
    draw = grid._draw_one

    def draws() -> None:
        for _ in range(calls):
            draw(SECURE_BITS)

    def releases() -> None:
        release = laplace.release
        for _ in range(calls):
            release(3.0)

    ours: dict[str, tuple[Callable[[], object], int]] = {
        "secure batch release": (lambda: laplace.release(0.0, size=size), size),
        "NumPy Generator.laplace (insecure)": (lambda: rng.laplace(0.0, 1.0, size=size), size),
        "secure scalar draw": (draws, calls),
        "secure release(3.0)": (releases, calls),
    }
    for run, _ in ours.values():
        run()  # warm-up: tables built, pools filled
    load_before = os.getloadavg()
    out: list[dict[str, tuple[float, float]]] = []
    skipped = None if anchors else "anchors not requested (--no-anchors)"
    for _ in range(rounds):
        row = {}
        for name, (run, count) in ours.items():
            cpu, wall = _once(run)
            row[name] = (cpu / count, wall / count)
        if anchors:
            figures, skipped = _anchor_calls(calls)
            row.update(figures)
        out.append(row)
    return {"rounds": out, "load": (load_before, os.getloadavg()), "anchors_skipped": skipped, "size": size, "calls": calls}


def _spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def interleaved_summary(result: dict[str, Any]) -> list[str]:
    """A Markdown table of medians [min–max] over the rounds, the batch ratio, and the verdicts."""
    rounds = result["rounds"]
    names = list(dict.fromkeys(name for row in rounds for name in row))
    lines = [
        f"Interleaved: {len(rounds)} rounds; N = {_size(result['size'])} per batch call, {result['calls']} calls per "
        f"per-call row; load average {result['load'][0][0]:.2f} before, {result['load'][1][0]:.2f} after.",
        "",
        "| what | CPU, median [min–max] | wall, median [min–max] |",
        "| --- | ---: | ---: |",
    ]
    for name in names:
        cpu = _spread([row[name][0] for row in rounds if name in row])
        wall = _spread([row[name][1] for row in rounds if name in row])
        if name in ("secure batch release", "NumPy Generator.laplace (insecure)"):  # per sample: as a rate
            lines.append(
                f"| {name} | {1e-6 / cpu[0]:.1f} M/s [{1e-6 / cpu[2]:.1f}–{1e-6 / cpu[1]:.1f}] "
                f"| {1e-6 / wall[0]:.1f} M/s [{1e-6 / wall[2]:.1f}–{1e-6 / wall[1]:.1f}] |"
            )
        else:
            lines.append(
                f"| {name}, one per call | {cpu[0] * 1e6:.2f} µs [{cpu[1] * 1e6:.2f}–{cpu[2] * 1e6:.2f}] "
                f"| {wall[0] * 1e6:.2f} µs [{wall[1] * 1e6:.2f}–{wall[2] * 1e6:.2f}] |"
            )
    batch, numpy_name = "secure batch release", "NumPy Generator.laplace (insecure)"
    ratio_cpu = _spread([row[numpy_name][0] / row[batch][0] for row in rounds])
    ratio_wall = _spread([row[numpy_name][1] / row[batch][1] for row in rounds])
    draw = _spread([row["secure scalar draw"][0] for row in rounds])
    lines += [
        "",
        f"- secure batch ÷ NumPy's insecure Laplace, per round: CPU {ratio_cpu[0]:.2f}× [{ratio_cpu[1]:.2f}–{ratio_cpu[2]:.2f}], "
        f"wall {ratio_wall[0]:.2f}× [{ratio_wall[1]:.2f}–{ratio_wall[2]:.2f}] "
        f"(target ≥ {TARGET_BATCH_SHARE}×, CPU median: {'MET' if ratio_cpu[0] >= TARGET_BATCH_SHARE else 'NOT MET'})",
        f"- one secure draw: {draw[0] * 1e6:.2f} µs CPU [{draw[1] * 1e6:.2f}–{draw[2] * 1e6:.2f}] "
        f"(target ≤ {TARGET_DRAW_SECONDS * 1e6:.0f} µs, CPU median: {'MET' if draw[0] <= TARGET_DRAW_SECONDS else 'NOT MET'})",
    ]
    if result["anchors_skipped"]:
        lines.append(f"- {result['anchors_skipped']}")
    return lines


# --- memory ----------------------------------------------------------------------------------
def _proc_status_bytes(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM) in bytes, or None off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_memory(size: int, which: str = "dpwitness", *, reset_peak: bool = True) -> dict[str, Any]:
    """Peak memory (bytes) of one call drawing ``size`` samples, measured two ways.

    ``rss_delta``: peak RSS during the call minus RSS before it. On Linux the peak is reset
    first (/proc/self/clear_refs); elsewhere, or with ``reset_peak=False`` (which leaves the
    process's peak alone), it is the growth of ru_maxrss, meaningful only in a fresh process,
    which is how ``measure_memory`` runs it. ``tracemalloc_peak``: the peak of the memory
    traced by Python and NumPy during a second, separate call.
    """
    laplace = mechanism()
    rng = np.random.default_rng(SEED)
    calls: dict[str, Callable[[int], object]] = {
        "dpwitness": lambda n: laplace.release(0.0, size=n),
        "numpy": lambda n: rng.laplace(0.0, 1.0, size=n),
    }
    call = calls[which]
    call(1000)  # warm-up: tables built, modules loaded

    if reset_peak and _reset_peak_rss() and (before := _proc_status_bytes("VmRSS")) is not None:
        result = call(size)
        peak = _proc_status_bytes("VmHWM") or before
        rss_method = "VmHWM − VmRSS"
    else:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        result = call(size)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        rss_method = "ru_maxrss growth"
    del result

    tracemalloc.start()
    tracemalloc.reset_peak()
    result = call(size)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return {
        "which": which,
        "size": size,
        "tracemalloc_peak": traced_peak,
        "rss_delta": peak - before,
        "rss_method": rss_method,
    }


def measure_memory(sizes: tuple[int, ...] = MEMORY_SIZES) -> list[dict[str, Any]]:
    rows = []
    for which in ("dpwitness", "numpy"):
        for size in sizes:
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(size), which],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(out.stdout))
    return rows


# --- anchors ---------------------------------------------------------------------------------
def anchors_python() -> Path:
    return Path(os.environ.get("DPW_ANCHORS_VENV", str(DEFAULT_ANCHORS_VENV))) / "bin" / "python"


def measure_anchors(size: int, repeats: int) -> tuple[list[dict[str, Any]], str | None]:
    """Rows from noise_anchors.py run in the anchors venv, or ([], why they were skipped)."""
    python = anchors_python()
    if not python.exists():
        return [], f"anchors skipped: {python} not found; run `bash bench/anchors/setup.sh` to build the venv"
    env = dict(os.environ, OMP_NUM_THREADS="1", POLARS_MAX_THREADS="1", RAYON_NUM_THREADS="1")
    try:
        out = subprocess.run(
            [str(python), str(ANCHORS_SCRIPT), "--size", str(size), "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=3600,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return [], f"anchors skipped: noise_anchors.py failed: {exc} {getattr(exc, 'stderr', '')}"
    return json.loads(out.stdout)["rows"], None


# --- machine ---------------------------------------------------------------------------------
def pin_to_one_core(cpu: int | None) -> int | None:
    """Restrict this process (and its children) to one CPU; returns the CPU or None if unsupported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {chosen})
    return chosen


def machine(core: int | None) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "pinned_core": core,
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dpwitness": getattr(dpwitness, "__version__", "?"),
    }


# --- report ----------------------------------------------------------------------------------
def _rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.1f} M/s"
    if x >= 1e3:
        return f"{x / 1e3:.0f} k/s"
    return f"{x:.0f} /s"


def _size(n: int) -> str:
    exponent = len(str(n)) - 1
    return f"10^{exponent}" if n == 10**exponent else str(n)


def throughput_table(rows: list[dict[str, Any]]) -> str:
    numpy_rate = next((r["best_rate"] for r in rows if r["name"].startswith("NumPy")), None)
    secure_rate = next((r["best_rate"] for r in rows if r["name"].startswith("dpwitness release, secure")), None)
    lines = [
        "| sampler | secure | N per call | best (wall) | median (wall) | best (CPU) | NumPy ÷ this | secure ÷ this |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['name']} | | | skipped: {r['skipped']} | | | | |")
            continue
        vs_numpy = f"{numpy_rate / r['best_rate']:.1f}×" if numpy_rate else ""
        vs_secure = f"{secure_rate / r['best_rate']:.2g}×" if secure_rate else ""
        lines.append(
            f"| {r['name']} | {'yes' if r['secure'] else 'no'} | {_size(r['size'])} | {_rate(r['best_rate'])} "
            f"| {_rate(r['median_rate'])} | {_rate(r['cpu_rate']) if 'cpu_rate' in r else ''} | {vs_numpy} | {vs_secure} |"
        )
    return "\n".join(lines)


def memory_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| sampler | N | tracemalloc peak | bytes/sample | peak RSS growth | bytes/sample |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        n = r["size"]
        lines.append(
            f"| {r['which']} | {_size(n)} | {r['tracemalloc_peak'] / 2**20:.1f} MiB | {r['tracemalloc_peak'] / n:.1f} "
            f"| {r['rss_delta'] / 2**20:.1f} MiB | {r['rss_delta'] / n:.1f} |"
        )
    return "\n".join(lines)


def memory_fit(rows: list[dict[str, Any]]) -> list[str]:
    """Least-squares line peak = a·N + c per sampler: linear in N means a constant a."""
    lines = []
    for which in sorted({r["which"] for r in rows}):
        mine = [r for r in rows if r["which"] == which]
        if len(mine) < 2:
            continue
        sizes = np.array([r["size"] for r in mine], dtype=np.float64)
        peaks = np.array([r["tracemalloc_peak"] for r in mine], dtype=np.float64)
        slope, intercept = np.polyfit(sizes, peaks, 1)
        lines.append(f"- {which}: peak ≈ {slope:.1f} bytes × N + {intercept / 2**20:.1f} MiB (tracemalloc, least squares)")
    return lines


def verdict(rows: list[dict[str, Any]], tables: list[float] | None = None) -> list[str]:
    """The issue's targets, judged on wall time and on CPU time (steadier on a busy machine)."""
    by_name = {r["name"]: r for r in rows if "best_rate" in r}
    secure_row = by_name["dpwitness release, secure (default)"]
    numpy_row = by_name["NumPy Generator.laplace (insecure)"]
    gaussian_row = by_name.get("dpwitness discrete Gaussian release, secure")
    single = by_name.get("dpwitness release, secure, 1 sample per call")
    secure = secure_row["best_rate"]
    lines = []
    for basis, key in (("wall", "best_rate"), ("CPU", "cpu_rate")):
        rate = secure_row[key]
        share = rate / numpy_row[key]
        line = (
            f"- {basis}: secure release {_rate(rate)} = {share:.0%} of NumPy's insecure sampler "
            f"(target ≥ {TARGET_NUMPY_SHARE:.0%}: {'MET' if share >= TARGET_NUMPY_SHARE else 'NOT MET'})"
        )
        if gaussian_row is not None:
            g = gaussian_row[key]
            met = "MET" if g >= TARGET_GAUSSIAN_RATE else "NOT MET"
            line += f"; discrete Gaussian {_rate(g)} (target ≥ {_rate(TARGET_GAUSSIAN_RATE)}: {met})"
        if single is not None:
            per_call = 1.0 / single[key]
            met = "MET" if per_call <= TARGET_CALL_SECONDS else "NOT MET"
            line += f"; one-sample release {per_call * 1e6:.1f} µs (target ≤ 10 µs: {met})"
        lines.append(line)
    if tables:
        median, worst = statistics.median(tables), max(tables)
        lines.append(
            f"- a new (Δ, ε)'s calibration and tables: median {median * 1e3:.1f} ms, worst {worst * 1e3:.1f} ms CPU over "
            f"{len(tables)} ε in [0.01, 10] (target ≤ 10 ms: {'MET' if median <= TARGET_TABLE_SECONDS else 'NOT MET'}, median)"
        )
    anchors = [r for r in rows if "library" in r and "best_rate" in r]
    if anchors:
        best = max(anchors, key=lambda r: r["cpu_rate"])
        secure_cpu = by_name["dpwitness release, secure (default)"]["cpu_rate"]
        lines.append(
            f"- fastest anchor: {best['name']} at {_rate(best['best_rate'])} wall, {_rate(best['cpu_rate'])} CPU; "
            f"dpwitness secure is {secure / best['best_rate']:.0f}× that (wall), {secure_cpu / best['cpu_rate']:.0f}× (CPU)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Laplace noise throughput and memory benchmark (issue 2)")
    parser.add_argument("--size", type=int, default=10**6, help="samples per timed call (default 10^6)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per sampler; best and median reported")
    parser.add_argument("--anchor-size", type=int, default=10**5, help="samples per call for the anchors (default 10^5)")
    parser.add_argument("--no-anchors", action="store_true", help="skip OpenDP, diffprivlib and python-dp")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last allowed one)")
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this JSON file")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds for issue 31's figures (≥ 5; default 7)")
    parser.add_argument("--calls", type=int, default=20_000, help="one-sample calls per round and per-call row (default 20,000)")
    parser.add_argument("--interleaved-only", action="store_true", help="only issue 31's interleaved figures")
    parser.add_argument("--memory-child", nargs=2, metavar=("N", "WHICH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.memory_child:
        print(json.dumps(peak_memory(int(args.memory_child[0]), args.memory_child[1])))
        return 0

    core = pin_to_one_core(args.cpu)
    info = machine(core)
    print("# Laplace noise benchmark\n")
    print(
        f"{info['date']} · CPU: {info['cpu']} ({info['cpus']} cores, pinned to core {core}) · "
        f"load average {info['load_average'][0]:.2f} · Python {info['python']} · NumPy {info['numpy']}"
    )
    print(f"dpwitness from {Path(dpwitness.__file__).parent}; secure source: {SECURE_BITS.name}")
    print("\n## Issue 31: secure noise against NumPy and the anchors, interleaved rounds\n")
    interleaved = measure_interleaved(args.size, args.calls, max(args.rounds, 1), anchors=not args.no_anchors)
    print("\n".join(interleaved_summary(interleaved)))
    if args.interleaved_only:
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"machine": info, "interleaved": interleaved}, indent=2))
            print(f"\nfigures written to {args.json}")
        return 0
    print(f"\nMechanism: Laplace(sensitivity=1, epsilon=1), value 0.0; best of {args.repeats} timed calls after one warm-up.\n")

    rows = measure_throughput(args.size, args.repeats)
    skipped = None
    if not args.no_anchors:
        anchor_rows, skipped = measure_anchors(args.anchor_size, args.repeats)
        rows.extend(anchor_rows)
    print("## Throughput (samples per second, one core)\n")
    print(throughput_table(rows))
    if skipped:
        print(f"\n{skipped}")
    print()
    tables = table_seconds()
    print("\n".join(verdict(rows, tables)))

    memory: list[dict[str, Any]] = []
    if not args.no_memory:
        memory = measure_memory()
        print("\n## Peak memory of one call (fresh process per row)\n")
        print(memory_table(memory))
        print()
        print("\n".join(memory_fit(memory)))

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "machine": info,
                    "interleaved": interleaved,
                    "throughput": rows,
                    "tables_cpu_s": tables,
                    "memory": memory,
                    "anchors_skipped": skipped,
                },
                indent=2,
            )
        )
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
