"""dpwitness: differential privacy whose every release proves itself."""

from dpwitness.budget import Accountant
from dpwitness.errors import BudgetExceeded, ParameterError
from dpwitness.mechanisms import Laplace
from dpwitness.release import Release
from dpwitness.session import Session
from dpwitness.witness import AuditResult, WitnessReport, audit, witness

__all__ = [
    "Accountant",
    "AuditResult",
    "BudgetExceeded",
    "Laplace",
    "ParameterError",
    "Release",
    "Session",
    "WitnessReport",
    "audit",
    "witness",
]
__version__ = "0.1.0"
