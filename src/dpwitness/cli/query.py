"""``dpwitness query FILE``: private statistics on a CSV or Parquet file, from the shell."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from dpwitness.cli.core import flag_names, ledger_note, user_errors
from dpwitness.common.encoding import dumps
from dpwitness.common.errors import ParameterError
from dpwitness.common.progress import large_source
from dpwitness.mechanisms.release import Release
from dpwitness.query.queries import ColumnKind, Query

console = Console(highlight=False, emoji=False)
_SHOWN_KEYS = 40


def _bounded(option: str, text: str) -> tuple[str, tuple[float, float] | None]:
    """Parse ``COL:L:U`` (the column name may itself contain ':'), or ``COL`` alone: the bounds
    the ``--schema`` declares for it (None here; without them the query names the flag)."""
    if text and ":" not in text:
        return text, None
    pieces = text.rsplit(":", 2)
    if len(pieces) != 3 or not pieces[0]:
        raise ParameterError(option, "COL:L:U (a column and two numbers)", text)
    try:
        return pieces[0], (float(pieces[1]), float(pieces[2]))
    except ValueError:
        raise ParameterError(option, "COL:L:U with numbers L and U", text) from None


def _listed(text: str | None, kind: ColumnKind | None, *, flag: str = "--keys") -> list[Any] | None:
    """Comma-separated keys, read as the key column's kind (so ``--keys 1,2`` matches an integer column)."""
    if text is None:
        return None
    items = [item for item in text.split(",") if item]
    return [_typed(item, kind, flag=flag, text=text) for item in items]


def _typed(item: str, kind: ColumnKind | None, *, flag: str, text: str) -> Any:
    convert: dict[ColumnKind, Any] = {ColumnKind.INTEGER: int, ColumnKind.FLOAT: float, ColumnKind.BOOLEAN: _boolean}
    if kind not in convert:
        return item
    try:
        return convert[kind](item)
    except ValueError:
        raise ParameterError(flag, f"comma-separated values of the key column's kind ({kind.value})", text) from None


def _columns(text: str) -> tuple[str, ...]:
    """``--by a,b``: the key columns, in order."""
    names = tuple(name.strip() for name in text.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise ParameterError("--by", "one column or several distinct columns separated by commas (e.g. sex,income)", text)
    return names


def _key_tuples(text: str, by: tuple[str, ...], kinds: Mapping[str, ColumnKind]) -> list[Any]:
    """``--keys`` for ``--by a,b``: one ``|``-separated tuple per key, e.g. ``Female|>50K,Male|<=50K``."""
    if len(by) == 1:
        return _listed(text, kinds.get(by[0])) or []
    keys: list[Any] = []
    for item in (item for item in text.split(",") if item):
        values = item.split("|")
        if len(values) != len(by):
            raise ParameterError(
                "--keys",
                f"one {'|'.join(by)} tuple per key for --by {','.join(by)} ({len(by)} values joined by '|', keys by ',')",
                text,
            )
        keys.append(tuple(_typed(v, kinds.get(c), flag="--keys", text=text) for v, c in zip(values, by, strict=True)))
    return keys


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
    bins: Annotated[
        int | None, typer.Option(help="Bins of [L, U] for --median, --quantile, --min, --max (default 64; 4096 with --joint).")
    ] = None,
    joint: Annotated[
        bool,
        typer.Option(
            "--joint",
            help="Release each --quantile's levels (strictly increasing in (0, 1)) in one JointExp draw over the exact "
            "bin counts: ε-DP, ε charged once, no noisy histogram (docs/statistics.md).",
        ),
    ] = False,
    by: Annotated[
        str | None,
        typer.Option(
            help="Group the statistic this follows by these columns, COL or COL1,COL2 (before any statistic: every "
            "groupable one)."
        ),
    ] = None,
    keys: Annotated[
        str | None,
        typer.Option(
            help="Declared (public) keys for the --by before it, comma-separated; one |-separated tuple per key for "
            "several columns (Female|>50K,Male|<=50K); else the schema's categories, else thresholded."
        ),
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
    encoding: Annotated[
        str | None,
        typer.Option(help="The CSV's text encoding, e.g. latin-1 or cp1252 (default: the schema's, else UTF-8)."),
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
    raise_rho: Annotated[
        float | None, typer.Option(help="Raise the ledger account's stored total ρ to this (a ρ account; a ledger event).")
    ] = None,
    max_rows: Annotated[
        int | None,
        typer.Option(
            help="Declared bound on rows (units with --privacy-unit): needed for undeclared keys (per statistic, like --by)."
        ),
    ] = None,
    account: Annotated[
        str | None,
        typer.Option(help="The dataset whose budget this is, in the ledger (default: file:<the file's resolved path>)."),
    ] = None,
    delta: Annotated[
        float | None,
        typer.Option(
            help="δ for each undeclared-key release (default and maximum 1/(10·--max-rows)) and for each Gaussian "
            "release (per statistic, like --by)."
        ),
    ] = None,
    mechanism: Annotated[
        str,
        typer.Option(
            help="laplace (pure ε), gaussian (ε, --delta; needs --delta-budget or --rho) or auto (the smaller error); "
            "per statistic, like --by.",
        ),
    ] = "laplace",
    alpha: Annotated[
        float, typer.Option(help="1 − the intervals' confidence (default 0.05: 95%); per statistic, like --by.")
    ] = 0.05,
    rho: Annotated[
        float | None, typer.Option(help="A zCDP total ρ for the account instead of a total ε (stored like --budget).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Reproducible noise (NOT for production).")] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Show the accuracy each statistic would have; spend nothing.")
    ] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Print every note under each release (a note that changes its meaning always shows)."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help='{"releases": [...], "spent": ..., "remaining": ...} on stdout.')
    ] = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="One CSV row per released value on stdout: key columns, value, interval, ε, δ, Δ…")
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
    from dpwitness.privacy.budget import Ledger
    from dpwitness.query.resolve import Request
    from dpwitness.session.session import Session, _account_for

    del by, keys, alpha  # read by position (they apply to the statistic they follow): see _options_by_position
    with user_errors():
        _given_once(ctx.meta.get(_ARGV, []), ctx.meta.get(_SINGLE, set()))
        positions = _options_by_position(ctx.meta.get(_ARGV, []), ctx.meta.get(_FLAGS))
        defaults = positions.get(("", 0), {})
        store = None if ledger is None else Ledger(ledger)
        name = account if account is not None else _account_for(str(file))
        raising = raise_budget is not None or raise_delta_budget is not None or raise_rho is not None
        if raising:
            if store is None:
                flag = next(f for f, v in _RAISES(raise_budget, raise_delta_budget, raise_rho) if v is not None)
                raise ParameterError(flag, "used with --ledger (it raises a stored account's total)", None)
            with flag_names(_RAISE_FLAGS):
                store.raise_budget(
                    name, epsilon=raise_budget, delta=raise_delta_budget, rho=raise_rho, label="dpwitness query --raise-budget"
                )
        with flag_names({"epsilon": "--budget" if budget is not None else "--epsilon"}):
            continuing = store is not None and budget is None and rho is None and store.has_account(name)  # the ledger owns it
            session = Session(
                str(file),
                epsilon=None
                if continuing or (rho is not None and budget is None)
                else (budget if budget is not None else epsilon),
                rho=None if continuing else rho,
                delta_budget=delta_budget,
                max_rows=_number("--max-rows", defaults.get("--max-rows"), int),
                neighbours=neighbours,
                privacy_unit=privacy_unit,
                max_contributions=max_contributions,
                max_groups=max_groups,
                engine=engine,
                ledger=store,
                account=name if store is not None else account,
                seed=seed,
                delta=_number("--delta", defaults.get("--delta"), float),
                dtypes=_declared_types(dtype),
                schema=schema,
                encoding=encoding,
                order_by=order_by,
                mechanism=defaults.get("--mechanism", "laplace"),
            )
        asked: list[tuple[str, str | None, dict[str, Any], tuple[str, int]]] = []
        needs_kinds = categories is not None or any("--keys" in o for o in positions.values())
        kinds = session.schema().columns if needs_kinds else {}

        def group(position: tuple[str, int]) -> dict[str, Any]:
            own = positions.get(position, {})
            if "--by" in own or "--keys" in own:
                chosen = own
            elif position[0] == "--histogram":
                chosen = {}  # a --by before every statistic groups only the groupable ones
                if "--by" not in own and "--keys" in defaults and "--by" not in defaults:
                    chosen = defaults
            else:
                chosen = defaults
            if "--by" not in chosen:
                if "--keys" in chosen:
                    where_ = "before any statistic" if chosen is defaults else f"after {_occurrence(position)}"
                    raise ParameterError("--keys", f"given with a --by {where_} (the keys of its columns)", chosen["--keys"])
                return {}
            columns = _columns(chosen["--by"])
            listed = chosen.get("--keys")
            found = _key_tuples(listed, columns, kinds) if listed is not None else None  # None: the schema's
            return {"by": columns, "keys": found}

        def add(statistic: str, column: str | None, options: dict[str, Any], position: tuple[str, int]) -> None:
            asked.append((statistic, column, options, position))

        if count:
            add("count", None, group(("--count", 0)), ("--count", 0))
        for option, statistic, texts in (("--sum", "sum", sum_), ("--mean", "mean", mean), ("--variance", "variance", variance)):
            for index, text in enumerate(texts or []):
                column, bounds = _bounded(option, text)
                add(statistic, column, {"bounds": bounds, **group((option, index))}, (option, index))
        for index, column in enumerate(histogram or []):
            found = _listed(categories, kinds.get(column), flag="--categories")  # None: the schema's categories
            add("histogram", column, {"keys": found, **group(("--histogram", index))}, ("--histogram", index))
        for option, texts, fixed in (
            ("--median", median, 0.5),
            ("--quantile", quantile, None),
            ("--min", minimum, 0.0),
            ("--max", maximum, 1.0),
        ):
            for index, text in enumerate(texts or []):
                column, bounds, qs = _quantile_spec(option, text, fixed)
                options = {"bounds": bounds, "quantiles": qs, "bins": bins, **group((option, index))}
                if joint and option == "--quantile":
                    options["joint"] = True
                add("quantile", column, options, (option, index))
        if joint and not quantile:
            raise ParameterError("--joint", "given with --quantile COL:L:U:Q1,Q2,… (the levels it releases together)", None)
        if not asked and raising:
            if as_json:
                payload = {"raised": _plain_budget(session.total, session.total), **_budget_json(session, store)}
                sys.stdout.write(dumps(payload, indent=2) + "\n")
                return
            console.print(f"raised the total of {name!r} to {_shown_budget(session.total, session.total)}")
            return
        if not asked:
            raise ParameterError(
                "statistics",
                "at least one of --count, --sum, --mean, --variance, --histogram, --median, --quantile, --min, --max",
                "none",
            )
        share = epsilon / len(asked)
        queries: list[Query] = []
        runs: list[dict[str, Any]] = []
        for statistic, col, opts, position in asked:
            own = {**defaults, **positions.get(position, {})}
            stat_flag = position[0]
            flags = {**_QUERY_FLAGS, "bounds": stat_flag, "column": stat_flag, "q": stat_flag, "joint": "--joint"}
            with flag_names(flags):
                how = {
                    "mechanism": own.get("--mechanism"),
                    "max_rows": _number("--max-rows", positions.get(position, {}).get("--max-rows"), int),
                    "alpha": _number("--alpha", own.get("--alpha"), float),
                }
                if how["alpha"] is None:
                    how["alpha"] = 0.05
                step_delta = _number("--delta", positions.get(position, {}).get("--delta"), float)
                request = Request(statistic, col, epsilon=share, where=where, delta=step_delta, **opts, **how)
                q = session.resolve(request)
                session.preview(q, **request.run_options())  # every check
            queries.append(q)
            runs.append(how)
        uses_delta = any(
            (q.grouped and not q.declared) or (r["mechanism"] or session.mechanism) != "laplace"
            for q, r in zip(queries, runs, strict=True)
        )
        if "--delta" in defaults and not uses_delta:
            expected = "no --delta for Laplace releases over declared keys (pure ε: no δ is spent); or --mechanism gaussian"
            raise ParameterError("--delta", expected, float(defaults["--delta"]))
        if preview:
            _show_previews(session, queries, runs, as_json, store)
            return
        with flag_names(_QUERY_FLAGS):
            session.check_budget(queries, options=[{k: v for k, v in r.items() if k != "alpha"} for r in runs])
        releases = _run(session, queries, runs, large=large_source(str(file)), quiet=as_json or as_csv)
        releases = [
            _post_processed(r, q, whole=round_counts, non_negative=clip_at_zero) for r, q in zip(releases, queries, strict=True)
        ]
    if html is not None:
        from dpwitness.mechanisms.report import render_html, shown_budget

        html.write_text(
            render_html(
                releases,
                title=f"dpwitness: {file.name}",
                source=str(file),
                spent=shown_budget(session.spent, session.total),
                remaining=shown_budget(session.remaining, session.total),
            ),
            encoding="utf-8",
        )
    if as_json:
        payload = {"releases": [r.to_dict() for r in releases], **_budget_json(session, store)}
        sys.stdout.write(dumps(payload, indent=2) + "\n")
        return
    if as_csv:
        from dpwitness.mechanisms.release import releases_frame

        sys.stdout.write(releases_frame(releases).write_csv())
        return
    _show_releases(releases, session, store, explain=explain)
    if html is not None:
        console.print(f"report written to {html}")


def _RAISES(epsilon: float | None, delta: float | None, rho: float | None) -> list[tuple[str, float | None]]:
    return [("--raise-budget", epsilon), ("--raise-delta-budget", delta), ("--raise-rho", rho)]


def _number(flag: str, text: str | None, kind: type[int] | type[float]) -> Any:
    """A per-statistic option's value (read by position), or None when it was not given."""
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ParameterError(flag, "a whole number" if kind is int else "a number", text) from None


#: What the Python parameters are called on this command line (errors name the flag typed).
_RAISE_FLAGS = {
    "epsilon": "--raise-budget",
    "delta": "--raise-delta-budget",
    "rho": "--raise-rho",
    "raise_budget": "--raise-budget",
}
_QUERY_FLAGS = {"rho": "--rho", "delta_budget": "--delta-budget"}


def _run(session: Any, queries: list[Query], runs: list[dict[str, Any]], *, large: bool, quiet: bool) -> list[Release]:
    from dpwitness.common.progress import progress

    releases: list[Release] = []
    with progress("scanning", total=len(queries), enabled=large and not quiet) as bar:
        for q, how in zip(queries, runs, strict=True):
            bar.describe(f"scanning for {q.label}")
            releases.append(session.run(q, **how))
            bar.advance()
    return releases


def _show_previews(session: Any, queries: list[Query], runs: list[dict[str, Any]], as_json: bool, store: Any) -> None:
    previews = [session.preview(q, **how) for q, how in zip(queries, runs, strict=True)]
    if as_json:
        payload = {"previews": [p.to_dict() for p in previews], **_budget_json(session, store)}
        sys.stdout.write(dumps(payload, indent=2) + "\n")
        return
    table = Table("statistic", "ε", "Δ", "scale", "interval", "notes", title="Preview (nothing spent)")
    for p in previews:
        level = f"{1 - p.alpha:.0%}"
        interval = "depends on n (see parts)" if p.interval is None else f"± {p.interval[1]:.4g} ({level})"
        if "rank_error" in p.parts[0]:  # a quantile: its accuracy is a rank error and a bin width
            interval = f"rank ± {float(p.parts[0]['rank_error']):.4g} rows, bins of {float(p.parts[0]['bin_width']):.4g}"
        if p.threshold is not None:
            interval += f"; keys need noisy count ≥ {p.threshold:.4g}"
        parts = "; ".join(
            f"{part['aggregate']}: {'σ' if part.get('mechanism') == 'gaussian' else 'b'} = {float(part['scale']):.4g}"
            for part in p.parts
        )
        shown_epsilon = f"{p.epsilon:.6g}" if math.isfinite(p.epsilon) else "ρ only"
        table.add_row(escape(p.query), shown_epsilon, f"{p.sensitivity:.4g}", f"{p.scale:.4g}", interval, parts)
    console.print(table)
    console.print(escape(_budget_line(session, store)))


def _budget_json(session: Any, store: Any) -> dict[str, Any]:
    """spent, remaining and total, each {"epsilon", "delta", "rho"} (null where it does not apply;
    ρ only on a ρ account), the account, the ledger, and what happens to the budget without one."""
    total = session.total
    payload: dict[str, Any] = {
        name: _plain_budget(value, total) for name, value in (("spent", session.spent), ("remaining", session.remaining))
    }
    payload["total"] = _plain_budget(total, total)
    payload["account"] = session.account
    payload["ledger"] = None if store is None else str(store.path)
    note = ledger_note(store)
    if note is not None:
        payload["budget_note"] = note
    return payload


def _plain_budget(value: Any, total: Any) -> dict[str, float | None]:
    from dpwitness.common.figures import tidy
    from dpwitness.mechanisms.report import shows_rho

    plain = {k: (None if v is None else tidy(v)) for k, v in value.to_dict().items()}
    if not shows_rho(total):
        plain["rho"] = None
    return plain


def _shown_budget(value: Any, total: Any) -> str:
    from dpwitness.mechanisms.report import budget_text

    return budget_text(value, total)


def _budget_line(session: Any, store: Any) -> str:
    total = session.total
    whose = f"account {session.account!r}" + ("" if store is None else f" in {store.path}")
    line = f"spent {_shown_budget(session.spent, total)}; remaining {_shown_budget(session.remaining, total)} ({whose})"
    note = ledger_note(store)
    if note is not None:
        line += f"\n{note}"
    return line


def _show_releases(releases: list[Release], session: Any, store: Any, *, explain: bool) -> None:
    """One line per release (value, interval, ε, δ, Δ, neighbours; a keyed release's keys below it),
    its notes with ``explain`` (a note that changes the meaning always), then the budget."""
    from dpwitness.mechanisms.report import release_line

    shared = [n for n in releases[0].headline_notes if all(n in r.headline_notes for r in releases)] if releases else []
    for r in releases:
        console.out(release_line(r, explain=explain, keys=_SHOWN_KEYS, said=() if explain else shared), highlight=False)
    for note in [] if explain else shared:  # said once for every release
        console.out(f"note: {note}", highlight=False)
    console.out(_budget_line(session, store), highlight=False)


_ARGV = "dpwitness.query.argv"
_STATISTIC_OPTIONS = ("--count", "--sum", "--mean", "--variance", "--histogram", "--median", "--quantile", "--min", "--max")
#: The options of ``query`` that take no value.
_FLAGS = "dpwitness.query.flags"
_SINGLE = "dpwitness.query.single"


def _given_once(argv: list[str], single: set[str]) -> None:
    """An option that is not repeatable (and not per statistic) given twice is refused: the
    command line never silently keeps the last one."""
    seen: dict[str, int] = {}
    for token in argv:
        name = token.partition("=")[0]
        if name in single and name not in PER_STATISTIC and name not in _STATISTIC_OPTIONS:
            seen[name] = seen.get(name, 0) + 1
            if seen[name] == 2:
                raise ParameterError(name, "given once (it is not repeatable; the last one is never silently kept)", "twice")


class _PositionalCommand(TyperCommand):
    """Keeps the raw arguments, so that ``--by``/``--keys`` apply to the statistic they follow."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        # the options that take no value, from the command itself (a new flag never swallows the next token)
        ctx.meta[_FLAGS] = {opt for p in self.params if getattr(p, "is_flag", False) for opt in p.opts}
        ctx.meta[_SINGLE] = {opt for p in self.params if not getattr(p, "multiple", False) for opt in getattr(p, "opts", ())}
        return super().parse_args(ctx, args)


#: Options that apply to the statistic they follow (before any statistic: to every one).
PER_STATISTIC = ("--by", "--keys", "--mechanism", "--delta", "--alpha", "--max-rows")
#: Of those, the ones that given once apply to every statistic; repeated, each to the statistic it follows.
_SHARED = ("--mechanism", "--delta", "--alpha", "--max-rows")


def _options_by_position(argv: list[str], flags: set[str] | None = None) -> dict[tuple[str, int], dict[str, str]]:
    """{(statistic option, its occurrence): {"--by": …, "--keys": …, …}}; ("", 0) before any statistic.

    A per-statistic option given twice for the same statistic is refused (never silently replaced)."""
    found: dict[tuple[str, int], dict[str, str]] = {}
    seen: dict[str, int] = {}
    current: tuple[str, int] = ("", 0)
    tokens = iter(argv)
    for token in tokens:
        name, equals, inline = token.partition("=")
        if name in _STATISTIC_OPTIONS:
            current = (name, seen.get(name, 0))
            seen[name] = current[1] + 1
            if name != "--count" and not equals:
                next(tokens, "")  # the statistic's own value (COL or COL:L:U)
        elif name in PER_STATISTIC:
            value = inline if equals else next(tokens, "")
            options = found.setdefault(current, {})
            if name in options:
                where = "before any statistic" if current == ("", 0) else f"after {_occurrence(current)}"
                raise ParameterError(
                    name,
                    f"given once {where} (it applies to the statistic it follows; repeat the statistic for another {name})",
                    f"{options[name]} and {value}",
                )
            options[name] = value
        elif name.startswith("--") and not equals and name not in (flags or {"--count"}):
            next(tokens, "")  # another option's value: never read as an option name
    for option in _SHARED:  # given once: for every statistic, wherever it stands
        holders = [position for position, options in found.items() if option in options]
        if len(holders) == 1 and holders[0] != ("", 0):
            found.setdefault(("", 0), {})[option] = found[holders[0]].pop(option)
    return found


def _occurrence(position: tuple[str, int]) -> str:
    option, index = position
    return option if index == 0 else f"the {_ordinal(index + 1)} {option}"


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _quantile_spec(option: str, text: str, fixed: float | None) -> tuple[str, tuple[float, float] | None, Any]:
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
        raise ParameterError(option, "COL:L:U:Q1,Q2,… with comma-separated numbers in [0, 1]", listed) from None


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
