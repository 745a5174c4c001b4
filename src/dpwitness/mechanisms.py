"""The Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006), floating-point safe.

Guarantee: for a query whose value moves by at most ``sensitivity`` in L1 between
neighbouring datasets, ``release`` is ε-differentially private, with ε computed from the
exact distribution the sampler draws (see :mod:`dpwitness.noise`), not only from the formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dpwitness.errors import (
    ParameterError,
    check_alpha,
    check_non_negative_finite,
    check_positive_finite,
)
from dpwitness.noise import GridLaplace, bit_source, round_to_grid
from dpwitness.release import Release

ArrayLike = float | int | npt.ArrayLike


@dataclass(frozen=True, kw_only=True)
class Laplace:
    """Release f(D) + Lap(Δ/ε) on a power-of-two grid.

    ``sensitivity`` Δ is the L1 sensitivity of the query (its value may be a number or a
    vector of ``dimension`` coordinates, each getting independent noise of scale Δ/ε).
    ``changed_coordinates`` is the most coordinates one record can move (a histogram's record
    moves 1 bin under add/remove, 2 under replace-one); it defaults to ``dimension`` and sets
    the grid-rounding charge, which is one step per coordinate that can change.
    Δ = 0 means the query cannot move: the exact value is released at no privacy cost.
    """

    sensitivity: float
    epsilon: float
    dimension: int = 1
    changed_coordinates: int | None = None
    #: The sampler. Leave it None to get the one calibrated to (Δ, ε); the red team passes a
    #: mis-calibrated one to show that :func:`dpwitness.witness` catches it.
    noise: GridLaplace | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        sensitivity = check_non_negative_finite("sensitivity", self.sensitivity)
        epsilon = check_positive_finite("epsilon", self.epsilon)
        if self.changed_coordinates is None:
            object.__setattr__(self, "changed_coordinates", self.dimension)
        for name in ("dimension", "changed_coordinates"):
            count = getattr(self, name)
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ParameterError(name, "a whole number ≥ 1", count)
        if sensitivity > 0 and not math.isfinite(sensitivity / epsilon):
            expected = "large enough that the scale Δ/ε is finite (ε → 0 means unbounded noise)"
            raise ParameterError("epsilon", expected, self.epsilon)
        if sensitivity > 0 and sensitivity / epsilon == 0:
            raise ParameterError("epsilon", "small enough that the scale Δ/ε is not zero", self.epsilon)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "epsilon", epsilon)
        if self.noise is None and sensitivity > 0:
            object.__setattr__(
                self,
                "noise",
                GridLaplace.calibrate(sensitivity=sensitivity, epsilon=epsilon, dimension=self.charged_coordinates),
            )

    # --- the contract ---------------------------------------------------------------------
    @property
    def charged_coordinates(self) -> int:
        """Coordinates whose grid rounding is charged: those one record can change."""
        return self.changed_coordinates or self.dimension

    @property
    def scale(self) -> float:
        """b = Δ/ε, the Laplace scale the mechanism is calibrated to (0 when Δ = 0)."""
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """2b² per coordinate."""
        return 2.0 * self.scale**2

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)

    def privacy_loss(self, d: float) -> float:
        """The ε spent when one record moves the query by ``d`` (L1), grid rounding included.

        Equals d/b for the ideal mechanism plus at most one grid step (≈ b·2^-27) per
        coordinate for rounding; for d = Δ it is ≤ ε by construction.
        """
        shift = check_non_negative_finite("d", d)
        if shift == 0:
            return 0.0
        if self.noise is None:
            return math.inf
        return self.noise.loss_for_steps(self.noise.steps_for_shift(shift, self.charged_coordinates))

    def log_density_ratio(self, z: ArrayLike, f1: ArrayLike, f2: ArrayLike) -> float | npt.NDArray[np.float64]:
        """log p(z | f(D)=f1) − log p(z | f(D')=f2) for the Laplace density (L1 over coordinates)."""
        z_arr, f1_arr, f2_arr = (np.asarray(v, dtype=np.float64) for v in (z, f1, f2))
        if self.dimension > 1:
            gap = np.sum(np.abs(z_arr - f2_arr) - np.abs(z_arr - f1_arr), axis=-1)
        else:
            gap = np.abs(z_arr - f2_arr) - np.abs(z_arr - f1_arr)
        if self.scale == 0:
            ratio = np.where(gap == 0, 0.0, np.sign(gap) * np.inf)
        else:
            ratio = gap / self.scale
        return float(ratio) if np.ndim(ratio) == 0 else ratio

    def interval(self, alpha: float = 0.05) -> float:
        """Half-width w with P(|noise| > w) = α for one coordinate: b·ln(1/α)."""
        return self.scale * math.log(1.0 / check_alpha(alpha))

    @property
    def guarantee(self) -> str:
        if self.noise is None:
            return "Δ = 0: the query cannot change between neighbours; exact value, ε spent = 0"
        return (
            f"ε = {self.epsilon:g}-DP for L1 sensitivity Δ = {self.sensitivity:g}: "
            f"Laplace scale b = {self.scale:.6g}, exact discrete noise on the grid 2^{self.noise.granularity_log2}"
        )

    def release(
        self,
        value: ArrayLike,
        *,
        size: int | None = None,
        seed: int | np.random.Generator | None = None,
        query: str = "value",
        neighbours: str | None = None,
    ) -> Release:
        """Release ``value`` + noise; ``size=N`` gives N independent releases.

        ``seed`` makes the output reproducible (and marks the release as not for production);
        without it the OS's cryptographically secure generator is used.
        """
        values = self._validated_value(value)
        count = self._validated_size(size)
        bits = bit_source(seed)
        if self.noise is None:
            noisy = np.broadcast_to(values, (count or 1, *values.shape)).copy()
        else:
            centre = self._on_grid(values)
            steps = self.noise.sample((count or 1) * values.size, bits).reshape((count or 1, *values.shape))
            # Exact integer sum, then one conversion: the output is a function of the noisy
            # integer alone (post-processing), so every input has the same support γ·ℤ.
            steps += centre
            noisy = np.multiply(steps, self.noise.granularity, dtype=np.float64)  # × 2^k: exact
        result: float | npt.NDArray[np.float64]
        result = noisy if count is not None else (float(noisy[0]) if values.ndim == 0 else noisy[0])
        return Release(
            value=result,
            epsilon=0.0 if self.noise is None else self.epsilon,
            sensitivity=self.sensitivity,
            scale=self.scale,
            query=query,
            neighbours=neighbours,
            randomness=bits.name,
            seed=None if seed is None or isinstance(seed, np.random.Generator) else int(seed),
            seeded=not bits.secure,
            mechanism=self,
        )

    # --- validation ------------------------------------------------------------------------
    def _validated_value(self, value: ArrayLike) -> npt.NDArray[np.float64]:
        try:
            values = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterError("value", "a number or a 1-D array of numbers", value) from None
        if values.ndim > 1:
            raise ParameterError("value", "a number or a 1-D array", f"an array of shape {values.shape}")
        coordinates = 1 if values.ndim == 0 else values.shape[0]
        if coordinates != self.dimension:
            raise ParameterError(
                "value",
                f"{'a number' if self.dimension == 1 else f'a 1-D array of {self.dimension} numbers'} "
                f"(this mechanism was built with dimension={self.dimension}; pass dimension=k for k coordinates)",
                f"shape {values.shape}",
            )
        if not np.all(np.isfinite(values)):
            raise ParameterError("value", "finite (no NaN or ∞)", value)
        if self.noise is not None and values.size:
            limit = math.ldexp(1.0, 61 + self.noise.granularity_log2)
            if np.max(np.abs(values)) >= limit:
                raise ParameterError("value", f"smaller than 2^61 grid steps (|value| < {limit:.3g} at this scale)", value)
        return values

    @staticmethod
    def _validated_size(size: int | None) -> int | None:
        if size is None:
            return None
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ParameterError("size", "a whole number ≥ 1 or None", size)
        return int(size)

    def _on_grid(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        assert self.noise is not None
        return round_to_grid(values, self.noise.granularity_log2)
