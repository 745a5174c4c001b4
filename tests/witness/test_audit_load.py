"""A tight audit planned in runs (``tight_samples``) gives the same ε_lb whatever the machine's load:
no clock decides a sample's size, so the same seed draws the same runs, bit for bit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from catalogue import SniperCase, dp_sniper_table

from dpwitness.witness.audit import audit

pytestmark = pytest.mark.slow  # six tight audits of per-call mechanisms, half of them beside busy processes

pytest.importorskip("scipy")

#: Rows of DP-Sniper's table that reach its bound in a few seconds of runs.
ROWS = ("NoisyHist2", "ReportNoisyMax4", "SparseVectorTechnique5")


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy loops in subprocesses for the duration of the block (stopped after it)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def _tight_bounds(rows: list[SniperCase]) -> list[tuple[float | None, int, str | None]]:
    results = []
    for entry in rows:
        case = entry.case
        result = audit(
            case.mechanism,
            case.d,
            case.d_prime,
            epsilon=case.epsilon,
            confidence=0.9,
            seed=2021,
            tight=True,
            tight_samples=100_000,
            max_samples=20_000,
            max_seconds=600,  # only a runaway guard: no size depends on it
        )
        assert result.tight_reason == "", result.tight_reason
        assert result.best_epsilon_lower_bound >= entry.published[0], (case.name, result.best_epsilon_lower_bound)
        results.append((result.tight_epsilon_lower_bound, result.tight_samples, result.tight_event))
    return results


def test_the_tight_bound_in_runs_is_the_same_under_load() -> None:
    rows = [entry for entry in dp_sniper_table() if entry.case.name in ROWS]
    assert len(rows) == len(ROWS)
    quiet = _tight_bounds(rows)
    with busy(2):
        loaded = _tight_bounds(rows)
    assert loaded == quiet  # bit-identical bounds, sample sizes and events
    assert all(samples == 100_000 for _, samples, _ in quiet)


def test_tight_samples_is_a_whole_number_of_runs() -> None:
    entry = dp_sniper_table()[0]
    case = entry.case
    with pytest.raises(ValueError, match="tight_samples"):
        audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, tight=True, tight_samples=10)
