"""``dpwitness sql SOURCE "SELECT …"``: one SQL statement answered privately (see docs/sql.md)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dpwitness.cli.core import ledger_note, user_errors
from dpwitness.common.encoding import dumps
from dpwitness.mechanisms.release import NOT_FOR_PRODUCTION

console = Console(highlight=False, emoji=False)


def sql(
    source: Annotated[Path, typer.Argument(help="A CSV or Parquet file; its table is named after it (adult.csv → adult).")],
    statement: Annotated[str, typer.Argument(help='One SELECT, e.g. "SELECT COUNT(*) FROM adult WHERE age < 20".')],
    epsilon: Annotated[
        float, typer.Option(help="ε of the statement (the run's budget), split evenly over aggregates without EPSILON(…, ε).")
    ],
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Print the plan (queries, Δ, ε, expected error; the ε solved for WITHIN(aggregate, error)); spend nothing.",
        ),
    ] = False,
    name: Annotated[str | None, typer.Option(help="The table's name in the statement (default: the file's stem).")] = None,
    public: Annotated[
        list[str] | None,
        typer.Option(help="A public (lookup) table the statement may JOIN: NAME=PATH (CSV or Parquet; repeatable)."),
    ] = None,
    private: Annotated[
        list[str] | None,
        typer.Option(
            help="Another private table the statement may JOIN: NAME=PATH (CSV or Parquet holding the --privacy-unit "
            "column; repeatable). Needs --max-rows-per-key (docs/sql.md, JOIN of two private tables)."
        ),
    ] = None,
    max_rows_per_key: Annotated[
        str | None,
        typer.Option(help="A private JOIN's rows kept per key value on each side: K, or K_LEFT,K_RIGHT (required for one)."),
    ] = None,
    max_rows_per_unit: Annotated[
        str | None,
        typer.Option(
            help="A private JOIN's rows kept per unit on each side: M, or M_LEFT,M_RIGHT (default --max-contributions)."
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Intervals hold with probability 1 − alpha.")] = 0.05,
    schema: Annotated[
        Path | None, typer.Option(help="The data owner's declared schema (TOML): types, bounds, categories, unit.")
    ] = None,
    neighbours: Annotated[str, typer.Option(help="add-remove or replace-one.")] = "add-remove",
    privacy_unit: Annotated[str | None, typer.Option(help="Column that identifies a person.")] = None,
    max_contributions: Annotated[int, typer.Option(help="Rows kept per privacy unit (Δ scales by it).")] = 1,
    max_rows: Annotated[
        int | None, typer.Option(help="Declared bound on rows (units with --privacy-unit): needed for undeclared GROUP BY keys.")
    ] = None,
    delta_budget: Annotated[
        float | None, typer.Option(help="Total δ (for GROUP BY over undeclared keys and for Gaussian noise).")
    ] = None,
    mechanism: Annotated[
        str,
        typer.Option(
            help="laplace, gaussian or auto: the noise of the count, sum and histogram aggregates (gaussian needs "
            "--delta-budget; over undeclared GROUP BY keys it selects them by Gaussian thresholding)."
        ),
    ] = "laplace",
    engine: Annotated[str, typer.Option(help="polars or spark.")] = "polars",
    ledger: Annotated[Path | None, typer.Option(help="SQLite budget ledger: spends are recorded before any release.")] = None,
    budget: Annotated[float | None, typer.Option(help="Total ε of the ledger account (default --epsilon).")] = None,
    seed: Annotated[int | None, typer.Option(help="Reproducible noise (NOT for production).")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="The answer (rows, releases, notes) as one JSON object on stdout.")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="The answer as CSV on stdout (each value with _low and _high).")] = False,
) -> None:
    """Answer one SQL SELECT on SOURCE privately: each aggregate is released once, with its interval, ε, δ and Δ."""
    from dpwitness.common.errors import ParameterError
    from dpwitness.privacy.budget import Ledger
    from dpwitness.session import Session
    from dpwitness.sql import Answer

    with user_errors():
        if as_json and as_csv:
            raise ParameterError("csv", "not together with --json (choose one output)", True)
        store = None if ledger is None else Ledger(ledger)
        continuing = store is not None and budget is None and store.has_account(f"file:{source.resolve()}")
        session = Session(
            str(source),
            epsilon=None if continuing else (budget if budget is not None else epsilon),
            delta_budget=delta_budget,
            neighbours=neighbours,
            privacy_unit=privacy_unit,
            max_contributions=max_contributions,
            max_rows=max_rows,
            engine=engine,
            ledger=store,
            seed=seed,
            schema=schema,
            mechanism=mechanism,
        )
        answer = session.sql(
            statement,
            epsilon=epsilon,
            alpha=alpha,
            explain=explain,
            name=name,
            public=_named_paths("public", public),
            private=_named_paths("private", private),
            max_rows_per_key=_per_side("max_rows_per_key", max_rows_per_key),
            max_rows_per_unit=_per_side("max_rows_per_unit", max_rows_per_unit),
        )
    note = ledger_note(store)  # the same line as `query`'s: without --ledger the budget lasts for this call only
    if as_json:
        payload = {**answer.to_dict(), **({"budget_note": note} if note is not None else {})}
        sys.stdout.write(dumps(payload, indent=2) + "\n")
        return
    if as_csv and isinstance(answer, Answer):
        frame = answer.to_polars()
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(frame.columns)
        writer.writerows(frame.rows())
        if answer.seeded:  # on stderr, so that stdout stays one CSV table
            sys.stderr.write(NOT_FOR_PRODUCTION + "\n")
        return
    console.out(str(answer))
    if note is not None:
        console.out(note)


def _named_paths(parameter: str, items: list[str] | None) -> dict[str, str]:
    """``--public``/``--private`` NAME=PATH items as {name: path} (one-line error naming the flag)."""
    from dpwitness.common.errors import ParameterError

    tables: dict[str, str] = {}
    for item in items or []:
        table, _, path = item.partition("=")
        if not table or not path:
            raise ParameterError(parameter, f"NAME=PATH (a {parameter} CSV or Parquet table)", item)
        tables[table] = path
    return tables


def _per_side(parameter: str, text: str | None) -> int | tuple[int, int] | None:
    """A join bound flag's K or LEFT,RIGHT as the resolver takes it (``PrivateJoin`` checks its range)."""
    from dpwitness.common.errors import ParameterError

    if text is None:
        return None
    parts = text.split(",")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise ParameterError(parameter, "a whole number ≥ 1, or LEFT,RIGHT (two of them)", text)
    numbers = [int(p) for p in parts]
    return numbers[0] if len(numbers) == 1 else (numbers[0], numbers[1])


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("sql")(sql)
