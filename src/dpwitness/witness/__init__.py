"""The blue team: check a mechanism's claim analytically and audit it as a black box."""

from dpwitness.witness.analytic import WitnessReport, witness
from dpwitness.witness.audit import AuditResult, MechanismError, audit

__all__ = ["AuditResult", "MechanismError", "WitnessReport", "audit", "witness"]
