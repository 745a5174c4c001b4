"""DP-Sniper's table (Bichsel et al., S&P 2021) re-run by the tight auditor, one run per call.

    python3 bench/bench_dpsniper.py                    # all 20 rows, 105 s each (about 40 minutes)
    python3 bench/bench_dpsniper.py --only Rappor SparseVectorTechnique3 --seconds 60

Every mechanism of :func:`catalogue.dp_sniper_table` is written as people write
it and called once per run (``mechanism(data, rng)``: no ``size``, nothing vectorised), on
DP-Sniper's witness pair, with ``audit(..., tight=True, confidence=0.9, max_seconds=…)`` (the tight
mode pairs the runs of a per-call mechanism: common random numbers, docs/audit.md). Target
(issue 18): the certified bound (the larger of the fast and the tight one; both hold together at
90%) ≥ DP-Sniper's 90% lower bound (logistic regression, the table's first column; the neural
network's is shown beside it), in ≤ 120 s per row. Writes bench/results/dpsniper.json after every
row and prints a Markdown table. Not run in CI (tests/witness/test_catalogue.py audits each row briefly).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from dpwitness import audit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the known-verdict catalogue
from catalogue import dp_sniper_table

OUT = Path(__file__).parent / "results" / "dpsniper.json"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def _cpu() -> float:
    """CPU seconds of this process and of its ended children (the audit's worker processes, stopped when it returns)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run(seconds: float, only: set[str] | None, out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for entry in dp_sniper_table():
        case = entry.case
        if only and case.name not in only:
            continue
        load_before = _load()
        started, cpu = time.perf_counter(), _cpu()
        result = audit(
            case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, confidence=0.9, seed=2021, tight=True, max_seconds=seconds
        )
        wall, cpu = time.perf_counter() - started, _cpu() - cpu
        ours = result.best_epsilon_lower_bound
        reg, nn = entry.published
        rows.append(
            {
                "mechanism": case.name,
                "claimed": case.epsilon,
                "exact_loss": case.true_loss,
                "private": case.private,
                "dp_sniper_reg": reg,
                "dp_sniper_nn": nn,
                "ours": ours,
                "fast_epsilon_lb": result.epsilon_lower_bound,
                "tight_epsilon_lb": result.tight_epsilon_lower_bound,
                "verdict": result.verdict,
                "met_reg": ours >= reg and wall <= 120.0,
                "met_both": ours >= max(reg, nn) and wall <= 120.0,
                "fast_samples_per_input": result.samples,
                "tight_samples_per_input": result.tight_samples,
                "seconds": wall,
                "cpu_seconds": cpu,
                "paired": result.tight_paired,
                "tight_cells": list(result.tight_cells),
                "event": result.tight_event or result.event,
                "family": result.tight_family or result.family,
                "note": result.tight_reason,
                "load_before": load_before,
                "load_after": _load(),
            }
        )
        print(
            f"  {case.name:28s} ours {ours:.4f}  DP-Sniper {reg:.3f}/{nn:.3f}  {result.verdict:12s} "
            f"{wall:5.0f} s  n = {result.tight_samples:,}  load {_load()}  {result.tight_event or result.event}",
            flush=True,
        )
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"machine": _machine(), "seconds": seconds, "rows": rows}, indent=2, default=str))
    return rows


def _machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}"


def _number(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "—"
    return "∞" if value == math.inf else f"{value:.4g}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| mechanism (DP-Sniper's name) | claimed ε | exact loss | DP-Sniper LCB (reg / NN) | ours | verdict "
        "| runs per input (fast + tight) | paired | seconds (wall / CPU) | ≥ reg | ≥ both | load (1 min, before → after) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['mechanism']} | {r['claimed']:.3g} | {_number(r['exact_loss'])} | {r['dp_sniper_reg']:.3f} / "
            f"{r['dp_sniper_nn']:.3f} | {r['ours']:.4f} | {r['verdict']} | {r['fast_samples_per_input']:,} + "
            f"{r['tight_samples_per_input']:,} | {'yes' if r['paired'] else 'no'} | "
            f"{r['seconds']:.0f} / {r['cpu_seconds']:.0f} | "
            f"{'yes' if r['met_reg'] else 'NO'} | "
            f"{'yes' if r['met_both'] else 'NO'} | {r['load_before'].split(' /')[0]} → {r['load_after'].split(' /')[0]} |"
        )
    met = sum(r["met_reg"] for r in rows)
    lines.append(f"\n{met}/{len(rows)} rows at or above DP-Sniper's logistic-regression bound.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=105.0, help="max_seconds per mechanism (default 105)")
    parser.add_argument("--only", nargs="*", default=None, help="DP-Sniper class names to run (default: all 20)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"results file (default {OUT})")
    args = parser.parse_args()
    rows = run(args.seconds, set(args.only) if args.only else None, args.out)
    print()
    print(table(rows))
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
