"""``dpwitness query FILE``: private statistics on a CSV or Parquet file, from the shell."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperCommand

from dpwitness.cli.core import user_errors
from dpwitness.errors import ParameterError
from dpwitness.queries import ColumnKind, Query
from dpwitness.release import Release
from dpwitness.report import sensitivity_text

console = Console(highlight=False, emoji=False)
#: Above this size the scan gets a progress display (on stderr, only on a terminal).
LARGE_FILE_BYTES = 64 << 20
_SHOWN_KEYS = 40


def _bounded(option: str, text: str) -> tuple[str, tuple[float, float]]:
    """Parse ``COL:L:U`` (the column name may itself contain ':')."""
    pieces = text.rsplit(":", 2)
    if len(pieces) != 3 or not pieces[0]:
        raise ParameterError(option, "COL:L:U (a column and two numbers)", text)
    try:
        return pieces[0], (float(pieces[1]), float(pieces[2]))
    except ValueError:
        raise ParameterError(option, "COL:L:U with numbers L and U", text) from None


def _listed(text: str | None, kind: ColumnKind | None) -> list[Any] | None:
    """Comma-separated keys, read as the key column's kind (so ``--keys 1,2`` matches an integer column)."""
    if text is None:
        return None
    items = [item for item in text.split(",") if item]
    convert: dict[ColumnKind, Any] = {ColumnKind.INTEGER: int, ColumnKind.FLOAT: float, ColumnKind.BOOLEAN: _boolean}
    if kind not in convert:
        return items
    try:
        return [convert[kind](item) for item in items]
    except ValueError:
        raise ParameterError("keys", f"comma-separated values of the key column's kind ({kind.value})", text) from None


def _declared_types(texts: list[str] | None) -> dict[str, str] | None:
    """``--dtype COL:TYPE`` (repeatable) as a mapping for ``Session(dtypes=...)``."""
    if not texts:
        return None
    out: dict[str, str] = {}
    for text in texts:
        column, _, kind = text.rpartition(":")
        if not column or not kind:
            raise ParameterError("dtype", "COL:TYPE with TYPE one of integer, float, string, boolean", text)
        out[column] = kind
    return out


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


def query(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A CSV or Parquet file.", show_default=False)],
    epsilon: Annotated[float, typer.Option(help="ε for this run, split evenly over the statistics asked for.")],
    count: Annotated[bool, typer.Option("--count", help="Count rows.")] = False,
    sum_: Annotated[list[str] | None, typer.Option("--sum", help="Sum of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    mean: Annotated[list[str] | None, typer.Option(help="Mean of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    variance: Annotated[list[str] | None, typer.Option(help="Variance of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    histogram: Annotated[list[str] | None, typer.Option(help="Counts per value of COL (repeatable).")] = None,
    median: Annotated[list[str] | None, typer.Option(help="Median of COL within [L, U]: COL:L:U (repeatable).")] = None,
    quantile: Annotated[
        list[str] | None,
        typer.Option("--quantile", help="Quantiles of COL within [L, U], one spend: COL:L:U:Q1,Q2,… (repeatable)."),
    ] = None,
    minimum: Annotated[
        list[str] | None, typer.Option("--min", help="DP minimum (a guarded 0-quantile) of COL within [L, U]: COL:L:U.")
    ] = None,
    maximum: Annotated[
        list[str] | None, typer.Option("--max", help="DP maximum (a guarded 1-quantile) of COL within [L, U]: COL:L:U.")
    ] = None,
    bins: Annotated[int | None, typer.Option(help="Bins of [L, U] for --median, --quantile, --min, --max (default 64).")] = None,
    by: Annotated[
        str | None,
        typer.Option(help="Group the statistic this follows by this column (before any statistic: every groupable one)."),
    ] = None,
    keys: Annotated[
        str | None, typer.Option(help="Declared (public) keys for the --by before it, comma-separated; else thresholded.")
    ] = None,
    categories: Annotated[str | None, typer.Option(help="Declared categories for --histogram, comma-separated.")] = None,
    neighbours: Annotated[str, typer.Option(help="add-remove or replace-one.")] = "add-remove",
    privacy_unit: Annotated[str | None, typer.Option(help="Column that identifies a person.")] = None,
    max_contributions: Annotated[int, typer.Option(help="Rows kept per privacy unit (Δ scales by it).")] = 1,
    max_groups: Annotated[int | None, typer.Option(help="Groups kept per privacy unit (grouped queries).")] = None,
    where: Annotated[
        str | None, typer.Option(help="Row filter for every statistic, e.g. \"age < 20 and sex == 'Female'\".")
    ] = None,
    dtype: Annotated[
        list[str] | None,
        typer.Option(help="Declare a column's type, COL:integer|float|string|boolean (repeatable); CSV columns are text."),
    ] = None,
    schema: Annotated[
        Path | None,
        typer.Option(
            help="The data owner's declared schema (TOML, from `dpwitness schema FILE`): types, bounds, categories and "
            "privacy unit; the header and every statistic are checked against it before any spend."
        ),
    ] = None,
    order_by: Annotated[str | None, typer.Option(help="The table's declared order, for row_number in --where.")] = None,
    engine: Annotated[str, typer.Option(help="polars or spark.")] = "polars",
    ledger: Annotated[Path | None, typer.Option(help="SQLite budget ledger: spends are recorded before any release.")] = None,
    budget: Annotated[
        float | None,
        typer.Option(help="Total ε of the ledger account: stored when it is created (default --epsilon); must match after."),
    ] = None,
    delta_budget: Annotated[
        float | None, typer.Option(help="Total δ of the account (for undeclared-key releases; default 0, stored like --budget).")
    ] = None,
    raise_budget: Annotated[
        float | None, typer.Option(help="Raise the ledger account's stored total ε to this (recorded as a ledger event).")
    ] = None,
    raise_delta_budget: Annotated[
        float | None, typer.Option(help="Raise the ledger account's stored total δ to this (recorded as a ledger event).")
    ] = None,
    max_rows: Annotated[
        int | None, typer.Option(help="Declared bound on rows (units with --privacy-unit): needed for undeclared keys.")
    ] = None,
    account: Annotated[str | None, typer.Option(help="Ledger account (default: the file's resolved path).")] = None,
    delta: Annotated[
        float | None,
        typer.Option(
            help="δ for each undeclared-key release (default and maximum 1/(10·--max-rows)) and for each Gaussian release."
        ),
    ] = None,
    mechanism: Annotated[
        str,
        typer.Option(
            help="laplace (pure ε), gaussian (ε, --delta; needs --delta-budget or --rho) or auto (the smaller error).",
        ),
    ] = "laplace",
    rho: Annotated[
        float | None, typer.Option(help="A zCDP total ρ for the account instead of a total ε (stored like --budget).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Reproducible noise (NOT for production).")] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Show the accuracy each statistic would have; spend nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help='{"releases": [...], "spent": ..., "remaining": ...} on stdout.')
    ] = False,
    html: Annotated[Path | None, typer.Option(help="Write an HTML report with error bars to this path.")] = None,
    round_counts: Annotated[
        bool, typer.Option("--round", help="Round noisy counts and histograms to whole numbers (post-processing).")
    ] = False,
    clip_at_zero: Annotated[
        bool, typer.Option("--clip-at-zero", help="Set negative noisy counts to 0 (post-processing).")
    ] = False,
) -> None:
    """Release counts, sums, means, variances, histograms and quantiles of FILE under ε (noise added once, exactly)."""
    from dpwitness.budget import Ledger
    from dpwitness.session import Session, _account_for

    with user_errors():
        store = None if ledger is None else Ledger(ledger)
        name = account if account is not None else _account_for(str(file))
        raising = raise_budget is not None or raise_delta_budget is not None
        if raising:
            if store is None:
                raise ParameterError("raise-budget", "used with --ledger (it raises a stored account's total)", raise_budget)
            store.raise_budget(name, epsilon=raise_budget, delta=raise_delta_budget, label="dpwitness query --raise-budget")
        continuing = store is not None and budget is None and rho is None and store.has_account(name)  # the ledger owns it
        session = Session(
            str(file),
            epsilon=None if continuing or (rho is not None and budget is None) else (budget if budget is not None else epsilon),
            rho=None if continuing else rho,
            delta_budget=delta_budget,
            max_rows=max_rows,
            neighbours=neighbours,
            privacy_unit=privacy_unit,
            max_contributions=max_contributions,
            max_groups=max_groups,
            engine=engine,
            ledger=store,
            account=name if store is not None else account,
            seed=seed,
            delta=delta,
            dtypes=_declared_types(dtype),
            schema=schema,
            order_by=order_by,
            mechanism=mechanism,
        )
        asked: list[tuple[str, str | None, dict[str, Any]]] = []
        groups = _groups_by_position(ctx.meta.get(_ARGV, []))
        kinds = session.schema().columns if any(g.get("keys") for g in groups.values()) or categories else {}

        def group(option: str, index: int) -> dict[str, Any]:
            chosen = groups.get((option, index), groups.get(("", 0), {}))
            if option in ("--variance", "--histogram") and (option, index) not in groups:
                return {}  # a --by before every statistic groups only the groupable ones
            named = chosen.get("by")
            return {"by": named, "keys": _listed(chosen.get("keys"), kinds.get(named or ""))} if chosen else {}

        if count:
            asked.append(("count", None, group("--count", 0)))
        for option, statistic, texts in (("--sum", "sum", sum_), ("--mean", "mean", mean), ("--variance", "variance", variance)):
            for index, text in enumerate(texts or []):
                column, bounds = _bounded(option, text)
                asked.append((statistic, column, {"bounds": bounds, **group(option, index)}))
        for index, column in enumerate(histogram or []):
            asked.append(("histogram", column, {"keys": _listed(categories, kinds.get(column)), **group("--histogram", index)}))
        for option, texts, fixed in (
            ("--median", median, 0.5),
            ("--quantile", quantile, None),
            ("--min", minimum, 0.0),
            ("--max", maximum, 1.0),
        ):
            for index, text in enumerate(texts or []):
                column, bounds, qs = _quantile_spec(option, text, fixed)
                asked.append(("quantile", column, {"bounds": bounds, "quantiles": qs, "bins": bins, **group(option, index)}))
        if not asked and raising:
            console.print(f"raised the total of {name!r} to {session.total}")
            return
        if not asked:
            raise ParameterError(
                "statistics",
                "at least one of --count, --sum, --mean, --variance, --histogram, --median, --quantile, --min, --max",
                "none",
            )
        share = epsilon / len(asked)
        queries = [session.query(statistic, column, epsilon=share, where=where, **opts) for statistic, column, opts in asked]
        if delta is not None and mechanism == "laplace" and not any(q.grouped and not q.declared for q in queries):
            expected = "no --delta for Laplace releases over declared keys (pure ε: no δ is spent); or --mechanism gaussian"
            raise ParameterError("delta", expected, delta)
        for q in queries:
            session.cost(q)  # every check, before anything is spent or read
        if preview:
            _show_previews(session, queries, as_json)
            return
        session.check_budget(queries)  # all of them fit together, or nothing is spent
        releases = _run(session, queries, large=file.stat().st_size > LARGE_FILE_BYTES)
        releases = [
            _post_processed(r, q, whole=round_counts, non_negative=clip_at_zero) for r, q in zip(releases, queries, strict=True)
        ]
    if html is not None:
        from dpwitness.report import render_html

        html.write_text(
            render_html(
                releases,
                title=f"dpwitness: {file.name}",
                source=str(file),
                spent=session.spent,
                remaining=session.remaining,
            ),
            encoding="utf-8",
        )
    if as_json:
        payload = {"releases": [r.to_dict() for r in releases], **_budget_json(session)}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    _show_releases(releases, session)
    if html is not None:
        console.print(f"report written to {html}")


def _run(session: Any, queries: list[Query], *, large: bool) -> list[Release]:
    errors = Console(stderr=True, emoji=False)
    releases: list[Release] = []
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=errors,
        transient=True,
        disable=not (large and errors.is_terminal),
    ) as progress:
        task = progress.add_task("scanning", total=len(queries))
        for q in queries:
            progress.update(task, description=f"scanning for {q.label}")
            releases.append(session.run(q))
            progress.advance(task)
    return releases


def _show_previews(session: Any, queries: list[Query], as_json: bool) -> None:
    previews = [session.preview(q) for q in queries]
    if as_json:
        payload = {"previews": [p.to_dict() for p in previews], **_budget_json(session)}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    table = Table("statistic", "ε", "Δ", "scale b", "95% interval", "notes", title="Preview (nothing spent)")
    for p in previews:
        interval = "depends on n (see parts)" if p.interval is None else f"± {p.interval[1]:.4g}"
        if "rank_error" in p.parts[0]:  # a quantile: its accuracy is a rank error and a bin width
            interval = f"rank ± {float(p.parts[0]['rank_error']):.4g} rows, bins of {float(p.parts[0]['bin_width']):.4g}"
        if p.threshold is not None:
            interval += f"; keys need noisy count ≥ {p.threshold:.4g}"
        parts = "; ".join(
            f"{part['aggregate']}: {'σ' if part.get('mechanism') == 'gaussian' else 'b'} = {float(part['scale']):.4g}"
            for part in p.parts
        )
        table.add_row(escape(p.query), f"{p.epsilon:g}", f"{p.sensitivity:.4g}", f"{p.scale:.4g}", interval, parts)
    console.print(table)
    console.print(_budget_line(session))


def _budget_json(session: Any) -> dict[str, Any]:
    """spent, remaining and total, each {"epsilon", "delta", "rho"} (null where it does not apply)."""
    return {"spent": session.spent.to_dict(), "remaining": session.remaining.to_dict(), "total": session.total.to_dict()}


def _budget_line(session: Any) -> str:
    """ε and δ; ρ too where zCDP composition can matter (a ρ total, or a δ budget)."""
    total, spent, remaining = session.total, session.spent, session.remaining
    if not (total.is_zcdp or total.delta > 0):
        spent, remaining = (type(b)(b.epsilon, b.delta, 0.0) for b in (spent, remaining))
    return f"spent {spent}; remaining {remaining}"


def _show_releases(releases: list[Release], session: Any) -> None:
    relations = sorted({r.neighbours for r in releases if r.neighbours})
    caption = f"neighbours: {'; '.join(relations)}" if relations else None
    table = Table("statistic", "value", "95% interval", "ε", "Δ", title="Private statistics", caption=caption)
    for r in releases:
        delta = "" if r.delta == 0 else f" (δ = {r.delta:.2g})"
        if r.distribution == "gaussian":
            delta += f", Gaussian σ = {r.scale:.4g}"
        sensitivity = escape(sensitivity_text(r))
        if isinstance(r.value, dict):
            table.add_row(escape(r.query), f"{len(r.value)} keys", "", f"{r.epsilon:g}{delta}", sensitivity)
            intervals = r.interval
            assert isinstance(intervals, dict)
            for key in list(r.value)[:_SHOWN_KEYS]:
                low, high = intervals[key]
                table.add_row(f"  {escape(str(key))}", f"{r.value[key]:,.4f}", f"[{low:,.4f}, {high:,.4f}]", "", "")
            if len(r.value) > _SHOWN_KEYS:
                table.add_row(f"  … {len(r.value) - _SHOWN_KEYS} more (use --json)", "", "", "", "")
        else:
            low, high = (float(x) for x in r.interval)
            interval = f"[{low:,.4f}, {high:,.4f}]"
            table.add_row(escape(r.query), f"{float(r.value):,.4f}", interval, f"{r.epsilon:g}{delta}", sensitivity)
    console.print(table)
    for r in releases:
        if r.notice:
            console.print(f"[yellow]{escape(r.query)}[/]: {escape(r.notice)}")
    console.print(_budget_line(session))


_ARGV = "dpwitness.query.argv"
_STATISTIC_OPTIONS = ("--count", "--sum", "--mean", "--variance", "--histogram", "--median", "--quantile", "--min", "--max")


class _PositionalCommand(TyperCommand):
    """Keeps the raw arguments, so that ``--by``/``--keys`` apply to the statistic they follow."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        return super().parse_args(ctx, args)


def _groups_by_position(argv: list[str]) -> dict[tuple[str, int], dict[str, str]]:
    """{(statistic option, its occurrence): {"by": …, "keys": …}}; ("", 0) for a --by before any statistic."""
    groups: dict[tuple[str, int], dict[str, str]] = {}
    seen: dict[str, int] = {}
    current: tuple[str, int] = ("", 0)
    tokens = iter(argv)
    for token in tokens:
        name, equals, inline = token.partition("=")
        if name in _STATISTIC_OPTIONS:
            current = (name, seen.get(name, 0))
            seen[name] = current[1] + 1
        elif name in ("--by", "--keys"):
            value = inline if equals else next(tokens, "")
            groups.setdefault(current, {})[name.removeprefix("--")] = value
    return groups


def _quantile_spec(option: str, text: str, fixed: float | None) -> tuple[str, tuple[float, float], Any]:
    """``COL:L:U`` (--median, --min, --max) or ``COL:L:U:Q1,Q2,…`` (--quantile)."""
    if fixed is not None:
        column, bounds = _bounded(option, text)
        return column, bounds, fixed
    head, _, listed = text.rpartition(":")
    if not head or not listed:
        raise ParameterError(option, "COL:L:U:Q1,Q2,… (a column, two numbers and the quantiles in [0, 1])", text)
    column, bounds = _bounded(option, head)
    try:
        return column, bounds, [float(q) for q in listed.split(",")]
    except ValueError:
        raise ParameterError("q", "comma-separated numbers in [0, 1]", listed) from None


def _post_processed(release: Release, query: Query, *, whole: bool, non_negative: bool) -> Release:
    """Round and/or clip a noisy count or histogram at 0: post-processing (no ε), stated in its notes."""
    if query.statistic.value not in ("count", "histogram") or not (whole or non_negative):
        return release

    def fixed(value: float) -> float:
        value = max(value, 0.0) if non_negative else value
        return float(round(value)) if whole else value

    value: Any = release.value
    value = {k: fixed(v) for k, v in value.items()} if isinstance(value, dict) else fixed(float(value))
    done = " and ".join(text for text, on in (("rounded to whole numbers", whole), ("negatives set to 0", non_negative)) if on)
    note = f"post-processed: {done} (no extra ε; the interval is around the processed value, its width unchanged)"
    return replace(release, value=value, notes=(*release.notes, note))


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("query", cls=_PositionalCommand)(query)
