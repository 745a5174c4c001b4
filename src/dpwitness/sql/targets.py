"""Target errors in SQL: ``WITHIN(aggregate, error)`` (``WITHIN(AVG(…), error, min_rows)`` for a
mean) asks for the smallest ε giving the aggregate that half-width at confidence 1 − α, under
``EXPLAIN`` (nothing is spent). A function call, like ``EPSILON(aggregate, ε)``, so that sqlglot
parses it unchanged (``COUNT(*) WITHIN 10`` is not SQL it can parse).

The compiler checks here, from the statement and the public schema alone, what the planner needs
(every aggregate with a target, a count, sum or mean, declared keys, a mean's public row bound);
the session solves the plan with :meth:`dpwitness.session.Session.plan` (the same solver as
``dpwitness plan``), from each aggregate's :class:`~dpwitness.query.resolve.Request`.
"""

from __future__ import annotations

from typing import Any, NoReturn

#: The aggregates a target error can be planned for (SQL kind → statistic).
PLANNED_KINDS = ("count", "sum", "avg")

_FORM = "WITHIN(aggregate, error), or WITHIN(AVG(…), error, min_rows) for a mean"


class TargetTranslation:
    """``WITHIN(…)`` calls of a statement → (error, min_rows) per aggregate call (mixed into the compiler)."""

    exp: Any
    by: tuple[str, ...]
    join: Any
    cases: dict[str, Any]

    def refuse(self, node: Any, construct: str, reason: str) -> NoReturn:
        raise NotImplementedError  # the compiler's

    def _text(self, node: Any) -> str:
        raise NotImplementedError  # the compiler's

    def _number(self, node: Any, what: str) -> float:
        raise NotImplementedError  # the compiler's

    def _is_aggregate(self, node: Any) -> bool:
        raise NotImplementedError  # the compiler's

    def _is_within(self, node: Any) -> bool:
        return isinstance(node, self.exp.Anonymous) and str(node.name).upper() == "WITHIN"

    def _within_call(self, node: Any) -> Any:
        """The aggregate inside ``WITHIN(…)``, checked to be one aggregate with no ``EPSILON`` (the plan solves ε)."""
        arguments = node.expressions
        if not 2 <= len(arguments) <= 3 or not self._is_aggregate(arguments[0]):
            self.refuse(node, self._text(node), f"{_FORM}: one aggregate and the half-width it needs")
        inner = arguments[0]
        if isinstance(inner, self.exp.Anonymous) and str(inner.name).upper() in ("EPSILON", "WITHIN"):
            self.refuse(inner, self._text(inner), f"{_FORM}: no EPSILON or WITHIN inside it (the plan solves the ε)")
        return inner

    def _target(self, node: Any, kind: str, distinct: bool) -> tuple[float, int | None]:
        """(error, min_rows) of one ``WITHIN(…)`` call on an aggregate of ``kind``."""
        text = self._text(node)
        if kind not in PLANNED_KINDS:
            self.refuse(node, text, "a target error for COUNT, SUM or AVG (a quantile's or variance's error is not planned)")
        if distinct:
            self.refuse(node, text, "a target error for COUNT(*), COUNT(col), SUM or AVG (COUNT(DISTINCT unit) is not planned)")
        error = self._number(node.expressions[1], "WITHIN's error")
        if not error > 0:
            self.refuse(
                node.expressions[1], self._text(node.expressions[1]), "WITHIN's error: a number > 0 (the half-width wanted)"
            )
        if kind != "avg":
            if len(node.expressions) == 3:
                self.refuse(node.expressions[2], text, "WITHIN's min_rows only for AVG (only a mean's error depends on n)")
            return error, None
        if len(node.expressions) != 3:
            self.refuse(node, text, "WITHIN(AVG(…), error, min_rows): a public lower bound on the rows the mean averages")
        rows = self._number(node.expressions[2], "WITHIN's min_rows")
        if rows < 1 or rows != int(rows):
            self.refuse(node.expressions[2], self._text(node.expressions[2]), "WITHIN's min_rows: a whole number ≥ 1")
        return error, int(rows)

    def _targets(self, calls: list[tuple[int, Any, Any]], keys: Any) -> dict[int, tuple[float, int | None]]:
        """Each call's target (index → (error, min_rows)); empty when the statement has no ``WITHIN``.

        :param calls: (index, node, (kind, column, bounds, q, ε, distinct)) of each aggregate call.
        :param keys: the statement's declared keys (None: none, or undeclared).
        """
        within = [(index, node, info) for index, node, info in calls if self._is_within(node)]
        if not within:
            return {}
        for _, node, _ in calls:
            if not self._is_within(node):
                self.refuse(node, self._text(node), "WITHIN(…) on every aggregate or on none (the plan solves the statement's ε)")
        first = within[0][1]
        if self.join is not None:
            self.refuse(first, self._text(first), "a target error on a JOIN is not planned yet (EXPLAIN at a given ε instead)")
        if self.cases:
            self.refuse(
                first, self._text(first), "a target error with GROUP BY CASE is not planned yet (EXPLAIN at a given ε instead)"
            )
        if self.by and keys is None:
            self.refuse(
                first,
                self._text(first),
                "a target error with GROUP BY needs declared keys (WHERE col IN (…) or the schema's categories)",
            )
        return {index: self._target(node, info[0], info[5]) for index, node, info in within}


__all__ = ["PLANNED_KINDS", "TargetTranslation"]
