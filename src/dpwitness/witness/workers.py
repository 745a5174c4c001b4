"""Runs of a per-call mechanism from given generator states, in this process or in worker processes.

The auditor's paired runs (and its large per-call draws) start every run from its own PCG64 state:
one increment for the whole draw and, per run, the 128 bits of ``starts[k]`` (high, low). The
outputs of run k then depend on k's state alone, so any split of the runs between processes gives
the same outputs. :class:`Runner` makes such runs in this process; :class:`Pool` hands blocks of
them to worker processes and gets back their outputs, :func:`pack`-ed (plain numbers and numeric
arrays as one numpy array per block, anything else as the outputs themselves), so that the caller
turns them into rows with its own encoder, exactly as if it had made the runs itself.

The workers are fresh interpreters (``python -c``, as multiprocessing's ``spawn`` makes them: safe
in a process that has threads, unlike ``fork``), started without the caller's ``__main__``: a
script that audits at import time is not run again in them. A mechanism (and its inputs) must
therefore pickle by reference to an importable module; one that does not runs in this process.
Workers ignore SIGINT (the caller decides), and exit when their input pipe closes, so they do not
outlive the caller by more than one block of runs. Every reply carries the worker's CPU seconds so
far (:func:`time.process_time`), so that the caller's budget counts the CPU its workers use
(:attr:`Pool.cpu_seconds`) as well as its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import secrets
import signal
import struct
import subprocess
import sys
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import numpy.typing as npt

#: Output types stacked at numpy speed (numbers, booleans): the auditor's fast paths.
PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})
PLAIN_BOOLEANS = frozenset({bool, np.bool_})
#: Blocks in flight per worker (one running, one waiting in its pipe: no idle gap between blocks).
DEPTH = 2
#: Seconds a worker gets to exit after its input closes, before it is killed.
STOP_SECONDS = 2.0

Starts = npt.NDArray[np.uint64]
#: A block's outputs in transit: ("plain", type, values), ("arrays", None, stacked) or ("outputs", None, list).
Packed = tuple[str, Any, Any]

_MASK = (1 << 64) - 1
# The worker's bootstrap: the caller's sys.path first (its first message), then the loop.
_BOOT = (
    "import pickle, struct, sys; r = sys.stdin.buffer; (n,) = struct.unpack('<Q', r.read(8)); "
    "sys.path[:] = pickle.loads(r.read(n)); from dpwitness.witness.workers import serve; serve(r)"
)


def run_states(seeds: np.random.SeedSequence, n: int) -> tuple[int, Starts]:
    """The PCG64 increment of a draw and the (n, 2) start states (high, low 64 bits) of its runs,
    from the SeedSequence ``seeds``: fresh random states, so runs are independent of each other
    whatever each one consumes."""
    inc = int(np.random.PCG64(seeds).state["state"]["inc"])
    starts = np.random.default_rng(seeds.spawn(1)[0]).integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    return inc, starts


def restarter(bits: np.random.PCG64, inc: int) -> Callable[[int, int], None]:
    """A function ``restart(high, low)`` that puts ``bits`` in the state that
    ``bits.state = {"state": {"state": high << 64 | low, "inc": inc}, "has_uint32": 0, "uinteger": 0, …}``
    gives. It writes the state's words in place (about 0.2 µs instead of 1 µs) when the layout of
    numpy's PCG64 state is the one checked here on a probe state, and sets ``bits.state`` otherwise."""

    def by_dict(high: int, low: int) -> None:
        bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": high << 64 | low, "inc": inc},
            "has_uint32": 0,
            "uinteger": 0,
        }

    try:
        address = bits.ctypes.state_address
        inner = ctypes.cast(address, ctypes.POINTER(ctypes.c_void_p))[0]
        words = (ctypes.c_uint64 * 4).from_address(inner)  # state low, high; inc low, high (__uint128_t)
        flags = (ctypes.c_uint32 * 2).from_address(address + ctypes.sizeof(ctypes.c_void_p))  # has_uint32, uinteger
        probe_high, probe_low = 0x0123456789ABCDEF, 0xFEDCBA9876543210
        bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": probe_high << 64 | probe_low, "inc": inc},
            "has_uint32": 1,
            "uinteger": 7,
        }
        if list(words) != [probe_low, probe_high, inc & _MASK, inc >> 64] or list(flags) != [1, 7]:
            return by_dict
    except (AttributeError, TypeError, ValueError):  # no ctypes interface: the documented way
        return by_dict
    inc_low, inc_high = inc & _MASK, inc >> 64

    def in_place(high: int, low: int) -> None:
        words[0], words[1], words[2], words[3] = low, high, inc_low, inc_high
        flags[0] = flags[1] = 0

    in_place(probe_low, probe_high)  # a second probe: the words swapped, through the fast path
    expected = {"state": probe_low << 64 | probe_high, "inc": inc}
    state = bits.state
    return in_place if state["state"] == expected and (state["has_uint32"], state["uinteger"]) == (0, 0) else by_dict


class RunFailed(Exception):
    """The mechanism raised ``error`` on the input named ``label`` (``"d"``, ``"d_prime"``)."""

    def __init__(self, label: str, error: BaseException) -> None:
        super().__init__(label, error)
        self.label, self.error = label, error


class Runner:
    """Runs ``mechanism(data, rng)`` from given start states; ``rng`` is one generator whose
    increment ``inc`` is fixed and whose state is set before every run (see :func:`restarter`)."""

    def __init__(self, mechanism: Callable[..., Any], inc: int) -> None:
        self.mechanism = mechanism
        bits = np.random.PCG64()
        self.rng = np.random.Generator(bits)
        self.restart = restarter(bits, inc)

    def pairs(self, d: Any, d_prime: Any, starts: list[list[int]]) -> tuple[list[Any], list[Any]]:
        """Run k on ``d`` and run k on ``d_prime``, both from state ``starts[k]``; the outputs in order."""
        outputs_a: list[Any] = []
        outputs_b: list[Any] = []
        mechanism, rng, restart, add_a, add_b = self.mechanism, self.rng, self.restart, outputs_a.append, outputs_b.append
        try:
            for high, low in starts:
                restart(high, low)
                add_a(mechanism(d, rng))
                restart(high, low)
                add_b(mechanism(d_prime, rng))
        except Exception as error:  # the user's code: the caller reports it, naming the input
            raise RunFailed("d_prime" if len(outputs_a) > len(outputs_b) else "d", error) from error
        return outputs_a, outputs_b

    def calls(self, data: Any, starts: list[list[int]], label: str) -> list[Any]:
        """Run k on ``data`` from state ``starts[k]``; the outputs in order."""
        outputs: list[Any] = []
        mechanism, rng, restart, add = self.mechanism, self.rng, self.restart, outputs.append
        try:
            for high, low in starts:
                restart(high, low)
                add(mechanism(data, rng))
        except Exception as error:  # the user's code
            raise RunFailed(label, error) from error
        return outputs


def pack(outputs: list[Any]) -> Packed:
    """A block's outputs in a form that is cheap to send: ``("plain", type, float64 values)`` when all are
    numbers (or all booleans) of one type, ``("arrays", None, stacked)`` when all are numeric arrays of
    one shape and kind (the cases the auditor stacks at numpy speed), else ``("outputs", None, outputs)``."""
    kinds = set(map(type, outputs))
    if len(kinds) == 1:
        kind = kinds.pop()
        try:
            if kind in PLAIN_NUMBERS or kind in PLAIN_BOOLEANS:
                return "plain", kind, np.asarray(outputs, dtype=np.float64)
            uniform = kind is np.ndarray and len({(o.shape, o.dtype.kind) for o in outputs}) == 1
            if uniform and outputs[0].dtype.kind in "biuf" and outputs[0].size:
                return "arrays", None, np.stack(outputs)
        except (OverflowError, ValueError):  # left to the caller's encoder, which reports it as it would anyway
            pass
    return "outputs", None, outputs


def unpack(packed: Packed) -> list[Any]:
    """The outputs of a packed block again, of their types and values (arrays of one kind may come
    back in the block's common dtype: the auditor reads them as the same float64 values)."""
    tag, kind, values = packed
    if tag == "plain":
        return [kind(v) for v in values.tolist()]
    if tag == "arrays":
        return [values[k, ...] for k in range(len(values))]  # an array each, 0-d ones included
    return list(values)


_VALUE_LEAVES = (type(None), bool, np.bool_, int, float, np.integer, np.floating, str, bytes)


def by_value(part: Any) -> bool:
    """True when ``part`` comes out of pickling as an equal copy that the auditor's encoder reads the
    same way: None, booleans, numbers, strings, numeric arrays, and tuples, lists and dicts of them.
    (Other objects may come back as new objects, which the encoder would tell apart.)"""
    if isinstance(part, _VALUE_LEAVES):
        return True
    if isinstance(part, np.ndarray):
        return part.dtype.kind in "biuf" or all(by_value(x) for x in part.ravel().tolist())
    if isinstance(part, (tuple, list)):
        return all(by_value(x) for x in part)
    if isinstance(part, dict):
        return all(by_value(key) and by_value(value) for key, value in part.items())
    return False


class PoolUnavailable(Exception):
    """The workers cannot run this mechanism or these inputs (they do not pickle, or do not load there)."""


class WorkerFailed(Exception):
    """The mechanism raised in a worker: ``label`` names the input, ``name`` and ``text`` the error;
    ``cause`` is the error itself when it pickles (else an exception carrying the worker's traceback)."""

    def __init__(self, label: str, name: str, text: str, cause: BaseException) -> None:
        super().__init__(label, name, text)
        self.label, self.name, self.text, self.cause = label, name, text, cause


class WorkerDied(Exception):
    """A worker process ended in the middle of a block (a crash in the mechanism, or killed)."""


class PastDeadline(Exception):
    """A block came back when the caller's budget was spent: the draw stops (the blocks in flight are drained)."""


def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def _stop(processes: list[subprocess.Popen[bytes]], kill: bool = False) -> None:
    """Close the workers' input (they exit), then wait; kill any still there after STOP_SECONDS (or at once)."""
    for process in processes:
        if kill:
            process.kill()
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
    for process in processes:
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


class Pool:
    """``count`` worker processes that run blocks of one mechanism's runs (started at once; raises
    :class:`PoolUnavailable` when the mechanism does not pickle or does not load in them).

    ``begin(context)`` sends a draw's inputs and start states to every worker; ``run(n, block,
    out_of_time)`` then has runs 0..n-1 made in blocks of ``block``, ``DEPTH`` blocks in flight per
    worker, and returns the workers' replies in the order of the runs. ``cpu_seconds`` is the CPU
    time the workers have used, as of their last replies (kept after they stop). ``close()`` stops
    the workers (also done when the pool is garbage-collected, and at exit).
    """

    def __init__(self, mechanism: Callable[..., Any], count: int) -> None:
        try:
            payload = pickle.dumps(mechanism, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # a lambda, a local function, an object holding a lock…
            raise PoolUnavailable(f"the mechanism does not pickle: {error}") from error
        if not sys.executable:
            raise PoolUnavailable("no Python executable to start workers with")
        self.processes: list[subprocess.Popen[bytes]] = []
        self._cpu: list[float] = [0.0] * count  # each worker's CPU seconds, as of its last reply
        self._finalizer = weakref.finalize(self, _stop, self.processes)
        # One hash seed for all workers (the caller's, when it set one): a mechanism that iterates over a
        # set of strings then does so in one order in every worker.
        environment = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", str(secrets.randbelow(2**32)))}
        try:
            for _ in range(count):
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment
                    )
                )
            for process in self.processes:
                path = pickle.dumps(list(sys.path))
                assert process.stdin is not None
                process.stdin.write(struct.pack("<Q", len(path)) + path)
                _send(process.stdin, ("load", payload))
            self._ask_all()
        except BaseException as error:
            self.close(kill=True)
            if isinstance(error, (OSError, EOFError, WorkerDied)):
                raise PoolUnavailable(f"the workers did not start: {error}") from error
            raise

    @property
    def count(self) -> int:
        return len(self.processes)

    @property
    def cpu_seconds(self) -> float:
        """The CPU seconds the workers used (their start included), as of their last replies."""
        return sum(self._cpu)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def _write(self, worker: int, message: Any) -> None:
        stdin = self.processes[worker].stdin
        assert stdin is not None
        _send(stdin, message)

    def _read(self, worker: int) -> Any:
        process = self.processes[worker]
        assert process.stdout is not None
        try:
            cpu, reply = _receive(process.stdout)
        except EOFError:
            code = process.wait()
            raise WorkerDied(f"a worker process running the mechanism ended (exit code {code})") from None
        self._cpu[worker] = cpu
        return reply

    def _ask_all(self) -> None:
        """Read every worker's reply to the message just sent; PoolUnavailable if any failed."""
        failures = [reply[1] for reply in (self._read(w) for w in range(self.count)) if reply[0] != "ok"]
        if failures:
            raise PoolUnavailable(failures[0])

    def begin(self, context: tuple[Any, ...]) -> bool:
        """Send a draw's context, ``("pairs", d, d_prime, inc, starts)`` or ``("calls", data, label, inc,
        starts)``, to every worker; False when it does not pickle here or does not load there."""
        try:
            payload = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # inputs that do not pickle: the caller runs the draw itself
            return False
        try:
            for w in range(self.count):
                self._write(w, ("context", payload))
            replies = [self._read(w) for w in range(self.count)]  # every one: the protocol stays in step
        except BaseException:
            self.close(kill=True)
            raise
        return all(reply[0] == "ok" for reply in replies)

    def run(self, n: int, block: int, out_of_time: Callable[[], bool]) -> list[Packed]:
        """Runs 0..n-1 of the current context in blocks; their packed outputs in order (two per block
        for pairs). Raises WorkerFailed (the first failing block's error), PastDeadline (a block came
        back when ``out_of_time()`` was true: the caller's budget, which may count ``cpu_seconds``, is
        read after each block), PoolUnavailable (outputs that
        are not sent between processes, see :func:`by_value`) or WorkerDied; the blocks in flight are
        drained first (the pool stays usable) except after WorkerDied or an interrupt, which stop it."""
        replies: list[Packed] = []
        pending: deque[int] = deque()
        begun = 0
        stop: Exception | None = None

        def submit(worker: int) -> None:
            nonlocal begun
            end = min(n, begun + block)
            self._write(worker, ("run", begun, end))
            pending.append(worker)
            begun = end

        try:
            for _ in range(DEPTH):
                for w in range(self.count):
                    if begun < n:
                        submit(w)
            while pending:
                w = pending.popleft()
                reply = self._read(w)
                if stop is not None:
                    continue  # draining the blocks in flight
                if reply[0] == "raised":
                    _, label, name, text, cause = reply
                    stop = WorkerFailed(label, name, text, cause)
                elif reply[0] == "failed":
                    stop = PoolUnavailable(reply[1])
                else:
                    replies.extend(reply[1:])
                    if out_of_time():
                        stop = PastDeadline()
                    elif begun < n:
                        submit(w)
        except BaseException:
            self.close(kill=True)
            raise
        if stop is not None:
            try:
                raise stop
            finally:
                stop = None  # no cycle error → traceback → this frame → error: the pool is freed with its sampler
        return replies

    def close(self, kill: bool = False) -> None:
        """Stop the workers (killing them at once with ``kill``, e.g. on an interrupt)."""
        self._finalizer.detach()
        _stop(self.processes, kill=kill)


def _failure(label: str, error: BaseException) -> tuple[str, str, str, str, BaseException]:
    """A worker's reply for a mechanism error: the error itself if it pickles, else its traceback."""
    text = "".join(traceback.format_exception(error))
    try:
        cause: BaseException = pickle.loads(pickle.dumps(error))
        cause.add_note("raised in an audit worker process:\n" + text)
    except Exception:
        cause = RuntimeError("raised in an audit worker process:\n" + text)
    return "raised", label, type(error).__name__, str(error), cause


def serve(inbound: IO[bytes]) -> None:
    """A worker's loop: read a message from ``inbound``, reply on the original stdout, until it closes.

    Messages: ``("load", mechanism)``, ``("context", payload)`` (both answered ``("ok",)`` or
    ``("failed", why)``), ``("run", begin, end)`` (answered ``("done", packed…)`` or ``("raised", label,
    name, text, cause)``), each sent as ``(cpu, reply)`` with the worker's CPU seconds so far. The
    mechanism's own prints go to stderr: stdout carries the replies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outbound = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    runner: Runner | None = None
    mechanism: Callable[..., Any] | None = None
    context: tuple[Any, ...] = ()
    starts: Starts = np.empty((0, 2), dtype=np.uint64)
    while True:
        try:
            message = _receive(inbound)
        except EOFError:
            return
        reply: Any
        outputs: tuple[list[Any], ...]
        try:
            if message[0] == "load":
                mechanism = pickle.loads(message[1])
                reply = ("ok",)
            elif message[0] == "context":
                context = pickle.loads(message[1])
                assert mechanism is not None
                inc, starts = context[-2], context[-1]
                runner = Runner(mechanism, inc)
                reply = ("ok",)
            else:
                _, begin, end = message
                assert runner is not None
                block = starts[begin:end].tolist()
                if context[0] == "pairs":
                    outputs = runner.pairs(context[1], context[2], block)
                else:
                    outputs = (runner.calls(context[1], block, context[2]),)
                packs = [pack(o) for o in outputs]
                if all(tag != "outputs" or all(map(by_value, values)) for tag, _, values in packs):
                    reply = ("done", *packs)
                else:
                    reply = ("failed", "the mechanism's outputs hold objects that are not sent between processes by value")
        except RunFailed as failed:
            reply = _failure(failed.label, failed.error)
        except Exception as error:  # a mechanism or inputs that do not load here: the caller runs them itself
            reply = ("failed", f"{type(error).__name__}: {error}")
        try:
            try:
                _send(outbound, (time.process_time(), reply))
            except (pickle.PicklingError, TypeError, AttributeError) as error:  # outputs or an error that do not pickle
                _send(outbound, (time.process_time(), ("failed", f"{type(error).__name__}: {error}")))
        except OSError:  # the caller is gone
            return
