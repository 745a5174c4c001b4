"""The black-box auditor: a one-sided, confidence-bounded lower bound on a mechanism's ε.

Method (StatDP / DP-Sniper style, with held-apart samples):

1. run ``mechanism(d, rng)`` and ``mechanism(d', rng)`` n times each (one vectorised call
   ``mechanism(data, rng, size=n)`` when the callable accepts ``size``); outputs of any shape
   (numbers, booleans, strings, None, tuples and lists of varying length, nested) become rows
   of numbers (see :class:`Encoder`);
2. on a *search* part of the samples, pick in each event family (see
   :mod:`dpwitness.witness.events`: thresholds, intervals, values, point masses, projections…)
   the event and direction whose projected lower bound is largest;
3. count how often the chosen events occur on *fresh* samples and turn the counts into
   ε_lb = ln(p₁_lower − δ) − ln(p₂_upper) with Clopper–Pearson bounds, Bonferroni-corrected
   over every event measured and every round run, so that P(ε_lb > true ε) ≤ 1 − confidence.

Without ``samples`` the audit is adaptive: rounds of 4× more samples until a violation is
certain, the evidence is tight enough to call "ok", or the time or sample cap is reached.

Verdicts: "violated" (ε_lb > claimed ε at the stated confidence: a proof of a bug, up to the
confidence level), "ok" (no violation; the most revealing event found is measured precisely
enough that its loss is at most ε·(1 + tolerance); and every event family searched has
*power*: an event of the family with loss above ε·(1 + tolerance) and probability at least
the stated ``power`` would have been certified as a violation — evidence, never a proof) and
"inconclusive" (anything else, said honestly). ``tight=True`` keeps sampling after the fast
verdict to maximise the certified ε_lb within the time budget. The default audit judges
outputs as real numbers; ``float_test=True`` adds bit-pattern events that expose porous
floating-point supports (Mironov 2012).

The package by job: :mod:`~dpwitness.witness.audit.result` (what an audit found),
:mod:`~dpwitness.witness.audit.encode` (outputs as rows of numbers),
:mod:`~dpwitness.witness.audit.sample` (drawing runs, worker processes, the CPU budget),
:mod:`~dpwitness.witness.audit.decide` (bounds and verdicts), :mod:`~dpwitness.witness.audit.tight`
(the tight mode) and :mod:`~dpwitness.witness.audit.run` (the audit loop).
"""

from dpwitness.common.encoding import json_number
from dpwitness.witness.audit.decide import agree_with_bounds
from dpwitness.witness.audit.encode import Encoder
from dpwitness.witness.audit.result import AuditResult, MechanismError
from dpwitness.witness.audit.run import audit, audit_laplace
from dpwitness.witness.audit.sample import Mechanism, Sampler, accepts_size

__all__ = [
    "AuditResult",
    "Encoder",
    "Mechanism",
    "MechanismError",
    "Sampler",
    "accepts_size",
    "agree_with_bounds",
    "audit",
    "audit_laplace",
    "json_number",
]
