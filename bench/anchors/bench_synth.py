"""What a check of a SmartNoise Synth fit costs: one unnoised fit per synthesizer, one replay of
its noise calls, and OpenDP's float Laplace (snsynth's noise) per invocation.

Run in the SmartNoise Synth venv (built by bench/anchors/setup.sh):

    .venv-synth/bin/python bench/anchors/bench_synth.py

Prints one line per figure and the machine's load (the figures are wall-clock medians of a few
runs on the tests' tables, tests/support/targets_synth_user.py).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    import opendp.prelude as dp
    import polars as pl
    import targets_synth_user as user

    from dpwitness.targets import recording

    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    table = pl.DataFrame({"sex": ["F", "M", "F", "F", "M"], "education": ["school", "college", "school", "degree", "school"]})
    for name in ("mwem_declared", "mst_declared", "aim_declared"):
        fn = getattr(user, name)

        def unnoised(fn: Callable[[Any], Any] = fn) -> Any:
            with recording("unnoised") as recorder:
                fn(table)
            return recorder

        recorder = unnoised()  # warm (JAX compiles on the first fit)
        seconds = median_seconds(unnoised, 3)
        replays: list[Callable[[], Any]] = [call.replay for call in recorder.calls if call.replay is not None]

        def replay_all(replays: list[Callable[[], Any]] = replays) -> list[Any]:
            return [noise() for noise in replays]

        replay = median_seconds(replay_all, 50)
        print(
            f"{name}: {len(recorder.calls)} noise calls; unnoised fit {seconds:.3g} s; replay of its noise {replay * 1e3:.3g} ms"
        )
    dp.enable_features("floating-point", "contrib")
    laplace = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 20.0)
    per_call = median_seconds(lambda: [laplace(0.0) for _ in range(1000)], 5) / 1000
    print(f"OpenDP {dp.__version__} float Laplace, one invocation: {per_call * 1e3:.3g} ms")
    print(f"load (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
