"""``JOIN`` with a public (lookup) table: ``FROM t [INNER | LEFT] JOIN public p ON t.k = p.k``.

The public table is read whole (its values are public) and prepared by
:func:`dpwitness.engines.joins.prepare_public` (the key cast to the private key's type, M the most
rows one key matches); the private one is joined lazily by each engine. The public columns can be
used in ``WHERE``, ``GROUP BY`` (their distinct values are declared keys) and outputs. Δ is derived
in :mod:`dpwitness.query.queries` (``join_multiplicity``, ``join_keeps_rows``).

``FROM t [INNER] JOIN b ON t.k = b.k`` with ``b`` another *private* table (``Session.sql(private=…)``)
compiles to requests that carry a :class:`~dpwitness.query.resolve.PrivateJoin`: the joined rows'
columns are t's and b's (``b.<column>`` when t has that name), and Δ is
:class:`~dpwitness.privacy.neighbours.PrivateJoinBound`'s."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NoReturn

from dpwitness.engines.joins import PublicTable, prepare_public
from dpwitness.io.schema import polars_kind
from dpwitness.query.queries import ColumnKind, Key, Schema
from dpwitness.query.resolve import PrivateJoin


class JoinTranslation:
    """The JOIN half of the statement compiler (:class:`dpwitness.sql.compile.Compiler`)."""

    exp: Any
    table: str
    schema: Schema
    aliases: set[str]
    public_tables: dict[str, Any]
    public_aliases: set[str]
    public_columns: dict[str, str]
    public_kinds: dict[str, ColumnKind]
    join: PublicTable | None
    join_on: str | None
    public_name: str
    privacy_unit: str | None
    private_tables: dict[str, tuple[Any, Schema]]
    private_aliases: set[str]
    private_columns: dict[str, str]
    left_columns: Any
    private_join: PrivateJoin | None
    join_bounds: tuple[Any, Any]

    def refuse(self, node: Any, construct: str, reason: str) -> NoReturn:
        raise NotImplementedError

    def _text(self, node: Any) -> str:
        raise NotImplementedError

    def column(self, node: Any) -> str:
        raise NotImplementedError

    def kind(self, name: str) -> ColumnKind:
        raise NotImplementedError

    def _join(self, join: Any) -> None:
        """``JOIN public [AS p] ON private.k = p.k``: an inner join with a public (lookup) table."""
        exp = self.exp
        target = join.this
        name = target.name if isinstance(target, exp.Table) else self._text(target)
        if not isinstance(target, exp.Table):
            self.refuse(target, "a subquery", "subqueries over private rows are not supported")
        if name.lower() == self.table.lower():
            self.refuse(
                join, f"JOIN {name}", "a self-join (joins of private tables name the other: Session.sql(private={name: table}))"
            )
        private = [t for t in self.private_tables if t.lower() == name.lower()]
        if private:
            self._private_join(join, target, private[0])
            return
        found = [t for t in self.public_tables if t.lower() == name.lower()]
        if not found:
            listed = ", ".join(self.public_tables) or "none is given: Session.sql(public={name: table})"
            self.refuse(join, f"JOIN {name}", f"joins are only with a declared public table ({listed})")
        side, kind = str(join.args.get("side") or "").upper(), str(join.args.get("kind") or "").upper()
        left = side == "LEFT" and kind in ("", "OUTER")
        if (side and not left) or (kind and kind not in ("INNER", "OUTER")) or (kind == "OUTER" and not left):
            self.refuse(
                join, self._text(join).split(" ON ")[0], "only an inner or a LEFT JOIN … ON private.column = public.column"
            )
        if join.args.get("using"):
            self.refuse(join, self._text(join).split(" ON ")[0], "JOIN … ON private.column = public.column (not USING)")
        self.public_name = found[0]
        frame = self.public_tables[self.public_name]
        self.public_aliases = {self.public_name.lower(), *([target.alias.lower()] if target.alias else [])}
        if self.public_aliases & self.aliases:
            self.refuse(target, f"alias {target.alias}", "the public table needs an alias of its own")
        for column, dtype in frame.schema.items():
            joined = column if column not in self.schema.columns else f"{self.public_name}.{column}"
            self.public_columns[column] = joined
            self.public_kinds[joined] = polars_kind(dtype)
        on = join.args.get("on")
        if not isinstance(on, exp.EQ) or not isinstance(on.this, exp.Column) or not isinstance(on.expression, exp.Column):
            self.refuse(on if on is not None else join, "JOIN … ON", "ON one equality of a private column and a public column")
        sides = [(self._side(c), c) for c in (on.this, on.expression)]
        if {side for side, _ in sides} != {"private", "public"}:
            self.refuse(on, self._text(on), "ON one equality of a private column and a public column")
        private = next(c for side, c in sides if side == "private")
        public = next(c for side, c in sides if side == "public")
        private_name = self.column(private)
        key = next(c for c in frame.columns if c == public.name or c.lower() == public.name.lower())
        payload = {c: n for c, n in self.public_columns.items() if c != key}
        self.public_columns[key] = private_name  # on joined rows the public key equals the private one
        self.public_kinds.pop(f"{self.public_name}.{key}" if key in self.schema.columns else key, None)
        if not self.schema.columns[private_name].keyable:
            kind = self.schema.columns[private_name].value
            self.refuse(
                on, self._text(on), f"a private join key every engine can key ({private_name!r} is {kind}: declare its type)"
            )
        prepared = prepare_public(frame, key=key, private_kind=self.schema.columns[private_name], columns=payload)
        self.join = replace(prepared, left=left)
        self.join_on = private_name

    def _private_join(self, join: Any, target: Any, name: str) -> None:
        """``JOIN b [AS y] ON t.k = b.k`` with ``b`` another private table: an inner equi-join after
        truncation (:class:`~dpwitness.query.resolve.PrivateJoin`), each ON column qualified."""
        exp = self.exp
        head = self._text(join).split(" ON ")[0]
        side, kind = str(join.args.get("side") or "").upper(), str(join.args.get("kind") or "").upper()
        if side or kind not in ("", "INNER") or join.args.get("using"):
            self.refuse(join, head, "a private JOIN is an inner JOIN … ON t.column = other.column")
        if self.privacy_unit is None:
            self.refuse(join, head, "a private JOIN needs the privacy unit of both tables: Session(privacy_unit=…)")
        source, schema = self.private_tables[name]
        if self.privacy_unit not in schema.columns:
            self.refuse(join, head, f"the private table {name!r} needs the privacy unit column {self.privacy_unit!r}")
        per_key, per_unit = self.join_bounds
        if per_key is None:
            self.refuse(
                join,
                head,
                "a private JOIN needs max_rows_per_key=… (rows kept per key value on each side: k, or (k_left, k_right))",
            )
        self.private_aliases = {name.lower(), *([target.alias.lower()] if target.alias else [])}
        if self.private_aliases & self.aliases:
            self.refuse(target, f"alias {target.alias}", "the other private table needs an alias of its own")
        on = join.args.get("on")
        if not isinstance(on, exp.EQ) or not all(isinstance(c, exp.Column) and c.table for c in (on.this, on.expression)):
            self.refuse(on if on is not None else join, "JOIN … ON", "ON one equality of t.column = other.column, each qualified")
        sides = {c.table.lower() in self.private_aliases: c for c in (on.this, on.expression)}
        if len(sides) != 2 or any(c.table.lower() not in self.aliases | self.private_aliases for c in sides.values()):
            self.refuse(on, self._text(on), "ON one equality of t.column = other.column, each qualified")
        left = self._named(sides[False], self.left_columns, self.table)
        right = self._named(sides[True], schema.columns, name)
        for column in schema.columns:
            if column not in (right, self.privacy_unit):
                self.private_columns[column] = f"{name}.{column}" if column in self.left_columns else column
        self.private_columns[right] = left  # on joined rows the keys are equal (compared as PrivateJoin says)
        joined = {**self.left_columns, **{n: schema.columns[c] for c, n in self.private_columns.items() if c != right}}
        self.schema = Schema(joined)
        self.private_join = PrivateJoin(source, on=(left, right), max_rows_per_key=per_key, max_rows_per_unit=per_unit, name=name)

    def _named(self, node: Any, columns: Any, table: str) -> str:
        found = [c for c in columns if c == node.name or (not node.this.quoted and c.lower() == node.name.lower())]
        if len(found) != 1:
            self.refuse(node, f"column {node.name!r}", f"unknown column of {table!r} ({', '.join(columns)})")
        return str(found[0])

    def _private_column(self, node: Any) -> str:
        """A column of the privately joined rows: ``other.c`` the other table's, ``t.c`` or a bare name
        the session table's, or the other's when only it has that name."""
        qualifier = (node.table or "").lower()
        if qualifier in self.private_aliases:
            return self.private_columns[self._named(node, self.private_columns, str(node.table))]
        in_left = any(c == node.name or c.lower() == node.name.lower() for c in self.left_columns)
        in_right = any(c == node.name or c.lower() == node.name.lower() for c in self.private_columns)
        if not qualifier and in_left and in_right:
            self.refuse(node, f"column {node.name!r}", "ambiguous: qualify it with its table")
        if qualifier or in_left:
            return self._named(node, self.left_columns, self.table)
        return self.private_columns[self._named(node, self.private_columns, "the joined tables")]

    def _side(self, node: Any) -> str:
        qualifier = (node.table or "").lower()
        if qualifier in self.public_aliases:
            return "public"
        if qualifier in self.aliases:
            return "private"
        if qualifier:
            self.refuse(node, f"{node.table}.{node.name}", f"unknown table {node.table!r}")
        in_private = any(c.lower() == node.name.lower() for c in self.schema.columns)
        in_public = any(c.lower() == node.name.lower() for c in self.public_columns)
        if in_private and in_public:
            self.refuse(node, f"column {node.name!r}", "ambiguous: qualify it with its table")
        return "public" if in_public else "private"

    def _public_values(self, joined: str) -> tuple[Key, ...]:
        assert self.join is not None
        values = self.join.frame.get_column(joined).drop_nulls().unique().sort().to_list()
        if not values:
            return ("",) if self.kind(joined) in (ColumnKind.STRING, ColumnKind.UNTYPED) else (0,)
        return tuple(values)


__all__ = ["JoinTranslation"]
