"""The sensitivity witness from the file: neighbouring *files*, read by each face's real reader.

:mod:`dpwitness.witness.sensitivity` checks Δ on neighbouring frames; nothing there sees how a
file becomes a frame. Here the neighbours are files: D′ is D with one **physical line** of a
CSV added, removed or replaced (hostile lines included: unbalanced quotes, bare ``\\r``
fragments, an empty line, a ragged line, NUL, invalid UTF-8, …), or one **row** of a Parquet
file. Each file is opened by a face's own reading (``evaluate``: e.g. an engine's ``open`` of
the path, or the service's loader), the query's exact aggregates are computed, and each noisy
part's shift (:func:`~dpwitness.witness.sensitivity.output_shift`, L1 or L2) is held to the Δ
that :class:`~dpwitness.query.queries.Query` derives. A shift beyond Δ is shrunk (unchanged lines
dropped while it persists) to a minimal pair of files.

What makes a file-level neighbour a neighbour: one line must hold at most one record. Under a
privacy unit a neighbour is one *unit*, so the changed line carries a fresh unit id
(:data:`FRESH_UNIT`), and a replaced line is the only line of its unit; a reader that turns one
line into several records (or none) then shows as a shift beyond Δ.
"""

from __future__ import annotations

import csv
import io
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.query.queries import Aggregates, Query
from dpwitness.witness.sensitivity import NORMS, RELATIVE_TOLERANCE, output_shift

#: The unit id of the changed line (no other line has it) and of the base file's one-line unit.
FRESH_UNIT, SINGLE_UNIT = 999, 500
#: Four 64-bit words that key contribution bounding in every face (the same on D and D′).
SELECTION_KEY = (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89)

#: ``evaluate(jobs)``: the exact aggregates of each (query, file) job, in order, read by one face.
Evaluate = Callable[[Sequence[tuple[Query, Path]]], Sequence[Aggregates]]


def hostile_lines(columns: Sequence[str], *, unit: int = FRESH_UNIT) -> dict[str, bytes]:
    """One line of each kind a reader can get wrong, for a CSV with these ``columns`` (the first
    holding the unit id ``unit``), without its line end. Keyed by a short name."""
    width = len(columns)
    rest = [b"3.5", b"a", b"1"] + [b"x"] * max(0, width - 4)
    u = str(unit).encode()

    def line(*cells: bytes) -> bytes:
        return b",".join(cells)

    fragments = b"\r".join(str(unit + i).encode() for i in range(1, 501))
    return {
        "bare-cr-fragments": line(u, b"free text\r" + fragments, b"3"),  # 501 records for a reader that ends lines at \r
        "empty": b"",
        "unbalanced-quote": line(u, b'"unclosed', *rest[1:]),
        "quote-after-text": line(u, b'3.5"x"', *rest[1:]),
        "quoted-separator": line(u, b'"Doe, Jane"', *rest[1:]),
        "doubled-quotes": line(u, b'"say ""hi"""', *rest[1:]),
        "quoted-all": line(u, *(b'"' + c + b'"' for c in rest)),
        "quoted-bare-cr": line(u, b'"two\rlines"', *rest[1:]),
        "ragged-short": line(u, b"3.5"),
        "ragged-long": line(u, *rest, b"extra", b"fields", b"9"),
        "only-separators": b"," * (width - 1),
        "nul": line(u, b"3\x005", *rest[1:]),
        "invalid-utf8": line(u, b"\xff\xfe3", b"\xc3(", *rest[2:]),
        "bom-inside": b"\xef\xbb\xbf" + line(u, *rest),
        "crlf": line(u, *rest) + b"\r",
        "header-again": line(*(c.encode() for c in columns)),
        "spaces": line(b" " + u + b" ", b" 4.5 ", b" a ", b" 2 "),
        "huge-number": line(u, b"1e400", *rest[1:]),
    }


@dataclass(frozen=True)
class FileChange:
    """A pair of neighbouring files: D's records (CSV lines, or Parquet rows) and one change.

    ``at`` is the position of the change; ``removed`` is D's record there that D′ lacks (None:
    an addition), ``added`` the record D′ has there instead (None: a removal). ``kind`` names
    the change (e.g. ``"add bare-cr-fragments"``), ``relation`` the neighbour relation it is a
    neighbour under. ``header`` is a CSV's first line; a Parquet change has ``schema`` (column →
    Polars dtype) and no header.
    """

    records: tuple[Any, ...]
    at: int
    removed: Any
    added: Any
    kind: str
    relation: Neighbours
    header: bytes | None = None
    schema: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def suffix(self) -> str:
        return ".csv" if self.header is not None else ".parquet"

    def d_records(self) -> tuple[Any, ...]:
        return self.records

    def d_prime_records(self) -> tuple[Any, ...]:
        before, after = self.records[: self.at], self.records[self.at + (self.removed is not None) :]
        return (*before, *(() if self.added is None else (self.added,)), *after)

    def without(self, index: int) -> FileChange:
        """The same change with unchanged record ``index`` of D dropped from both files."""
        if index == self.at and self.removed is not None:
            raise ValueError("the changed record cannot be dropped")
        records = self.records[:index] + self.records[index + 1 :]
        return replace(self, records=records, at=self.at - (index < self.at))

    def write(self, records: Sequence[Any], path: Path) -> Path:
        """Write ``records`` (D's or D′'s) to ``path`` as this change's file: a CSV with the header
        and ``\n`` line ends, or a Parquet file with ``schema``; returns ``path``."""
        if self.header is not None:
            path.write_bytes(b"".join(line + b"\n" for line in (self.header, *records)))
            return path
        import polars as pl

        assert self.schema is not None
        pl.DataFrame([dict(r) for r in records], schema=dict(self.schema), orient="row").write_parquet(path)
        return path

    def text(self, records: Sequence[Any]) -> str:
        if self.header is not None:
            return repr(b"".join(line + b"\n" for line in (self.header, *records)))
        return f"{len(records)} row(s): " + "; ".join(repr(dict(r)) for r in records)


@dataclass(frozen=True, eq=False)
class FileSearchResult:
    """What :func:`file_search` found for one query through one face.

    ``violated``: a pair of files moved a part by more than its Δ; ``change`` is then the
    minimal such pair (shrunk), else the pair with the largest shift relative to Δ.
    """

    query: str
    face: str
    violated: bool
    part: str
    shift: float
    claimed: float
    change: FileChange
    pairs: int
    norm: str

    @property
    def ok(self) -> bool:
        return not self.violated

    def d(self) -> bytes | tuple[Any, ...]:
        """File D (its bytes for a CSV, its rows for Parquet)."""
        return self._content(self.change.d_records())

    def d_prime(self) -> bytes | tuple[Any, ...]:
        return self._content(self.change.d_prime_records())

    def _content(self, records: Sequence[Any]) -> bytes | tuple[Any, ...]:
        if self.change.header is None:
            return tuple(records)
        return b"".join(line + b"\n" for line in (self.change.header, *records))

    def __str__(self) -> str:
        mark = "✘ VIOLATED" if self.violated else "✔ claim holds on every file pair tried"
        head = (
            f"{self.part}: {self.norm.upper()} shift {self.shift:.6g} > Δ = {self.claimed:g}"
            if self.violated
            else f"largest {self.norm.upper()} shift {self.shift:.6g} (Δ = {self.claimed:g}, part {self.part})"
        )
        pair = "minimal violating pair of files" if self.violated else "pair with the largest shift"
        return (
            f"{mark} [{self.face}] {self.query}: {head}; {self.pairs} file pairs ({self.change.kind})\n"
            f"{pair}:\nD  = {self.change.text(self.change.d_records())}\nD′ = {self.change.text(self.change.d_prime_records())}"
        )


# --- the neighbours -----------------------------------------------------------------------------


def csv_changes(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    relation: str | Neighbours,
    lines: Mapping[str, bytes],
    *,
    unit: bool = False,
) -> list[FileChange]:
    """File pairs around the base CSV (``header`` and ``rows`` written as Python's ``csv`` module
    and pandas write them: minimal quoting, ``\\n`` line ends): under add/remove, each of ``lines``
    added at the start, middle and end, and each base line removed; under replace-one, a line
    replaced by each of ``lines``. With ``unit`` (the first column is the privacy unit) a base
    line of its own unit (:data:`SINGLE_UNIT`) is appended and is the one replaced or removed.
    ``relation`` is ``"add-remove"`` or ``"replace-one"`` (or a :class:`Neighbours`)."""
    relation = Neighbours.parse(relation)
    base_rows = [list(r) for r in rows] + ([[SINGLE_UNIT, *rows[0][1:]]] if unit and rows else [])
    records = tuple(_csv_line(r) for r in base_rows)
    head = _csv_line(header)
    singles = [len(records) - 1] if unit else range(len(records))
    changes: list[FileChange] = []
    for name, line in lines.items():
        if relation is Neighbours.ADD_REMOVE:
            for at in sorted({0, len(records) // 2, len(records)}):
                changes.append(FileChange(records, at, None, line, f"add {name} at line {at + 2}", relation, head))
        else:
            for at in singles if unit else sorted({0, len(records) // 2, max(len(records) - 1, 0)}):
                if at < len(records):
                    changes.append(FileChange(records, at, records[at], line, f"replace line {at + 2} by {name}", relation, head))
    if relation is Neighbours.ADD_REMOVE:
        for at in singles:
            changes.append(FileChange(records, at, records[at], None, f"remove line {at + 2}", relation, head))
    return changes


def parquet_changes(
    schema: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    relation: str | Neighbours,
    candidates: Sequence[Mapping[str, Any]],
    *,
    unit: str | None = None,
) -> list[FileChange]:
    """Pairs of Parquet files: one row added (at the start and end) or removed, or replaced by
    each of ``candidates``. With ``unit``, the changed row's unit is :data:`FRESH_UNIT` and the
    replaced or removed row is the only row of its unit (:data:`SINGLE_UNIT`). ``schema`` maps
    each column to its Polars dtype, ``rows`` are the base table's rows (column → value), and
    ``relation`` is ``"add-remove"`` or ``"replace-one"`` (or a :class:`Neighbours`)."""
    relation = Neighbours.parse(relation)
    base = [dict(r) for r in rows]
    if unit is not None and base:
        base.append({**base[0], unit: SINGLE_UNIT})
    records = tuple(tuple(sorted(r.items())) for r in base)
    fresh = [tuple(sorted({**c, **({unit: FRESH_UNIT} if unit else {})}.items())) for c in candidates]
    singles = [len(records) - 1] if unit is not None else list(range(min(len(records), 3)))
    changes: list[FileChange] = []
    for number, row in enumerate(fresh):
        if relation is Neighbours.ADD_REMOVE:
            for at in sorted({0, len(records)}):
                changes.append(FileChange(records, at, None, row, f"add row {number} at {at}", relation, schema=schema))
        else:
            for at in singles:
                change = FileChange(records, at, records[at], row, f"replace row {at} by row {number}", relation, schema=schema)
                changes.append(change)
    if relation is Neighbours.ADD_REMOVE:
        for at in singles:
            changes.append(FileChange(records, at, records[at], None, f"remove row {at}", relation, schema=schema))
    return changes


def sample_rows(values: Mapping[str, Sequence[Any]], count: int, *, seed: int) -> list[list[Any]]:
    """``count`` rows, each cell drawn (seeded) from its column's ``values``: a base table.

    :param seed: the seed of the draws (Python's ``random.Random``): the same seed, the same rows.
    """
    rng = random.Random(seed)
    return [[rng.choice(list(options)) for options in values.values()] for _ in range(count)]


def _csv_line(cells: Sequence[Any]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["" if c is None else c for c in cells])
    return out.getvalue().removesuffix("\n").encode("utf-8")


# --- the search ---------------------------------------------------------------------------------


def file_search(
    evaluate: Evaluate,
    *,
    queries: Sequence[Query],
    changes: Sequence[FileChange],
    face: str,
    norm: str = "l1",
    shrink: bool = True,
    directory: str | Path | None = None,
) -> list[FileSearchResult]:
    """Hold every query's parts to their Δ over every pair of files in ``changes`` that is a
    neighbour under the query's relation, read by one face.

    ``evaluate`` gets every (query, file) job of a round at once (so that a face like Spark can
    run them in a few jobs, each distinct file opened once) and returns their exact aggregates
    in order. Files are written to ``directory`` (a temporary folder by default), each distinct
    file once. Returns one result per query; a violation is shrunk to a minimal pair when ``shrink``.
    ``queries`` are the queries whose parts are checked (each against the changes of its own
    relation, which must be present); ``norm`` is ``"l1"`` (default: each part's Δ, Laplace) or
    ``"l2"`` (its L2 Δ, Gaussian).
    """
    if norm not in NORMS:
        raise ParameterError("norm", "'l1' (Laplace), 'l2' (Gaussian) or 'linf' (a threshold's Δ∞)", norm)
    pairs = {id(q): [c for c in changes if c.relation is q.neighbours] for q in queries}
    if not queries or not all(pairs.values()):
        raise ParameterError("changes", "pairs of files under every query's relation", [q.neighbours.value for q in queries])
    with tempfile.TemporaryDirectory(prefix="dpw-files-", dir=directory) as folder:
        files = _Files(Path(folder))
        jobs: list[tuple[Query, Path]] = []
        for query in queries:
            for change in pairs[id(query)]:
                jobs += [(query, files.path(change, change.d_records())), (query, files.path(change, change.d_prime_records()))]
        values = iter(_evaluate_unique(evaluate, jobs))
        results = []
        for query in queries:
            mine = pairs[id(query)]
            found = [_judge(query, norm, next(values), next(values)) for _ in mine]
            violations = [i for i, (bad, *_rest) in enumerate(found) if bad]
            if violations:
                chosen = min(violations, key=lambda i: len(mine[i].records))
                change, part, shift = mine[chosen], found[chosen][1], found[chosen][2]
                if shrink:
                    change, part, shift = _shrink(evaluate, files, query, norm, change, part, shift)
                claimed = _claims(query, norm)[part]
                results.append(FileSearchResult(query.label, face, True, part, shift, claimed, change, len(mine), norm))
                continue
            worst = max(range(len(mine)), key=lambda i: found[i][3])
            _, part, shift, _ = found[worst]
            claimed = _claims(query, norm)[part]
            results.append(FileSearchResult(query.label, face, False, part, shift, claimed, mine[worst], len(mine), norm))
        return results


def _claims(query: Query, norm: str) -> dict[str, float]:
    return {p.aggregate.value: p.sensitivity if norm == "l1" else p.l2_sensitivity for p in query.parts}


def _judge(query: Query, norm: str, first: Aggregates, second: Aggregates) -> tuple[bool, str, float, float]:
    """(violated, the part with the largest relative shift, its shift, shift / Δ)."""
    worst: tuple[bool, str, float, float] | None = None
    for name, claimed in _claims(query, norm).items():
        shift = output_shift(first.get(name, 0.0), second.get(name, 0.0), norm)
        bad = shift > claimed * (1.0 + RELATIVE_TOLERANCE)
        ratio = shift / claimed if claimed > 0 else (float("inf") if shift > 0 else 0.0)
        if worst is None or (bad, ratio) > (worst[0], worst[3]):
            worst = (bad, name, shift, ratio)
    assert worst is not None
    return worst


def _shrink(
    evaluate: Evaluate, files: _Files, query: Query, norm: str, change: FileChange, part: str, shift: float
) -> tuple[FileChange, str, float]:
    """Drop unchanged records one at a time while the pair still violates (one round per record)."""
    while True:
        smaller = [change.without(i) for i in range(len(change.records)) if not (i == change.at and change.removed is not None)]
        if not smaller:
            return change, part, shift
        jobs = [(query, files.path(c, records)) for c in smaller for records in (c.d_records(), c.d_prime_records())]
        values = _evaluate_unique(evaluate, jobs)
        for i, candidate in enumerate(smaller):
            bad, name, moved, _ = _judge(query, norm, values[2 * i], values[2 * i + 1])
            if bad:
                change, part, shift = candidate, name, moved
                break
        else:
            return change, part, shift


class _Files:
    """Each distinct file written once, named by its number."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.written = folder, {}  # type: ignore[var-annotated]

    def path(self, change: FileChange, records: tuple[Any, ...]) -> Path:
        key = (change.header, change.suffix, records)
        if key not in self.written:
            self.written[key] = change.write(records, self.folder / f"f{len(self.written)}{change.suffix}")
        return self.written[key]  # type: ignore[no-any-return]


def _evaluate_unique(evaluate: Evaluate, jobs: list[tuple[Query, Path]]) -> list[Aggregates]:
    """``evaluate`` on the distinct jobs only (queries compare by value), results spread back."""
    unique: dict[tuple[Query, Path], int] = {}
    for job in jobs:
        unique.setdefault(job, len(unique))
    values = list(evaluate(list(unique)))
    if len(values) != len(unique):
        raise ParameterError("evaluate", "one aggregates mapping per job", f"{len(values)} for {len(unique)} jobs")
    return [values[unique[job]] for job in jobs]


# --- faces: each engine's own opening of the file -----------------------------------------------


def engine_face(name: str, *, dtypes: Mapping[str, str] | None = None) -> Evaluate:
    """``evaluate`` through an engine's real ``open(path)`` (engine ``name``: "polars" or "spark";
    ``dtypes`` declared, or every CSV column text) and its exact aggregates, with
    :data:`SELECTION_KEY`. The Spark engine's jobs
    are planned on one opened frame per file and run in a few Spark jobs (:func:`spark_batch`)."""
    from dpwitness.engines import engine_for

    engine = engine_for(name)

    def evaluate(jobs: Sequence[tuple[Query, Path]]) -> list[Aggregates]:
        handles: dict[Path, Any] = {}
        for _, path in jobs:
            if path not in handles:
                handles[path] = engine.open(str(path), dtypes=dtypes)
        if name == "spark":
            return spark_batch(engine, [(query, handles[path]) for query, path in jobs])
        return [engine.aggregate(handles[path], query, selection_key=SELECTION_KEY) for query, path in jobs]

    return evaluate


def spark_batch(
    engine: Any, jobs: Sequence[tuple[Query, Any]], *, selection_key: tuple[int, int, int, int] = SELECTION_KEY
) -> list[Aggregates]:
    """The Spark engine's exact aggregates of each (query, opened table) in a few Spark jobs.

    Each plan is the engine's own (``plan``, what ``aggregate`` collects), tagged with its job
    number; plans of one output schema are unioned (balanced, so each union is analysed once,
    over its own inputs) and collected once, and the rows read back by the engine's ``read``: a
    Spark job costs about a second whatever its size, so one ``collect`` runs hundreds of plans.
    Also the library sweep's Spark replay (tests/witness/test_sensitivity_library.py). ``selection_key``
    (four 64-bit words, default :data:`SELECTION_KEY`) keys contribution bounding, the same for D and D′.
    """
    from pyspark.sql import functions as F

    by_schema: dict[str, list[Any]] = {}
    for number, (query, handle) in enumerate(jobs):
        tagged = engine.plan(handle, query, selection_key=selection_key).withColumn("__job", F.lit(number))
        by_schema.setdefault(tagged.schema.simpleString(), []).append(tagged)
    rows: dict[int, list[Any]] = {number: [] for number in range(len(jobs))}
    for plans in by_schema.values():
        while len(plans) > 1:
            plans = [a.union(b) for a, b in zip(plans[::2], plans[1::2], strict=False)] + plans[len(plans) - len(plans) % 2 :]
        for row in plans[0].collect():
            rows[row["__job"]].append(tuple(row)[:-1])
    return [engine.read(query, rows[n], untyped=handle.untyped) for n, (query, handle) in enumerate(jobs)]


def frame_face(load: Callable[[Path], Any], *, engine: str = "polars") -> Evaluate:
    """``evaluate`` through a loader of the caller's (e.g. the service's ``load_table``): ``load``
    turns a path into a frame, and the engine computes the exact aggregates on that frame."""
    from dpwitness.engines import engine_for

    chosen = engine_for(engine)

    def evaluate(jobs: Sequence[tuple[Query, Path]]) -> list[Aggregates]:
        frames: dict[Path, Any] = {}
        for _, path in jobs:
            if path not in frames:
                frames[path] = chosen.open(load(path))
        return [chosen.aggregate(frames[path], query, selection_key=SELECTION_KEY) for query, path in jobs]

    return evaluate


__all__ = [
    "FRESH_UNIT",
    "SELECTION_KEY",
    "FileChange",
    "FileSearchResult",
    "csv_changes",
    "engine_face",
    "file_search",
    "frame_face",
    "hostile_lines",
    "parquet_changes",
    "sample_rows",
    "spark_batch",
]
