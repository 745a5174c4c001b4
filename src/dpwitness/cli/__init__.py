"""The ``dpwitness`` command line. Each concept registers its own commands."""

from __future__ import annotations

import typer

from dpwitness.cli import core, explore, query, redteam, serve

app = typer.Typer(
    name="dpwitness",
    help="Differential privacy whose every release proves itself.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (core, query, redteam, explore, serve):
    _module.register(app)


def main() -> None:
    app()
