"""Adapters to other DP libraries: hooks on their noise primitives, and each library's contract.

``with recording(mode="unnoised") as recorder: fn(table)`` runs a user's function with every
covered library's noise taken away and lists its noise calls (:class:`NoiseCall`: site,
mechanism, declared Δ, ε, δ, the value before noise). :func:`dpwitness.check` builds the
sensitivity search and the audit on it. Covered: diffprivlib, OpenDP, python-dp, PipelineDP, SmartNoise SQL and Synth (see
docs/targets.md for what each hook sees and each library's contract); noise any other library
draws from ``numpy.random`` or ``random`` itself is seen by :mod:`~dpwitness.targets.numpy_random`. An adapter of your own
(for a library of your own) subclasses :class:`Adapter` and calls :func:`register`.
"""

from dpwitness.targets import diffprivlib as _diffprivlib  # noqa: F401 (registers the adapter)
from dpwitness.targets import numpy_random as _numpy_random  # noqa: F401
from dpwitness.targets import opendp as _opendp  # noqa: F401
from dpwitness.targets import opendp_polars as _opendp_polars  # noqa: F401
from dpwitness.targets import pipeline_dp as _pipeline_dp  # noqa: F401
from dpwitness.targets import python_dp as _python_dp  # noqa: F401
from dpwitness.targets import smartnoise as _smartnoise  # noqa: F401
from dpwitness.targets import smartnoise_synth as _smartnoise_synth  # noqa: F401
from dpwitness.targets.hooks import (
    MODES,
    Adapter,
    AdapterError,
    NoiseCall,
    Recorder,
    Unsupported,
    active,
    available_adapters,
    noise_call,
    recording,
    register,
    registered,
)

__all__ = [
    "MODES",
    "Adapter",
    "AdapterError",
    "NoiseCall",
    "Recorder",
    "Unsupported",
    "active",
    "available_adapters",
    "noise_call",
    "recording",
    "register",
    "registered",
]
