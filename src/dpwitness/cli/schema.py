"""``dpwitness schema FILE``: the data owner's step outside DP — declare a table's columns.

It READS THE VALUES of FILE to propose each column's type (and, when asked, bounds and
categories), and prints the schema as TOML: review it, keep it beside the data, and pass it to
``dpwitness query --schema``, ``Session(..., schema=)`` or a service table's ``schema``.

For a CSV it also says, on stderr, what the reader will do with the file
(:func:`dpwitness.io.filecheck.check_file`: bare ``\\r`` line ends, bytes that are not UTF-8,
malformed, ragged and empty lines, cells that do not fit their type — counts and line numbers,
never a value). ``--against SCHEMA`` checks the file against a declared schema's types instead of
inferring one. Query time never reports these counts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dpwitness.cli.core import flag_names, user_errors
from dpwitness.common.errors import ParameterError
from dpwitness.io.reader import check_encoding
from dpwitness.io.schema import DEFAULT_MAX_CATEGORIES

WARNING = (
    "dpwitness schema read the values of {file}: this is the data owner's step, outside differential privacy. "
    "Review the schema (bounds and categories from the data disclose them), keep it, and share only what is public."
)


def schema(
    file: Annotated[Path, typer.Argument(help="A CSV or Parquet file (its values are read).", show_default=False)],
    bounds: Annotated[
        bool,
        typer.Option("--bounds", help="Also declare each numeric column's bounds: its min and max in the data (owner's call)."),
    ] = False,
    categories: Annotated[
        int,
        typer.Option(
            help=f"Also list the values of each text column with at most this many (0: none; e.g. {DEFAULT_MAX_CATEGORIES})."
        ),
    ] = 0,
    privacy_unit: Annotated[str | None, typer.Option(help="The column that identifies a person.")] = None,
    encoding: Annotated[
        str | None,
        typer.Option(help="FILE's text encoding, e.g. latin-1 or cp1252 (default UTF-8); kept in the schema as `encoding`."),
    ] = None,
    output: Annotated[Path | None, typer.Option(help="Write the TOML here instead of to stdout.")] = None,
    against: Annotated[
        Path | None,
        typer.Option(help="Check FILE against this declared schema's types (prints the file check only, no TOML)."),
    ] = None,
) -> None:
    """READS THE VALUES of FILE and prints its declared schema (TOML): types, optionally bounds, categories, unit.

    Run it as the data owner, review what it wrote, keep it: `dpwitness schema FILE > FILE.schema.toml`.
    """
    from dpwitness.io.filecheck import check_file
    from dpwitness.io.schema import Schema

    csv = file.suffix.lower() in (".csv", ".tsv")
    with user_errors():
        with flag_names():
            encoding = check_encoding(encoding)
        if encoding is not None and not csv:
            raise ParameterError("--encoding", "used with a CSV or TSV FILE", file.suffix or "no suffix")
        if against is not None:
            if not csv:
                raise ParameterError("--against", "used with a CSV or TSV FILE", file.suffix or "no suffix")
            declared = Schema.load(against)
            if encoding is not None and declared.encoding not in (None, encoding):
                raise ParameterError("--encoding", f"the schema's encoding {declared.encoding!r} (or none)", encoding)
            encoding = encoding or declared.encoding
            typer.echo(check_file(file, kinds=declared.columns, encoding=encoding).text(), err=True)
            typer.echo(WARNING.format(file=file.name), err=True)
            return
        declared = Schema.infer(str(file), bounds=bounds, categories=categories, privacy_unit=privacy_unit, encoding=encoding)
        text = declared.to_toml(source=file.name)
        report = check_file(file, kinds=declared.columns, encoding=encoding) if csv else None
    if report is not None:
        typer.echo(report.text(), err=True)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    typer.echo(WARNING.format(file=file.name), err=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("schema")(schema)
