"""Running the checked function with its noise taken away: the noise calls on each table, and what
changing between two neighbours (their number, order, declared parameters or shapes) means."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpwitness.targets.check.report import Finding
from dpwitness.targets.hooks import Adapter, AdapterError, NoiseCall, Unsupported, plain_value, raised_by, recording
from dpwitness.witness.sensitivity import SensitivityResult
from dpwitness.witness.structured import Runs

if TYPE_CHECKING:
    import polars as pl


class CallsChanged(Exception):
    """The noise calls differ between two neighbours (``kind`` "noise-calls"), or a call's value
    before noise changed its shape: its length, its array shape, its kind (``kind`` "shape")."""

    def __init__(
        self, d: pl.DataFrame, d_prime: pl.DataFrame, first: list[NoiseCall], second: list[NoiseCall], kind: str = "noise-calls"
    ) -> None:
        super().__init__("the noise calls differ between two neighbours")
        self.d, self.d_prime, self.first, self.second, self.kind = d, d_prime, first, second, kind


@dataclass
class UnnoisedRunner:
    """Runs ``fn`` unnoised; as the search's ``outputs``: {call key: value before noise}.

    The search evaluates a pair as outputs(d) then outputs(d_prime) (see
    ``sensitivity._Search.check``): the second call of each pair compares its noise calls with
    the first one's, and a pair on which ``fn`` raises (or leaves the library's contract) on
    either side reads as "no shift" and is counted as skipped.
    """

    fn: Callable[[Any], Any]
    adapters: tuple[Adapter, ...]
    epsilon: float
    neighbours: str
    candidates: tuple[Adapter, ...] = ()  # adapters to install once the function imports their library
    keys: tuple[str, ...] = ()
    pending: tuple[Any, list[NoiseCall] | None, dict[str, Any]] | None = None
    skipped: int = 0
    evaluated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    declared_rows: set[int] = field(default_factory=set)  # the sizes the library's refusals declare
    output: Any = None  # what the function returned on its last run without noise
    # The smallest pair seen per distinct change of the discrete calls' values (see ``remember``).
    discrete_pairs: dict[tuple[str, ...], tuple[Any, Any]] = field(default_factory=dict)

    def declare(self, error: BaseException) -> int | None:
        """The number of rows a refusal declares (:class:`Unsupported` ``rows``), remembered; None: none."""
        rows = error.rows if isinstance(error, Unsupported) else None
        if rows is not None:
            self.declared_rows.add(rows)
        return rows

    def calls(self, frame: Any) -> list[NoiseCall]:
        with recording("unnoised", self.adapters, epsilon=self.epsilon, neighbours=self.neighbours) as recorder:
            self.output = self.fn(frame)
        return recorder.calls

    def values(self, calls: list[NoiseCall], first: list[NoiseCall] | None = None) -> dict[str, Any]:
        """Each call's value as the search's distance reads it (:func:`_embedded`). A value with no
        numeric form, or under the discrete metric, is compared whole with the same call on the
        pair's first table (``first``): 0 on the first table, then 0 when equal, 1 otherwise."""
        found = {call_key(i, c): c for i, c in enumerate(calls)}
        before = {call_key(i, c): c for i, c in enumerate(first or ())}
        out: dict[str, Any] = {}
        for key in self.keys:
            if key == RELEASE:  # the function's own output without its noise, as numbers (else unread: 0)
                embedded = _embedded(plain_value(self.output))
                out[key] = 0.0 if embedded is None else embedded
                continue
            call = found.get(key)
            if call is None:
                out[key] = math.nan
                continue
            embedded = None if call.norm == "discrete" else _embedded(call.value)
            if embedded is not None:
                out[key] = embedded
                continue
            other = before.get(key)
            out[key] = 0.0 if other is None or _same(other.value, call.value) else 1.0
        return out

    def discover(self) -> bool:
        """Install the adapters of the libraries the function has imported since the check began
        (an import inside the function); True when there are new ones. Raises AdapterError."""
        import sys

        found = tuple(a for a in self.candidates if a.module in sys.modules and a not in self.adapters)
        for adapter in found:
            adapter.ensure_installed()
        self.adapters += found
        return bool(found)

    def __call__(self, frame: Any) -> dict[str, Any]:
        try:
            calls: list[NoiseCall] | None = self.calls(frame)
        except AdapterError:
            raise
        except Exception as error:  # Unsupported, the library refusing the input, or the user's own error
            reason = failure(error)
            self.declare(error)
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
            calls = None
        if self.pending is None:
            values = self.values(calls) if calls is not None else dict.fromkeys(self.keys, 0.0)
            self.pending = (frame, calls, values)
            return values
        first_frame, first, first_values = self.pending
        self.pending = None
        self.evaluated += 1
        if first is None or calls is None:
            self.skipped += 1
            return first_values if first is not None else dict.fromkeys(self.keys, 0.0)
        if _invariants(first) != _invariants(calls):  # the library's declared invariants moved
            reason = "the neighbours differ in what the library was told is invariant (outside its contract)"
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
            self.skipped += 1
            return first_values
        if [_signature(c) for c in first] != [_signature(c) for c in calls]:
            raise CallsChanged(first_frame, frame, first, calls)
        if [c.shape for c in first] != [c.shape for c in calls]:
            raise CallsChanged(first_frame, frame, first, calls, kind="shape")
        self.remember(first_frame, frame, first, calls)
        return self.values(calls, first)

    def remember(self, d: Any, d_prime: Any, first: Sequence[NoiseCall], second: Sequence[NoiseCall]) -> None:
        """Keep the pair (the smallest seen) when its discrete calls' values change in a way no kept
        pair does, up to :data:`DISCRETE_PAIRS`: under the discrete metric every change is at distance 1,
        so the search cannot rank them, and the audit screens them instead (``blackbox``)."""
        before = [repr(plain_value(a.value)) for a, b in zip(first, second, strict=True) if a.norm == "discrete"]
        after = [repr(plain_value(b.value)) for a, b in zip(first, second, strict=True) if a.norm == "discrete"]
        if before == after:
            return
        key = (*min(before, after), "→", *max(before, after))  # the same change either way round
        kept = self.discrete_pairs.get(key)
        room = kept is None and len(self.discrete_pairs) < DISCRETE_PAIRS
        if room or (kept is not None and d.height + d_prime.height < kept[0].height + kept[1].height):
            self.discrete_pairs[key] = (d, d_prime)


#: The most pairs with distinct changes of discrete values a check keeps for the audit to screen.
DISCRETE_PAIRS = 8


#: The key under which the search reads the function's own output without its noise: searched when
#: noise calls declare no Δ but a scale (draws seen by :mod:`~dpwitness.targets.numpy_random`).
RELEASE = "the release without its noise"


def implied_sensitivity(calls: Sequence[NoiseCall], epsilon: float, delta: float) -> tuple[float, str] | None:
    """The Δ the smallest noise scale among the calls that declare none allows at the claimed
    (ε, δ), and its norm: Laplace-like noise of scale b allows an L1 shift of b·ε; Gaussian noise
    of σ (every such call Gaussian) an L2 shift of σ over the analytic Gaussian's σ for Δ = 1 at
    (ε, δ) (δ = 0: σ·ε, a ranking only). None when no call declares a scale without a Δ.

    :param calls: the noise calls seen on one table.
    :param epsilon: the claimed ε; ``delta`` the claimed δ.
    """
    from dpwitness.privacy.accounting import analytic_gaussian_sigma

    scaled = [c for c in calls if c.sensitivity is None and c.scale is not None and c.scale > 0]
    if not scaled:
        return None
    smallest = min(float(c.scale or 0.0) for c in scaled)
    if all(c.norm == "l2" for c in scaled):
        if delta > 0:
            return smallest / analytic_gaussian_sigma(1.0, epsilon, delta), "l2"
        return smallest * epsilon, "l2"
    return smallest * epsilon, "l1"


def failure(error: Exception) -> str:
    """Why a run failed, without the exception's text (it may quote a value of the table):
    outside the library's contract (the adapter's reason, or the library's own refusal), or the
    user's function raising. An exception from dpwitness's own code is an :class:`AdapterError`."""
    if isinstance(error, Unsupported):
        return str(error)
    owner, where = raised_by(error)
    at = f" at {where}" if where else ""
    if owner == "dpwitness":
        raise AdapterError(f"dpwitness failed while running the function ({type(error).__name__}{at})") from error
    if owner == "user":
        return f"the function raised {type(error).__name__}{at}"
    return f"the library refused the table ({type(error).__name__}{at})"


def _invariants(calls: list[NoiseCall]) -> set[Any]:
    """What the library was told is invariant on this table (calls that declare none say nothing:
    a table with no call at all must still be compared on its noise calls)."""
    return {c.invariant for c in calls if c.invariant is not None}


def _signature(call: NoiseCall) -> tuple[Any, ...]:
    return call.signature


def _embedded(value: Any) -> Any:
    """A plain value (:func:`~dpwitness.targets.hooks.plain_value`) as the L1/L2 distance reads it:
    a float, a tuple of floats, bytes as their bits (a bit vector: the L1 distance is the number of
    bits that differ), a dict of floats (a tuple inside it: one entry per position); None when it
    has no numeric form (text, other objects: compared by equality)."""
    import numpy as np

    if isinstance(value, float):
        return value
    if isinstance(value, bytes):
        return tuple(float(bit) for bit in np.unpackbits(np.frombuffer(value, dtype=np.uint8)))
    if isinstance(value, tuple) and all(isinstance(v, float) for v in value):
        return value
    if isinstance(value, dict):
        out: dict[Any, float] = {}
        for key, item in value.items():
            inner = _embedded(item)
            if isinstance(inner, float):
                out[key] = inner
            elif isinstance(inner, tuple):
                out.update({(key, i): v for i, v in enumerate(inner)})
            else:
                return None
        return out
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal values (NaN equal to NaN)."""
    try:
        if a == b:
            return True
    except Exception:  # an object whose == does not answer a bool
        pass
    return type(a) is type(b) and repr(a) == repr(b)


def call_key(index: int, call: NoiseCall) -> str:
    return f"#{index + 1} {call.library} {call.mechanism} at {call.site}"


def _probe_tables(columns: Mapping[str, Any]) -> list[pl.DataFrame]:
    """Small first tables: one row of each column's first value, then two rows, then no rows."""
    import polars as pl

    one = probe_row(columns)
    return [one, pl.concat([one, one]), one.clear()]


def probe_row(columns: Mapping[str, Any]) -> pl.DataFrame:
    """The one-row table every probe is made of: each column's first listed value, or 1.0, 1, True, "a" by type."""
    import polars as pl

    row: dict[str, Any] = {}
    schema: dict[str, Any] = {}
    for name, spec in columns.items():
        if isinstance(spec, Sequence) and not isinstance(spec, str):
            values = [v for v in spec if v is not None] or [None]
            row[name] = values[0]
            schema[name] = pl.Series(list(spec), strict=False).dtype
        else:
            dtype = spec() if isinstance(spec, type) else spec
            schema[name] = dtype
            row[name] = 1.0 if dtype.is_float() else 1 if dtype.is_numeric() else True if dtype == pl.Boolean else "a"
    return pl.DataFrame({k: [v] for k, v in row.items()}, schema=schema, strict=False)


def find_probe(runner: UnnoisedRunner, columns: Mapping[str, Any]) -> tuple[Any, list[NoiseCall], list[tuple[int, str]]]:
    """The first probe table on which the function makes noise calls (None if none), its calls,
    and each table tried as (rows, why it failed, "" when it ran)."""
    outcomes: list[tuple[int, str]] = []
    for table in _probe_tables(columns):
        try:
            calls = runner.calls(table)
        except AdapterError:
            raise
        except Exception as error:
            outcomes.append((table.height, failure(error)))
            runner.declare(error)
            continue
        outcomes.append((table.height, ""))
        if calls:
            return table, calls, outcomes
    return None, [], outcomes


def first_calls_changed(group: BaseExceptionGroup[Any]) -> CallsChanged:
    for error in group.exceptions:
        if isinstance(error, CallsChanged):
            return error
        if isinstance(error, BaseExceptionGroup):
            return first_calls_changed(error)
    raise RuntimeError("no CallsChanged in the group")


def relative_shift(result: SensitivityResult) -> float:
    return result.shift / result.claimed if result.claimed > 0 else (math.inf if result.shift > 0 else 0.0)


def calls_finding(changed: CallsChanged) -> Finding:
    """The ``noise-calls`` or ``shape`` finding of two neighbouring tables whose noise calls differ (its
    reproduction script is :func:`~dpwitness.targets.check.script.calls_script`'s)."""
    first, second = changed.first, changed.second
    if changed.kind == "shape":
        index = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a.shape != b.shape)
        call, other = first[index], second[index]
        claimed, witnessed = _size(call.shape), _size(other.shape)
        on_d, on_d_prime = _shape_text(call.shape), _shape_text(other.shape)
        if on_d == on_d_prime:  # the same size: what differs is a frame's keys or columns
            on_d_prime += " with other keys or columns"
        detail = (
            f"call #{index + 1}'s value before noise is {on_d} on D, {on_d_prime} on D′ "
            "(its length or shape reveals the data, whatever the noise)"
        )
    else:
        index = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if _signature(a) != _signature(b)),
            min(len(first), len(second)),
        )
        call = first[index] if index < len(first) else second[index]
        claimed, witnessed = float(len(first)), float(len(second))
        detail = (
            f"{len(first)} call(s) on D, {len(second)} on D′; first difference at call #{index + 1}: "
            f"{first[index].describe() if index < len(first) else 'none'} vs "
            f"{second[index].describe() if index < len(second) else 'none'}"
            " (the number, order or declared Δ/ε/δ of noise calls reveals the data)"
        )
    return Finding(
        kind="shape" if changed.kind == "shape" else "noise-calls",
        library=call.library,
        version=call.version,
        site=call.site,
        caller=call.caller,
        mechanism=call.mechanism,
        claimed=claimed,
        witnessed=witnessed,
        d=Runs.of_frame(changed.d),
        d_prime=Runs.of_frame(changed.d_prime),
        detail=detail,
    )


def _size(shape: Any) -> float:
    """How many values a shape holds (its length, or its array's size), NaN for a kind alone."""
    if isinstance(shape, tuple) and len(shape) == 2:
        kind, size = shape
        if kind == "bytes":
            return float(size)
        if kind == "array":
            return float(math.prod(size))
        if kind == "sequence":
            return float(size[0])
    if isinstance(shape, tuple) and len(shape) == 4 and shape[0] == "frame":
        return float(shape[1])
    return math.nan


def _shape_text(shape: Any) -> str:
    kind, *rest = shape if isinstance(shape, tuple) and shape else ("value",)
    if kind == "bytes":
        return f"{rest[0]} byte(s)"
    if kind == "array":
        return f"an array of shape {rest[0]}"
    if kind == "sequence":
        return f"a sequence of {rest[0][0]} value(s)"
    if kind == "frame":
        return f"a frame of {rest[0]} row(s) and {len(rest[1])} column(s)"
    return {"number": "a number", "text": "text", "dict": "a dict", "item": "one item"}.get(str(kind), str(kind))
