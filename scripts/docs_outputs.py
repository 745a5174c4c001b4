"""Every output shown in README.md and docs/guide.md is produced by the code: check it, or refresh it.

Two kinds of shown output (docs/development.md, "Documented outputs"):

* **Output blocks.** An HTML comment ``<!-- output of: dpwitness … -->`` right before a
  ```` ```text ```` block: the block is that command's output (stdout and stderr, as a terminal
  80 columns wide shows it), run in a copy of ``examples/`` like a fresh clone. Only what must vary
  is normalised: the copy's folder (shown as ``.``), the version and trailing spaces. The command
  must be seeded.
* **Result comments.** In a ```` ```python ```` block, a comment after an expression statement
  (``mech.scale  # 0.1``); in a ```` ```bash ```` block, a comment after a ``dpwitness`` command
  (after its ``exit N``). Every number in it must be one the statement shows (its ``repr``, its
  ``str``, what it prints; a command's output), to the comment's precision (rounded, or cut where
  the number ends in ``…``), and every single-quoted ``'text'`` must appear as written. Text in
  parentheses explains (``(= b·ln 20)``) and is not checked; neither are URLs.

``python3 scripts/docs_outputs.py`` checks both pages (exit 1 and the differences when a figure
is stale); ``--write`` rewrites the output blocks from the code (result comments are prose: fix
them by hand, as the check says). tests/project/test_docs_commands.py runs the same checks.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "guide.md"]
OUTPUT_BLOCK = re.compile(r"^<!-- output of: (?P<command>.+?) -->\n```text\n(?P<shown>.*?)^```$", re.M | re.S)
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?…?(?![\w])|(?<![\w.,])-?\d+(?:\.\d+)?(?:e-?\d+)?…?(?![\w])")
_QUOTED = re.compile(r"'([^']+)'")


@contextlib.contextmanager
def clone() -> Iterator[Path]:
    """A temporary folder laid out like a fresh clone's (examples/ only), as the working directory, without Adult."""
    saved = (Path.cwd(), dict(os.environ))
    with tempfile.TemporaryDirectory(prefix="dpwitness-docs-") as folder:
        here = Path(folder)
        shutil.copytree(ROOT / "examples", here / "examples", ignore=shutil.ignore_patterns("*.db*", ".ipynb_checkpoints"))
        os.chdir(here)
        os.environ.update(DPWITNESS_ADULT=str(here / "no-adult-here.csv"), DPWITNESS_PROGRESS="0", COLUMNS="80")
        try:
            yield here
        finally:
            os.chdir(saved[0])
            os.environ.clear()
            os.environ.update(saved[1])


def run_command(command: str, folder: Path) -> tuple[int, str]:
    """A ``dpwitness …`` command run through the CLI in ``folder``: its exit code and normalised output."""
    from typer.testing import CliRunner

    from dpwitness import __version__
    from dpwitness.cli import app

    result = CliRunner().invoke(app, shlex.split(command)[1:], terminal_width=80)
    return result.exit_code, normalise(result.output, folder, __version__)


def normalise(text: str, folder: Path, version: str) -> str:
    """Only what must vary: the clone's folder (shown as ``.``) and the version; and no trailing spaces."""
    for path in {str(folder.resolve()), str(folder)}:
        text = text.replace(path + os.sep, "").replace(path, ".")
    text = text.replace(version, "VERSION")
    return "\n".join(line.rstrip() for line in text.splitlines())  # a centred title's padding


# --- result comments ----------------------------------------------------------------------------


def figures(comment: str) -> tuple[list[str], list[str]]:
    """The numbers and the single-quoted texts a result comment states (explanations left out)."""
    text = re.sub(r"\S+://\S+", "", comment)
    text = re.sub(r"^\s*exit \d\b[:;,]?", "", text)
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)
    return _NUMBER.findall(text), _QUOTED.findall(text)


def _shown_numbers(shown: str) -> list[float]:
    return [float(n.replace(",", "").rstrip("…")) for n in _NUMBER.findall(shown)]


def _matches(stated: str, values: list[float]) -> bool:
    """Whether a shown value is the stated number: equal for a whole or e-notation number, else
    rounded to its decimals (cut to them when it ends in ``…``)."""
    number = stated.replace(",", "").rstrip("…")
    goal = float(number)
    decimals = len(number.partition(".")[2]) if "e" not in number else 0
    if decimals == 0:
        return goal in values
    digits = round(abs(goal) * 10**decimals)
    if stated.endswith("…"):
        return any(math.floor(abs(v) * 10**decimals + 1e-9) == digits and (v < 0) == (goal < 0) for v in values)
    return any(round(v, decimals) == goal for v in values)


def stale_figures(comment: str, shown: str) -> list[str]:
    """The figures of ``comment`` that ``shown`` (the statement's output) does not show."""
    numbers, quoted = figures(comment)
    values = _shown_numbers(shown)
    missing = [n for n in numbers if not _matches(n, values)]
    return missing + [f"'{q}'" for q in quoted if q not in shown]


def run_python_block(block: str, namespace: dict[str, Any], where: str) -> list[str]:
    """Runs a Python block statement by statement in ``namespace``; returns every stale result comment."""
    tree = ast.parse(block, where)
    lines = block.splitlines()
    problems = []
    for statement in tree.body:
        comment = _comment(lines[statement.end_lineno - 1]) if isinstance(statement, ast.Expr) else None  # type: ignore[operator]
        module = ast.Module(body=[statement], type_ignores=[])
        if comment is None or not any(figures(comment)):
            exec(compile(module, where, "exec"), namespace)
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            value = eval(compile(ast.Expression(statement.value), where, "eval"), namespace)  # type: ignore[attr-defined]
        shown = "\n".join([repr(value), str(value), printed.getvalue()])
        stale = stale_figures(comment, shown)
        if stale:
            problems.append(f"{where}, line {statement.lineno}: {', '.join(stale)} not shown by: {shown[:400]!r}")
    return problems


def _comment(line: str) -> str | None:
    """The comment of one line of code (a ``#`` outside strings), or None."""
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return next((t.string[1:].strip() for t in tokens if t.type == tokenize.COMMENT), None)


def command_comment(line: str) -> str | None:
    """The comment of a bash line (a ``#`` after a space, outside quotes), or None."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index + 1 :].strip()
    return None


# --- output blocks ------------------------------------------------------------------------------


def output_blocks(page: Path) -> list[tuple[str, str]]:
    """Each output block of ``page``: its command and the output shown."""
    return [(m["command"], m["shown"]) for m in OUTPUT_BLOCK.finditer(page.read_text(encoding="utf-8"))]


def refreshed(page: Path) -> str:
    """``page`` with every output block regenerated from the code."""
    with clone() as folder:

        def replace(match: re.Match[str]) -> str:
            _, output = run_command(match["command"], folder)
            return f"<!-- output of: {match['command']} -->\n```text\n{output.rstrip()}\n```"

        return OUTPUT_BLOCK.sub(replace, page.read_text(encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the output blocks from the code")
    args = parser.parse_args()
    stale = 0
    for page in PAGES:
        fresh = refreshed(page)
        if fresh != page.read_text(encoding="utf-8"):
            if args.write:
                page.write_text(fresh, encoding="utf-8")
                print(f"{page.relative_to(ROOT)}: output blocks rewritten")
            else:
                stale += 1
                print(f"{page.relative_to(ROOT)}: an output block is stale (python3 scripts/docs_outputs.py --write)")
    print("result comments: checked by tests/project/test_docs_commands.py (-m slow)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
