"""``JOIN`` with a public (lookup) table: ``FROM t [INNER | LEFT] JOIN public p ON t.k = p.k``.

The public table is read whole (its values are public) and prepared by
:func:`dpwitness.engines.joins.prepare_public` (the key cast to the private key's type, M the most
rows one key matches); the private one is joined lazily by each engine. The public columns can be
used in ``WHERE``, ``GROUP BY`` (their distinct values are declared keys) and outputs. Δ is derived
in :mod:`dpwitness.query.queries` (``join_multiplicity``, ``join_keeps_rows``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NoReturn

from dpwitness.engines.joins import PublicTable, prepare_public
from dpwitness.io.schema import polars_kind
from dpwitness.query.queries import ColumnKind, Key, Schema


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
            self.refuse(join, f"JOIN {name}", "joins of private tables with each other are not supported yet")
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
