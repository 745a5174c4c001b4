"""The :class:`Session` class: one table, one account, every query through the order of work
of :mod:`dpwitness.session` (resolve, plan, spend, aggregate, add noise once)."""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from dpwitness.common.errors import ParameterError
from dpwitness.common.progress import large_source, progress
from dpwitness.common.validation import check_alpha
from dpwitness.engines import Engine, batches, engine_for
from dpwitness.io.reader import Dialect, check_encoding
from dpwitness.io.schema import load_schema, schema_beside
from dpwitness.mechanisms.additive import Laplace
from dpwitness.mechanisms.release import FOUND_BESIDE, Release
from dpwitness.noise import bit_source
from dpwitness.privacy.budget import Accountant, Budget, Ledger, Spend, check_total
from dpwitness.privacy.neighbours import ContributionBound, Neighbours, PrivateJoinBound, partition_threshold
from dpwitness.query.planning import DEFAULT_DELTA, PARTITION_DELTA_MARGIN, Plan, Preview, check_mechanism, max_delta
from dpwitness.query.queries import Aggregates, Key, Query, Schema, check_keys, parse_dtypes
from dpwitness.query.resolve import Request, check_max_rows, check_rho_option, resolve
from dpwitness.session.composing import compose
from dpwitness.session.joins import check_joined, joined, joined_all
from dpwitness.session.plans import check_part_epsilons, gaussian_for, gaussian_selection, preview_of, selection_exposure
from dpwitness.session.streams import query_streams, selection_key
from dpwitness.session.target_errors import BudgetPlan, Target, plan_targets

#: Resolved queries and plans a session keeps (:meth:`Session._memoised`); past it, it starts over.
_MEMO_SIZE = 256


class Session:
    """Private statistics on ``source`` within a total budget: ``epsilon`` (with an optional
    ``delta_budget``, the total δ) or ``rho`` (a zCDP total); see docs/budget.md.

    ``source`` is a CSV/Parquet path or a Polars/pandas (Lazy)DataFrame (a Spark DataFrame or
    path with ``engine="spark"``). Constructing a session reads nothing. With ``ledger`` (a
    path or :class:`~dpwitness.privacy.budget.Ledger`) every spend is committed to SQLite before the
    data is read, under ``account`` (default: the source's resolved path, or "dataframe"):
    sessions on the same ledger and account share the budget, across processes and restarts.
    The ledger owns the account's total: a new account stores the total given; reopening
    needs no total (or the same one) and :meth:`raise_budget` raises it explicitly.
    ``delta`` is the δ of one release over undeclared keys (default 1/(10·max_rows));
    such releases need ``max_rows``, a declared bound on the table's rows (privacy units with
    ``privacy_unit``), never its real size, and refuse δ > 1/(10·max_rows).
    ``mechanism`` ("laplace", "gaussian" or "auto"; also per call of :meth:`run` and
    :meth:`preview`): Gaussian noise for a count, sum, histogram (or, asked, a mean over declared
    keys), calibrated to the query's ε and ``delta`` and its L2 Δ (``Part.l2_sensitivity``); over
    undeclared keys the keys are selected by Gaussian thresholding, ``delta`` split between the noise and the selection
    (:func:`dpwitness.privacy.accounting.gaussian_threshold`); "auto" takes the one with the
    smaller variance when the account has δ (or is a ρ total) and says so.
    ``seed`` makes releases reproducible (NOT for production): query i gets its own stream,
    spawned from the seed by its position in the account's history, so no two share noise.
    ``separator`` (``,`` ``;`` ``|`` or a tab; default: a tab for ``.tsv``, else a comma) is a
    CSV's field separator; every CSV is read by :mod:`dpwitness.io.reader` (one line, one record).
    ``encoding`` (e.g. "latin-1", "cp1252"; default: the schema's ``encoding``, else UTF-8) is a
    CSV's text encoding, transcoded to UTF-8 as the file is read; an unknown name is refused.
    ``schema`` (a :class:`~dpwitness.io.schema.Schema` or the path of its TOML file, see
    docs/schema.md) is the data owner's declaration: column types (instead of ``dtypes``),
    bounds, categories and the privacy unit (the session's default unit). Every query is checked
    against it before any spend, and the file's header against it on first use. Without
    ``schema`` or ``dtypes``, a CSV path's ``STEM.schema.toml`` beside it (``people.csv`` →
    ``people.schema.toml``) is the schema, if it exists; every release's notes say which schema
    was used. With none, a CSV column is untyped text: counted, grouped and compared with text,
    but a statistic or a comparison that needs numbers is refused before any spend.
    ``neighbours`` ("add-remove" or "replace-one") is the relation every Δ is derived for;
    ``max_contributions`` (k) and ``max_groups`` (g) bound what one ``privacy_unit`` contributes:
    at most k rows, in at most g keys. ``order_by`` is the declared row order that ``row_number``
    in a ``where`` filter counts in. Every statistic also takes ``alpha`` (its interval holds with
    probability 1 − alpha; default 0.05); a mean or variance ``split`` (its ε over its noisy parts,
    default even); a quantile, median, min or max ``bins`` (the histogram's bins, default 64).
    :meth:`query` names the ``statistic`` ("count", "sum", "mean", "variance", "histogram",
    "quantile", …) and, for a quantile, its ``quantiles`` (q or a list of q).
    """

    def __init__(
        self,
        source: Any,
        *,
        epsilon: float | None = None,
        delta_budget: float | None = None,
        rho: float | None = None,
        neighbours: str = "add-remove",
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        max_groups: int | None = None,
        max_rows: int | None = None,
        engine: str = "polars",
        ledger: str | os.PathLike[str] | Ledger | None = None,
        account: str | None = None,
        seed: int | None = None,
        delta: float | None = None,
        dtypes: Mapping[str, str] | None = None,
        order_by: str | Sequence[str] | None = None,
        mechanism: str = "laplace",
        schema: Any = None,
        separator: str | None = None,
        encoding: str | None = None,
    ) -> None:
        continuing = epsilon is None and rho is None and ledger is not None  # the ledger's stored total
        wanted = None if continuing else check_total(epsilon=epsilon, delta=delta_budget, rho=rho)
        self.neighbours = Neighbours.parse(neighbours)
        beside = schema_beside(source) if schema is None and dtypes is None else None
        self.declared_schema = load_schema(schema if beside is None else beside)  # validated; reads the TOML, never the data
        #: Which schema the releases use, said in each release's notes (None: no declared schema).
        self.schema_note: str | None = _schema_note(schema, beside)
        if self.declared_schema is not None:
            if dtypes is not None:
                raise ParameterError("dtypes", "None when schema= declares the column types", dtypes)
            declared_unit = self.declared_schema.privacy_unit
            if declared_unit is not None and privacy_unit not in (None, declared_unit):
                raise ParameterError("privacy_unit", f"the schema's privacy unit {declared_unit!r} (or None)", privacy_unit)
            privacy_unit = privacy_unit if declared_unit is None else declared_unit
            declared_encoding = self.declared_schema.encoding
            if declared_encoding is not None and check_encoding(encoding) not in (None, declared_encoding):
                raise ParameterError("encoding", f"the schema's encoding {declared_encoding!r} (or None)", encoding)
            encoding = encoding if declared_encoding is None else declared_encoding
        if privacy_unit is not None and not (isinstance(privacy_unit, str) and privacy_unit):
            raise ParameterError("privacy_unit", "a column name or None", privacy_unit)
        ContributionBound.of(max_contributions, max_groups)
        if privacy_unit is None and (max_contributions != 1 or max_groups is not None):
            raise ParameterError("privacy_unit", "a column name when max_contributions ≠ 1 or max_groups is set", privacy_unit)
        if max_rows is not None:
            check_max_rows(max_rows)
        if delta is not None and not (isinstance(delta, float | int) and not isinstance(delta, bool) and 0 < delta < 1):
            raise ParameterError("delta", "a number strictly between 0 and 1", delta)
        if seed is not None:
            bit_source(seed)  # validates
        self.mechanism = check_mechanism(mechanism)
        self.privacy_unit = privacy_unit
        self.max_contributions = max_contributions
        self.max_groups = max_groups
        self.max_rows = max_rows
        self.delta = float(delta) if delta is not None else (max_delta(max_rows) if max_rows is not None else DEFAULT_DELTA)
        self._delta_given = delta is not None
        self._lock = threading.Lock()
        self.seed = seed
        self.dtypes = parse_dtypes(dtypes)  # declared column types (e.g. for a CSV); validated, nothing read
        self.separator = None if separator is None else Dialect(separator).separator  # a CSV's; validated, nothing read
        self.encoding = check_encoding(encoding)  # a CSV's text encoding (None: UTF-8); validated, nothing read
        self.order_by: tuple[str, ...] = (order_by,) if isinstance(order_by, str) else tuple(order_by or ())
        self.engine: Engine = engine_for(engine)
        self.source = source
        store = ledger if isinstance(ledger, Ledger) or ledger is None else Ledger(ledger)
        if account is not None and not (isinstance(account, str) and account.strip()):
            raise ParameterError("account", "a non-empty name for the dataset whose budget this is", account)
        if account is None and store is not None and not isinstance(source, str | os.PathLike):
            raise ParameterError(
                "account",
                "a name for this dataset's budget (account=…) when a ledger is used with an in-memory frame "
                "(a frame has no name, and an account is never derived from the data's content: docs/budget.md)",
                None,
            )
        self.account = account if account is not None else _account_for(source)
        #: True when the account was named by the caller; False for a file's default (its path).
        self.account_given = account is not None
        if wanted is None:
            self._accountant = Accountant(delta=delta_budget, ledger=store, account=self.account)
        elif wanted.is_zcdp:
            self._accountant = Accountant(rho=wanted.rho, delta=delta_budget, ledger=store, account=self.account)
        else:
            self._accountant = Accountant(wanted.epsilon, delta=delta_budget, ledger=store, account=self.account)
        self._handle: Any = None
        self._schema: Schema | None = None
        self._join_bound: PrivateJoinBound | None = None  # the private join these rows are (set by session.joins.joined)
        self.releases: list[Release] = []
        self._memo: dict[Any, Any] = {}  # see _memoised

    # --- budget ---------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The total ε (∞ for a ρ total)."""
        return self._accountant.total.epsilon

    @property
    def total(self) -> Budget:
        """The account's total (ε, δ) or ρ (from the ledger when there is one)."""
        return self._accountant.total

    @property
    def spent(self) -> Budget:
        """What this account's releases satisfy together: the better of basic composition
        (Σε, Σδ) and zCDP composition converted to (ε, δ); ``.rho`` is Σρ."""
        return self._accountant.spent

    @property
    def remaining(self) -> Budget:
        """What one more release could spend: ε (a pure release), δ (selection), ρ."""
        return self._accountant.remaining

    @property
    def history(self) -> list[Spend]:
        """Every spend on this account (from the ledger: earlier sessions included)."""
        return self._accountant.history

    def raise_budget(self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None) -> Budget:
        """Raise the account's total (recorded in the ledger as its own event); returns it."""
        return self._accountant.raise_budget(epsilon=epsilon, delta=delta, rho=rho)

    def check_budget(self, queries: Sequence[Query], *, options: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Raise :class:`~dpwitness.common.errors.BudgetExceeded` unless all ``queries`` together fit
        the remaining budget (after each query's own checks); spends nothing. ``options``: for
        each query, the ``mechanism``/``rho``/``max_rows`` it will be run with (see :meth:`run`)."""
        asked = [dict(o) for o in options] if options is not None else [{} for _ in queries]
        if len(asked) != len(queries):
            raise ParameterError("options", f"one mapping per query ({len(queries)})", len(asked))
        self._accountant.check_all([self._plan(q, **o).spend(q.label) for q, o in zip(queries, asked, strict=True)])

    # --- display and archive ----------------------------------------------------------------
    def __repr__(self) -> str:
        from dpwitness.mechanisms.report import session_text

        return session_text(self)

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import session_html

        return session_html(self)

    def to_dict(self) -> dict[str, Any]:
        """An archive of this session: its releases (reload each with ``Release.from_dict``) and
        the account's spend history from the ledger."""
        return {
            "source": os.fspath(self.source) if isinstance(self.source, str | os.PathLike) else type(self.source).__name__,
            "account": self.account,
            "spent": _plain_budget(self.spent),
            "remaining": _plain_budget(self.remaining),
            "releases": [r.to_dict() for r in self.releases],
            "history": [asdict(spend) for spend in self.history],
        }

    # --- queries --------------------------------------------------------------------------
    # Every statistic takes its budget (``epsilon``, or ``rho`` on a ρ account) and the options
    # that change how it is released, where it is asked: ``mechanism`` ("laplace", "gaussian",
    # "auto"; default the session's), ``delta`` (δ of a Gaussian or of undeclared-key selection;
    # default the session's), ``rho`` (a Gaussian calibrated to ρ-zCDP, on a ρ total only),
    # ``max_rows`` (the declared bound on rows for undeclared keys; default the session's) and
    # ``alpha`` (the interval's 1 − confidence). An option that conflicts with the account's
    # total is a ParameterError naming it, before anything is spent or read. ``bounds`` None and
    # ``by`` without ``keys`` (a histogram without categories) take the declared schema's bounds
    # and categories, when it declares them (see :meth:`query`).
    def count(
        self,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        column: str | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Rows (with a non-null ``column`` if given), or rows per key with ``by``; ``where`` filters rows.

        ``keys``: the declared keys of ``by`` (tuples for several columns); None: keys from the data
        (thresholded, costs δ). Options as for every statistic (see the class docstring)."""
        options: dict[str, Any] = {"by": by, "keys": keys, "where": where, "delta": delta}
        return self._ask("count", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def sum(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Σ clamp(column, L, U) over non-null rows (per key with ``by``; rows where ``where`` holds)."""
        options: dict[str, Any] = {"bounds": bounds, "by": by, "keys": keys, "where": where, "delta": delta}
        return self._ask("sum", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def mean(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        split: Sequence[float] | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Mean of clamp(column, L, U) over non-null rows: noisy centred sum / noisy count
        (``split``: each part's share of ε, default even; each part's ε must be ≥ 0.001)."""
        options: dict[str, Any] = {"bounds": bounds, "by": by, "keys": keys, "split": split, "where": where, "delta": delta}
        return self._ask("mean", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def variance(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        split: Sequence[float] | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Population variance of clamp(column, L, U), from noisy moments (three parts share ε),
        per key with ``by`` (declared ``keys``, or keys from the data as for a grouped mean)."""
        options: dict[str, Any] = {"bounds": bounds, "by": by, "keys": keys, "split": split, "where": where, "delta": delta}
        return self._ask("variance", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def histogram(
        self,
        column: str,
        categories: Sequence[Key] | None = None,
        *,
        epsilon: float | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Counts per value of ``column`` over ``categories`` (declared; default the schema's categories of
        ``column``, if declared), or over thresholded values from the data."""
        if categories is not None:
            categories = check_keys(categories, "categories")
        options: dict[str, Any] = {"keys": categories, "where": where, "delta": delta}
        return self._ask("histogram", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def quantile(
        self,
        column: str,
        q: float | Sequence[float],
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        where: str | None = None,
        bins: int | None = None,
        joint: bool = False,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """The q-quantile(s) of clamp(column, L, U), per declared key with ``by``: one noisy
        histogram of ``bins`` bins of [L, U], post-processed (several q share it: one spend).
        See :mod:`dpwitness.mechanisms.quantiles` for the method and the rank-error guarantee.

        ``joint=True`` releases the levels ``q`` (strictly increasing in (0, 1), ungrouped) in one
        JointExp draw over the exact bin counts (default 4096 bins), ε-DP and charged ε once,
        usually far more accurate than the histogram for several levels
        (:mod:`dpwitness.mechanisms.joint_quantiles`)."""
        options: dict[str, Any] = {
            "bounds": bounds, "by": by, "keys": keys, "quantiles": q, "bins": bins, "where": where, "delta": delta,
            "joint": joint,
        }  # fmt: skip
        return self._ask("quantile", column, options, epsilon, rho, mechanism, max_rows, alpha)

    def median(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        where: str | None = None,
        bins: int | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """The 0.5-quantile: see :meth:`quantile`."""
        options: dict[str, Any] = {"by": by, "keys": keys, "where": where, "bins": bins, "alpha": alpha, "delta": delta}
        return self.quantile(column, 0.5, bounds, epsilon=epsilon, rho=rho, mechanism=mechanism, max_rows=max_rows, **options)

    def min(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        where: str | None = None,
        bins: int | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """A DP minimum: the 0-quantile within [L, U], its rank kept above the noise (the exact
        minimum is not releasable); see docs/statistics.md."""
        options: dict[str, Any] = {"by": by, "keys": keys, "where": where, "bins": bins, "alpha": alpha, "delta": delta}
        return self.quantile(column, 0.0, bounds, epsilon=epsilon, rho=rho, mechanism=mechanism, max_rows=max_rows, **options)

    def max(
        self,
        column: str,
        bounds: tuple[float, float] | None = None,
        *,
        epsilon: float | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        where: str | None = None,
        bins: int | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """A DP maximum: the 1-quantile within [L, U] (see :meth:`min`)."""
        options: dict[str, Any] = {"by": by, "keys": keys, "where": where, "bins": bins, "alpha": alpha, "delta": delta}
        return self.quantile(column, 1.0, bounds, epsilon=epsilon, rho=rho, mechanism=mechanism, max_rows=max_rows, **options)

    def _ask(
        self,
        statistic: str,
        column: str | None,
        options: dict[str, Any],
        epsilon: float | None,
        rho: float | None,
        mechanism: str | None,
        max_rows: int | None,
        alpha: float,
    ) -> Release:
        request = Request(
            statistic, column, epsilon=epsilon, rho=rho, mechanism=mechanism, max_rows=max_rows, alpha=alpha, **options
        )
        return self.ask(request)

    def ask(self, request: Request) -> Release:
        """Resolve ``request`` (:meth:`resolve`) and release it (:meth:`run`, with its options), over the rows of its ``join``."""
        query = self.resolve(request)
        return joined(self, request.join).run(query, **request.run_options())

    def ask_all(self, requests: Sequence[Request]) -> list[Release]:
        """Resolve every one of ``requests`` and release them together (:meth:`run_all`: all checked
        and the budget for all before any spend; those over the same rows in one engine pass; one shared ``join``)."""
        queries = [self.resolve(r) for r in requests]
        return joined_all(self, requests).run_all(queries, options=[r.run_options() for r in requests])

    def results(self) -> Any:
        """Every release of this session as one Polars frame (one row per key; see
        :meth:`dpwitness.mechanisms.release.Release.to_polars` for the columns)."""
        from dpwitness.mechanisms.release import releases_frame

        return releases_frame(self.releases)

    def query(
        self,
        statistic: str,
        column: str | None = None,
        *,
        epsilon: float,
        bounds: tuple[float, float] | None = None,
        by: str | Sequence[str] | None = None,
        keys: Sequence[Key] | None = None,
        split: Sequence[float] | None = None,
        delta: float | None = None,
        quantiles: float | Sequence[float] | None = None,
        bins: int | None = None,
        joint: bool = False,
        where: str | None = None,
    ) -> Query:
        """The validated description of a query under this session's relation, privacy unit and order.

        With a declared ``schema=``, a statistic needing bounds takes the column's declared bounds
        when ``bounds`` is None, and ``by`` (or a histogram's column) without ``keys`` takes the
        declared categories (their product for several columns): declared keys, no δ. ``joint``
        (quantiles only) releases every level in one draw, as :meth:`quantile` says."""
        request = Request(statistic, column, epsilon=epsilon, bounds=bounds, by=by, keys=keys, split=split, delta=delta)
        return self.resolve(replace(request, quantiles=quantiles, bins=bins, joint=joint, where=where))

    def resolve(self, request: Request) -> Query:
        """``request`` as this session's :class:`Query` (:func:`dpwitness.query.resolve.resolve`: the
        declared schema's defaults and every data-free check); reads nothing, spends nothing."""
        if not isinstance(request, Request):
            raise ParameterError("request", "a dpwitness.query.resolve.Request", request)
        total = self.total if request.rho is not None else None
        return cast(Query, self._memoised(("resolve", request, total), lambda: self._resolved(request, total)))

    def _resolved(self, request: Request, total: Budget | None) -> Query:
        return resolve(
            request,
            schema=self.declared_schema,
            neighbours=self.neighbours,
            privacy_unit=self.privacy_unit,
            max_contributions=self.max_contributions,
            max_groups=self.max_groups,
            delta=self.delta,
            order_by=self.order_by,
            total=total,
        )

    def preview(
        self,
        statistic: str | Query,
        column: str | None = None,
        *,
        alpha: float = 0.05,
        mechanism: str | None = None,
        rho: float | None = None,
        max_rows: int | None = None,
        **options: Any,
    ) -> Preview:
        """The scale and interval a query would have, without spending (reads only the schema).

        ``statistic`` is a :class:`~dpwitness.query.queries.Query` or a statistic's name with its
        ``options`` as for :meth:`query` (``epsilon``, ``bounds``, ``by``…); ``alpha``,
        ``mechanism``, ``rho`` and ``max_rows`` as for the statistic methods."""
        if isinstance(statistic, Query):
            query = statistic
        else:
            query = self.resolve(Request(statistic, column, rho=rho, **options))
        alpha = check_alpha(alpha)
        plan = self._plan(query, mechanism, rho=rho, max_rows=max_rows)
        query = plan.query
        return preview_of(query, plan, alpha, self._notes())

    def plan(self, targets: Sequence[Target], *, alpha: float = 0.05, mechanism: str = "laplace") -> BudgetPlan:
        """The smallest budget giving each of ``targets`` (a :class:`~dpwitness.session.target_errors.Target`) its
        half-width at confidence 1 − ``alpha``, and its split (per statistic and per noisy part);
        ``mechanism`` "laplace" or "gaussian" (ρ on a ρ account, else (ε, δ) at the session's δ).
        Reads only the schema and spends nothing; a plan above the remaining budget is returned
        with ``fits`` False. See :mod:`dpwitness.session.target_errors` and docs/budget.md."""
        return plan_targets(self, targets, alpha=alpha, mechanism=mechanism)

    def schema(self) -> Schema:
        """The table's column names and kinds (metadata only: no row is read; no spend)."""
        return self._table_schema()

    def cost(self, query: Query) -> float:
        """The ε ``query`` would spend (0 for a part with Δ = 0), after all its checks; spends nothing."""
        return self._plan(query).cost

    def run(
        self,
        query: Query,
        *,
        alpha: float = 0.05,
        mechanism: str | None = None,
        rho: float | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Spend, aggregate, add noise once: see the module docstring for the order.

        ``alpha``, ``mechanism``, ``rho`` (a Gaussian at ρ-zCDP, charged ρ; ``query``'s ε then
        only sizes it) and ``max_rows`` as for the statistic methods; the session's are the defaults."""
        alpha = check_alpha(alpha)
        plan = self._plan(query, mechanism, rho=rho, max_rows=max_rows)
        seeds = self._spend(plan)
        return self._aggregated(plan, seeds, alpha)

    async def run_async(
        self,
        query: Query,
        *,
        alpha: float = 0.05,
        mechanism: str | None = None,
        rho: float | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """:meth:`run` on an event loop: the spend is awaited (:meth:`Accountant.spend_async`), committed
        before anything is aggregated, as in :meth:`run`; the plan check, the aggregate and the noise
        run on the loop, so use it where they are cheap (a service's cached shapes). Unseeded
        sessions only: a seeded stream is keyed by the spend's position, read with the spend."""
        if self.seed is not None:
            raise ParameterError("seed", "None for run_async (a seeded session's streams follow its spends: run)", self.seed)
        alpha = check_alpha(alpha)
        plan = self._plan(query, mechanism, rho=rho, max_rows=max_rows)
        cost = plan.spend(plan.query.label)
        await self._accountant.spend_async(
            cost.epsilon,
            cost.label,
            delta=cost.delta,
            rho=cost.rho,
            selection_delta=cost.selection_delta,
            tv_distance=cost.tv_distance,
        )  # (BudgetExceeded there, before any data is read)
        return self._aggregated(plan, query_streams(None, 0, plan.query, len(plan.query.parts) + 1), alpha)

    def _aggregated(self, plan: Plan, seeds: Sequence[Any], alpha: float) -> Release:
        """After the spend: ``plan``'s exact aggregates, then its release."""
        query = plan.query
        long = self.engine.name == "spark" or large_source(self.source)  # a Spark job or a large file: show progress
        with progress(f"{self.engine.name}: {query.label}", enabled=long), self._withheld():
            exact = self.engine.aggregate(self._opened(), query, selection_key=selection_key(seeds[0]))
        return self._released(plan, exact, seeds, alpha)

    def run_all(
        self,
        queries: Sequence[Query],
        *,
        alpha: float = 0.05,
        options: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Release]:
        """Release each of ``queries`` as :meth:`run` would, in order; those over the same rows (filter,
        groups, declared keys: :func:`dpwitness.engines.fuse_key`) share one engine pass. All are
        checked, and the budget for all, before any spend; each is spent in order (a seeded session
        gives each its :meth:`run` stream) and gets its own noise. ``options``: per query, the
        ``mechanism``/``rho``/``max_rows``/``alpha`` of :meth:`run`. Returns the releases in order."""
        alpha = check_alpha(alpha)
        asked = [dict(o) for o in options] if options is not None else [{} for _ in queries]
        if len(asked) != len(queries):
            raise ParameterError("options", f"one mapping per query ({len(queries)})", len(asked))
        alphas = [check_alpha(o.pop("alpha", alpha)) for o in asked]
        plans = [self._plan(q, **o) for q, o in zip(queries, asked, strict=True)]
        self._accountant.check_all([p.spend(p.query.label) for p in plans])
        seeds = [self._spend(p) for p in plans]
        exact: list[Aggregates | None] = [None] * len(plans)
        long = self.engine.name == "spark" or large_source(self.source)
        for batch in batches([p.query for p in plans]):
            label = "; ".join(plans[n].query.label for n in batch)
            with progress(f"{self.engine.name}: {label}", enabled=long), self._withheld():
                if len(batch) == 1:
                    query = plans[batch[0]].query
                    found = [self.engine.aggregate(self._opened(), query, selection_key=selection_key(seeds[batch[0]][0]))]
                else:
                    found = self._many(self._opened(), [plans[n].query for n in batch], [seeds[n][0] for n in batch])
            for n, aggregates in zip(batch, found, strict=True):
                exact[n] = aggregates
        done = zip(plans, exact, seeds, alphas, strict=True)
        return [self._released(p, e, s, a) for p, e, s, a in done if e is not None]

    def _many(self, handle: Any, queries: list[Query], streams: list[Any]) -> list[Aggregates]:
        """One engine pass for ``queries``; should the shared plan fail (each query's own plan was
        checked before the spend, the shared one was not), each query's own plan instead."""
        try:
            return self.engine.aggregate_many(handle, queries)
        except Exception:
            return [
                self.engine.aggregate(handle, q, selection_key=selection_key(s)) for q, s in zip(queries, streams, strict=True)
            ]

    def _spend(self, plan: Plan) -> list[Any]:
        """Charge ``plan``'s cost to the account; its streams (the selection key's, then one per part)."""
        query = plan.query
        cost = plan.spend(query.label)
        with self._lock:  # the spend and its position in the history (the seeded stream's index) together
            self._accountant.spend(
                cost.epsilon,
                cost.label,
                delta=cost.delta,
                rho=cost.rho,
                selection_delta=cost.selection_delta,
                tv_distance=cost.tv_distance,
            )
            # (BudgetExceeded there, before any data is read)
            position = self._accountant.history_length - 1 if self.seed is not None else 0  # unseeded: not used
        return list(query_streams(self.seed, position, query, len(query.parts) + 1))

    @contextlib.contextmanager
    def _withheld(self) -> Iterator[None]:
        """An engine failing after the spend: its message may quote the data, withhold it (the type says what kind)."""
        try:
            yield
        except Exception as error:
            raise RuntimeError(
                f"the {self.engine.name} engine failed after ε was spent ({type(error).__name__}); "
                "its message is withheld because it may quote the data — please report this"
            ) from None

    def _released(self, plan: Plan, exact: Aggregates, seeds: Sequence[Any], alpha: float) -> Release:
        """The release of ``plan``'s query from its exact aggregates: noise added once, per part."""
        release = compose(plan.query, plan, exact, seeds[1:], seed=self.seed).with_alpha(alpha)
        if self._notes():
            release = replace(release, notes=(*release.notes, *self._notes()))
        self.releases.append(release)
        return release

    def sql(
        self,
        statement: str,
        *,
        epsilon: float | None = None,
        alpha: float = 0.05,
        explain: bool = False,
        name: str | None = None,
        public: Mapping[str, Any] | None = None,
        private: Mapping[str, Any] | None = None,
        max_rows_per_key: int | tuple[int, int] | None = None,
        max_rows_per_unit: int | tuple[int, int] | None = None,
    ) -> Any:
        """Answer one SQL ``SELECT`` (see docs/sql.md): each aggregate is one :class:`Query` of this session, ``epsilon``
        the statement's total (split evenly over aggregates without their own ``EPSILON(aggregate, ε)``). The table is
        named after the source (``adult.csv`` → ``adult``; a frame: ``data``) unless ``name`` is given. ``public`` names
        the public (lookup) tables the statement may JOIN (name → Polars DataFrame or CSV/Parquet path; their values are
        public); ``private`` the other private tables, ``max_rows_per_key`` and ``max_rows_per_unit`` their truncation
        (:class:`dpwitness.query.resolve.PrivateJoin`). Returns a :class:`dpwitness.sql.Answer`, or with ``explain`` (or
        ``EXPLAIN SELECT …``) a :class:`dpwitness.sql.Explanation` and spends nothing; with target errors
        (``WITHIN(aggregate, error[, min_rows])``) its ``plan`` is :meth:`plan`'s answer and ``epsilon`` is not used.
        Anything refused is refused before any spend (:class:`dpwitness.sql.SqlError`)."""
        from dpwitness.session.sql import run

        joins = {"private": private, "max_rows_per_key": max_rows_per_key, "max_rows_per_unit": max_rows_per_unit}
        return run(self, statement, epsilon=epsilon, alpha=alpha, explain=explain, name=name, public=public, **joins)

    def over(self, derive: Callable[[Engine, Any], Any]) -> Session:
        """This session over ``derive(engine, table)``, a table derived from this one's opened table
        (the private table joined with a public one, for SQL): the same account, options, seed and
        list of releases. Nothing is read."""
        view = copy.copy(self)
        view._handle, view._schema, view.declared_schema = derive(self.engine, self._opened()), None, None
        view._memo = {}  # another table: other plans
        return view

    def _notes(self) -> tuple[str, ...]:
        """What every release of this session says beside its own notes: the schema it used."""
        return () if self.schema_note is None else (self.schema_note,)

    # --- internals ------------------------------------------------------------------------
    def _memoised(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """``build()``, kept under ``key`` (every input that decides it besides this session's fixed
        options and table), so that a query asked again (a service's shapes) is not checked and
        planned again. What raises is not kept; an unhashable key (a list in a request) keeps nothing."""
        try:
            found = self._memo.get(key)
        except TypeError:
            return build()
        if found is None:
            found = build()
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _plan(self, query: Query, mechanism: str | None = None, *, rho: float | None = None, max_rows: int | None = None) -> Plan:
        if not isinstance(query, Query):
            raise ParameterError("query", "a dpwitness.query.queries.Query", query)
        total = self._accountant.total  # read once (a ledger's is a query): the key and the plan's checks
        key = ("plan", query, mechanism, rho, max_rows, total, self._join_bound)
        return cast(Plan, self._memoised(key, lambda: self._planned(query, mechanism, total, rho=rho, max_rows=max_rows)))

    def _planned(self, query: Query, mechanism: str | None, total: Budget, *, rho: float | None, max_rows: int | None) -> Plan:
        """:meth:`_plan` computed against the account's ``total``: every data-free check, then the mechanisms and the plan."""
        check_joined(query, self._join_bound)
        wanted = self.mechanism if mechanism is None else check_mechanism(mechanism)
        rows = self.max_rows if max_rows is None else check_max_rows(max_rows)
        if rows is not None and max_rows is not None and not query.explicit_delta and not self._delta_given:
            query = replace(query, delta=max_delta(rows))  # the default δ follows the bound asked for
        if rho is not None:
            check_rho_option(rho, total)
            if mechanism == "laplace":
                raise ParameterError("mechanism", "gaussian (or omitted) with rho= (a ρ release is Gaussian)", mechanism)
            wanted = "gaussian"
        elif query.explicit_delta and total.delta <= 0 and not total.is_zcdp:
            raise ParameterError(
                "delta",
                "none on this account: its total δ is 0 (pure ε); a release that spends δ needs an account "
                "opened with delta_budget=…",
                query.delta,
            )
        query.check_schema(self._table_schema())
        self.engine.check(self._opened(), query)  # the plan compiles: nothing after the spend fails for the query
        exposure = selection_exposure(query, rows, total)
        if rho is None:
            check_part_epsilons(query)
        # Built (and so validated) before anything is spent; charged for every key a unit can move.
        mechanisms = tuple(
            Laplace(sensitivity=p.sensitivity, epsilon=query.epsilon_of(p), changed_coordinates=p.changed_coordinates)
            for p in query.parts
        ) if rho is None else ()  # fmt: skip
        gaussians, choice = gaussian_for(query, mechanisms, wanted, total, rho)
        if gaussians is not None:
            chosen = cast(tuple[Laplace, ...], gaussians)
            if query.grouped and not query.declared:  # Gaussian thresholding: τ and δ's split, derived in one place
                tau, selection = gaussian_selection(query, gaussians, rho)
                exposure = None if rows is None else rows * selection
                total_delta = selection if rho is not None else query.delta
                return Plan(query, chosen, tau, total_delta, exposure, choice, threshold_delta=selection)
            return Plan(query, chosen, None, 0.0 if rho is not None else query.delta, None, choice)
        if wanted == "laplace" and query.explicit_delta and not (query.grouped and not query.declared):
            raise ParameterError(
                "delta",
                "no δ for a Laplace release over declared keys (pure ε-DP, it spends no δ; δ is for undeclared "
                "keys or mechanism='gaussian')",
                query.delta,
            )
        threshold, delta = None, 0.0
        if query.grouped and not query.declared:
            # The count's sampler is calibrated a little wider than Δ/ε (grid, tables), and a
            # discrete Laplace tail is 1/(1+p) ≥ ½ of a step: take τ from the realised scale,
            # with a relative margin far above those (≈ 1e-8) effects, so δ holds as stated.
            count, sampler = query.parts[0], mechanisms[0].noise
            scale = sampler.scale if sampler is not None else count.sensitivity / query.epsilon_of(count)
            threshold, _ = partition_threshold(scale=scale, bound=query.contribution, delta=query.delta * PARTITION_DELTA_MARGIN)
            delta = query.delta
        return Plan(query, mechanisms, threshold, delta, exposure, choice)

    def _opened(self) -> Any:
        if self._handle is None:
            declared = self.declared_schema
            if declared is None:
                source, dtypes, separator, encoding = self.source, self.dtypes or None, self.separator, self.encoding
                self._handle = self.engine.open(source, dtypes=dtypes, separator=separator, encoding=encoding)
            else:  # the header must hold every declared column; then the declared types apply
                handle = self.engine.open(self.source, separator=self.separator, encoding=self.encoding)
                declared.check_header(self.engine.schema(handle).columns, source=_source_name(self.source))
                self._handle = self.engine.open(handle, dtypes=declared.dtypes)
        return self._handle

    def _table_schema(self) -> Schema:
        if self._schema is None:
            self._opened()  # the declared schema is checked against the header first
            metadata = self.declared_schema or self.engine.schema(self._opened())
            name = Path(self.source).name if isinstance(self.source, str | os.PathLike) else None
            self._schema = replace(metadata, source=name)  # for the message that says how to declare a type
        return self._schema


def _plain_budget(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _schema_note(given: Any, beside: Path | None) -> str | None:
    """The note saying which schema a session's releases use: the one given, or the one found beside the file."""
    if beside is not None:
        return f"schema: {beside.name}, {FOUND_BESIDE}"
    if isinstance(given, str | os.PathLike):
        return f"schema: {Path(given).name} (given)"
    return None if given is None else "schema: the Schema given"


def _source_name(source: Any) -> str:
    return Path(source).name if isinstance(source, str | os.PathLike) else "the table"


def _account_for(source: Any) -> str:
    return f"file:{Path(source).resolve()}" if isinstance(source, str | os.PathLike) else "dataframe"


__all__ = ["Session"]
