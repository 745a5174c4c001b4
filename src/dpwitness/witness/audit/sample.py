"""Drawing runs of a mechanism (:class:`Sampler`): vectorised or per call, in worker processes when it pays,
within a budget of CPU seconds (and a wall-clock cap that only stops runaway work)."""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpwitness.common.errors import ParameterError
from dpwitness.witness.audit.encode import Encoder, FloatArray, nan_mark, pad
from dpwitness.witness.audit.result import MechanismError
from dpwitness.witness.events import names_of
from dpwitness.witness.workers import (
    PLAIN_BOOLEANS,
    PLAIN_NUMBERS,
    Packed,
    PastDeadline,
    Pool,
    PoolUnavailable,
    RunFailed,
    Runner,
    WorkerDied,
    WorkerFailed,
    pack,
    run_states,
    unpack,
)

Mechanism = Callable[..., Any]

#: Most calls of a per-call mechanism between two looks at the clock, and the time a block aims at.
PER_CALL_BLOCK, PER_CALL_BLOCK_SECONDS = 4096, 0.02
#: A per-call draw of at least this many runs starts each run from its own generator state (drawn
#: from the draw's generator, as the paired runs' are), so that any split of its runs between
#: processes gives the same rows; smaller draws stream one generator through their runs.
PER_RUN_STATES = 50_000
#: Worker processes for per-call runs (see :mod:`dpwitness.witness.workers`), used where more than
#: one CPU is available: started by the first draw expected (at the last measured rate) to take more
#: than WORKERS_START_SECONDS (starting two costs about 0.4 s), then used by every draw expected to
#: take more than PARALLEL_SECONDS; each block they run aims at PARALLEL_BLOCK_SECONDS.
WORKERS, WORKERS_START_SECONDS, PARALLEL_SECONDS, PARALLEL_BLOCK_SECONDS = 2, 1.5, 0.25, 0.05


# --- sampling --------------------------------------------------------------------------------


class OutOfTime(Exception):
    """A per-call mechanism ran past the audit's budget (or its wall-clock cap) in the middle of a round."""


def _mechanism_error(label: str, error: BaseException) -> MechanismError:
    return MechanismError(f"the mechanism raised {type(error).__name__} on {label}: {error}")


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def accepts_size(mechanism: Mechanism) -> bool:
    """True when ``mechanism`` takes a ``size`` keyword (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(mechanism).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "size" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class Sampler:
    """Runs the mechanism n times on one input; ``draw`` returns an (n, k) float array of its outputs.

    ``deadline`` is an instant of :meth:`clock`, the CPU seconds of this process and of its worker
    processes (so that the machine's load does not decide how far a draw gets): a mechanism called
    once per output stops with an out-of-time error when a block of runs ends past it, or past
    ``wall_deadline``, a ``time.perf_counter()`` instant that only stops runaway work (a mechanism
    that sleeps, a machine too busy to give the audit its CPU); ``wall_stopped`` then turns True.
    Rates (``seconds_per_run`` …) are CPU seconds too. ``draw(data, rng, n, label)``
    and ``draw_full`` run the mechanism on the input ``data`` with the generator ``rng``;
    ``label`` names that input (``"d"``, ``"d_prime"``) in error messages.

    Large per-call draws (paired runs, and draws of at least ``PER_RUN_STATES`` runs) start each
    run from its own generator state, and run in ``workers`` worker processes when they are
    expected to take long enough (``WORKERS_START_SECONDS``) and the mechanism and inputs pickle;
    the rows are the same whether they do or not. ``workers``: None (the default) for ``WORKERS``
    where more than one CPU is available, else 0 (never). ``close()`` stops the workers (so do
    garbage collection and exit); ``with Sampler(…) as sampler:`` closes at the end.
    """

    def __init__(
        self, mechanism: Mechanism, deadline: float, *, workers: int | None = None, wall_deadline: float = math.inf
    ) -> None:
        if not callable(mechanism):
            raise ParameterError("mechanism", "a callable mechanism(data, rng) or mechanism(data, rng, size=n)", mechanism)
        self.mechanism = mechanism
        self.sized = accepts_size(mechanism)
        self.deadline = deadline
        self.wall_deadline = wall_deadline
        self.wall_stopped = False
        self._retired_cpu = 0.0  # CPU seconds of worker pools already stopped
        self.encoder = Encoder()
        self.seconds_per_run = 0.0  # the slowest rate seen (budget checks stay on the safe side)
        self.recent_seconds_per_run = 0.0  # the rate of the last large draw (for planning the tight mode)
        self.search_seconds_per_row = 0.0
        self.workers = (WORKERS if _usable_cpus() > 1 else 0) if workers is None else workers
        self._pool: Pool | None = None
        self._pool_failed = False  # the workers cannot run this mechanism (or its outputs): every draw runs here

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes, if any run (the sampler stays usable: it starts them again if needed)."""
        pool = self._drop_pool()
        if pool is not None:
            pool.close()

    def _drop_pool(self) -> Pool | None:
        """Forget the pool (its CPU seconds stay on :meth:`clock`) and return it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self._retired_cpu += pool.cpu_seconds
        return pool

    def clock(self) -> float:
        """CPU seconds: this process's (:func:`time.process_time`) and its worker processes' so far."""
        return time.process_time() + self._retired_cpu + (self._pool.cpu_seconds if self._pool is not None else 0.0)

    def out_of_time(self, deadline: float | None = None) -> bool:
        """True past ``deadline`` on :meth:`clock` (default ``self.deadline``) or past the wall-clock cap
        (which sets ``wall_stopped``)."""
        if time.perf_counter() > self.wall_deadline:
            self.wall_stopped = True
            return True
        return self.clock() > (self.deadline if deadline is None else deadline)

    def draw(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        """n outputs as rows of numbers (the view the events see)."""
        return self.view(self.draw_full(data, rng, n, label))[0][0]

    def draw_full(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        """n outputs as ``[shape code, length, values…]`` rows (see :class:`Encoder`)."""
        start = self.clock()
        rows = self._sized(data, rng, n, label) if self.sized else self._per_call(data, rng, n, label)
        self._note_rate((self.clock() - start) / n, n)
        return rows

    def _note_rate(self, rate: float, n: int) -> None:
        """Record the CPU seconds per run of a draw of n runs (the slowest seen, and the last large one)."""
        self.seconds_per_run = max(self.seconds_per_run, rate)
        if n >= 5000 or self.recent_seconds_per_run == 0.0:
            self.recent_seconds_per_run = rate

    def view(self, *arrays: FloatArray, structured: bool | None = None) -> tuple[list[FloatArray], list[str], int]:
        """The arrays padded to one width, without the shape and length columns unless shapes vary
        (or ``structured`` says so); with the column names and the first value column."""
        width = max(a.shape[1] for a in arrays)
        padded = [pad(a, width) for a in arrays]
        keep = self.encoder.structured if structured is None else structured
        if keep or width == 2:  # outputs with no values at all: their shape is all there is
            return padded, ["shape", "length", *names_of(width - 2)], 2
        return [a[:, 2:] for a in padded], names_of(width - 2), 0

    def _call(self, data: Any, rng: np.random.Generator, label: str, **size: int) -> Any:
        try:
            return self.mechanism(data, rng, **size)
        except Exception as error:  # the user's code: report any failure clearly
            raise _mechanism_error(label, error) from error

    def _sized(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        output = self._call(data, rng, label, size=n)
        parts = output if isinstance(output, (tuple, list)) else (output,)
        columns, shapes = [], []
        for part in parts:
            try:
                array = np.asarray(part)
            except ValueError:  # ragged: a list of n outputs of varying shape
                array = np.asarray(part, dtype=object)
            if array.dtype.kind not in "biuf" or array.ndim == 0 or array.shape[0] != n:
                if isinstance(output, list) and len(output) == n:
                    return self.encoder.rows(output, label)  # a list of n outputs of any shape
                if array.dtype.kind not in "biuf":
                    raise MechanismError(
                        f"mechanism(…, size={n}) returned {array.dtype} values on {label}; expected numbers or booleans "
                        "stacked on the first axis, or a list of n outputs"
                    )
                raise MechanismError(
                    f"mechanism(…, size={n}) must stack {n} outputs along the first axis; got shape {array.shape} on {label}"
                )
            if array.ndim > 1 and array[0].size == 0:
                raise MechanismError(f"the mechanism returned no values on {label}")
            columns.append(array.reshape(n, -1).astype(np.float64))
            shapes.append(f"a{array.shape[1:]}")
        values = np.hstack(columns) if len(columns) > 1 else columns[0]
        return self._stacked(values, "(" + ",".join(shapes) + ")")

    def _stacked(self, values: FloatArray, signature: str) -> FloatArray:
        """Rows ``[shape code, width, values…]`` of outputs of one layout; NaN outputs mark the shape."""
        n = len(values)
        nan = np.isnan(values)
        if not nan.any():
            codes = np.full(n, self.encoder.shape_code(signature))
        else:  # one shape per pattern of NaN positions (as the Encoder would give, one by one)
            codes = np.empty(n)
            patterns, inverse = np.unique(np.packbits(nan, axis=1), axis=0, return_inverse=True)
            for k, packed in enumerate(patterns):
                mask = np.unpackbits(packed)[: values.shape[1]].astype(bool)
                codes[inverse.ravel() == k] = self.encoder.shape_code(signature + nan_mark(mask))
        head = np.column_stack([codes, np.full(n, float(values.shape[1]))])
        return np.hstack([head, values + 0.0])

    def _in_blocks(self, n: int, run: Callable[[int, int], None]) -> None:
        """``run(done, size)`` on blocks of runs with no per-call bookkeeping, blocks growing while
        they are quick; the clock is read between blocks (out of time past the deadline)."""
        block, done = 8, 0
        started = self.clock()
        while done < n:
            size = min(block, n - done)
            begun = self.clock()
            run(done, size)
            done += size
            if self.out_of_time():
                self._note_rate((self.clock() - started) / done, done)  # the rate a "too slow" reason quotes
                raise OutOfTime
            if self.clock() - begun < PER_CALL_BLOCK_SECONDS / 2:
                block = min(2 * block, PER_CALL_BLOCK)

    def _per_call(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        if n >= PER_RUN_STATES:
            return self._per_run(data, rng, n, label)
        outputs: list[Any] = []
        mechanism = self.mechanism

        def run(done: int, size: int) -> None:
            try:
                outputs.extend([mechanism(data, rng) for _ in range(size)])
            except Exception as error:  # the user's code: report any failure clearly
                raise _mechanism_error(label, error) from error

        self._in_blocks(n, run)
        return self._rows_of(outputs, label)

    def _per_run(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        """n per-call runs on ``data``, each from its own state drawn from ``rng``: in the workers when
        it pays, else here (the same rows either way)."""
        inc, starts = run_states(np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()), n)
        rate = self.recent_seconds_per_run
        pool = self._pool_for(n * rate)
        if pool is not None:
            packs = self._in_workers(pool, ("calls", data, label, inc, starts), n, rate, label)
            if packs is not None:
                return self._assemble(packs, label)
        runner, outputs = Runner(self.mechanism, inc), []

        def run(done: int, size: int) -> None:
            try:
                outputs.extend(runner.calls(data, starts[done : done + size].tolist(), label))
            except RunFailed as failed:
                raise _mechanism_error(failed.label, failed.error) from failed.error

        self._in_blocks(n, run)
        return self._rows_of(outputs, label)

    def draw_pairs(self, d: Any, d_prime: Any, seeds: np.random.SeedSequence, n: int) -> tuple[FloatArray, FloatArray]:
        """n runs on each input ``d`` and ``d_prime`` as rows (as ``draw_full``), the k-th run of both
        inputs started from one generator state: common random numbers. The states come from the
        SeedSequence ``seeds``. Each pair gets its own random PCG64 state, so
        pairs are independent of each other whatever a run consumes; the two runs of a pair are
        coupled only as far as the mechanism draws from ``rng`` in the same order on both inputs.
        The pairs run in the worker processes when it pays (the same rows either way).
        A mechanism with ``size`` gets independent streams instead (its rows need not line up)."""
        if self.sized:
            first, second = seeds.spawn(2)
            return (
                self.draw_full(d, np.random.default_rng(first), n, "d"),
                self.draw_full(d_prime, np.random.default_rng(second), n, "d_prime"),
            )
        inc, starts = run_states(seeds, n)
        began, rate = self.clock(), 2 * self.recent_seconds_per_run
        pool = self._pool_for(n * rate)
        packs = None if pool is None else self._in_workers(pool, ("pairs", d, d_prime, inc, starts), n, rate, "d or d_prime")
        if packs is not None:
            self._note_rate((self.clock() - began) / (2 * n), n)
            return self._assemble(packs[0::2], "d"), self._assemble(packs[1::2], "d_prime")
        runner = Runner(self.mechanism, inc)
        outputs_a: list[Any] = []
        outputs_b: list[Any] = []

        def run(done: int, size: int) -> None:
            try:
                a, b = runner.pairs(d, d_prime, starts[done : done + size].tolist())
            except RunFailed as failed:
                raise _mechanism_error(failed.label, failed.error) from failed.error
            outputs_a.extend(a)
            outputs_b.extend(b)

        self._in_blocks(n, run)
        self._note_rate((self.clock() - began) / (2 * n), n)
        return self._rows_of(outputs_a, "d"), self._rows_of(outputs_b, "d_prime")

    def _pool_for(self, seconds: float) -> Pool | None:
        """The worker pool for a draw expected to take ``seconds`` of CPU in this process, or None: run it here."""
        if self._pool is not None and self._pool.closed:  # stopped by an interrupt
            self._drop_pool()
        if self._pool is not None:
            return self._pool if seconds > PARALLEL_SECONDS else None
        if self._pool_failed or self.workers < 1 or seconds <= WORKERS_START_SECONDS:
            return None
        try:
            self._pool = Pool(self.mechanism, self.workers)
        except PoolUnavailable:
            self._pool_failed = True
        return self._pool

    def _in_workers(
        self, pool: Pool, context: tuple[Any, ...], n: int, seconds_per_item: float, label: str
    ) -> list[Packed] | None:
        """The packed outputs of the n runs of ``context`` made by the workers (two packs per block for
        pairs), or None when the workers cannot make them (the caller runs them itself). Out of time,
        a mechanism error and a worker that died are reported as in this process."""
        block = int(min(max(PARALLEL_BLOCK_SECONDS / max(seconds_per_item * pool.count, 1e-9), 64), 65_536))
        try:
            if pool.begin(context):
                return pool.run(n, block, self.out_of_time)
        except PoolUnavailable:  # outputs that do not travel by value
            pass
        except PastDeadline:
            raise OutOfTime from None
        except WorkerFailed as failed:
            raise MechanismError(f"the mechanism raised {failed.name} on {failed.label}: {failed.text}") from failed.cause
        except WorkerDied as died:
            self._pool_failed = True
            self._drop_pool()
            raise MechanismError(f"{died}, on {label}") from died
        # inputs or outputs that do not travel between processes: this draw and every later one run here
        self._pool_failed = True
        self.close()
        return None

    def _assemble(self, packs: list[Packed], label: str) -> FloatArray:
        """The rows of blocks of outputs packed by :func:`~dpwitness.witness.workers.pack`: the rows
        ``_rows_of`` gives for all their outputs in one list (stacked at once where every block was)."""
        tags = {(tag, kind) for tag, kind, _ in packs}
        if len(tags) == 1:
            tag, kind = tags.pop()
            if tag == "plain":
                values = np.concatenate([v for _, _, v in packs]).reshape(-1, 1)
                return self._stacked(values, "b" if kind in PLAIN_BOOLEANS else "n")
            if tag == "arrays" and len({(v.shape[1:], v.dtype.kind) for _, _, v in packs}) == 1:
                values = np.concatenate([v.reshape(len(v), -1).astype(np.float64) for _, _, v in packs])
                return self._stacked(values, f"a{packs[0][2].shape[1:]}")
        return self._rows_of([output for packed in packs for output in unpack(packed)], label)

    def _rows_of(self, outputs: list[Any], label: str) -> FloatArray:
        """Rows for per-call outputs; outputs of one plain type (numbers, booleans, numeric arrays of
        one shape: see :func:`~dpwitness.witness.workers.pack`) and flat lists or tuples of numbers
        are stacked at numpy speed, with the codes the :class:`Encoder` would give."""
        packed = pack(outputs)
        if packed[0] != "outputs":
            return self._assemble([packed], label)
        kinds = set(map(type, outputs))
        if len(kinds) == 1 and kinds.pop() in (list, tuple):
            flat = self._flat_sequences(outputs, "(", ")")
            if flat is not None:
                return flat
        return self.encoder.rows(outputs, label)

    def _flat_sequences(self, outputs: list[Any], opening: str, closing: str) -> FloatArray | None:
        """Lists (or tuples) of plain numbers and booleans, of any lengths, stacked group by group of
        the same element types; None when some element is anything else (the Encoder then walks them)."""
        groups: dict[tuple[type, ...], list[int]] = {}
        for i, output in enumerate(outputs):
            groups.setdefault(tuple(map(type, output)), []).append(i)
        codes = np.empty(len(outputs))
        width = max(len(key) for key in groups)
        rows = np.full((len(outputs), 2 + width), np.nan)
        for key, members in groups.items():
            if not all(t in PLAIN_NUMBERS or t in PLAIN_BOOLEANS for t in key):
                return None
            index = np.asarray(members)
            values = np.asarray([outputs[i] for i in members], dtype=np.float64).reshape(len(members), len(key))
            nan = np.isnan(values)
            kinds = ["b" if t in PLAIN_BOOLEANS else "n" for t in key]
            if nan.any():  # rows with NaN outputs: the Encoder's signatures, one row at a time
                for r in np.flatnonzero(nan.any(axis=1)):
                    marked = [k + nan_mark(np.array([bool(nan[r, j])])) if k == "n" else k for j, k in enumerate(kinds)]
                    codes[index[r]] = self.encoder.shape_code(opening + ",".join(marked) + closing)
                clean = ~nan.any(axis=1)
            else:
                clean = np.ones(len(members), dtype=bool)
            if clean.any():
                codes[index[clean]] = self.encoder.shape_code(opening + ",".join(kinds) + closing)
            rows[index, 1] = len(key)
            rows[index, 2 : 2 + len(key)] = values
        rows[:, 0] = codes
        return rows
