"""Answering SQL on a session (``Session.sql``): compile the statement against the session's
table (:mod:`dpwitness.sql`, which never imports the session), check every query and the budget
for all of them together, then spend and release each aggregate once and post-process the
values (:func:`dpwitness.sql.answer.answer_of`). ``EXPLAIN`` previews and spends nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_alpha
from dpwitness.engines.derived import add_case
from dpwitness.engines.joins import join_public
from dpwitness.io.schema import load_schema, schema_beside
from dpwitness.mechanisms.release import Release
from dpwitness.query.planning import Preview
from dpwitness.query.queries import Key, Schema
from dpwitness.session.joins import joined
from dpwitness.sql.answer import Answer, Explanation, answer_of
from dpwitness.sql.compile import compile_statement, table_name
from dpwitness.sql.parse import SqlError
from dpwitness.sql.statement import Aggregate, Statement

if TYPE_CHECKING:
    from dpwitness.session.session import Session


def compile_for(
    session: Session,
    statement: str,
    *,
    epsilon: float | None,
    name: str | None = None,
    public: Mapping[str, Any] | None = None,
    private: Mapping[str, Any] | None = None,
    max_rows_per_key: Any = None,
    max_rows_per_unit: Any = None,
) -> Statement:
    """Compile ``statement`` against ``session``'s table (reads its schema only; spends nothing).

    :param epsilon: the statement's total ε, split evenly over the aggregates without an
        ``EPSILON(aggregate, ε)`` of their own; None only when every aggregate has one.
    :param name: the table's name in SQL, a non-empty text; None (default) takes
        :func:`table_name` of the session's source.
    :param public: the public tables a JOIN may name (name → Polars DataFrame or CSV/Parquet
        path); None (default) allows no JOIN.
    :param private: the other private tables a JOIN may name (name → Polars frame or CSV/Parquet
        path; the same privacy unit column), opened by the session's engine for their schema only.
    :param max_rows_per_key: a private JOIN's truncation, k or (k_left, k_right) rows per key value
        (required for one); ``max_rows_per_unit`` m or (m_left, m_right) (default: the session's
        ``max_contributions``). See :class:`dpwitness.query.resolve.PrivateJoin`.
    """
    if name is not None and not (isinstance(name, str) and name):
        raise ParameterError("name", "the table's name in SQL (a non-empty text)", name)
    return compile_statement(
        statement,
        table=name or table_name(session.source),
        schema=session.schema(),
        epsilon=epsilon,
        resolve=session.resolve,
        privacy_unit=session.privacy_unit,
        declared=session.declared_schema,
        public=public,
        private=_opened_private(session, private),
        max_rows_per_key=max_rows_per_key,
        max_rows_per_unit=max_rows_per_unit,
    )


def _opened_private(session: Session, private: Mapping[str, Any] | None) -> dict[str, tuple[Any, Schema]]:
    """Each other private table opened, with its schema (metadata only: a CSV's header, a Parquet
    footer). A CSV's column types are declared as the session's own are: by the schema file beside
    it (``visits.schema.toml`` beside ``visits.csv``), else its columns are text."""
    if private is not None and not isinstance(private, Mapping):
        raise ParameterError("private", "a mapping of table names to Polars frames or CSV/Parquet paths", type(private).__name__)
    opened = {}
    engine = session.engine
    for table, source in (private or {}).items():
        if not (isinstance(table, str) and table):
            raise ParameterError("private", "table names (non-empty texts)", type(table).__name__)
        handle = engine.open(source)
        declared = load_schema(schema_beside(source))
        if declared is not None:  # the header must hold every declared column; then the declared types apply
            declared.check_header(engine.schema(handle).columns, source=Path(source).name)
            handle = engine.open(handle, dtypes=declared.dtypes)
        opened[table] = (handle, engine.schema(handle))
    return opened


def target(session: Session, compiled: Statement) -> Session:
    """The session the statement's queries run on: ``session``, or over its table joined with the public one
    and with the columns of ``GROUP BY CASE …`` added.

    :param compiled: the statement from :func:`compile_for`; its JOIN, if any, picks the table.
    """
    join, on, cases = compiled.join, compiled.join_on, compiled.cases
    session = joined(session, compiled.private_join)  # two private tables joined (Request.join): the rows read
    if (join is None or on is None) and not cases:
        return session

    def derive(engine: Any, handle: Any) -> Any:
        if join is not None and on is not None:
            handle = join_public(engine, handle, join, left=on)
        for case in cases:  # GROUP BY CASE …: a key column computed from each row
            handle = add_case(engine, handle, case)
        return handle

    return session.over(derive)


def run(
    session: Session,
    statement: str,
    *,
    epsilon: float | None,
    alpha: float = 0.05,
    explain: bool = False,
    name: str | None = None,
    public: Mapping[str, Any] | None = None,
    **joins: Any,
) -> Answer | Explanation:
    """Answer ``statement`` on ``session`` (``Session.sql``): compile, check every query and the
    budget for all of them together, then spend and release each aggregate once.

    :param epsilon: the statement's total ε (see :func:`compile_for`).
    :param alpha: each interval misses the true value with probability ``alpha`` (default
        0.05, in (0, 1)).
    :param explain: True returns the :class:`Explanation` (as ``EXPLAIN SELECT …`` does) and
        spends nothing; default False.
    :param name: the table's name in SQL (default: :func:`table_name` of the source).
    :param public: the public tables a JOIN may name (name → Polars DataFrame or CSV/Parquet path).
    :param joins: ``private``, ``max_rows_per_key``, ``max_rows_per_unit`` (see :func:`compile_for`).
    """
    alpha = check_alpha(alpha)
    compiled = compile_for(session, statement, epsilon=epsilon, name=name, public=public, **joins)
    over = target(session, compiled)
    if explain or compiled.explain:
        return explain_statement(over, compiled, alpha=alpha)
    refuse_targets(compiled)
    over.check_budget(list(compiled.queries))  # every check of every query, and the budget for all: before any spend
    return execute(over, compiled, alpha=alpha)


def explain_statement(session: Session, compiled: Statement, *, alpha: float = 0.05) -> Explanation:
    """The plan: one :meth:`Session.preview` per aggregate (nothing spent).

    :param session: the session the queries would run on (:func:`target`).
    :param compiled: the compiled statement.
    :param alpha: the previewed intervals' miss probability (default 0.05).
    """
    if compiled.targets:
        return _planned(session, compiled, alpha)
    previews = tuple(_previewed(session, a, alpha) for a in compiled.aggregates)
    notes = (compiled.epsilon_note, *compiled.notes)
    return Explanation(compiled.text, compiled.aggregates, previews, compiled.keys_from, compiled.epsilon, notes)


def refuse_targets(compiled: Statement) -> None:
    """Refuse (before any spend) to release a statement with target errors: ``WITHIN(…)`` is planned by EXPLAIN.

    :param compiled: the compiled statement (:func:`compile_for`); a :class:`SqlError` naming its
        first aggregate when it has target errors, else nothing.
    """
    if compiled.targets:
        first = compiled.aggregates[0]
        raise SqlError(
            first.text,
            first.position,
            "target errors (WITHIN) are planned, not released: EXPLAIN SELECT … (or explain=True) gives the ε "
            "that meets them; then ask with that ε (EPSILON(aggregate, ε))",
        )


def _planned(session: Session, compiled: Statement, alpha: float) -> Explanation:
    """EXPLAIN with target errors: :meth:`Session.plan` (the one solver) over the aggregates'
    requests, and each aggregate previewed at its planned budget. Nothing spent."""
    from dpwitness.session.target_errors import Target

    mechanism = session.mechanism if session.mechanism in ("laplace", "gaussian") else "laplace"
    targets: list[Target] = []
    for aggregate in compiled.aggregates:
        assert aggregate.target is not None and aggregate.request is not None
        targets.append(Target(aggregate.request, *aggregate.target))
    try:
        plan = session.plan(targets, alpha=alpha, mechanism=mechanism)
    except ParameterError as error:  # name the aggregate whose target cannot be met, and why
        for aggregate, one in zip(compiled.aggregates, targets, strict=True):
            try:
                session.plan([one], alpha=alpha, mechanism=mechanism)
            except ParameterError as own:
                raise SqlError(aggregate.text, aggregate.position, f"this target cannot be planned: {own}") from None
        raise error
    asked = plan.requests()
    previews = tuple(session.preview(session.resolve(r), **r.run_options()) for r in asked)
    planned = tuple(replace(a, query=session.resolve(r)) for a, r in zip(compiled.aggregates, asked, strict=True))
    notes = [compiled.epsilon_note, *compiled.notes]
    if mechanism != session.mechanism:
        notes.append(f"target errors solved for laplace noise (the session's mechanism is {session.mechanism})")
    return Explanation(compiled.text, planned, previews, compiled.keys_from, plan.total.epsilon, tuple(notes), plan)


def _previewed(session: Session, aggregate: Aggregate, alpha: float) -> Preview:
    preview = session.preview(aggregate.query, alpha=alpha)
    if not aggregate.reuses_keys:
        return preview
    return replace(preview, query=preview.query.replace(" over 1 declared keys", " over the keys the first aggregate releases"))


def execute(session: Session, compiled: Statement, *, alpha: float = 0.05) -> Answer:
    """Spend and release each aggregate of a checked statement, then post-process the values.

    :param session: the session the queries run on (:func:`target`), whose account is charged.
    :param compiled: the compiled statement, its queries and budget already checked.
    :param alpha: each interval's miss probability (default 0.05).
    """
    releases: list[Release] = []
    aggregates: list[Aggregate] = []
    keys: tuple[Key, ...] | None = compiled.keys
    extra = ""
    pending = list(compiled.aggregates)
    while pending and compiled.by and keys is None:  # the first release gives the keys the others reuse
        aggregate = pending.pop(0)
        if aggregate.reuses_keys:  # no keys yet (the first aggregate released no group): nothing to release
            continue
        release = session.run(aggregate.query, alpha=alpha)
        assert isinstance(release.value, dict)
        keys = tuple(release.value)
        cap = _most_keys(compiled)
        if len(keys) > cap:  # a grouped quantile bins every key: keep the largest released groups
            value = release.value
            keys = tuple(sorted(keys, key=lambda k: -float(value[k]))[:cap])
            extra = f"the {cap} groups with the largest released {aggregate.text} are answered (a quantile's cells are capped)"
        releases.append(release)
        aggregates.append(aggregate)
    rest: list[Aggregate] = []
    for aggregate in pending:
        if aggregate.reuses_keys:
            if not keys:  # the first aggregate released no group: nothing more to release
                continue
            aggregate = replace(aggregate, query=replace(aggregate.query, keys=keys))
        rest.append(aggregate)
    # The others together: those over the same rows (filter, groups, keys) in one engine pass.
    releases.extend(session.run_all([a.query for a in rest], alpha=alpha))
    aggregates.extend(rest)
    return answer_of(compiled, aggregates, releases, keys, alpha, extra=extra)


def _most_keys(compiled: Statement) -> int:
    """The most released keys the later queries can take (a grouped quantile's keys × bins ≤ MAX_CELLS)."""
    from dpwitness.mechanisms.quantiles import MAX_CELLS

    bins = [a.query.bins for a in compiled.aggregates if a.reuses_keys and a.query.bins]
    return min((MAX_CELLS // b for b in bins), default=1 << 62)


__all__ = ["compile_for", "execute", "explain_statement", "refuse_targets", "run", "target"]
