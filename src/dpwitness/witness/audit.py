"""The black-box auditor: a one-sided, confidence-bounded lower bound on a mechanism's ε.

Method (StatDP / DP-Sniper style, with held-apart samples):

1. run ``mechanism(d, rng)`` and ``mechanism(d', rng)`` n times each (one vectorised call
   ``mechanism(data, rng, size=n)`` when the callable accepts ``size``);
2. on a *search* part of the samples, pick in each event family (see
   :mod:`dpwitness.witness.events`) the event and direction whose projected lower bound is
   largest;
3. count how often the chosen events occur on *fresh* samples and turn the counts into
   ε_lb = ln(p₁_lower − δ) − ln(p₂_upper) with Clopper–Pearson bounds, Bonferroni-corrected
   over the events measured and the rounds run, so that P(ε_lb > true ε) ≤ 1 − confidence.

Without ``samples`` the audit is adaptive: rounds of 4× more samples until a violation is
certain, the evidence is tight enough to call "ok", or the time or sample cap is reached.

Verdicts: "violated" (ε_lb > claimed ε at the stated confidence: a proof of a bug, up to the
confidence level), "ok" (no violation, and the most revealing event found is measured
precisely enough that its loss is at most ε·(1 + tolerance): evidence, never a proof) and
"inconclusive" (anything else, said honestly). The default audit judges outputs as real
numbers; ``float_test=True`` adds bit-pattern events that expose porous floating-point
supports (Mironov 2012).
"""

from __future__ import annotations

import inspect
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.errors import ParameterError, check_finite, check_positive_finite
from dpwitness.witness.events import Candidate, Scorer, search
from dpwitness.witness.stats import epsilon_estimate, epsilon_lower_bound, epsilon_upper_bound

if TYPE_CHECKING:
    from dpwitness.mechanisms import Laplace

FloatArray = npt.NDArray[np.float64]
Mechanism = Callable[..., Any]

#: First adaptive round (runs per input) and growth factor between rounds.
FIRST_ROUND = 20_000
GROWTH = 4
#: Default cap on runs per input (10⁷ runs in all) and on wall-clock time.
MAX_SAMPLES = 5_000_000
MAX_SECONDS = 60.0
#: How many of the best candidate events are measured on fresh samples (Bonferroni over them).
MEASURED_EVENTS = 3
#: Search samples kept from earlier rounds.
SEARCH_CAP = 1_000_000


class MechanismError(RuntimeError):
    """The audited callable misbehaved (raised, returned NaN, changed its output type…)."""


@dataclass(frozen=True)
class AuditResult:
    """What the auditor found. ``epsilon_lower_bound`` holds with probability ≥ ``confidence``."""

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

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["hits"] = list(self.hits)
        payload["pairs_tried"] = list(self.pairs_tried)
        for key in ("epsilon_estimate", "event_upper_bound"):
            payload[key] = json_number(payload[key])
        return payload

    def __str__(self) -> str:
        mark = {"ok": "✔", "violated": "✘", "inconclusive": "?"}[self.verdict]
        head = f"{mark} {self.verdict.upper()}: ε_lb = {self.epsilon_lower_bound:.4g} vs claimed ε = {self.claimed_epsilon:g}"
        if self.delta:
            head += f", δ = {self.delta:g}"
        tail = f" at {self.confidence:.0%} confidence from {self.samples:,} runs per input in {self.seconds:.2f} s"
        event = f"; event {self.event} ({self.direction})" if self.event else ""
        pair = f"; worst pair {self.pair}" if self.pair else ""
        reason = f". {self.reason}" if self.reason else ""
        return head + tail + event + pair + reason


def json_number(value: float) -> float | str | None:
    """A float for JSON: ±∞ as the strings "inf"/"-inf", NaN as None."""
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


# --- sampling --------------------------------------------------------------------------------


class _OutOfTime(Exception):
    """A per-call mechanism ran past the audit's deadline in the middle of a round."""


def accepts_size(mechanism: Mechanism) -> bool:
    """True when ``mechanism`` takes a ``size`` keyword (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(mechanism).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "size" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _flatten(output: Any) -> tuple[list[float], tuple[Any, ...]]:
    """One output as a flat row of floats, and its structure (kind and length of each part)."""
    parts = output if isinstance(output, (tuple, list)) else (output,)
    row: list[float] = []
    structure: list[tuple[str, int]] = []
    for part in parts:
        if isinstance(part, (bool, np.bool_)):
            row.append(float(part))
            structure.append(("bool", 1))
        elif isinstance(part, (int, float, np.integer, np.floating)):
            row.append(float(part))
            structure.append(("number", 1))
        else:
            array = np.asarray(part)
            if array.dtype.kind not in "biuf":
                raise MechanismError(
                    f"the mechanism returned {type(part).__name__} {part!r}; "
                    "expected numbers, booleans, vectors or tuples of them"
                )
            row.extend(array.astype(np.float64).ravel().tolist())
            structure.append(("vector", array.size))
    return row, tuple(structure)


class Sampler:
    """Runs the mechanism n times on one input and returns an (n, k) float array."""

    def __init__(self, mechanism: Mechanism, deadline: float) -> None:
        if not callable(mechanism):
            raise ParameterError("mechanism", "a callable mechanism(data, rng) or mechanism(data, rng, size=n)", mechanism)
        self.mechanism = mechanism
        self.sized = accepts_size(mechanism)
        self.deadline = deadline
        self.columns: int | None = None
        self.structure: tuple[Any, ...] | None = None
        self.seconds_per_run = 0.0

    def draw(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        start = time.perf_counter()
        rows = self._sized(data, rng, n, label) if self.sized else self._per_call(data, rng, n, label)
        self.seconds_per_run = max(self.seconds_per_run, (time.perf_counter() - start) / n)
        return self._checked(rows, label)

    def _call(self, data: Any, rng: np.random.Generator, label: str, **size: int) -> Any:
        try:
            return self.mechanism(data, rng, **size)
        except Exception as error:  # the user's code: report any failure clearly
            raise MechanismError(f"the mechanism raised {type(error).__name__} on {label}: {error}") from error

    def _sized(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        output = self._call(data, rng, label, size=n)
        parts = output if isinstance(output, (tuple, list)) else (output,)
        columns = []
        for part in parts:
            array = np.asarray(part)
            if array.dtype.kind not in "biuf":
                raise MechanismError(
                    f"mechanism(…, size={n}) returned {array.dtype} values on {label}; expected numbers or booleans"
                )
            if array.ndim == 0 or array.shape[0] != n:
                raise MechanismError(
                    f"mechanism(…, size={n}) must stack {n} outputs along the first axis; got shape {array.shape} on {label}"
                )
            columns.append(array.reshape(n, -1).astype(np.float64))
        return np.hstack(columns) if len(columns) > 1 else columns[0]

    def _per_call(self, data: Any, rng: np.random.Generator, n: int, label: str) -> FloatArray:
        rows: list[list[float]] = []
        for i in range(n):
            row, structure = _flatten(self._call(data, rng, label))
            if self.structure is None:
                self.structure = structure
            elif structure != self.structure:
                raise MechanismError(f"the mechanism's output changed type on {label}: {self.structure} then {structure}")
            rows.append(row)
            if i % 64 == 63 and time.perf_counter() > self.deadline:
                raise _OutOfTime
        return np.array(rows, dtype=np.float64).reshape(n, -1)

    def _checked(self, rows: FloatArray, label: str) -> FloatArray:
        if rows.ndim != 2 or rows.shape[1] == 0:
            raise MechanismError(f"the mechanism returned no values on {label}")
        if self.columns is None:
            self.columns = rows.shape[1]
        elif rows.shape[1] != self.columns:
            raise MechanismError(f"the mechanism's output changed shape on {label}: {self.columns} values then {rows.shape[1]}")
        if not np.all(np.isfinite(rows)):
            raise MechanismError(f"the mechanism returned NaN or ∞ on {label}; outputs must be finite numbers")
        return rows + 0.0


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
) -> AuditResult:
    """Audit ``mechanism`` on the neighbouring inputs ``d`` and ``d_prime`` against a claimed (ε, δ).

    ``mechanism(data, rng)`` returns a number, bool, vector or tuple of those; when it accepts
    ``size`` it is called as ``mechanism(data, rng, size=n)`` and must stack n outputs on
    the first axis. ``samples`` is the number of runs per input (adaptive when None).
    With ``d_prime=None`` the auditor searches neighbours of ``d`` (see
    :func:`dpwitness.witness.neighbour_search.audit_neighbours`; ``relation`` and
    ``sensitivity`` describe how neighbours differ) and reports the worst pair.
    """
    eps, dlt, conf = _validate(epsilon, delta, samples, confidence)
    max_seconds = check_positive_finite("max_seconds", max_seconds)
    tolerance = check_positive_finite("tolerance", tolerance)
    if d_prime is None:
        from dpwitness.witness.neighbour_search import audit_neighbours

        return audit_neighbours(
            mechanism,
            d,
            epsilon=eps,
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
        )
    if not 0.0 < search_fraction < 1.0:
        raise ParameterError("search_fraction", "a number strictly between 0 and 1", search_fraction)
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 10:
        raise ParameterError("max_samples", "a whole number ≥ 10", max_samples)
    started = time.perf_counter()
    sampler = Sampler(mechanism, deadline=started + max_seconds)
    sizes = _schedule(samples, max_samples)
    rounds = len(sizes)
    streams = np.random.SeedSequence(seed).spawn(2 * rounds + 1)
    search_rng = np.random.default_rng(streams[-1])
    alpha_round = (1.0 - conf) / (rounds * MEASURED_EVENTS)  # for projecting search scores
    best: _Measured | None = None
    last: _Measured | None = None
    drawn, reason, ran, constant = 0, "", 0, False
    pool_a: FloatArray | None = None
    pool_b: FloatArray | None = None
    show = progress if progress is not None else (sys.stderr.isatty() and (samples or max_samples) >= 1_000_000)
    bar = _progress_bar(show, total=2 * sum(sizes))
    try:
        for r, n in enumerate(sizes):
            remaining = started + max_seconds - time.perf_counter()
            if r > 0 and sampler.seconds_per_run * 2 * n > remaining:
                reason = f"stopped before a round of {n:,} runs per input: the time budget ({max_seconds:g} s) would be exceeded"
                break
            try:
                xa = sampler.draw(d, np.random.default_rng(streams[2 * r]), n, "d")
                bar(n)
                xb = sampler.draw(d_prime, np.random.default_rng(streams[2 * r + 1]), n, "d_prime")
                bar(n)
            except _OutOfTime:
                reason = (
                    f"the mechanism is too slow: about {1 / max(sampler.seconds_per_run, 1e-12):,.0f} runs/s; "
                    f"no round of {n:,} runs per input finished within max_seconds = {max_seconds:g}"
                )
                break
            drawn += n
            ran += 1
            split = min(n - 5, max(5, int(n * search_fraction)))
            sa, sb = xa[:split], xb[:split]
            if pool_a is not None and pool_b is not None:
                sa, sb = np.vstack([pool_a, sa])[-SEARCH_CAP:], np.vstack([pool_b, sb])[-SEARCH_CAP:]
            ma, mb = xa[split:], xb[split:]
            scorer = Scorer(len(sa), len(ma), delta=dlt, alpha=alpha_round)
            candidates = search(sa, sb, scorer, float_test=float_test, rng=search_rng)[:MEASURED_EVENTS]
            if r < rounds - 1:  # this round's samples help the next round's search
                pool_a, pool_b = np.vstack([sa, ma[-SEARCH_CAP:]])[-SEARCH_CAP:], np.vstack([sb, mb[-SEARCH_CAP:]])[-SEARCH_CAP:]
            if not candidates:
                last = None
                reason = "the outputs take a single value, the same on both inputs: no event separates them"
                constant = True
                break
            # Bonferroni over the events actually measured (their number is fixed before measuring).
            alpha_events = (1.0 - conf) / (rounds * len(candidates))
            measured = _measure(candidates, ma, mb, delta=dlt, alpha=alpha_events)
            last = max(measured, key=lambda m: m.lower)
            if best is None or last.lower > best.lower:
                best = last
            if best.lower > eps or _precise(last, eps, tolerance):
                break
    finally:
        bar(None)
    seconds = time.perf_counter() - started
    return _result(
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
    )


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
) -> AuditResult:
    model = "floating point: exact output values and bit patterns judged" if float_test else AuditResult.model
    if best is None:
        verdict = "ok" if constant else "inconclusive"
        if drawn == 0 and not reason:
            reason = "no samples were drawn"
        return AuditResult(0.0, eps, delta, False, verdict, None, drawn, conf, seconds, rounds=ran, model=model, reason=reason)
    lower = max(0.0, best.lower)
    violated = best.lower > eps
    if violated:
        verdict = "violated"
        reason = reason or f"the event below is at least e^{lower:.4g} times likelier under one input: more than e^ε allows"
    elif last is not None and _precise(last, eps, tolerance):
        verdict = "ok"
        reason = (
            f"no violation found: the most revealing event found has loss between {max(0.0, last.lower):.4g} and "
            f"{last.upper:.4g} ≤ ε·(1 + {tolerance:g}) at this confidence (evidence, not a proof)"
        )
    else:
        verdict = "inconclusive"
        if last is None or last.lower <= 0:
            detail = "no event separated the two inputs with confidence, so nothing can be said about ε from these samples"
        else:
            detail = (
                f"the best event's loss is only known to lie in [{last.lower:.4g}, {last.upper:.4g}], "
                f"wider than tolerance·ε = {tolerance * eps:.3g}: more samples are needed to conclude"
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
    )


def _progress_bar(show: bool, *, total: int) -> Callable[[int | None], None]:
    """A rich progress bar on stderr (a no-op unless shown); call with None to close it."""
    if not show:
        return lambda _: None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("auditing"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} runs"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("audit", total=total)
    bar.start()

    def advance(n: int | None) -> None:
        if n is None:
            bar.stop()
        else:
            bar.advance(task, n)

    return advance


def audit_laplace(mechanism: Laplace, **options: Any) -> AuditResult:
    """Audit the project's own :meth:`Laplace.release` on the values 0 and Δ at its claimed ε."""
    first = np.zeros(mechanism.dimension)
    second = first.copy()
    second[0] = mechanism.sensitivity
    if mechanism.dimension == 1:
        first, second = first[0], second[0]

    def run(value: Any, rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(value, size=size, seed=rng).value

    options.setdefault("epsilon", mechanism.epsilon)
    return audit(run, first, second, **options)
