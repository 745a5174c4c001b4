"""The blue team: check a mechanism's claim analytically and audit it as a black box."""

from dpwitness.witness.analytic import WitnessReport, witness

__all__ = ["WitnessReport", "witness"]
