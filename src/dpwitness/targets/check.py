"""``dw.check``: check a function that calls another DP library, the way its users call it.

The function takes a Polars table and calls a covered library (diffprivlib, OpenDP, python-dp;
see :mod:`dpwitness.targets`); no glue. The check:

1. runs it with every noise call taken away (the adapters' ``"unnoised"`` mode) and lists the
   calls: site, mechanism, declared Δ, ε, δ, value before noise;
2. gives each call with a declared Δ a grey-box sensitivity search against that Δ: the
   Hypothesis search of small adversarial tables (:func:`search_claims`), then the large
   structured tables of :mod:`dpwitness.witness.structured` (binade edges, half-ulp fractions,
   sizes up to the library's limit). A changed number, order or declared (Δ, ε, δ) of noise calls
   between two neighbours is itself a finding;
3. runs the black-box audit (:func:`dpwitness.audit`) on the worst pair, with the float test
   when the outputs are floats.

Verdicts: ``"violated"`` (a finding: a proof, exact for a shift beyond Δ or a changed noise
call, at the stated confidence for the audit), ``"ok"`` (no finding and the audit says ok),
``"inconclusive"``, ``"unsupported"`` (no pair inside the library's contract was found),
``"adapter-error"`` (an adapter failed, e.g. an exception raised by its hook: never reported
as the library's bug) and ``"not-covered"`` (the function ran without calling a covered
library's noise: nothing to judge). Only the adapters of libraries the function imports are
installed (those imported when the check starts, and any the function imports while it runs).
An exception on a table is sorted by whose code raised it (:func:`~dpwitness.targets.hooks.raised_by`):
the library's (outside its contract), the user's function's (named with its type and line) or
dpwitness's own (``adapter-error``).
"""

from __future__ import annotations

import inspect
import math
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpwitness.common.encoding import json_number
from dpwitness.common.errors import ExitCode, ParameterError
from dpwitness.common.validation import check_count, check_non_negative_finite, check_positive_finite
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.targets.hooks import Adapter, AdapterError, NoiseCall, Unsupported, raised_by, recording, registered
from dpwitness.witness.sensitivity import RELATIVE_TOLERANCE, SensitivityResult, search_claims
from dpwitness.witness.structured import Runs, structured_search

if TYPE_CHECKING:
    import polars as pl

    from dpwitness.witness.audit import AuditResult

VERDICTS = ("violated", "ok", "inconclusive", "unsupported", "adapter-error", "not-covered")
EXIT_CODES = {
    "violated": ExitCode.VIOLATED,
    "ok": ExitCode.OK,
    "inconclusive": ExitCode.INCONCLUSIVE,
    "unsupported": ExitCode.INCONCLUSIVE,
    "adapter-error": ExitCode.INTERNAL,
    "not-covered": ExitCode.NOT_COVERED,
}
#: Runs per input the audit's first round needs: a function too slow for it within the time
#: left is audited by replay (values before noise frozen, only the noise sampled).
FIRST_ROUND_RUNS = 20_000


@dataclass(frozen=True)
class Finding:
    """One bug: where (library, version, call site), what (declared Δ vs the witnessed shift, or
    the claimed ε vs a certified ε_lb with its confidence), the minimal pair as data and a
    standalone script that shows it with the library alone."""

    kind: str
    library: str
    version: str
    site: str
    caller: str
    mechanism: str
    claimed: float
    witnessed: float
    d: Runs
    d_prime: Runs
    detail: str
    script: str = field(default="", repr=False)
    confidence: float | None = None
    largest: float | None = None

    def __str__(self) -> str:
        what = {
            "sensitivity": f"declared Δ = {self.claimed:.17g}, witnessed shift {self.witnessed:.17g}",
            "noise-calls": "the noise calls differ between two neighbours",
            "shape": "the value before noise changed shape between two neighbours",
            "audit": f"claimed ε = {self.claimed:g}, certified ε_lb = {self.witnessed:.4g} "
            f"at {self.confidence or 0:.0%} confidence",
        }[self.kind]
        largest = f" (largest shift seen: {self.largest:.17g})" if self.largest and self.largest > self.witnessed else ""
        return (
            f"✘ {self.kind}: {self.library} {self.version}, {self.mechanism} at {self.site} (from {self.caller}): "
            f"{what}{largest}. {self.detail}\n  D  = {self.d}\n  D′ = {self.d_prime}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "library": self.library,
            "version": self.version,
            "site": self.site,
            "caller": self.caller,
            "mechanism": self.mechanism,
            "claimed": json_number(self.claimed),
            "witnessed": json_number(self.witnessed),
            "largest": None if self.largest is None else json_number(self.largest),
            "confidence": self.confidence,
            "d": self.d.to_dicts(),
            "d_prime": self.d_prime.to_dicts(),
            "detail": self.detail,
            "script": self.script,
        }


@dataclass(frozen=True)
class CheckReport:
    """The verdict, the findings, every noise call seen (on the first table) and the audit;
    ``seconds`` of wall time and ``cpu_seconds`` (the budget's clock, :func:`time.process_time`)."""

    verdict: str
    findings: tuple[Finding, ...]
    calls: tuple[NoiseCall, ...]
    libraries: tuple[tuple[str, str], ...]
    epsilon: float
    delta: float
    neighbours: str
    seconds: float
    audit: AuditResult | None = None
    notes: tuple[str, ...] = ()
    pairs_tried: int = 0
    pairs_skipped: int = 0
    cpu_seconds: float = 0.0

    @property
    def violated(self) -> bool:
        return self.verdict == "violated"

    @property
    def exit_code(self) -> int:
        return int(EXIT_CODES[self.verdict])

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "calls": [
                {
                    "library": c.library,
                    "version": c.version,
                    "mechanism": c.mechanism,
                    "site": c.site,
                    "caller": c.caller,
                    "sensitivity": c.sensitivity,
                    "epsilon": c.epsilon,
                    "delta": c.delta,
                    "norm": c.norm,
                }
                for c in self.calls
            ],
            "libraries": dict(self.libraries),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbours": self.neighbours,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "audit": None if self.audit is None else self.audit.to_dict(),
            "notes": list(self.notes),
            "pairs_tried": self.pairs_tried,
            "pairs_skipped": self.pairs_skipped,
        }

    def __str__(self) -> str:
        mark = {"violated": "✘", "ok": "✔", "inconclusive": "?", "unsupported": "?", "adapter-error": "!", "not-covered": "-"}[
            self.verdict
        ]
        libs = ", ".join(f"{name} {version}" for name, version in self.libraries) or "no covered library"
        lines = [
            f"{mark} {self.verdict.upper()}: {libs}; claimed ε = {self.epsilon:g}"
            + (f", δ = {self.delta:g}" if self.delta else "")
            + f" under {self.neighbours}; {self.pairs_tried} pairs ({self.pairs_skipped} outside the contract)"
            + f" in {self.cpu_seconds:.1f} s of CPU ({self.seconds:.1f} s)"
        ]
        lines.append(f"noise calls ({len(self.calls)}):")
        lines += [f"  #{i + 1} {c.describe()}" for i, c in enumerate(self.calls)]
        lines += [str(f) for f in self.findings]
        if self.audit is not None:
            lines.append(f"audit on the worst pair: {self.audit}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


class _CallsChanged(Exception):
    """The noise calls differ between two neighbours (``kind`` "noise-calls"), or a call's value
    before noise changed its shape: its length, its array shape, its kind (``kind`` "shape")."""

    def __init__(
        self, d: pl.DataFrame, d_prime: pl.DataFrame, first: list[NoiseCall], second: list[NoiseCall], kind: str = "noise-calls"
    ) -> None:
        super().__init__("the noise calls differ between two neighbours")
        self.d, self.d_prime, self.first, self.second, self.kind = d, d_prime, first, second, kind


@dataclass
class _Runner:
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

    def calls(self, frame: Any) -> list[NoiseCall]:
        with recording("unnoised", self.adapters, epsilon=self.epsilon, neighbours=self.neighbours) as recorder:
            self.fn(frame)
        return recorder.calls

    def values(self, calls: list[NoiseCall], first: list[NoiseCall] | None = None) -> dict[str, Any]:
        """Each call's value as the search's distance reads it (:func:`_embedded`). A value with no
        numeric form, or under the discrete metric, is compared whole with the same call on the
        pair's first table (``first``): 0 on the first table, then 0 when equal, 1 otherwise."""
        found = {_key(i, c): c for i, c in enumerate(calls)}
        before = {_key(i, c): c for i, c in enumerate(first or ())}
        out: dict[str, Any] = {}
        for key in self.keys:
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
            reason = _failure(error)
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
            raise _CallsChanged(first_frame, frame, first, calls)
        if [c.shape for c in first] != [c.shape for c in calls]:
            raise _CallsChanged(first_frame, frame, first, calls, kind="shape")
        return self.values(calls, first)


def _failure(error: Exception) -> str:
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


def _key(index: int, call: NoiseCall) -> str:
    return f"#{index + 1} {call.library} {call.mechanism} at {call.site}"


def check(
    fn: Callable[[Any], Any],
    *,
    columns: Mapping[str, Any],
    epsilon: float,
    delta: float = 0.0,
    neighbours: str = "add-remove",
    trials: int = 200,
    seed: int | None = 0,
    structured: bool = True,
    audit: bool = True,
    confidence: float = 0.95,
    max_seconds: float = 100.0,
    libraries: Sequence[str] | None = None,
    replay: bool | None = None,
) -> CheckReport:
    """Check ``fn`` (a Polars table → a release made by a covered library) against (ε, δ).

    ``columns`` maps each column to a Polars dtype or a list of allowed values (as for
    :func:`dpwitness.sensitivity_search`); ``neighbours`` is ``"add-remove"`` or
    ``"replace-one"``; ``trials`` pairs for the small-table search (0: none, the structured
    search alone; ``seed`` makes the check
    reproducible; None: fresh); ``structured`` adds the large structured tables; ``audit`` the
    black-box audit on the worst pair (at ``confidence``); ``max_seconds`` bounds the whole
    check's CPU time (:func:`time.process_time`, so that the machine's load does not decide the
    verdict: about half for the searches, the rest for the audit); ``libraries`` limits the
    adapters (default: every covered library installed here); ``replay`` audits the noise calls'
    outputs with their pre-noise values frozen (None: when that is faster and the function
    returns exactly what its noise calls released, or when the function is too slow for the
    audit's first round in the time left). See the module docstring.

    :param epsilon: the ε the function claims, a finite number > 0 (no default).
    :param delta: the δ the function claims, in [0, 1); default 0.0 (pure ε-DP).
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    if not callable(fn):
        raise ParameterError("fn", "a function taking a Polars table and calling a DP library", type(fn).__name__)
    eps = check_positive_finite("epsilon", epsilon)
    dlt = check_non_negative_finite("delta", delta)
    if dlt >= 1:
        raise ParameterError("delta", "a number in [0, 1)", delta)
    relation = Neighbours.parse(neighbours).value
    check_count(
        "trials",
        trials,
        minimum=0,
        maximum=1_000_000,
        expected="a whole number from 0 to 1000000 (0: only the structured search)",
    )
    budget = check_positive_finite("max_seconds", max_seconds)
    if not 0 < confidence < 1:
        raise ParameterError("confidence", "a number strictly between 0 and 1", confidence)
    known = {adapter.name: adapter for adapter in registered()}
    if libraries is not None:
        unknown = [name for name in libraries if name not in known]
        if unknown:
            raise ParameterError("libraries", f"names among {sorted(known)}", unknown)
        absent = [name for name in libraries if not known[name].importable()]
        if absent:
            raise ParameterError("libraries", "libraries installed in this interpreter", absent)
        adapters = tuple(a for a in known.values() if a.name in libraries)
        candidates: tuple[Adapter, ...] = ()
    else:  # only the libraries the function imports: a broken package it never uses cannot fail the check
        import sys

        adapters = tuple(a for a in known.values() if a.module and a.module in sys.modules)
        candidates = tuple(a for a in known.values() if a not in adapters and a.module)
    report = _Report(eps, dlt, relation, started, cpu_started)
    try:
        for adapter in adapters:
            adapter.ensure_installed()
    except AdapterError as error:
        return report.done("adapter-error", notes=[str(error)])
    runner = _Runner(fn, adapters, eps, relation, candidates)
    try:
        return _check(runner, report, columns, trials, seed, structured, audit, confidence, budget, replay)
    except AdapterError as error:
        return report.done("adapter-error", notes=[str(error)])


@dataclass
class _Report:
    epsilon: float
    delta: float
    neighbours: str
    started: float
    cpu_started: float
    calls: tuple[NoiseCall, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    tried: int = 0
    skipped: int = 0

    def cpu(self) -> float:
        """CPU seconds of this process since the check began (the budget's clock)."""
        return time.process_time() - self.cpu_started

    def done(self, verdict: str, *, notes: Sequence[str] = (), audit: AuditResult | None = None) -> CheckReport:
        libraries = tuple(dict.fromkeys((c.library, c.version) for c in self.calls))
        return CheckReport(
            verdict=verdict,
            findings=tuple(self.findings),
            calls=self.calls,
            libraries=libraries,
            epsilon=self.epsilon,
            delta=self.delta,
            neighbours=self.neighbours,
            seconds=time.perf_counter() - self.started,
            cpu_seconds=self.cpu(),
            audit=audit,
            notes=tuple(notes),
            pairs_tried=self.tried,
            pairs_skipped=self.skipped,
        )


def _probe_tables(columns: Mapping[str, Any]) -> list[pl.DataFrame]:
    """Small first tables: one row of each column's first value, then two rows, then no rows."""
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
    one = pl.DataFrame({k: [v] for k, v in row.items()}, schema=schema, strict=False)
    return [one, pl.concat([one, one]), one.clear()]


def _probe(runner: _Runner, columns: Mapping[str, Any]) -> tuple[Any, list[NoiseCall], list[tuple[int, str]]]:
    """The first probe table on which the function makes noise calls (None if none), its calls,
    and each table tried as (rows, why it failed, "" when it ran)."""
    outcomes: list[tuple[int, str]] = []
    for table in _probe_tables(columns):
        try:
            calls = runner.calls(table)
        except AdapterError:
            raise
        except Exception as error:
            outcomes.append((table.height, _failure(error)))
            continue
        outcomes.append((table.height, ""))
        if calls:
            return table, calls, outcomes
    return None, [], outcomes


def _check(
    runner: _Runner,
    report: _Report,
    columns: Mapping[str, Any],
    trials: int,
    seed: int | None,
    structured: bool,
    audit: bool,
    confidence: float,
    budget: float,
    replay: bool | None = None,
) -> CheckReport:
    notes: list[str] = []
    probe, calls, outcomes = _probe(runner, columns)
    if probe is None and runner.discover():  # the function imported a covered library as it ran
        probe, calls, outcomes = _probe(runner, columns)
    if probe is None:
        refusals = [f"the {rows}-row table: {why}" for rows, why in outcomes if why]
        refused = [why for _, why in outcomes if why and not why.startswith("the function raised")]
        if refused:
            return report.done("unsupported", notes=[*refusals, "no table inside the library's contract was found"])
        if any(not why for _, why in outcomes):
            return report.done(
                "not-covered",
                notes=[
                    *refusals,
                    "no noise call of a covered library seen (covered: "
                    + ", ".join(sorted(a.name for a in registered()))
                    + "; imported by the function: "
                    + (", ".join(a.name for a in runner.adapters) or "none")
                    + ")",
                ],
            )
        raise ParameterError("fn", "a function that runs on tables of the declared columns", "; ".join(dict.fromkeys(refusals)))
    report.calls = tuple(calls)
    runner.keys = tuple(_key(i, c) for i, c in enumerate(calls))
    claims = {_key(i, c): c.sensitivity for i, c in enumerate(calls) if c.sensitivity is not None}
    undeclared = [c for c in calls if c.sensitivity is None]
    if undeclared:
        notes.append(f"{len(undeclared)} noise call(s) declare no Δ the hook can read: audited only, not searched")
    by_call = {_key(i, c): c for i, c in enumerate(calls)}
    max_rows = min((a.max_rows for a in runner.adapters if a.max_rows and any(c.library == a.name for c in calls)), default=None)
    bounds = next((c.bounds for c in calls if c.bounds is not None), None)
    results: dict[str, SensitivityResult] = {}
    pairs: dict[str, tuple[Runs, Runs]] = {}
    largest_seen: dict[str, float] = {}
    search_seconds = budget * 0.45
    started = time.process_time()
    runner.calls(probe)
    per_run = time.process_time() - started
    # A slow function gets fewer small-table pairs (about a third of the time, shrinking aside),
    # so that the structured search and the audit keep theirs.
    affordable = max(10, int(budget * 0.3 / max(2 * per_run, 1e-9)))
    if 0 < affordable < trials:
        notes.append(f"one run takes {per_run:.2g} s: {affordable} small-table pairs instead of {trials}")
        trials = affordable
    for norm in ("l1", "l2", "discrete"):
        group = {k: v for k, v in claims.items() if by_call[k].norm == norm}
        if not group:
            continue
        search_norm = "l2" if norm == "l2" else "l1"  # the discrete distance reaches the search as a 0/1 number
        try:
            found = (
                search_claims(
                    runner,
                    columns=columns,
                    claims=group,
                    neighbours=report.neighbours,
                    norm=search_norm,
                    trials=trials,
                    seed=seed,
                )
                if trials
                else {}
            )
        except _CallsChanged as changed:
            report.findings.append(_calls_finding(changed, runner.fn))
            break
        except BaseExceptionGroup as group_error:
            inner = group_error.subgroup(_CallsChanged)
            if inner is None:
                raise
            report.findings.append(_calls_finding(_first(inner), runner.fn))
            break
        for name, result in found.items():
            results[name] = result
            pairs[name] = (Runs.of_frame(result.d), Runs.of_frame(result.d_prime))
        remaining = search_seconds - report.cpu()
        if structured and not any(r.violated for r in found.values()) and remaining > 1:
            try:
                grown = structured_search(
                    runner,
                    columns=columns,
                    claims=group,
                    bounds=bounds,
                    neighbours=report.neighbours,
                    norm=search_norm,
                    max_rows=max_rows,
                    seconds=remaining,
                )
            except _CallsChanged as changed:
                report.findings.append(_calls_finding(changed, runner.fn))
                notes += [f"noise calls changed on the {note}" for note in getattr(changed, "__notes__", ())]
                break
            for name, result in grown.results.items():
                old = results.get(name)
                if old is None or result.violated or (not old.violated and _relative(result) > _relative(old)):
                    results[name] = result
                    pairs[name] = grown.pairs[name]
                if result.violated:
                    notes.append(f"{name}: found on the structured table '{grown.shapes[name]}'")
            largest_seen.update(grown.largest)
    report.tried, report.skipped = runner.evaluated, runner.skipped
    notes += [f"{count} table(s) skipped: {reason}" for reason, count in runner.reasons.items()]
    for name, result in results.items():
        if result.violated:
            call = by_call[name]
            d, d_prime = pairs[name]
            report.findings.append(
                Finding(
                    kind="sensitivity",
                    library=call.library,
                    version=call.version,
                    site=call.site,
                    caller=call.caller,
                    mechanism=call.mechanism,
                    claimed=result.claimed,
                    witnessed=result.shift,
                    largest=largest_seen.get(name),
                    d=d,
                    d_prime=d_prime,
                    detail="the value before noise moved by more than the Δ this call declared "
                    f"({call.norm.upper()}, {report.neighbours})",
                    script=repro_script(runner, call, name, d, d_prime, result.claimed, columns),
                )
            )
    audit_result = None
    if audit:
        audit_result, audit_notes = _audit(runner, report, results, pairs, columns, confidence, budget, probe, replay)
        notes += audit_notes
    verdict = "violated" if report.findings else "inconclusive"
    if not report.findings and audit_result is not None and audit_result.verdict == "ok":
        verdict = "ok"
    if not report.findings and runner.evaluated and runner.skipped == runner.evaluated:
        verdict = "unsupported"
    return report.done(verdict, notes=notes, audit=audit_result)


def _first(group: BaseExceptionGroup[Any]) -> _CallsChanged:
    for error in group.exceptions:
        if isinstance(error, _CallsChanged):
            return error
        if isinstance(error, BaseExceptionGroup):
            return _first(error)
    raise RuntimeError("no _CallsChanged in the group")


def _relative(result: SensitivityResult) -> float:
    return result.shift / result.claimed if result.claimed > 0 else (math.inf if result.shift > 0 else 0.0)


def _calls_finding(changed: _CallsChanged, fn: Callable[[Any], Any]) -> Finding:
    first, second = changed.first, changed.second
    if changed.kind == "shape":
        index = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a.shape != b.shape)
        call, other = first[index], second[index]
        claimed, witnessed = _size(call.shape), _size(other.shape)
        detail = (
            f"call #{index + 1}'s value before noise is {_shape_text(call.shape)} on D, {_shape_text(other.shape)} on D′ "
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
    return math.nan


def _shape_text(shape: Any) -> str:
    kind, *rest = shape if isinstance(shape, tuple) and shape else ("value",)
    if kind == "bytes":
        return f"{rest[0]} byte(s)"
    if kind == "array":
        return f"an array of shape {rest[0]}"
    if kind == "sequence":
        return f"a sequence of {rest[0][0]} value(s)"
    return {"number": "a number", "text": "text", "dict": "a dict", "item": "one item"}.get(str(kind), str(kind))


def _audit(
    runner: _Runner,
    report: _Report,
    results: Mapping[str, SensitivityResult],
    pairs: Mapping[str, tuple[Runs, Runs]],
    columns: Mapping[str, Any],
    confidence: float,
    budget: float,
    probe: Any,
    force_replay: bool | None = None,
) -> tuple[AuditResult | None, list[str]]:
    import numpy as np

    from dpwitness.witness.audit import MechanismError
    from dpwitness.witness.audit import audit as run_audit

    notes: list[str] = []
    if report.findings and report.findings[0].kind in ("noise-calls", "shape"):
        d_runs, d_prime_runs = report.findings[0].d, report.findings[0].d_prime
    elif results:
        name = max(results, key=lambda k: (results[k].violated, round(_relative(results[k]), 9), -pairs[k][1].rows))
        d_runs, d_prime_runs = pairs[name]
    else:
        d_runs = d_prime_runs = Runs.of_frame(probe)
        notes.append("no call with a declared Δ: the audit runs on the first table against itself")
    schema = dict(probe.schema)
    d, d_prime = d_runs.frame(schema), d_prime_runs.frame(schema)
    remaining = budget - report.cpu()
    if remaining < 2:
        return None, ["no time left for the audit"]
    fn = runner.fn
    try:
        per_run = math.inf
        for _ in range(3):  # the fastest of three runs: the machine's load should not decide
            started = time.process_time()
            with recording("record", runner.adapters, epsilon=runner.epsilon, neighbours=runner.neighbours) as recorder:
                sample = fn(d)
            per_run = min(per_run, time.process_time() - started)
    except Exception as error:
        return None, [f"audit not run: fn raised {type(error).__name__} on the worst pair"]
    # When the function returns exactly what its noise calls released, auditing those is auditing the release.
    numbers = _numbers(sample)
    released_as_is = numbers is not None and numbers == _numbers(recorder.outputs)
    float_test = _is_float(sample)
    by_name = {adapter.name: adapter for adapter in runner.adapters}
    used = [by_name[c.library] for c in recorder.calls if c.library in by_name]
    if float_test and released_as_is and used and all(adapter.exact_noise for adapter in used):
        float_test = False
        names = ", ".join(dict.fromkeys(adapter.name for adapter in used))
        notes.append(
            f"bit patterns not judged: {names} samples its noise exactly and rounds once (its adapter's contract), so "
            "its float outputs have no porous support; the value families are audited"
        )

    def freeze(frame: Any) -> list[Callable[[], Any]]:
        """The pre-noise state of one table: each noise call's own noise, ready to be added again."""
        with recording("unnoised", runner.adapters, epsilon=runner.epsilon, neighbours=runner.neighbours) as recorder:
            fn(frame)
        return [c.replay for c in recorder.calls if c.replay is not None]

    def noise_only(frozen: list[Callable[[], Any]], rng: np.random.Generator) -> Any:
        return tuple(_released(noise()) for noise in frozen)

    # Replay samples the release itself when the function returns its noise calls' outputs as they
    # are, every call is replayable and nothing before the noise is random.
    equivalent = (
        released_as_is
        and bool(recorder.calls)
        and all(c.replay is not None for c in recorder.calls)
        and not any(adapter.randomised for adapter in used)
    )
    mechanism: Callable[..., Any]
    model = "the function's output"
    why = ""
    if force_replay is None:
        replaying = per_run * 2 * FIRST_ROUND_RUNS > 0.5 * remaining
        why = f"one run takes {per_run:.2g} s: " if replaying else ""
        if equivalent and not replaying:
            frozen = freeze(d)
            noise_run = math.inf
            for _ in range(5):
                started = time.process_time()
                noise_only(frozen, np.random.default_rng(0))
                noise_run = min(noise_run, time.process_time() - started)
            replaying = noise_run < 0.8 * per_run
            why = (
                f"the noise alone takes {noise_run:.2g} s a run against {per_run:.2g} s for the function, which "
                "returns exactly what its noise calls released: "
                if replaying
                else ""
            )
    else:
        replaying = force_replay
    replay: Callable[..., Any] | None = None
    if replaying:
        model = "the noise calls' outputs (replay: values before noise frozen, only the library's noise sampled)"
        notes.append(f"{why}audited by replay, {model}")
        mechanism, replay = freeze, noise_only
    else:

        def direct(data: Any, rng: np.random.Generator) -> Any:
            return fn(data)

        mechanism = direct
    try:
        result = run_audit(
            mechanism,
            d,
            d_prime,
            replay=replay,
            epsilon=runner.epsilon,
            delta=report.delta,
            confidence=confidence,
            float_test=float_test,
            max_seconds=max(1.0, remaining - 1.0),  # CPU seconds, as the check's own budget
            seed=0,
        )
    except (MechanismError, ParameterError) as error:
        return None, [*notes, f"audit not run: {error}"]
    if result.violated and replaying and not released_as_is:
        notes.append(
            f"the noise calls' outputs violate ε (ε_lb = {result.best_epsilon_lower_bound:.4g}); the release is computed "
            "from them, so this is evidence about the release, not a proof (not a finding)"
        )
    elif result.violated:
        call = report.calls[0] if report.calls else None
        report.findings.append(
            Finding(
                kind="audit",
                library=call.library if call else "",
                version=call.version if call else "",
                site=call.site if call else "",
                caller=call.caller if call else "",
                mechanism=call.mechanism if call else "",
                claimed=runner.epsilon,
                witnessed=result.best_epsilon_lower_bound,
                confidence=result.confidence,
                d=d_runs,
                d_prime=d_prime_runs,
                detail=f"black-box audit of {model}: event {result.event}"
                + (" (float test: the outputs' bit patterns)" if float_test else ""),
                script=audit_script(
                    runner,
                    d_runs,
                    d_prime_runs,
                    columns,
                    schema,
                    result,
                    script_event(fn, d, d_prime, per_run=per_run, seconds=max(2.0, 0.5 * (budget - report.cpu()))),
                ),
            )
        )
    return result, notes


def _released(output: Any) -> Any:
    """One noise call's release as the audit samples it: numbers (a number, an array, a sequence) as
    a list of floats; bytes, a boolean, text, dicts and sequences of them as they are (the audit
    encodes them)."""
    import numpy as np

    if isinstance(output, bytes | bytearray | str | bool | Mapping):
        return bytes(output) if isinstance(output, bytearray) else output
    try:
        return np.asarray(output, dtype=float).ravel().tolist()  # numbers (a null among them: NaN)
    except (TypeError, ValueError):
        return output


def _numbers(output: Any) -> list[Any] | None:
    """The values of an output in order (a dict's values by key; numbers as floats, bytes and text
    as they are), or None when it has others."""
    import numpy as np

    try:
        if isinstance(output, Mapping):
            output = [output[key] for key in sorted(output)]
        if isinstance(output, bytes | bytearray | str):
            return [bytes(output) if isinstance(output, bytearray) else output]
        if isinstance(output, list):
            parts = [_numbers(part) for part in output]
            return None if any(p is None for p in parts) else [v for p in parts for v in p or ()]
        flat = np.asarray(output, dtype=float).ravel()
        return [float(v) for v in flat]
    except (TypeError, ValueError):
        return None


def _is_float(output: Any) -> bool:
    try:
        import numpy as np

        array = np.asarray(output)
        return bool(array.dtype.kind == "f")
    except (TypeError, ValueError):
        return False


# --- reproduction scripts ------------------------------------------------------------------------


def _function_source(fn: Callable[..., Any]) -> str:
    """Code that defines ``fn`` in the script, relocatable: its module imported by name (from
    sys.path: PYTHONPATH, the script's folder, the working directory), else the module's source
    as it was checked, embedded; a function with no module file: its own source. No absolute
    path is written (a script moved to another folder or machine still runs, and names none of
    the user's folders)."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", "")
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        path = None
    if path and module and module != "__main__" and "<" not in qualname:
        try:
            with open(path, encoding="utf-8") as handle:
                source: str | None = handle.read()
        except OSError:
            source = None
        return textwrap.dedent(
            f"""
            import importlib
            import os
            import types

            # the checked module, as it was checked (used when it is not importable here)
            _SOURCE = {source!r}
            sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
            try:
                _module = importlib.import_module({module!r})
            except ModuleNotFoundError as _missing:
                if _missing.name != {module!r} or _SOURCE is None:
                    raise
                _module = types.ModuleType({module!r})
                sys.modules[{module!r}] = _module
                exec(compile(_SOURCE, {module.rpartition(".")[2] + ".py"!r}, "exec"), _module.__dict__)
            fn = _module
            for _part in {qualname!r}.split("."):
                fn = getattr(fn, _part)
            """
        )
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return "raise SystemExit('the checked function has no source to reproduce it from')\n"
    name = getattr(fn, "__name__", "fn")
    return source + (f"\nfn = {name}\n" if name != "<lambda>" else "")


def _site_name(site: str) -> str:
    """A call site as a script shows it: an absolute path cut to its file name (no folder of the user's)."""
    import os.path

    return os.path.basename(site) if os.path.isabs(site) else site


def _table_code(columns: Sequence[str], schema: Mapping[str, Any]) -> str:
    dtypes = ", ".join(f"{name!r}: pl.{schema[name]!r}" for name in columns)
    return textwrap.dedent(
        f"""
        def table(runs):
            # runs of identical rows: (row, how many times), in order
            index = np.repeat(np.arange(len(runs)), [times for _, times in runs])
            schema = {{{dtypes}}}
            return pl.DataFrame(
                {{name: pl.Series(name, [row[i] for row, _ in runs], dtype=schema[name], strict=False).gather(index)
                 for i, name in enumerate(schema)}}
            )
        """
    )


def _runs_literal(runs: Runs) -> str:
    items = ", ".join(f"(({', '.join(_literal(v) for v in row)},), {n})" for row, n in runs.runs)
    return f"[{items}]"


def _literal(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def repro_script(
    runner: _Runner, call: NoiseCall, key: str, d: Runs, d_prime: Runs, declared: float, columns: Mapping[str, Any]
) -> str:
    """A standalone script (the library, polars and numpy only) showing a shift beyond the declared Δ.

    :param runner: the check's runner: its ``fn`` (whose source is copied into the script) and
        its adapters (the one named by ``call.library`` supplies the recording hook).
    :param call: the noise call whose pre-noise value moved, as recorded on one of the tables.
    :param key: that call's key, ``"#<n> <library> <mechanism> at <site>"``; ``n`` (from 1) picks
        the call to compare among the calls the function makes.
    :param d: the first table D, as runs of identical rows.
    :param d_prime: its neighbour D′, as runs of identical rows.
    :param declared: the sensitivity the call declares; the script exits 1 when the shift (in the
        call's norm: L1, L2 or the discrete metric; bytes as bits; infinite when NaN appears on one
        side only) exceeds it by more than the relative tolerance.
    :param columns: the checked columns (as for ``check``), in the order the tables use.
    """
    adapter = next(a for a in runner.adapters if a.name == call.library)
    index = int(key.split(" ", 1)[0][1:]) - 1
    schema = _schema(columns)
    return (
        f'"""Reproduces a dpwitness finding: {call.library} {call.version}, {call.mechanism} at {_site_name(call.site)}.\n\n'
        f"The value this noise call receives moves by more than the Δ = {declared!r} it declares.\n"
        'Needs only the library (and polars, numpy). Exit status 1 when the bug shows."""\n'
        "import math\nimport sys\n\nimport numpy as np\nimport polars as pl\n"
        + adapter.repro_hook()
        + _function_source(runner.fn)
        + _table_code(list(columns), schema)
        + textwrap.dedent(
            f"""
            D = {_runs_literal(d)}
            D_PRIME = {_runs_literal(d_prime)}
            DECLARED = {declared!r}
            CALL = {index}
            NORM = {call.norm!r}


            def before_noise(runs):
                CALLS.clear()
                globals().get("PIN", lambda: None)()  # the library's own randomness, pinned (if it has any)
                fn(table(runs))
                site, mechanism, _, value = CALLS[CALL]
                return site, mechanism, value


            def numbers(value):
                # the value's numbers by position (bytes: their bits; a dict: by key); None: not numbers
                if isinstance(value, (bytes, bytearray)):
                    bits = np.unpackbits(np.frombuffer(bytes(value), dtype=np.uint8))
                    return {{(i,): float(b) for i, b in enumerate(bits)}}
                if isinstance(value, dict):
                    out = {{}}
                    for key, item in value.items():
                        inner = numbers(item)
                        if inner is None:
                            return None
                        out.update({{(key, *k): v for k, v in inner.items()}})
                    return out
                try:
                    flat = np.asarray(value, dtype=float).ravel()
                except (TypeError, ValueError):
                    return None
                return {{(i,): float(v) for i, v in enumerate(flat)}}


            def shift(a, b):
                x, y = (None, None) if NORM == "discrete" else (numbers(a), numbers(b))
                if x is None or y is None:  # the discrete metric: 0 when equal, 1 otherwise
                    return 0.0 if a == b or repr(a) == repr(b) else 1.0
                gaps = []
                for key in x.keys() | y.keys():
                    u, v = x.get(key, 0.0), y.get(key, 0.0)
                    same = u == v or (math.isnan(u) and math.isnan(v))
                    gaps.append(0.0 if same else math.inf if math.isnan(u) or math.isnan(v) else abs(u - v))
                return math.hypot(*gaps) if NORM == "l2" else math.fsum(gaps)


            site, mechanism, a = before_noise(D)
            _, _, b = before_noise(D_PRIME)
            moved = shift(a, b)
            print(f"{{mechanism}} at {{site}}: value before noise {{a!r}} on D, {{b!r}} on D'")
            print(f"{{NORM}} shift {{moved!r}} vs declared sensitivity {{DECLARED!r}}")
            if moved > DECLARED * (1 + {RELATIVE_TOLERANCE!r}):
                print("BUG: the shift exceeds the declared sensitivity")
                sys.exit(1)
            print("not reproduced")
            """
        )
    )


#: The script's event, as code run both by the check (to choose it) and by the script (to measure it):
#: ``("shape", shapes)`` (the output's structure: kinds, lengths, a dict's keys), ``("value", reprs)``
#: (the exact output) or ``("above" | "below", j, t)`` (coordinate j of its numbers against t).
EVENT_CODE = '''
def plain(output):
    """An output with numpy's types made Python's and a dict's keys in order."""
    if isinstance(output, dict):
        return {key: plain(output[key]) for key in sorted(output, key=repr)}
    if isinstance(output, np.ndarray):
        return plain(output.tolist())
    if isinstance(output, (list, tuple)):
        return tuple(plain(item) for item in output)
    if isinstance(output, np.generic):
        return output.item()
    if isinstance(output, bytearray):
        return bytes(output)
    return output


def shape_of(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {shape_of(item)}" for key, item in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(shape_of(item) for item in value) + ")"
    if isinstance(value, bytes):
        return f"bytes[{len(value)}]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def coordinates(value):
    if isinstance(value, dict):
        return [c for item in value.values() for c in coordinates(item)]
    if isinstance(value, tuple):
        return [c for item in value for c in coordinates(item)]
    if isinstance(value, (bool, int, float)):
        return [float(value)]
    return [math.nan]


def in_event(output, event):
    value = plain(output)
    if event[0] == "shape":
        return shape_of(value) in event[1]
    if event[0] == "value":
        return repr(value) in event[1]
    numbers = coordinates(value)
    x = numbers[event[1]] if event[1] < len(numbers) else math.nan
    return bool(x > event[2]) if event[0] == "above" else bool(x <= event[2])  # NaN: in neither
'''
#: Runs per table the check spends choosing the script's event, and the script's fewest and most runs.
EVENT_RUNS, SCRIPT_RUNS = (50, 1000), (2000, 400_000)


@dataclass(frozen=True)
class ScriptEvent:
    """The event an audit finding's script measures: ``event`` (see :data:`EVENT_CODE`), the table it
    favours (``"D"`` or ``"D'"``), the runs per table, and the hits seen when it was chosen."""

    event: tuple[Any, ...]
    favours: str
    samples: int
    hits: tuple[int, int]
    runs: int


def script_event(fn: Callable[[Any], Any], d: Any, d_prime: Any, *, per_run: float, seconds: float) -> ScriptEvent | None:
    """Choose a standalone event separating ``fn``'s outputs on the two tables: among the output's
    shapes, its exact values (when few) and thresholds on each of its numbers (when of one length),
    the one with the largest ratio of hits, with at least 20 on the favoured table; None when no
    event separates them or there is no time.

    :param fn: the checked function (a table → its release, noise included).
    :param d: the first table D (a Polars frame).
    :param d_prime: its neighbour D′.
    :param per_run: CPU seconds of one run of ``fn``, to size the runs.
    :param seconds: CPU seconds the choice may take (up to a thousand runs per table).
    """
    import numpy as np

    runs = int(min(EVENT_RUNS[1], seconds / max(2 * per_run, 1e-9)))
    if runs < EVENT_RUNS[0]:
        return None
    code: dict[str, Any] = {"np": np, "math": math}
    exec(EVENT_CODE, code)  # dpwitness's own code, the same the script runs
    try:
        outputs = [[code["plain"](fn(frame)) for _ in range(runs)] for frame in (d, d_prime)]
    except Exception:
        return None
    events: list[tuple[Any, ...]] = []
    shapes = [[code["shape_of"](o) for o in side] for side in outputs]
    events += [("shape", [shape]) for shape in dict.fromkeys(shapes[0] + shapes[1])]
    values = [[repr(o) for o in side] for side in outputs]
    distinct = list(dict.fromkeys(values[0] + values[1]))
    if len(distinct) <= 64:
        counts = [{v: side.count(v) for v in distinct} for side in values]
        ranked = sorted(distinct, key=lambda v: (counts[0][v] + 0.5) / (counts[1][v] + 0.5))
        events += [("value", ranked[:k]) for k in range(1, len(ranked))] + [("value", ranked[k:]) for k in range(1, len(ranked))]
    numbers = [[code["coordinates"](o) for o in side] for side in outputs]
    widths = {len(n) for side in numbers for n in side}
    if len(widths) == 1 and 0 < (width := widths.pop()) <= 32:
        pooled = np.asarray(numbers[0] + numbers[1], dtype=float)
        for j in range(width):
            column = pooled[:, j][np.isfinite(pooled[:, j])]
            for t in np.unique(np.quantile(column, np.linspace(0.02, 0.98, 25))) if len(column) else ():
                events += [("above", j, float(t)), ("below", j, float(t))]
    best: tuple[float, ScriptEvent] | None = None
    for event in events:
        hits = [sum(code["in_event"](o, event) for o in side) for side in outputs]
        for favours, (p, q) in (("D", hits), ("D'", hits[::-1])):
            if p < 20:
                continue
            score = math.log(p / (q + 3))
            if best is None or score > best[0]:
                rate = (q + 1) / runs  # the unfavoured table's rate, at most: enough runs to see it
                samples = int(min(max(SCRIPT_RUNS[0], 50 / rate), SCRIPT_RUNS[1]))
                best = (score, ScriptEvent(event, favours, samples, (hits[0], hits[1]), runs))
    return best[1] if best is not None and best[0] > 0 else None


def audit_script(
    runner: _Runner,
    d: Runs,
    d_prime: Runs,
    columns: Mapping[str, Any],
    schema: Mapping[str, Any],
    result: AuditResult,
    event: ScriptEvent | None = None,
) -> str:
    """A standalone script (the library, polars and numpy alone) that samples the function on both
    tables, counts the runs in ``event`` on each and exits 1 (printing BUG) when the ratio of the
    two rates, the favoured table's over the other's, exceeds e^ε; else 0 ("not reproduced").

    :param runner: the check's runner: its ``fn`` (imported or embedded) and claimed ε.
    :param d: the first table D, as runs of identical rows.
    :param d_prime: its neighbour D′, as runs of identical rows.
    :param columns: the checked columns (as for ``check``); their dtypes are derived from it.
    :param schema: accepted for symmetry with the caller and not used: the dtypes come from
        ``columns``.
    :param result: the audit's result; its ε lower bound and certified event are quoted in the
        script's docstring.
    :param event: the event to measure (:func:`script_event`: chosen by the check among events a
        script can state alone); None: the script samples and prints, and exits 0.
    """
    header = (
        f'"""Reproduces a dpwitness audit finding: ε_lb = {result.best_epsilon_lower_bound:.4g} > ε = {runner.epsilon:g}\n'
        f"at {result.confidence:.0%} confidence (certified on the audit's event {result.event}).\n\n"
        "Samples the function on D and D' with the library alone (and polars, numpy), counts the runs in\n"
        "EVENT on each and compares the ratio of the rates with e^ε: exit status 1 when the bug shows.\n"
        'EVENT is one a script states alone, chosen by the check on the same pair."""\n'
        "import math\nimport sys\n\nimport numpy as np\nimport polars as pl\n"
        + _function_source(runner.fn)
        + _table_code(list(columns), _schema(columns))
        + EVENT_CODE
        + textwrap.dedent(
            f"""
            D = {_runs_literal(d)}
            D_PRIME = {_runs_literal(d_prime)}
            EPSILON = {runner.epsilon!r}
            """
        )
    )
    if event is None:
        return header + textwrap.dedent(
            """
            for name, runs in (("D", D), ("D'", D_PRIME)):
                frame = table(runs)
                print(name, "first outputs", [plain(fn(frame)) for _ in range(3)])
            print("no standalone event was chosen: the certified bound comes from dpwitness check; not reproduced here")
            """
        )
    return header + textwrap.dedent(
        f"""
        EVENT = {event.event!r}
        FAVOURS = {event.favours!r}  # the table on which EVENT is likelier
        SAMPLES = {event.samples}  # runs per table: enough to see EVENT on the other table
        # when chosen: {event.hits[0]} runs of {event.runs} in EVENT on D, {event.hits[1]} on D'


        def hits(runs):
            frame = table(runs)
            return sum(in_event(fn(frame), EVENT) for _ in range(SAMPLES))


        on_d, on_d_prime = hits(D), hits(D_PRIME)
        likelier, other = (on_d, on_d_prime) if FAVOURS == "D" else (on_d_prime, on_d)
        ratio = likelier / other if other else (math.inf if likelier else 1.0)
        print(f"EVENT {{EVENT!r}}: {{on_d}} of {{SAMPLES}} runs on D, {{on_d_prime}} of {{SAMPLES}} on D'")
        print(f"rate ratio (on {{FAVOURS}} over the other) {{ratio:.4g}} vs e^ε = {{math.exp(EPSILON):.4g}}")
        if ratio > math.exp(EPSILON):
            print("BUG: the event is more than e^ε times likelier on one table than on its neighbour")
            sys.exit(1)
        print("not reproduced")
        """
    )


def _schema(columns: Mapping[str, Any]) -> dict[str, Any]:
    import polars as pl

    out: dict[str, Any] = {}
    for name, spec in columns.items():
        if isinstance(spec, Sequence) and not isinstance(spec, str):
            out[name] = pl.Series(list(spec), strict=False).dtype
        else:
            out[name] = spec() if isinstance(spec, type) else spec
    return out


__all__ = [
    "VERDICTS",
    "CheckReport",
    "Finding",
    "ScriptEvent",
    "audit_script",
    "check",
    "repro_script",
    "script_event",
]
