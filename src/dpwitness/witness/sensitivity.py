"""The sensitivity witness: search small tables and their neighbours for a shift larger than Δ.

The analytic witness proves the sampler against a *declared* Δ; nothing there checks that the
query really moves by at most Δ. :func:`sensitivity_search` does: it runs ``fn`` (a Polars
DataFrame → a number, a vector, or a dict of keyed numbers) on pairs of neighbouring tables
and measures how far its output moves (L1 or L2), looking for a pair that moves it by more
than ``claimed``. Hypothesis drives the search (programmatically, no pytest needed): it draws
small tables with nulls, NaN, ±∞, extreme magnitudes and values far outside any bounds; it
is steered towards large shifts (``hypothesis.target``); and once a violation is found it
shrinks the pair to a minimal one.

The neighbour relations (the same as :mod:`dpwitness.privacy.neighbours`):

* ``"add-remove"``: D′ = D plus one record (removal is the same pair read backwards);
* ``"replace-one"``: D′ = D with one record replaced by any other (half the time by a copy
  of it with one field changed: null ↔ value, a value out of bounds, a record moving between
  keys);
* with ``privacy_unit``, a record is a *unit*: every row whose ``privacy_unit`` value is the
  same (a row whose unit is null is a unit of its own). The changed unit holds up to
  ``max_contributions × (max_groups or 1) + 1`` rows (one more than any contribution bound
  keeps), its id is new, kept, or null; the other units are drawn with ids 0–2, so they too
  hold several rows.

A table is a multiset: the record that changes is written *after* every other row in both
tables, so every other row keeps its position. A function that picks rows by a keyed hash of
their position in the table would otherwise see other units' picks move when a unit is
inserted between them (for one fixed key; over a secret key the picks stay uniform). The
engines' contribution bounding hashes each row's rank among its own unit's rows instead, so
for them the order does not matter; for a function of row order beyond that, only the order
written here is checked.

Tolerance: a pair violates the claim when its shift exceeds ``claimed × (1 + 1e-9)``
(:data:`RELATIVE_TOLERANCE`). The slack is for float64 rounding in ``fn``'s sums over these
small tables (a few ulps of the total); a wrong Δ is off by a whole bound or a whole row,
many orders of magnitude more. A claimed Δ of 0 allows no shift at all.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpwitness.common.errors import ParameterError, require
from dpwitness.common.progress import Bar, progress
from dpwitness.common.validation import check_count, check_non_negative_finite
from dpwitness.privacy.neighbours import Neighbours

if TYPE_CHECKING:
    import polars as pl

#: Relative slack on ``claimed`` before a shift counts as a violation (float rounding, see above).
RELATIVE_TOLERANCE = 1e-9
#: Rows of the unchanged part of a table (the changed record comes on top).
BASE_ROWS = 6
#: Ids of the other units (0, 1, 2) and of the changed unit (new, or its replacement's new id).
OTHER_UNITS = 3
CHANGED_UNIT, REPLACEMENT_UNIT = 100, 101
NORMS = ("l1", "l2", "linf")  # linf: the most one key moves (the Δ∞ a selection threshold needs)
DEFAULT_TRIALS = 200
MAX_TRIALS = 1_000_000
#: A stand-in for an infinite shift where Hypothesis needs a finite number (its target).
_LARGE = 1e300

Output = Any


@dataclass(frozen=True, eq=False)
class SensitivityResult:
    """What :func:`sensitivity_search` found.

    ``violated``: a pair (``d``, ``d_prime``) moved the output by more than ``claimed`` (after
    shrinking, a minimal such pair); otherwise ``d``/``d_prime`` is the pair with the largest
    shift found. ``shift`` is that pair's shift, ``worst`` the largest over every pair tried.
    """

    violated: bool
    worst: float
    shift: float
    claimed: float
    d: pl.DataFrame = field(repr=False)
    d_prime: pl.DataFrame = field(repr=False)
    trials: int
    neighbours: str
    norm: str
    privacy_unit: str | None = None
    seed: int | None = None
    seconds: float = 0.0
    part: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violated

    def to_dict(self) -> dict[str, Any]:
        return {
            "violated": self.violated,
            "worst": self.worst,
            "shift": self.shift,
            "claimed": self.claimed,
            "d": self.d.to_dicts(),
            "d_prime": self.d_prime.to_dicts(),
            "trials": self.trials,
            "neighbours": self.neighbours,
            "norm": self.norm,
            "privacy_unit": self.privacy_unit,
            "seed": self.seed,
            "seconds": self.seconds,
            "part": self.part,
        }

    def __str__(self) -> str:
        what = f"{self.part}: " if self.part else ""
        unit = f", privacy unit {self.privacy_unit}" if self.privacy_unit else ""
        head = (
            f"{what}{self.norm.upper()} shift {self.shift:.6g} > claimed Δ = {self.claimed:g}"
            if self.violated
            else f"{what}no pair moved the output by more than Δ = {self.claimed:g} "
            f"(largest {self.norm.upper()} shift {self.worst:.6g})"
        )
        mark = "✘ VIOLATED" if self.violated else "✔ claim holds on every pair tried"
        pair = "minimal violating pair" if self.violated else "pair with the largest shift"
        return (
            f"{mark}: {head}; {self.trials} pairs under {self.neighbours}{unit}"
            f"{'' if self.seed is None else f', seed {self.seed}'} ({self.seconds:.2f} s)\n"
            f"{pair}:\nD  = {_table_text(self.d)}\nD′ = {_table_text(self.d_prime)}"
        )


def sensitivity_search(
    fn: Callable[[pl.DataFrame], Output],
    *,
    columns: Mapping[str, Any],
    claimed: float,
    neighbours: str = "add-remove",
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    max_groups: int | None = None,
    norm: str = "l1",
    trials: int = DEFAULT_TRIALS,
    seed: int | None = None,
) -> SensitivityResult:
    """Search neighbouring tables for a pair whose outputs differ by more than ``claimed``.

    ``fn`` maps a Polars DataFrame to a number, a 1-D vector (same length on both tables), or
    a dict of keyed numbers (a key missing on one side counts as 0). ``columns`` maps each
    column name to a Polars dtype (every value of it, null included, and NaN/±∞ for floats)
    or to a list of allowed values (include None to allow nulls). ``neighbours`` is the
    relation, ``"add-remove"`` (default) or ``"replace-one"``. ``privacy_unit`` names the
    column that identifies a person: the search generates it (integers, or the dtype given
    in ``columns``); ``max_contributions``/``max_groups`` size the units it generates (one
    row beyond the bound). ``norm`` is ``"l1"`` (Laplace) or ``"l2"`` (Gaussian). ``trials``
    pairs are generated (plus the shrinking steps after a violation); ``seed`` makes the search
    reproducible. An exception raised by ``fn`` propagates (after shrinking to a small table).
    See the module docstring for the relations and the tolerance.
    """
    if not callable(fn):
        raise ParameterError("fn", "a function taking a Polars DataFrame", type(fn).__name__)
    bound = check_non_negative_finite("claimed", claimed)
    results = search_claims(
        lambda frame: {"": fn(frame)},
        columns=columns,
        claims={"": bound},
        neighbours=neighbours,
        privacy_unit=privacy_unit,
        max_contributions=max_contributions,
        max_groups=max_groups,
        norm=norm,
        trials=trials,
        seed=seed,
    )
    return results[""]


def search_claims(
    outputs: Callable[[pl.DataFrame], Mapping[str, Output]],
    *,
    columns: Mapping[str, Any],
    claims: Mapping[str, float],
    neighbours: str = "add-remove",
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    max_groups: int | None = None,
    norm: str = "l1",
    trials: int = DEFAULT_TRIALS,
    seed: int | None = None,
    pairs: Sequence[tuple[pl.DataFrame, pl.DataFrame]] = (),
) -> dict[str, SensitivityResult]:
    """One search for several outputs at once, each with its own Δ (the parts of one query).

    ``outputs(frame)`` returns {name: output} for every name in ``claims``. ``pairs`` are
    checked first, as given (a replay, e.g. the worst pairs another engine's search found);
    with ``trials=0`` only they are checked. Returns one result per name. ``columns``,
    ``neighbours``, ``privacy_unit``, ``max_contributions``, ``max_groups``, ``norm``, ``trials``
    and ``seed`` are as for :func:`sensitivity_search`.
    """
    require("polars", "polars", "the sensitivity search")
    hypothesis = require("hypothesis", "audit", "the sensitivity search")
    relation = Neighbours.parse(neighbours)
    if norm not in NORMS:
        raise ParameterError("norm", "'l1' (Laplace), 'l2' (Gaussian) or 'linf' (a threshold's Δ∞)", norm)
    check_count("trials", trials, minimum=0, maximum=MAX_TRIALS, expected=f"a whole number from 1 to {MAX_TRIALS}")
    if trials == 0 and not pairs:
        raise ParameterError("trials", f"a whole number from 1 to {MAX_TRIALS}", trials)
    if seed is not None:
        check_count("seed", seed, minimum=0, expected="a whole number ≥ 0 or None")
    if not claims:
        raise ParameterError("claims", "at least one output with its Δ", claims)
    bounds = {name: check_non_negative_finite("claimed", value) for name, value in claims.items()}
    layout = _Layout.of(columns, privacy_unit, max_contributions, max_groups)
    search = _Search(outputs, bounds, relation, layout, norm)
    started = time.perf_counter()
    with progress("sensitivity search: pairs of neighbours", total=len(pairs) + trials) as search.bar:
        for d, d_prime in pairs:
            search.check(d, d_prime)
            if search.violation is not None:
                break
        if trials > 0 and search.violation is None:
            search.run(hypothesis, trials, seed)
    seconds = time.perf_counter() - started
    return {name: search.result(name, seconds=seconds, seed=seed, single=list(bounds) == [""]) for name in bounds}


# --- the tables -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """The columns (name → dtype or allowed values), their Polars schema and the unit sizes."""

    specs: tuple[tuple[str, Any], ...]
    schema: tuple[tuple[str, Any], ...]
    unit: str | None
    unit_dtype: Any
    unit_rows: int

    @classmethod
    def of(cls, columns: Any, unit: Any, max_contributions: Any, max_groups: Any) -> _Layout:
        import polars as pl

        if not isinstance(columns, Mapping) or not columns:
            raise ParameterError("columns", "a non-empty mapping of column name to a Polars dtype or a list of values", columns)
        if unit is not None and not (isinstance(unit, str) and unit):
            raise ParameterError("privacy_unit", "a column name or None", unit)
        for name, value in (("max_contributions", max_contributions), ("max_groups", max_groups)):
            if value is not None:
                check_count(name, value)
        if max_contributions is None:
            raise ParameterError("max_contributions", "a whole number ≥ 1", max_contributions)
        if unit is None and max_contributions != 1:
            raise ParameterError(
                "max_contributions", "1 unless privacy_unit names the column that identifies a person", max_contributions
            )
        if unit is None and max_groups is not None:
            raise ParameterError("max_groups", "None unless privacy_unit names the column that identifies a person", max_groups)
        specs: list[tuple[str, Any]] = []
        schema: list[tuple[str, Any]] = []
        unit_dtype: Any = pl.Int64
        for name, spec in columns.items():
            if not (isinstance(name, str) and name):
                raise ParameterError("columns", "column names that are non-empty strings", name)
            if name == unit:
                if not (_is_dtype(spec) and (_dtype(spec).is_integer() or _dtype(spec) == pl.String)):
                    raise ParameterError(
                        "columns", f"an integer or string dtype for the privacy unit {unit!r} (its ids are generated)", spec
                    )
                unit_dtype = _dtype(spec)
                continue
            if _is_dtype(spec):
                _values_of(_dtype(spec), name)  # validates
                specs.append((name, _dtype(spec)))
                schema.append((name, _dtype(spec)))
            elif isinstance(spec, Sequence) and not isinstance(spec, str | bytes) and len(spec) > 0:
                try:
                    dtype = pl.Series(list(spec), strict=False).dtype
                except (TypeError, ValueError, pl.exceptions.PolarsError):
                    raise ParameterError("columns", f"a list of values of one type for {name!r}", spec) from None
                specs.append((name, tuple(spec)))
                schema.append((name, dtype))
            else:
                raise ParameterError("columns", f"a Polars dtype or a non-empty list of values for {name!r}", spec)
        if unit is not None:
            schema.append((unit, unit_dtype))
        rows = max_contributions * (max_groups or 1) + 1 if unit is not None else 1
        return cls(tuple(specs), tuple(schema), unit, unit_dtype, rows)

    def frame(self, rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
        import polars as pl

        data = {name: [row.get(name) for row in rows] for name, _ in self.schema}
        return pl.DataFrame(data, schema=dict(self.schema), strict=False)

    def unit_id(self, number: int | None) -> Any:
        if number is None:
            return None
        return number if self.unit_dtype.is_integer() else str(number)


def _is_dtype(spec: Any) -> bool:
    import polars as pl

    return isinstance(spec, pl.DataType) or (isinstance(spec, type) and issubclass(spec, pl.DataType))


def _dtype(spec: Any) -> Any:
    return spec() if isinstance(spec, type) else spec


def _values_of(dtype: Any, name: str) -> Any:
    """A Hypothesis strategy over every value of ``dtype``, null included."""
    import polars as pl
    from hypothesis import strategies as st

    # Each branch of one_of is about equally likely: the edge cases are a branch of their own,
    # so nulls, NaN, ±∞ and the extremes come up in most tables, not once in a hundred.
    if dtype.is_integer():
        bits = {pl.Int8: 8, pl.Int16: 16, pl.Int32: 32, pl.Int64: 64, pl.UInt8: 8, pl.UInt16: 16, pl.UInt32: 32, pl.UInt64: 64}
        width = next((b for t, b in bits.items() if dtype == t), 64)
        low, high = (0, 2**width - 1) if dtype.is_unsigned_integer() else (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
        edges = sorted({low, high, 0, 1, max(low, -1)})
        values: Any = st.one_of(st.integers(max(low, -100), min(high, 100)), st.sampled_from(edges), st.integers(low, high))
    elif dtype.is_float():
        largest = 3.4028234663852886e38 if dtype == pl.Float32 else 1.7976931348623157e308
        edges = [math.nan, math.inf, -math.inf, largest, -largest, 0.0, -0.0, 5e-324 if dtype == pl.Float64 else 1e-45]
        small = st.integers(-100, 100).map(float)
        values = st.one_of(small, st.sampled_from(edges), st.floats(width=32 if dtype == pl.Float32 else 64))
    elif dtype == pl.Boolean:
        values = st.booleans()
    elif dtype == pl.String:
        values = st.text(alphabet="abc", max_size=2)  # few distinct keys, so records share and move between them
    else:
        raise ParameterError("columns", f"an integer, float, boolean or string dtype (or a list of values) for {name!r}", dtype)
    return st.one_of(values, st.none())


# --- the search -----------------------------------------------------------------------------------


@contextmanager
def _scratch_hypothesis_home() -> Iterator[None]:
    """Hypothesis keeps caches (the constants it reads from local modules…) under its home folder,
    by default ``.hypothesis`` in the working directory, with absolute paths in them. A search
    keeps them in a temporary folder, removed after it: nothing is left where the user runs the
    search (no example database either: ``database=None``)."""
    import tempfile

    from hypothesis import configuration

    previous = getattr(configuration, "__hypothesis_home_directory", None)
    with tempfile.TemporaryDirectory(prefix="dpwitness-hypothesis-") as folder:
        configuration.set_hypothesis_home_dir(folder)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


class _Violation(Exception):
    """Raised inside the Hypothesis run so that it shrinks the pair; caught by the search."""


@dataclass
class _Finding:
    shift: float
    d: pl.DataFrame
    d_prime: pl.DataFrame


class _Search:
    def __init__(
        self,
        outputs: Callable[[pl.DataFrame], Mapping[str, Output]],
        claims: dict[str, float],
        relation: Neighbours,
        layout: _Layout,
        norm: str,
    ) -> None:
        self.outputs, self.claims, self.relation, self.layout, self.norm = outputs, claims, relation, layout, norm
        self.worst: dict[str, _Finding] = {}
        self.violation: tuple[str, _Finding] | None = None
        self.trials = 0
        self.bar = Bar()  # the progress display (dpwitness.common.progress): silent unless a terminal shows it

    def check(self, d: pl.DataFrame, d_prime: pl.DataFrame) -> tuple[dict[str, float], tuple[str, _Finding] | None]:
        """Run the outputs on both tables, record the worst shifts; return the shifts and a violation if any."""
        self.trials += 1
        self.bar.advance()
        first, second = self.outputs(d), self.outputs(d_prime)
        found = None
        shifts: dict[str, float] = {}
        for name, claimed in self.claims.items():
            if name not in first or name not in second:
                raise ParameterError("fn", f"a function whose output has the part {name!r}", sorted(map(str, first)))
            shift = shifts[name] = output_shift(first[name], second[name], self.norm)
            finding = _Finding(shift, d, d_prime)
            if name not in self.worst or shift > self.worst[name].shift:
                self.worst[name] = finding
            if shift > claimed * (1.0 + RELATIVE_TOLERANCE) and found is None:
                found = (name, finding)
        if found is not None:
            self.violation = found  # the last one recorded is the shrunk, minimal one
        return shifts, found

    def run(self, hypothesis: Any, trials: int, seed: int | None) -> None:
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import strategies as st

        profile = settings(
            max_examples=trials,
            deadline=None,
            database=None,
            derandomize=False,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            phases=(Phase.generate, Phase.target, Phase.shrink),
            print_blob=False,
        )

        def body(data: Any) -> None:
            d, d_prime = self.draw_pair(data)
            shifts, found = self.check(d, d_prime)
            for name, claimed in self.claims.items():
                shift = shifts[name]
                hypothesis.target(min(shift / claimed if claimed > 0 else shift, _LARGE), label=name or "shift")
            if found is not None:
                raise _Violation(found[0])

        test = settings(profile)(given(st.data())(body))
        if seed is not None:
            test = hypothesis.seed(seed)(test)
        try:
            with _scratch_hypothesis_home():
                test()
        except _Violation:
            pass
        except BaseExceptionGroup as group:  # Hypothesis's Flaky*: fn is not deterministic
            if self.violation is None or not group.subgroup(_Violation):
                raise

    def draw_pair(self, data: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Draw the unchanged rows, then the record before and after the change (written last)."""
        from hypothesis import strategies as st

        layout = self.layout
        row = st.fixed_dictionaries(
            {name: st.sampled_from(spec) if isinstance(spec, tuple) else _values_of(spec, name) for name, spec in layout.specs}
        )
        unit = layout.unit
        if unit is not None:
            other_ids = st.one_of(st.integers(0, OTHER_UNITS - 1), st.none())
            base_rows = data.draw(st.lists(st.tuples(row, other_ids), max_size=BASE_ROWS), label="other records")
            base = [{**values, unit: layout.unit_id(number)} for values, number in base_rows]
        else:
            base = data.draw(st.lists(row, max_size=BASE_ROWS), label="other records")

        def record(number: int, label: str) -> list[dict[str, Any]]:
            if unit is None:
                return [data.draw(row, label=label)]
            null_unit = data.draw(st.booleans(), label=f"{label}: unit is null")
            count = 1 if null_unit else data.draw(st.integers(1, layout.unit_rows), label=f"{label}: rows")
            rows = data.draw(st.lists(row, min_size=count, max_size=count), label=label)
            return [{**r, unit: layout.unit_id(None if null_unit else number)} for r in rows]

        if self.relation is Neighbours.ADD_REMOVE:
            before: list[dict[str, Any]] = []
            after = record(CHANGED_UNIT, "added record")
        else:
            before = record(CHANGED_UNIT, "replaced record")
            if data.draw(st.booleans(), label="replacement changes one field"):
                after = [dict(r) for r in before]
                names = [name for name, _ in layout.specs] + ([unit] if unit is not None else [])
                name = data.draw(st.sampled_from(names), label="field")
                if unit is not None and name == unit:
                    new_id = data.draw(st.sampled_from([REPLACEMENT_UNIT, None]), label="new unit id")
                    after = [{**r, unit: layout.unit_id(new_id)} for r in after[: 1 if new_id is None else None]]
                else:
                    spec = dict(layout.specs)[name]
                    strategy = st.sampled_from(spec) if isinstance(spec, tuple) else _values_of(spec, name)
                    value = data.draw(strategy, label="new value")
                    # The field changes in every row of the unit, or in one of them.
                    every = len(after) > 1 and data.draw(st.booleans(), label="in every row")
                    at = None if every else data.draw(st.integers(0, len(after) - 1), label="row")
                    for index, changed in enumerate(after):
                        if at is None or index == at:
                            changed[name] = value
            else:
                number = data.draw(st.sampled_from([CHANGED_UNIT, REPLACEMENT_UNIT]), label="replacement unit id")
                after = record(number, "replacement record")
        d, d_prime = layout.frame(base + before), layout.frame(base + after)
        return d, d_prime

    def result(self, name: str, *, seconds: float, seed: int | None, single: bool) -> SensitivityResult:
        claimed = self.claims[name]
        violated = self.violation is not None and self.violation[0] == name
        worst = self.worst.get(name)
        if worst is None:  # no pair was tried for this output (cannot happen after a run)
            empty = self.layout.frame([])
            worst = _Finding(0.0, empty, empty)
        shown = self.violation[1] if violated and self.violation is not None else worst
        return SensitivityResult(
            violated=violated,
            worst=max(worst.shift, shown.shift),
            shift=shown.shift,
            claimed=claimed,
            d=shown.d,
            d_prime=shown.d_prime,
            trials=self.trials,
            neighbours=self.relation.value,
            norm=self.norm,
            privacy_unit=self.layout.unit,
            seed=seed,
            seconds=seconds,
            part=None if single else name,
        )


# --- what backs the library's own Δ ---------------------------------------------------------------

#: The sweep that checks every derivation of :mod:`dpwitness.query.queries` (see docs/sensitivity.md).
LIBRARY_SWEEP = "tests/witness/test_sensitivity_library.py"


def library_backing(query: Any) -> str:
    """Which sensitivity search backs the Δ of a library query (:class:`dpwitness.query.queries.Query`).

    The statement is about the derivation, not about this release's data: the CI sweep runs
    :func:`search_claims` on this statistic × relation × privacy unit × grouping × filter kind
    (at bounds (2, 5), ≤ 2 rows per unit) through both engines' exact aggregates.
    """
    unit = "no privacy unit" if query.privacy_unit is None else "a privacy unit"
    grouping = "ungrouped" if not query.grouped else ("declared keys" if query.declared else "undeclared keys")
    return (
        f"dpwitness.sensitivity_search sweep ({LIBRARY_SWEEP}): the Δ derivation of {query.statistic.value} under "
        f"{query.neighbours.value}, {unit}, {grouping}, filter {query.filtered}, searched through the Polars and Spark "
        "engines' exact aggregates"
    )


# --- outputs and shifts ---------------------------------------------------------------------------


def output_shift(first: Output, second: Output, norm: str = "l1") -> float:
    """‖f(D) − f(D′)‖ (L1, L2 or L∞) for two outputs of one shape: numbers, vectors or keyed dicts.

    A key missing from one dict counts as 0. Equal values (∞ = ∞ included) differ by 0; NaN
    against anything but NaN, or ∞ against another value, differ by ∞.

    :param first: f(D).
    :param second: f(D′), of the same shape.
    :param norm: ``"l1"`` (default), ``"l2"`` or ``"linf"`` (the largest move of one coordinate).
    """
    a, b = _coordinates(first), _coordinates(second)
    if a.keys() != b.keys() and not (isinstance(first, Mapping) and isinstance(second, Mapping)):
        raise ParameterError("fn", "outputs of one shape on both tables (vectors of one length)", f"{len(a)} and {len(b)} values")
    gaps = [_gap(a.get(key, 0.0), b.get(key, 0.0)) for key in a.keys() | b.keys()]
    if not gaps:
        return 0.0
    if norm == "l1":
        return math.fsum(gaps) if all(math.isfinite(g) for g in gaps) else math.inf
    if norm == "linf":
        return max(gaps)
    return math.hypot(*gaps)


def _gap(x: float, y: float) -> float:
    if x == y or (math.isnan(x) and math.isnan(y)):
        return 0.0
    if math.isnan(x) or math.isnan(y):
        return math.inf
    return abs(x - y)


def _coordinates(output: Output) -> dict[Any, float]:
    try:
        if isinstance(output, Mapping):
            return {key: float(value) for key, value in output.items()}
        if isinstance(output, int | float) or (type(output).__module__ == "numpy" and getattr(output, "ndim", 1) == 0):
            return {(): float(output)}
        if hasattr(output, "to_list"):  # a Polars Series
            output = output.to_list()
        if hasattr(output, "tolist"):  # a NumPy array
            output = output.tolist()
        if isinstance(output, list | tuple) and all(not isinstance(v, list | tuple | dict) for v in output):
            return {index: float(value) for index, value in enumerate(output)}
    except (TypeError, ValueError):
        pass
    raise ParameterError("fn", "a function returning a number, a 1-D vector or a dict of numbers", type(output).__name__)


def _table_text(frame: pl.DataFrame) -> str:
    if frame.height == 0:
        return "(no rows) " + ", ".join(frame.columns)
    rows = "; ".join("(" + ", ".join(f"{k}={v!r}" for k, v in row.items()) + ")" for row in frame.to_dicts())
    return f"{frame.height} row(s): {rows}"


__all__ = [
    "LIBRARY_SWEEP",
    "RELATIVE_TOLERANCE",
    "SensitivityResult",
    "library_backing",
    "output_shift",
    "search_claims",
    "sensitivity_search",
]
