"""The explorer: a local web page that shows, live, what the project's mechanism guarantees.

Every number on the page comes from :mod:`dpwitness` through the JSON API in
:mod:`dpwitness.explorer.api`; the page only draws. Needs the ``web`` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI


def create_app() -> FastAPI:
    """The ASGI application (imports FastAPI only when called)."""
    from dpwitness.explorer.app import create_app as _create

    return _create()


__all__ = ["create_app"]
