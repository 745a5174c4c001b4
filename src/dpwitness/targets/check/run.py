"""``dw.check`` itself: probe the function, search each noise call's Δ, audit the worst pair, report."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_non_negative_finite, check_positive_finite
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.targets.check.blackbox import audit_worst_pair
from dpwitness.targets.check.probe import (
    RELEASE,
    CallsChanged,
    UnnoisedRunner,
    call_key,
    calls_finding,
    find_probe,
    first_calls_changed,
    implied_sensitivity,
    probe_row,
    relative_shift,
)
from dpwitness.targets.check.reach import LADDER_ROWS, find_sized_probe, listed_pairs, size_boundaries, sized_pairs
from dpwitness.targets.check.report import CheckReport, Finding, ReportBuilder
from dpwitness.targets.check.script import calls_script, repro_script
from dpwitness.targets.hooks import Adapter, AdapterError, registered
from dpwitness.witness.sensitivity import SensitivityResult, search_claims
from dpwitness.witness.structured import Runs, structured_search


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
    :param delta: the δ the function claims, in [0, 1); default 0.0: pure ε-DP, or, when its noise
        calls declare δ > 0, the sum of the δ they declare (the audit holds the release to it).
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
    report = ReportBuilder(eps, dlt, relation, started, cpu_started)
    try:
        for adapter in adapters:
            adapter.ensure_installed()
    except AdapterError as error:
        return report.done("adapter-error", notes=[str(error)])
    runner = UnnoisedRunner(fn, adapters, eps, relation, candidates)
    try:
        return _check(runner, report, columns, trials, seed, structured, audit, confidence, budget, replay)
    except AdapterError as error:
        return report.done("adapter-error", notes=[str(error)])


def _check(
    runner: UnnoisedRunner,
    report: ReportBuilder,
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
    probe, calls, outcomes = find_probe(runner, columns)
    if runner.discover():  # the function imported a covered library as it ran: probe again with its adapter
        probe, calls, outcomes = find_probe(runner, columns)
    template = probe_row(columns)
    cap = min([LADDER_ROWS, *(a.max_rows for a in runner.adapters if a.max_rows)])
    refusals = [f"the {rows}-row table: {why}" for rows, why in outcomes if why]
    if probe is None and any(why and not why.startswith("the function raised") for _, why in outcomes):
        # the library refused the small probes: a declared size, or a minimum number of rows
        probe, calls, larger = find_sized_probe(runner, template, cap, budget * 0.1)
        if probe is not None:
            declared = " (the size its domain declares)" if probe.height in runner.declared_rows else ""
            notes.append(
                "the 1-, 2- and 0-row tables are outside the library's contract; the check's tables start "
                f"from {probe.height} rows, which it accepts{declared}"
            )
        elif larger:
            tried = ", ".join(str(rows) for rows, _ in larger)
            refusals.append(f"tables of {tried} rows: refused too ({larger[-1][1] or 'no noise call'})")
    if probe is None:
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
    declared_delta = math.fsum(c.delta for c in calls)
    if report.delta == 0 and 0 < declared_delta < 1:  # (ε, δ): audited at the δ the library's calls declare
        report.delta = declared_delta
        notes.append(
            f"no δ was given: the audit holds the release to δ = {declared_delta:.6g}, the sum of the δ its noise calls "
            "declare (at the claimed ε, no event may be likelier on one table than e^ε times on the other plus δ)"
        )
    runner.keys = tuple(call_key(i, c) for i, c in enumerate(calls))
    claims = {call_key(i, c): c.sensitivity for i, c in enumerate(calls) if c.sensitivity is not None}
    by_call = {call_key(i, c): c for i, c in enumerate(calls)}
    undeclared = [c for c in calls if c.sensitivity is None]
    implied = implied_sensitivity(calls, report.epsilon, report.delta)
    if implied is not None:  # noise of a known scale and no Δ: search the release itself for the pair to audit
        allowed, norm = implied
        runner.keys += (RELEASE,)
        claims[RELEASE] = allowed
        by_call[RELEASE] = replace(next(c for c in undeclared if c.scale is not None), mechanism="release", norm=norm)
        notes.append(
            f"{len(undeclared)} noise call(s) declare no Δ: the function's output without its noise is searched against "
            f"the {norm.upper()} shift its noise's scale allows at ε ({allowed:.6g}), and the pair that moves it most is audited"
        )
    elif undeclared:
        notes.append(f"{len(undeclared)} noise call(s) declare no Δ the hook can read: audited only, not searched")
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
    boundaries = size_boundaries(runner, template, cap, budget * 0.1)
    notes += [boundary.describe() for boundary in boundaries]
    sizes: set[int] = {probe.height} - {0, 1, 2} | {rows for rows in runner.declared_rows if rows <= cap}
    if report.neighbours == "add-remove":  # n − 1 and n rows are neighbours: a change of the calls there is a finding
        for boundary in boundaries:
            try:
                runner(boundary.below)
                runner(boundary.above)
            except CallsChanged as changed:
                report.findings.append(_with_script(calls_finding(changed), runner, columns))
                break
    else:
        sizes |= {rows for boundary in boundaries for rows in (boundary.below.height, boundary.above.height)}
    at_sizes = sized_pairs(template, sizes, bounds, report.neighbours)
    listed = listed_pairs(template, columns, report.neighbours) if any(c.norm == "discrete" for c in calls) else []
    for norm in ("l1", "l2", "discrete") if not report.findings else ():
        group = {k: v for k, v in claims.items() if by_call[k].norm == norm}
        if not group:
            continue
        search_norm = "l2" if norm == "l2" else "l1"  # the discrete distance reaches the search as a 0/1 number
        # a few neighbours at the sizes the library declares or the function changes at; under the discrete
        # metric, one change of each listed value too (for the audit to screen: blackbox)
        given = at_sizes + (listed if norm == "discrete" else [])
        if given:
            try:
                sized = search_claims(
                    runner,
                    columns=columns,
                    claims=group,
                    neighbours=report.neighbours,
                    norm=search_norm,
                    trials=0,
                    pairs=given,
                )
            except CallsChanged as changed:
                report.findings.append(_with_script(calls_finding(changed), runner, columns))
                break
            for name, result in sized.items():
                _keep(results, pairs, name, result, (Runs.of_frame(result.d), Runs.of_frame(result.d_prime)))
                if result.violated and result.d.height in sizes:
                    notes.append(f"{name}: found on a table of {result.d.height} rows (a size the library accepts)")
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
        except CallsChanged as changed:
            report.findings.append(_with_script(calls_finding(changed), runner, columns))
            break
        except BaseExceptionGroup as group_error:
            inner = group_error.subgroup(CallsChanged)
            if inner is None:
                raise
            report.findings.append(_with_script(calls_finding(first_calls_changed(inner)), runner, columns))
            break
        for name, result in found.items():
            _keep(results, pairs, name, result, (Runs.of_frame(result.d), Runs.of_frame(result.d_prime)))
        remaining = search_seconds - report.cpu()
        if structured and not any(results[k].violated for k in group if k in results) and remaining > 1:
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
            except CallsChanged as changed:
                report.findings.append(_with_script(calls_finding(changed), runner, columns))
                notes += [f"noise calls changed on the {note}" for note in getattr(changed, "__notes__", ())]
                break
            for name, result in grown.results.items():
                _keep(results, pairs, name, result, grown.pairs[name])
                if result.violated:
                    notes.append(f"{name}: found on the structured table '{grown.shapes[name]}'")
            largest_seen.update(grown.largest)
    report.tried, report.skipped = runner.evaluated, runner.skipped
    notes += [f"{count} table(s) skipped: {reason}" for reason, count in runner.reasons.items()]
    for name, result in results.items():
        if result.violated and name == RELEASE:  # no Δ was declared: the audit on this pair decides
            notes.append(
                f"the release without its noise moved by {result.shift:.6g} on a pair where its noise's scale allows "
                f"{result.claimed:.6g} at ε: the audit is run on that pair"
            )
        elif result.violated:
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
        audit_result, audit_notes = audit_worst_pair(runner, report, results, pairs, columns, confidence, budget, probe, replay)
        notes += audit_notes
    verdict = "violated" if report.findings else "inconclusive"
    if not report.findings and audit_result is not None and audit_result.verdict == "ok":
        verdict = "ok"
    if not report.findings and runner.evaluated and runner.skipped == runner.evaluated:
        verdict = "unsupported"
    return report.done(verdict, notes=notes, audit=audit_result)


def _with_script(finding: Finding, runner: UnnoisedRunner, columns: Mapping[str, Any]) -> Finding:
    """A ``noise-calls`` or ``shape`` finding with its reproduction script."""
    return replace(finding, script=calls_script(runner, finding, columns))


def _keep(
    results: dict[str, SensitivityResult],
    pairs: dict[str, tuple[Runs, Runs]],
    name: str,
    result: SensitivityResult,
    pair: tuple[Runs, Runs],
) -> None:
    """Keep ``result`` for ``name`` when it is the first, a violation, or the largest shift relative to Δ so far."""
    old = results.get(name)
    if old is None or result.violated or (not old.violated and relative_shift(result) > relative_shift(old)):
        results[name] = result
        pairs[name] = pair
