"""Reproduction scripts: a finding written as a standalone Python script that shows it without dpwitness's search."""

from __future__ import annotations

import inspect
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpwitness.targets.check.probe import UnnoisedRunner
from dpwitness.targets.hooks import NoiseCall
from dpwitness.witness.sensitivity import RELATIVE_TOLERANCE
from dpwitness.witness.structured import Runs

if TYPE_CHECKING:
    from dpwitness.targets.check.report import Finding
    from dpwitness.witness.audit import AuditResult

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


def _recording_head(runner: UnnoisedRunner, library: str, columns: Mapping[str, Any], what: str) -> str:
    """The start of a script that runs the function with ``library``'s noise recorded and removed: its
    docstring (``what`` it reproduces), imports, the adapter's recording hook (``CALLS``), the
    function and ``table(runs)``."""
    adapter = next(a for a in runner.adapters if a.name == library)
    return (
        f'"""Reproduces a dpwitness finding: {what}\n'
        'Needs only the library (and polars, numpy). Exit status 1 when the bug shows."""\n'
        "import math\nimport sys\n\nimport numpy as np\nimport polars as pl\n"
        + adapter.repro_hook()
        + _function_source(runner.fn)
        + _table_code(list(columns), _schema(columns))
    )


def repro_script(
    runner: UnnoisedRunner, call: NoiseCall, key: str, d: Runs, d_prime: Runs, declared: float, columns: Mapping[str, Any]
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
    index = int(key.split(" ", 1)[0][1:]) - 1
    return _recording_head(
        runner,
        call.library,
        columns,
        f"{call.library} {call.version}, {call.mechanism} at {_site_name(call.site)}.\n\n"
        f"The value this noise call receives moves by more than the Δ = {declared!r} it declares.",
    ) + textwrap.dedent(
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
                # the value's numbers by position (bytes: their bits; a dict: by key; a frame: its
                # columns of numbers, by name); None: not numbers
                if hasattr(value, "columns") and len(getattr(value, "shape", ())) == 2:
                    columns = {{str(name): numbers(list(value[name])) for name in value.columns}}
                    return {{(name, *k): v for name, inner in columns.items() if inner is not None for k, v in inner.items()}}
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


def calls_script(runner: UnnoisedRunner, finding: Finding, columns: Mapping[str, Any]) -> str:
    """A standalone script (the library, polars and numpy only) showing a ``noise-calls`` or ``shape``
    finding: it runs the function with the noise removed on both tables and compares the noise calls'
    transcripts (each call's site, mechanism and declared Δ; for a shape finding, its value's length or
    shape too); exit status 1 (BUG) when they differ.

    :param runner: the check's runner: its ``fn`` (whose source is copied into the script) and its
        adapters (the one named by ``finding.library`` supplies the recording hook).
    :param finding: the finding, with its tables D and D′.
    :param columns: the checked columns (as for ``check``), in the order the tables use.
    """
    what = "length or shape of a noise call's value" if finding.kind == "shape" else "noise calls"
    return _recording_head(
        runner,
        finding.library,
        columns,
        f"{finding.library} {finding.version}, the {what} differ between two\nneighbouring tables, whatever the noise.\n",
    ) + textwrap.dedent(
        f"""
            D = {_runs_literal(finding.d)}
            D_PRIME = {_runs_literal(finding.d_prime)}
            SHAPES = {finding.kind == "shape"!r}


            def shape(value):
                if isinstance(value, (bytes, bytearray, str)):
                    return (type(value).__name__, len(value))
                if isinstance(value, dict):
                    return ("dict", tuple(sorted(map(repr, value))))
                return ("shape", tuple(np.shape(value))) if hasattr(value, "shape") or isinstance(value, (list, tuple)) else ()


            def transcript(runs):
                CALLS.clear()
                globals().get("PIN", lambda: None)()  # the library's own randomness, pinned (if it has any)
                fn(table(runs))
                return [(site, mechanism, declared, *(shape(value) if SHAPES else ()))
                        for site, mechanism, declared, value in CALLS]


            a, b = transcript(D), transcript(D_PRIME)
            rows = [sum(times for _, times in runs) for runs in (D, D_PRIME)]
            print(f"{{len(a)}} noise call(s) on D ({{rows[0]}} rows), {{len(b)}} on D' ({{rows[1]}} rows)")
            for number, (x, y) in enumerate(zip(a, b), start=1):
                if x != y:
                    print(f"first difference at call #{{number}}: {{x!r}} on D, {{y!r}} on D'")
                    break
            if a != b:
                print("BUG: the noise calls' transcript differs between neighbouring tables")
                sys.exit(1)
            print("not reproduced")
            """
    )


#: The script's event, as code run both by the check (to choose it) and by the script (to measure it):
#: ``("shape", shapes)`` (the output's structure: kinds, lengths, a dict's keys), ``("value", reprs)``
#: (the exact output) or ``("above" | "below", j, t)`` (coordinate j of its numbers against t).
EVENT_CODE = '''
def plain(output):
    """An output with numpy's types made Python's, a dict's keys in order and a frame as its columns."""
    if hasattr(output, "columns") and len(getattr(output, "shape", ())) == 2 and not isinstance(output, np.ndarray):
        return {str(name): plain(list(output[name])) for name in sorted(output.columns, key=repr)}
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
    if isinstance(value, bytes):  # a bit vector: its bits, little-endian within each byte
        return [float(byte >> k & 1) for byte in value for k in range(8)]
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
    runner: UnnoisedRunner,
    d: Runs,
    d_prime: Runs,
    columns: Mapping[str, Any],
    schema: Mapping[str, Any],
    result: AuditResult,
    event: ScriptEvent | None = None,
    delta: float = 0.0,
) -> str:
    """A standalone script (the library, polars and numpy alone) that samples the function on both
    tables, counts the runs in ``event`` on each and exits 1 (printing BUG) when the ratio of the
    two rates, the favoured table's over the other's, exceeds e^ε (for an (ε, δ) claim: when the
    favoured rate exceeds e^ε times the other by more than δ); else 0 ("not reproduced").

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
    :param delta: the δ of an (ε, δ) claim: the script exits 1 when the favoured table's rate
        exceeds e^ε times the other's by more than δ (default 0: when their ratio exceeds e^ε).
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
            DELTA = {delta!r}
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
        gap = (likelier - math.exp(EPSILON) * other) / SAMPLES  # above δ: the (ε, δ) claim fails on EVENT
        if DELTA:
            print(f"rate gap (the favoured rate minus e^ε times the other) {{gap:.4g}} vs δ = {{DELTA:.4g}}")
        if gap > DELTA:
            print(
                "BUG: the event's rate on one table exceeds e^ε times its rate on the neighbour by more than δ"
                if DELTA
                else "BUG: the event is more than e^ε times likelier on one table than on its neighbour"
            )
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
