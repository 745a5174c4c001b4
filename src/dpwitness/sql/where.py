"""``WHERE`` → the parsed predicate tree of :mod:`dpwitness.query.predicates` (which both
engines compile): comparisons of one column with one literal, IN, BETWEEN, IS [NOT] NULL, LIKE,
AND/OR/NOT. Anything else is a :class:`~dpwitness.sql.parse.SqlError` before any spend."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NoReturn

from dpwitness.query.predicates import And, Between, ColumnRef, Compare, In, IsNull, Like, Literal, Node, Not, Or
from dpwitness.sql.parse import _position

#: sqlglot's comparison nodes → the predicate tree's operators, and each mirrored (literal first).
COMPARISONS = {"EQ": "==", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class WhereTranslation:
    """The WHERE half of the statement compiler (:class:`dpwitness.sql.compile.Compiler`), which
    supplies the parsed tree's module, the text, the column lookup and the refusals."""

    exp: Any
    text: str

    def refuse(self, node: Any, construct: str, reason: str) -> NoReturn:
        raise NotImplementedError

    def _text(self, node: Any) -> str:
        raise NotImplementedError

    def column(self, node: Any) -> str:
        raise NotImplementedError

    def _literal(self, node: Any, what: str) -> Literal:
        raise NotImplementedError

    def _is_aggregate(self, node: Any) -> bool:
        raise NotImplementedError

    def _predicate(self, node: Any) -> Node:
        exp = self.exp
        at = _position(node, self.text)
        if isinstance(node, exp.Paren):
            return self._predicate(node.this)
        if isinstance(node, exp.And | exp.Or):
            items: list[Node] = []
            kind = And if isinstance(node, exp.And) else Or
            for side in (node.this, node.expression):
                inner = self._predicate(side)
                items.extend(inner.items if isinstance(inner, kind) else (inner,))
            return kind(tuple(items))
        if isinstance(node, exp.Not):
            inner = self._predicate(node.this)
            if isinstance(inner, IsNull | In | Between | Like) and not inner.negated:
                return replace(inner, negated=True)
            return Not(inner, at)
        for inner in node.walk():
            if self._is_aggregate(inner):
                self.refuse(inner, self._text(inner), "an aggregate in WHERE (filter released values with HAVING)")
        if node.args.get("negate") and not isinstance(node, exp.Like | exp.ILike):
            self.refuse(node, self._text(node), "not a supported condition (a negation the translation does not know)")
        name = type(node).__name__
        if name in COMPARISONS:
            left, right = node.this, node.expression
            op = COMPARISONS[name]
            if isinstance(left, exp.Column) and not isinstance(right, exp.Column):
                return Compare(self._ref(left), op, self._literal(right, "WHERE"), at)
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                return Compare(self._ref(right), _FLIP[op], self._literal(left, "WHERE"), at)
            for side in (left, right):
                if not isinstance(side, exp.Column | exp.Literal | exp.Boolean | exp.Neg | exp.Null | exp.Paren):
                    self.refuse(side, self._text(side), "WHERE compares a column with a literal (no functions or expressions)")
            self.refuse(node, self._text(node), "WHERE compares one column with one literal")
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                self.refuse(node.args["query"], "a subquery", "subqueries over private rows are not supported")
            if not isinstance(node.this, exp.Column):
                self.refuse(node, self._text(node), "IN tests a column")
            return In(self._ref(node.this), tuple(self._literal(v, "IN") for v in node.expressions), False, at)
        if isinstance(node, exp.Between):
            if not isinstance(node.this, exp.Column):
                self.refuse(node, self._text(node), "BETWEEN tests a column")
            return Between(
                self._ref(node.this),
                self._literal(node.args["low"], "BETWEEN"),
                self._literal(node.args["high"], "BETWEEN"),
                False,
                at,
            )
        if isinstance(node, exp.Is):
            if not isinstance(node.this, exp.Column) or not isinstance(node.expression, exp.Null):
                self.refuse(node, self._text(node), "IS [NOT] NULL on a column")
            return IsNull(self._ref(node.this), False, at)
        if isinstance(node, exp.ILike):
            self.refuse(node, "ILIKE", "case-insensitive patterns are not supported (LIKE is case-sensitive)")
        if isinstance(node, exp.Escape):
            self.refuse(node, "LIKE … ESCAPE", "no escape character in a LIKE pattern (the engines' escapes differ)")
        if isinstance(node, exp.Like):
            pattern = node.expression
            if not isinstance(node.this, exp.Column) or not (isinstance(pattern, exp.Literal) and pattern.is_string):
                self.refuse(node, self._text(node), "LIKE tests a column against a 'pattern' in quotes")
            if "\\" in pattern.this:
                self.refuse(pattern, self._text(pattern), "no backslash in a LIKE pattern (no escape character)")
            return Like(self._ref(node.this), str(pattern.this), bool(node.args.get("negate")), at)  # NOT LIKE
        if isinstance(node, exp.Column):
            self.refuse(node, self._text(node), "a bare column is not a condition: compare it (col = TRUE)")
        self.refuse(node, self._text(node), "not a supported condition (AND/OR/NOT, comparisons, IN, BETWEEN, IS [NOT] NULL)")

    def _ref(self, node: Any) -> ColumnRef:
        name = self.column(node)
        return ColumnRef(name, _position(node, self.text))


__all__ = ["COMPARISONS", "WhereTranslation"]
