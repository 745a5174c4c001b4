"""What a release hands back: the noisy value and everything needed to judge it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.errors import check_alpha

if TYPE_CHECKING:
    from dpwitness.mechanisms import Laplace
    from dpwitness.witness.analytic import WitnessReport
    from dpwitness.witness.audit import AuditResult

NOT_FOR_PRODUCTION = "seeded randomness: reproducible, NOT for production releases"

Value = float | npt.NDArray[np.float64] | dict[Any, float]
Interval = tuple[float, float] | tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | dict[Any, tuple[float, float]]


@dataclass(frozen=True)
class Release:
    """A differentially private release.

    ``value`` is a number, an array (vector or ``size=N`` releases) or, for keyed results
    (histograms, grouped queries), a dict from key to noisy value. ``interval`` holds the
    true value with probability 1 − ``alpha`` per coordinate (noise only: not clamping bias).
    """

    value: Value
    epsilon: float
    sensitivity: float
    scale: float
    query: str = "value"
    neighbours: str | None = None
    alpha: float = 0.05
    randomness: str = ""
    seed: int | None = None
    seeded: bool = False
    notes: tuple[str, ...] = ()
    delta: float = 0.0
    mechanism: Laplace | None = field(default=None, repr=False, compare=False)

    @property
    def half_width(self) -> float:
        return self.scale * math.log(1.0 / check_alpha(self.alpha))

    @property
    def interval(self) -> Interval:
        """(low, high) at confidence 1 − alpha; a dict of pairs for keyed values."""
        w = self.half_width
        if isinstance(self.value, dict):
            return {k: (v - w, v + w) for k, v in self.value.items()}
        if isinstance(self.value, np.ndarray):
            return (self.value - w, self.value + w)
        return (self.value - w, self.value + w)

    def with_alpha(self, alpha: float) -> Release:
        """The same release, its interval at confidence 1 − alpha."""
        return replace(self, alpha=check_alpha(alpha))

    @property
    def notice(self) -> str:
        lines = list(self.notes)
        if self.seeded:
            lines.append(NOT_FOR_PRODUCTION)
        if self.sensitivity == 0:
            lines.append("Δ = 0: no noise is needed; the exact value was released and ε spent is 0")
        return "; ".join(lines)

    def witness(self) -> WitnessReport:
        """The analytic witness of the mechanism that made this release."""
        from dpwitness.witness.analytic import witness

        if self.mechanism is None:
            raise ValueError("this release carries no mechanism to witness (a composite release: witness each of its .parts)")
        return witness(self.mechanism)

    def audit(self, **kwargs: Any) -> AuditResult:
        """The empirical certificate: the black-box auditor run on this release's mechanism.

        Audits ``mechanism.release`` on the neighbouring query values 0 and Δ (Δ in the first
        coordinate for vectors) against the claimed ε; ``kwargs`` go to :func:`dpwitness.audit`
        (``samples``, ``confidence``, ``seed``…).
        """
        from dpwitness.witness.audit import audit_laplace

        if self.mechanism is None:
            raise ValueError("this release carries no mechanism to audit (a composite release: audit each of its .parts)")
        return audit_laplace(self.mechanism, **kwargs)

    def __float__(self) -> float:
        if isinstance(self.value, (dict, np.ndarray)):
            raise TypeError("this release holds several values; use .value")
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (arrays become lists, keys become strings)."""
        return {
            "query": self.query,
            "value": _plain(self.value),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "variance": 2.0 * self.scale**2,
            "alpha": self.alpha,
            "interval": _plain(self.interval),
            "neighbours": self.neighbours,
            "randomness": self.randomness,
            "seeded": self.seeded,
            "seed": self.seed,
            "notice": self.notice,
        }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
