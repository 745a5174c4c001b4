"""``dpwitness check MODULE:FUNCTION``: check a function that calls another DP library."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from dpwitness.cli.core import flag_names, user_errors
from dpwitness.common.encoding import dumps
from dpwitness.common.errors import IMPORTS_CLEANLY, ParameterError, import_failed

console = Console(highlight=False, emoji=False)
#: ``--replay`` → ``check(replay=…)``.
REPLAY: dict[str, bool | None] = {"auto": None, "always": True, "never": False}


def check_command(
    function: Annotated[str, typer.Argument(help="MODULE:FUNCTION: a Polars table → a release made by a covered library.")],
    columns: Annotated[str, typer.Option(help='JSON {"col": "Float64" (a dtype) or \\[allowed values]}.')],
    epsilon: Annotated[float, typer.Option(help="ε the function claims.")],
    delta: Annotated[float, typer.Option(help="δ the function claims (0: the sum of the δ its noise calls declare).")] = 0.0,
    neighbours: Annotated[str, typer.Option(help="'add-remove' or 'replace-one'.")] = "add-remove",
    trials: Annotated[int, typer.Option(help="Pairs of small tables the search tries (0: only the structured search).")] = 200,
    seed: Annotated[int | None, typer.Option(help="A reproducible search and audit.")] = 0,
    max_seconds: Annotated[float, typer.Option(help="CPU seconds for the whole check (searches, then the audit).")] = 100.0,
    structured: Annotated[bool, typer.Option(help="Also search large structured tables (binade edges, sizes).")] = True,
    run_audit: Annotated[bool, typer.Option("--audit/--no-audit", help="Audit the worst pair as a black box.")] = True,
    replay: Annotated[
        str,
        typer.Option(
            help="Audit by replay (the values before noise frozen, only the library's noise sampled): 'auto' (when "
            "faster and the function returns its noise calls' outputs as they are, or when it is too slow), "
            "'always' or 'never'."
        ),
    ] = "auto",
    library: Annotated[list[str] | None, typer.Option(help="Only this library's adapter (repeatable).")] = None,
    scripts: Annotated[Path | None, typer.Option(help="Write each finding's reproduction script into this folder.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Record FUNCTION's noise calls, search each against its declared Δ, audit the worst pair.

    Exit 1 when a finding shows a bug, 0 when none and the audit says ok, 3 when inconclusive or
    outside the library's contract, 5 when an adapter failed (never the library's fault), 6 when
    no covered library's noise call was seen. What the function and its libraries print goes to
    stderr: stdout holds the report alone.
    """
    from dpwitness.cli.inputs import load_function, parse_columns
    from dpwitness.targets.check import check

    with user_errors(), flag_names({"fn": "FUNCTION", "libraries": "--library"}), _stdout_to_stderr():
        if replay not in REPLAY:
            raise ParameterError("replay", "'auto', 'always' or 'never'", replay)
        fn = _function(function, load_function)
        spec = parse_columns(columns)
        report = check(
            fn,
            columns=spec,
            epsilon=epsilon,
            delta=delta,
            neighbours=neighbours,
            trials=trials,
            seed=seed,
            structured=structured,
            audit=run_audit,
            max_seconds=max_seconds,
            libraries=library,
            replay=REPLAY[replay],
        )
    written = []
    if scripts is not None:
        scripts.mkdir(parents=True, exist_ok=True)
        for number, finding in enumerate(report.findings, start=1):
            if finding.script:
                target = scripts / f"finding_{number}_{finding.library}_{finding.kind}.py"
                target.write_text(finding.script, encoding="utf-8")
                written.append(str(target))
    if as_json:
        payload = {**report.to_dict(), "scripts": written}
        sys.stdout.write(dumps(payload, indent=2) + "\n")
    else:
        console.print(Text(str(report)), soft_wrap=True)
        for path in written:
            console.print(Text(f"reproduction script: {path}"), soft_wrap=True)
    raise typer.Exit(report.exit_code)


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what is printed inside the block to stderr, Python's ``print`` and a library's native
    code writing to file descriptor 1 alike, so that stdout carries the report alone."""
    sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved = None
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        _flush_native_stdout()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _flush_native_stdout() -> None:
    """Flush the C library's stdout buffer (native code's printf), so it lands while redirected."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _function(target: str, load_function: Callable[[str], Callable[..., Any]]) -> Callable[..., Any]:
    """``MODULE:FUNCTION`` (an importable module) or ``path/to/file.py:FUNCTION``."""
    import importlib.util

    path, _, name = target.rpartition(":")
    if not path.endswith(".py"):
        try:
            return load_function(target)
        except ParameterError as error:
            imports = error.expected == IMPORTS_CLEANLY  # keep what failed (the import's error), else the form
            raise ParameterError(
                "FUNCTION", IMPORTS_CLEANLY if imports else "MODULE:FUNCTION or path/to/file.py:FUNCTION", error.got
            ) from error
    file = Path(path)
    if not file.is_file() or not name:
        raise ParameterError("FUNCTION", "path/to/file.py:FUNCTION with an existing file", target)
    folder = str(file.resolve().parent)  # as when the file is run: its folder is importable
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(file.stem, file)
    if spec is None or spec.loader is None:
        raise ParameterError("FUNCTION", "path/to/file.py:FUNCTION with a Python file", target)
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's module failed to import: bad input, not our bug
        sys.modules.pop(file.stem, None)
        raise import_failed("FUNCTION", target, error) from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ParameterError("FUNCTION", f"a function {name!r} in {path}", target)
    return fn  # type: ignore[no-any-return]


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check_command)
