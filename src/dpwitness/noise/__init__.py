"""Randomness: bit sources and exact discrete Laplace and Gaussian samplers on a power-of-two grid.

Every release is ``(round(x / γ) + X) · γ`` where γ = 2^k and X is an integer drawn *exactly*
from integer tables on random bits, so the set of possible outputs is γ·ℤ whatever the input
(Mironov 2012), and the privacy loss is computed from the tables the sampler really uses.

One module per job, re-exported here:

* :mod:`dpwitness.noise.bits`: the secure and seeded bit sources (:func:`bit_source`);
* :mod:`dpwitness.noise.tables`: the exact alias and acceptance tables;
* :mod:`dpwitness.noise.rejection`: the rejection loop both samplers share;
* :mod:`dpwitness.noise.grid`: rounding to the grid and adding a draw exactly;
* :mod:`dpwitness.noise.laplace`: :class:`GridLaplace`, the discrete Laplace (it calibrates itself);
* :mod:`dpwitness.noise.gaussian`: :class:`GridGaussian`, the discrete Gaussian, and its δ bounds;
* :mod:`dpwitness.noise.calibration`: :func:`gaussian_for_delta` and :func:`gaussian_for_rho`;
* :mod:`dpwitness.noise.categorical`: the exponential mechanism's exact categorical draw.

The privacy math they rely on (zCDP → δ, the analytic Gaussian σ) is
:mod:`dpwitness.privacy.accounting`. Imports numpy only (and ``cryptography`` when installed).
"""

from __future__ import annotations

from dpwitness.noise.bits import (
    CIPHERS,
    OS_BITS,
    REKEY_BYTES,
    SECURE_BITS,
    BitSource,
    CipherBits,
    SecureBits,
    SeededBits,
    bit_source,
    secure_source,
)
from dpwitness.noise.calibration import gaussian_for_delta, gaussian_for_rho
from dpwitness.noise.categorical import HEAD_BITS, draw_log_categorical, dyadic_weights, uniform_below
from dpwitness.noise.gaussian import (
    GAUSS_DELTA_RANGE,
    GAUSS_EPSILON_RANGE,
    GAUSS_RHO_RANGE,
    GAUSS_STEPS_LOG2,
    GridGaussian,
    discrete_gaussian_delta,
)
from dpwitness.noise.grid import (
    FAST_PATH_STEPS,
    add_noise_on_grid,
    exact_add_noise_on_grid,
    grid_steps,
    grid_to_float,
    round_to_grid,
)
from dpwitness.noise.laplace import EPSILON_RANGE, GRID_STEPS_LOG2, LN2, SCALE_RANGE, SENSITIVITY_RANGE, GridLaplace
from dpwitness.noise.rejection import SCALAR_DRAWS
from dpwitness.noise.tables import LOW_BITS

__all__ = [
    "CIPHERS",
    "EPSILON_RANGE",
    "FAST_PATH_STEPS",
    "GAUSS_DELTA_RANGE",
    "GAUSS_EPSILON_RANGE",
    "GAUSS_RHO_RANGE",
    "GAUSS_STEPS_LOG2",
    "GRID_STEPS_LOG2",
    "HEAD_BITS",
    "LN2",
    "LOW_BITS",
    "OS_BITS",
    "REKEY_BYTES",
    "SCALAR_DRAWS",
    "SCALE_RANGE",
    "SECURE_BITS",
    "SENSITIVITY_RANGE",
    "BitSource",
    "CipherBits",
    "GridGaussian",
    "GridLaplace",
    "SecureBits",
    "SeededBits",
    "add_noise_on_grid",
    "bit_source",
    "discrete_gaussian_delta",
    "draw_log_categorical",
    "dyadic_weights",
    "exact_add_noise_on_grid",
    "gaussian_for_delta",
    "gaussian_for_rho",
    "grid_steps",
    "grid_to_float",
    "round_to_grid",
    "secure_source",
    "uniform_below",
]
