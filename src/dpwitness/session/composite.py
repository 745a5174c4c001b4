"""A statistic derived from several noisy parts: a mean (noisy centred sum / noisy count) or a
variance (noisy moments), its parts Laplace or Gaussian. Its interval is a conservative Bonferroni one; its witness composes
the witnesses of its parts (registered by :mod:`dpwitness.witness`: a release never imports its judge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dpwitness.mechanisms.release import Release, _judge
from dpwitness.privacy.accounting import gaussian_half_width, laplace_half_width
from dpwitness.query.queries import Key

if TYPE_CHECKING:
    from dpwitness.witness.analytic import WitnessReport


@dataclass(frozen=True, repr=False)
class CompositeRelease(Release):
    """A statistic derived from several noisy parts (a mean from a noisy sum and a noisy count,
    a variance from noisy moments). ``scale`` is NaN: the error is not Laplace. ``interval``
    is a conservative 1 − α interval: each part's own interval (Laplace b·ln(1/α′) or Gaussian
    σ·Φ⁻¹(1 − α′/2)) at α′ = α/parts (Bonferroni),
    propagated by interval arithmetic and cut to the feasible range.
    """

    parts: tuple[Release, ...] = ()
    bounds: tuple[float, float] = (0.0, 0.0)

    @property
    def interval(self) -> Any:
        level = self.alpha / len(self.parts)
        widths = [_width(p, level) for p in self.parts]
        if isinstance(self.value, dict):
            return {key: self._interval_at([_at(p.value, key) for p in self.parts], widths) for key in self.value}
        return self._interval_at([float(p.value) for p in self.parts], widths)  # type: ignore[arg-type]

    def _interval_at(self, values: list[float], widths: list[float]) -> tuple[float, float]:
        low, high = self.bounds
        h, centre = (high - low) / 2, (low + high) / 2
        n_low, n_high = values[0] - widths[0], values[0] + widths[0]
        moments = list(zip(values[1:], widths[1:], strict=True))
        if n_high < 1:
            return (0.0, h * h) if len(moments) == 2 else (low, high)
        n_low = max(n_low, 1.0)
        first = _divide(moments[0][0] - moments[0][1], moments[0][0] + moments[0][1], n_low, n_high)
        if len(moments) == 1:
            return (max(low, centre + first[0]), min(high, centre + first[1]))
        second = _divide(max(moments[1][0] - moments[1][1], 0.0), max(moments[1][0] + moments[1][1], 0.0), n_low, n_high)
        squares = (0.0 if first[0] <= 0 <= first[1] else min(first[0] ** 2, first[1] ** 2), max(first[0] ** 2, first[1] ** 2))
        return (max(0.0, second[0] - squares[1]), min(h * h, second[1] - squares[0]))

    @property
    def half_width(self) -> float:
        return math.nan

    def witness(self) -> WitnessReport:
        """Every part witnessed; their losses add up (basic composition; a Gaussian report for Gaussian parts)."""
        report: WitnessReport = _judge("compose")([part.witness() for part in self.parts])
        return replace(report, sensitivity_search=self.sensitivity_search)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(scale=None, variance=None, parts=[p.to_dict() for p in self.parts], bounds=list(self.bounds))
        return data


def _width(part: Release, level: float) -> float:
    """A part's half-width at ``level`` by its own noise's law (as :attr:`Release.half_width`)."""
    if part.mechanism is not None:
        return part.mechanism.interval(level)
    if part.distribution == "gaussian":
        return gaussian_half_width(part.scale, level)
    return laplace_half_width(part.scale, level)


def _divide(low: float, high: float, n_low: float, n_high: float) -> tuple[float, float]:
    """[low, high] / [n_low, n_high] with 0 < n_low ≤ n_high."""
    candidates = (low / n_low, low / n_high, high / n_low, high / n_high)
    return min(candidates), max(candidates)


def _at(value: Any, key: Key) -> float:
    assert isinstance(value, dict)
    return float(value[key])
