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

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_non_negative_finite, check_positive_finite
from dpwitness.mechanisms.release import Release
from dpwitness.noise import (
    EPSILON_RANGE,
    GAUSS_DELTA_RANGE,
    GAUSS_EPSILON_RANGE,
    GAUSS_RHO_RANGE,
    SCALE_RANGE,
    SENSITIVITY_RANGE,
    BitSource,
    GridGaussian,
    GridLaplace,
    add_noise_on_grid,
    bit_source,
    gaussian_for_delta,
    gaussian_for_rho,
    grid_steps,
    grid_to_float,
)
from dpwitness.privacy.accounting import analytic_gaussian_sigma, gaussian_half_width, gaussian_sigma_for_rho, laplace_half_width

ArrayLike = float | int | npt.ArrayLike


def check_in_range(parameter: str, value: float, accepted: tuple[float, float], what: str = "") -> float:
    """``value`` within the closed range ``accepted``, else a one-line ParameterError naming it.

    :param parameter: the parameter's name as the user wrote it, named in the error.
    :param what: how the error describes the expected value (default "a number").
    """
    low, high = accepted
    if not low <= value <= high:
        raise ParameterError(parameter, f"{what or 'a number'} in [{low:g}, {high:g}] (the range calibrated exactly)", value)
    return value


def check_laplace_parameters(sensitivity: float, epsilon: float) -> None:
    """The accepted ranges of the Laplace sampler (docs/mechanism.md): ε, Δ and the scale Δ/ε.

    :param sensitivity: Δ, 0 (no noise needed) or in [1e-100, 1e100], with Δ/ε in the same range.
    :param epsilon: ε, in [1e-3, 1e3].
    """
    check_in_range("epsilon", epsilon, EPSILON_RANGE, "ε")
    if sensitivity > 0:
        check_in_range("sensitivity", sensitivity, SENSITIVITY_RANGE, "Δ = 0 or")
        low, high = SCALE_RANGE
        if not low <= sensitivity / epsilon <= high:
            raise ParameterError("sensitivity", f"such that the scale Δ/ε is in [{low:g}, {high:g}]", sensitivity)


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
            object.__setattr__(self, name, check_count(name, getattr(self, name)))
        check_laplace_parameters(sensitivity, epsilon)
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
        """Half-width w with P(|noise| > w) = ``alpha`` (α) for one coordinate: b·ln(1/α)."""
        return laplace_half_width(self.scale, alpha)

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
        without it the OS's cryptographically secure generator is used. ``query`` names what was
        released and ``neighbours`` the relation its Δ was derived for (both stated in the release).
        """
        result, bits = _noisy_release(self.noise, self.dimension, value, size, seed)
        return Release._built(
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


GridNoise = GridLaplace | GridGaussian


def _noisy_release(
    noise: GridNoise | None, dimension: int, value: ArrayLike, size: int | None, seed: int | np.random.Generator | None
) -> tuple[float | npt.NDArray[np.float64], BitSource]:
    """value + noise on the grid (the one release path of every mechanism), and the bit source used.

    One plain number, one release: the same arithmetic in Python integers (no NumPy call), the
    exact path of :func:`add_noise_on_grid` with one scalar draw; a few µs instead of tens.
    """
    bits = bit_source(seed)
    if size is None and dimension == 1 and isinstance(value, (float, int)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            if noise is None:
                return number, bits
            centre = grid_steps(number, noise.granularity_log2) + noise._draw_one(bits)
            return grid_to_float(centre, noise.granularity_log2), bits
    values = _validated_value(value, dimension)
    count = _validated_size(size)
    if noise is None:
        noisy = np.broadcast_to(values, (count or 1, *values.shape)).copy()
    else:
        steps = noise.sample((count or 1) * values.size, bits).reshape((count or 1, *values.shape))
        # Exact integer sum, then one conversion: the output is a function of the noisy
        # integer alone (post-processing), so every input has the same support γ·ℤ.
        noisy = add_noise_on_grid(values, steps, noise.granularity_log2)
    result: float | npt.NDArray[np.float64]
    result = noisy if count is not None else (float(noisy[0]) if values.ndim == 0 else noisy[0])
    return result, bits


def _validated_value(value: ArrayLike, dimension: int) -> npt.NDArray[np.float64]:
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("value", "a number or a 1-D array of numbers", value) from None
    if values.ndim > 1:
        raise ParameterError("value", "a number or a 1-D array", f"an array of shape {values.shape}")
    coordinates = 1 if values.ndim == 0 else values.shape[0]
    if coordinates != dimension:
        raise ParameterError(
            "value",
            f"{'a number' if dimension == 1 else f'a 1-D array of {dimension} numbers'} "
            f"(this mechanism was built with dimension={dimension}; pass dimension=k for k coordinates)",
            f"shape {values.shape}",
        )
    if not np.all(np.isfinite(values)):
        raise ParameterError("value", "finite (no NaN or ∞)", value)
    return values  # any finite size: values past 2^61 grid steps take the exact big-integer path


def _validated_size(size: int | None) -> int | None:
    if size is None:
        return None
    check_count("size", size, expected="a whole number ≥ 1 or None")
    return int(size)


@dataclass(frozen=True, kw_only=True)
class Gaussian:
    """Release f(D) + discrete Gaussian noise of standard deviation σ on a power-of-two grid.

    ``sensitivity`` Δ is the L2 sensitivity of the query. Give either ``epsilon`` and ``delta``
    (σ from the analytic Gaussian mechanism, Balle & Wang 2018, then raised until the δ(ε) of
    the discrete noise really sampled, grid rounding included, is ≤ δ) or ``rho`` (ρ-zCDP,
    σ = Δ/√(2ρ), Bun & Steinke 2016). ``dimension`` and ``changed_coordinates`` as for
    :class:`Laplace`; for more than one changed coordinate δ(ε) is the zCDP conversion, a
    rigorous upper bound. Δ = 0 releases the exact value at no privacy cost.
    """

    sensitivity: float
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    dimension: int = 1
    changed_coordinates: int | None = None
    #: The sampler; leave None for the calibrated one (the red team passes a wrong one).
    noise: GridGaussian | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        sensitivity = check_non_negative_finite("sensitivity", self.sensitivity)
        if self.changed_coordinates is None:
            object.__setattr__(self, "changed_coordinates", self.dimension)
        for name in ("dimension", "changed_coordinates"):
            object.__setattr__(self, name, check_count(name, getattr(self, name)))
        if self.rho is not None:
            if self.epsilon is not None or self.delta is not None:
                raise ParameterError("rho", "given alone: either (epsilon, delta) or rho, not both", self.rho)
            rho = check_in_range("rho", check_positive_finite("rho", self.rho), GAUSS_RHO_RANGE, "ρ")
            object.__setattr__(self, "rho", rho)
        else:
            if self.epsilon is None:
                raise ParameterError("epsilon", "given with delta (or give rho alone)", None)
            if self.delta is None:
                low, high = GAUSS_DELTA_RANGE
                raise ParameterError("delta", f"a number in [{low:g}, {high:g}] (or give rho)", None)
            epsilon = check_in_range("epsilon", check_positive_finite("epsilon", self.epsilon), GAUSS_EPSILON_RANGE, "ε")
            delta = check_positive_finite("delta", self.delta)
            check_in_range("delta", delta, GAUSS_DELTA_RANGE, "δ")
            object.__setattr__(self, "epsilon", epsilon)
            object.__setattr__(self, "delta", delta)
        if sensitivity > 0:
            check_in_range("sensitivity", sensitivity, SENSITIVITY_RANGE, "Δ = 0 or")
        object.__setattr__(self, "sensitivity", sensitivity)
        if self.noise is None and sensitivity > 0:
            object.__setattr__(self, "noise", self._calibrated())

    def _calibrated(self) -> GridGaussian:
        changed = self.charged_coordinates
        if self.rho is not None:
            return gaussian_for_rho(sensitivity=self.sensitivity, rho=self.rho, changed=changed)
        assert self.epsilon is not None and self.delta is not None
        try:
            return gaussian_for_delta(sensitivity=self.sensitivity, epsilon=self.epsilon, delta=self.delta, changed=changed)
        except ValueError:
            expected = f"larger for ε = {self.epsilon:g} and {changed} changed coordinates (the tables' η alone costs more)"
            raise ParameterError("delta", expected, self.delta) from None

    # --- the contract ---------------------------------------------------------------------
    @property
    def charged_coordinates(self) -> int:
        return self.changed_coordinates or self.dimension

    @property
    def analytic_sigma(self) -> float:
        """σ of the continuous analytic Gaussian for the claim (Balle–Wang for (ε, δ), Δ/√(2ρ) for ρ)."""
        if self.sensitivity == 0:
            return 0.0
        if self.rho is not None:
            return gaussian_sigma_for_rho(self.sensitivity, self.rho)
        assert self.epsilon is not None and self.delta is not None
        return analytic_gaussian_sigma(self.sensitivity, self.epsilon, self.delta)

    @property
    def sigma(self) -> float:
        """σ of the noise really sampled (s·γ; ≥ the analytic σ by the grid-rounding charge)."""
        return 0.0 if self.noise is None else self.noise.sigma

    @property
    def scale(self) -> float:
        """σ (the name :class:`Release` uses for the noise's scale)."""
        return self.sigma

    @property
    def variance(self) -> float:
        """σ² per coordinate."""
        return self.sigma**2

    @property
    def std(self) -> float:
        return self.sigma

    def interval(self, alpha: float = 0.05) -> float:
        """Half-width w with P(|noise| > w) ≈ ``alpha`` (α) for one coordinate: σ·Φ⁻¹(1 − α/2)."""
        return gaussian_half_width(self.sigma, alpha)

    @property
    def rho_spent(self) -> float:
        """ρ of the noise really sampled for shifts ≤ Δ (rounded steps k: k²/2s²)."""
        if self.noise is None:
            return 0.0
        return self.noise.rho_for_steps(self.noise.steps_for_shift(self.sensitivity, self.charged_coordinates))

    @property
    def tv_spent(self) -> float:
        """c·η: the total-variation distance, over the c coordinates one record can change, between
        the noise really sampled and the ideal N_ℤ(0, s²) whose ρ is :attr:`rho_spent`. The zCDP
        route of the accounting adds (1 + e^ε)·c·η to the converted δ for it (dpwitness.privacy.budget)."""
        return 0.0 if self.noise is None else self.charged_coordinates * self.noise.tv_distance()

    def privacy_profile(self, epsilon: float) -> float:
        """δ(ε) of the noise really sampled, for shifts of L2 length ≤ Δ: an upper bound, never below it."""
        eps = check_non_negative_finite("epsilon", epsilon)
        if self.noise is None:
            return 0.0
        steps = self.noise.steps_for_shift(self.sensitivity, self.charged_coordinates)
        return self.noise.delta_for_steps(eps, steps, self.charged_coordinates)

    @property
    def guarantee(self) -> str:
        if self.noise is None:
            return "Δ = 0: the query cannot change between neighbours; exact value, nothing spent"
        claim = f"ρ = {self.rho:g}-zCDP" if self.rho is not None else f"(ε = {self.epsilon:g}, δ = {self.delta:g})-DP"
        return (
            f"{claim} for L2 sensitivity Δ = {self.sensitivity:g}: discrete Gaussian σ = {self.sigma:.6g} "
            f"on the grid 2^{self.noise.granularity_log2} (analytic σ {self.analytic_sigma:.6g})"
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
        """Release ``value`` + noise; ``size=N`` gives N independent releases. ``seed`` makes them
        reproducible (not for production); ``query`` names what was released and ``neighbours`` the
        relation its Δ was derived for (both stated in the release)."""
        result, bits = _noisy_release(self.noise, self.dimension, value, size, seed)
        noisy = self.noise is not None
        notes: tuple[str, ...] = ()
        if noisy and self.rho is not None:
            notes = (f"ρ-zCDP with ρ = {self.rho:g} (δ(ε) from .privacy_profile(ε))",)
        return Release._built(
            value=result,
            # a ρ-only claim has no single ε: ∞, as in a ρ budget (see dpwitness.privacy.budget.Budget)
            epsilon=(math.inf if self.epsilon is None else self.epsilon) if noisy else 0.0,
            delta=(self.delta or 0.0) if noisy else 0.0,
            sensitivity=self.sensitivity,
            scale=self.sigma,
            query=query,
            neighbours=neighbours,
            randomness=bits.name,
            seed=None if seed is None or isinstance(seed, np.random.Generator) else int(seed),
            seeded=not bits.secure,
            notes=notes,
            distribution="gaussian",
            mechanism=self,
        )
