"""Neighbour relations and the exact L1 sensitivity Δ of each query under each.

* add/remove one record (unbounded DP): D' = D ± one record; n is not fixed.
* replace one record (bounded DP): D' = D with one record's values changed; n is fixed and public.

No blanket "×2": each Δ below is derived for its query and relation.
"""

from __future__ import annotations

from enum import StrEnum

from dpwitness.errors import ParameterError, check_finite


class Neighbours(StrEnum):
    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"

    @classmethod
    def parse(cls, value: str | Neighbours) -> Neighbours:
        try:
            return cls(value)
        except ValueError:
            raise ParameterError("neighbours", "'add-remove' or 'replace-one'", value) from None

    @property
    def description(self) -> str:
        if self is Neighbours.ADD_REMOVE:
            return "add/remove one record (n is private)"
        return "replace one record (n is fixed and public)"


def check_bounds(lower: float, upper: float, parameter: str = "bounds") -> tuple[float, float]:
    low = check_finite(parameter, lower, "(L, U) with finite L < U")
    high = check_finite(parameter, upper, "(L, U) with finite L < U")
    if not low < high:
        raise ParameterError(parameter, "(L, U) with finite L < U", (lower, upper))
    return low, high


def count_sensitivity(neighbours: Neighbours) -> float:
    """Adding/removing a record moves a count by 1; replacing one cannot move it."""
    return 1.0 if neighbours is Neighbours.ADD_REMOVE else 0.0


def sum_sensitivity(neighbours: Neighbours, lower: float, upper: float) -> float:
    """Values clamped to [L, U]: max(|L|, |U|) for add/remove, U − L for replace-one."""
    low, high = check_bounds(lower, upper)
    return max(abs(low), abs(high)) if neighbours is Neighbours.ADD_REMOVE else high - low


def histogram_sensitivity(neighbours: Neighbours) -> float:
    """L1 over the bins: one bin moves by 1 (add/remove), or two bins by 1 each (replace)."""
    return 1.0 if neighbours is Neighbours.ADD_REMOVE else 2.0


def mean_sensitivity_public_n(lower: float, upper: float, n: int) -> float:
    """(U − L)/n: valid only under replace-one, where n is fixed and public."""
    low, high = check_bounds(lower, upper)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("n", "a whole number ≥ 1", n)
    return (high - low) / n
