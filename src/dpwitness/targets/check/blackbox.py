"""The black-box audit of the worst pair a check found: the released values as the auditor sees them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from dpwitness.common.encoding import frame_columns
from dpwitness.common.errors import ParameterError
from dpwitness.targets.check.probe import UnnoisedRunner, relative_shift
from dpwitness.targets.check.report import Finding, ReportBuilder
from dpwitness.targets.check.script import audit_script, script_event
from dpwitness.targets.hooks import recording
from dpwitness.witness.sensitivity import SensitivityResult
from dpwitness.witness.structured import Runs

if TYPE_CHECKING:
    from dpwitness.witness.audit import AuditResult

#: Runs per input the audit's first round needs: a function too slow for it within the time
#: left is audited by replay (values before noise frozen, only the noise sampled).
FIRST_ROUND_RUNS = 20_000
#: Runs per table of the screening that picks, among pairs the search cannot rank, the one to audit.
SCREEN_RUNS = 4_000


def audit_worst_pair(
    runner: UnnoisedRunner,
    report: ReportBuilder,
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
        name = max(results, key=lambda k: (results[k].violated, round(relative_shift(results[k]), 9), -pairs[k][1].rows))
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
        # Replay that samples the release itself is chosen on a ratio of two CPU times taken side by side,
        # which the machine's load moves little; the absolute cost of a run only decides when it is not.
        replaying, why = False, ""
        if equivalent:
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
        if not replaying and per_run * 2 * FIRST_ROUND_RUNS > 0.5 * remaining:
            replaying, why = True, f"one run takes {per_run:.2g} s: "
    else:
        replaying = force_replay
    if replaying and not any(c.replay is not None for c in recorder.calls):
        # nothing to replay (draws seen by the generic hook): replay would sample a constant
        notes.append("no noise call can be replayed: the function itself is audited")
        replaying = False
    replay: Callable[..., Any] | None = None
    if replaying:
        model = "the noise calls' outputs (replay: values before noise frozen, only the library's noise sampled)"
        notes.append(f"{why}audited by replay, {model}")
        mechanism, replay = freeze, noise_only
    else:

        def direct(data: Any, rng: np.random.Generator) -> Any:
            return fn(data)

        mechanism = direct

    def audited(first: Any, second: Any, *, seconds: float, seed: int, samples: int | None = None) -> AuditResult:
        return run_audit(
            mechanism,
            first,
            second,
            replay=replay,
            epsilon=runner.epsilon,
            delta=report.delta,
            samples=samples,
            confidence=confidence,
            float_test=float_test,
            max_seconds=seconds,  # CPU seconds, as the check's own budget
            seed=seed,
        )

    candidates = [(d_runs, d_prime_runs)]
    for a, b in runner.discrete_pairs.values() if not report.findings else ():
        pair = (Runs.of_frame(a), Runs.of_frame(b))
        if pair not in candidates and pair[::-1] not in candidates:
            candidates.append(pair)
    if len(candidates) > 1:
        # Screen every pair on a small sample of its own, then audit the likeliest on fresh runs: the
        # choice sees none of the audit's samples, so its confidence needs no correction.
        screened = []
        for number, (a, b) in enumerate(candidates):
            share = max(0.5, 0.25 * remaining / len(candidates))
            try:
                quick = audited(a.frame(schema), b.frame(schema), samples=SCREEN_RUNS, seconds=share, seed=1 + number)
                screened.append(quick.best_epsilon_lower_bound)
            except (MechanismError, ParameterError):
                screened.append(-math.inf)
        chosen = max(range(len(candidates)), key=lambda i: screened[i])
        d_runs, d_prime_runs = candidates[chosen]
        d, d_prime = d_runs.frame(schema), d_prime_runs.frame(schema)
        notes.append(
            f"{len(candidates)} pairs change the release in distinct ways the search cannot rank (the discrete metric "
            f"puts each at distance 1): each was screened on {SCREEN_RUNS:,} runs per table, and the audit runs on the "
            f"one with the largest screened ε_lb ({screened[chosen]:.4g}), on runs of its own"
        )
        remaining = budget - report.cpu()
    try:
        result = audited(d, d_prime, seconds=max(1.0, remaining - 1.0), seed=0)
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
                + (" (float test: the outputs' bit patterns)" if float_test else "")
                + _delta_text(result),
                script=audit_script(
                    runner,
                    d_runs,
                    d_prime_runs,
                    columns,
                    schema,
                    result,
                    script_event(fn, d, d_prime, per_run=per_run, seconds=max(2.0, 0.5 * (budget - report.cpu()))),
                    delta=report.delta,
                ),
            )
        )
    return result, notes


def _delta_text(result: AuditResult) -> str:
    """For an (ε, δ) claim: the event's rate gap at the claimed ε against δ (plug-in rates; the
    certified statement is ε_lb, computed with δ taken off the likelier rate)."""
    if not result.delta or not result.measured_runs:
        return ""
    likelier, other = (hits / result.measured_runs for hits in result.hits)
    gap = likelier - math.exp(result.claimed_epsilon) * other
    return (
        f"; at the claimed ε its rates are {likelier:.4g} and {other:.4g}: the likelier exceeds e^ε times the other "
        f"by {gap:.4g}, against the declared δ = {result.delta:.4g}"
    )


def _released(output: Any) -> Any:
    """One noise call's release as the audit samples it: numbers (a number, an array, a sequence) as
    a list of floats; bytes, a boolean, text, dicts and sequences of them as they are (the audit
    encodes them)."""
    import numpy as np

    frame = frame_columns(output)
    if frame is not None:  # a frame: its columns by name (the audit encodes a dict of lists)
        return frame
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
        output = frame_columns(output) or output
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
    frame = frame_columns(output)
    if frame is not None:
        return all(_is_float(column) for column in frame.values()) and bool(frame)
    try:
        import numpy as np

        array = np.asarray(output)
        return bool(array.dtype.kind == "f")
    except (TypeError, ValueError):
        return False
