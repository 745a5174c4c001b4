"""The OpenDP adapter (0.16): a hook on every measurement's invocation.

What the hook sees: each call of a :class:`opendp.mod.Measurement` (``m(arg)`` or
``m.invoke(arg)``). For a chain ``transformation >> measurement`` (built by
``make_chain_mt``, which ``>>`` uses), the value before noise is the transformation's output on
``arg`` (computed by OpenDP) and the declared Δ is the transformation's stability map at the
neighbours' distance (symmetric distance: 1 under add-remove, 2 under replace-one; 1 for the
change-one metrics); the declared ε is the inner measurement's privacy map at that Δ. For a bare
measurement on a value (``make_laplace(atom_domain, absolute_distance, scale)``), the value is
``arg`` and the declared Δ is the largest input distance its privacy map sends to at most the
claimed ε.

Contract: input domain: ``arg`` must be a member of the measurement's input domain (OpenDP does
not check it at invocation; a value outside, e.g. NaN or a value beyond declared bounds, is
``Unsupported``, never a bug); size: float sums of unknown size subsample above 2²⁰ rows (a
randomised transformation), so tables stay ≤ 2²⁰ rows; randomness: only the measurement's noise
below that size.
"""

from __future__ import annotations

from typing import Any

from dpwitness.targets.hooks import Adapter, Unsupported, active, declared_distance, largest_distance, noise_call, register

#: OpenDP's float sums of unknown size sample 2²⁰ rows of a larger input (a randomised transformation).
SIZE_LIMIT = 2**20


class OpenDPAdapter(Adapter):
    name = "opendp"
    module = "opendp"
    distribution = "opendp"
    contract = (
        "input: a member of the measurement's input domain (checked before each call; outside it: Unsupported); "
        "size: ≤ 2^20 rows (float sums of unknown size subsample above it: randomised); randomness: only the noise; "
        "noise: exact (sampled on the grid 2^k in exact arithmetic, rounded once to the float: no porous support)"
    )
    max_rows = SIZE_LIMIT
    exact_noise = True  # OpenDP's documented samplers: discrete noise on 2^k (k = -1074 for f64 by default), one rounding

    def install(self) -> None:
        import opendp.combinators as combinators
        import opendp.mod as mod

        chain_mt = combinators.make_chain_mt

        def make_chain_mt(measurement1: Any, transformation0: Any) -> Any:
            chained = chain_mt(measurement1, transformation0)
            chained._dpw_parts = (transformation0, measurement1)
            return chained

        call, invoke = mod.Measurement.__call__, mod.Measurement.invoke
        self.patch(combinators, "make_chain_mt", make_chain_mt)
        self.patch(mod.Measurement, "__call__", self._hook(call))
        self.patch(mod.Measurement, "invoke", self._hook(invoke))

    def repro_hook(self) -> str:
        return """
import sys
import opendp.combinators as _combinators
import opendp.mod as _mod

CALLS = []
_chain_mt = _combinators.make_chain_mt


def _remembered_chain(measurement1, transformation0):
    chained = _chain_mt(measurement1, transformation0)
    chained._parts = (transformation0, measurement1)
    return chained


def _unnoised_call(measurement, arg):
    frame = sys._getframe(1)
    parts = getattr(measurement, "_parts", None)
    value = parts[0](arg) if parts is not None else arg
    declared = parts[0].map(1) if parts is not None else None
    CALLS.append((f"{frame.f_code.co_filename}:{frame.f_lineno}", str(measurement.output_measure), declared, value))
    return value


_combinators.make_chain_mt = _remembered_chain
_mod.Measurement.__call__ = _unnoised_call
_mod.Measurement.invoke = _unnoised_call
"""

    def _hook(self, original: Any) -> Any:
        adapter = self

        def invoked(measurement: Any, arg: Any) -> Any:
            recorder = active()
            if recorder is None or recorder.depth > 0 or _on_frames(measurement):
                return original(measurement, arg)  # Polars frames: the Polars adapter's hook on release sees them
            domain = measurement.input_domain
            try:
                member = bool(domain.member(arg))
            except Exception:  # a value OpenDP cannot even convert to its domain's type
                member = False
            if not member:
                raise Unsupported(
                    f"the argument is not a member of the OpenDP input domain {domain}", rows=_declared_size(domain)
                )
            if _rows(arg) > SIZE_LIMIT:
                raise Unsupported(f"more than {SIZE_LIMIT} rows: OpenDP's float sums subsample them (randomised)")
            parts = getattr(measurement, "_dpw_parts", None)
            relation = recorder.neighbours
            if parts is not None:
                transformation, inner = parts
                value = transformation(arg)
                d_in = _distance(str(transformation.input_metric), relation)
                norm = _norm(inner)
                sensitivity = declared_distance(transformation.map(d_in), norm) if d_in is not None else None
                privacy = inner.map(transformation.map(d_in)) if d_in is not None else None
                epsilon, delta = _loss(privacy)
                mechanism = f"{_kind(inner)} after {_short(transformation)}"
                replay = lambda: original(inner, value)  # noqa: E731 (the inner noise only)
            else:
                value = arg
                claimed = recorder.epsilon
                sensitivity = _largest_distance(measurement, claimed)
                epsilon, delta = claimed, 0.0
                mechanism = _kind(measurement)
                norm = _norm(measurement)
                replay = lambda: original(measurement, arg)  # noqa: E731
            return noise_call(
                adapter,
                mechanism=mechanism,
                sensitivity=sensitivity,
                epsilon=epsilon,
                delta=delta,
                value=value,
                noised=lambda: original(measurement, arg),
                norm=norm,
                replay=replay,
            )

        return invoked


def _on_frames(measurement: Any) -> bool:
    """A measurement on Polars frames (a Polars context's compositor, a private lazyframe)."""
    return str(measurement.input_domain).startswith(("FrameDomain", "LazyFrameDomain"))


def _declared_size(domain: Any) -> int | None:
    """The size a sized ``vector_domain(…, size=n)`` declares (None: no size, or not a vector domain)."""
    try:
        size = getattr(domain, "size", None)
    except Exception:  # a domain whose descriptor has no size
        return None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def _rows(arg: Any) -> int:
    try:
        return len(arg) if isinstance(arg, list | tuple) else 0
    except TypeError:
        return 0


def _distance(metric: str, relation: str) -> int | None:
    """The input distance of one neighbouring step under ``relation`` in OpenDP's ``metric``."""
    if metric.startswith("SymmetricDistance") or metric.startswith("InsertDeleteDistance"):
        return 2 if relation == "replace-one" else 1
    if metric.startswith("ChangeOneDistance") or metric.startswith("HammingDistance"):
        return 1 if relation == "replace-one" else None
    return None


def _loss(privacy: Any) -> tuple[float | None, float]:
    if privacy is None:
        return None, 0.0
    if isinstance(privacy, tuple):
        return float(privacy[0]), float(privacy[1])
    return float(privacy), 0.0


def _kind(measurement: Any) -> str:
    measure = str(measurement.output_measure)
    return f"measurement → {measure}"


def _short(transformation: Any) -> str:
    return f"transformation {transformation.input_domain} → {transformation.output_domain}"


def _norm(measurement: Any) -> str:
    """The metric of the measurement's input: ``"discrete"`` (``DiscreteDistance``: randomized
    response), ``"l2"`` (Gaussian, zCDP) or ``"l1"``."""
    metric, measure = str(measurement.input_metric), str(measurement.output_measure)
    if metric.startswith("DiscreteDistance"):
        return "discrete"
    return "l2" if "L2" in metric or "Gaussian" in measure or "ZeroConcentrated" in measure else "l1"


def _largest_distance(measurement: Any, epsilon: float | None) -> float | None:
    """The largest input distance d with map(d) ≤ ε (bisection on OpenDP's own privacy map, on
    integers for an integer metric: i32/i64/u32, and ``DiscreteDistance`` whose map takes a u32)."""
    metric = str(measurement.input_metric)
    integer = (
        True if any(t in metric for t in ("i32", "i64", "u32", "u64", "usize")) or metric.startswith("DiscreteDistance") else None
    )
    return largest_distance(measurement.map, epsilon, integer=integer)


ADAPTER = register(OpenDPAdapter())


def non_nan_atoms(dp: Any, kind: Any = float) -> Any:
    """OpenDP's atom domain of ``kind`` without NaN, on every release: ``atom_domain(T=kind, nan=False)``
    where it has the ``nan`` flag, ``atom_domain(T=kind)`` on the older releases (0.12, 0.13: their
    float atoms are not nullable unless asked), which refuse the flag.

    :param dp: the imported ``opendp.prelude``.
    :param kind: the atom type (default float).
    """
    try:
        return dp.atom_domain(T=kind, nan=False)
    except TypeError:
        return dp.atom_domain(T=kind)
