"""A session: private statistics on one table under one total budget.

Order of work for every query, so that a bad parameter or an exhausted budget costs nothing
and reads nothing:

1. resolve the request to the validated :class:`~dpwitness.query.queries.Query` (pure parameters:
   :func:`dpwitness.query.resolve.resolve`, the one door of every face);
2. plan it (:mod:`dpwitness.query.planning`): check it against the table's schema (column names
   and kinds: metadata only; whether the table or a filter's result is empty is not public, see
   docs/statistics.md), compile the engine's plan (nothing read), and calibrate the noise;
3. spend ε, atomically and durably when there is a ledger (:class:`BudgetExceeded` here);
4. only then let the engine compute the exact aggregates;
5. add noise once, with the plan's mechanisms, and compose the release (:mod:`dpwitness.session.composing`).

The pieces live by concept: the class in :mod:`dpwitness.session.session`, choosing the mechanisms
and previews in :mod:`dpwitness.session.plans` (the plan type in :mod:`dpwitness.query.planning`),
answering SQL in :mod:`dpwitness.session.sql`, composing a
release in :mod:`dpwitness.session.composing`, composite (mean, variance) releases in
:mod:`dpwitness.session.composite`, seeded streams in :mod:`dpwitness.session.streams`.
"""

from __future__ import annotations

from dpwitness.query.planning import Preview
from dpwitness.session.composite import CompositeRelease
from dpwitness.session.session import Session

__all__ = ["CompositeRelease", "Preview", "Session"]
