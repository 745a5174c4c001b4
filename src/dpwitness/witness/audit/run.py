"""The audit itself: validate, draw rounds of runs, search and measure events, decide; then the tight mode."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dpwitness.common.errors import ParameterError, require
from dpwitness.common.progress import progress as progress_display
from dpwitness.common.validation import check_count, check_finite, check_positive_finite
from dpwitness.witness.audit.decide import Measured, family_power, fast_verdict, float_blind, measure_events, powerful, precise
from dpwitness.witness.audit.encode import FloatArray, pad
from dpwitness.witness.audit.result import AuditResult, MechanismError
from dpwitness.witness.audit.sample import Mechanism, OutOfTime, Sampler
from dpwitness.witness.audit.tight import tighten
from dpwitness.witness.events import Scorer, aligned_candidates, search

if TYPE_CHECKING:
    from dpwitness.mechanisms.additive import Laplace

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
#: Share of α the tight mode's certification gets (the fast verdict gets the rest): the tight
#: bound is the one meant to be sharp, and a bound above ε is a violation whichever phase found it.
TIGHT_ALPHA_SHARE = 0.9
#: Share of ``max_seconds`` (CPU) the fast verdict may use in tight mode (its samples feed the tight search).
TIGHT_FAST_SHARE = 0.25


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
    if samples is not None:
        expected = "a whole number ≥ 10 (runs per input) or None to let the auditor choose"
        check_count("samples", samples, minimum=10, expected=expected)
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
    tight_samples: int | None = None,
    replay: Mechanism | None = None,
) -> AuditResult:
    """Audit ``mechanism`` on the neighbouring inputs ``d`` and ``d_prime`` against a claimed (ε, δ).

    ``mechanism(data, rng)`` returns one output of any shape: a number, bool, string, None,
    array, or a (nested) tuple/list/dict of those, of a length that may vary from run to run.
    When it accepts ``size`` it is called as ``mechanism(data, rng, size=n)`` and returns n
    outputs, stacked on the first axis of numeric arrays (or a tuple of such arrays), or as a
    list of n outputs of any shape. ``samples`` is the number of runs per input (adaptive when
    None). ``tight=True`` keeps sampling after the fast verdict, until ``max_seconds`` of CPU time
    from the start, to maximise the certified ε_lb (``tight_epsilon_lower_bound``); with
    ``tight_samples`` its sizes are fixed in runs instead, and the same seed gives the same result
    at any load.
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
    :param tight_samples: with ``tight=True``, the runs per input of the tight mode's final sample,
        a whole number ≥ 1000; its search and selection samples are fixed fractions of it
        (:data:`~dpwitness.witness.audit.tight.SAMPLED_SHARES`). No clock then decides any size,
        the fast phase's included (its rounds are those of ``samples`` or ``max_samples``):
        ``max_seconds`` only stops runaway work, and an audit it stops claims no tight bound.
        Default None: the tight mode plans its samples within ``max_seconds`` of CPU time.
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
            tight_samples=tight_samples,
            replay=replay,
        )
    if not 0.0 < search_fraction < 1.0:
        raise ParameterError("search_fraction", "a number strictly between 0 and 1", search_fraction)
    check_count("max_samples", max_samples, minimum=10)
    if tight_samples is not None:
        check_count("tight_samples", tight_samples, minimum=1000, expected="a whole number ≥ 1000 (runs per input) or None")
    wall_started, started = time.perf_counter(), time.process_time()
    if replay is not None:
        if not callable(replay):
            raise ParameterError("replay", "a noise-only sampler replay(frozen, rng) or replay(frozen, rng, size=n)", replay)
        if not callable(mechanism):
            raise ParameterError("mechanism", "with replay: a callable mechanism(data) returning the pre-noise state", mechanism)
        d, d_prime = _freeze(mechanism, d, "d"), _freeze(mechanism, d_prime, "d_prime")
        mechanism = replay
    deadline = started + max_seconds  # CPU seconds (the sampler's clock)
    # tight mode: the rest for the tight bound; in runs (tight_samples), the CPU budget is a guard for both phases
    fast_deadline = started + max_seconds * (TIGHT_FAST_SHARE if tight and tight_samples is None else 1.0)
    wall_cap = wall_started + WALL_CAP_FACTOR * max_seconds + WALL_CAP_SECONDS
    sampler = Sampler(mechanism, deadline=fast_deadline, wall_deadline=wall_cap)
    sizes = _schedule(samples, max_samples)
    rounds = len(sizes)
    root = np.random.SeedSequence(seed)
    streams = root.spawn(2 * rounds + 1)
    search_rng = np.random.default_rng(streams[-1])
    alpha = (1.0 - conf) * (1.0 - TIGHT_ALPHA_SHARE) if tight else 1.0 - conf  # the tight phase gets the rest
    best: Measured | None = None
    last: Measured | None = None
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
            predicted = (sampler.seconds_per_run * 2 + sampler.search_seconds_per_row) * n
            if r > 0 and tight_samples is None and predicted > remaining:  # in runs, the schedule alone decides
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
            except OutOfTime:
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
                full_sa = np.vstack([pad(pool_a, width), pad(full_sa, width)])[-SEARCH_CAP:]
                full_sb = np.vstack([pad(pool_b, width), pad(full_sb, width)])[-SEARCH_CAP:]
            (sa, sb, ma, mb), names, start = sampler.view(full_sa, full_sb, xa[split:], xb[split:])
            width = max(full_sa.shape[1], xa.shape[1])
            last_a = np.vstack([pad(full_sa, width), pad(xa[split:], width)])
            last_b = np.vstack([pad(full_sb, width), pad(xb[split:], width)])
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
            measured = measure_events(candidates, ma, mb, delta=dlt, alpha=alpha_events)
            power = family_power(families, Scorer(len(sa), len(ma), delta=dlt, alpha=alpha_events), eps, tolerance)
            if float_test and float_blind(start, sa, sb, ma, mb):
                power = tuple((f, math.inf if f == "bit pattern" else p) for f, p in power)
            last = max(measured, key=lambda m: m.lower)
            if best is None or last.lower > best.lower:
                best = last
            if best.lower > eps or (precise(last, eps, tolerance) and powerful(power)):
                break
    seconds = time.perf_counter() - wall_started
    result = fast_verdict(
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
    return tighten(
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
        final_samples=tight_samples,
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
