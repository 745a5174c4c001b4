"""Classic calibration mistakes, built on purpose so that the blue team can catch them.

The mistaken mechanisms and their neighbouring pairs are shared cases
(:mod:`dpwitness.witness.cases`, also listed by the witness's catalogue); this module adds what the
red team does with them. :func:`tamper_attack` runs each through the analytic witness
(where the mistake is visible to it) and through the black-box auditor, which must flag
every one (see :mod:`dpwitness.witness.cases` for the list).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpwitness.common.encoding import json_number
from dpwitness.mechanisms.additive import Laplace
from dpwitness.witness.cases import (
    MISTAKE_CASES,
    Case,
    add_remove_laplace,
    inverted_laplace,
    mistake_cases,
    not_divided_by_n,
    releases,
)

if TYPE_CHECKING:
    from dpwitness.witness.audit import AuditResult

__all__ = [
    "MISTAKES",
    "TAMPERS",
    "Mistake",
    "TamperResult",
    "add_remove_laplace",
    "inverted_laplace",
    "mistake_cases",
    "releases",
    "tamper_attack",
]

TAMPERS: dict[str, Callable[..., Laplace]] = {"invert": inverted_laplace, "add-remove": add_remove_laplace}


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


def _privacy_map_at(mechanism: Laplace, shift: float) -> tuple[bool, str, float]:
    """The analytic privacy map evaluated at the shift the data really causes."""
    loss = mechanism.privacy_loss(shift)
    mark = "✘ VIOLATED" if loss > mechanism.epsilon else "✔"
    return True, f"{mark}: privacy map at the real shift {shift:g}: loss {loss:.4g} vs ε = {mechanism.epsilon:g}", loss


def _not_shown(epsilon: float) -> tuple[bool, str, float]:
    return False, "n/a: this mistake is not visible to the analytic witness", math.nan


#: What the analytic witness sees of each mistake.
WITNESS_VIEWS: dict[str, Callable[[float], tuple[bool, str, float]]] = {
    "invert": lambda e: _witness_of(inverted_laplace(sensitivity=1.0, epsilon=e)),
    # The sum's true Δ is U − L; the noise was calibrated to (U − L)/n.
    "not-divided-by-n": lambda e: _witness_of(Laplace(sensitivity=100.0, epsilon=e, noise=not_divided_by_n(e).noise)),
    "add-remove": lambda e: _witness_of(add_remove_laplace(sensitivity=2.0, epsilon=e, dimension=4)),
    "unclipped": lambda e: _privacy_map_at(Laplace(sensitivity=100.0, epsilon=e), 360.0),
    "fixed-seed": lambda e: (
        False,
        "n/a: the noise distribution is right; it is the randomness that is missing, which only sampling shows",
        math.nan,
    ),
    "gaussian": lambda e: (True, "✘ VIOLATED: Gaussian tails make the log density ratio unbounded; no pure ε holds", math.inf),
}

MISTAKES: dict[str, Mistake] = {
    name: Mistake(name, description, build, WITNESS_VIEWS.get(name, _not_shown))
    for name, (description, build) in MISTAKE_CASES.items()
}


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
    """Run each named mistake (all by default) through the analytic witness and the auditor.

    :param names: the mistakes to run, keys of :data:`MISTAKES`; None (default) runs them all.
    :param epsilon: the ε each mistaken mechanism claims (default 0.5).
    :param samples: runs per input for the auditor (None, default: adaptive).
    :param seed: the auditor's seed (None: fresh randomness).
    """
    from dpwitness.common.errors import ParameterError
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
