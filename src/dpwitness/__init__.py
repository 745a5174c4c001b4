"""dpwitness: differential privacy whose every release proves itself."""

from dpwitness.budget import Accountant
from dpwitness.errors import BudgetExceeded, ParameterError
from dpwitness.mechanisms import Laplace
from dpwitness.release import Release
from dpwitness.witness import WitnessReport, witness

__all__ = ["Accountant", "BudgetExceeded", "Laplace", "ParameterError", "Release", "WitnessReport", "witness"]
__version__ = "0.1.0"
