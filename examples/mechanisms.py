"""Mechanisms to audit with ``dpwitness audit examples/mechanisms.py:NAME`` (see the README).

Each takes the input ``d`` (a number: a query answer whose sensitivity is 1), a NumPy
generator and ``size``, and returns ``size`` outputs: the auditor calls it many times.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def laplace(d: float, rng: np.random.Generator, size: int) -> Any:
    """d + Lap(1/ε) at ε = 1: correct for sensitivity 1 (the audit says ok or inconclusive)."""
    return d + rng.laplace(0.0, 1.0, size=size)


def too_little_noise(d: float, rng: np.random.Generator, size: int) -> Any:
    """Claims ε = 1 but uses scale 1/4: really ε = 4 (the audit says violated)."""
    return d + rng.laplace(0.0, 0.25, size=size)
