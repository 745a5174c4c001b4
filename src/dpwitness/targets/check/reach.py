"""Reaching the inputs a library accepts: tables of its declared size or above its minimum, and
the sizes at which the checked function's structure changes with the number of rows.

The first probes hold 1, 2 and 0 rows. A library with a sized domain (OpenDP's
``vector_domain(…, size=1024)``) or a minimum number of rows (a model needing n ≥ n_clusters)
refuses all three: :func:`find_sized_probe` then tries the sizes the refusals declare
(:class:`~dpwitness.targets.hooks.Unsupported` ``rows``), then 4, 8, 16… rows. A function whose
noise calls (their number, order or declared Δ, ε, δ) change with n, say at n = 1,581, is seen
only by a pair that crosses that size: :func:`size_boundaries` runs it on 1, 2, 4… rows and
bisects, between two sizes where the calls differ, down to the two sizes n − 1 and n where they
change. :func:`sized_pairs` builds neighbours at the sizes found, for the sensitivity search.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpwitness.targets.check.probe import UnnoisedRunner, failure
from dpwitness.targets.hooks import AdapterError, NoiseCall

if TYPE_CHECKING:
    import polars as pl

#: The largest table of the size ladder (1, 2, 4, … rows), unless a library's limit is lower.
LADDER_ROWS = 2**14
#: The most listed values per column :func:`listed_pairs` varies.
LISTED_VALUES = 16


def table_of(template: pl.DataFrame, rows: int) -> pl.DataFrame:
    """``rows`` copies of ``template``'s first row (no rows: its empty table)."""
    return template[[0] * rows] if rows else template.clear()


def ladder(start: int, cap: int) -> list[int]:
    """start, 2·start, 4·start, … up to ``cap`` (included when it is not a power of two)."""
    sizes = []
    rows = start
    while rows < cap:
        sizes.append(rows)
        rows *= 2
    return [*sizes, cap]


class _Budget:
    """CPU seconds for a run of tables of growing sizes: a run is allowed when the time spent plus
    twice the last run's (the next table is at most twice as large) stays within ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.started, self.last = seconds, time.process_time(), 0.0

    def allows(self) -> bool:
        return time.process_time() - self.started + 2 * self.last <= self.seconds

    def run(self, runner: UnnoisedRunner, table: pl.DataFrame) -> list[NoiseCall]:
        """``runner.calls(table)``, timed."""
        begun = time.process_time()
        try:
            return runner.calls(table)
        finally:
            self.last = time.process_time() - begun


def find_sized_probe(
    runner: UnnoisedRunner, template: pl.DataFrame, cap: int, seconds: float
) -> tuple[pl.DataFrame | None, list[NoiseCall], list[tuple[int, str]]]:
    """When the 1-, 2- and 0-row probes are refused: the first table of the declared sizes
    (``runner.declared_rows``, and any a refusal declares on the way), then of 4, 8, … rows up to
    ``cap``, on which the function makes noise calls; None when there is none within ``seconds``
    of CPU. Returns (table, its calls, each size tried as (rows, why it failed, "" when it ran)).

    :param runner: the check's runner (its ``declared_rows`` grow with each refusal that declares a size).
    :param template: the one-row table every probe is made of (:func:`table_of`).
    """
    budget = _Budget(seconds)
    queue = [*sorted(runner.declared_rows), *ladder(4, cap)]
    tried: set[int] = {0, 1, 2}
    outcomes: list[tuple[int, str]] = []
    while queue and budget.allows():
        rows = queue.pop(0)
        if rows in tried or rows > cap:
            continue
        tried.add(rows)
        table = table_of(template, rows)
        try:
            calls = budget.run(runner, table)
        except AdapterError:
            raise
        except Exception as error:
            outcomes.append((rows, failure(error)))
            declared = runner.declare(error)
            if declared is not None and declared not in tried:
                queue.insert(0, declared)
            continue
        outcomes.append((rows, ""))
        if calls:
            return table, calls, outcomes
    return None, [], outcomes


@dataclass(frozen=True)
class Boundary:
    """Two sizes n − 1 and n (``below``, ``above`` rows of the probe's row) between which the
    function's noise calls change, with the calls on each."""

    below: pl.DataFrame
    above: pl.DataFrame
    calls_below: list[NoiseCall]
    calls_above: list[NoiseCall]

    def describe(self) -> str:
        return (
            f"the noise calls change between {self.below.height} and {self.above.height} rows "
            f"({len(self.calls_below)} call(s), then {len(self.calls_above)})"
        )


def size_boundaries(runner: UnnoisedRunner, template: pl.DataFrame, cap: int, seconds: float, limit: int = 3) -> list[Boundary]:
    """Up to ``limit`` sizes where the function's noise calls change with the number of rows (their
    number, order, sites or declared Δ, ε, δ): the function is run on 1, 2, 4, … rows up to ``cap``
    (and the declared sizes), and between two consecutive sizes it accepts where its calls differ,
    the size is bisected down to n − 1 and n. Sizes it refuses are passed over; the search stops
    after ``seconds`` of CPU.

    :param runner: the check's runner: the function, run unnoised, and the sizes its library declares.
    :param template: the one-row table every table is made of (:func:`table_of`).
    """
    budget = _Budget(seconds)

    def out_of_time() -> bool:
        return not budget.allows()

    def run(rows: int) -> tuple[pl.DataFrame, list[NoiseCall]] | None:
        table = table_of(template, rows)
        try:
            return table, budget.run(runner, table)
        except AdapterError:
            raise
        except Exception as error:  # outside the contract at this size, or the user's error: no information
            runner.declare(error)
            return None

    def signature(calls: Sequence[NoiseCall]) -> tuple[Any, ...]:
        return tuple(call.signature for call in calls)

    accepted: list[tuple[int, pl.DataFrame, list[NoiseCall]]] = []
    for rows in sorted({*ladder(1, cap), *(n for n in runner.declared_rows if n <= cap)}):
        if out_of_time():
            break
        ran = run(rows)
        if ran is not None:
            accepted.append((rows, *ran))
    found: list[Boundary] = []
    for (low, low_table, low_calls), (high, high_table, high_calls) in itertools.pairwise(accepted):
        if len(found) >= limit or out_of_time():
            break
        if signature(low_calls) == signature(high_calls):
            continue
        while high - low > 1 and not out_of_time():
            middle = (low + high) // 2
            ran = run(middle)
            if ran is None:
                break
            if signature(ran[1]) == signature(low_calls):
                low, low_table, low_calls = middle, *ran
            else:
                high, high_table, high_calls = middle, *ran
        if high - low == 1:
            found.append(Boundary(low_table, high_table, low_calls, high_calls))
    return found


def sized_pairs(
    template: pl.DataFrame, sizes: Iterable[int], bounds: tuple[float, float] | None, neighbours: str
) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """Neighbours of each size n (the declared size, the sizes where the structure changes): n
    copies of the probe's row with the first float column at one value, and one record replaced
    by another value (replace-one), or one record added to n − 1 and to n records (add-remove).
    The values are the bounds (the library's, default (0, 1)) and one width beyond each.

    :param template: the one-row table the pairs are made of; without a float column: no pairs.
    :param neighbours: ``"replace-one"`` or ``"add-remove"``.
    """
    import polars as pl

    column = next((name for name, dtype in template.schema.items() if dtype.is_float()), None)
    if column is None:
        return []
    low, high = bounds or (0.0, 1.0)
    width = (high - low) or 1.0
    values = [low, high, low - width, high + width]
    dtype = template.schema[column]

    def rows_at(rows: int, value: float) -> pl.DataFrame:
        return table_of(template, rows).with_columns(pl.lit(value, dtype=dtype).alias(column))

    pairs: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    for rows in sorted(set(sizes)):
        for first in values:
            for other in values:
                if first == other:
                    continue
                if neighbours == "replace-one":
                    if rows >= 1:
                        pairs.append((rows_at(rows, first), pl.concat([rows_at(rows - 1, first), rows_at(1, other)])))
                    continue
                for base in (rows - 1, rows):
                    if base >= 0:
                        pairs.append((rows_at(base, first), pl.concat([rows_at(base, first), rows_at(1, other)])))
    return pairs


def listed_pairs(template: pl.DataFrame, columns: Mapping[str, Any], neighbours: str) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """One record with each listed value of each column (the others as in the probe's row): added to
    no record and to the probe's row (add-remove), or replacing the probe's row (replace-one). Under
    the discrete metric every change is at distance 1, so these pairs are how the audit gets one
    change of each kind to screen, whatever the search's draws.

    :param template: the one-row probe table.
    :param columns: the checked columns (as for ``check``); those given as lists are varied.
    :param neighbours: ``"replace-one"`` or ``"add-remove"``.
    """
    import polars as pl

    pairs: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    for name, spec in columns.items():
        if not isinstance(spec, Sequence) or isinstance(spec, str):
            continue
        dtype = template.schema[name]
        for value in list(dict.fromkeys(spec))[:LISTED_VALUES]:
            row = template.with_columns(pl.lit(value, dtype=dtype).alias(name))
            if neighbours == "replace-one":
                pairs.append((template, row))
            else:
                pairs += [(table_of(template, 0), row), (template, pl.concat([template, row]))]
    return pairs


__all__ = [
    "LADDER_ROWS",
    "Boundary",
    "find_sized_probe",
    "ladder",
    "listed_pairs",
    "size_boundaries",
    "sized_pairs",
    "table_of",
]
