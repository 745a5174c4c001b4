"""``CASE`` in ``GROUP BY``: a row's key computed from one column of that row, mapping to literal
categories that the statement itself declares (the THEN and ELSE values).

``GROUP BY CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END``
(or ``CASE col WHEN v THEN … ELSE … END``) becomes a derived column
(:class:`dpwitness.engines.derived.CaseColumn`) that each engine computes with the filter
language's own compilers, grouped by with the CASE's literals as declared keys: no key is read
from the data, and every row has one (the ELSE is required), so Δ is that of a grouping by a
column with declared keys. Each WHEN is a ``WHERE``-style condition on the one column.
"""

from __future__ import annotations

from typing import Any, NoReturn

from dpwitness.common.errors import ParameterError
from dpwitness.engines.derived import CaseColumn
from dpwitness.io.schema import ColumnKind
from dpwitness.query.predicates import Literal, Node, parse, to_text
from dpwitness.query.queries import Schema


class CaseTranslation:
    """The CASE half of the statement compiler (:class:`dpwitness.sql.compile.Compiler`)."""

    exp: Any
    tree: Any
    schema: Schema
    public_kinds: dict[str, ColumnKind]
    cases: dict[str, CaseColumn]
    case_names: dict[str, str]  # the CASE's SQL text → its derived column

    def refuse(self, node: Any, construct: str, reason: str) -> NoReturn:
        raise NotImplementedError

    def _text(self, node: Any) -> str:
        raise NotImplementedError

    def _literal(self, node: Any, what: str) -> Literal:
        raise NotImplementedError

    def _predicate(self, node: Any) -> Node:
        raise NotImplementedError

    def kind(self, name: str) -> ColumnKind:
        raise NotImplementedError

    def _selected_case(self, node: Any) -> Any:
        """The CASE a ``GROUP BY`` item means: the item itself, or the SELECT's CASE it names by alias."""
        exp = self.exp
        if isinstance(node, exp.Case):
            return node
        if isinstance(node, exp.Column) and not node.table:
            known = {c.lower() for c in (*self.schema.columns, *self.public_kinds)}
            if node.name.lower() in known:
                return None
            for item in self.tree.expressions:
                if isinstance(item, exp.Alias) and item.alias.lower() == node.name.lower() and isinstance(item.this, exp.Case):
                    return item.this
        return None

    def _alias_of(self, case: Any) -> str | None:
        exp, text = self.exp, self._text(case)
        for item in self.tree.expressions:
            if isinstance(item, exp.Alias) and isinstance(item.this, exp.Case) and self._text(item.this) == text:
                return str(item.alias)
        return None

    def _case(self, node: Any) -> str:
        """The derived column of a ``CASE`` in ``GROUP BY`` (added to :attr:`cases`); refusals name the CASE."""
        exp = self.exp
        text = self._text(node)
        if text in self.case_names:
            return self.case_names[text]
        construct = f"GROUP BY {text}"
        default = node.args.get("default")
        if default is None or isinstance(default, exp.Null):
            self.refuse(
                node,
                construct,
                "a CASE in GROUP BY needs an ELSE literal (without it a row that matches no WHEN has a NULL key)",
            )
        subject = node.this
        branches: list[tuple[str, Literal]] = []
        columns: set[str] = set()
        for branch in node.args.get("ifs") or []:
            condition = branch.this if subject is None else exp.EQ(this=subject.copy(), expression=branch.this.copy())
            if subject is not None and not isinstance(subject, exp.Column):
                self.refuse(subject, construct, "CASE column WHEN value …: the CASE tests one column")
            tree = self._predicate(condition)
            predicate_text = to_text(tree)
            predicate = parse(predicate_text)
            columns.update(predicate.columns)
            branches.append((predicate_text, self._case_value(branch.args.get("true"), construct)))
        otherwise = self._case_value(default, construct)
        if len(columns) != 1:
            self.refuse(node, construct, "the WHEN conditions of a CASE in GROUP BY test one and the same column")
        (source,) = columns
        if not self.kind(source).keyable:
            kind = self.kind(source).value
            self.refuse(node, construct, f"a column every engine can read ({source!r} is {kind}: declare its type)")
        combined = parse(" or ".join(f"({t})" for t, _ in branches))
        try:
            combined.check({source: self.kind(source)})
        except ParameterError as error:
            self.refuse(node, construct, f"each WHEN a condition of the filter language: {error.expected}")
        if self.kind(source) is ColumnKind.UNTYPED and combined.compared_with_numbers:
            self.refuse(node, construct, f"{source!r} is untyped CSV text compared with a number: declare its type")
        values = [value for _, value in branches] + [otherwise]
        kinds = {_kind(v) for v in values}
        if len(kinds) > 1:
            kinds = {ColumnKind.FLOAT} if kinds == {ColumnKind.INTEGER, ColumnKind.FLOAT} else kinds
        if len(kinds) > 1:
            self.refuse(node, construct, "THEN and ELSE values of one type (all text, all numbers or all booleans)")
        (kind,) = kinds
        if kind is ColumnKind.FLOAT:
            values = [float(v) for v in values]
        name = self._case_name(self._alias_of(node))
        case = CaseColumn(name, tuple((t, v) for (t, _), v in zip(branches, values, strict=False)), values[-1], kind)
        self.cases[name] = case
        self.case_names[text] = name
        return name

    def _case_value(self, node: Any, construct: str) -> Literal:
        exp = self.exp
        if node is None or isinstance(node, exp.Null):
            self.refuse(node if node is not None else self.tree, construct, "each THEN and the ELSE is a literal, not NULL")
        if isinstance(node, exp.Column):
            self.refuse(node, construct, "each THEN and the ELSE is a literal category (a number, 'text', TRUE or FALSE)")
        return self._literal(node, "a CASE's THEN and ELSE")

    def _case_name(self, alias: str | None) -> str:
        """The derived column's name: the SELECT's alias, else ``case_N``; never a name the rows already have."""
        taken = {c.lower() for c in (*self.schema.columns, *self.public_kinds, *self.cases)}
        name = alias or f"case_{len(self.cases) + 1}"
        while name.lower() in taken:
            name += "_"
        return name


def _kind(value: Literal) -> ColumnKind:
    if isinstance(value, bool):
        return ColumnKind.BOOLEAN
    if isinstance(value, int):
        return ColumnKind.INTEGER
    if isinstance(value, float):
        return ColumnKind.FLOAT
    return ColumnKind.STRING


__all__ = ["CaseTranslation"]
