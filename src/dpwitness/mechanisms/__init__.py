"""Mechanisms: the calibrated Laplace and Gaussian mechanisms, the quantile mechanism, and the
release they produce (value, interval, privacy statement, report).

Imports the noise and privacy layers only; a release's witness is attached from the witness side.
"""

from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.mechanisms.release import Release

__all__ = ["Gaussian", "Laplace", "Release"]
