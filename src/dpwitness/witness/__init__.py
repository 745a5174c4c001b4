"""The blue team: check a mechanism's claim analytically and audit it as a black box."""

from dpwitness.mechanisms.release import register_judge
from dpwitness.witness.analytic import WitnessReport, compose, witness
from dpwitness.witness.audit import AuditResult, MechanismError, audit, audit_laplace
from dpwitness.witness.sensitivity import SensitivityResult, sensitivity_search

# Release.witness() and Release.audit() find their judges here: the release never imports the witness.
register_judge("witness", witness)
register_judge("audit", audit_laplace)
register_judge("compose", compose)

__all__ = ["AuditResult", "MechanismError", "SensitivityResult", "WitnessReport", "audit", "sensitivity_search", "witness"]
