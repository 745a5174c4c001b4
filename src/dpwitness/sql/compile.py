"""Compiling: a parsed statement → one :class:`~dpwitness.query.resolve.Request` per release,
resolved by the caller's resolver to the one :class:`~dpwitness.query.queries.Query` (no second
Δ derivation, no second filter compiler, no engine), plus the post-processing of the released
values. Pure: reads the table's public schema only; never imports the session."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NoReturn

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_positive_finite
from dpwitness.engines.derived import CaseColumn
from dpwitness.engines.joins import PublicTable, read_public
from dpwitness.query.predicates import And, Compare, In, Literal, Node, to_text
from dpwitness.query.queries import ColumnKind, Key, Query, Schema
from dpwitness.query.resolve import PrivateJoin, Request
from dpwitness.sql.case import CaseTranslation
from dpwitness.sql.functions import FUNCTIONS
from dpwitness.sql.joining import JoinTranslation
from dpwitness.sql.parse import MAX_STATEMENT, SqlError, _parse, _position, _sql, _strip_explain
from dpwitness.sql.statement import Aggregate, Statement
from dpwitness.sql.targets import TargetTranslation
from dpwitness.sql.where import COMPARISONS, WhereTranslation

_AGGREGATE_NAMES = (
    "COUNT(*), COUNT(col), COUNT(DISTINCT unit), SUM, AVG, VAR/VARIANCE/VAR_POP, STDDEV/STDDEV_POP, "
    "MEDIAN, PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY col), MIN, MAX"
)
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def compile_statement(
    statement: str,
    *,
    table: str,
    schema: Schema,
    epsilon: float | None,
    resolve: Callable[[Request], Query],
    declared: Schema | None = None,
    privacy_unit: str | None = None,
    public: Mapping[str, Any] | None = None,
    private: Mapping[str, tuple[Any, Schema]] | None = None,
    max_rows_per_key: Any = None,
    max_rows_per_unit: Any = None,
) -> Statement:
    """Compile ``statement`` against ``table`` (its public ``schema``) to a :class:`Statement`.

    ``resolve`` turns each release's :class:`~dpwitness.query.resolve.Request` into one
    :class:`Query` under the caller's relation and privacy unit (``Session.resolve``: the one door);
    ``declared`` is the data owner's declared schema (its bounds and categories), if any;
    ``public`` the public tables a JOIN may name (name → Polars DataFrame or CSV/Parquet path).
    ``epsilon`` is the statement's total ε, split evenly over the aggregates without an
    ``EPSILON(aggregate, ε)`` of their own; None only when every aggregate has one.
    ``privacy_unit`` is the caller's privacy-unit column (None: none; only then is
    ``COUNT(DISTINCT unit)`` refused). ``private`` names the other private tables a JOIN may name
    (name → (table, its schema)), with the truncation bounds ``max_rows_per_key`` (required for a
    private JOIN) and ``max_rows_per_unit`` (:class:`~dpwitness.query.resolve.PrivateJoin`).
    Raises :class:`SqlError` (or ``ParameterError``)
    before anything is spent.
    """
    if not isinstance(statement, str) or not statement.strip():
        raise ParameterError("statement", "a SQL SELECT statement, e.g. 'SELECT COUNT(*) FROM t WHERE age < 20'", statement)
    if len(statement) > MAX_STATEMENT:
        raise ParameterError("statement", f"at most {MAX_STATEMENT} characters", f"{len(statement)} characters")
    text, explain = _strip_explain(statement)
    tree = _parse(text)
    tables = {str(k): read_public(v, str(k)) for k, v in (public or {}).items()}
    compiler = Compiler(text, tree, table, schema, epsilon, resolve, privacy_unit, declared, explain)
    compiler.public_tables = tables
    compiler.private_tables = dict(private or {})
    compiler.join_bounds = (max_rows_per_key, max_rows_per_unit)
    return compiler.compile()


_STATISTICS = {
    "count": "count",
    "sum": "sum",
    "avg": "mean",
    "variance": "variance",
    "stddev": "variance",
    "quantile": "quantile",
}
_ARITHMETIC = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


class Compiler(WhereTranslation, CaseTranslation, JoinTranslation, TargetTranslation):
    """One statement against one table's public schema → a :class:`Statement` (see :func:`compile_statement`)."""

    def __init__(
        self,
        text: str,
        tree: Any,
        table: str,
        schema: Schema,
        epsilon: float | None,
        resolve: Callable[[Request], Query],
        privacy_unit: str | None,
        declared: Schema | None,
        explain: bool,
    ) -> None:
        from sqlglot import exp

        self.exp = exp
        self.text = text
        self.tree = tree
        self.table = table
        self.schema = schema
        self.epsilon = epsilon
        self.resolve = resolve
        self.privacy_unit = privacy_unit
        self.declared = declared
        self.explain = explain
        self.aliases: set[str] = {table.lower()}
        self._texts: dict[int, tuple[Any, str]] = {}
        self.public_tables: dict[str, Any] = {}
        self.public_aliases: set[str] = set()
        self.public_columns: dict[str, str] = {}  # a public column → its name in the joined rows
        self.public_kinds: dict[str, ColumnKind] = {}  # joined name → kind
        self.join: PublicTable | None = None
        self.join_on: str | None = None
        self.public_name = ""
        self.private_tables: dict[str, tuple[Any, Schema]] = {}
        self.private_aliases: set[str] = set()
        self.private_columns: dict[str, str] = {}  # the other private table's column → its name in the joined rows
        self.left_columns: Mapping[str, ColumnKind] = schema.columns
        self.private_join: PrivateJoin | None = None
        self.join_bounds: tuple[Any, Any] = (None, None)
        self.calls: list[tuple[str, Any]] = []  # (normalised SQL, node) of each distinct aggregate call
        self.by: tuple[str, ...] = ()
        self.cases: dict[str, CaseColumn] = {}  # derived columns of GROUP BY CASE …, by name
        self.case_names: dict[str, str] = {}
        self.output_names: dict[str, Any] = {}

    def _text(self, node: Any) -> str:
        """The node as SQL (sqlglot's generator is the compile's largest cost: each node once)."""
        key = id(node)
        found = self._texts.get(key)
        if found is None or found[0] is not node:
            found = self._texts[key] = (node, _sql(node))
        return found[1]

    # -- errors --
    def refuse(self, node: Any, construct: str, reason: str) -> NoReturn:
        raise SqlError(construct, _position(node, self.text), reason)

    # -- the statement --
    def compile(self) -> Statement:
        exp, tree = self.exp, self.tree
        self._refuse_everywhere()
        self._from()
        joins = tree.args.get("joins") or []
        if len(joins) > 1:
            self.refuse(joins[1], "a second JOIN", "one JOIN with a public table per statement")
        if joins:
            self._join(joins[0])
        where = tree.args.get("where")
        predicate = None if where is None else self._predicate(where.this)
        group = tree.args.get("group")
        self.by = () if group is None else self._group(group)
        if tree.args.get("distinct") is not None:
            self.refuse(
                tree.args["distinct"],
                "SELECT DISTINCT",
                "releases the distinct values of private rows (row-level output); use GROUP BY with an aggregate",
            )
        outputs: list[tuple[str, Any]] = []
        for item in tree.expressions:
            name, node = (item.alias, item.this) if isinstance(item, exp.Alias) else (None, item)
            if isinstance(node, exp.Star):
                self.refuse(node, "SELECT *", "row-level output: select aggregates (COUNT(*), SUM(…), …) or GROUP BY columns")
            compiled = self._value(node, context="SELECT")
            label = name or (node.name if isinstance(node, exp.Column) else self._text(node))
            outputs.append((label, compiled))
            self.output_names.setdefault(label.lower(), compiled)
        if not self.calls:
            self.refuse(
                tree.expressions[0],
                "SELECT without an aggregate",
                f"row-level output: select at least one aggregate ({_AGGREGATE_NAMES})",
            )
        having = tree.args.get("having")
        having_compiled = None if having is None else self._value(having.this, context="HAVING")
        order: list[tuple[Any, bool]] = []
        if tree.args.get("order") is not None:
            for ordered in tree.args["order"].expressions:
                item = ordered.this
                if isinstance(item, exp.Literal) and not item.is_string:  # ORDER BY 2: the second output
                    place = self._integer(item, "ORDER BY's position")
                    if not 1 <= place <= len(outputs):
                        self.refuse(item, f"ORDER BY {place}", f"a position of the SELECT list (1 to {len(outputs)})")
                    order.append((outputs[place - 1][1], bool(ordered.args.get("desc"))))
                    continue
                order.append((self._value(item, context="ORDER BY"), bool(ordered.args.get("desc"))))
        limit = self._whole(tree.args.get("limit"), "LIMIT")
        offset = self._whole(tree.args.get("offset"), "OFFSET") or 0
        keys, keys_from = self._keys(predicate)
        aggregates = self._queries(predicate, keys)
        return Statement(
            text=self.text,
            table=self.table,
            by=self.by,
            keys=keys,
            keys_from=keys_from,
            aggregates=aggregates,
            outputs=tuple(outputs),
            having=having_compiled,
            order=tuple(order),
            limit=limit,
            offset=offset,
            epsilon=math.fsum(a.query.epsilon for a in aggregates),
            epsilon_note=self._epsilon_note(aggregates),
            explain=self.explain,
            notes=self._notes(outputs),
            join=self.join,
            join_on=self.join_on,
            private_join=self.private_join,
            calls=self._call_kinds(),
            cases=tuple(self.cases.values()),
        )

    def _refuse_everywhere(self) -> None:
        exp = self.exp
        for node in self.tree.walk():
            if isinstance(node, exp.Window):
                self.refuse(
                    node, f"window function {self._text(node)}", "window functions are not supported (they output per-row values)"
                )
            if isinstance(node, exp.Subquery | exp.Select) and node is not self.tree:
                self.refuse(
                    node,
                    "a subquery",
                    "subqueries over private rows are not supported (ORDER BY/LIMIT or filters before aggregation "
                    "would act on private rows)",
                )
            if isinstance(node, exp.With):
                self.refuse(node, "WITH", "common table expressions (subqueries over private rows) are not supported")
            if isinstance(node, exp.Lateral | exp.Unnest):
                self.refuse(node, type(node).__name__.upper(), "not supported")
        for name in ("joins", "laterals", "pivots", "windows", "qualify", "connect", "sample", "locks", "into", "prewhere"):
            value = self.tree.args.get(name)
            if value:
                node = value[0] if isinstance(value, list) else value
                if name == "joins":
                    continue
                self.refuse(node, name.upper().rstrip("S"), "not supported")

    def _from(self) -> None:
        exp = self.exp
        source = self.tree.args.get("from_") or self.tree.args.get("from")
        if source is None:
            self.refuse(self.tree, "SELECT without FROM", f"name the table: FROM {self.table}")
        table = source.this
        if not isinstance(table, exp.Table) or table.args.get("db") is not None:
            self.refuse(table, self._text(table), f"FROM a table of this session ({self.table})")
        if table.name.lower() != self.table.lower():
            self.refuse(table, f"table {table.name!r}", f"unknown table (this session's table is {self.table!r})")
        if table.alias:
            self.aliases.add(table.alias.lower())

    # -- columns --
    def column(self, node: Any) -> str:
        """The column a Column node names in the rows read (qualified by a table or its alias, or bare):
        the private table's, or a joined public table's (renamed when its name is taken)."""
        qualifier = node.table
        known = self.aliases | self.public_aliases | self.private_aliases
        if qualifier and qualifier.lower() not in known:
            self.refuse(node, f"{qualifier}.{node.name}", f"unknown table {qualifier!r} (this session's table is {self.table!r})")
        name = node.name
        if self.private_join is not None:
            return self._private_column(node)
        if self.join is not None and self._side(node) == "public":
            columns: Any = self.public_columns
            where = self.public_name
        else:
            columns, where = self.schema.columns, self.table
        found = name if name in columns else None
        if found is None and not node.this.quoted:
            folded = [c for c in columns if c.lower() == name.lower()]
            found = folded[0] if len(folded) == 1 else None
        if found is None:
            self.refuse(node, f"column {name!r}", f"unknown column of {where!r} ({', '.join(columns)})")
        return str(columns[found]) if columns is self.public_columns else str(found)

    def kind(self, name: str) -> ColumnKind:
        """The kind of a column of the rows read (private, joined public, or a GROUP BY CASE's)."""
        if name in self.cases:
            return self.cases[name].kind
        return self.public_kinds.get(name) or self.schema.columns[name]

    def _group(self, group: Any) -> tuple[str, ...]:
        names: list[str] = []
        for item in group.expressions:
            case = self._selected_case(item)
            if case is not None:
                names.append(self._case(case))
                continue
            if not isinstance(item, self.exp.Column):
                self.refuse(
                    item,
                    f"GROUP BY {self._text(item)}",
                    "GROUP BY takes columns or a CASE over one column (no other expressions)",
                )
            names.append(self.column(item))
        if len(set(names)) != len(names):
            self.refuse(group, "GROUP BY", "each column once")
        for extra in ("rollup", "cube", "grouping_sets"):
            if group.args.get(extra):
                self.refuse(group, f"GROUP BY {extra.upper()}", "not supported")
        return tuple(names)

    # -- values: outputs, HAVING, ORDER BY (post-processing on released values) --
    def _value(self, node: Any, *, context: str) -> Any:
        exp = self.exp
        if isinstance(node, exp.Paren):
            return self._value(node.this, context=context)
        if isinstance(node, exp.Alias):
            return self._value(node.this, context=context)
        if self._is_aggregate(node):
            return ("agg", self._call(node))
        if isinstance(node, exp.Case):
            name = self.case_names.get(self._text(node))
            if name is None:
                self.refuse(node, self._text(node), f"a CASE in {context} only as a GROUP BY expression (its categories)")
            return ("key", self.by.index(name))
        if isinstance(node, exp.Column) and context != "SELECT" and node.name in self.cases and not node.table:
            return ("key", self.by.index(node.name))
        if isinstance(node, exp.Column):
            if context != "SELECT" and not node.table and node.name.lower() in self.output_names:
                return self.output_names[node.name.lower()]
            name = self.column(node)
            if name in self.by:
                return ("key", self.by.index(name))
            if not self.by:
                self.refuse(
                    node, f"column {name!r}", f"row-level output in {context}: aggregate it (COUNT, SUM, …) or GROUP BY it"
                )
            self.refuse(
                node,
                f"column {name!r}",
                f"in {context} but not in GROUP BY ({', '.join(self.by)}): GROUP BY must cover the selected columns",
            )
        if isinstance(node, exp.Literal):
            return ("text", node.this) if node.is_string else ("num", float(node.this))
        if isinstance(node, exp.Boolean):
            return ("bool", bool(node.this))
        if isinstance(node, exp.Neg):
            return ("neg", self._value(node.this, context=context))
        if type(node).__name__ in _ARITHMETIC:
            return (
                "op",
                _ARITHMETIC[type(node).__name__],
                self._value(node.this, context=context),
                self._value(node.expression, context=context),
            )
        if isinstance(node, exp.Round):
            digits = node.args.get("decimals")
            places = 0 if digits is None else self._integer(digits, "ROUND's digits")
            return ("round", self._value(node.this, context=context), places)
        function = FUNCTIONS.get(type(node).__name__)
        if function is not None:  # a scalar function of released values: post-processing
            if function == "POWER":
                constant = node.expression.unnest() if isinstance(node.expression, exp.Paren) else node.expression
                inner = constant.this if isinstance(constant, exp.Neg) else constant
                if not isinstance(inner, exp.Literal):
                    self.refuse(node, self._text(node), "POWER(x, p) takes a constant exponent p (a number)")
                exponent = self._number(node.expression, "POWER's exponent")
                return ("fn", function, self._value(node.this, context=context), ("num", exponent))
            arguments = [node.this, *node.expressions]
            return ("fn", function, *(self._value(a, context=context) for a in arguments))
        if context == "HAVING" or context == "SELECT":
            if type(node).__name__ in COMPARISONS:
                return (
                    "cmp",
                    COMPARISONS[type(node).__name__],
                    self._value(node.this, context=context),
                    self._value(node.expression, context=context),
                )
            if isinstance(node, exp.And | exp.Or):
                return (
                    "and" if isinstance(node, exp.And) else "or",
                    self._value(node.this, context=context),
                    self._value(node.expression, context=context),
                )
            if isinstance(node, exp.Not):
                return ("not", self._value(node.this, context=context))
        self.refuse(
            node,
            self._text(node),
            f"not supported in {context} (arithmetic + − × /, ROUND, {', '.join(FUNCTIONS.values())}, comparisons, "
            "AND/OR/NOT over aggregates and GROUP BY columns)",
        )

    def _integer(self, node: Any, what: str) -> int:
        if isinstance(node, self.exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this):
            return int(node.this)
        self.refuse(node, self._text(node), f"{what} must be a whole number")

    def _whole(self, clause: Any, what: str) -> int | None:
        if clause is None:
            return None
        node = clause.args.get("expression") or clause.this
        return self._integer(node, what)

    # -- aggregates --
    def _is_aggregate(self, node: Any) -> bool:
        exp = self.exp
        if isinstance(node, exp.WithinGroup):
            return True
        if isinstance(node, exp.Anonymous):
            return str(node.name).upper() in ("EPSILON", "WITHIN", "VAR", "VARIANCE", "STDDEV", "MEDIAN", "PERCENTILE_CONT")
        return isinstance(node, exp.AggFunc)

    def _call(self, node: Any) -> int:
        key = self._text(node)
        for index, (seen, _) in enumerate(self.calls):
            if seen == key:
                return index
        call = node
        if isinstance(call, self.exp.Anonymous) and str(call.name).upper() in ("EPSILON", "WITHIN") and call.expressions:
            call = call.expressions[0]
            if isinstance(call, self.exp.Anonymous) and str(call.name).upper() in ("EPSILON", "WITHIN"):
                self.refuse(call, self._text(call), "one EPSILON or WITHIN per aggregate (WITHIN's plan solves the ε)")
        for inner in call.walk():
            if inner is call or (isinstance(call, self.exp.WithinGroup) and inner is call.this):
                continue
            if self._is_aggregate(inner):
                self.refuse(inner, f"nested aggregate {self._text(inner)}", "an aggregate inside an aggregate is not supported")
        self.calls.append((key, node))
        return len(self.calls) - 1

    def _literal(self, node: Any, what: str) -> Literal:
        exp = self.exp
        if isinstance(node, exp.Paren):
            return self._literal(node.this, what)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            value = self._literal(node.this, what)
            assert isinstance(value, int | float)
            return -value
        if isinstance(node, exp.Literal):
            if node.is_string:
                return str(node.this)
            raw = node.this
            if re.fullmatch(r"\d+", raw) and int(raw) <= 2**53:
                return int(raw)
            number = float(raw)
            if not math.isfinite(number):
                self.refuse(node, raw, f"{what}: a finite number")
            return number
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            self.refuse(node, "NULL", f"{what}: a comparison with NULL is never true; write IS NULL or IS NOT NULL")
        if isinstance(node, exp.Column):
            self.refuse(node, f"column {node.name!r}", f"{what}: a literal (a comparison of two columns is not supported)")
        self.refuse(node, self._text(node), f"{what}: a literal (a number, 'text', TRUE or FALSE)")

    def _number(self, node: Any, what: str) -> float:
        value = self._literal(node, what)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.refuse(node, self._text(node), f"{what}: a number")
        return float(value)

    def _argument(self, node: Any, call: Any, kind: str) -> tuple[str, tuple[float, float] | None]:
        """The column an aggregate reads and its bounds: ``col`` (declared bounds) or ``CLAMP(col, L, U)``."""
        exp = self.exp
        if isinstance(node, exp.Anonymous) and str(node.name).upper() == "CLAMP":
            if len(node.expressions) != 3 or not isinstance(node.expressions[0], exp.Column):
                self.refuse(node, self._text(node), "CLAMP(column, L, U): a column and two numbers")
            column = self.column(node.expressions[0])
            low = self._number(node.expressions[1], "CLAMP's lower bound")
            high = self._number(node.expressions[2], "CLAMP's upper bound")
            return column, (low, high)
        if isinstance(node, exp.Column):
            column = self.column(node)
            return column, None if self.declared is None else self.declared.bounds_for(column)
        if type(node).__name__ in FUNCTIONS:
            self.refuse(
                node,
                f"{self._text(node)} inside {self._text(call)}",
                f"{FUNCTIONS[type(node).__name__]} of row values inside an aggregate: its Δ cannot be derived "
                "(the compiler bounds no function of a row); apply it to the released aggregate instead, "
                f"e.g. {FUNCTIONS[type(node).__name__]}({self._text(call).split('(')[0]}(…))",
            )
        self.refuse(
            node,
            f"{self._text(node)} inside {self._text(call)}",
            "an expression inside an aggregate whose Δ cannot be derived: aggregate a column or CLAMP(column, L, U)",
        )

    def _describe(self, node: Any) -> tuple[str, str | None, tuple[float, float] | None, float | None, float | None, bool]:
        """(kind, column, bounds, q, explicit ε, distinct unit) of one aggregate call."""
        exp = self.exp
        epsilon: float | None = None
        call = node
        if self._is_within(node):  # a target error: the plan solves the ε (dpwitness.sql.targets)
            kind, column, bounds, q, distinct = self._kind(self._within_call(node))
            return kind, column, bounds, q, None, distinct
        if isinstance(node, exp.Anonymous) and str(node.name).upper() == "EPSILON":
            if len(node.expressions) != 2 or not self._is_aggregate(node.expressions[0]):
                self.refuse(node, self._text(node), "EPSILON(aggregate, ε): one aggregate and its ε")
            epsilon = self._number(node.expressions[1], "EPSILON's ε")
            if not epsilon > 0:
                self.refuse(node.expressions[1], self._text(node.expressions[1]), "EPSILON's ε: a number > 0")
            call = node.expressions[0]
            if isinstance(call, exp.Anonymous) and str(call.name).upper() == "EPSILON":
                self.refuse(call, self._text(call), "one EPSILON per aggregate")
        kind, column, bounds, q, distinct = self._kind(call)
        return kind, column, bounds, q, epsilon, distinct

    def _kind(self, call: Any) -> tuple[str, str | None, tuple[float, float] | None, float | None, bool]:
        exp = self.exp
        if isinstance(call, exp.Count):
            argument = call.this
            if argument is None or isinstance(argument, exp.Star):
                return "count", None, None, None, False
            if isinstance(argument, exp.Distinct):
                items = argument.expressions
                if len(items) != 1 or not isinstance(items[0], exp.Column):
                    self.refuse(call, self._text(call), "COUNT(DISTINCT unit) takes the privacy unit's column")
                column = self.column(items[0])
                if self.privacy_unit is None or column != self.privacy_unit:
                    unit = "no privacy unit is set" if self.privacy_unit is None else f"the privacy unit is {self.privacy_unit!r}"
                    self.refuse(
                        call,
                        self._text(call),
                        f"COUNT(DISTINCT …) only for the privacy unit's count ({unit}): "
                        "distinct values of other columns have no derived Δ",
                    )
                return "count", None, None, None, True
            if isinstance(argument, exp.Column):
                return "count", self.column(argument), None, None, False
            self.refuse(argument, f"{self._text(argument)} inside {self._text(call)}", "COUNT takes *, a column or DISTINCT unit")
        if isinstance(call, exp.WithinGroup):
            inner, order = call.this, call.expression
            if not isinstance(inner, exp.PercentileCont | exp.PercentileDisc) or not isinstance(inner, exp.PercentileCont):
                self.refuse(call, self._text(call), "WITHIN GROUP only with PERCENTILE_CONT(q)")
            q = self._number(inner.this, "PERCENTILE_CONT's q")
            items = order.expressions if isinstance(order, exp.Order) else []
            if len(items) != 1:
                self.refuse(call, self._text(call), "WITHIN GROUP (ORDER BY one column)")
            if items[0].args.get("desc"):
                q = 1.0 - q
            column, bounds = self._argument(items[0].this, call, "quantile")
            return "quantile", column, bounds, q, False
        names = {
            "Sum": "sum", "Avg": "avg", "Variance": "variance", "VariancePop": "variance",
            "Stddev": "stddev", "StddevPop": "stddev", "StddevSamp": "stddev", "Median": "median",
            "Min": "min", "Max": "max",
        }  # fmt: skip
        kind = names.get(type(call).__name__)
        if kind is None and isinstance(call, exp.Anonymous):
            kind = {"VAR": "variance", "VARIANCE": "variance", "STDDEV": "stddev", "MEDIAN": "median"}.get(str(call.name).upper())
        if kind is None:
            self.refuse(call, self._text(call), f"not a supported aggregate ({_AGGREGATE_NAMES})")
        if isinstance(call, exp.Anonymous):
            arguments = list(call.expressions)
        else:
            arguments = [call.this] + ([call.expression] if call.args.get("expression") is not None else [])
        if len(arguments) != 1 or arguments[0] is None:
            self.refuse(call, self._text(call), "one argument: a column or CLAMP(column, L, U)")
        if isinstance(arguments[0], exp.Distinct):
            self.refuse(call, self._text(call), "DISTINCT inside an aggregate is only COUNT(DISTINCT unit)")
        column, bounds = self._argument(arguments[0], call, kind)
        quantile = {"median": 0.5, "min": 0.0, "max": 1.0}.get(kind)
        return ("quantile" if quantile is not None else kind), column, bounds, quantile, False

    def _queries(self, predicate: Node | None, keys: tuple[Key, ...] | None) -> tuple[Aggregate, ...]:
        """One query per release: calls that read one noisy release share it (VAR and STDDEV of one
        column; quantiles of one column and bounds: one histogram, several q); ε is split over releases."""
        described = [(index, node, self._describe(node)) for index, (_, node) in enumerate(self.calls)]
        groups: dict[Any, list[tuple[int, Any, Any]]] = {}
        for index, node, info in described:
            kind, column, bounds, _, epsilon, distinct = info
            if kind in ("sum", "avg", "variance", "stddev", "quantile") and bounds is None:
                self.refuse(
                    node,
                    self._text(node),
                    f"needs bounds: write CLAMP({column}, L, U) inside it, or declare {column}'s bounds in the schema",
                )
            shared = epsilon is None and kind in ("variance", "stddev", "quantile")
            statistic = _STATISTICS[kind]
            key = (statistic, column, bounds, distinct) if shared else ("own", index)
            groups.setdefault(key, []).append((index, node, info))
        members = list(groups.values())
        explicit = [m[0][2][4] for m in members if m[0][2][4] is not None]
        implicit = sum(1 for m in members if m[0][2][4] is None)
        targets = self._targets(described, keys)
        total = self.epsilon
        if targets:  # the plan solves each ε: the queries are checked at a placeholder ε (EXPLAIN only)
            share = 1.0
        elif total is None:
            if implicit:
                raise ParameterError(
                    "epsilon", "the statement's ε (split evenly over its aggregates without EPSILON(…, ε))", None
                )
            share = 0.0
        else:
            total = check_positive_finite("epsilon", total)
            rest = total - math.fsum(explicit)
            if rest < -1e-12 * total or (implicit and rest <= 0):
                raise ParameterError(
                    "epsilon",
                    f"at least the sum of the EPSILON(…) clauses ({math.fsum(explicit):g})"
                    + (" plus a share for each aggregate without one" if implicit else ""),
                    total,
                )
            share = rest / implicit if implicit else 0.0
        undeclared = bool(self.by) and keys is None
        if undeclared:  # the first query selects the keys: a count when there is one, never a quantile
            rank = {"count": 0, "sum": 1, "avg": 2, "variance": 3, "stddev": 3, "quantile": 9}
            members.sort(key=lambda m: rank[m[0][2][0]])
            if rank[members[0][0][2][0]] == 9:
                node = members[0][0][1]
                self.refuse(
                    node,
                    self._text(node),
                    "GROUP BY with undeclared keys needs a COUNT, SUM, AVG or VARIANCE to release the keys first, "
                    "or declare them (WHERE col IN (…))",
                )
        where = None if predicate is None else to_text(predicate)
        built: list[Aggregate] = []
        for rank_index, member in enumerate(members):
            index, node, (kind, column, bounds, _, epsilon, distinct) = member[0]
            qs = tuple(dict.fromkeys(info[3] for _, _, info in member if info[3] is not None))
            reuses = undeclared and rank_index > 0
            statistic = _STATISTICS[kind]
            options: dict[str, Any] = {"epsilon": epsilon if epsilon is not None else share, "where": where}
            if self.by:
                options.update(by=self.by, keys=keys if not reuses else self._placeholder_keys())
            if bounds is not None and statistic != "count":
                options["bounds"] = bounds
            if qs:
                options["quantiles"] = qs if len(qs) > 1 else qs[0]
            if distinct and self.private_join is not None:
                self.refuse(node, self._text(node), "COUNT(DISTINCT …) is not supported over a private JOIN")
            request = Request(statistic, column, join=self.private_join, **options)
            try:
                query = self.resolve(request)
                if distinct:
                    if self.by and query.max_groups is None:
                        self.refuse(
                            node,
                            self._text(node),
                            "COUNT(DISTINCT unit) with GROUP BY needs the session's max_groups "
                            "(each unit is then counted once in each of at most max_groups of its groups)",
                        )
                    query = replace(query, max_contributions=1)
                if self.join is not None:
                    query = replace(query, join_multiplicity=self.join.multiplicity, join_keeps_rows=self.join.left)
            except ParameterError as error:
                self.refuse(node, self._text(node), str(error))
            text = " and ".join(self._text(n) for _, n, _ in member)
            calls = tuple(i for i, _, _ in member)
            position = _position(node, self.text)
            aimed = targets.get(index)
            asked = None if aimed is None else replace(request, epsilon=None)
            built.append(Aggregate(text, kind, query, position, index, epsilon is not None, reuses, calls, aimed, asked))
        return tuple(built)

    def _call_kinds(self) -> tuple[tuple[str, float | None], ...]:
        """(kind, q) of each call, in the order the compiled expressions index them."""
        out = []
        for _, node in self.calls:
            kind, _, _, q, _, _ = self._describe(node)
            out.append((kind, q))
        return tuple(out)

    def _placeholder_keys(self) -> tuple[Key, ...]:
        """One key of the right kinds, for checking (not releasing) a query whose keys the first releases."""
        blank: dict[ColumnKind, Key] = {ColumnKind.INTEGER: 0, ColumnKind.FLOAT: 0.0, ColumnKind.BOOLEAN: False}
        values = tuple(blank.get(self.kind(c), "") for c in self.by)
        return (values if len(values) > 1 else values[0],)

    def _keys(self, predicate: Node | None) -> tuple[tuple[Key, ...] | None, str]:
        """Declared keys of GROUP BY: each column's from a top-level ``col IN (…)`` (or ``col = v``)
        of WHERE, or from the schema's categories; None when some column has neither."""
        if not self.by:
            return None, "none"
        conjuncts = () if predicate is None else (predicate.items if isinstance(predicate, And) else (predicate,))
        given: dict[str, tuple[Key, ...]] = {}
        sources: list[str] = []
        declared = self.declared if self.declared is not None else Schema({})
        for name in self.by:
            found: tuple[Key, ...] | None = None
            for item in conjuncts:
                if isinstance(item, In) and not item.negated and item.column.name == name:
                    found = tuple(dict.fromkeys(item.values))
                elif isinstance(item, Compare) and item.op == "==" and item.column.name == name:
                    found = (item.value,)
            if name in self.cases:  # the CASE's own literals: declared by the statement
                given[name] = self.cases[name].keys
                sources.append(f"{name} from its CASE's THEN and ELSE values")
            elif found is not None:
                given[name] = found
                sources.append(f"{name} from WHERE … IN (…)")
            elif name in self.public_kinds:  # a public column: its values are public keys
                given[name] = self._public_values(name)
                sources.append(f"{name} from the public table {self.public_name}")
            elif name in declared.categories:
                sources.append(f"{name} from the schema's categories")
            else:
                return None, "released by the first aggregate (undeclared keys: δ and max_rows), reused by the others"
        return declared.keys_for(self.by, given=given), "declared: " + "; ".join(sources)

    # -- notes --
    def _epsilon_note(self, aggregates: Sequence[Aggregate]) -> str:
        if any(a.target is not None for a in aggregates):
            return "ε solved from the WITHIN(…) target errors: the smallest that meets them all (EXPLAIN's plan)"
        explicit = [a for a in aggregates if a.explicit_epsilon]
        implicit = [a for a in aggregates if not a.explicit_epsilon]
        total = math.fsum(a.query.epsilon for a in aggregates)
        shared = sum(1 for a in aggregates if len(a.calls) > 1)
        parts = [f"ε = {total:g} in all over {len(aggregates)} release(s)"]
        if shared:
            parts.append(f"{shared} of them answer several aggregates from one noisy release (post-processing)")
        if explicit:
            parts.append("given by EPSILON(…): " + ", ".join(f"{a.text} {a.query.epsilon:g}" for a in explicit))
        if implicit:
            parts.append(f"split evenly: {implicit[0].query.epsilon:g} each for " + ", ".join(a.text for a in implicit))
        return "; ".join(parts)

    def _notes(self, outputs: Sequence[tuple[str, Any]]) -> tuple[str, ...]:
        notes: list[str] = []
        if self.join is not None:
            m = self.join.multiplicity
            effect = (
                "a privacy unit's rows are bounded after the join: Δ unchanged"
                if self.privacy_unit is not None
                else ("unique keys: Δ unchanged" if m == 1 else f"one record becomes ≤ {m} rows: Δ × {m}")
            )
            how = "left-joined (every private row kept, unmatched ones with null public columns)" if self.join.left else "joined"
            where = f"the public table {self.public_name} on {self.join_on}"
            notes.append(f"{how} with {where}: ≤ {m} public row(s) per key; {effect}")
        for name, compiled in outputs:
            if compiled[0] not in ("agg", "key"):
                notes.append(f"{name} is computed from the released (noisy) aggregates: post-processing, no extra cost")
        for _, node in self.calls:
            wrapped = isinstance(node, self.exp.Anonymous) and str(node.name).upper() in ("EPSILON", "WITHIN")
            kind = self._kind(node.expressions[0] if wrapped else node)[0]
            if kind in ("variance", "stddev"):
                notes.append(f"{self._text(node)} is the population variance (divided by n) of the clamped values")
                break
        return tuple(notes)


def table_name(source: Any) -> str:
    """The SQL name of a session's table: a file's stem (``adult.csv`` → ``adult``), else ``data``.

    :param source: the session's source: a path (text or path-like) or a frame.
    """
    from pathlib import Path

    if isinstance(source, str) or hasattr(source, "__fspath__"):
        stem = Path(source).name.split(".")[0]
        return stem or "data"
    return "data"


__all__ = ["Compiler", "compile_statement", "table_name"]
