"""Classic calibration mistakes, built on purpose so that the blue team can catch them."""

from __future__ import annotations

from dpwitness.mechanisms import Laplace
from dpwitness.noise import GridLaplace


def inverted_laplace(*, sensitivity: float, epsilon: float, dimension: int = 1) -> Laplace:
    """Claims ε but samples scale ε/Δ instead of Δ/ε: its real loss is Δ/(ε/Δ) = Δ²/ε."""
    return Laplace(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dimension=dimension,
        noise=GridLaplace.calibrate(sensitivity=epsilon, epsilon=sensitivity, dimension=dimension),
    )


TAMPERS = {"invert": inverted_laplace}
