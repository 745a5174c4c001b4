"""``dpwitness query FILE``: private statistics on a CSV or Parquet file, from the shell."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from dpwitness.cli.core import user_errors
from dpwitness.errors import BudgetExceeded, ParameterError
from dpwitness.queries import ColumnKind, Query
from dpwitness.release import Release

console = Console(highlight=False)
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


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


def query(
    file: Annotated[Path, typer.Argument(help="A CSV or Parquet file.", show_default=False)],
    epsilon: Annotated[float, typer.Option(help="ε for this run, split evenly over the statistics asked for.")],
    count: Annotated[bool, typer.Option("--count", help="Count rows.")] = False,
    sum_: Annotated[list[str] | None, typer.Option("--sum", help="Sum of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    mean: Annotated[list[str] | None, typer.Option(help="Mean of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    variance: Annotated[list[str] | None, typer.Option(help="Variance of COL clamped to [L, U]: COL:L:U (repeatable).")] = None,
    histogram: Annotated[list[str] | None, typer.Option(help="Counts per value of COL (repeatable).")] = None,
    by: Annotated[str | None, typer.Option(help="Group --count, --sum and --mean by this column.")] = None,
    keys: Annotated[str | None, typer.Option(help="Declared (public) keys for --by, comma-separated; else thresholded.")] = None,
    categories: Annotated[str | None, typer.Option(help="Declared categories for --histogram, comma-separated.")] = None,
    neighbours: Annotated[str, typer.Option(help="add-remove or replace-one.")] = "add-remove",
    privacy_unit: Annotated[str | None, typer.Option(help="Column that identifies a person.")] = None,
    max_contributions: Annotated[int, typer.Option(help="Rows kept per privacy unit (Δ scales by it).")] = 1,
    max_groups: Annotated[int | None, typer.Option(help="Groups kept per privacy unit (grouped queries).")] = None,
    engine: Annotated[str, typer.Option(help="polars or spark.")] = "polars",
    ledger: Annotated[Path | None, typer.Option(help="SQLite budget ledger: spends are recorded before any release.")] = None,
    budget: Annotated[float | None, typer.Option(help="Total ε of the ledger account (default: --epsilon).")] = None,
    account: Annotated[str | None, typer.Option(help="Ledger account (default: the file's resolved path).")] = None,
    delta: Annotated[float, typer.Option(help="δ for each thresholded (undeclared-key) release.")] = 1e-6,
    seed: Annotated[int | None, typer.Option(help="Reproducible noise (NOT for production).")] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Show the accuracy each statistic would have; spend nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help='{"releases": [...], "spent": ..., "remaining": ...} on stdout.')
    ] = False,
    html: Annotated[Path | None, typer.Option(help="Write an HTML report with error bars to this path.")] = None,
) -> None:
    """Release counts, sums, means, variances and histograms of FILE under ε (noise added once, exactly)."""
    from dpwitness.session import Session

    with user_errors():
        session = Session(
            str(file),
            epsilon=budget if budget is not None else epsilon,
            neighbours=neighbours,
            privacy_unit=privacy_unit,
            max_contributions=max_contributions,
            max_groups=max_groups,
            engine=engine,
            ledger=ledger,
            account=account,
            seed=seed,
            delta=delta,
        )
        asked: list[tuple[str, str | None, dict[str, Any]]] = []
        kinds = session.schema().columns if keys or categories else {}
        group = {"by": by, "keys": _listed(keys, kinds.get(by or ""))}
        if count:
            asked.append(("count", None, group))
        for option, statistic, texts in (("--sum", "sum", sum_), ("--mean", "mean", mean), ("--variance", "variance", variance)):
            for text in texts or []:
                column, bounds = _bounded(option, text)
                extra = {} if statistic == "variance" else group
                asked.append((statistic, column, {"bounds": bounds, **extra}))
        for column in histogram or []:
            asked.append(("histogram", column, {"keys": _listed(categories, kinds.get(column))}))
        if not asked:
            raise ParameterError("statistics", "at least one of --count, --sum, --mean, --variance, --histogram", "none")
        share = epsilon / len(asked)
        queries = [session.query(statistic, column, epsilon=share, **options) for statistic, column, options in asked]
        costs = [session.cost(q) for q in queries]  # every check, before anything is spent or read
        if preview:
            _show_previews(session, queries, as_json)
            return
        if math.fsum(costs) > session.remaining * (1 + 1e-12):
            raise BudgetExceeded(
                f"asked for ε = {math.fsum(costs):g} but only {session.remaining:g} remains; nothing was released"
            )
        releases = _run(session, queries, large=file.stat().st_size > LARGE_FILE_BYTES)
    if html is not None:
        from dpwitness.report import render_html

        html.write_text(
            render_html(
                releases, title=f"dpwitness: {file.name}", source=str(file), spent=session.spent, remaining=session.remaining
            ),
            encoding="utf-8",
        )
    if as_json:
        payload = {"releases": [r.to_dict() for r in releases], "spent": session.spent, "remaining": session.remaining}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    _show_releases(releases, session.spent, session.remaining)
    if html is not None:
        console.print(f"report written to {html}")


def _run(session: Any, queries: list[Query], *, large: bool) -> list[Release]:
    errors = Console(stderr=True)
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
        payload = {"previews": [p.to_dict() for p in previews], "spent": session.spent, "remaining": session.remaining}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    table = Table("statistic", "ε", "Δ", "scale b", "95% interval", "notes", title="Preview (nothing spent)")
    for p in previews:
        interval = "depends on n (see parts)" if p.interval is None else f"± {p.interval[1]:.4g}"
        if p.threshold is not None:
            interval += f"; keys need noisy count ≥ {p.threshold:.4g}"
        parts = "; ".join(f"{part['aggregate']}: b = {float(part['scale']):.4g}" for part in p.parts)
        table.add_row(p.query, f"{p.epsilon:g}", f"{p.sensitivity:.4g}", f"{p.scale:.4g}", interval, parts)
    console.print(table)
    console.print(f"spent {session.spent:g}, remaining {session.remaining:g}")


def _show_releases(releases: list[Release], spent: float, remaining: float) -> None:
    relations = sorted({r.neighbours for r in releases if r.neighbours})
    caption = f"neighbours: {'; '.join(relations)}" if relations else None
    table = Table("statistic", "value", "95% interval", "ε", "Δ", title="Private statistics", caption=caption)
    for r in releases:
        delta = "" if r.delta == 0 else f" (δ = {r.delta:.2g})"
        parts = getattr(r, "parts", ())
        sensitivity = ", ".join(f"{p.sensitivity:g}" for p in parts) if parts else f"{r.sensitivity:.4g}"
        if isinstance(r.value, dict):
            table.add_row(r.query, f"{len(r.value)} keys", "", f"{r.epsilon:g}{delta}", sensitivity)
            intervals = r.interval
            assert isinstance(intervals, dict)
            for key in list(r.value)[:_SHOWN_KEYS]:
                low, high = intervals[key]
                table.add_row(f"  {key}", f"{r.value[key]:,.4f}", f"[{low:,.4f}, {high:,.4f}]", "", "")
            if len(r.value) > _SHOWN_KEYS:
                table.add_row(f"  … {len(r.value) - _SHOWN_KEYS} more (use --json)", "", "", "", "")
        else:
            low, high = (float(x) for x in r.interval)
            table.add_row(r.query, f"{float(r.value):,.4f}", f"[{low:,.4f}, {high:,.4f}]", f"{r.epsilon:g}{delta}", sensitivity)
    console.print(table)
    for r in releases:
        if r.notice:
            console.print(f"[yellow]{r.query}[/]: {r.notice}")
    console.print(f"spent {spent:g}, remaining {remaining:g}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("query")(query)
