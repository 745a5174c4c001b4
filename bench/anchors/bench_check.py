"""The public cases of ``dpwitness check`` (issue 18), run as a user runs them: the CLI of the
anchors venv on each function of check_cases.py. Prints one Markdown row per case (verdict,
expected, CPU seconds of the check's process, wall seconds, the findings) and the load.

    bash bench/anchors/setup.sh
    python3 bench/anchors/bench_check.py            # every case (PipelineDP's in .venv-pipelinedp)
    python3 bench/anchors/bench_check.py pydp_bounded_sum diffprivlib_sum
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = Path(os.environ.get("DPW_ANCHORS_VENV", REPO / ".venv-anchors"))
CLI = VENV / "bin" / "dpwitness"
sys.path.insert(0, str(HERE))

from check_cases import CASES, MORE_CASES, SECONDS, VENVS  # noqa: E402  (the cases live beside this script)

ALL_CASES = {**CASES, **MORE_CASES}
PUBLIC_CASES = tuple(CASES)


def cli_for(name: str) -> Path:
    """The ``dpwitness`` of the venv where the case's library is installed."""
    return REPO / VENVS[name] / "bin" / "dpwitness" if name in VENVS else CLI


def run_check(command: list[str], *, timeout: float) -> tuple[dict[str, Any], int, float, float]:
    """``command`` (a ``dpwitness check … --json``) run from the repository: its report (a "no report" one
    when stdout is not one, or the wall-clock ``timeout`` stopped it), exit code, CPU seconds (user + system
    of the check's process) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=timeout)
        stdout, stderr, code = run.stdout, run.stderr, run.returncode
    except subprocess.TimeoutExpired as error:
        stdout, stderr, code = "", f"timed out after {error.timeout:.0f} s of wall time", -1
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        report: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError:
        report = {"verdict": "no report", "error": f"exit {code}: {stderr.strip()[-400:]}"}
    return report, code, cpu, wall


def run_case(name: str, *, scripts: Path | None = None, max_seconds: float | None = None) -> dict[str, Any]:
    """One case through ``dpwitness check --json``: its report, exit code, CPU and wall seconds."""
    columns, expected, what = ALL_CASES[name]
    max_seconds = max_seconds or SECONDS.get(name, 100.0)
    command = [str(cli_for(name)), "check", f"{HERE / 'check_cases.py'}:{name}", "--columns", columns, "--epsilon", "1"]
    command += ["--max-seconds", str(max_seconds), "--json"]
    if scripts is not None:
        command += ["--scripts", str(scripts)]
    report, code, cpu, wall = run_check(command, timeout=600)
    return {
        "name": name,
        "what": what,
        "expected": expected,
        "verdict": report.get("verdict"),
        "exit": code,
        "cpu": cpu,
        "wall": wall,
        "report": report,
    }


def verdict_agrees(expected: str | None, verdict: str | None) -> bool:
    """A verdict meets what was expected ("not violated": ok or an honest inconclusive)."""
    return verdict in ("ok", "inconclusive") if expected == "not violated" else verdict == expected


def agrees(result: dict[str, Any]) -> bool:
    return verdict_agrees(result["expected"], result["verdict"])


def summary(report: dict[str, Any]) -> str:
    parts = []
    for finding in report.get("findings", []):
        if finding["kind"] == "audit":
            parts.append(f"audit ε_lb {float(finding['witnessed']):.3g} > ε = 1")
        elif finding["kind"] == "sensitivity":
            parts.append(f"{finding['mechanism']} at {finding['site']}: shift {finding['witnessed']} > Δ {finding['claimed']}")
        else:
            parts.append(f"noise calls changed at {finding['site']}")
    audit = report.get("audit")
    if not parts and audit:
        parts.append(f"audit {audit['verdict']}, ε_lb {audit['epsilon_lower_bound']:.3g}")
    return "; ".join(parts) or "-"


def main(names: list[str]) -> int:
    if not CLI.exists():
        print(f"no {CLI}: run bash bench/anchors/setup.sh first", file=sys.stderr)
        return 2
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average), {os.cpu_count()} cores")
    print("| case | expected | verdict | CPU s | wall s | what it found |")
    print("|---|---|---|---|---|---|")
    bad = 0
    for name in names or list(ALL_CASES):
        if not cli_for(name).exists():
            print(f"| {ALL_CASES[name][2]} | {ALL_CASES[name][1]} | skipped: no {cli_for(name)} | | | |")
            continue
        result = run_case(name)
        bad += not agrees(result) or (name in CASES and result["cpu"] > 120)
        print(
            f"| {result['what']} | {result['expected']} | {result['verdict']} | {result['cpu']:.1f} | {result['wall']:.1f} | "
            f"{summary(result['report'])} |",
            flush=True,
        )
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
