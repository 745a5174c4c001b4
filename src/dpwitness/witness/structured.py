"""Large structured tables for the sensitivity search: the shapes floating-point bugs need.

The Hypothesis search of :mod:`dpwitness.witness.sensitivity` draws tables of a few rows, so it
can never see a rounding error that grows with the table: a float sum whose partial sums sit
just above a binade edge, where every small addition rounds up, moves by more than its bound
when one large record takes the sum below the edge (Casacuberta et al., CCS 2022). Such tables
are written here as *runs*, ``value × multiplicity``, and searched over the shapes that matter:

* magnitudes at binade edges: ``m`` records of a large value ``b`` (a bound) with ``m·b`` just
  at or above ``2^e``, for ``2^e`` up to the size limit (2²⁰ rows and beyond);
* half-ulp fractions and grids of ``M + k·ulp``: small values at ``ulp(2^e)·(½ ± 2⁻¹⁰)``,
  ``ulp·¾``, ``ulp·(1 + ½)``;
* the dataset size as a searched parameter (the small run ½×, 1× or 2× the large one);
* orderings: which run comes first, and where the changed record sits (first, between, last);
* out-of-range outliers (when the column's declared type allows them);
* key-set changes, for a grouped query (a key column: listed values, text, integers or
  booleans): a record whose key no other record has is added (read backwards: the last record
  of a group removed), or under replace-one a record moved to a new key or out of its group, in
  one to three groups of 1, 16 or 2¹⁰ records, the record first, between the groups or last,
  its value at the bound or beyond it; a null key counts as a new key for a declared type. A
  library that releases its key set without partition selection changes its noise calls on
  such a pair; one whose per-key bound misses a new group's record moves by more than Δ.

The search learns which shapes grow: every shape is tried on small tables first (2¹⁰ rows), and
only those whose shift exceeds Δ at all (by any amount, even below the tolerance) are grown,
size after size, until one violates (beyond :data:`RELATIVE_TOLERANCE`) or the size limit or
the time budget is reached. Each pair is checked by :func:`search_claims` (one code path for
every shift and every tolerance), so a structured finding is a :class:`SensitivityResult` too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpwitness.common.encoding import json_cell
from dpwitness.common.errors import ParameterError
from dpwitness.witness.sensitivity import RELATIVE_TOLERANCE, SensitivityResult, search_claims

if TYPE_CHECKING:
    import polars as pl

#: Binade edges tried first (2¹⁰), then grown through these exponents.
FIRST_EXPONENT = 10
GROWTH_EXPONENTS = (14, 17, 20, 21)
#: Shapes grown after the first, small round (the most promising ones).
GROWN_SHAPES = 4
#: Default cap on the rows of one table and on the search's time.
MAX_ROWS = 2**23
DEFAULT_SECONDS = 40.0


@dataclass(frozen=True)
class Runs:
    """A table as runs of identical rows, in order: ((row values, multiplicity), …)."""

    columns: tuple[str, ...]
    runs: tuple[tuple[tuple[Any, ...], int], ...]

    @property
    def rows(self) -> int:
        return sum(times for _, times in self.runs)

    def frame(self, schema: Mapping[str, Any]) -> pl.DataFrame:
        """The Polars table (built column by column; 2²² rows take a fraction of a second).

        :param schema: column → Polars dtype (a column not in it: Polars infers; values cast non-strictly).
        """
        import polars as pl

        index = np.repeat(np.arange(len(self.runs)), [times for _, times in self.runs])
        data = {}
        for position, name in enumerate(self.columns):
            distinct = pl.Series(name, [row[position] for row, _ in self.runs], dtype=schema.get(name), strict=False)
            data[name] = distinct.gather(index) if len(index) else distinct.clear()
        return pl.DataFrame(data)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The runs as data: [{"row": {column: value}, "times": n}, …] (NaN and ±∞ as strings)."""
        return [{"row": {c: json_cell(v) for c, v in zip(self.columns, row, strict=True)}, "times": n} for row, n in self.runs]

    @classmethod
    def of_frame(cls, frame: pl.DataFrame) -> Runs:
        """The runs of a (small) table: consecutive equal rows merged (NaN equals NaN).

        :param frame: the Polars table, read row by row.
        """
        runs: list[tuple[tuple[Any, ...], int]] = []
        for row in frame.iter_rows():
            if runs and _same_row(runs[-1][0], row):
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((tuple(row), 1))
        return cls(tuple(frame.columns), tuple(runs))

    def __str__(self) -> str:
        if not self.runs:
            return "(no rows)"
        parts = [
            "(" + ", ".join(f"{c}={v!r}" for c, v in zip(self.columns, row, strict=True)) + ")" + (f" × {n}" if n > 1 else "")
            for row, n in self.runs
        ]
        return f"{self.rows} row(s): " + "; ".join(parts)


def _same_row(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(a, b, strict=True)
    )


@dataclass(frozen=True)
class Shape:
    """One family of structured pairs; :meth:`pair` builds it at the binade edge 2^exponent."""

    big: float
    small_ulps: float
    ratio: float
    change: str
    position: str
    big_first: bool
    outlier: float | None = None

    def describe(self) -> str:
        order = "large run first" if self.big_first else "small run first"
        what = {
            "remove-big": "one large record removed",
            "add-small": "one small record added",
            "add-outlier": f"an outlier {self.outlier!r} added",
            "add-big": "one large record added",
        }.get(self.change, self.change)
        sizes = f"sizes 1:{self.ratio:g}"
        return f"large {self.big!r} at a binade edge, small ulp×{self.small_ulps:g}, {sizes}, {order}, {what} ({self.position})"

    def pair(self, exponent: int, template: tuple[Any, ...], column: int, columns: tuple[str, ...]) -> tuple[Runs, Runs] | None:
        """(D, D′) of this shape at the edge 2^``exponent``; None when the shape has no outlier to add.

        :param template: one row of values; every run's row is it with position ``column`` replaced.
        :param column: the position, in ``template`` and ``columns``, of the numeric column varied.
        :param columns: the tables' column names.
        """
        edge = 2.0**exponent
        big_count = math.ceil(edge / abs(self.big))
        magnitude = big_count * abs(self.big)
        ulp = float(np.spacing(magnitude))
        small = math.copysign(ulp * self.small_ulps, self.big)
        small_count = max(1, int(big_count * self.ratio))

        def row(value: float) -> tuple[Any, ...]:
            values = list(template)
            values[column] = value
            return tuple(values)

        # Removing one large record must take the large run's total below the edge: the base
        # holds one fewer, and the table with the record sits exactly at (or just above) 2^e.
        base_big = big_count - 1 if self.change == "remove-big" else big_count
        big_run, small_run = (row(self.big), base_big), (row(small), small_count)
        base = [big_run, small_run] if self.big_first else [small_run, big_run]
        changed = {"remove-big": self.big, "add-big": self.big, "add-small": small, "add-outlier": self.outlier}[self.change]
        if changed is None:
            return None
        record = (row(changed), 1)
        at = {"first": 0, "between": 1, "last": 2}[self.position]
        with_record = [*base[:at], record, *base[at:]]
        d, d_prime = Runs(columns, _merged(base)), Runs(columns, _merged(with_record))
        return (d_prime, d) if self.change == "remove-big" else (d, d_prime)


def _merged(runs: Sequence[tuple[tuple[Any, ...], int]]) -> tuple[tuple[tuple[Any, ...], int], ...]:
    out: list[tuple[tuple[Any, ...], int]] = []
    for row, times in runs:
        if times <= 0:
            continue
        if out and _same_row(out[-1][0], row):
            out[-1] = (row, out[-1][1] + times)
        else:
            out.append((row, times))
    return tuple(out)


_Run = tuple[tuple[Any, ...], int]
#: (existing groups, records per group) of the key-set shapes, small first.
KEY_LAYOUTS = ((1, 1), (3, 1), (3, 16), (3, 2**10))


@dataclass(frozen=True)
class KeyShape:
    """A key-set change: a record with a new key (or out of its group) against ``groups`` groups
    of ``size`` records each; :meth:`pair` builds it."""

    change: str
    position: str
    groups: int
    size: int
    new_key: Any
    value: Any

    def describe(self) -> str:
        what = {
            "new-key": f"a record with the new key {self.new_key!r} added (backwards: the last of its group removed)",
            "to-new-key": f"a record moved to the new key {self.new_key!r}",
            "out-of-group": f"the last record of group {self.new_key!r} moved to an existing group",
        }[self.change]
        return f"key set: {what}, value {self.value!r}, {self.groups} group(s) of {self.size}, record {self.position}"

    def pair(
        self, template: tuple[Any, ...], key: int, value: int | None, keys: Sequence[Any], columns: tuple[str, ...]
    ) -> tuple[Runs, Runs]:
        """(D, D′) of this change.

        :param template: one row of values; runs replace position ``key`` (and ``value``).
        :param key: the position of the key column.
        :param value: the position of the value column (None: the template's values only).
        :param keys: the existing groups' keys (at least ``groups`` of them, none equal to ``new_key``).
        :param columns: the tables' column names.
        """

        def row(group: Any, number: Any = None) -> tuple[Any, ...]:
            values = list(template)
            values[key] = group
            if value is not None and number is not None:
                values[value] = number
            return tuple(values)

        groups = [(row(k), self.size) for k in keys[: self.groups]]
        record = (row(self.new_key, self.value), 1)
        moved = (row(keys[0], self.value), 1)

        def place(
            runs: list[tuple[tuple[Any, ...], int]], extra: tuple[tuple[Any, ...], int]
        ) -> list[tuple[tuple[Any, ...], int]]:
            if self.position == "first":
                return [extra, *runs]
            if self.position == "last":
                return [*runs, extra]
            if len(runs) > 1:  # between the first group and the others
                return [runs[0], extra, *runs[1:]]
            (only, times) = runs[0]
            return [(only, times - times // 2), extra, (only, times // 2)]  # inside the one group

        if self.change == "new-key":
            return Runs(columns, _merged(groups)), Runs(columns, _merged(place(groups, record)))
        if self.change == "to-new-key":  # one record of the first group now has the new key
            fewer = [(groups[0][0], groups[0][1] - 1), *groups[1:]]
            return Runs(columns, _merged(place(fewer, moved))), Runs(columns, _merged(place(fewer, record)))
        return Runs(columns, _merged(place(groups, record))), Runs(columns, _merged(place(groups, moved)))


def key_shapes(keys: Sequence[Any], new_keys: Sequence[Any], values: Sequence[Any], *, neighbours: str) -> list[KeyShape]:
    """Every key-set change for a key column whose existing groups take ``keys`` (up to three),
    whose new key is each of ``new_keys`` and whose changed record has each of ``values``.

    :param neighbours: ``"add-remove"`` (a record with a new key added) or ``"replace-one"`` (a
        record moved to a new key, or the last record of a group moved to an existing group).
    """
    changes = ("to-new-key", "out-of-group") if neighbours == "replace-one" else ("new-key",)
    found: list[KeyShape] = []
    for groups, size in KEY_LAYOUTS:
        if groups > len(keys):
            continue
        for new_key in new_keys:
            for number in values:
                for change in changes:
                    for position in ("first", "between", "last"):
                        found.append(KeyShape(change, position, groups, size, new_key, number))
    return found


def _key_values(dtype: Any, listed: Sequence[Any] | None) -> tuple[list[Any], list[Any]]:
    """(existing keys, new keys) for a key column: listed values (the last one is the new key) or a type."""
    import polars as pl

    if listed is not None:
        distinct = list(dict.fromkeys(v for v in listed))
        return (distinct[:-1][:3], distinct[-1:]) if len(distinct) >= 2 else ([], [])
    if dtype == pl.Boolean:
        return [False], [True, None]
    if dtype.is_integer():
        return [0, 1, 2], [3, None]
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Categorical):
        return ["k0", "k1", "k2"], ["new", None]
    return [], []


def shapes(bounds: tuple[float, float], *, outliers: bool) -> list[Shape]:
    """Every shape for a numeric column bounded by ``bounds`` (outliers when its type allows them)."""
    low, high = bounds
    bigs = [v for v in dict.fromkeys([high, low]) if v != 0 and math.isfinite(v)]
    found: list[Shape] = []
    for big in bigs:
        for small in (0.5 + 2**-10, 0.5 - 2**-10, 0.75, 1.5):
            for ratio in (1.0, 0.5, 2.0):
                for big_first in (True, False):
                    for position in ("first", "between", "last"):
                        for change in ("remove-big", "add-small"):
                            found.append(Shape(big, small, ratio, change, position, big_first))
        if outliers:
            for outlier in (2 * high + 1, 2 * low - 1, 1e300, -1e300, math.nan, math.inf, -math.inf):
                found.append(Shape(big, 0.5 + 2**-10, 1.0, "add-outlier", "first", True, outlier))
    return found


@dataclass(frozen=True)
class StructuredResult:
    """What the structured search found for each output: its :class:`SensitivityResult` (shift
    and pair of the largest relative shift, violated when beyond the tolerance), the pair as
    runs, the shape, and the largest shift seen for that shape at any size."""

    results: dict[str, SensitivityResult]
    pairs: dict[str, tuple[Runs, Runs]]
    shapes: dict[str, str]
    largest: dict[str, float]
    tried: int
    seconds: float
    skipped: int = 0


def structured_search(
    outputs: Callable[[pl.DataFrame], Mapping[str, Any]],
    *,
    columns: Mapping[str, Any],
    claims: Mapping[str, float],
    bounds: tuple[float, float] | None = None,
    neighbours: str = "add-remove",
    norm: str = "l1",
    max_rows: int | None = None,
    seconds: float = DEFAULT_SECONDS,
    skip: tuple[type[BaseException], ...] = (),
) -> StructuredResult:
    """Search large structured pairs (see the module docstring) for a shift beyond each claim.

    ``outputs``/``columns``/``claims``/``neighbours``/``norm`` are those of :func:`search_claims`.
    The searched column is the first float column declared by dtype (a column given as a list
    of values keeps to those values, so it is never searched here); ``bounds`` are its declared
    bounds (the library's, default (0, 1)); ``max_rows`` caps a table (a library's size limit);
    ``seconds`` caps the search's CPU time (:func:`time.process_time`, so that the machine's load
    does not decide what is found; the result's ``seconds`` is CPU too). A pair on which
    ``outputs`` raises one of ``skip`` is skipped (counted).
    """
    import polars as pl

    if not claims:
        raise ParameterError("claims", "at least one output with its Δ", claims)
    cap = min(max_rows or MAX_ROWS, MAX_ROWS)
    names = tuple(columns)
    schema: dict[str, Any] = {}
    template: list[Any] = []
    target: int | None = None
    target_bounds = bounds
    allows_outliers = False
    key: tuple[int, list[Any], list[Any]] | None = None  # the key column: position, existing keys, new keys
    for position, (name, spec) in enumerate(columns.items()):
        if isinstance(spec, Sequence) and not isinstance(spec, str):
            values = list(spec)
            template.append(values[0])
            schema[name] = pl.Series(values, strict=False).dtype  # listed values only: never a search target
            listed: Sequence[Any] | None = values
        else:
            dtype = spec() if isinstance(spec, type) else spec
            schema[name] = dtype
            listed = None
            if dtype.is_float() and target is None:
                target, allows_outliers = position, True
                template.append(0.0)
                continue
            elif dtype.is_numeric():
                template.append(0)
            elif dtype == pl.Boolean:
                template.append(False)
            else:
                template.append("a")
        if key is None and not schema[name].is_float():
            existing, new = _key_values(schema[name], listed)
            if existing:
                key = (position, existing, new)
    started = time.process_time()
    best: dict[str, tuple[float, SensitivityResult, tuple[Runs, Runs], str]] = {}
    largest: dict[str, float] = {}
    tried = skipped = 0
    if target is None and key is None:
        return StructuredResult({}, {}, {}, {}, 0, 0.0)
    low, high = target_bounds or (0.0, 1.0)
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0

    def run(pair: tuple[Runs, Runs], label: str) -> dict[str, float] | None:
        nonlocal tried, skipped
        d, d_prime = pair
        tried += 1
        try:
            found = search_claims(
                outputs,
                columns=columns,
                claims=claims,
                neighbours=neighbours,
                norm=norm,
                trials=0,
                pairs=[(d.frame(schema), d_prime.frame(schema))],
            )
        except skip:
            skipped += 1
            return None
        except Exception as error:  # e.g. the caller's own finding, raised from outputs: say on which table
            error.add_note(f"structured table '{label}'")
            raise
        excess: dict[str, float] = {}
        for name, result in found.items():
            claimed = claims[name]
            relative = (result.shift - claimed) / claimed if claimed > 0 else (math.inf if result.shift > 0 else 0.0)
            excess[name] = relative
            largest[name] = max(largest.get(name, 0.0), result.shift)
            kept = best.get(name)
            # The first violation is the smallest pair (sizes only grow): it is kept.
            if kept is None or (not kept[1].violated and (relative > kept[0] or result.violated)):
                best[name] = (relative, result, pair, label)
        return excess

    def out_of_time() -> bool:
        return time.process_time() - started > seconds

    if key is not None:  # key-set changes first: few pairs, small tables
        key_at, existing, new = key
        numbers: list[Any] = [None] if target is None else [high, *([2 * high + 1] if allows_outliers else [])]
        base = list(template)
        if target is not None:
            base[target] = high
        for key_shape in key_shapes(existing, new, numbers, neighbours=neighbours):
            if out_of_time():
                break
            key_pair = key_shape.pair(tuple(base), key_at, target, existing, names)
            if max(key_pair[0].rows, key_pair[1].rows) <= cap:
                run(key_pair, key_shape.describe())
    scored: list[tuple[float, Shape]] = []
    for shape in shapes((low, high), outliers=allows_outliers) if target is not None else ():
        assert target is not None
        if out_of_time():
            break
        pair = shape.pair(FIRST_EXPONENT, tuple(template), target, names)
        if pair is None or pair[1].rows > cap:
            continue
        excess = run(pair, f"{shape.describe()}, 2^{FIRST_EXPONENT}")
        if excess is not None:
            scored.append((max(excess.values()), shape))
    scored.sort(key=lambda item: -item[0])
    growing = [shape for score, shape in scored[:GROWN_SHAPES] if score > 0]
    violated = any(result.violated for _, result, _, _ in best.values())
    for exponent in GROWTH_EXPONENTS:
        if not growing or out_of_time():
            break
        still: list[Shape] = []
        for shape in growing:
            if out_of_time():
                break
            assert target is not None
            pair = shape.pair(exponent, tuple(template), target, names)
            if pair is None or max(pair[0].rows, pair[1].rows) > cap:
                continue
            excess = run(pair, f"{shape.describe()}, 2^{exponent}")
            if excess is not None and max(excess.values()) > 0:
                still.append(shape)
            if excess is not None and max(excess.values()) > RELATIVE_TOLERANCE:
                violated = True
                still = [shape]  # grow the violating shape only: the largest shift it reaches
                break
        growing = still
        if violated and exponent >= GROWTH_EXPONENTS[-1]:
            break
    return StructuredResult(
        results={name: kept[1] for name, kept in best.items()},
        pairs={name: kept[2] for name, kept in best.items()},
        shapes={name: kept[3] for name, kept in best.items()},
        largest=largest,
        tried=tried,
        seconds=time.process_time() - started,
        skipped=skipped,
    )


__all__ = ["KeyShape", "Runs", "Shape", "StructuredResult", "key_shapes", "shapes", "structured_search"]
