"""Row filters: one small predicate language, parsed safely, compiled to Polars and to Spark.

The language (keywords are case-insensitive)::

    predicate  := disjunct ("or" disjunct)*
    disjunct   := negation ("and" negation)*
    negation   := "not" negation | "(" predicate ")" | test
    test       := column op literal | literal op column            op: == = != <> < <= > >=
                | column ["not"] "in" "[" literal ("," literal)* "]"
                | column ["not"] "between" literal "and" literal   (inclusive)
                | column "is" ["not"] "null"
                | column ["not"] "like" 'pattern'                  (text columns; % any run, _ one character)
    column     := name | `any name`                                 name: [A-Za-z_][A-Za-z0-9_.]*
    literal    := number | 'text' | "text" | true | false           ('' or "" inside: one quote)

``row_number`` is the row's 1-based position in the table's *declared* order (``order_by=``
on the session); it may appear only in comparisons and ``between`` joined by ``and`` at the
top level (a contiguous window of positions, see :attr:`Predicate.window`).

Semantics (the same on both engines): a row is kept when the predicate is *true*. A
comparison with a missing value (null, or NaN in a float column) is unknown, and unknown
follows SQL's three-valued logic (``not unknown`` is unknown; ``unknown or true`` is true);
``is null`` is true for null and NaN. A column whose type is declared is compared with
literals of that type only (numbers with numbers, text with text, booleans with ``true``/
``false``); a column without a declared type (a CSV column, read as text) is read as a
number where it is compared with a number (text that does not parse is missing) and as
text where it is compared with text.

Parsing is a small recursive descent over a tokenizer (no ``eval``, no Python ``ast``); every
error is a :class:`~dpwitness.common.errors.ParameterError` on ``where`` that names the character
position, and none quotes data (there is none: only the analyst's own text is parsed).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NoReturn, Union

from dpwitness.common.errors import ParameterError

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import Column

#: The pseudo-column of row positions (1-based, in the declared order).
ROW_NUMBER = "row_number"
#: Longest predicate accepted (characters) and deepest nesting: a parser must not be a CPU sink.
MAX_LENGTH = 2000
MAX_DEPTH = 32
#: Integer literals beyond 2^53 are not exact as floats; larger numbers must be written as floats.
_MAX_EXACT = 2**53
#: Row positions at or beyond this are past the end of any table (and still fit in an int64).
_MAX_POSITION = 2**62
_KEYWORDS = {"and", "or", "not", "in", "between", "is", "null", "true", "false", "like"}
_OPERATORS = {"==": "==", "=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    | `(?P<quoted>[^`]+)`
    | (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
    | (?P<op><=|>=|==|!=|<>|<|>|=)
    | (?P<punct>[()\[\],])
    )""",
    re.VERBOSE,
)

Literal = Union[int, float, str, bool]  # noqa: UP007  (a runtime alias)


# --- the parsed description -------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnRef:
    """A column reference (``row_number`` is the position pseudo-column); ``at`` is its position."""

    name: str
    at: int
    position: bool = False


@dataclass(frozen=True)
class Compare:
    column: ColumnRef
    op: str
    value: Literal
    at: int


@dataclass(frozen=True)
class In:
    column: ColumnRef
    values: tuple[Literal, ...]
    negated: bool
    at: int


@dataclass(frozen=True)
class Between:
    column: ColumnRef
    low: Literal
    high: Literal
    negated: bool
    at: int


@dataclass(frozen=True)
class IsNull:
    column: ColumnRef
    negated: bool
    at: int


@dataclass(frozen=True)
class Like:
    """SQL's LIKE on a text column: ``%`` matches any run of characters (newlines too), ``_`` exactly
    one; everything else itself, case-sensitive; the whole value must match. No escape character
    (a pattern with a backslash is refused: the engines' escapes differ)."""

    column: ColumnRef
    pattern: str
    negated: bool
    at: int


@dataclass(frozen=True)
class And:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    item: Node
    at: int


Node = Union[Compare, In, Between, IsNull, Like, And, Or, Not]  # noqa: UP007


@dataclass(frozen=True)
class Predicate:
    """A parsed row filter. ``text`` is what the analyst wrote; ``tree`` what it means.

    ``window`` is the range of row positions (1-based, inclusive; ``math.inf`` for no end)
    that a ``row_number`` condition keeps, or None when the predicate does not use positions.
    ``value_tree`` is the rest (None when only positions are tested).
    """

    text: str
    tree: Node
    window: tuple[float, float] | None
    value_tree: Node | None

    @property
    def columns(self) -> tuple[str, ...]:
        """The table columns the predicate reads (not ``row_number``), in order of appearance."""
        return tuple(dict.fromkeys(c.name for c in _columns(self.tree) if not c.position))

    @property
    def compared_with_numbers(self) -> tuple[str, ...]:
        """The table columns the predicate compares with a number (not ``row_number``), in order."""
        names = (n.column.name for n in _tests(self.tree) if not n.column.position and any(map(_is_number, _literals(n))))
        return tuple(dict.fromkeys(names))

    @property
    def record_wise(self) -> bool:
        """True when whether a row is kept depends on that row alone (no ``row_number``)."""
        return self.window is None

    def check(self, kinds: Mapping[str, Any]) -> None:
        """Raise ``ParameterError("where", ...)`` for an unknown column or a literal of the wrong type.

        ``kinds`` maps column names to :class:`dpwitness.query.queries.ColumnKind` (public schema).
        """
        for node in _tests(self.tree):
            column = node.column
            if column.position:
                continue
            if column.name not in kinds:
                _fail(self.text, column.at, f"a column of the table ({', '.join(kinds)})", f"unknown column {column.name!r}")
            kind = str(getattr(kinds[column.name], "value", kinds[column.name]))
            literals = _literals(node)
            if len({_type_name(v) for v in literals}) > 1:
                _fail(self.text, node.at, "literals of one type (all numbers or all text)", "a mix")
            for value in literals:
                expected = _accepts(kind, value)
                if expected is not None:
                    _fail(self.text, node.at, f"{expected} for {column.name!r} ({kind})", f"{_type_name(value)} {value!r}")
            ordered = isinstance(node, Between) or (isinstance(node, Compare) and node.op not in ("==", "!="))
            if ordered and kind == "boolean":
                _fail(self.text, node.at, f"== or != for the boolean column {column.name!r}", "an order comparison")
            if isinstance(node, Like) and kind not in ("string", "untyped"):
                _fail(self.text, node.at, f"a text column for like ({column.name!r} is {kind})", "like")


def parse(text: Any) -> Predicate:
    """Parse ``text`` into a :class:`Predicate`; ``ParameterError`` on ``where`` with the position otherwise."""
    if not isinstance(text, str):
        raise ParameterError("where", "a predicate as text, e.g. \"age < 20 and sex == 'Female'\"", type(text).__name__)
    if not text.strip():
        raise ParameterError("where", "a non-empty predicate, e.g. 'age < 20'", text)
    if len(text) > MAX_LENGTH:
        raise ParameterError("where", f"a predicate of at most {MAX_LENGTH} characters", f"{len(text)} characters")
    parser = _Parser(text)
    tree = parser.predicate(0)
    if parser.peek() is not None:
        token = parser.peek()
        assert token is not None
        if token.text == ")":
            _fail(text, token.at, "balanced parentheses", "a ')' without its '('")
        _fail(text, token.at, "'and', 'or' or the end of the predicate", repr(token.text))
    window, value_tree = _split_window(text, tree)
    return Predicate(text, tree, window, value_tree)


def to_text(tree: Node) -> str:
    """The filter-language text of a parsed tree (what :func:`parse` reads back to the same tree,
    positions aside): how a front-end (SQL) hands its translated condition to a query."""
    if isinstance(tree, And | Or):
        joiner = " and " if isinstance(tree, And) else " or "
        return joiner.join(f"({to_text(item)})" for item in tree.items)
    if isinstance(tree, Not):
        return f"not ({to_text(tree.item)})"
    column = _column_text(tree.column)
    if isinstance(tree, Compare):
        return f"{column} {tree.op} {_literal_text(tree.value)}"
    if isinstance(tree, In):
        values = ", ".join(_literal_text(v) for v in tree.values)
        return f"{column} {'not in' if tree.negated else 'in'} [{values}]"
    if isinstance(tree, Between):
        word = "not between" if tree.negated else "between"
        return f"{column} {word} {_literal_text(tree.low)} and {_literal_text(tree.high)}"
    if isinstance(tree, Like):
        return f"{column} {'not like' if tree.negated else 'like'} {_literal_text(tree.pattern)}"
    return f"{column} is {'not null' if tree.negated else 'null'}"


def _column_text(column: ColumnRef) -> str:
    if column.position:
        return ROW_NUMBER
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", column.name) and column.name.lower() not in _KEYWORDS | {ROW_NUMBER}:
        return column.name
    if "`" in column.name:
        raise ParameterError("where", "column names without a backquote", column.name)
    return f"`{column.name}`"


def _literal_text(value: Literal) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError("where", "finite numbers", value)
        return repr(value)
    return str(value)


# --- tokenizer and parser -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # number, name, keyword, quoted, string, op, punct
    text: str
    at: int
    value: Any = None


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None or match.lastgroup is None:
            start = at + len(text[at:]) - len(text[at:].lstrip())
            if text[start] in "'\"":
                _fail(text, start, "a closed quote", "an unterminated text literal")
            if text[start] == "`":
                _fail(text, start, "a closed backquote", "an unterminated column name")
            _fail(text, start, "a column, a literal, an operator or a parenthesis", repr(text[start]))
        kind = match.lastgroup
        raw = match.group(kind)
        start = match.start(kind)
        if kind == "name" and raw.lower() in _KEYWORDS:
            tokens.append(_Token("keyword", raw.lower(), start))
        elif kind == "number":
            tokens.append(_Token("number", raw, start, _number(text, start, raw)))
        elif kind == "string":
            tokens.append(_Token("string", raw, start, raw[1:-1].replace(raw[0] * 2, raw[0])))
        else:
            tokens.append(_Token(kind, raw, start))
        at = match.end()
    return tokens


def _number(text: str, at: int, raw: str) -> int | float:
    if re.fullmatch(r"[-+]?\d+", raw):
        value = int(raw)
        if abs(value) <= _MAX_EXACT:
            return value
    number = float(raw)
    if not math.isfinite(number):
        _fail(text, at, "a finite number", raw)
    return number


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.index = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            _fail(self.text, len(self.text), "more of the predicate", "its end")
        self.index += 1
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "keyword" and token.text == word:
            self.index += 1
            return True
        return False

    def expect(self, text: str, expected: str) -> _Token:
        token = self.peek()
        if token is None or token.text != text:
            self._unexpected(token, expected)
        return self.take()

    def _unexpected(self, token: _Token | None, expected: str) -> NoReturn:
        if token is None:
            _fail(self.text, len(self.text), expected, "the end of the predicate")
        _fail(self.text, token.at, expected, repr(token.text))

    def predicate(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            token = self.peek()
            _fail(self.text, token.at if token else len(self.text), f"at most {MAX_DEPTH} levels of nesting", "deeper")
        items = [self.conjunction(depth)]
        while self.keyword("or"):
            items.append(self.conjunction(depth))
        return items[0] if len(items) == 1 else Or(tuple(items))

    def conjunction(self, depth: int) -> Node:
        items = [self.negation(depth)]
        while self.keyword("and"):
            items.append(self.negation(depth))
        return items[0] if len(items) == 1 else And(tuple(items))

    def negation(self, depth: int) -> Node:
        token = self.peek()
        if token is not None and token.kind == "keyword" and token.text == "not":
            self.index += 1
            if depth + 1 > MAX_DEPTH:
                _fail(self.text, token.at, f"at most {MAX_DEPTH} levels of nesting", "deeper")
            return Not(self.negation(depth + 1), token.at)
        if token is not None and token.text == "(":
            self.index += 1
            inner = self.predicate(depth + 1)
            closing = self.peek()
            if closing is None or closing.text != ")":
                _fail(self.text, token.at, "balanced parentheses", "a '(' that is never closed")
            self.index += 1
            return inner
        return self.test()

    def operand(self) -> ColumnRef | Literal:
        token = self.take()
        if token.kind == "name":
            return ColumnRef(token.text, token.at, position=token.text.lower() == ROW_NUMBER)
        if token.kind == "quoted":
            return ColumnRef(token.text, token.at)
        if token.kind in ("number", "string"):
            return token.value  # type: ignore[no-any-return]
        if token.kind == "keyword" and token.text in ("true", "false"):
            return token.text == "true"
        _fail(self.text, token.at, "a column or a literal", repr(token.text))

    def literal(self) -> Literal:
        token = self.peek()
        value = self.operand()
        if isinstance(value, ColumnRef):
            assert token is not None
            _fail(self.text, token.at, "a literal (a number, 'text', true or false)", f"the column {value.name!r}")
        return value

    def test(self) -> Node:
        first = self.peek()
        if first is None:
            _fail(self.text, len(self.text), "a condition", "the end of the predicate")
        assert first is not None
        left = self.operand()
        token = self.peek()
        if token is not None and token.kind == "op":
            self.index += 1
            op = _OPERATORS[token.text]
            right_token = self.peek()
            right = self.operand()
            if isinstance(left, ColumnRef) and not isinstance(right, ColumnRef):
                return Compare(left, op, right, first.at)
            if isinstance(right, ColumnRef) and not isinstance(left, ColumnRef):
                return Compare(right, _FLIPPED[op], left, first.at)
            where = right_token.at if right_token is not None else first.at
            got = "two columns" if isinstance(left, ColumnRef) else "two literals"
            _fail(self.text, where, "a comparison of one column with one literal", got)
        if not isinstance(left, ColumnRef):
            _fail(self.text, first.at, "a condition that starts with a column", repr(first.text))
        assert isinstance(left, ColumnRef)
        if self.keyword("is"):
            negated = self.keyword("not")
            if not self.keyword("null"):
                self._unexpected(self.peek(), "'null' after 'is' / 'is not'")
            return IsNull(left, negated, first.at)
        negated = self.keyword("not")
        if self.keyword("like"):
            token = self.peek()
            if token is None or token.kind != "string":
                self._unexpected(token, "a 'pattern' in quotes after 'like'")
            assert token is not None
            self.index += 1
            if "\\" in token.value:
                _fail(self.text, token.at, "a like pattern without a backslash (no escape character)", repr(token.text))
            return Like(left, token.value, negated, first.at)
        if self.keyword("in"):
            self.expect("[", "'[' to open the list after 'in'")
            values = [self.literal()]
            while self.peek() is not None and self.peek().text == ",":  # type: ignore[union-attr]
                self.index += 1
                values.append(self.literal())
            self.expect("]", "',' or ']' to close the list")
            return In(left, tuple(values), negated, first.at)
        if self.keyword("between"):
            low = self.literal()
            if not self.keyword("and"):
                self._unexpected(self.peek(), "'and' between the two ends of 'between'")
            high = self.literal()
            return Between(left, low, high, negated, first.at)
        self._unexpected(self.peek(), "a comparison (== != < <= > >=), 'in', 'between', 'like' or 'is null' after the column")


def _fail(text: str, at: int, expected: str, got: str) -> NoReturn:
    """Raise the one error of this module: ``where`` must be ...; got ... at position N."""
    raise ParameterError("where", expected, _At(got, at + 1))


class _At(str):
    """``got`` with the 1-based character position, printed without quotes by ParameterError's !r."""

    def __new__(cls, got: str, position: int) -> _At:
        return super().__new__(cls, f"{got} at position {position}")

    def __repr__(self) -> str:
        return str(self)


# --- analysis ----------------------------------------------------------------------------------

_Test = Union[Compare, In, Between, IsNull, Like]  # noqa: UP007


def _walk(node: Node) -> Iterator[Node]:
    yield node
    if isinstance(node, And | Or):
        for item in node.items:
            yield from _walk(item)
    elif isinstance(node, Not):
        yield from _walk(node.item)


def _tests(node: Node) -> Iterator[_Test]:
    for item in _walk(node):
        if isinstance(item, Compare | In | Between | IsNull | Like):
            yield item


def _columns(node: Node) -> Iterator[ColumnRef]:
    for test in _tests(node):
        yield test.column


def _literals(node: _Test) -> tuple[Literal, ...]:
    if isinstance(node, Compare):
        return (node.value,)
    if isinstance(node, In):
        return node.values
    if isinstance(node, Between):
        return (node.low, node.high)
    if isinstance(node, Like):
        return (node.pattern,)
    return ()


def _is_number(value: Literal) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_name(value: Literal) -> str:
    return "boolean" if isinstance(value, bool) else "number" if _is_number(value) else "text"


def _accepts(kind: str, value: Literal) -> str | None:
    """None when a column of ``kind`` can be compared with ``value``; else what it needs."""
    if kind in ("integer", "float"):
        return None if _is_number(value) else "a number"
    if kind == "string":
        return None if isinstance(value, str) else "text in quotes"
    if kind == "boolean":
        return None if isinstance(value, bool) else "true or false"
    if kind == "untyped":
        return None if not isinstance(value, bool) else "a number or text (declare the column's type to compare with true/false)"
    return "a column of a comparable type (number, text or boolean)"


def _split_window(text: str, tree: Node) -> tuple[tuple[float, float] | None, Node | None]:
    """Separate a top-level ``and`` of ``row_number`` bounds (a window) from the value conditions."""
    conjuncts = tree.items if isinstance(tree, And) else (tree,)
    low, high = 1.0, math.inf
    positional = False
    rest: list[Node] = []
    for item in conjuncts:
        if isinstance(item, Compare | Between) and item.column.position:
            positional = True
            if isinstance(item, Between) and item.negated:
                _fail(text, item.at, "row_number in one window (not between excludes a middle)", "'not between'")
            for value in _literals(item):
                if not _is_number(value):
                    _fail(text, item.at, "a number for row_number", f"{_type_name(value)} {value!r}")
            if isinstance(item, Between):
                low, high = max(low, math.ceil(float(item.low))), min(high, math.floor(float(item.high)))
                continue
            value = float(item.value)
            if item.op == "!=":
                _fail(text, item.at, "row_number in one window (!= leaves two)", "'!='")
            if item.op in ("==", "<="):
                high = min(high, math.floor(value))
            if item.op in ("==", ">="):
                low = max(low, math.ceil(value))
            if item.op == "<":
                high = min(high, math.ceil(value) - 1)
            if item.op == ">":
                low = max(low, math.floor(value) + 1)
            continue
        for column in _columns(item):
            if column.position:
                _fail(
                    text,
                    column.at,
                    "row_number only in comparisons or 'between' joined by 'and' at the top level (one window of positions)",
                    "row_number inside 'or', 'not', 'in' or 'is null'",
                )
        rest.append(item)
    value_tree = None if not rest else rest[0] if len(rest) == 1 else And(tuple(rest))
    # No table has 2^62 rows: beyond that a bound means "no end" (or an empty window), and the
    # engines never see an integer that does not fit in 64 bits.
    window = (min(low, _MAX_POSITION), math.inf if high >= _MAX_POSITION else max(high, 0))
    return (window if positional else None), value_tree


# --- compilation -------------------------------------------------------------------------------

#: How an engine reads one column for one test: (column name, read as number?, order comparison?) → expression.
Reader = Callable[[str, bool, bool], Any]


def to_polars(predicate: Predicate, kinds: Mapping[str, Any], dtypes: Mapping[str, Any] | None = None) -> pl.Expr:
    """The value conditions as one Polars expression (``row_number`` is applied by the engine).

    ``dtypes`` (the frame's Polars schema, optional): a Categorical/Enum text column is cast to
    String only for an order comparison (an Enum orders by its categories, not as text);
    equality compares it directly (a cast would cost a pass over the strings).
    ``predicate`` is the checked filter; ``kinds`` maps each column it names to its column kind
    (an untyped CSV column compared with a number is parsed, text that does not parse is null;
    a float column's NaN is null).
    """
    import polars as pl

    from dpwitness.io.cells import polars_number

    def read(name: str, number: bool, ordered: bool) -> pl.Expr:
        kind = str(getattr(kinds[name], "value", kinds[name]))
        column = pl.col(name)
        if kind == "untyped":
            return polars_number(column) if number else column  # the cell grammar: not a number → null
        if kind == "float":
            return column.fill_nan(None)
        if kind == "string" and ordered and (dtypes is None or dtypes.get(name) != pl.String):
            return column.cast(pl.String)
        return column

    def member(name: str, column: pl.Expr, values: tuple[str, ...]) -> pl.Expr | None:
        # A text column against texts: one hash lookup per row instead of len(values) comparisons;
        # the same three-valued answer (a null cell is unknown, so is its negation).
        if dtypes is None or dtypes.get(name) not in (pl.String, pl.Categorical):
            return None
        return column.is_in(pl.Series(values, dtype=pl.String).implode())

    assert predicate.value_tree is not None
    return _compile(predicate.value_tree, read, replace(_POLARS, member=member))  # type: ignore[no-any-return]


def to_spark(predicate: Predicate, kinds: Mapping[str, Any]) -> Column:
    """The value conditions as one Spark Column (``row_number`` is applied by the engine).

    :param predicate: the checked filter.
    :param kinds: each column's kind, read as for :func:`to_polars`.
    """
    from pyspark.sql import functions as F

    from dpwitness.io.cells import spark_number

    def read(name: str, number: bool, ordered: bool) -> Column:
        kind = str(getattr(kinds[name], "value", kinds[name]))
        column = F.col(f"`{name}`")
        if kind == "untyped":
            return spark_number(column) if number else column  # the cell grammar: not a number → null
        if kind == "float":
            return F.nanvl(column.cast("double"), F.lit(None).cast("double"))
        return column

    assert predicate.value_tree is not None
    return _compile(predicate.value_tree, read, _SPARK)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Backend:
    literal: Callable[[Literal], Any]
    is_null: Callable[[Any], Any]
    negate: Callable[[Any], Any]
    like: Callable[[Any, str], Any]
    #: ``column in [texts]`` as one membership test, given the column's name, or None: equalities.
    member: Callable[[str, Any, tuple[str, ...]], Any] | None = None


def _polars_literal(value: Literal) -> Any:
    import polars as pl

    return pl.lit(value)


def _spark_literal(value: Literal) -> Any:
    from pyspark.sql import functions as F

    return F.lit(value)


#: Characters that a regular expression (Rust's, for Polars) reads as syntax: escaped in a like pattern.
_REGEX_SYNTAX = set("\\.+*?()|[]{}^$#&-~")


def like_regex(pattern: str) -> str:
    """The whole-value regular expression of a like pattern: ``%`` → ``.*``, ``_`` → ``.`` (``(?s)``:
    newlines too), every other character itself."""
    parts = [".*" if c == "%" else "." if c == "_" else ("\\" + c if c in _REGEX_SYNTAX else c) for c in pattern]
    return "(?s)^" + "".join(parts) + "$"


_POLARS = _Backend(
    literal=_polars_literal,
    is_null=lambda column: column.is_null(),
    negate=lambda expr: ~expr,
    like=lambda column, pattern: column.str.contains(like_regex(pattern)),
)
_SPARK = _Backend(
    literal=_spark_literal,
    is_null=lambda column: column.isNull(),
    negate=lambda expr: ~expr,
    like=lambda column, pattern: column.like(pattern),  # no backslash in the pattern: no escapes
)


def _balanced(parts: list[Any], combine: Callable[[Any, Any], Any]) -> Any:
    """Combine with an associative ``and``/``or`` as a balanced tree, depth ⌈log2 n⌉: a left-deep
    chain of the ~1,000 terms a 2,000-character predicate allows costs Polars a quadratic
    planning time and overflows the stack of Spark's analyser."""
    while len(parts) > 1:
        parts = [combine(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def _compile(node: Node, read: Reader, backend: _Backend) -> Any:
    if isinstance(node, And | Or):
        parts = [_compile(item, read, backend) for item in node.items]
        return _balanced(parts, (lambda a, b: a & b) if isinstance(node, And) else (lambda a, b: a | b))
    if isinstance(node, Not):
        return backend.negate(_compile(node.item, read, backend))
    if isinstance(node, IsNull):
        missing = backend.is_null(read(node.column.name, False, False))  # NaN in a float column is missing too
        return backend.negate(missing) if node.negated else missing
    if isinstance(node, Like):  # read as text (a categorical column as its text)
        matched = backend.like(read(node.column.name, False, True), node.pattern)
        return backend.negate(matched) if node.negated else matched
    values = _literals(node)
    ordered = isinstance(node, Between) or (isinstance(node, Compare) and node.op not in ("==", "!="))
    column = read(node.column.name, any(_is_number(v) for v in values), ordered)
    if isinstance(node, Compare):
        value = backend.literal(node.value)
        return {
            "==": lambda: column == value,
            "!=": lambda: column != value,
            "<": lambda: column < value,
            "<=": lambda: column <= value,
            ">": lambda: column > value,
            ">=": lambda: column >= value,
        }[node.op]()
    if isinstance(node, In):
        # x in [a, b] is x == a or x == b: unknown (not false) when x is missing, as SQL's IN;
        # spelled as equalities so that both engines resolve the literal types the same way.
        texts = tuple(v for v in node.values if isinstance(v, str))
        inside = None
        if backend.member is not None and len(texts) == len(node.values) > 1:
            inside = backend.member(node.column.name, column, texts)
        if inside is None:
            inside = _balanced([column == backend.literal(v) for v in node.values], lambda a, b: a | b)
        return backend.negate(inside) if node.negated else inside
    inside = (column >= backend.literal(node.low)) & (column <= backend.literal(node.high))
    return backend.negate(inside) if node.negated else inside
