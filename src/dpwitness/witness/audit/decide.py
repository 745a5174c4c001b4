"""From counts to a verdict: the events' confidence bounds, the power statement, and the verdict they imply."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dpwitness.witness.audit.encode import FloatArray
from dpwitness.witness.audit.result import AuditResult
from dpwitness.witness.events import Candidate, Scorer, precision_bits, resolution
from dpwitness.witness.stats import epsilon_estimate, epsilon_lower_bound, epsilon_upper_bound

#: The float test has power only on outputs that lie on a grid 2^k·ℤ at least this many bits
#: coarser than the doubles' spacing at the largest output (:func:`precision_bits` ≤ 53 − this):
#: there every grid value is exact and the value families see the whole support. Outputs that use
#: the full precision can have a porous support the bit-pattern events do not see.
FLOAT_MARGIN_BITS = 8


@dataclass
class Measured:
    """One event measured on fresh samples: its ε bounds (lower, estimate, upper), its hits under the
    likelier and the other input, the runs per input and the number of events measured together."""

    candidate: Candidate
    lower: float
    estimate: float
    upper: float
    hits: tuple[int, int]
    runs: int
    events: int


def measure_events(
    candidates: Sequence[Candidate], ma: FloatArray, mb: FloatArray, *, delta: float, alpha: float
) -> list[Measured]:
    """Each candidate's hits on the measurement rows and its ε bounds, each bound at level ``alpha``.

    :param candidates: the events to measure (each with the direction of its ratio).
    :param ma: the measurement rows of ``d``; ``mb`` those of ``d_prime`` (as many).
    :param delta: the claimed δ, subtracted from the likelier probability.
    :param alpha: the error probability of each bound (the caller's Bonferroni share).
    """
    out = []
    n = len(ma)
    for candidate in candidates:
        ha, hb = int(candidate.event.contains(ma).sum()), int(candidate.event.contains(mb).sum())
        h1, h2 = (ha, hb) if candidate.direction == 1 else (hb, ha)
        out.append(
            Measured(
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


def precise(measured: Measured, eps: float, tolerance: float) -> bool:
    """A real separating event (ε_lb > 0) whose loss is pinned within tolerance·ε.

    :param measured: the event's bounds; ``eps`` the claimed ε; ``tolerance`` the relative slack.
    """
    return measured.lower > 0 and measured.upper - measured.lower <= tolerance * eps


def family_power(families: Sequence[str], scorer: Scorer, eps: float, tolerance: float) -> tuple[tuple[str, float], ...]:
    """For each family: the smallest event probability at which a loss of ε(1 + tolerance) would be certified.

    :param families: the event families searched; ``scorer`` holds the sample sizes and α of the
        measurement; ``eps`` is the claimed ε and ``tolerance`` the relative slack.
    """
    detectable = scorer.smallest_detectable(eps * (1 + tolerance), eps)
    return tuple((family, max(detectable, resolution(family, scorer.n_search))) for family in families)


def powerful(power: Sequence[tuple[str, float]]) -> bool:
    """True when every family searched has power (see :func:`family_power`): ``power`` lists
    (family, smallest detectable probability) pairs."""
    return bool(power) and all(p <= 1.0 for _, p in power)


def float_blind(start: int, *arrays: FloatArray) -> bool:
    """True when the outputs use the doubles' full precision: the float test cannot see their support.

    :param start: the first value column of the rows in ``arrays`` (2 when shape columns lead).
    """
    bits = max(precision_bits(np.asarray(a[:, start:], dtype=np.float64).ravel()) for a in arrays)
    return bits > 53 - FLOAT_MARGIN_BITS


def fast_verdict(
    best: Measured | None,
    last: Measured | None,
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
    """The fast phase's result: "violated" when the ``best`` event's bound exceeds ``eps``, "ok" when the
    ``last`` round's best event is ``precise`` and every family has ``power``, else "inconclusive"
    with the reason.

    :param best: the event with the highest lower bound over all rounds (None: none measured);
        ``last`` the best of the last round.
    :param eps: the claimed ε; ``delta`` the claimed δ; ``conf`` the confidence; ``tolerance`` the slack.
    :param drawn: runs per input drawn; ``ran`` rounds run; ``seconds`` the wall time.
    :param reason: why the rounds stopped early ("" when they did not).
    :param float_test: the bit-pattern families were searched; ``constant``: the outputs took a
        single value; ``power`` the last round's power statement.
    """
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
    elif last is not None and precise(last, eps, tolerance) and powerful(power):
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
        elif not precise(last, eps, tolerance):
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
