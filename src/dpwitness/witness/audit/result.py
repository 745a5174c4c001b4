"""What an audit found: :class:`AuditResult`, its text and JSON forms, and the error a misbehaving mechanism raises."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from dpwitness.common.encoding import json_number


class MechanismError(RuntimeError):
    """The audited callable misbehaved (raised, returned NaN, an unusable object…)."""


@dataclass(frozen=True)
class AuditResult:
    """What the auditor found. ``epsilon_lower_bound`` holds with probability ≥ ``confidence``.

    ``power`` lists, for each event family searched, the smallest probability (under the
    likelier input) at which an event of that family with loss ε·(1 + tolerance) would have
    been certified as a violation with these samples (∞: no such probability).
    With ``tight=True``, ``tight_epsilon_lower_bound`` is the certified bound of the longer
    run; it and the fast bound hold together at ``confidence`` (α is split between them), and the
    verdict is "violated" whenever either exceeds the claimed ε. ``tight_paired``: the tight bound
    came from paired runs (common random numbers), with ``tight_cells`` the pairs that hit the
    event under both inputs, under the likelier one only and under the other only. ``replayed``: the noise alone was
    sampled on frozen pre-noise values (``audit(..., replay=...)``).
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    violated: bool
    verdict: str
    event: str | None
    samples: int
    confidence: float
    seconds: float
    epsilon_estimate: float = 0.0
    event_upper_bound: float = 0.0
    direction: str = ""
    hits: tuple[int, int] = (0, 0)
    measured_runs: int = 0
    rounds: int = 0
    events_measured: int = 0
    family: str = ""
    model: str = "idealised real-number outputs (exact float values are not judged)"
    reason: str = ""
    pair: str | None = None
    pairs_tried: tuple[str, ...] = field(default=())
    tolerance: float = 0.1
    power: tuple[tuple[str, float], ...] = field(default=())
    tight_epsilon_lower_bound: float | None = None
    tight_event: str | None = None
    tight_family: str = ""
    tight_samples: int = 0
    tight_seconds: float = 0.0
    tight_hits: tuple[int, int] = (0, 0)
    tight_reason: str = ""
    tight_paired: bool = False
    tight_cells: tuple[int, int, int] = (0, 0, 0)
    replayed: bool = False
    cpu_seconds: float = 0.0
    wall_clock_stopped: bool = False

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def best_epsilon_lower_bound(self) -> float:
        """The larger of the fast and the tight bound (both hold together at ``confidence``)."""
        return max(self.epsilon_lower_bound, self.tight_epsilon_lower_bound or 0.0)

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import record_html

        return record_html(str(self), self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["hits"] = list(self.hits)
        payload["tight_hits"] = list(self.tight_hits)
        payload["tight_cells"] = list(self.tight_cells)
        payload["pairs_tried"] = list(self.pairs_tried)
        payload["power"] = [{"family": f, "smallest_probability": json_number(p)} for f, p in self.power]
        for key in ("epsilon_estimate", "event_upper_bound"):
            payload[key] = json_number(payload[key])
        return payload

    def power_statement(self) -> str:
        """One line per family: the smallest event probability at which a loss above ε(1 + tolerance) would have shown."""
        if not self.power:
            return ""
        loss = self.claimed_epsilon * (1 + self.tolerance)
        parts = [f"{family} ≥ {p:.2g}" if math.isfinite(p) else f"{family}: none" for family, p in self.power]
        return f"power: an event with loss > {loss:.4g} would have been caught at probability " + ", ".join(parts)

    def __str__(self) -> str:
        mark = {"ok": "✔", "violated": "✘", "inconclusive": "?"}[self.verdict]
        head = f"{mark} {self.verdict.upper()}: ε_lb = {self.epsilon_lower_bound:.4g} vs claimed ε = {self.claimed_epsilon:g}"
        if self.delta:
            head += f", δ = {self.delta:g}"
        tail = f" at {self.confidence:.0%} confidence from {self.samples:,} runs per input in {self.seconds:.2f} s"
        event = f"; event {self.event} ({self.direction})" if self.event else ""
        pair = f"; worst pair {self.pair}" if self.pair else ""
        tight = ""
        if self.tight_epsilon_lower_bound is not None:
            tight = (
                f"; tight ε_lb = {self.tight_epsilon_lower_bound:.4g} from {self.tight_samples:,} runs per input "
                f"in {self.tight_seconds:.1f} s (event {self.tight_event}{', paired runs' if self.tight_paired else ''})"
            )
        elif self.tight_reason:
            tight = f"; tight mode: {self.tight_reason}"
        reason = f". {self.reason}" if self.reason else ""
        return head + tail + event + pair + tight + reason
