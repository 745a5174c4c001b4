"""Parsing: one ``SELECT`` statement's text → sqlglot's tree, or a :class:`SqlError` naming the
construct and its 1-based character position. Reads no row; needs the ``sql`` extra (sqlglot)."""

from __future__ import annotations

import re
from typing import Any

from dpwitness.common.errors import ParameterError, require

#: Longest statement accepted (characters): a parser must not be a CPU sink.
MAX_STATEMENT = 20_000


class SqlError(ParameterError):
    """A statement refused before any spend: ``construct`` at 1-based character ``position``, and why.

    The reason depends on the statement and the table's public schema only, never on the data.
    """

    def __init__(self, construct: str, position: int, reason: str) -> None:
        self.parameter = "statement"
        self.expected = reason
        self.construct = construct
        self.position = position
        ValueError.__init__(self, f"statement: {construct} at position {position}: {reason}")


def _sqlglot() -> Any:
    return require("sqlglot", "sql", "SQL statements")


def _position(node: Any, text: str) -> int:
    """1-based character position of ``node`` in the statement (its first token that sqlglot placed)."""
    starts = [n.meta["start"] for n in node.walk() if isinstance(getattr(n, "meta", None), dict) and "start" in n.meta]
    if isinstance(getattr(node, "meta", None), dict) and "start" in node.meta:
        starts.append(node.meta["start"])
    if not starts:
        return 1
    start = min(starts)
    # a function's meta marks its name; a column's its identifier: both are the construct's start
    return int(start) + 1


def _sql(node: Any) -> str:
    return str(node.sql())


def _strip_explain(statement: str) -> tuple[str, bool]:
    match = re.match(r"\s*explain\s+", statement, re.IGNORECASE)
    if match is None:
        return statement, False
    return " " * match.end() + statement[match.end() :], True  # positions stay those of the original text


def _parse(text: str) -> Any:
    sqlglot = _sqlglot()
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(text) if t is not None]
    except sqlglot.errors.ParseError as error:
        detail = error.errors[0] if error.errors else {}
        description = str(detail.get("description", "a syntax error")).split(" but got")[0]
        column = int(detail.get("col", 1) or 1)
        line = int(detail.get("line", 1) or 1)
        position = sum(len(row) + 1 for row in text.split("\n")[: line - 1]) + column
        token = str(detail.get("highlight", "")) or "the statement"
        raise SqlError(repr(token), position, f"not valid SQL ({description.lower()})") from None
    except sqlglot.errors.TokenError:
        raise SqlError("the statement", 1, "not valid SQL (an unterminated quote or comment)") from None
    if len(trees) != 1:
        raise SqlError("';'", text.find(";") + 1, "one statement at a time")
    tree = trees[0]
    if isinstance(tree, exp.SetOperation):
        raise SqlError(
            type(tree).__name__.upper(), _position(tree, text), "set operations (UNION, INTERSECT, EXCEPT) are not supported"
        )
    if not isinstance(tree, exp.Select):
        raise SqlError(type(tree).__name__.upper(), 1, "only SELECT statements are answered")
    return tree


def table_of(statement: str) -> str | None:
    """The table a statement reads (its FROM), for a service that holds several; None when it names none.
    Refuses what does not parse, like :func:`compile_statement`."""
    if not isinstance(statement, str) or not statement.strip() or len(statement) > MAX_STATEMENT:
        return None
    tree = _parse(_strip_explain(statement)[0])  # MissingPart without sqlglot
    from sqlglot import exp

    source = tree.args.get("from_") or tree.args.get("from")
    return str(source.this.name) if source is not None and isinstance(source.this, exp.Table) else None


def joined_tables(statement: str) -> tuple[str, ...]:
    """The tables a statement JOINs (beside its FROM), for a service that serves only some joins;
    () when it parses to none. Refuses what does not parse, like :func:`table_of`."""
    if not isinstance(statement, str) or not statement.strip() or len(statement) > MAX_STATEMENT:
        return ()
    tree = _parse(_strip_explain(statement)[0])
    from sqlglot import exp

    return tuple(str(j.this.name) for j in tree.args.get("joins") or () if isinstance(j.this, exp.Table))


__all__ = ["MAX_STATEMENT", "SqlError", "joined_tables", "table_of"]
