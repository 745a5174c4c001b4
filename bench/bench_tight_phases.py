"""Where a tight audit's time goes, phase by phase, for one row of DP-Sniper's table.

    python3 bench/bench_tight_phases.py OneTimeRappor --seconds 105
    python3 bench/bench_tight_phases.py Rappor --seconds 105 --workers 0   # all runs in this process

Runs ``audit(..., tight=True, confidence=0.9, seed=2021)`` as bench/bench_dpsniper.py does, with the
auditor's own steps timed from outside (wrapped, not changed): the fast verdict, the tight mode's
fresh paired search sample, its event search, the streamed vector summaries, the paired
thresholds, the counts of the proposals on the search sample, the selection sample, and the final
sample (its drawing and its counting apart). Prints one line per phase with its seconds, share of
the wall time and runs per input, and the load (1-minute average) before and after.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the known-verdict catalogue
from catalogue import dp_sniper_table

audit_run = importlib.import_module("dpwitness.witness.audit.run")
audit_tight = importlib.import_module("dpwitness.witness.audit.tight")


def profile(name: str, seconds: float, workers: int | None) -> None:
    case = next(entry.case for entry in dp_sniper_table() if entry.case.name == name)
    events: list[tuple[str, float, float, int]] = []  # (phase, began, seconds, runs per input), in order
    state = {"tight": float("inf"), "streaming": 0.0, "drawing": 0.0}
    real_tight, real_stream, real_search, real_paired = (
        audit_run.tighten,
        audit_tight._stream,
        audit_run.search,
        audit_tight.paired_candidates,
    )
    real_pairs, real_init = audit_run.Sampler.draw_pairs, audit_run.Sampler.__init__

    def tight(*args: Any, **kwargs: Any) -> Any:
        state["tight"] = time.perf_counter()
        return real_tight(*args, **kwargs)

    def stream(
        sampler: Any, d: Any, d_prime: Any, seeds: Any, n: int, structured: bool, use: Callable[..., None], **kw: Any
    ) -> int:
        label = {"tally": "selection sample", "measure": "final sample"}.get(getattr(use, "__name__", ""), "vector summaries")
        state["streaming"], drawn_before, begun = 1.0, state["drawing"], time.perf_counter()
        try:
            done = real_stream(sampler, d, d_prime, seeds, n, structured, use, **kw)
        finally:
            state["streaming"] = 0.0
        spent, drawn = time.perf_counter() - begun, state["drawing"] - drawn_before
        events.append((f"{label}: drawing", begun, drawn, done))
        events.append((f"{label}: counting events", begun, spent - drawn, 0))
        return done

    def pairs(self: Any, d: Any, d_prime: Any, seeds: Any, n: int) -> Any:
        begun = time.perf_counter()
        result = real_pairs(self, d, d_prime, seeds, n)
        spent = time.perf_counter() - begun
        state["drawing"] += spent
        if not state["streaming"]:
            events.append(("fresh paired search sample", begun, spent, n))
        return result

    def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            begun = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                events.append((label, begun, time.perf_counter() - begun, 0))

        return wrapper

    def init(self: Any, mechanism: Any, deadline: float, **kw: Any) -> None:
        real_init(self, mechanism, deadline, workers=workers)

    audit_run.tighten, audit_tight._stream = tight, stream
    audit_run.search = audit_tight.search = timed("event search", real_search)
    audit_tight.paired_candidates = timed("paired thresholds", real_paired)
    audit_run.Sampler.draw_pairs, audit_run.Sampler.__init__ = pairs, init
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        result = audit_run.audit(
            case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, confidence=0.9, seed=2021, tight=True, max_seconds=seconds
        )
    finally:
        audit_run.tighten, audit_tight._stream = real_tight, real_stream
        audit_run.search = audit_tight.search = real_search
        audit_tight.paired_candidates = real_paired
        audit_run.Sampler.draw_pairs, audit_run.Sampler.__init__ = real_pairs, real_init
    wall = time.perf_counter() - started
    fast = min(state["tight"], started + wall) - started
    print(f"{name}, max_seconds = {seconds:g}, workers = {'default' if workers is None else workers}: {wall:.1f} s wall")
    print(f"  load (1 min) {load_before:.1f} → {os.getloadavg()[0]:.1f}")
    print(
        f"  ε_lb fast {result.epsilon_lower_bound:.4f}, tight {result.tight_epsilon_lower_bound}, "
        f"final sample {result.tight_samples:,} pairs; {result.tight_reason or ''}"
    )
    rows = [
        ("fast verdict (rounds of separate runs and their searches)", fast, result.samples),
        ("  of which event searches", sum(e[2] for e in events if e[0] == "event search" and e[1] < state["tight"]), 0),
    ]
    late: dict[str, tuple[float, int]] = {}
    for label, began, spent, runs in events:
        if began >= state["tight"]:
            old = late.get(label, (0.0, 0))
            late[label] = (old[0] + spent, old[1] + runs)
    rows += [(f"tight: {label}", spent, runs) for label, (spent, runs) in late.items()]
    rest = wall - fast - sum(spent for spent, _ in late.values())
    rows.append(("tight: the rest (views, proposals counted on the search sample…)", rest, 0))
    for label, spent, runs in rows:
        print(f"  {label:66s} {spent:6.1f} s {100 * spent / wall:4.0f}%  {f'{runs:,} runs per input' if runs else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="a DP-Sniper class name (e.g. OneTimeRappor)")
    parser.add_argument("--seconds", type=float, default=105.0, help="max_seconds (default 105)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: the auditor's choice)")
    args = parser.parse_args()
    profile(args.name, args.seconds, args.workers)


if __name__ == "__main__":
    main()
