"""``dpwitness plan FILE --target "mean age:0:100 ±2"``: the smallest budget meeting target errors
(``Session.plan``), and its split; nothing is spent."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dpwitness.cli.core import flag_names, user_errors
from dpwitness.cli.query import _bounded, _columns, _declared_types, _key_tuples
from dpwitness.common.errors import ParameterError

console = Console(highlight=False, emoji=False)

_GRAMMAR = 'STATISTIC [COL or COL:L:U] [by COL,…] ±ERROR (count, sum, mean or histogram), e.g. "mean age:0:100 ±2"'


def parse_target(text: str) -> tuple[str, str | None, tuple[float, float] | None, tuple[str, ...], float]:
    """``--target`` as (statistic, column, bounds, by, error); bounds None: the schema's.

    The column and bounds are read as ``dpwitness query``'s statistic flags read them (``COL:L:U``).
    """
    head, sign, tail = text.replace("+-", "±").rpartition("±")
    words = head.split()
    if not sign or not words:
        raise ParameterError("--target", _GRAMMAR, text)
    try:
        error = float(tail)
    except ValueError:
        raise ParameterError("--target", _GRAMMAR, text) from None
    by: tuple[str, ...] = ()
    if "by" in words:
        at = words.index("by")
        if at + 2 != len(words):
            raise ParameterError("--target", _GRAMMAR, text)
        by, words = _columns(words[at + 1]), words[:at]
    statistic, rest = words[0], words[1:]
    if len(rest) > 1 or (statistic in ("sum", "mean", "histogram") and not rest):
        raise ParameterError("--target", _GRAMMAR, text)
    column: str | None = rest[0] if rest else None
    bounds: tuple[float, float] | None = None
    if statistic in ("sum", "mean"):
        column, bounds = _bounded("--target", rest[0])
    return statistic, column, bounds, by, error


def plan(
    file: Annotated[Path, typer.Argument(help="A CSV or Parquet file (only its schema is read).", show_default=False)],
    target: Annotated[list[str], typer.Option(help=f"A statistic and the half-width it needs: {_GRAMMAR} (repeatable).")],
    epsilon: Annotated[float | None, typer.Option(help="The account's total ε the plan is checked against.")] = None,
    rho: Annotated[float | None, typer.Option(help="A zCDP total ρ instead of --epsilon.")] = None,
    delta_budget: Annotated[
        float | None, typer.Option(help="The account's total δ (for a Gaussian plan on an ε account).")
    ] = None,
    delta: Annotated[float | None, typer.Option(help="δ of each Gaussian release, and of ρ converted to (ε, δ).")] = None,
    mechanism: Annotated[
        str, typer.Option(help="laplace or gaussian (a count, sum, histogram or mean over declared keys).")
    ] = "laplace",
    alpha: Annotated[float, typer.Option(help="Each statistic within ±ERROR with probability 1 − alpha.")] = 0.05,
    min_rows: Annotated[
        int | None, typer.Option(help="A public lower bound on the rows a mean averages (per key): a mean's error needs it.")
    ] = None,
    keys: Annotated[
        str | None, typer.Option(help="Declared keys of the by columns, as for `dpwitness query --keys` (else the schema's).")
    ] = None,
    where: Annotated[str | None, typer.Option(help="Row filter for every statistic, as for `dpwitness query`.")] = None,
    max_rows: Annotated[int | None, typer.Option(help="Declared bound on rows (needed for undeclared keys).")] = None,
    neighbours: Annotated[str, typer.Option(help="add-remove or replace-one.")] = "add-remove",
    privacy_unit: Annotated[str | None, typer.Option(help="Column that identifies a person.")] = None,
    max_contributions: Annotated[int, typer.Option(help="Rows kept per privacy unit (Δ scales by it).")] = 1,
    max_groups: Annotated[int | None, typer.Option(help="Groups kept per privacy unit (grouped queries).")] = None,
    dtype: Annotated[list[str] | None, typer.Option(help="Declare a column's type, COL:TYPE (repeatable).")] = None,
    schema: Annotated[Path | None, typer.Option(help="The data owner's declared schema (TOML).")] = None,
    ledger: Annotated[Path | None, typer.Option(help="SQLite budget ledger whose account the plan is checked against.")] = None,
    account: Annotated[str | None, typer.Option(help="The account in the ledger (default: file:<resolved path>).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The plan as one JSON object on stdout.")] = False,
) -> None:
    """The smallest ε (or ρ) giving each --target its error at confidence 1 − alpha, and its split; spends nothing."""
    from dpwitness.privacy.budget import Ledger
    from dpwitness.query.resolve import Request
    from dpwitness.session import Session, Target

    with user_errors():
        parsed = [parse_target(text) for text in target]
        store = None if ledger is None else Ledger(ledger)
        continuing = store is not None and epsilon is None and rho is None
        session = Session(
            str(file),
            epsilon=None if continuing else epsilon,
            rho=None if continuing else rho,
            delta_budget=delta_budget,
            delta=delta,
            max_rows=max_rows,
            neighbours=neighbours,
            privacy_unit=privacy_unit,
            max_contributions=max_contributions,
            max_groups=max_groups,
            ledger=store,
            account=account,
            dtypes=_declared_types(dtype),
            schema=schema,
        )
        kinds = session.schema().columns if keys is not None else {}
        targets = []
        for statistic, column, bounds, by, error in parsed:
            found = _key_tuples(keys, by, kinds) if keys is not None and by else None
            request = Request(statistic, column, bounds=bounds, by=by or None, keys=found, where=where)
            targets.append(Target(request, error, min_rows if statistic == "mean" else None))
        with flag_names(
            {"error": "--target", "statistic": "--target", "bounds": "--target", "column": "--target", "targets": "--target"}
        ):
            result = session.plan(targets, alpha=alpha, mechanism=mechanism)
    if as_json:
        sys.stdout.write(json.dumps({**result.to_dict(), "account": session.account}, indent=2, ensure_ascii=False) + "\n")
        return
    _show(result)


def _show(result: Any) -> None:
    level = f"{1 - result.alpha:.0%}"
    table = Table(
        "statistic", "target", f"{level} half-width", "budget", "split", title=f"Budget plan ({result.mechanism}; nothing spent)"
    )
    for s in result.statistics:
        cost = f"ε = {s.epsilon:.6g}" if math.isfinite(s.epsilon) else f"ρ = {s.rho:.6g}"
        split = "; ".join(f"{p['aggregate']} {_part_budget(p)}" for p in s.parts) if len(s.parts) > 1 else ""
        table.add_row(escape(s.label), f"± {s.error:g}", f"± {s.half_width:.6g}", cost, split)
    console.print(table)
    for line in result.summary():
        console.print(escape(line))


def _part_budget(part: dict[str, Any]) -> str:
    return f"ε = {float(part['epsilon']):.4g}" if "epsilon" in part else f"ρ = {float(part['rho']):.4g}"


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("plan")(plan)
