"""The ``dpwitness`` command line. Each concept registers its own commands.

Conventions shared by every command (enforced by ``tests/cli/test_cli_conventions.py``):
exit codes from :class:`dpwitness.common.errors.ExitCode`; with ``--json`` the answer, or the
error, is one JSON object on stdout; messages are printed literally (never as markup);
``--help`` shows no type placeholders.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from dpwitness.cli import check, core, explore, plan, query, redteam, schema, serve, sql
from dpwitness.common.errors import BudgetExceeded, ExitCode, MissingPart, ParameterError, missing_part
from dpwitness.common.progress import silenced

#: Set to 1 to let an internal error (exit 5) show its traceback.
DEBUG_VARIABLE = "DPWITNESS_DEBUG"
#: Value placeholders in ``--help``, by the option's type; flags show none.
_METAVARS = {"float": "NUMBER", "int": "INTEGER", "str": "TEXT", "Path": "PATH"}


EXIT_CODES = (
    "Exit codes: 0 ok; 1 violated or refused (budget exceeded); 2 bad input; 3 inconclusive; "
    "4 missing optional part (the message names the pip extra); 5 internal error; "
    "6 nothing to judge (check: no covered library's noise call seen)."
)


class CommandGroup(TyperGroup):
    """The root group: one error convention and one help style for every command below it."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        core.errors_as_json("--json" in argv)
        quiet = silenced() if "--json" in argv or "--csv" in argv else nullcontext()
        try:
            try:
                with quiet:
                    outcome = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
                code = outcome if isinstance(outcome, int) else ExitCode.OK
            except typer.Abort:
                core.fail("aborted", ExitCode.VIOLATED)
            except KeyboardInterrupt:
                code = 130
            except typer.TyperException as error:  # click's usage errors: a bad or missing option is bad input
                exit_code = int(getattr(error, "exit_code", ExitCode.BAD_INPUT))
                if "--json" not in argv:
                    from typer import rich_utils

                    rich_utils.rich_format_error(error)  # type: ignore[arg-type]
                    raise typer.Exit(exit_code) from None
                core.fail(error.format_message() if hasattr(error, "format_message") else str(error), exit_code)
            except (ParameterError, BudgetExceeded, MissingPart, FileNotFoundError) as error:
                if isinstance(error, ParameterError):  # the command line names flags, never Python parameters
                    error = core.as_flags(error, core.command_flags(_command_for(self, argv)))
                parameter = getattr(error, "parameter", None)
                core.fail(str(error), core.exit_code_for(error), parameter=parameter, kind=core.error_kind(error))
            except Exception as error:
                part = missing_part(error, "this command") if isinstance(error, ImportError) else None
                if part is not None:  # an optional module imported without require(): still one line, exit 4
                    core.fail(str(part), ExitCode.MISSING_PART)
                if os.environ.get(DEBUG_VARIABLE):
                    raise
                # The type only: an internal error's text may quote data.
                core.fail(
                    f"internal error ({type(error).__name__}); please report it (set {DEBUG_VARIABLE}=1 for the traceback)",
                    ExitCode.INTERNAL,
                )
        except typer.Exit as stop:
            code = stop.exit_code
        finally:
            core.errors_as_json(False)
        if standalone_mode:
            sys.exit(code)
        return code

    def get_params(self, ctx: Any) -> list[Any]:
        return _tidied(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _tidy(command)
        return command


def _command_for(group: Any, argv: list[str]) -> Any:
    """The (sub)command that ``argv`` names, for its flags."""
    command = group
    for token in argv:
        commands = getattr(command, "commands", None)
        if not commands or token not in commands:
            break
        command = commands[token]
    return command


def _tidy(command: Any) -> None:
    """Give every option of ``command`` (and its subcommands) a plain placeholder: none for flags."""
    _tidied(command.params)
    help_option = command.get_help_option(typer.Context(command))
    if help_option is not None:
        _tidied([help_option])
    for sub in getattr(command, "commands", {}).values():
        _tidy(sub)


def _no_type(ctx: Any) -> None:
    return None


def _tidied(params: list[Any]) -> list[Any]:
    for param in params:
        if param.metavar is not None:
            continue
        if param.param_type_name == "argument":
            param.metavar = param.name.upper()  # the name says what it is: no "<path>" beside it
            param.display_type_rich = _no_type
        elif getattr(param, "is_flag", False):
            param.metavar = ""
        else:
            name = param.bare_type() if hasattr(param, "bare_type") else "TEXT"
            name = name.removeprefix("list[").removesuffix("]")
            param.metavar = _METAVARS.get(name, "VALUE")
    return params


app = typer.Typer(
    name="dpwitness",
    help="Differential privacy whose every release proves itself.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=CommandGroup,
    epilog=EXIT_CODES,
)


def _show_version(value: bool) -> None:
    if value:
        from dpwitness import __version__

        typer.echo(f"dpwitness {__version__}")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Show the version and exit.", callback=_show_version, is_eager=True)
    ] = False,
) -> None:
    """Differential privacy whose every release proves itself."""


for _module in (core, query, plan, sql, schema, redteam, check, explore, serve):
    _module.register(app)


def main() -> None:
    app()
