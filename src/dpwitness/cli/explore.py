"""``dpwitness explore``: the explorer page on a local web server (127.0.0.1 by default)."""

from __future__ import annotations

import ipaddress
import threading
import webbrowser
from typing import Annotated

import typer
from rich.console import Console

from dpwitness.cli.core import check_port, fail
from dpwitness.common.errors import ExitCode

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def explore(
    port: Annotated[int, typer.Option(help="TCP port to listen on.", min=1, max=65535)] = DEFAULT_PORT,
    host: Annotated[
        str, typer.Option(help="Address to bind (loopback by default; the page has no authentication).")
    ] = DEFAULT_HOST,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
) -> None:
    """Start the explorer: walkthrough, live panel, witness badge and red-team windows."""
    console = Console(stderr=True, highlight=False, emoji=False)
    try:
        import uvicorn

        from dpwitness.explorer.app import create_app
    except ImportError as error:  # the web extra is optional
        fail(f"the explorer needs the web extra ({error.name} is missing): pip install 'dpwitness[web]'", ExitCode.MISSING_PART)
    if not _is_loopback(host):
        console.print(f"[yellow]warning:[/] binding {host}: anyone who can reach this address can use the page")
    check_port(host, port)  # a port in use is bad input (exit 2), said before the URL is printed
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/"
    console.print(f"dpwitness explorer on {url} (Ctrl+C to stop)")
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def register(app: typer.Typer) -> None:
    """Add ``explore`` to ``app``."""
    app.command()(explore)
