"""Planning a query before anything is spent: the calibrated mechanisms, the cost in ε, δ and ρ,
the threshold for undeclared keys, and the :class:`Preview` of a query's accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.figures import tidy
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.privacy.accounting import pure_dp_rho
from dpwitness.privacy.budget import Spend
from dpwitness.query.queries import Query

DEFAULT_DELTA = 1e-6


def max_delta(max_rows: int) -> float:
    """The largest δ a release over undeclared keys may cost: 1/(10·max_rows), so that at most
    0.1 unique keys are expected to be exposed (each unit's own keys leak with probability ≤ δ)."""
    return 1.0 / (10.0 * max_rows)


#: τ is computed for δ·(1 − 2^-20): room for the sampler's discrete tail and table deviations.
PARTITION_DELTA_MARGIN = 1.0 - 2.0**-20


@dataclass(frozen=True, repr=False)
class Preview:
    """What a query would cost and how accurate it would be; nothing spent, nothing released.

    ``interval`` is (−w, +w) around the true value for a Laplace release, or None when the
    width depends on the data (a mean or variance whose n is private: see ``parts``).
    """

    query: str
    epsilon: float
    sensitivity: float
    scale: float
    interval: tuple[float, float] | None
    alpha: float
    parts: tuple[dict[str, float | str], ...]
    threshold: float | None = None
    delta: float = 0.0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "epsilon": tidy(self.epsilon) if math.isfinite(self.epsilon) else None,
            "delta": tidy(self.delta),
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "alpha": self.alpha,
            "interval": None if self.interval is None else list(self.interval),
            "threshold": self.threshold,
            "parts": list(self.parts),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        from dpwitness.mechanisms.report import preview_text

        return preview_text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import preview_html

        return preview_html(self)


@dataclass(frozen=True)
class Plan:
    """A validated query with its calibrated mechanisms (one per noisy part), ready to spend.
    Immutable: a session keeps its plans and reuses them (``Session._memoised``)."""

    query: Query
    #: one per noisy part; Gaussian ones (typed as the Laplace contract they share) when ``gaussian``
    mechanisms: tuple[Laplace, ...]
    threshold: float | None
    delta: float
    exposure: float | None = None  # max_rows·δ: expected unique keys exposed, at most
    choice: str = ""  # which mechanism and why (auto), for the release's notes
    #: Gaussian thresholding: the part of ``delta`` that key selection costs (the rest is the
    #: noise's; accounting.gaussian_selection_split). None: all of ``delta`` is selection (Laplace)
    #: or noise (Gaussian over declared keys).
    threshold_delta: float | None = None
    cost: float = field(init=False)
    rho: float = field(init=False)
    selection_delta: float = field(init=False)
    tv_distance: float = field(init=False)

    def __post_init__(self) -> None:
        pairs = zip(self.query.parts, self.mechanisms, strict=True)
        charged: list[tuple[float, Laplace | Gaussian]] = [(self.query.epsilon_of(p), m) for p, m in pairs if p.sensitivity > 0]
        cost = math.fsum(e for e, _ in charged)
        if charged and all(isinstance(m, Gaussian) and m.rho is not None for _, m in charged):
            cost = math.inf  # calibrated to ρ only: a zCDP guarantee, no ε of its own
        object.__setattr__(self, "cost", cost)
        # a Laplace part is ε_i-DP, so ε_i²/2-zCDP; a Gaussian part has the ρ of the noise it samples
        object.__setattr__(self, "rho", math.fsum(m.rho_spent if isinstance(m, Gaussian) else pure_dp_rho(e) for e, m in charged))
        selection_delta = 0.0 if self.gaussian else self.delta  # δ of key selection is not zCDP
        object.__setattr__(self, "selection_delta", selection_delta if self.threshold_delta is None else self.threshold_delta)
        # the Gaussian tables' distance from the ideal noise whose ρ is recorded: charged on the zCDP route
        object.__setattr__(self, "tv_distance", math.fsum(m.tv_spent for _, m in charged if isinstance(m, Gaussian)))

    @property
    def gaussian(self) -> bool:
        return any(isinstance(m, Gaussian) for m in self._all)

    @property
    def _all(self) -> tuple[Laplace | Gaussian, ...]:
        return self.mechanisms

    @property
    def rho_only(self) -> bool:
        """True when the noise is calibrated to ρ only (zCDP, no ε of its own)."""
        return math.isinf(self.cost)

    @property
    def selection(self) -> dict[str, float | str] | None:
        """How keys were selected, as the release states it (None for declared keys): the noise's
        law, its scale (b or σ), the threshold τ on the noisy count and the δ parts."""
        if self.threshold is None:
            return None
        count = self._all[0]
        if isinstance(count, Gaussian):
            noise = self.delta - self.selection_delta if count.rho is None else 0.0
            return {
                "mechanism": "gaussian",
                "sigma": count.sigma,
                "threshold": self.threshold,
                "delta": self.delta,
                "delta_noise": noise,
                "delta_threshold": self.selection_delta,
            }
        scale = count.noise.scale if count.noise is not None else count.scale  # the sampler's, as τ used
        return {
            "mechanism": "laplace",
            "scale": scale,
            "threshold": self.threshold,
            "delta": self.delta,
            "delta_threshold": self.delta,
        }

    def spend(self, label: str) -> Spend:
        """What the ledger records for this query: its ε and δ, its ρ, and δ from selection.

        :param label: the query's label, recorded with the spend.
        """
        if self.cost == 0:
            return Spend(label, 0.0, 0.0, 0.0, 0.0)
        return Spend(label, self.cost, self.delta, self.rho, self.selection_delta, self.tv_distance)


def check_mechanism(mechanism: Any) -> str:
    """``mechanism=`` as given: "laplace", "gaussian" or "auto", else ``ParameterError("mechanism", …)``."""
    if mechanism not in ("laplace", "gaussian", "auto"):
        raise ParameterError("mechanism", "laplace, gaussian or auto", mechanism)
    return str(mechanism)
