"""The service's policy: what this face allows of a resolved query, beyond what the core checks.

The service is a face like the others: a request is resolved through the analyst's session
(:meth:`dpwitness.session.Session.resolve`, the one door) to the one
:class:`~dpwitness.query.queries.Query`, and then :meth:`Policy.check` applies the owner's
limits to *that* query, before any spend: only the columns the config declares public, a
bounded statistic only on a column with declared bounds, groups only over declared
categories or over a column whose keys the table takes from the data (``keys_from_data``,
with its ``max_rows``; a key is then released only above the threshold), at most
``max_groups`` declared keys and
``max_by_columns`` grouping columns, and only noisy releases (a query whose every part has
Δ = 0 is refused). Every check reads the query and the declared schema only, so a refusal is
data-independent, costs nothing, and names only what the analyst sent or the owner declared.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpwitness.io.schema import Schema
from dpwitness.query.queries import Query, Statistic
from dpwitness.query.resolve import BOUNDED_STATISTICS
from dpwitness.serve.config import Limits
from dpwitness.serve.requests import QueryError
from dpwitness.serve.tables import LoadedTable


@dataclass(frozen=True)
class Policy:
    """The owner's limits on one table's queries (:meth:`check` raises :class:`QueryError`, 422).

    ``columns`` are the columns the config exposes (its ``[tables.T.columns]``, or a schema's
    columns with bounds or categories); ``schema`` the table's declared schema (bounds and
    categories).
    """

    columns: tuple[str, ...]
    schema: Schema
    max_groups: int
    max_by_columns: int
    #: columns grouped by with keys from the data (the table declares ``max_rows``)
    keys_from_data: tuple[str, ...] = ()

    @classmethod
    def of(cls, table: LoadedTable, limits: Limits) -> Policy:
        """The policy of ``table`` (its exposed columns and declared schema) under ``limits``."""
        config = table.config
        return cls(tuple(config.columns), table.schema, limits.max_groups, limits.max_by_columns, config.keys_from_data)

    def check(self, query: Query) -> None:
        """Refuse ``query`` (a one-line :class:`QueryError`, 422) unless this service may release it."""
        declared = ", ".join(self.columns)
        if query.column is not None and query.column not in self.columns:
            raise QueryError(422, f"column must be one of the declared columns ({declared}); got {query.column!r}")
        statistic = query.statistic.value
        if statistic in BOUNDED_STATISTICS and query.column not in self.schema.bounds:
            numeric = ", ".join(c for c in self.columns if c in self.schema.bounds) or "none"
            raise QueryError(422, f"{statistic} needs a numeric column with declared bounds (numeric columns: {numeric})")
        categorical = ", ".join(c for c in self.columns if c in self.schema.categories or c in self.keys_from_data) or "none"
        if query.statistic is Statistic.HISTOGRAM:
            if query.keys is None and query.column not in self.keys_from_data:
                raise QueryError(
                    422, f"histogram needs a categorical column with declared categories (categorical columns: {categorical})"
                )
            if query.keys is not None and len(query.keys) > self.max_groups:
                raise QueryError(422, f"this histogram has {len(query.keys)} categories; the limit is {self.max_groups}")
        if query.by:
            if len(query.by) > self.max_by_columns:
                raise QueryError(422, f"by must list at most {self.max_by_columns} distinct columns")
            for name in query.by:
                if name not in self.columns or (name not in self.schema.categories and name not in self.keys_from_data):
                    expected = f"categorical columns with declared categories or keys from the data ({categorical})"
                    raise QueryError(422, f"by must name {expected}; got {name!r}")
                if name == query.column:
                    raise QueryError(422, "by must not repeat the queried column")
            groups = len(query.keys or ())
            if groups > self.max_groups:
                raise QueryError(422, f"grouping by {', '.join(query.by)} gives {groups} groups; the limit is {self.max_groups}")
        if query.predicate is not None:
            undeclared = [c for c in query.predicate.columns if c not in self.columns]
            if undeclared:
                raise QueryError(422, f"where must use declared columns only ({declared}); got {undeclared[0]!r}")
        if all(part.sensitivity == 0 for part in query.parts):
            raise QueryError(
                422,
                f"under {query.neighbours.value} this query cannot change between neighbours (Δ = 0): "
                "this service releases only noisy values",
            )


__all__ = ["Policy"]
