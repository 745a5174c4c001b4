"""``dpwitness serve`` (the DP query service) and ``dpwitness serve-token`` (make a token and its hash)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpwitness.cli.core import check_port, fail, user_errors
from dpwitness.common.errors import ExitCode, ParameterError, require
from dpwitness.common.validation import check_count


def serve(
    config: Annotated[Path, typer.Option("--config", "-c", help="the service TOML file (see examples/service.toml)")],
    host: Annotated[str, typer.Option(help="address to listen on (keep 127.0.0.1 unless behind a TLS proxy)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    access_log: Annotated[bool, typer.Option("--access-log/--no-access-log", help="log every request")] = False,
    workers: Annotated[int, typer.Option(help="server processes sharing the ledger (each gets 1/N of the rate limits)")] = 1,
    raise_budgets: Annotated[
        bool,
        typer.Option(
            "--raise-budgets",
            help="raise analysts' totals stored in the ledger to the config's (recorded as ledger events); "
            "without it a config whose total differs from the stored one is refused",
        ),
    ] = False,
) -> None:
    """Serve DP queries over HTTP: every answer noised, every spend durable before it is sent."""
    import os

    require("fastapi", "web", "dpwitness serve")
    uvicorn = require("uvicorn", "web", "dpwitness serve")
    from dpwitness.serve.app import CONFIG_VARIABLE, WORKERS_VARIABLE, create_app
    from dpwitness.serve.config import load_config

    with user_errors():
        check_count("workers", workers)
        try:
            app = create_app(load_config(config), raise_budgets=raise_budgets)  # validates config, tables, budgets first
        except ParameterError as error:
            if error.parameter == "config":  # the file itself (absent, unreadable, not TOML): already named
                raise
            fail(f"--config {config}: {error}", ExitCode.BAD_INPUT, parameter="--config")
        check_port(host, port)  # a port in use is bad input (exit 2), said before the URL is printed
    typer.echo(f"dpwitness serve: http://{host}:{port}  (OpenAPI schema at /openapi.json, docs at /docs)", err=True)
    if workers == 1:
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=access_log)
        return
    del app
    os.environ[CONFIG_VARIABLE] = str(config.resolve())
    os.environ[WORKERS_VARIABLE] = str(workers)
    target = "dpwitness.serve.app:app_from_environment"
    uvicorn.run(target, factory=True, workers=workers, host=host, port=port, log_level="warning", access_log=access_log)


def serve_token(
    analyst: Annotated[str, typer.Argument(help="the analyst's name (the [analysts.NAME] section)")],
    epsilon: Annotated[float, typer.Option(help="the analyst's total ε to put in the snippet")] = 1.0,
    delta: Annotated[float, typer.Option(help="the analyst's total δ (0: pure ε-DP)")] = 0.0,
    rho: Annotated[float | None, typer.Option(help="a ρ-zCDP total instead of ε")] = None,
) -> None:
    """Make a random token; print it once, and the config snippet that stores only its hash."""
    from dpwitness.privacy.budget import check_total
    from dpwitness.serve.auth import hash_token, new_token

    with user_errors():
        if not 0 <= delta < 1:
            raise ParameterError("delta", "the analyst's total δ, a number in [0, 1)", delta)
        check_total(epsilon=None if rho is not None else epsilon, delta=delta, rho=rho)
    token = new_token()
    typer.echo(f"# give this token to {analyst} (it is not stored anywhere): {token}", err=True)
    total = f"rho = {rho!r}" if rho is not None else f"epsilon = {epsilon!r}"
    if delta:
        total += f"\ndelta = {delta!r}"
    typer.echo(f'[analysts.{analyst}]\n{total}\ntoken_hash = "{hash_token(token)}"')


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("serve")(serve)
    app.command("serve-token")(serve_token)
