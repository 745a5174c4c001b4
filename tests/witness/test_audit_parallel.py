"""Per-call runs in worker processes: the same rows as in this process for a seed, errors reported
as they are here, the CPU deadline kept (the workers' CPU counted), a fallback for what does not
pickle, no process left behind."""

from __future__ import annotations

import gc
import math
import os
import signal
import subprocess
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pytest
from catalogue import numerical_svt_once, rappor_once, report_noisy_max_once

from dpwitness.witness import workers
from dpwitness.witness.audit import MechanismError, Sampler, audit
from dpwitness.witness.audit import run as audit_run
from dpwitness.witness.audit import sample as audit_sample
from dpwitness.witness.audit.sample import OutOfTime

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

pytest.importorskip("scipy")


@dataclass
class Started:
    """A pool the code under test started (held weakly: its collection must stop it) and its processes."""

    pool: weakref.ref[workers.Pool]
    processes: list[subprocess.Popen[bytes]]

    @property
    def stopped(self) -> bool:
        return all(process.poll() is not None for process in self.processes)


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Started]]:
    """Every draw of a per-call mechanism goes to the workers, in blocks of 64 runs (the fewest);
    yields the pools started (real ones)."""
    monkeypatch.setattr(audit_sample, "WORKERS_START_SECONDS", -1.0)
    monkeypatch.setattr(audit_sample, "PARALLEL_SECONDS", -1.0)
    monkeypatch.setattr(audit_sample, "PARALLEL_BLOCK_SECONDS", 0.0)
    monkeypatch.setenv("DPWITNESS_TEST_PROCESS", str(os.getpid()))
    started: list[Started] = []
    real_init = workers.Pool.__init__

    def recording_init(self: workers.Pool, mechanism: Any, count: int) -> None:
        real_init(self, mechanism, count)
        started.append(Started(weakref.ref(self), self.processes))

    monkeypatch.setattr(workers.Pool, "__init__", recording_init)
    yield started
    for record in started:
        pool = record.pool()
        if pool is not None:
            pool.close()


def mixed_output(data: Any, rng: np.random.Generator) -> Any:
    """An int, a float, a NaN, a string or None, and a list or a tuple: outputs of varying shape."""
    u = rng.random()
    if u < 0.2:
        return int(rng.integers(0, 3)) + int(data)
    if u < 0.3:
        return math.nan
    if u < 0.5:
        return ("high" if u > 0.4 else None, float(data) + rng.laplace(0.0, 1.0))
    if u < 0.6:
        return [float(data), rng.random() < 0.5]
    return float(data) + rng.laplace(0.0, 1.0)


def one_float_in_many(data: Any, rng: np.random.Generator) -> Any:
    """Nearly always a Python int, once in a while a float: blocks of one type and blocks of two."""
    return 0.5 if rng.random() < 0.003 else int(rng.integers(0, 5)) + int(data)


MECHANISMS: list[tuple[str, Any, Any, Any]] = [
    ("floats", report_noisy_max_once, [0.0] * 5, [1.0] * 5),
    ("bit arrays", rappor_once, [1], [0]),
    ("lists", numerical_svt_once, [0.0, 1.0, 2.0, 1.0], [1.0, 0.0, 2.0, 1.0]),
    ("mixed", mixed_output, 0, 1),
    ("ints, rarely a float", one_float_in_many, 0, 1),
]
KEYWORDS = {
    "floats": {"epsilon": 0.1, "noise": "laplace", "value": True},
    "bit arrays": {"f": 0.5, "instantaneous": True},
    "lists": {"epsilon": 1.0},
}


def _mechanism(name: str, function: Any) -> Any:
    keywords = KEYWORDS.get(name, {})
    return partial(function, **keywords) if keywords else function


def _shapes(sampler: Sampler, rows: np.ndarray) -> list[str]:
    names = {float(code): name for name, code in sampler.encoder.shapes.items()}
    return [names[code] for code in rows[:, 0]]


@pytest.mark.parametrize(("name", "function", "d", "d_prime"), MECHANISMS, ids=[m[0] for m in MECHANISMS])
def test_pairs_in_workers_give_the_rows_drawn_here(eager: list[Started], name: str, function: Any, d: Any, d_prime: Any) -> None:
    mechanism = _mechanism(name, function)
    here = Sampler(mechanism, deadline=math.inf, workers=0)
    expected = here.draw_pairs(d, d_prime, np.random.SeedSequence(11), 3000)
    assert not eager  # workers=0: nothing started
    for count in (1, 2):
        with Sampler(mechanism, deadline=math.inf, workers=count) as there:
            got = there.draw_pairs(d, d_prime, np.random.SeedSequence(11), 3000)
            assert there._pool is not None and there._pool.count == count  # the workers made them (47 blocks)
            for want, rows in zip(expected, got, strict=True):
                np.testing.assert_array_equal(rows, want)  # codes included: numbered in the same order
                assert _shapes(there, rows) == _shapes(here, want)
    assert len(eager) == 2 and all(record.stopped for record in eager)
    other = Sampler(mechanism, deadline=math.inf, workers=0).draw_pairs(d, d_prime, np.random.SeedSequence(12), 3000)
    assert not np.array_equal(other[0], expected[0])  # the comparison can fail: another seed, other rows


def test_pairs_start_from_the_states_the_seed_gives() -> None:
    """The fast state setter gives the runs that setting ``bits.state`` gives, from the states derived
    from the seed as before (PCG64(seeds) for the increment, a spawned stream for the starts)."""
    mechanism = _mechanism("mixed", mixed_output)
    seeds = np.random.SeedSequence(5)
    bits = np.random.PCG64(seeds)
    rng, inc = np.random.Generator(bits), bits.state["state"]["inc"]
    starts = np.random.default_rng(seeds.spawn(1)[0]).integers(0, 2**64, size=(500, 2), dtype=np.uint64).tolist()
    outputs_a, outputs_b = [], []
    for high, low in starts:
        state = {"bit_generator": "PCG64", "state": {"state": high << 64 | low, "inc": inc}, "has_uint32": 0, "uinteger": 0}
        bits.state = state
        outputs_a.append(mechanism(0, rng))
        bits.state = state
        outputs_b.append(mechanism(1, rng))
    reference = Sampler(mechanism, deadline=math.inf, workers=0)
    want = reference._rows_of(outputs_a, "d"), reference._rows_of(outputs_b, "d_prime")
    got = Sampler(mechanism, deadline=math.inf, workers=0).draw_pairs(0, 1, np.random.SeedSequence(5), 500)
    for rows, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(rows, expected)
    # the in-place setter resets the 32-bit buffer: a run that leaves half a draw buffered does not leak it
    bits = np.random.PCG64(1)
    restart = workers.restarter(bits, int(bits.state["state"]["inc"]))
    assert restart.__name__ == "in_place"  # numpy's layout was recognised (else the dict path is used)
    restart(3, 4)
    first = np.random.Generator(bits).integers(0, 10, size=3, dtype=np.int32).tolist()
    restart(3, 4)
    assert np.random.Generator(bits).integers(0, 10, size=3, dtype=np.int32).tolist() == first


def test_large_per_call_draws_give_the_same_rows_in_workers(eager: list[Started], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_sample, "PER_RUN_STATES", 2000)
    mechanism = _mechanism("bit arrays", rappor_once)
    want = Sampler(mechanism, math.inf, workers=0).draw_full([1], np.random.default_rng(7), 2000, "d")
    with Sampler(mechanism, math.inf, workers=2) as sampler:
        got = sampler.draw_full([1], np.random.default_rng(7), 2000, "d")
        assert sampler._pool is not None
    np.testing.assert_array_equal(got, want)
    # below PER_RUN_STATES the draw streams one generator through its runs, as it always did
    small = Sampler(mechanism, math.inf, workers=2).draw_full([1], np.random.default_rng(7), 1999, "d")
    streamed = np.random.default_rng(7)
    np.testing.assert_array_equal(small[:, 2:], np.array([mechanism([1], streamed) for _ in range(1999)], dtype=float))


def fails_on_a_rare_draw(data: Any, rng: np.random.Generator) -> float:
    u = float(rng.random())
    if data == 1 and u < 0.002:
        raise ValueError(f"refused {u!r}")
    return u


def test_a_mechanism_error_in_a_worker_is_reported_as_here(eager: list[Started]) -> None:
    with pytest.raises(MechanismError) as here:
        Sampler(fails_on_a_rare_draw, math.inf, workers=0).draw_pairs(0, 1, np.random.SeedSequence(3), 5000)
    with Sampler(fails_on_a_rare_draw, math.inf, workers=2) as sampler:
        with pytest.raises(MechanismError) as there:
            sampler.draw_pairs(0, 1, np.random.SeedSequence(3), 5000)
        # the same first failing pair: the same message, naming d_prime, and the cause
        assert str(there.value) == str(here.value) and "raised ValueError on d_prime: refused 0.00" in str(here.value)
        assert type(there.value.__cause__) is ValueError and str(there.value.__cause__) == str(here.value.__cause__)
        rows = sampler.draw_pairs(0, 0, np.random.SeedSequence(3), 3000)  # the workers are still there
        assert sampler._pool is eager[0].pool() and len(rows[0]) == 3000 and not eager[0].stopped


def sleeps(data: Any, rng: np.random.Generator) -> float:
    time.sleep(0.002)
    return float(rng.random())


def spins(data: Any, rng: np.random.Generator) -> float:
    """2 ms of CPU a run (a busy loop on the process's CPU clock)."""
    end = time.process_time() + 0.002
    while time.process_time() < end:
        pass
    return float(rng.random())


def test_the_cpu_deadline_counts_the_workers_and_stops_them(eager: list[Started]) -> None:
    """The budget is CPU seconds, the workers' included: a draw stops a few blocks past it (at most
    DEPTH blocks of 64 pairs per worker in flight: 2 × 2 × 64 × 2 runs × 2 ms ≈ 1 s of CPU), and the
    pool stays usable."""
    gc.disable()  # what frees the workers must not wait for the cyclic collector
    try:
        sampler = Sampler(spins, math.inf, workers=2)
        sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 64)  # start the workers
        assert sampler._pool is not None and sampler._pool.cpu_seconds > 0.2  # their start and 256 ms of runs
        here = time.process_time()
        sampler.deadline = sampler.clock() + 1.0
        with pytest.raises(OutOfTime):
            sampler.draw_pairs(0, 1, np.random.SeedSequence(2), 100_000)  # 400 s of CPU
        spent = sampler.clock() - (sampler.deadline - 1.0)
        assert 1.0 <= spent < 2.5 and not sampler.wall_stopped
        assert time.process_time() - here < 0.5  # the runs' CPU was the workers': counted all the same
        sampler.deadline = math.inf
        assert len(sampler.draw_pairs(0, 1, np.random.SeedSequence(3), 128)[0]) == 128  # still there
        assert len(eager) == 1 and not eager[0].stopped
        del sampler  # its pool goes with it (no cycle through the out-of-time error), and stops its workers
        assert eager[0].pool() is None and eager[0].stopped
    finally:
        gc.enable()


def test_the_wall_clock_cap_stops_a_mechanism_that_waits(eager: list[Started]) -> None:
    """A mechanism that sleeps spends no CPU: only the wall-clock cap stops it, and says so."""
    sampler = Sampler(sleeps, math.inf, workers=2)
    sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 64)
    sampler.wall_deadline = time.perf_counter() + 0.5
    with pytest.raises(OutOfTime):
        sampler.draw_pairs(0, 1, np.random.SeedSequence(2), 100_000)  # 400 s of sleep
    assert sampler.wall_stopped and sampler.clock() < 5.0 + time.process_time()
    here = Sampler(sleeps, math.inf, workers=0, wall_deadline=time.perf_counter() + 0.2)
    with pytest.raises(OutOfTime):
        here.draw_full(0, np.random.default_rng(1), 40_000, "d")  # 80 s of sleep, in this process
    assert here.wall_stopped


def test_an_audit_cut_short_by_the_wall_clock_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_run, "WALL_CAP_FACTOR", 0.0)
    monkeypatch.setattr(audit_run, "WALL_CAP_SECONDS", 1.0)

    def sleepy_laplace(data: float, rng: np.random.Generator) -> float:
        time.sleep(0.0002)
        return data + rng.laplace(0.0, 1.0)

    result = audit(sleepy_laplace, 0.0, 1.0, epsilon=1.0, seed=3, max_seconds=60)
    assert result.wall_clock_stopped and "wall-clock cap (1 s)" in result.reason
    assert result.cpu_seconds < 60 and result.verdict != "violated"
    unhurried = audit(laplace_float, 0.0, 1.0, epsilon=1.0, seed=3, samples=20_000)
    assert not unhurried.wall_clock_stopped and "wall-clock" not in unhurried.reason
    assert unhurried.cpu_seconds > 0


def laplace_float(data: float, rng: np.random.Generator) -> float:
    return data + rng.laplace(0.0, 1.0)


class Unloadable:
    """Pickles, but refuses to load (as a function of a script's ``__main__`` in a worker)."""

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        return float(data) + float(rng.random())

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _refuse, ()


def _in_a_worker() -> bool:
    """True in a worker process: the fixture names the test process in the environment the workers inherit."""
    return os.environ.get("DPWITNESS_TEST_PROCESS", str(os.getpid())) != str(os.getpid())


def _refuse() -> None:
    if _in_a_worker():
        raise RuntimeError("not here")


def sentinel_output(data: Any, rng: np.random.Generator) -> Any:
    return SENTINEL if rng.random() < 0.5 else float(data)


SENTINEL = object()  # a module's object: a copy of it would be a new object


@pytest.mark.parametrize(
    "mechanism",
    [lambda data, rng: float(data) + rng.random(), Unloadable(), sentinel_output],
    ids=["a lambda", "does not load in a worker", "outputs that are not values"],
)
def test_what_does_not_travel_runs_here_with_the_same_rows(eager: list[Started], mechanism: Any) -> None:
    want = Sampler(mechanism, math.inf, workers=0).draw_pairs(0, 1, np.random.SeedSequence(4), 1000)
    sampler = Sampler(mechanism, math.inf, workers=2)
    got = sampler.draw_pairs(0, 1, np.random.SeedSequence(4), 1000)
    assert sampler._pool is None and sampler._pool_failed  # ran here, and will not try again
    for rows, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(rows, expected)
    assert all(record.stopped for record in eager)


def dies_in_a_worker(data: Any, rng: np.random.Generator) -> float:
    if _in_a_worker() and rng.random() < 0.01:
        os._exit(3)
    return float(rng.random())


def test_a_worker_that_dies_is_a_mechanism_error(eager: list[Started]) -> None:
    sampler = Sampler(dies_in_a_worker, math.inf, workers=2)
    with pytest.raises(MechanismError, match=r"exit code 3\), on d or d_prime"):
        sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 5000)
    assert len(eager) == 1 and eager[0].stopped
    assert len(sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 100)[0]) == 100  # then here


def test_no_worker_outlives_an_interrupt_or_the_audit(eager: list[Started]) -> None:
    sampler = Sampler(sleeps, math.inf, workers=2)
    sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 64)  # the workers run
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)  # Ctrl-C in the middle of a draw
        with pytest.raises(KeyboardInterrupt):
            sampler.draw_pairs(0, 1, np.random.SeedSequence(1), 100_000)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(eager) == 1 and eager[0].stopped  # killed at once
    # an audit's workers stop when it returns: its sampler is freed at once (no cyclic collection needed)
    gc.disable()
    try:
        result = audit(
            _mechanism("floats", report_noisy_max_once), [0.0] * 5, [1.0] * 5, epsilon=0.1, seed=1, tight=True, max_seconds=4
        )
        assert len(eager) >= 2 and result.tight_samples > 0  # the audit used workers
        assert all(record.stopped for record in eager)
    finally:
        gc.enable()
