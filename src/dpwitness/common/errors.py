"""Errors that name what was wrong. Raised before any noise is drawn or budget spent.

The checks that raise them for a parameter live in :mod:`dpwitness.common.validation`."""

from __future__ import annotations

import importlib
from enum import IntEnum
from types import ModuleType
from typing import Any


class ParameterError(ValueError):
    """A parameter is outside its documented range. ``.parameter`` names it.

    The message is one line: "``parameter`` must be ``expected``; got ``got``" (``got`` shown
    with ``repr``: pass a description, never a record's value, where the data could show).
    """

    def __init__(self, parameter: str, expected: str, got: Any) -> None:
        self.parameter = parameter
        self.expected = expected
        self.got = got
        super().__init__(f"{parameter} must be {expected}; got {got!r}")


class Verbatim(str):
    """Text that :class:`ParameterError` shows as it is (its ``got`` is printed with ``repr``)."""

    def __repr__(self) -> str:
        return str(self)


#: What :func:`import_failed` says the user's module must be.
IMPORTS_CLEANLY = "a module that imports without error"


def import_failed(parameter: str, target: str, error: BaseException) -> ParameterError:
    """The :class:`ParameterError` for the user's module ``target`` (``module:function`` or
    ``file.py:function``, given as ``parameter``) that raised ``error`` while being imported.

    That is bad input, not a bug in dpwitness. An ImportError's or SyntaxError's own message is
    shown (it names a module, or a line of the user's file); any other exception only by its type,
    since its message could quote data the module read when it was imported.
    """
    if isinstance(error, ImportError | SyntaxError):
        detail = f"{type(error).__name__}: {error}"
    else:
        detail = f"{type(error).__name__} raised while importing it"
    return ParameterError(parameter, IMPORTS_CLEANLY, Verbatim(f"{target} ({detail})"))


class BudgetExceeded(RuntimeError):
    """The requested ε is more than what remains. Nothing was released or spent."""


class MissingPart(ImportError):
    """An optional part is not installed; the message says which extra brings it.

    ``what`` names what needs it (e.g. "the sensitivity search"), ``extra`` the extra of
    ``pip install 'dpwitness[extra]'``.
    """

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f"{what} needs an optional part: pip install 'dpwitness[{extra}]'")


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingPart` naming the extra that installs it.

    :param what: what needs the module, as the message names it.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingPart(what, extra) from None


#: The optional modules and the extra that installs each (see pyproject.toml).
OPTIONAL_PARTS = {
    "scipy": "audit",
    "matplotlib": "plot",
    "fastapi": "web",
    "uvicorn": "web",
    "httpx": "web",
    "httptools": "web",
    "polars": "polars",
    "pyarrow": "polars",
    "pyspark": "spark",
    "sqlglot": "sql",
}


def missing_part(error: ImportError, what: str) -> MissingPart | None:
    """The :class:`MissingPart` for an import of an optional module that failed, else None.

    :param error: the ImportError raised; its module's top-level name picks the extra
        (:data:`OPTIONAL_PARTS`).
    :param what: what needed the module, as the message names it.
    """
    top = (error.name or "").partition(".")[0]
    return MissingPart(what, OPTIONAL_PARTS[top]) if top in OPTIONAL_PARTS else None


class ExitCode(IntEnum):
    """The command line's exit codes, the same for every command (documented in the README)."""

    OK = 0
    #: a claim was violated (witness, audit) or a request refused (budget exceeded)
    VIOLATED = 1
    #: bad input: a parameter outside its range; nothing released, nothing spent
    BAD_INPUT = 2
    #: the audit could neither confirm nor refute the claim with these samples
    INCONCLUSIVE = 3
    #: an optional part is not installed (the message names the extra)
    MISSING_PART = 4
    #: a bug in dpwitness: please report it (``check``: an adapter failed, never the library's bug)
    INTERNAL = 5
    #: nothing to judge: ``check`` saw no noise call of a covered library
    NOT_COVERED = 6
