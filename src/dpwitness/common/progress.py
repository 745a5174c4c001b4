"""Progress for long work (sensitivity searches, audits, Spark jobs, queries over large files).

One display for every long loop: a rich bar on stderr in a terminal, a widget in Jupyter
(with ``ipywidgets``; else one line when the work ends), nothing otherwise. It is silent when
stderr is not a terminal (pipes, CI, tests), under the command line's ``--json`` (see
:func:`silenced`) and with ``DPWITNESS_PROGRESS=0``. A progress display only reads counters that
the caller advances: it never sees data, and showing it changes no result.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Set to 0 to silence every progress display (1 forces it on, e.g. for a recorded terminal).
PROGRESS_VARIABLE = "DPWITNESS_PROGRESS"
#: Above this size a query over a file shows its progress (a scan of 64 MiB takes seconds).
LARGE_FILE_BYTES = 64 << 20

_silenced = threading.local()


class Bar:
    """What a long loop reports: a new description and steps done. Does nothing when silent.

    ``display`` is the rich Progress it reports to and ``task`` its task id (both None, the
    default: a silent bar that only counts ``completed``).
    """

    def __init__(self, display: Any = None, task: Any = None) -> None:
        self._display, self._task = display, task
        self.completed = 0

    def advance(self, steps: int = 1) -> None:
        """``steps`` more units of work done."""
        self.completed += steps
        if self._display is not None:
            self._display.advance(self._task, steps)

    def describe(self, text: str) -> None:
        """Show ``text`` as what is being done now."""
        if self._display is not None:
            self._display.update(self._task, description=text)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    instance = get() if callable(get) else None
    return type(instance).__name__ == "ZMQInteractiveShell"


def enabled() -> bool:
    """Whether a display would be shown here and now (see the module docstring)."""
    setting = os.environ.get(PROGRESS_VARIABLE, "")
    if setting == "0" or getattr(_silenced, "depth", 0) > 0:
        return False
    if setting == "1":
        return True
    return in_notebook() or bool(getattr(sys.stderr, "isatty", lambda: False)())


@contextmanager
def silenced() -> Iterator[None]:
    """No progress display in this thread inside the block (the CLI's ``--json``/``--csv``)."""
    _silenced.depth = getattr(_silenced, "depth", 0) + 1
    try:
        yield
    finally:
        _silenced.depth -= 1


@contextmanager
def progress(description: str, *, total: int | None = None, enabled: bool = True) -> Iterator[Bar]:
    """A progress display for ``total`` steps (None: a spinner), shown only where it helps
    (``enabled`` and :func:`enabled`); yields a :class:`Bar` to advance. Inside another
    display (a CLI run over several queries) it is silent: one display at a time.
    ``description`` is the text shown beside the bar."""
    if not (enabled and globals()["enabled"]()) or getattr(_silenced, "shown", 0) > 0:
        yield Bar()
        return
    _silenced.shown = getattr(_silenced, "shown", 0) + 1
    try:
        with _display(description, total) as bar:
            yield bar
    finally:
        _silenced.shown -= 1


@contextmanager
def _display(description: str, total: int | None) -> Iterator[Bar]:
    if in_notebook() and not _has_widgets():
        bar = Bar()
        yield bar
        print(f"{description}: {bar.completed}{'' if total is None else f'/{total}'} done", file=sys.stderr)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    forced = os.environ.get(PROGRESS_VARIABLE) == "1"
    console = Console(stderr=True, emoji=False, highlight=False, force_terminal=True if forced else None)
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as display:
        task = display.add_task(description, total=total)
        yield Bar(display, task)


def large_source(source: object) -> bool:
    """True for a file path larger than :data:`LARGE_FILE_BYTES` (a query over it shows progress).

    :param source: a session's source; a frame, or a path that cannot be read, gives False.
    """
    if not isinstance(source, str | os.PathLike):
        return False
    try:
        return os.stat(source).st_size > LARGE_FILE_BYTES
    except OSError:
        return False


def _has_widgets() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = [
    "LARGE_FILE_BYTES",
    "PROGRESS_VARIABLE",
    "Bar",
    "enabled",
    "in_notebook",
    "large_source",
    "progress",
    "silenced",
]
