"""The answer to a statement: released values post-processed (arithmetic with interval
propagation, the scalar functions of :mod:`dpwitness.sql.functions`, HAVING, ORDER BY, LIMIT,
ROUND: no privacy cost) into rows, and its text, JSON and
frame forms. A seeded answer says it is NOT for production in every form."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpwitness.common.errors import require
from dpwitness.mechanisms.release import NOT_FOR_PRODUCTION, Release
from dpwitness.query.planning import Preview
from dpwitness.query.queries import Key
from dpwitness.sql import functions
from dpwitness.sql.statement import Aggregate, Statement


@dataclass(frozen=True)
class Cell:
    """A released number and its interval (which holds with probability ≥ 1 − α)."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True, repr=False)
class Answer:
    """The answer to a statement: one row per group, one column per output (each aggregate
    with its interval), and the releases (ε, δ, Δ, relation per aggregate) that made it.

    Intervals: an aggregate's is its release's at ``alpha``; a column computed from k
    aggregates (arithmetic, ROUND) takes each at α/k and propagates them by interval
    arithmetic, so it too holds with probability ≥ 1 − α.
    """

    statement: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    releases: tuple[Release, ...]
    aggregates: tuple[Aggregate, ...]
    epsilon: float
    delta: float
    alpha: float
    notes: tuple[str, ...] = ()
    #: Per column: "key" (a GROUP BY column) or "value" (released, with an interval).
    kinds: tuple[str, ...] = ()

    @property
    def table(self) -> list[dict[str, Any]]:
        """The rows as dicts, column → key value or :class:`Cell`."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_polars(self) -> Any:
        """A Polars frame: key columns as they are; each released column as ``name``, ``name_low``, ``name_high``."""
        polars = require("polars", "polars", "SQL answers as a frame")
        data: dict[str, list[Any]] = {}
        for index, name in enumerate(self.columns):
            cells = [row[index] for row in self.rows]
            if any(isinstance(c, Cell) for c in cells) or (not cells and name not in self._key_columns):
                data[name] = [c.value if isinstance(c, Cell) else None for c in cells]
                data[f"{name}_low"] = [c.low if isinstance(c, Cell) else None for c in cells]
                data[f"{name}_high"] = [c.high if isinstance(c, Cell) else None for c in cells]
            else:
                data[name] = cells
        return polars.DataFrame(data, strict=False)

    @property
    def seeded(self) -> bool:
        """Whether any release of the answer drew seeded (reproducible, not secure) noise."""
        return any(r.seeded for r in self.releases)

    @property
    def _key_columns(self) -> set[str]:
        """The GROUP BY columns among the outputs (plain values, no interval)."""
        return {name for name, kind in zip(self.columns, self.kinds, strict=False) if kind == "key"}

    def release_set(self) -> list[dict[str, Any]]:
        """Per aggregate: its SQL, the query, ε, δ, each noisy part's Δ and ε, and the relation."""
        out: list[dict[str, Any]] = []
        for aggregate, release in zip(self.aggregates, self.releases, strict=True):
            query = aggregate.query
            out.append(
                {
                    "aggregate": aggregate.text,
                    "query": query.label,
                    "epsilon": release.epsilon,
                    "delta": release.delta,
                    "sensitivity": release.sensitivity,
                    "parts": [
                        {"aggregate": p.aggregate.value, "epsilon": query.epsilon_of(p), "sensitivity": p.sensitivity}
                        for p in query.parts
                    ],
                    "neighbours": release.neighbours,
                    "notes": list(release.notes),
                    # Gaussian noise and key selection are stated where they apply (Laplace answers keep their shape)
                    **({"mechanism": release.distribution, "sigma": release.scale} if release.distribution == "gaussian" else {}),
                    **({"selection": dict(release.selection)} if release.selection is not None else {}),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "statement": self.statement,
            "columns": list(self.columns),
            "rows": [[_plain_cell(c) for c in row] for row in self.rows],
            "epsilon": self.epsilon,
            "delta": self.delta,
            "alpha": self.alpha,
            "releases": self.release_set(),
            "seeded": self.seeded,
            "notes": [*self.notes, *((NOT_FOR_PRODUCTION,) if self.seeded else ())],
        }

    def __str__(self) -> str:
        header = list(self.columns)
        body = [[_format_cell(c) for c in row] for row in self.rows]
        widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in body)
        if not body:
            lines.append("(no rows)")
        lines.append(f"intervals at {_level(self.alpha)}; ε = {self.epsilon:g}, δ = {self.delta:.3g} spent")
        for item in self.release_set():
            parts = ", ".join(f"{p['aggregate']} Δ = {p['sensitivity']:g} at ε = {p['epsilon']:g}" for p in item["parts"])
            noise = f"; gaussian σ = {item['sigma']:.4g}" if "sigma" in item else ""
            selection = item.get("selection")
            if selection is not None:
                noise += (
                    f"; keys whose noisy count ≥ τ = {selection['threshold']:.4g} "
                    f"(selection δ = {selection['delta_threshold']:.3g})"
                )
            lines.append(f"  {item['aggregate']}: {item['query']}; {parts}; δ = {item['delta']:.3g}{noise}; {item['neighbours']}")
        lines.extend(f"note: {n}" for n in self.notes)
        meaning = dict.fromkeys(n for r in self.releases for n in r.headline_notes if n != NOT_FOR_PRODUCTION)
        lines.extend(f"note: {n}" for n in meaning)  # e.g. the schema found beside the file
        if self.seeded:
            lines.append(NOT_FOR_PRODUCTION)
        return "\n".join(lines)

    __repr__ = __str__


def _level(alpha: float) -> str:
    return f"{(1 - alpha) * 100:.10g}%"


def _plain_cell(cell: Any) -> Any:
    if isinstance(cell, Cell):
        return cell.to_dict()
    if isinstance(cell, tuple):
        return list(cell)
    return cell


def _format_cell(cell: Any) -> str:
    if isinstance(cell, Cell):
        return f"{cell.value:.6g} [{cell.low:.6g}, {cell.high:.6g}]"
    return str(cell)


@dataclass(frozen=True, repr=False)
class Explanation:
    """The plan of a statement (EXPLAIN): each aggregate's query, Δ, ε and expected error. Nothing spent.

    With target errors (``WITHIN(…)``), ``plan`` is the solved budget (a
    :class:`dpwitness.session.target_errors.BudgetPlan`: its total, split and whether it fits) and
    each preview is at the planned ε (or ρ)."""

    statement: str
    aggregates: tuple[Aggregate, ...]
    previews: tuple[Preview, ...]
    keys_from: str
    epsilon: float
    notes: tuple[str, ...] = ()
    plan: Any = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "statement": self.statement,
            "epsilon": self.epsilon,
            "spent": 0.0,
            "keys": self.keys_from,
            "queries": [
                {"aggregate": a.text, "keys_reused": a.reuses_keys, **p.to_dict()}
                for a, p in zip(self.aggregates, self.previews, strict=True)
            ],
            "notes": list(self.notes),
        }
        if self.plan is not None:
            data["targets"] = self.plan.to_dict()
        return data

    def __str__(self) -> str:
        lines = [f"plan of: {self.statement.strip()}", f"group keys: {self.keys_from}"]
        for aggregate, preview in zip(self.aggregates, self.previews, strict=True):
            lines.append(f"  {aggregate.text} → {preview.query}")
            for part in preview.parts:
                extra = f", ± {float(part['half_width']):.4g} at {_level(preview.alpha)}" if "half_width" in part else ""
                lines.append(
                    f"      {part['aggregate']}: Δ = {float(part['sensitivity']):g}, ε = {float(part['epsilon']):g}{extra}"
                )
            if preview.interval is not None:
                lines.append(f"      expected error: ± {preview.interval[1]:.4g} at {_level(preview.alpha)}")
            lines.extend(f"      note: {n}" for n in preview.notes)
        lines.extend(f"note: {n}" for n in self.notes)
        if self.plan is not None:  # the solved budget: per statistic, its split, the total and whether it fits
            lines.extend(str(self.plan).splitlines())
        else:
            lines.append(f"would spend ε = {self.epsilon:g}; nothing spent")
        return "\n".join(lines)

    __repr__ = __str__


def answer_of(
    compiled: Statement,
    aggregates: Sequence[Aggregate],
    releases: Sequence[Release],
    keys: tuple[Key, ...] | None,
    alpha: float,
    *,
    extra: str = "",
) -> Answer:
    """The :class:`Answer` of ``compiled`` from its released values (post-processing, no cost).

    :param aggregates: the aggregates released, each with its query (keys filled in when reused).
    :param releases: their releases, in the same order.
    :param keys: the group keys answered (None: no GROUP BY).
    :param alpha: each interval's miss probability.
    :param extra: a note on how the keys were chosen, if any.
    """
    rows = _rows(compiled, aggregates, releases, keys, alpha)
    notes = (compiled.epsilon_note, f"group keys: {compiled.keys_from}" if compiled.by else "", extra, *compiled.notes)
    return Answer(
        statement=compiled.text,
        columns=tuple(name for name, _ in compiled.outputs),
        rows=rows,
        releases=tuple(releases),
        aggregates=tuple(aggregates),
        epsilon=math.fsum(r.epsilon for r in releases),
        delta=math.fsum(r.delta for r in releases),
        alpha=alpha,
        notes=tuple(n for n in notes if n),
        kinds=tuple("key" if node[0] == "key" else "value" for _, node in compiled.outputs),
    )


def _aggregate_uses(compiled: Any) -> set[int]:
    if not isinstance(compiled, tuple):
        return set()
    if compiled[0] == "agg":
        return {int(compiled[1])}
    out: set[int] = set()
    for item in compiled[1:]:
        out |= _aggregate_uses(item)
    return out


def _rows(
    compiled: Statement,
    aggregates: Sequence[Aggregate],
    releases: Sequence[Release],
    keys: tuple[Key, ...] | None,
    alpha: float,
) -> tuple[tuple[Any, ...], ...]:
    released = {call: (a, r) for a, r in zip(aggregates, releases, strict=True) for call in (a.calls or (a.index,))}
    if compiled.by and not keys:
        return ()
    row_keys: list[Key] = list(keys) if compiled.by and keys is not None else [None]

    intervals: dict[tuple[int, float], tuple[Any, Any]] = {}  # a release's intervals at a level: every key's at once

    def cell(index: int, key: Key, level: float) -> Cell:
        aggregate, release = released[index]
        kind, q = compiled.calls[index] if compiled.calls else (aggregate.kind, None)
        if (index, level) not in intervals:
            at_level = release.with_alpha(level)
            intervals[index, level] = (at_level.value, at_level.interval)
        value, interval = intervals[index, level]
        qs = aggregate.query.quantiles or ()
        at = key if len(qs) <= 1 else (q if key is None else (key, q))
        if isinstance(value, dict):
            assert isinstance(interval, dict)
            value, interval = value[at], interval[at]
        assert isinstance(interval, tuple)
        low, high = float(interval[0]), float(interval[1])
        number = float(value)
        if kind == "stddev":
            return Cell(math.sqrt(max(number, 0.0)), math.sqrt(max(low, 0.0)), math.sqrt(max(high, 0.0)))
        return Cell(number, low, high)

    def evaluate(node: Any, key: Key, level: float) -> Any:
        tag = node[0]
        if tag == "agg":
            return cell(node[1], key, level)
        if tag == "key":
            return key[node[1]] if isinstance(key, tuple) and len(compiled.by) > 1 else key
        if tag in ("num", "text", "bool"):
            return node[1] if tag != "num" else Cell(node[1], node[1], node[1])
        if tag == "neg":
            inner = _as_cell(evaluate(node[1], key, level))
            return Cell(-inner.value, -inner.high, -inner.low)
        if tag == "op":
            return _arithmetic(node[1], _as_cell(evaluate(node[2], key, level)), _as_cell(evaluate(node[3], key, level)))
        if tag == "fn":
            arguments = [_as_cell(evaluate(a, key, level)) for a in node[2:]]
            result = functions.apply(node[1], [functions.Interval(a.value, a.low, a.high) for a in arguments])
            return Cell(*result)
        if tag == "round":
            inner = _as_cell(evaluate(node[1], key, level))
            digits = node[2]
            return Cell(round(inner.value, digits), round(inner.low, digits), round(inner.high, digits))
        if tag == "cmp":
            left, right = _plain_value(evaluate(node[2], key, level)), _plain_value(evaluate(node[3], key, level))
            try:
                return {
                    "==": left == right,
                    "!=": left != right,
                    "<": left < right,
                    "<=": left <= right,
                    ">": left > right,
                    ">=": left >= right,
                }[node[1]]
            except TypeError:
                return False
        if tag == "and":
            return bool(evaluate(node[1], key, level)) and bool(evaluate(node[2], key, level))
        if tag == "or":
            return bool(evaluate(node[1], key, level)) or bool(evaluate(node[2], key, level))
        if tag == "not":
            return not bool(evaluate(node[1], key, level))
        raise AssertionError(tag)

    def level_of(node: Any) -> float:
        uses = _aggregate_uses(node)
        return alpha / max(1, len(uses)) if node[0] != "agg" else alpha

    rows: list[tuple[Any, tuple[Any, ...]]] = []
    for key in row_keys:
        if compiled.having is not None and not bool(evaluate(compiled.having, key, alpha)):
            continue
        values = tuple(
            _plain_value(value) if node[0] == "num" else value
            for value, node in ((evaluate(node, key, level_of(node)), node) for _, node in compiled.outputs)
        )
        rows.append((key, values))
    for expression, descending in reversed(compiled.order):
        rows.sort(key=lambda item: _sort_key(evaluate(expression, item[0], alpha)), reverse=descending)
    selected = [values for _, values in rows][compiled.offset :]
    if compiled.limit is not None:
        selected = selected[: compiled.limit]
    return tuple(selected)


def _as_cell(value: Any) -> Cell:
    if isinstance(value, Cell):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Cell(float(value), float(value), float(value))
    return Cell(math.nan, math.nan, math.nan)


def _plain_value(value: Any) -> Any:
    return value.value if isinstance(value, Cell) else value


def _sort_key(value: Any) -> tuple[int, Any]:
    plain = _plain_value(value)
    if isinstance(plain, int | float) and not isinstance(plain, bool):
        return (0, plain) if not math.isnan(plain) else (2, 0.0)
    return (1, str(plain))


def _arithmetic(op: str, a: Cell, b: Cell) -> Cell:
    if op == "+":
        return Cell(a.value + b.value, a.low + b.low, a.high + b.high)
    if op == "-":
        return Cell(a.value - b.value, a.low - b.high, a.high - b.low)
    if op == "*":
        products = [a.low * b.low, a.low * b.high, a.high * b.low, a.high * b.high]
        return Cell(a.value * b.value, min(products), max(products))
    value = a.value / b.value if b.value != 0 else math.nan
    if b.low <= 0 <= b.high:  # the divisor's interval holds 0: nothing can be said
        return Cell(value, -math.inf, math.inf)
    quotients = [a.low / b.low, a.low / b.high, a.high / b.low, a.high / b.high]
    return Cell(value, min(quotients), max(quotients))


__all__ = ["Answer", "Cell", "Explanation", "answer_of"]
