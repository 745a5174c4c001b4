"""A session over its table privately joined with another private table (:class:`PrivateJoin`).

The one place a :class:`~dpwitness.query.resolve.PrivateJoin` becomes rows: ``Session.ask``,
``Session.ask_all`` and ``Session.sql`` (hence the CLI's ``sql --private``) all run over
:func:`joined`'s view, whose ``_join_bound`` ``Session._plan`` checks against each query's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpwitness.common.errors import ParameterError
from dpwitness.privacy.neighbours import PrivateJoinBound
from dpwitness.query.queries import Query
from dpwitness.query.resolve import PrivateJoin, Request
from dpwitness.session.streams import selection_key

if TYPE_CHECKING:
    from dpwitness.session.session import Session

#: The seeded stream that keys a private join's truncation (spawn key word: "join").
JOIN_STREAM = 0x6A6F696E


def joined(session: Session, join: PrivateJoin | None) -> Session:
    """``session`` over its table privately joined with ``join.table`` (None: ``session`` itself).

    The truncation's selection key is fresh for each call (seeded: from the session's seed and
    its number of spends). Opening the other table reads its metadata only; nothing is spent or
    read here.

    :param session: the session whose table is the join's left side.
    :param join: the join (its table, key columns and bounds), or None.
    """
    if join is None:
        return session
    from dpwitness.engines.joins import join_private

    unit = session.privacy_unit
    if unit is None:
        raise ParameterError("privacy_unit", "the column that identifies a unit in both tables of a private join", None)
    bound = join.bound(session.max_contributions)
    right = session.engine.open(join.table, dtypes=join.dtypes)
    seed = session.seed
    stream = None if seed is None else np.random.SeedSequence(seed, spawn_key=(JOIN_STREAM, len(session.history)))
    key = selection_key(stream)

    def derive(engine: Any, handle: Any) -> Any:
        return join_private(engine, handle, right, bound, unit=unit, name=join.name, key=key)

    view = session.over(derive)
    view._join_bound = bound
    return view


def joined_all(session: Session, requests: Sequence[Request]) -> Session:
    """The view ``Session.ask_all`` runs ``requests`` on: :func:`joined` with their one shared join.

    :param session: the session asked.
    :param requests: the requests, all with the same ``join`` (or all without).
    """
    joins = {id(r.join): r.join for r in requests}
    if len(joins) > 1:
        raise ParameterError("join", "one join shared by every request of ask_all (or none)", len(joins))
    return joined(session, requests[0].join) if requests else session


def check_joined(query: Query, bound: PrivateJoinBound | None) -> None:
    """Refuse ``query`` unless it runs over the rows of its own private join (a join's Δ holds only
    over its truncated, joined rows; ``bound`` is the session's, None when its rows are not joined).

    :param query: the query to run.
    :param bound: the join bound of the session (view) it runs on.
    """
    if query.private_join != bound:
        expected = "a private join's query runs through Session.ask(Request(..., join=…)) or Session.sql"
        raise ParameterError("join", expected, query.label)


__all__ = ["JOIN_STREAM", "check_joined", "joined", "joined_all"]
