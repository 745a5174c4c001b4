"""Classic calibration mistakes, built on purpose so that the blue team can catch them.

Each mistake is a real mechanism (the project's own :class:`~dpwitness.Laplace` where it
applies) with a neighbouring pair on which it breaks its claim. :func:`tamper_attack` runs
each through the analytic witness (where the mistake is visible to it) and through the
black-box auditor, which must flag every one:

* ``invert``: scale ε/Δ instead of Δ/ε (real loss Δ²/ε);
* ``not-divided-by-n``: a mean's noise (Δ = (U − L)/n) added to the sum, which was never
  divided by n (real loss n·ε for a worst-case record);
* ``add-remove``: a histogram's add/remove Δ = 1 used under replace-one, where Δ = 2;
* ``unclipped``: a sum calibrated to bounds [L, U] whose values were never clamped;
* ``fixed-seed``: the noise comes from a constant seed, so the output is a function of the input;
* ``gaussian``: Gaussian noise of the Laplace scale claimed as pure ε-DP (unbounded log ratio).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.mechanisms import Laplace
from dpwitness.noise import GridLaplace
from dpwitness.witness.audit import json_number

if TYPE_CHECKING:
    from dpwitness.witness.audit import AuditResult
    from dpwitness.witness.catalogue import Case

FloatArray = npt.NDArray[np.float64]


def inverted_laplace(*, sensitivity: float, epsilon: float, dimension: int = 1) -> Laplace:
    """Claims ε but samples scale ε/Δ instead of Δ/ε: its real loss is Δ/(ε/Δ) = Δ²/ε."""
    return Laplace(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dimension=dimension,
        noise=GridLaplace.calibrate(sensitivity=epsilon, epsilon=sensitivity, dimension=dimension),
    )


def add_remove_laplace(*, sensitivity: float, epsilon: float, dimension: int = 1) -> Laplace:
    """Claims Δ (replace-one) but calibrates the noise to Δ/2 (the add/remove Δ of a count or histogram)."""
    return Laplace(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dimension=dimension,
        noise=GridLaplace.calibrate(sensitivity=sensitivity / 2, epsilon=epsilon, dimension=dimension),
    )


TAMPERS: dict[str, Callable[..., Laplace]] = {"invert": inverted_laplace, "add-remove": add_remove_laplace}


def releases(mechanism: Laplace) -> Callable[..., Any]:
    """``(value, rng, size)`` → the values of n releases by ``mechanism`` (the auditor's calling convention)."""

    def run(value: Any, rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(value, size=size, seed=rng).value

    return run


# --- the mistakes, as auditable cases --------------------------------------------------------

AGES = [23.0, 35.0, 41.0, 52.0, 19.0, 64.0, 38.0, 29.0, 47.0, 33.0, 58.0, 26.0, 44.0, 31.0, 70.0, 22.0, 39.0, 50.0, 36.0, 30.0]
BOUNDS = (0.0, 100.0)


def _not_divided_by_n(epsilon: float) -> Laplace:
    n = len(AGES)
    return Laplace(sensitivity=(BOUNDS[1] - BOUNDS[0]) / n, epsilon=epsilon)


def _sum_forgot_n(mechanism: Laplace) -> Callable[..., Any]:
    def run(ages: list[float], rng: np.random.Generator, size: int) -> Any:
        total = float(np.clip(ages, *BOUNDS).sum())  # BUG: the mean is never divided by n
        return mechanism.release(total, size=size, seed=rng).value

    return run


def _unclipped_sum(mechanism: Laplace) -> Callable[..., Any]:
    def run(values: list[float], rng: np.random.Generator, size: int) -> Any:
        return mechanism.release(float(np.sum(values)), size=size, seed=rng).value  # BUG: never clamped to BOUNDS

    return run


def _fixed_seed(mechanism: Laplace, seed: int = 42) -> Callable[..., Any]:
    def run(value: float, rng: np.random.Generator, size: int) -> Any:
        # BUG: every call draws the same noise, so each release is a fixed function of the input.
        return np.full(size, float(mechanism.release(value, seed=seed)))

    return run


def _gaussian(epsilon: float) -> Callable[..., Any]:
    def run(value: float, rng: np.random.Generator, size: int) -> Any:
        return value + rng.normal(0.0, 1.0 / epsilon, size)  # BUG: Gaussian tails, claimed pure ε-DP

    return run


@dataclass(frozen=True)
class Mistake:
    name: str
    description: str
    case: Callable[[float], Case]
    #: What the analytic witness sees: (applies, verdict text, loss it computes).
    witness: Callable[[float], tuple[bool, str, float]]


def _witness_of(mechanism: Laplace) -> tuple[bool, str, float]:
    from dpwitness.witness.analytic import witness

    report = witness(mechanism)
    return True, report.verdict, report.worst_log_ratio


def _case(name: str, mechanism: Callable[..., Any], d: Any, d_prime: Any, epsilon: float, loss: float, note: str) -> Case:
    from dpwitness.witness.catalogue import Case

    return Case(f"tamper: {name}", mechanism, d, d_prime, epsilon, False, loss, note)


def _privacy_map_at(mechanism: Laplace, shift: float) -> tuple[bool, str, float]:
    """The analytic privacy map evaluated at the shift the data really causes."""
    loss = mechanism.privacy_loss(shift)
    mark = "✘ VIOLATED" if loss > mechanism.epsilon else "✔"
    return True, f"{mark}: privacy map at the real shift {shift:g}: loss {loss:.4g} vs ε = {mechanism.epsilon:g}", loss


def _replaced_ages() -> list[float]:
    return [*AGES[:-1], 100.0]


MISTAKES: dict[str, Mistake] = {
    m.name: m
    for m in [
        Mistake(
            "invert",
            "Laplace scale ε/Δ instead of Δ/ε",
            lambda e: _case(
                "invert", releases(inverted_laplace(sensitivity=1.0, epsilon=e)), 0.0, 1.0, e, 1.0 / e, "real loss Δ²/ε"
            ),
            lambda e: _witness_of(inverted_laplace(sensitivity=1.0, epsilon=e)),
        ),
        Mistake(
            "not-divided-by-n",
            f"mean of n = {len(AGES)} ages in [0, 100]: noise for Δ = (U − L)/n added to the sum, never divided by n",
            lambda e: _case(
                "not-divided-by-n",
                _sum_forgot_n(_not_divided_by_n(e)),
                AGES,
                _replaced_ages(),
                e,
                (100.0 - AGES[-1]) / _not_divided_by_n(e).scale,
                "released value moves by up to U − L, not (U − L)/n",
            ),
            # The sum's true Δ is U − L; the noise was calibrated to (U − L)/n.
            lambda e: _witness_of(Laplace(sensitivity=100.0, epsilon=e, noise=_not_divided_by_n(e).noise)),
        ),
        Mistake(
            "add-remove",
            "histogram under replace-one (Δ = 2) released with the add/remove Δ = 1",
            lambda e: _case(
                "add-remove",
                releases(Laplace(sensitivity=1.0, epsilon=e, dimension=4)),
                [3.0, 5.0, 2.0, 7.0],
                [3.0, 4.0, 3.0, 7.0],
                e,
                2.0 * e,
                "two bins move by 1 each: loss 2ε",
            ),
            lambda e: _witness_of(add_remove_laplace(sensitivity=2.0, epsilon=e, dimension=4)),
        ),
        Mistake(
            "unclipped",
            "sum calibrated to values in [0, 100] whose values are never clamped (one record is 400)",
            lambda e: _case(
                "unclipped",
                _unclipped_sum(Laplace(sensitivity=100.0, epsilon=e)),
                [20.0, 30.0, 40.0],
                [20.0, 30.0, 400.0],
                e,
                360.0 * e / 100.0,
                "the record moves the sum by 360 > Δ = 100",
            ),
            lambda e: _privacy_map_at(Laplace(sensitivity=100.0, epsilon=e), 360.0),
        ),
        Mistake(
            "fixed-seed",
            "every release draws its noise from the same seed (42)",
            lambda e: _case(
                "fixed-seed",
                _fixed_seed(Laplace(sensitivity=1.0, epsilon=e)),
                0.0,
                1.0,
                e,
                math.inf,
                "the output is a deterministic function of the input",
            ),
            lambda e: (
                False,
                "n/a: the noise distribution is right; it is the randomness that is missing, which only sampling shows",
                math.nan,
            ),
        ),
        Mistake(
            "gaussian",
            "Gaussian noise N(0, (Δ/ε)²) claimed as pure ε-DP",
            lambda e: _case(
                "gaussian", _gaussian(e), 0.0, 1.0, e, math.inf, "log density ratio (2z − 1)ε²/2 grows without bound"
            ),
            lambda e: (True, "✘ VIOLATED: Gaussian tails make the log density ratio unbounded; no pure ε holds", math.inf),
        ),
    ]
}


def mistake_cases(epsilon: float = 0.5) -> list[Case]:
    """Every mistake as a catalogue case at the claimed ``epsilon``."""
    return [m.case(epsilon) for m in MISTAKES.values()]


@dataclass(frozen=True)
class TamperResult:
    name: str
    description: str
    claimed_epsilon: float
    true_loss: float
    witness_applies: bool
    witness_verdict: str
    witness_loss: float
    audit: AuditResult

    @property
    def flagged(self) -> bool:
        return self.audit.violated

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "claimed_epsilon": self.claimed_epsilon,
            "true_loss": json_number(self.true_loss),
            "witness": {
                "applies": self.witness_applies,
                "verdict": self.witness_verdict,
                "loss": json_number(self.witness_loss),
            },
            "audit": self.audit.to_dict(),
            "flagged": self.flagged,
        }


def tamper_attack(
    names: list[str] | None = None,
    *,
    epsilon: float = 0.5,
    samples: int | None = None,
    seed: int | None = None,
    **audit_options: Any,
) -> list[TamperResult]:
    """Run each named mistake (all by default) through the analytic witness and the auditor."""
    from dpwitness.errors import ParameterError
    from dpwitness.witness.audit import audit

    chosen = names or list(MISTAKES)
    unknown = [n for n in chosen if n not in MISTAKES]
    if unknown:
        raise ParameterError("tamper", f"one of {', '.join(MISTAKES)}", unknown[0])
    results = []
    for name in chosen:
        mistake = MISTAKES[name]
        case = mistake.case(epsilon)
        applies, verdict, loss = mistake.witness(epsilon)
        found = audit(case.mechanism, case.d, case.d_prime, epsilon=epsilon, samples=samples, seed=seed, **audit_options)
        results.append(TamperResult(name, mistake.description, epsilon, case.true_loss, applies, verdict, loss, found))
    return results
