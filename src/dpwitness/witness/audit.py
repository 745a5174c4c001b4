"""The black-box auditor: a one-sided, confidence-bounded lower bound on a mechanism's ε.

Method (StatDP / DP-Sniper style, with held-apart samples):

1. run ``mechanism(d, rng)`` and ``mechanism(d', rng)`` n times each (one vectorised call
   ``mechanism(data, rng, size=n)`` when the callable accepts ``size``); outputs of any shape
   (numbers, booleans, strings, None, tuples and lists of varying length, nested) become rows
   of numbers (see :class:`Encoder`);
2. on a *search* part of the samples, pick in each event family (see
   :mod:`dpwitness.witness.events`: thresholds, intervals, values, point masses, projections…)
   the event and direction whose projected lower bound is largest;
3. count how often the chosen events occur on *fresh* samples and turn the counts into
   ε_lb = ln(p₁_lower − δ) − ln(p₂_upper) with Clopper–Pearson bounds, Bonferroni-corrected
   over every event measured and every round run, so that P(ε_lb > true ε) ≤ 1 − confidence.

Without ``samples`` the audit is adaptive: rounds of 4× more samples until a violation is
certain, the evidence is tight enough to call "ok", or the time or sample cap is reached.

Verdicts: "violated" (ε_lb > claimed ε at the stated confidence: a proof of a bug, up to the
confidence level), "ok" (no violation; the most revealing event found is measured precisely
enough that its loss is at most ε·(1 + tolerance); and every event family searched has
*power*: an event of the family with loss above ε·(1 + tolerance) and probability at least
the stated ``power`` would have been certified as a violation — evidence, never a proof) and
"inconclusive" (anything else, said honestly). ``tight=True`` keeps sampling after the fast
verdict to maximise the certified ε_lb within the time budget. The default audit judges
outputs as real numbers; ``float_test=True`` adds bit-pattern events that expose porous
floating-point supports (Mironov 2012).
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import ParameterError, require
from dpwitness.common.progress import progress as progress_display
from dpwitness.common.validation import check_finite, check_positive_finite
from dpwitness.witness.events import (
    Alignment,
    Candidate,
    Path,
    Scorer,
    aligned_candidates,
    names_of,
    paired_candidates,
    precision_bits,
    resolution,
    search,
    summary_features,
    threshold_candidate,
)
from dpwitness.witness.stats import (
    epsilon_estimate,
    epsilon_lower_bound,
    epsilon_upper_bound,
    paired_epsilon_lower_bound,
    paired_projection,
)
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

if TYPE_CHECKING:
    from dpwitness.mechanisms.additive import Laplace

FloatArray = npt.NDArray[np.float64]
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
#: First adaptive round (runs per input) and growth factor between rounds.
FIRST_ROUND = 20_000
GROWTH = 4
#: Default cap on runs per input (10⁷ runs in all) and on CPU time (this process's and its workers').
MAX_SAMPLES = 5_000_000
MAX_SECONDS = 60.0
#: The wall-clock cap, ``WALL_CAP_FACTOR × max_seconds + WALL_CAP_SECONDS``: it never decides a
#: result on a machine that gives the audit a fair share of a core; it only stops runaway work (a
#: mechanism that sleeps or waits, a machine too busy to run the audit), and a result it cut short
#: says so (``wall_clock_stopped``).
WALL_CAP_FACTOR, WALL_CAP_SECONDS = 10.0, 60.0
#: Rows over which the search's fixed costs are spread when planning the next round's time.
SEARCH_FIXED_ROWS = 50_000
#: Search samples kept from earlier rounds.
SEARCH_CAP = 1_000_000
#: Most numbers kept per input for the tight mode's search sample (memory bound).
TIGHT_STORE = 10_000_000
#: Rows per chunk of the tight mode's final measurement (counted, then dropped).
TIGHT_CHUNK = 1_000_000
#: The least search time per row (and input) the tight mode plans with: a search measured on a small
#: sample underestimates the cost of sorting millions of rows.
TIGHT_SEARCH_ROW_SECONDS = 3e-6
#: Shares of the tight mode's time: search sample, selection sample (the rest: final measurement).
TIGHT_SEARCH_SHARE, TIGHT_SELECT_SHARE = 0.2, 0.2
#: Least share of the tight mode's time for the fresh (paired) search sample of a per-call mechanism.
TIGHT_PAIRED_SHARE = 0.1
#: Share of the tight mode's time for the streamed vector summaries (sum, count above median, max,
#: min); half of it for paired runs, whose search already scores the summaries on the pairs.
TIGHT_SUMMARIES_SHARE = 0.1
#: Events certified together on the tight mode's final sample for vector outputs (the best two
#: proposals: a hedge against a noisy choice, at the price of a Bonferroni factor of 2).
TIGHT_EVENTS = 2
#: Share of α the tight mode's certification gets (the fast verdict gets the rest): the tight
#: bound is the one meant to be sharp, and a bound above ε is a violation whichever phase found it.
TIGHT_ALPHA_SHARE = 0.9
#: Share of ``max_seconds`` (CPU) the fast verdict may use in tight mode (its samples feed the tight search).
TIGHT_FAST_SHARE = 0.25
#: A per-call mechanism's run time may depend on its outputs, so the clock must not choose where its
#: tight measurement stops: it is planned with this share of the time left and certified at the
#: last of the sizes fixed in advance (``PER_CALL_CHECKPOINTS``, fractions of the plan) that it
#: reached, each with its own share of α (``PER_CALL_CHECKPOINT_ALPHA``, fixed in advance: Bonferroni).
PER_CALL_FINAL_SHARE = 0.9
PER_CALL_CHECKPOINTS = (0.5, 0.7, 0.85, 1.0)
PER_CALL_CHECKPOINT_ALPHA = (0.02, 0.04, 0.09, 0.85)
#: The float test has power only on outputs that lie on a grid 2^k·ℤ at least this many bits
#: coarser than the doubles' spacing at the largest output (:func:`precision_bits` ≤ 53 − this):
#: there every grid value is exact and the value families see the whole support. Outputs that use
#: the full precision can have a porous support the bit-pattern events do not see.
FLOAT_MARGIN_BITS = 8
#: The tight search only proposes events (a fresh sample chooses among them): it shrinks its
#: estimates by about one standard deviation, not 2.3, so that weak but real effects survive.
TIGHT_SHRINK = 0.16
#: The selection among the tight proposals shrinks its fresh estimates by about 1.6 standard
#: deviations: enough that a rare proposal that got lucky does not win, not so much that a rare
#: but truly better event (the optimum of a sparse vector) always loses to a likely weak one.
TIGHT_SELECT_SHRINK = 0.05
#: Families whose tight proposals are ranked on their search and selection counts pooled: value
#: sets chosen among few keys. Not binned rows: their search ordered thousands of cells by noisy
#: ratios, so their search counts are biased upwards (SVT34Parallel's selection chose one that
#: certified 0.005 over an aligned part's pattern that certifies 0.27).
POOLED_FAMILIES = frozenset({"values", "joint values"})


class MechanismError(RuntimeError):
    """The audited callable misbehaved (raised, returned NaN, an unusable object…)."""


@dataclass(frozen=True)
class AuditResult:
    """What the auditor found. ``epsilon_lower_bound`` holds with probability ≥ ``confidence``.

    ``power`` lists, for each event family searched, the smallest probability (under the
    likelier input) at which an event of that family with loss ε·(1 + tolerance) would have
    been certified as a violation with these samples (∞: no such probability).
    With ``tight=True``, ``tight_epsilon_lower_bound`` is the certified bound of the longer
    run; it and the fast bound hold together at ``confidence`` (α is split between them), and the
    verdict is "violated" whenever either exceeds the claimed ε. ``tight_paired``: the tight bound
    came from paired runs (common random numbers), with ``tight_cells`` the pairs that hit the
    event under both inputs, under the likelier one only and under the other only. ``replayed``: the noise alone was
    sampled on frozen pre-noise values (``audit(..., replay=...)``).
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    violated: bool
    verdict: str
    event: str | None
    samples: int
    confidence: float
    seconds: float
    epsilon_estimate: float = 0.0
    event_upper_bound: float = 0.0
    direction: str = ""
    hits: tuple[int, int] = (0, 0)
    measured_runs: int = 0
    rounds: int = 0
    events_measured: int = 0
    family: str = ""
    model: str = "idealised real-number outputs (exact float values are not judged)"
    reason: str = ""
    pair: str | None = None
    pairs_tried: tuple[str, ...] = field(default=())
    tolerance: float = 0.1
    power: tuple[tuple[str, float], ...] = field(default=())
    tight_epsilon_lower_bound: float | None = None
    tight_event: str | None = None
    tight_family: str = ""
    tight_samples: int = 0
    tight_seconds: float = 0.0
    tight_hits: tuple[int, int] = (0, 0)
    tight_reason: str = ""
    tight_paired: bool = False
    tight_cells: tuple[int, int, int] = (0, 0, 0)
    replayed: bool = False
    cpu_seconds: float = 0.0
    wall_clock_stopped: bool = False

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def best_epsilon_lower_bound(self) -> float:
        """The larger of the fast and the tight bound (both hold together at ``confidence``)."""
        return max(self.epsilon_lower_bound, self.tight_epsilon_lower_bound or 0.0)

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import record_html

        return record_html(str(self), self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["hits"] = list(self.hits)
        payload["tight_hits"] = list(self.tight_hits)
        payload["tight_cells"] = list(self.tight_cells)
        payload["pairs_tried"] = list(self.pairs_tried)
        payload["power"] = [{"family": f, "smallest_probability": json_number(p)} for f, p in self.power]
        for key in ("epsilon_estimate", "event_upper_bound"):
            payload[key] = json_number(payload[key])
        return payload

    def power_statement(self) -> str:
        """One line per family: the smallest event probability at which a loss above ε(1 + tolerance) would have shown."""
        if not self.power:
            return ""
        loss = self.claimed_epsilon * (1 + self.tolerance)
        parts = [f"{family} ≥ {p:.2g}" if math.isfinite(p) else f"{family}: none" for family, p in self.power]
        return f"power: an event with loss > {loss:.4g} would have been caught at probability " + ", ".join(parts)

    def __str__(self) -> str:
        mark = {"ok": "✔", "violated": "✘", "inconclusive": "?"}[self.verdict]
        head = f"{mark} {self.verdict.upper()}: ε_lb = {self.epsilon_lower_bound:.4g} vs claimed ε = {self.claimed_epsilon:g}"
        if self.delta:
            head += f", δ = {self.delta:g}"
        tail = f" at {self.confidence:.0%} confidence from {self.samples:,} runs per input in {self.seconds:.2f} s"
        event = f"; event {self.event} ({self.direction})" if self.event else ""
        pair = f"; worst pair {self.pair}" if self.pair else ""
        tight = ""
        if self.tight_epsilon_lower_bound is not None:
            tight = (
                f"; tight ε_lb = {self.tight_epsilon_lower_bound:.4g} from {self.tight_samples:,} runs per input "
                f"in {self.tight_seconds:.1f} s (event {self.tight_event}{', paired runs' if self.tight_paired else ''})"
            )
        elif self.tight_reason:
            tight = f"; tight mode: {self.tight_reason}"
        reason = f". {self.reason}" if self.reason else ""
        return head + tail + event + pair + tight + reason


def json_number(value: float) -> float | str | None:
    """A float for JSON: ±∞ as the strings "inf"/"-inf", NaN as None.

    :param value: any float; a finite one is returned unchanged.
    """
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


# --- sampling --------------------------------------------------------------------------------


class _OutOfTime(Exception):
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


class Encoder:
    """Outputs of any shape as rows of numbers: ``[shape code, number of values, v₀, v₁, …]``.

    Numbers and booleans are values (±∞ included); strings, None and other hashable objects get a
    code (the same object always gets the same code); tuples, lists, dicts and arrays are walked in
    order. The shape code names the nesting and kinds (``(n,n,b)``, ``[s,∅]``…); positions a
    shorter output does not have are NaN, which the events read as "missing"; a NaN the mechanism
    returns is an outcome: the shape code marks it (``N``, or ``·NaN@[positions]`` in an array). While every output has
    the same shape, the shape and length columns carry nothing and are left out of the view.

    ``shape_code(signature)`` numbers a shape signature (the same signature, the same code, from
    0 in order of first sight). ``rows(outputs, label)`` encodes a sequence of outputs as one
    NaN-padded float array; ``encode(output, label)`` one output as (its signature, its values).
    ``label`` names the input (``"d"``, ``"d_prime"``) in the error raised for an output that
    cannot be encoded.
    """

    def __init__(self) -> None:
        self.shapes: dict[str, int] = {}
        self.symbols: dict[tuple[str, Any], int] = {}
        self.paths: dict[int, tuple[Path, ...]] = {}  # shape code → the path of each value (rows() only)

    @property
    def structured(self) -> bool:
        return len(self.shapes) > 1

    def shape_code(self, signature: str) -> float:
        return float(self.shapes.setdefault(signature, len(self.shapes)))

    def rows(self, outputs: Sequence[Any], label: str) -> FloatArray:
        nested = self._nested_rows(outputs, label)
        if nested is not None:
            return nested
        encoded = [self.encode(output, label) for output in outputs]
        width = max((len(values) for _, values in encoded), default=0)
        rows = np.full((len(encoded), 2 + width), np.nan)
        for i, (signature, values) in enumerate(encoded):
            self._remember(signature, outputs[i])
            rows[i, 0] = self.shape_code(signature)
            rows[i, 1] = len(values)
            rows[i, 2 : 2 + len(values)] = values
        return rows

    def _nested_rows(self, outputs: Sequence[Any], label: str) -> FloatArray | None:
        """Rows for tuples or lists whose items are plain numbers and booleans or sequences of them
        (a tuple of two sparse vectors' answers), stacked group by group of one layout at numpy speed,
        with the codes and values the walk gives; None for any other output."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, output in enumerate(outputs):
            if type(output) not in _SEQUENCES:
                return None
            groups.setdefault(tuple(tuple(map(type, p)) if type(p) in _SEQUENCES else type(p) for p in output), []).append(i)
        width = 0
        layouts: list[tuple[str, list[int], int]] = []
        for key, members in groups.items():
            leaves = [t for part in key for t in (part if isinstance(part, tuple) else (part,))]
            if not all(t in PLAIN_NUMBERS or t in PLAIN_BOOLEANS for t in leaves):
                return None
            kinds = ["(" + ",".join(map(_kind_of, part)) + ")" if isinstance(part, tuple) else _kind_of(part) for part in key]
            layouts.append(("(" + ",".join(kinds) + ")", members, len(leaves)))
            width = max(width, len(leaves))
        rows = np.full((len(outputs), 2 + width), np.nan)
        for signature, members, count in layouts:
            index = np.asarray(members)
            flat = [[v for part in outputs[i] for v in (part if type(part) in _SEQUENCES else (part,))] for i in members]
            values = np.asarray(flat, dtype=np.float64).reshape(len(members), count)
            nan = np.isnan(values).any(axis=1)
            for r in np.flatnonzero(nan):  # a NaN output has its own shape: the walk's signature
                marked, _ = self.encode(outputs[members[r]], label)
                self._remember(marked, outputs[members[r]])
                rows[index[r], 0] = self.shape_code(marked)
            if not nan.all():
                self._remember(signature, outputs[members[int(np.argmin(nan))]])
                rows[index[~nan], 0] = self.shape_code(signature)
            rows[index, 1] = count
            rows[index, 2 : 2 + count] = values
        return rows

    def _remember(self, signature: str, output: Any) -> None:
        if signature not in self.shapes:
            self.paths[int(self.shape_code(signature))] = tuple(value_paths(output))

    def alignment(self) -> Alignment | None:
        """The :class:`Alignment` of the shapes seen so far (None: flat, or some shape's paths unknown)."""
        if not self.structured or any(code not in self.paths for code in self.shapes.values()):
            return None
        return Alignment.of(self.paths)

    def encode(self, output: Any, label: str) -> tuple[str, list[float]]:
        values: list[float] = []
        return self._walk(output, values, label), values

    def _symbol(self, value: Any, label: str) -> float:
        key = (type(value).__name__, value)
        try:
            return float(self.symbols.setdefault(key, len(self.symbols)))
        except TypeError:
            raise MechanismError(
                f"the mechanism returned {type(value).__name__} on {label}; expected numbers, booleans, strings, "
                "None, or (nested) tuples, lists, dicts or arrays of them"
            ) from None

    def _walk(self, part: Any, values: list[float], label: str) -> str:
        if part is None:
            values.append(self._symbol(None, label))
            return "∅"
        if isinstance(part, (bool, np.bool_)):
            values.append(float(part))
            return "b"
        if isinstance(part, (int, float, np.integer, np.floating)):
            value = float(part)
            values.append(value)
            return "n" + (_NAN_SCALAR if math.isnan(value) else "")  # a NaN output has its own shape: never "missing"
        if isinstance(part, (str, bytes)):
            values.append(self._symbol(part, label))
            return "s"
        if isinstance(part, np.ndarray):
            if part.dtype.kind in "biuf":
                flat = part.astype(np.float64).ravel()
                values.extend(flat.tolist())
                return f"a{part.shape}" + nan_mark(np.isnan(flat))
            return "[" + ",".join(self._walk(x, values, label) for x in part.ravel().tolist()) + "]"
        if isinstance(part, (tuple, list)):
            return "(" + ",".join(self._walk(x, values, label) for x in part) + ")"
        if isinstance(part, dict):
            items = sorted(part.items(), key=lambda item: repr(item[0]))
            return "{" + ",".join(f"{key!r}:" + self._walk(value, values, label) for key, value in items) + "}"
        values.append(self._symbol(part, label))
        return "o"


def value_paths(part: Any, prefix: Path = ()) -> list[Path]:
    """The path (positions and dict keys from the top) of each value :class:`Encoder` takes from
    ``part``, in its order, each path starting with ``prefix`` (the path of ``part`` itself)."""
    if isinstance(part, np.ndarray):
        if part.dtype.kind in "biuf":
            return [(*prefix, i) for i in range(part.size)]
        return [p for i, x in enumerate(part.ravel().tolist()) for p in value_paths(x, (*prefix, i))]
    if isinstance(part, (tuple, list)):
        return [p for i, x in enumerate(part) for p in value_paths(x, (*prefix, i))]
    if isinstance(part, dict):
        items = sorted(part.items(), key=lambda item: repr(item[0]))
        return [p for key, value in items for p in value_paths(value, (*prefix, repr(key)))]
    return [prefix]


_SEQUENCES = frozenset({tuple, list})


def _kind_of(kind: type) -> str:
    return "b" if kind in PLAIN_BOOLEANS else "n"


def nan_mark(mask: npt.NDArray[np.bool_]) -> str:
    """The part of a shape signature that says which values are NaN outputs ("" when none).

    :param mask: a boolean array, True where the (flattened) output is NaN; the signature lists
        those positions as ``·NaN@[i, …]``.
    """
    return f"·NaN@{np.flatnonzero(mask).tolist()}" if mask.any() else ""


_NAN_SCALAR = nan_mark(np.array([True]))


def _pad(rows: FloatArray, width: int) -> FloatArray:
    if rows.shape[1] >= width:
        return rows
    return np.hstack([rows, np.full((len(rows), width - rows.shape[1]), np.nan)])


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
        padded = [_pad(a, width) for a in arrays]
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
        while done < n:
            size = min(block, n - done)
            begun = self.clock()
            run(done, size)
            done += size
            if self.out_of_time():
                raise _OutOfTime
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
            raise _OutOfTime from None
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


# --- the audit -------------------------------------------------------------------------------


def _validate(epsilon: float, delta: float, samples: int | None, confidence: float) -> tuple[float, float, float]:
    eps = check_finite("epsilon", epsilon, "a finite number > 0")
    if eps <= 0:
        raise ParameterError("epsilon", "a finite number > 0 (the ε the mechanism claims)", epsilon)
    dlt = check_finite("delta", delta, "a number in [0, 1)")
    if not 0.0 <= dlt < 1.0:
        raise ParameterError("delta", "a number in [0, 1)", delta)
    conf = check_finite("confidence", confidence, "a number strictly between 0 and 1")
    if not 0.0 < conf < 1.0:
        raise ParameterError("confidence", "a number strictly between 0 and 1", confidence)
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 10):
        raise ParameterError("samples", "a whole number ≥ 10 (runs per input) or None to let the auditor choose", samples)
    return eps, dlt, conf


def _schedule(samples: int | None, max_samples: int) -> list[int]:
    if samples is not None:
        return [int(samples)]
    sizes: list[int] = []
    n = min(FIRST_ROUND, max_samples)
    while sum(sizes) + n + GROWTH * n <= max_samples:
        sizes.append(n)
        n *= GROWTH
    sizes.append(max_samples - sum(sizes))  # max_samples caps the runs per input over all rounds
    return sizes


@dataclass
class _Measured:
    candidate: Candidate
    lower: float
    estimate: float
    upper: float
    hits: tuple[int, int]
    runs: int
    events: int


def _measure(candidates: Sequence[Candidate], ma: FloatArray, mb: FloatArray, *, delta: float, alpha: float) -> list[_Measured]:
    out = []
    n = len(ma)
    for candidate in candidates:
        ha, hb = int(candidate.event.contains(ma).sum()), int(candidate.event.contains(mb).sum())
        h1, h2 = (ha, hb) if candidate.direction == 1 else (hb, ha)
        out.append(
            _Measured(
                candidate,
                float(epsilon_lower_bound(h1, h2, n, delta=delta, alpha=alpha)),
                float(epsilon_estimate(h1, h2, n, delta=delta)),
                float(epsilon_upper_bound(h1, h2, n, delta=delta, alpha=alpha)),
                (h1, h2),
                n,
                len(candidates),
            )
        )
    return out


def _precise(measured: _Measured, eps: float, tolerance: float) -> bool:
    """A real separating event (ε_lb > 0) whose loss is pinned within tolerance·ε."""
    return measured.lower > 0 and measured.upper - measured.lower <= tolerance * eps


def _power(families: Sequence[str], scorer: Scorer, eps: float, tolerance: float) -> tuple[tuple[str, float], ...]:
    """For each family: the smallest event probability at which a loss of ε(1 + tolerance) would be certified."""
    detectable = scorer.smallest_detectable(eps * (1 + tolerance), eps)
    return tuple((family, max(detectable, resolution(family, scorer.n_search))) for family in families)


def _powerful(power: Sequence[tuple[str, float]]) -> bool:
    return bool(power) and all(p <= 1.0 for _, p in power)


def audit(
    mechanism: Mechanism,
    d: Any,
    d_prime: Any = None,
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int | None = None,
    confidence: float = 0.95,
    seed: int | None = None,
    float_test: bool = False,
    tolerance: float = 0.1,
    max_samples: int = MAX_SAMPLES,
    max_seconds: float = MAX_SECONDS,
    search_fraction: float = 0.25,
    progress: bool | None = None,
    relation: str = "answers",
    sensitivity: float = 1.0,
    tight: bool = False,
    replay: Mechanism | None = None,
) -> AuditResult:
    """Audit ``mechanism`` on the neighbouring inputs ``d`` and ``d_prime`` against a claimed (ε, δ).

    ``mechanism(data, rng)`` returns one output of any shape: a number, bool, string, None,
    array, or a (nested) tuple/list/dict of those, of a length that may vary from run to run.
    When it accepts ``size`` it is called as ``mechanism(data, rng, size=n)`` and returns n
    outputs, stacked on the first axis of numeric arrays (or a tuple of such arrays), or as a
    list of n outputs of any shape. ``samples`` is the number of runs per input (adaptive when
    None). ``tight=True`` keeps sampling after the fast verdict, until ``max_seconds`` of CPU time
    from the start, to maximise the certified ε_lb (``tight_epsilon_lower_bound``).
    With ``d_prime=None`` the auditor searches neighbours of ``d`` (see
    :func:`dpwitness.witness.neighbour_search.audit_neighbours`; ``relation`` and
    ``sensitivity`` describe how neighbours differ) and reports the worst pair.
    ``float_test=True`` judges exact doubles (bit patterns too); it never says "ok" on outputs
    that use the doubles' full precision, where its events are blind (see ``FLOAT_MARGIN_BITS``).

    ``replay``, for slow targets: a noise-only sampler ``replay(frozen, rng)`` or
    ``replay(frozen, rng, size=n)``. Then ``mechanism(data)`` is called once per input, with the
    data alone, and returns its *frozen* pre-noise state (for instance the values a library passes
    to its noise calls, recorded with the noise switched off); it must be deterministic (pin any
    internal randomness). Only ``replay`` is sampled, on the two frozen states, exactly as a
    mechanism would be. The guarantee is then about the noise stage alone, given those pre-noise
    values: a bound above ε proves the released noisy values break ε on this pair.

    :param epsilon: the ε the mechanism claims, a finite number > 0 (no default).
    :param delta: the δ it claims, in [0, 1); default 0.0 (pure ε-DP).
    :param confidence: the probability, strictly between 0 and 1, with which every certified
        bound holds (all events and rounds together); default 0.95.
    :param seed: seeds the runs' random streams and the event search, for a reproducible audit;
        default None: fresh entropy.
    :param tolerance: the relative slack, a finite number > 0 (default 0.1): "ok" needs the loss
        pinned within tolerance·ε and power against any loss above ε·(1 + tolerance).
    :param max_samples: with ``samples=None``, the most runs per input over all rounds, a whole
        number ≥ 10; default 5,000,000.
    :param max_seconds: the audit's budget in CPU seconds, a finite number > 0 (default 60): the
        CPU time (:func:`time.process_time`) of this process and of the audit's worker processes
        together, so that the machine's load does not decide the result; a round whose predicted
        CPU time would exceed it is not started, and the tight mode plans its samples within it.
        The wall clock only stops runaway work, at ``10 × max_seconds + 60`` s: a result it cut
        short has ``wall_clock_stopped`` set and says so in its reason. ``seconds`` reports the
        wall time, ``cpu_seconds`` the budget's clock.
    :param search_fraction: the share of each round's runs used to search for events (the rest
        measures them), strictly between 0 and 1; default 0.25.
    :param progress: show a progress bar (the one display of :mod:`dpwitness.common.progress`: only in a
        terminal or notebook, never under ``DPWITNESS_PROGRESS=0``); default None: when at least
        1,000,000 runs per input are planned; False: never.
    """
    eps, dlt, conf = _validate(epsilon, delta, samples, confidence)
    require("scipy", "audit", "the black-box auditor")  # before any run of the mechanism
    max_seconds = check_positive_finite("max_seconds", max_seconds)
    tolerance = check_positive_finite("tolerance", tolerance)
    if d_prime is None:
        from dpwitness.witness.neighbour_search import audit_neighbours

        return audit_neighbours(
            mechanism,
            d,
            epsilon=eps,
            audit_pair=audit,
            delta=dlt,
            samples=samples,
            confidence=conf,
            seed=seed,
            float_test=float_test,
            tolerance=tolerance,
            max_samples=max_samples,
            max_seconds=max_seconds,
            search_fraction=search_fraction,
            progress=progress,
            relation=relation,
            sensitivity=sensitivity,
            tight=tight,
            replay=replay,
        )
    if not 0.0 < search_fraction < 1.0:
        raise ParameterError("search_fraction", "a number strictly between 0 and 1", search_fraction)
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 10:
        raise ParameterError("max_samples", "a whole number ≥ 10", max_samples)
    wall_started, started = time.perf_counter(), time.process_time()
    if replay is not None:
        if not callable(replay):
            raise ParameterError("replay", "a noise-only sampler replay(frozen, rng) or replay(frozen, rng, size=n)", replay)
        if not callable(mechanism):
            raise ParameterError("mechanism", "with replay: a callable mechanism(data) returning the pre-noise state", mechanism)
        d, d_prime = _freeze(mechanism, d, "d"), _freeze(mechanism, d_prime, "d_prime")
        mechanism = replay
    deadline = started + max_seconds  # CPU seconds (the sampler's clock)
    fast_deadline = started + max_seconds * (TIGHT_FAST_SHARE if tight else 1.0)  # tight mode: the rest for the tight bound
    wall_cap = wall_started + WALL_CAP_FACTOR * max_seconds + WALL_CAP_SECONDS
    sampler = Sampler(mechanism, deadline=fast_deadline, wall_deadline=wall_cap)
    sizes = _schedule(samples, max_samples)
    rounds = len(sizes)
    root = np.random.SeedSequence(seed)
    streams = root.spawn(2 * rounds + 1)
    search_rng = np.random.default_rng(streams[-1])
    alpha = (1.0 - conf) * (1.0 - TIGHT_ALPHA_SHARE) if tight else 1.0 - conf  # the tight phase gets the rest
    best: _Measured | None = None
    last: _Measured | None = None
    power: tuple[tuple[str, float], ...] = ()
    drawn, reason, ran, constant = 0, "", 0, False
    pool_a: FloatArray | None = None
    pool_b: FloatArray | None = None
    last_a: FloatArray | None = None
    last_b: FloatArray | None = None
    show = progress if progress is not None else (samples or max_samples) >= 1_000_000
    with progress_display("auditing: runs per input", total=2 * sum(sizes), enabled=show) as bar:
        for r, n in enumerate(sizes):
            remaining = fast_deadline - sampler.clock()
            if r > 0 and (sampler.seconds_per_run * 2 + sampler.search_seconds_per_row) * n > remaining:
                budget = fast_deadline - started
                reason = f"stopped before a round of {n:,} runs per input: the CPU budget ({budget:g} s) would be exceeded"
                break
            if r > 0 and sampler.out_of_time(math.inf):
                reason = _wall_reason(max_seconds, f"before a round of {n:,} runs per input")
                break
            try:
                xa = sampler.draw_full(d, np.random.default_rng(streams[2 * r]), n, "d")
                bar.advance(n)
                xb = sampler.draw_full(d_prime, np.random.default_rng(streams[2 * r + 1]), n, "d_prime")
                bar.advance(n)
            except _OutOfTime:
                if sampler.wall_stopped:
                    reason = _wall_reason(max_seconds, f"during a round of {n:,} runs per input")
                else:
                    reason = (
                        f"the mechanism is too slow: about {1 / max(sampler.seconds_per_run, 1e-12):,.0f} runs per CPU "
                        f"second; no round of {n:,} runs per input finished within max_seconds = {max_seconds:g} (CPU)"
                    )
                break
            drawn += n
            ran += 1
            split = min(n - 5, max(5, int(n * search_fraction)))
            full_sa, full_sb = xa[:split], xb[:split]
            if pool_a is not None and pool_b is not None:
                width = max(pool_a.shape[1], xa.shape[1])
                full_sa = np.vstack([_pad(pool_a, width), _pad(full_sa, width)])[-SEARCH_CAP:]
                full_sb = np.vstack([_pad(pool_b, width), _pad(full_sb, width)])[-SEARCH_CAP:]
            (sa, sb, ma, mb), names, start = sampler.view(full_sa, full_sb, xa[split:], xb[split:])
            width = max(full_sa.shape[1], xa.shape[1])
            last_a = np.vstack([_pad(full_sa, width), _pad(xa[split:], width)])
            last_b = np.vstack([_pad(full_sb, width), _pad(xb[split:], width)])
            if r < rounds - 1:  # this round's samples help the next round's search
                pool_a, pool_b = last_a[-SEARCH_CAP:], last_b[-SEARCH_CAP:]
            # Score with the α each event will get if every family yields one (the usual case).
            probe = Scorer(len(sa), len(ma), delta=dlt, alpha=alpha / (rounds * 8))
            searching = sampler.clock()
            candidates, families = search(sa, sb, probe, float_test=float_test, rng=search_rng, names=names, start=start)
            alignment = sampler.encoder.alignment() if start == 2 else None
            if alignment is not None:  # nested outputs: each part alone, and the parts' log ratios summed
                candidates += aligned_candidates(alignment.apply(sa), alignment.apply(sb), alignment, probe, [])
                families = [*families, "parts combined"]
            # the search has fixed costs (quantile grids, histograms): amortised as if over SEARCH_FIXED_ROWS rows at least
            sampler.search_seconds_per_row = (sampler.clock() - searching) / max(len(sa), SEARCH_FIXED_ROWS)
            if not candidates:
                last = None
                reason = "the outputs take a single value, the same on both inputs: no event separates them"
                constant = True
                break
            # Bonferroni over the events actually measured (their number is fixed before measuring).
            alpha_events = alpha / (rounds * len(candidates))
            measured = _measure(candidates, ma, mb, delta=dlt, alpha=alpha_events)
            power = _power(families, Scorer(len(sa), len(ma), delta=dlt, alpha=alpha_events), eps, tolerance)
            if float_test and _float_blind(start, sa, sb, ma, mb):
                power = tuple((f, math.inf if f == "bit pattern" else p) for f, p in power)
            last = max(measured, key=lambda m: m.lower)
            if best is None or last.lower > best.lower:
                best = last
            if best.lower > eps or (_precise(last, eps, tolerance) and _powerful(power)):
                break
    seconds = time.perf_counter() - wall_started
    result = _result(
        best,
        last,
        eps=eps,
        delta=dlt,
        conf=conf,
        drawn=drawn,
        ran=ran,
        seconds=seconds,
        tolerance=tolerance,
        reason=reason,
        float_test=float_test,
        constant=constant,
        power=power,
    )
    result = replace(
        result, replayed=replay is not None, cpu_seconds=sampler.clock() - started, wall_clock_stopped=sampler.wall_stopped
    )
    if sampler.wall_stopped and "wall-clock cap" not in result.reason:  # e.g. an "ok" reached on the rounds run
        result = replace(result, reason=result.reason + "; " + _wall_reason(max_seconds, "after the last round"))
    if replay is not None:
        result = replace(result, model=result.model + "; noise replayed on frozen pre-noise values")
    if not tight:
        return result
    if constant or last_a is None or last_b is None:
        return replace(result, tight_reason="nothing to sharpen: no event separated the inputs")
    return _tight(
        sampler,
        d,
        d_prime,
        last_a,
        last_b,
        result,
        root=root,
        deadline=deadline,
        wall_started=wall_started,
        cpu_started=started,
        alpha=(1.0 - conf) * TIGHT_ALPHA_SHARE,
        delta=dlt,
        float_test=float_test,
        rng=search_rng,
    )


def _wall_reason(max_seconds: float, where: str) -> str:
    """The note of a result the wall-clock cap cut short (the CPU budget was not spent)."""
    cap = WALL_CAP_FACTOR * max_seconds + WALL_CAP_SECONDS
    return (
        f"stopped by the wall-clock cap ({cap:g} s) {where}, before the CPU budget (max_seconds = {max_seconds:g}) "
        "was spent: the mechanism waits rather than computes, or the machine is too busy; the result stands on "
        "the samples drawn"
    )


def _freeze(target: Mechanism, data: Any, label: str) -> Any:
    """The pre-noise state ``target(data)`` of one input (replay mode), its failures reported as the mechanism's."""
    try:
        return target(data)
    except Exception as error:  # the user's code
        name = type(error).__name__
        raise MechanismError(f"the target raised {name} on {label} while freezing its pre-noise values: {error}") from error


def _float_blind(start: int, *arrays: FloatArray) -> bool:
    """True when the outputs use the doubles' full precision: the float test cannot see their support."""
    bits = max(precision_bits(np.asarray(a[:, start:], dtype=np.float64).ravel()) for a in arrays)
    return bits > 53 - FLOAT_MARGIN_BITS


def _result(
    best: _Measured | None,
    last: _Measured | None,
    *,
    eps: float,
    delta: float,
    conf: float,
    drawn: int,
    ran: int,
    seconds: float,
    tolerance: float,
    reason: str,
    float_test: bool,
    constant: bool,
    power: tuple[tuple[str, float], ...],
) -> AuditResult:
    model = "floating point: exact output values and bit patterns judged" if float_test else AuditResult.model
    if best is None:
        verdict = "ok" if constant else "inconclusive"
        if drawn == 0 and not reason:
            reason = "no samples were drawn"
        return AuditResult(
            0.0,
            eps,
            delta,
            False,
            verdict,
            None,
            drawn,
            conf,
            seconds,
            rounds=ran,
            model=model,
            reason=reason,
            tolerance=tolerance,
        )
    lower = max(0.0, best.lower)
    violated = best.lower > eps
    if violated:
        verdict = "violated"
        reason = reason or f"the event below is at least e^{lower:.4g} times likelier under one input: more than e^ε allows"
    elif last is not None and _precise(last, eps, tolerance) and _powerful(power):
        verdict = "ok"
        weakest = max(p for _, p in power)
        reason = (
            f"no violation found: the most revealing event found has loss between {max(0.0, last.lower):.4g} and "
            f"{last.upper:.4g} ≤ ε·(1 + {tolerance:g}), and an event of any family searched with loss above "
            f"ε·(1 + {tolerance:g}) and probability ≥ {weakest:.2g} would have been caught, at this confidence "
            "(evidence, not a proof)"
        )
    else:
        verdict = "inconclusive"
        if last is None or last.lower <= 0:
            detail = "no event separated the two inputs with confidence, so nothing can be said about ε from these samples"
        elif not _precise(last, eps, tolerance):
            detail = (
                f"the best event's loss is only known to lie in [{last.lower:.4g}, {last.upper:.4g}], "
                f"wider than tolerance·ε = {tolerance * eps:.3g}: more samples are needed to conclude"
            )
        elif dict(power).get("bit pattern", 0.0) == math.inf:
            detail = (
                "the float test is blind here: the outputs use the doubles' full precision (they lie on no grid "
                f"2^k·ℤ at least {FLOAT_MARGIN_BITS} bits coarser than their spacing), so a porous support can hide "
                "below what the bit-pattern events see; for numpy's samplers use dpwitness.attacks.floating_point"
            )
        else:
            weak = ", ".join(family for family, p in power if p > 1.0)
            detail = (
                f"these samples are too few to catch a loss above ε·(1 + {tolerance:g}) in the families {weak}, "
                "whatever the event's probability: more samples are needed to conclude"
            )
        reason = (reason + "; " if reason else "") + "no violation proven, but " + detail
    candidate = best.candidate
    direction = "P[E | d] / P[E | d′]" if candidate.direction == 1 else "P[E | d′] / P[E | d]"
    return AuditResult(
        epsilon_lower_bound=lower,
        claimed_epsilon=eps,
        delta=delta,
        violated=violated,
        verdict=verdict,
        event=candidate.event.description,
        samples=drawn,
        confidence=conf,
        seconds=seconds,
        epsilon_estimate=best.estimate,
        event_upper_bound=best.upper,
        direction=direction,
        hits=best.hits,
        measured_runs=best.runs,
        rounds=ran,
        events_measured=best.events,
        family=candidate.family,
        model=model,
        reason=reason,
        tolerance=tolerance,
        power=power,
    )


# --- tight mode ------------------------------------------------------------------------------


def _stream(
    sampler: Sampler,
    d: Any,
    d_prime: Any,
    seeds: np.random.SeedSequence,
    n: int,
    structured: bool,
    use: Callable[[FloatArray, FloatArray], None],
    *,
    until: float = math.inf,
    width: int = 1,
    chunk: int = 0,
) -> int:
    """Draw n runs per input in chunks (fresh streams each; the rows of a chunk are paired runs,
    see :meth:`Sampler.draw_pairs`), hand each pair of chunks to ``use``; stop early, at a chunk
    boundary, once the sampler's CPU clock passes ``until`` (or the wall-clock cap). Returns the runs drawn."""
    done = 0
    while done < n and not sampler.out_of_time(until):
        size = min(chunk or TIGHT_CHUNK, max(1000, TIGHT_STORE // (2 * width)), n - done)
        ra, rb = sampler.draw_pairs(d, d_prime, seeds.spawn(1)[0], size)
        (ra, rb), _, _ = sampler.view(ra, rb, structured=structured)
        use(ra, rb)
        done += size
    return done


def _tight(
    sampler: Sampler,
    d: Any,
    d_prime: Any,
    kept_a: FloatArray,
    kept_b: FloatArray,
    fast: AuditResult,
    *,
    root: np.random.SeedSequence,
    deadline: float,
    wall_started: float,
    cpu_started: float,
    alpha: float,
    delta: float,
    float_test: bool,
    rng: np.random.Generator,
) -> AuditResult:
    """Spend the rest of the time budget on a few events: proposed by a search on a large sample
    (for vectors, also on the sum, count-above-median, max and min of a larger streamed sample),
    ranked on a fresh selection sample, then the best one (the best ``TIGHT_EVENTS`` for vectors)
    certified (Bonferroni over them only) on a final sample. The fast phase's samples are reused for the
    search only; the row layout (with or without shape columns) is frozen once the search starts.
    ``deadline`` is an instant of the sampler's CPU clock; every time below is CPU time."""
    started, wall_begun = sampler.clock(), time.perf_counter()
    seeds = root.spawn(1)[0].spawn(4)
    draw_rate = max(sampler.recent_seconds_per_run, 1e-9)  # seconds per run per input
    search_rate = max(sampler.search_seconds_per_row, TIGHT_SEARCH_ROW_SECONDS)  # search seconds per row of each input
    total = deadline - started
    width = kept_a.shape[1]
    cap = max(10_000, TIGHT_STORE // max(width, 1))
    structured = sampler.encoder.structured
    sampler.deadline = deadline + 0.1 * total  # per-call mechanisms: a little slack; past it, no tight bound is claimed
    try:
        rows = min(cap, int(total * TIGHT_SEARCH_SHARE / (2 * draw_rate + search_rate)))
        full_a, full_b = kept_a[-cap:], kept_b[-cap:]
        fresh = rows - len(full_a)
        pairs: tuple[FloatArray, FloatArray] | None = None
        if not sampler.sized:  # per-call runs are drawn paired: the search sees their marginals, the paired thresholds the pairs
            fresh = max(fresh, min(cap, int(total * TIGHT_PAIRED_SHARE / (2 * draw_rate + search_rate))))
        if fresh >= 1000:
            fa, fb = sampler.draw_pairs(d, d_prime, seeds[0], fresh)
            if not sampler.sized:
                pairs = (fa, fb)
            old = max(0, min(len(full_a), cap - fresh))
            full_a, full_b = full_a[len(full_a) - old :], full_b[len(full_b) - old :]
            w = max(full_a.shape[1], fa.shape[1])
            full_a, full_b = np.vstack([_pad(full_a, w), _pad(fa, w)]), np.vstack([_pad(full_b, w), _pad(fb, w)])
        elif rows < len(full_a):
            full_a, full_b = full_a[-max(rows, 10_000) :], full_b[-max(rows, 10_000) :]
        (sa, sb), names, start = sampler.view(full_a, full_b, structured=structured)
        del full_a, full_b
        planned = int(total * 0.5 / (2 * draw_rate))  # a first guess of the final size, for scoring
        scorer = Scorer(len(sa), planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK)
        candidates, _ = search(
            sa,
            sb,
            scorer,
            float_test=float_test,
            rng=rng,
            names=names,
            start=start,
            feature_rows=len(sa),
            every=True,
            binned_rows=True,
        )
        alignment = sampler.encoder.alignment() if structured else None
        if alignment is not None:  # nested outputs: the families again with each value in one column, parts, conjunctions
            aa, ab = alignment.apply(sa), alignment.apply(sb)
            on_aligned, _ = search(
                aa,
                ab,
                scorer,
                float_test=float_test,
                rng=rng,
                names=alignment.names,
                start=2,
                feature_rows=len(aa),
                every=True,
                binned_rows=True,
            )
            candidates += aligned_candidates(aa, ab, alignment, scorer, on_aligned)
            del aa, ab
        summaries = summary_features(sa, sb, names, start)
        if summaries:  # a vector: its sums, counts, max and min on many more runs (numbers only are kept)
            summaries_share = TIGHT_SUMMARIES_SHARE / (2 if pairs is not None else 1)
            stream_rows = min(TIGHT_STORE // len(summaries), int(total * summaries_share / (2 * draw_rate)))
            kept: list[tuple[FloatArray, FloatArray]] = []
            _stream(
                sampler,
                d,
                d_prime,
                seeds[1],
                stream_rows,
                structured,
                lambda ra, rb: kept.append(
                    (np.column_stack([f(ra) for f in summaries]), np.column_stack([f(rb) for f in summaries]))
                ),
                width=width,
            )
            fa, fb = np.vstack([k[0] for k in kept]), np.vstack([k[1] for k in kept])
            del kept
            wide = Scorer(len(fa), planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK)
            for j, feature in enumerate(summaries):
                found = threshold_candidate(fa[:, j], fb[:, j], wide, feature, "sums and differences")
                if found is not None:
                    candidates.append(found)
            del fa, fb
        if pairs is not None:  # thresholds scored by the paired bound
            (pa, pb), paired_names, paired_start = sampler.view(*pairs, structured=structured)
            del pairs
            candidates += paired_candidates(
                pa, pb, paired_names, paired_start, n_measure=planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK
            )
            if alignment is not None:
                qa, qb = alignment.apply(pa), alignment.apply(pb)
                on_aligned = paired_candidates(
                    qa, qb, alignment.names, 2, n_measure=planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK
                )
                candidates += [replace(c, event=replace(c.event, aligned=alignment)) for c in on_aligned]
                del qa, qb
            del pa, pb
        if not candidates:
            return replace(fast, tight_reason="no event separated the inputs on the search sample")
        # the proposals' counts on the search sample (pooled with the selection's for value sets, below)
        prior = np.array([(c.event.contains(sa).sum(), c.event.contains(sb).sum()) for c in candidates], dtype=np.float64)
        prior_n = len(sa)
        del sa, sb
        left = deadline - sampler.clock()
        select_n = max(1000, int(left * TIGHT_SELECT_SHARE / (2 * draw_rate * 1.5)))
        cells = np.zeros((len(candidates), 3))  # paired runs: E under both, under d only, under d_prime only
        judging = [0.0]  # seconds spent judging the candidates (the rest of the selection is drawing)

        def tally(ra: FloatArray, rb: FloatArray) -> None:
            begun = sampler.clock()
            for i, candidate in enumerate(candidates):
                ia, ib = candidate.event.contains(ra), candidate.event.contains(rb)
                cells[i] += (np.count_nonzero(ia & ib), np.count_nonzero(ia & ~ib), np.count_nonzero(~ia & ib))
            judging[0] += sampler.clock() - begun

        selecting = sampler.clock()
        # the selection only ranks (it certifies nothing), so the clock may end it: its share of the time
        boxed = min(deadline, selecting + 1.2 * TIGHT_SELECT_SHARE * left)
        # chunks of at least a second: drawn where the final sample will be (the workers, when
        # they run), so that the rate measured here is the rate the final sample is planned with
        chunk = max(50_000, int(1.0 / (2 * draw_rate)))
        select_n = _stream(sampler, d, d_prime, seeds[2], select_n, structured, tally, until=boxed, width=width, chunk=chunk)
        if select_n == 0:
            return replace(fast, tight_reason="no time left to choose among the tight proposals within max_seconds")
        drawing = sampler.clock() - selecting - judging[0]  # both inputs, measured now
        events = TIGHT_EVENTS if summaries else 1
        per_run_one = (drawing + judging[0] * min(1.0, events / len(candidates))) / select_n
        share = 0.9 if sampler.sized else PER_CALL_FINAL_SHARE
        final_n = int((deadline - sampler.clock()) * share / max(per_run_one, 1e-9))
        if sampler.sized:  # stopped by the clock at a chunk boundary (see below): plan generously
            final_n *= 4
        if final_n < 1000:
            return replace(fast, tight_reason="no time left for a tight measurement within max_seconds")
        # the selection ranks proposals on fresh counts, shrunk (TIGHT_SELECT_SHRINK) so that a rare
        # proposal that got lucky here does not win: the winner's curse is what costs tightness
        # Value sets (a prefix of few keys) pool their search counts with the selection's: their
        # search chose among few options, so its counts are nearly unbiased, and where runs are
        # expensive the selection alone is too small to rank a rare optimum fairly. Thresholds and
        # windows chose among thousands: they are ranked on the fresh selection counts only.
        selector = Scorer(select_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK)
        pooled = Scorer(select_n + prior_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK)
        forward = np.array([1 if c.direction == 1 else 0 for c in candidates], dtype=bool)
        keyed = np.array([c.family in POOLED_FAMILIES for c in candidates], dtype=bool)

        def oriented(table: FloatArray) -> tuple[FloatArray, FloatArray]:
            return np.where(forward, table[:, 0], table[:, 1]), np.where(forward, table[:, 1], table[:, 0])

        counts = np.column_stack([cells[:, 0] + cells[:, 1], cells[:, 0] + cells[:, 2]])  # hits under d, under d_prime
        unpaired = np.where(keyed, pooled.projected(*oriented(counts + prior)), selector.projected(*oriented(counts)))
        # The runs are paired (common random numbers): each proposal is also scored by the paired
        # bound, and certified by whichever of the two bounds projects higher (chosen here, before
        # the final sample is drawn).
        first_only, second_only = oriented(cells[:, 1:])
        paired, splits = paired_projection(
            cells[:, 0], first_only, second_only, select_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK
        )
        scores = np.maximum(unpaired, paired)
        # Vectors bring proposals of very different kinds whose ranking on the selection sample is
        # noisy: certify the best two together. Other outputs, or a best proposal ranked by its
        # paired counts (whose noise is that of the few discordant pairs): the best one alone.
        ranked = np.argsort(-scores, kind="stable")
        top = int(ranked[0])
        ranked = ranked[: TIGHT_EVENTS if summaries and unpaired[top] >= paired[top] else 1]
        chosen = [candidates[int(i)] for i in ranked]
        by_pairs = paired[ranked] > unpaired[ranked]
        split = splits[ranked]
        hits = np.zeros((len(chosen), 3), dtype=np.int64)  # oriented: hits under the first, under the second, under both

        def measure(ra: FloatArray, rb: FloatArray) -> None:
            for i, candidate in enumerate(chosen):
                ia, ib = candidate.event.contains(ra), candidate.event.contains(rb)
                if candidate.direction != 1:
                    ia, ib = ib, ia
                ha, hb, both = int(np.count_nonzero(ia)), int(np.count_nonzero(ib)), int(np.count_nonzero(ia & ib))
                hits[i] += (ha, hb, both)

        # A vectorised mechanism's time does not depend on the values it draws, so stopping the final
        # sample at the deadline (chunk by chunk) leaves the counts binomial. A per-call mechanism's
        # time may (an SVT that stops early is faster): its final sample has PER_CALL_CHECKPOINTS sizes
        # fixed in advance, the counts are kept at each, and the bound is taken at the last one reached
        # with that checkpoint's share of α (Bonferroni), so that the clock never chooses the counts.
        if sampler.sized:
            weight = 1.0
            final_n = _stream(sampler, d, d_prime, seeds[3], final_n, structured, measure, until=deadline, width=width)
            counted = hits.copy()
        else:
            checkpoints = [int(final_n * f) for f in PER_CALL_CHECKPOINTS]
            sampler.deadline = deadline + 0.05 * total  # past it, the last checkpoint reached is kept
            counted, reached, weight, streams = hits.copy(), 0, 0.0, seeds[3].spawn(len(checkpoints))
            try:
                for size, share, stream in zip(checkpoints, PER_CALL_CHECKPOINT_ALPHA, streams, strict=True):
                    _stream(sampler, d, d_prime, stream, size - reached, structured, measure, width=width)
                    reached, counted, weight = size, hits.copy(), share
            except _OutOfTime:
                pass
            final_n = reached
    except _OutOfTime:
        why = "the wall-clock cap stopped" if sampler.wall_stopped else "the mechanism ran out of time during"
        return replace(
            fast,
            tight_reason=f"{why} the tight search; no tight bound is claimed",
            cpu_seconds=sampler.clock() - cpu_started,
            wall_clock_stopped=sampler.wall_stopped,
        )
    if final_n == 0:
        return replace(
            fast,
            tight_reason="no time left for a tight measurement within max_seconds"
            + (" (stopped by the wall-clock cap)" if sampler.wall_stopped else ""),
            cpu_seconds=sampler.clock() - cpu_started,
            wall_clock_stopped=sampler.wall_stopped,
        )
    hits = counted
    # Bonferroni over the few events certified together and the checkpoints (both fixed before measuring).
    share = alpha * weight / len(chosen)
    both = hits[:, 2]
    lowers = np.where(
        by_pairs,
        paired_epsilon_lower_bound(both, hits[:, 0] - both, hits[:, 1] - both, final_n, delta=delta, alpha=share, split=split),
        epsilon_lower_bound(hits[:, 0], hits[:, 1], final_n, delta=delta, alpha=share),
    )
    best = int(np.argmax(lowers))
    tight = replace(
        fast,
        tight_epsilon_lower_bound=max(0.0, float(lowers[best])),
        tight_event=chosen[best].event.description,
        tight_family=chosen[best].family,
        tight_samples=final_n,
        tight_seconds=time.perf_counter() - wall_begun,
        tight_hits=(int(hits[best, 0]), int(hits[best, 1])),
        tight_paired=bool(by_pairs[best]),
        tight_cells=(int(both[best]), int(hits[best, 0] - both[best]), int(hits[best, 1] - both[best])),
        tight_reason=(
            "the final sample was cut short by the wall-clock cap (the CPU budget was not spent); "
            "the bound holds on the runs drawn"
            if sampler.wall_stopped
            else ""
        ),
        seconds=time.perf_counter() - wall_started,
        cpu_seconds=sampler.clock() - cpu_started,
        wall_clock_stopped=sampler.wall_stopped,
    )
    return agree_with_bounds(tight)


def agree_with_bounds(result: AuditResult) -> AuditResult:
    """The verdict that the bounds beside it imply: any certified bound above the claimed ε (fast or
    tight; they hold together at ``confidence``) is a violation, and "ok" is never shown beside one.

    :param result: an audit's result; returned unchanged unless its best bound exceeds its
        claimed ε without a "violated" verdict, then a copy marked violated with the reason.
    """
    bound = result.best_epsilon_lower_bound
    if bound <= result.claimed_epsilon or result.verdict == "violated":
        return result
    source = "tight" if (result.tight_epsilon_lower_bound or 0.0) >= result.epsilon_lower_bound else "fast"
    reason = (
        f"the {source} measurement certifies ε_lb = {bound:.4g} > claimed ε = {result.claimed_epsilon:g} "
        f"(event {result.tight_event if source == 'tight' else result.event}): more than e^ε allows"
    )
    return replace(result, verdict="violated", violated=True, reason=reason)


def audit_laplace(mechanism: Laplace, **options: Any) -> AuditResult:
    """Audit the project's own :meth:`Laplace.release` on the values 0 and Δ at its claimed ε.

    :param mechanism: the Laplace mechanism to audit: its sensitivity Δ moves the first
        coordinate, its ε is the claim (unless ``options`` sets ``epsilon``); the other
        ``options`` are passed to ``audit``.
    """
    first = np.zeros(mechanism.dimension)
    second = first.copy()
    second[0] = mechanism.sensitivity
    if mechanism.dimension == 1:
        first, second = first[0], second[0]

    def run(value: Any, rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(value, size=size, seed=rng).value

    options.setdefault("epsilon", mechanism.epsilon)
    return audit(run, first, second, **options)
