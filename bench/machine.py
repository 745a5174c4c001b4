"""What every benchmark states about the machine it ran on, and how it times its runs (bench/ is not a package: the scripts
put this folder on sys.path and import it by name)."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what platform knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds of this process, every thread; wall seconds) of one ``run()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def spread(samples: list[tuple[float, float]]) -> dict[str, float]:
    """The median and the min–max of :func:`timed` samples, CPU and wall."""
    cpu, wall = [s[0] for s in samples], [s[1] for s in samples]
    return {
        "cpu_s": statistics.median(cpu),
        "cpu_min_s": min(cpu),
        "cpu_max_s": max(cpu),
        "wall_s": statistics.median(wall),
        "wall_min_s": min(wall),
        "wall_max_s": max(wall),
    }


def interleaved(runs: Mapping[Key, Callable[[], object]], repeats: int) -> dict[Key, list[tuple[float, float]]]:
    """:func:`timed` samples of every run, ``repeats`` interleaved rounds after one warm-up round that
    is not counted (it warms caches), so that a burst of load hits every run alike."""
    samples: dict[Key, list[tuple[float, float]]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, run in runs.items():
            timing = timed(run)
            if round_:
                samples[name].append(timing)
    return samples
