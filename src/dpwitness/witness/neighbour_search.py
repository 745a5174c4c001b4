"""Neighbour search: when the user gives one input, try the standard neighbouring patterns.

For a list of query answers (``relation="answers"``, each answer moving by at most
``sensitivity``), the patterns of StatDP (Ding et al., CCS 2018): one up, one down, one
up and the rest down, one down and the rest up, half up and half down, alternating, all up,
all down. For a dataset of numeric records: remove the first, smallest or largest record
(``"add-remove"``), or replace the smallest by the largest and the reverse (``"replace-one"``).
Each pair is audited at confidence 1 − (1 − confidence)/pairs (Bonferroni), and the worst
pair is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import ParameterError

if TYPE_CHECKING:
    from dpwitness.witness.audit import AuditResult, Mechanism

RELATIONS = ("answers", "add-remove", "replace-one")


def _restore(template: Any, values: npt.NDArray[np.float64]) -> Any:
    """Give the neighbour the type of the original (list stays list, number stays number)."""
    if isinstance(template, list):
        return values.tolist()
    if isinstance(template, tuple):
        return tuple(values.tolist())
    if np.ndim(template) == 0 and values.ndim == 0:
        return float(values)
    return values


def neighbour_pairs(d: Any, *, relation: str = "answers", sensitivity: float = 1.0) -> list[tuple[str, Any, Any]]:
    """(name, d, d′) for each standard pattern around ``d``.

    :param relation: "answers" (default: each answer moves by at most ``sensitivity``),
        "add-remove" or "replace-one" (``d`` a dataset of numeric records).
    :param sensitivity: how far one answer moves under "answers" (default 1.0).
    """
    if relation not in RELATIONS:
        raise ParameterError("relation", f"one of {', '.join(RELATIONS)}", relation)
    try:
        base = np.asarray(d, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("d", "a number or a list of numbers when d_prime is not given (neighbour search)", d) from None
    if base.ndim > 1 or base.size == 0 or not np.all(np.isfinite(base)):
        raise ParameterError("d", "a finite number or a non-empty 1-D list of numbers for neighbour search", d)
    step = float(sensitivity)
    if base.ndim == 0:
        return [("one up", d, _restore(d, base + step)), ("one down", d, _restore(d, base - step))]
    k = base.size
    if relation == "answers":
        rest = np.arange(k) > 0
        half = np.arange(k) < (k + 1) // 2
        patterns = {
            "one up": np.where(rest, 0.0, step),
            "one down": np.where(rest, 0.0, -step),
            "one up, rest down": np.where(rest, -step, step),
            "one down, rest up": np.where(rest, step, -step),
            "half up, half down": np.where(half, step, -step),
            "alternating": np.where(np.arange(k) % 2 == 0, step, -step),
            "all up": np.full(k, step),
            "all down": np.full(k, -step),
        }
        unique: dict[bytes, tuple[str, Any]] = {}
        for name, shift in patterns.items():
            unique.setdefault(shift.tobytes(), (name, _restore(d, base + shift)))
        return [(name, d, other) for name, other in unique.values()]
    low, high = int(np.argmin(base)), int(np.argmax(base))
    if relation == "add-remove":
        removals = {"without the first record": 0, "without the smallest record": low, "without the largest record": high}
        seen: dict[int, str] = {}
        for name, index in removals.items():
            seen.setdefault(index, name)
        return [(name, d, _restore(d, np.delete(base, index))) for index, name in seen.items() if k > 1]
    swapped_up, swapped_down = base.copy(), base.copy()
    swapped_up[low] = base[high]
    swapped_down[high] = base[low]
    return [
        ("smallest record replaced by the largest", d, _restore(d, swapped_up)),
        ("largest record replaced by the smallest", d, _restore(d, swapped_down)),
    ]


def audit_neighbours(
    mechanism: Mechanism,
    d: Any,
    *,
    epsilon: float,
    audit_pair: Callable[..., AuditResult],
    relation: str = "answers",
    sensitivity: float = 1.0,
    **options: Any,
) -> AuditResult:
    """Audit every standard neighbour of ``d`` with ``audit_pair`` (:func:`dpwitness.audit`, passed in so
    that this module does not import its caller); return the pair with the largest ε_lb.

    ``samples`` of the result is the runs per input of the worst pair; ``pairs_tried`` gives each pair's.
    ``max_seconds`` (CPU seconds, as for :func:`dpwitness.audit`) is shared equally between the pairs;
    ``seconds`` and ``cpu_seconds`` of the result add up every pair's, and ``wall_clock_stopped`` is
    set when any pair's audit was cut short by the wall-clock cap.

    :param mechanism: the mechanism audited, as for :func:`dpwitness.audit`.
    :param epsilon: the claimed ε each pair is audited against.
    :param relation: how neighbours differ, as for :func:`neighbour_pairs` (default "answers").
    :param sensitivity: how far one answer moves under "answers" (default 1.0).
    """
    pairs = neighbour_pairs(d, relation=relation, sensitivity=sensitivity)
    if not pairs:
        raise ParameterError("d", "a dataset with at least two records for add/remove neighbour search", d)
    confidence = float(options.pop("confidence", 0.95))
    per_pair = 1.0 - (1.0 - confidence) / len(pairs)
    budget = float(options.pop("max_seconds", 60.0)) / len(pairs)
    results = []
    for name, first, second in pairs:
        result = audit_pair(mechanism, first, second, epsilon=epsilon, confidence=per_pair, max_seconds=budget, **options)
        results.append((name, result))
        if result.violated:
            break
    name, worst = max(results, key=lambda item: item[1].epsilon_lower_bound)
    inputs = {n: (a, b) for n, a, b in pairs}
    tried = tuple(f"{n}: ε_lb = {r.epsilon_lower_bound:.4g} ({r.verdict}, {r.samples:,} runs per input)" for n, r in results)
    verdicts = {r.verdict for _, r in results}
    verdict = "violated" if "violated" in verdicts else ("ok" if verdicts == {"ok"} else "inconclusive")
    reason = worst.reason if verdict == worst.verdict else f"{worst.reason}; some other pairs were inconclusive"
    return replace(
        worst,
        verdict=verdict,
        confidence=confidence,
        samples=worst.samples,  # runs per input, as for a single pair; the total is in pairs_tried
        seconds=sum(r.seconds for _, r in results),
        cpu_seconds=sum(r.cpu_seconds for _, r in results),
        wall_clock_stopped=any(r.wall_clock_stopped for _, r in results),
        pair=f"{name}: d = {_short(inputs[name][0])}, d′ = {_short(inputs[name][1])}",
        pairs_tried=tried,
        reason=reason,
    )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
