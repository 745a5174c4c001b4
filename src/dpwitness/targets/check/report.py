"""What a check found: its :class:`Finding` objects, the :class:`CheckReport`, the verdicts and their exit codes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpwitness.common.encoding import json_number
from dpwitness.common.errors import ExitCode
from dpwitness.targets.hooks import NoiseCall
from dpwitness.witness.structured import Runs

if TYPE_CHECKING:
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
                    "scale": c.scale,
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


@dataclass
class ReportBuilder:
    """A check under way: its claim, its clocks, the noise calls seen, the findings and pairs counted so far."""

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
        """The finished report: the ``verdict`` (one of :data:`VERDICTS`), the findings and calls so far,
        the ``notes`` to show and the ``audit`` run on the worst pair (None: none ran)."""
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
