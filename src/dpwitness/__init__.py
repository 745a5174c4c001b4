"""dpwitness: differential privacy whose every release proves itself."""

from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.io.schema import Schema
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.mechanisms.release import Release
from dpwitness.privacy.budget import Accountant
from dpwitness.session import Session
from dpwitness.targets.check import check
from dpwitness.witness import AuditResult, SensitivityResult, WitnessReport, audit, sensitivity_search, witness

__all__ = [
    "Accountant",
    "AuditResult",
    "BudgetExceeded",
    "Gaussian",
    "Laplace",
    "ParameterError",
    "Release",
    "Schema",
    "SensitivityResult",
    "Session",
    "WitnessReport",
    "audit",
    "check",
    "sensitivity_search",
    "witness",
]
__version__ = "0.1.0"
