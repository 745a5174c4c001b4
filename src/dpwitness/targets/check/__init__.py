"""``dw.check``: check a function that calls another DP library, the way its users call it.

The function takes a Polars table and calls a covered library (diffprivlib, OpenDP, python-dp;
see :mod:`dpwitness.targets`); no glue. The check:

1. runs it with every noise call taken away (the adapters' ``"unnoised"`` mode) and lists the
   calls: site, mechanism, declared Δ, ε, δ, value before noise; on 1, 2 or 0 rows, else on the
   size the library declares or the first of 4, 8, … rows it accepts; then finds the sizes where
   the calls change with the number of rows (bisection: :mod:`~dpwitness.targets.check.reach`);
2. gives each call with a declared Δ a grey-box sensitivity search against that Δ: the
   Hypothesis search of small adversarial tables (:func:`search_claims`), then the large
   structured tables of :mod:`dpwitness.witness.structured` (binade edges, half-ulp fractions,
   sizes up to the library's limit). A changed number, order or declared (Δ, ε, δ) of noise calls
   between two neighbours is itself a finding;
3. runs the black-box audit (:func:`dpwitness.audit`) on the worst pair, with the float test
   when the outputs are floats.

Verdicts: ``"violated"`` (a finding: a proof, exact for a shift beyond Δ or a changed noise
call, at the stated confidence for the audit), ``"ok"`` (no finding and the audit says ok),
``"inconclusive"``, ``"unsupported"`` (no pair inside the library's contract was found),
``"adapter-error"`` (an adapter failed, e.g. an exception raised by its hook: never reported
as the library's bug) and ``"not-covered"`` (the function ran without calling a covered
library's noise: nothing to judge). Only the adapters of libraries the function imports are
installed (those imported when the check starts, and any the function imports while it runs).
An exception on a table is sorted by whose code raised it (:func:`~dpwitness.targets.hooks.raised_by`):
the library's (outside its contract), the user's function's (named with its type and line) or
dpwitness's own (``adapter-error``).

The package by job: :mod:`~dpwitness.targets.check.report` (findings, the report, verdicts),
:mod:`~dpwitness.targets.check.probe` (the unnoised runs and their noise calls),
:mod:`~dpwitness.targets.check.reach` (the sizes the library accepts and where the calls change),
:mod:`~dpwitness.targets.check.blackbox` (the audit of the worst pair),
:mod:`~dpwitness.targets.check.script` (reproduction scripts) and
:mod:`~dpwitness.targets.check.run` (the check itself).
"""

from dpwitness.targets.check.report import EXIT_CODES, VERDICTS, CheckReport, Finding
from dpwitness.targets.check.run import check
from dpwitness.targets.check.script import ScriptEvent, audit_script, repro_script, script_event

__all__ = [
    "EXIT_CODES",
    "VERDICTS",
    "CheckReport",
    "Finding",
    "ScriptEvent",
    "audit_script",
    "check",
    "repro_script",
    "script_event",
]
