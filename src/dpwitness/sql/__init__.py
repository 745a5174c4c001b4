"""SQL: a thin, exact front-end that compiles one ``SELECT`` statement to the library's own
:class:`~dpwitness.query.queries.Query` descriptions: no second Δ derivation, no second filter compiler,
no engine of its own (see docs/sql.md for the grammar and what is refused, and why).

A statement is parsed by sqlglot (:mod:`dpwitness.sql.parse`); each release becomes one
:class:`~dpwitness.query.resolve.Request`, resolved by the caller's resolver to one ``Query`` (its Δ
derived in :mod:`dpwitness.query.queries` / :mod:`dpwitness.privacy.neighbours`;
:mod:`dpwitness.sql.compile`); ``WHERE`` is translated to the parsed predicate tree of
:mod:`dpwitness.query.predicates` (:mod:`dpwitness.sql.where`), which both engines compile;
``GROUP BY`` becomes ``by`` with declared keys (from a top-level ``col IN (…)``, a public table or
the schema's categories, or a ``CASE``'s literals: :mod:`dpwitness.sql.case`) or keys released by the
first aggregate under the undeclared-key rule (δ, ``max_rows``) and reused by the others. Arithmetic
on aggregates, the scalar functions of :mod:`dpwitness.sql.functions`, ``HAVING``, ``ORDER BY``,
``LIMIT`` and ``ROUND`` are post-processing of the released values (no privacy cost;
:mod:`dpwitness.sql.answer`).

Everything is checked before anything is spent, from the statement and the table's public
schema alone; a refusal is a :class:`SqlError` naming the construct and its character position.
Compiling reads no row and spends nothing: :func:`compile_statement` is pure. This package never
imports the session: running a statement is :meth:`dpwitness.session.Session.sql`
(:mod:`dpwitness.session.sql`).
"""

from __future__ import annotations

from dpwitness.sql.answer import Answer, Cell, Explanation
from dpwitness.sql.compile import compile_statement, table_name
from dpwitness.sql.parse import MAX_STATEMENT, SqlError, joined_tables, table_of
from dpwitness.sql.statement import Aggregate, Statement

__all__ = [
    "MAX_STATEMENT",
    "Aggregate",
    "Answer",
    "Cell",
    "Explanation",
    "SqlError",
    "Statement",
    "compile_statement",
    "joined_tables",
    "table_name",
    "table_of",
]
