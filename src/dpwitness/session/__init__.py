"""A session: private statistics on one table under one total budget.

Order of work for every query, so that a bad parameter or an exhausted budget costs nothing
and reads nothing:

1. build and validate the :class:`~dpwitness.query.queries.Query` (pure parameters);
2. plan it (:mod:`dpwitness.query.planning`): check it against the table's schema (column names
   and kinds: metadata only; whether the table or a filter's result is empty is not public, see
   docs/statistics.md), compile the engine's plan (nothing read), and calibrate the noise;
3. spend ε, atomically and durably when there is a ledger (:class:`BudgetExceeded` here);
4. only then let the engine compute the exact aggregates;
5. add noise once, with the plan's mechanisms, and compose the release (:mod:`dpwitness.session.composing`).

The pieces live by concept: planning and previews in :mod:`dpwitness.query.planning`, composing a
release in :mod:`dpwitness.session.composing`, composite (mean, variance) releases in
:mod:`dpwitness.session.composite`, seeded streams in :mod:`dpwitness.session.streams`.
"""

from __future__ import annotations

import copy
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from dpwitness.common.errors import ParameterError
from dpwitness.common.progress import large_source, progress
from dpwitness.common.validation import check_alpha, check_count
from dpwitness.engines import Engine, engine_for
from dpwitness.io.reader import Dialect
from dpwitness.io.schema import load_schema, untyped_notes
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.mechanisms.quantiles import accuracy_note, check_quantiles, rank_error
from dpwitness.mechanisms.release import Release
from dpwitness.noise import EPSILON_RANGE, bit_source
from dpwitness.privacy.budget import Accountant, Budget, Ledger, Spend, check_total
from dpwitness.privacy.neighbours import ContributionBound, Neighbours, partition_threshold
from dpwitness.query.planning import DEFAULT_DELTA, PARTITION_DELTA_MARGIN, Plan, Preview, check_mechanism, max_delta
from dpwitness.query.queries import Key, Query, Schema, Statistic, check_keys, parse_dtypes
from dpwitness.session.composing import compose, release_notes
from dpwitness.session.composite import CompositeRelease
from dpwitness.session.streams import query_streams, selection_key


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
    :meth:`preview`): Gaussian noise for a count, sum or histogram over declared keys, calibrated
    to the query's ε and ``delta`` and its L2 Δ (``Part.l2_sensitivity``); "auto" takes the
    one with the smaller variance when the account has δ (or is a ρ total) and says so.
    ``seed`` makes releases reproducible (NOT for production): query i gets its own stream,
    spawned from the seed by its position in the account's history, so no two share noise.
    ``separator`` (``,`` ``;`` ``|`` or a tab; default: a tab for ``.tsv``, else a comma) is a
    CSV's field separator; every CSV is read by :mod:`dpwitness.io.reader` (one line, one record).
    ``schema`` (a :class:`~dpwitness.io.schema.Schema` or the path of its TOML file, see
    docs/schema.md) is the data owner's declaration: column types (instead of ``dtypes``),
    bounds, categories and the privacy unit (the session's default unit). Every query is checked
    against it before any spend, and the file's header against it on first use. Without one, a
    CSV column is text, read as numbers where a query needs numbers, and the release says so.
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
    ) -> None:
        continuing = epsilon is None and rho is None and ledger is not None  # the ledger's stored total
        wanted = None if continuing else check_total(epsilon=epsilon, delta=delta_budget, rho=rho)
        self.neighbours = Neighbours.parse(neighbours)
        self.declared_schema = load_schema(schema)  # validated; reads the TOML, never the data
        if self.declared_schema is not None:
            if dtypes is not None:
                raise ParameterError("dtypes", "None when schema= declares the column types", dtypes)
            declared_unit = self.declared_schema.privacy_unit
            if declared_unit is not None and privacy_unit not in (None, declared_unit):
                raise ParameterError("privacy_unit", f"the schema's privacy unit {declared_unit!r} (or None)", privacy_unit)
            privacy_unit = privacy_unit if declared_unit is None else declared_unit
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
        self.releases: list[Release] = []

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
        split: Sequence[float] | None = None,
        where: str | None = None,
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """Population variance of clamp(column, L, U), from noisy moments (three parts share ε)."""
        options: dict[str, Any] = {"bounds": bounds, "split": split, "where": where, "delta": delta}
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
        alpha: float = 0.05,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        max_rows: int | None = None,
    ) -> Release:
        """The q-quantile(s) of clamp(column, L, U), per declared key with ``by``: one noisy
        histogram of ``bins`` bins of [L, U], post-processed (several q share it: one spend).
        See :mod:`dpwitness.mechanisms.quantiles` for the method and the rank-error guarantee."""
        options: dict[str, Any] = {
            "bounds": bounds, "by": by, "keys": keys, "quantiles": q, "bins": bins, "where": where, "delta": delta,
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
        query = self.query(statistic, column, epsilon=self._statistic_epsilon(epsilon, rho), **options)
        return self.run(query, alpha=alpha, mechanism=mechanism, rho=rho, max_rows=max_rows)

    def _statistic_epsilon(self, epsilon: float | None, rho: float | None) -> float:
        """The query's ε: the one given, or for ``rho=`` alone the ε of a pure release with that ρ
        (√(2ρ): it only sizes the query; a ρ release is charged its ρ, see :meth:`run`)."""
        if epsilon is not None and rho is not None:
            raise ParameterError("rho", "given alone: a statistic's budget is epsilon= or rho=, not both", rho)
        if rho is not None:
            rho = check_rho_option(rho, self.total)
            return math.sqrt(2 * rho)
        if epsilon is None:
            raise ParameterError("epsilon", "the ε of this statistic (or rho= on an account whose total is ρ)", None)
        return epsilon

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
        where: str | None = None,
    ) -> Query:
        """The validated description of a query under this session's relation, privacy unit and order.

        With a declared ``schema=``, a statistic needing bounds takes the column's declared bounds
        when ``bounds`` is None, and ``by`` (or a histogram's column) without ``keys`` takes the
        declared categories (their product for several columns): declared keys, no δ."""
        grouping = (by,) if isinstance(by, str) else tuple(by or ())  # a by string is one column
        keys = None if keys is None else check_keys(keys)  # a keys string is refused, never split
        declared = self.declared_schema
        if declared is not None:
            if bounds is None and isinstance(statistic, str) and statistic in _BOUNDED_STATISTICS:
                bounds = declared.bounds_for(column)
            if keys is None:
                if grouping:
                    keys = declared.keys_for(grouping)
                elif statistic == "histogram" and column is not None:
                    keys = declared.keys_for((column,))
        return Query(
            statistic=statistic,  # type: ignore[arg-type]
            epsilon=epsilon,
            column=column,
            bounds=bounds,
            by=grouping,
            keys=keys,
            neighbours=self.neighbours,
            privacy_unit=self.privacy_unit,
            max_contributions=self.max_contributions,
            max_groups=self.max_groups,
            split=None if split is None else tuple(split),
            delta=self.delta if delta is None else delta,
            explicit_delta=delta is not None,
            quantiles=check_quantiles(quantiles) if quantiles is not None else None,
            bins=bins,
            where=where,
            order_by=self.order_by,
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
            options["epsilon"] = self._statistic_epsilon(options.get("epsilon"), rho)
            query = self.query(statistic, column, **options)
        alpha = check_alpha(alpha)
        plan = self._plan(query, mechanism, rho=rho, max_rows=max_rows)
        query = plan.query
        z = math.log(1.0 / alpha)
        parts = tuple(
            {
                "aggregate": p.aggregate.value,
                "epsilon": query.epsilon_of(p),
                "sensitivity": p.sensitivity,
                "scale": p.sensitivity / query.epsilon_of(p),
                "half_width": z * p.sensitivity / query.epsilon_of(p),
            }
            for p in query.parts
        )
        main = query.parts[-1]
        scale = main.sensitivity / query.epsilon_of(main)
        sensitivity = main.sensitivity
        notes = [*release_notes(query, plan), *untyped_notes(query, self._table_schema().columns)]
        interval: tuple[float, float] | None = (-z * scale, z * scale)
        if query.statistic in (Statistic.MEAN, Statistic.VARIANCE):
            interval = None
            notes.append("the interval depends on the private n: ≈ ±(w_sum + |mean − centre|·w_count)/n, see parts")
        if query.statistic is Statistic.QUANTILE:  # the accuracy is a rank error, stated before the spend
            assert query.bounds is not None and query.bins is not None and plan.mechanisms[0].noise is not None
            rank = rank_error(plan.mechanisms[0].noise.scale, query.bins, alpha)
            interval = None
            parts = ({**parts[0], "rank_error": rank, "bin_width": (query.bounds[1] - query.bounds[0]) / query.bins},)
            notes.append(accuracy_note(rank=rank, bounds=query.bounds, bins=query.bins, alpha=alpha))
        if plan.gaussian:  # σ and the normal interval, not Laplace's b
            gaussians = [m for m in plan._all if isinstance(m, Gaussian)]
            parts = tuple(
                {
                    **{k: v for k, v in part.items() if k != "epsilon" or m.rho is None},  # a ρ part has no ε
                    "mechanism": "gaussian",
                    "sensitivity": m.sensitivity,
                    "scale": m.sigma,
                    "half_width": m.interval(alpha),
                    **({"rho": m.rho} if m.rho is not None else {}),
                }
                for part, m in zip(parts, gaussians, strict=True)
            )
            scale, sensitivity = gaussians[-1].sigma, gaussians[-1].sensitivity
            interval = (-gaussians[-1].interval(alpha), gaussians[-1].interval(alpha))
        return Preview(
            query.label, plan.cost, sensitivity, scale, interval, alpha, parts, plan.threshold, plan.delta, tuple(notes)
        )

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
            position = len(self._accountant.history) - 1
        seeds = query_streams(self.seed, position, query, len(query.parts) + 1)
        long = self.engine.name == "spark" or large_source(self.source)  # a Spark job or a large file: show progress
        try:
            with progress(f"{self.engine.name}: {query.label}", enabled=long):
                exact = self.engine.aggregate(self._opened(), query, selection_key=selection_key(seeds[0]))
        except Exception as error:
            # Nothing after the spend may depend on the data; if an engine fails anyway, its
            # message may quote a value from the data: withhold it (the type says what kind).
            raise RuntimeError(
                f"the {self.engine.name} engine failed after ε was spent ({type(error).__name__}); "
                "its message is withheld because it may quote the data — please report this"
            ) from None
        release = compose(query, plan, exact, seeds[1:], seed=self.seed).with_alpha(alpha)
        read_as_numbers = untyped_notes(query, self._table_schema().columns)
        if read_as_numbers:
            release = replace(release, notes=(*release.notes, *read_as_numbers))
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
    ) -> Any:
        """Answer one SQL ``SELECT`` (see docs/sql.md): each aggregate is one :class:`Query` of this
        session, ``epsilon`` the statement's total (split evenly over aggregates without their own
        ``EPSILON(aggregate, ε)``). The table is named after the source (``adult.csv`` → ``adult``;
        a frame: ``data``) unless ``name`` is given. ``public`` names the public (lookup) tables the
        statement may JOIN (name → Polars DataFrame or CSV/Parquet path; their values are public).
        Returns a :class:`dpwitness.sql.Answer`, or with ``explain`` (or ``EXPLAIN SELECT …``) a
        :class:`dpwitness.sql.Explanation` and spends nothing. Anything refused is refused before
        any spend (:class:`dpwitness.sql.SqlError`)."""
        from dpwitness import sql

        return sql.run(self, statement, epsilon=epsilon, alpha=alpha, explain=explain, name=name, public=public)

    def over(self, derive: Callable[[Engine, Any], Any]) -> Session:
        """This session over ``derive(engine, table)``, a table derived from this one's opened table
        (the private table joined with a public one, for SQL): the same account, options, seed and
        list of releases. Nothing is read."""
        view = copy.copy(self)
        view._handle, view._schema, view.declared_schema = derive(self.engine, self._opened()), None, None
        return view

    # --- internals ------------------------------------------------------------------------
    def _plan(self, query: Query, mechanism: str | None = None, *, rho: float | None = None, max_rows: int | None = None) -> Plan:
        if not isinstance(query, Query):
            raise ParameterError("query", "a dpwitness.query.queries.Query", query)
        wanted = self.mechanism if mechanism is None else check_mechanism(mechanism)
        rows = self.max_rows if max_rows is None else check_max_rows(max_rows)
        if rows is not None and max_rows is not None and not query.explicit_delta and not self._delta_given:
            query = replace(query, delta=max_delta(rows))  # the default δ follows the bound asked for
        total = self._accountant.total
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
        exposure = self._check_selection_delta(query, rows)
        if rho is None:
            _check_part_epsilons(query)
        # Built (and so validated) before anything is spent; charged for every key a unit can move.
        mechanisms = tuple(
            Laplace(sensitivity=p.sensitivity, epsilon=query.epsilon_of(p), changed_coordinates=p.changed_coordinates)
            for p in query.parts
        ) if rho is None else ()  # fmt: skip
        gaussians, choice = self._gaussian_for(query, mechanisms, wanted, rho)
        if gaussians is not None:
            return Plan(query, cast(tuple[Laplace, ...], gaussians), None, 0.0 if rho is not None else query.delta, None, choice)
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

    def _gaussian_for(
        self, query: Query, laplace: tuple[Laplace, ...], wanted: str, rho: float | None = None
    ) -> tuple[tuple[Gaussian, ...] | None, str]:
        """Gaussian mechanisms for ``query`` if ``wanted`` (or if "auto" finds them better), and the note;
        with ``rho``, calibrated to ρ-zCDP (each part its share of ρ)."""
        if wanted == "laplace":
            return None, ""
        eligible = (
            len(query.parts) == 1
            and query.statistic in (Statistic.COUNT, Statistic.SUM, Statistic.HISTOGRAM)
            and (query.declared or not query.grouped)
        )
        total = self._accountant.total
        if not eligible:
            if rho is not None:
                raise ParameterError(
                    "rho", "only for a count, sum or histogram over declared keys (a ρ release is Gaussian)", rho
                )
            if wanted == "gaussian":
                expected = "laplace for this query (gaussian: a count, sum or histogram over declared keys)"
                raise ParameterError("mechanism", expected, wanted)
            return None, "mechanism: laplace (auto: the only one for this query)"
        if rho is not None:
            gaussians = tuple(
                Gaussian(sensitivity=p.l2_sensitivity, rho=rho * p.share, changed_coordinates=p.changed_coordinates)
                for p in query.parts
            )
            main = query.parts[-1]
            return gaussians, (
                f"mechanism: gaussian at ρ = {rho:g} (zCDP), σ = {gaussians[-1].sigma:.4g}, L2 Δ = {main.l2_sensitivity:.4g}"
            )
        if total.delta <= 0 and not total.is_zcdp:
            if wanted == "gaussian":
                raise ParameterError(
                    "mechanism",
                    "laplace or auto on this account: its total has no δ and no ρ (a Gaussian release needs "
                    "delta_budget=… or a ρ total)",
                    wanted,
                )
            return None, "mechanism: laplace (auto: the account has no δ for a Gaussian release)"
        # L2 Δ per part, derived with its L1 Δ (Query.parts): k·√g for a unit in ≤ g keys, not g·k
        gaussians = tuple(
            Gaussian(
                sensitivity=p.l2_sensitivity,
                epsilon=query.epsilon_of(p),
                delta=query.delta,
                changed_coordinates=p.changed_coordinates,
            )
            for p in query.parts
        )
        laplace_variance, gaussian_variance = laplace[-1].variance, gaussians[-1].variance
        if wanted == "auto" and laplace_variance <= gaussian_variance:
            why = f"variance {laplace_variance:.4g} ≤ Gaussian {gaussian_variance:.4g} at δ = {query.delta:.3g}"
            return None, f"mechanism: laplace (auto: {why})"
        why = f" (auto: variance {gaussian_variance:.4g} < Laplace {laplace_variance:.4g})" if wanted == "auto" else ""
        main = query.parts[-1]
        return gaussians, (
            f"mechanism: gaussian at (ε, δ) = ({query.epsilon:g}, {query.delta:.3g}), σ = {gaussians[-1].sigma:.4g}, "
            f"L2 Δ = {main.l2_sensitivity:.4g} (L1 Δ = {main.sensitivity:g}){why}"
        )

    def _check_selection_delta(self, query: Query, max_rows: int | None) -> float | None:
        """A release over undeclared keys costs δ: it needs a declared ``max_rows``, a δ of at
        most 1/(10·max_rows) and a δ budget. Returns max_rows·δ, the bound on the expected
        number of unique keys it exposes (None for declared keys)."""
        if not query.grouped or query.declared:
            return None
        if max_rows is None:
            raise ParameterError(
                "max_rows",
                "a declared bound on the table's rows (privacy units with privacy_unit) for a release over "
                "undeclared keys, whose δ is sized to it; or declare the keys",
                None,
            )
        cap = max_delta(max_rows)
        if query.delta > cap * (1 + 1e-12):
            raise ParameterError("delta", f"at most 1/(10·max_rows) = {cap:.3g} for max_rows = {max_rows}", query.delta)
        if self._accountant.total.delta <= 0:
            raise ParameterError(
                "delta_budget", "a total δ > 0 (delta_budget=…) for a release over undeclared keys, which costs δ", 0.0
            )
        return max_rows * query.delta

    def _opened(self) -> Any:
        if self._handle is None:
            declared = self.declared_schema
            if declared is None:
                self._handle = self.engine.open(self.source, dtypes=self.dtypes or None, separator=self.separator)
            else:  # the header must hold every declared column; then the declared types apply
                handle = self.engine.open(self.source, separator=self.separator)
                declared.check_header(self.engine.schema(handle).columns, source=_source_name(self.source))
                self._handle = self.engine.open(handle, dtypes=declared.dtypes)
        return self._handle

    def _table_schema(self) -> Schema:
        if self._schema is None:
            self._opened()  # the declared schema is checked against the header first
            self._schema = self.declared_schema or self.engine.schema(self._opened())
        return self._schema


#: The statistics that clamp to bounds (a declared schema's bounds are their default).
_BOUNDED_STATISTICS = frozenset({"sum", "mean", "variance", "quantile"})


def check_max_rows(max_rows: Any) -> int:
    """A declared bound on rows (privacy units with ``privacy_unit``): a whole number ≥ 1.

    :param max_rows: the value given as ``max_rows=``; a bool, a non-integer or a number < 1
        raises :class:`~dpwitness.common.errors.ParameterError` naming ``max_rows``.
    """
    return check_count("max_rows", max_rows, expected="a whole number ≥ 1 (a declared bound on rows or units, not a count)")


def check_rho_option(rho: Any, total: Budget) -> float:
    """A statistic's ``rho=``: a number > 0, only on an account whose total is ρ."""
    from dpwitness.common.validation import check_positive_finite

    value = check_positive_finite("rho", rho)
    if not total.is_zcdp:
        raise ParameterError(
            "rho",
            f"only on an account whose total is ρ (Session(rho=…)); this account's total is {total}: "
            "give epsilon= (with delta= and mechanism='gaussian' for a Gaussian release)",
            rho,
        )
    return value


def _check_part_epsilons(query: Query) -> None:
    """Each noisy part's share of ε within the range its noise is calibrated for (a mean's two
    parts get half each by default): the statistic's ε is refused, saying why, before any spend."""
    low, high = EPSILON_RANGE
    shares = [query.epsilon_of(p) for p in query.parts]
    if len(shares) > 1 and not all(low <= e <= high for e in shares):
        need = max(low / p.share for p in query.parts)
        top = min(high / p.share for p in query.parts)
        split = ", ".join(f"{p.aggregate.value} {p.share:g}" for p in query.parts)
        raise ParameterError(
            "epsilon",
            f"in [{need:g}, {top:g}] for this {query.statistic.value}: its {len(shares)} noisy parts share ε ({split}) and "
            f"each part's noise is calibrated for ε in [{low:g}, {high:g}] (docs/statistics.md)",
            query.epsilon,
        )


def _plain_budget(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _source_name(source: Any) -> str:
    return Path(source).name if isinstance(source, str | os.PathLike) else "the table"


def _account_for(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return f"file:{Path(source).resolve()}"
    return "dataframe"


__all__ = ["CompositeRelease", "Preview", "Session"]
