"""The adapter for OpenDP's Polars context (0.16): a hook on ``LazyFrameQuery.release``.

OpenDP's Polars plugin adds its noise inside Rust when the released ``OnceFrame`` is collected,
so no Python noise primitive is called per value. The hook sits where the user hands a query to
OpenDP: ``context.query()…release()`` (``opendp.extras.polars.LazyFrameQuery.release``), with
``Context.compositor`` remembering the data and margins it was given and
``make_private_lazyframe`` remembering how each measurement was built; a private lazyframe
invoked directly (``m(lf)``) is seen at ``Measurement.__call__``/``invoke``, its margins read off
the ``with_margin`` calls that built its input domain.

What the hook sees, per release: OpenDP's own plan, resolved as OpenDP resolves it (the global
scale its binary search found) and summarised by ``summarize_polars_measurement`` (one row per
noised aggregate: column, aggregate, distribution, scale). Each summarised column becomes one
noise call:

- the value before noise: the same plan built by ``make_private_lazyframe`` at global scale 0
  (OpenDP computes the clipped, filled, grouped aggregate; only the noise is zero), run on the
  same data; grouped releases give a vector, one value per group, sorted by the group keys;
- the declared Δ (L1 for Laplace, L2 for Gaussian): OpenDP scales each column's noise as
  global scale × the column's sensitivity at one contribution, so Δ = scale / global scale,
  times the growth of OpenDP's privacy map from one contribution to the neighbours' distance
  (symmetric distance 1 add-remove, 2 replace-one). The identity ε(1) = columns / global scale
  (ρ(1) = columns / 2·global scale² for Gaussian noise) is checked on OpenDP's map first; when it
  fails (a scale set by hand on an expression; with a single noised column Δ is then scale ×
  OpenDP's map at the neighbours' distance, Gaussian: scale·√(2ρ)) or the column is a post-processed combination of
  several noised aggregates (``dp.mean``: a noisy sum over a noisy length), or its noise is not
  additive (quantiles), the call declares no Δ (audited, not searched);
- ε: the column's share, Δ / scale (Gaussian: ρ = Δ² / 2·scale², reported as ε = none);
- replay: OpenDP's own ``make_laplace``/``make_gaussian`` on the frozen vector at the column's
  scale (the same distributions as the plugin's).

Contract: input: the table's schema (the context infers the domain from it); the margins
declare what OpenDP trusts without checking: a table with a group (or, for ``by=()``, the table)
longer than ``max_length``, or more groups than ``max_groups``, is ``Unsupported``; a margin's
``invariant`` (``"keys"``: the key set is not protected; ``"lengths"``: nor the group lengths)
must be the same on both neighbours, so a pair on which it differs is outside the contract
(skipped, not judged). Size: the table stays within the ``by=()`` margin's ``max_length``.
Randomness: only the noise, except key-set selection: a release whose groups are chosen by a
noisy threshold (no invariant keys, δ > 0) is randomised inside Rust and cannot be pinned, so it
is ``Unsupported`` (declare the keys invariant, or join a public key set with ``with_keys``);
privacy units by identifier (``dp.polars.Bound``, truncation that samples) are ``Unsupported``
(the check's neighbours differ by one record).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dpwitness.targets.hooks import Adapter, AdapterError, Unsupported, active, noise_call, register
from dpwitness.targets.opendp import _distance

#: The aggregates' distributions whose noise is additive with a scale (Laplace: L1, Gaussian: L2).
ADDITIVE = {"Integer Laplace": "l1", "Float Laplace": "l1", "Integer Gaussian": "l2", "Float Gaussian": "l2"}


class OpenDPPolarsAdapter(Adapter):
    name = "opendp-polars"
    module = "opendp"
    distribution = "opendp"
    contract = (
        "input: the table's schema; margins' max_length/max_groups respected (otherwise Unsupported), "
        "margins' invariants (keys, lengths) equal on both neighbours (otherwise the pair is outside the contract); "
        "size: ≤ the by=() margin's max_length; randomness: only the noise (key-set selection by a noisy threshold: "
        "Unsupported); noise: exact (OpenDP's samplers, as for its measurements)"
    )
    exact_noise = True  # the plugin samples with OpenDP's own exact samplers (discrete noise on 2^k)

    def importable(self) -> bool:
        """OpenDP with its Polars API, and polars itself (an OpenDP without them has no Polars context)."""
        import importlib.util

        try:
            return all(importlib.util.find_spec(name) is not None for name in ("polars", "opendp", "opendp.extras.polars"))
        except (ImportError, ValueError):
            return False

    def install(self) -> None:
        import opendp.context as context_module
        import opendp.extras.polars as polars_module
        import opendp.measurements as measurements_module
        import opendp.mod as mod

        make_lazyframe = polars_module.make_private_lazyframe
        self._make_lazyframe = make_lazyframe

        def make_private_lazyframe(*args: Any, **kwargs: Any) -> Any:
            measurement = make_lazyframe(*args, **kwargs)
            measurement._dpw_lazyframe = _arguments(args, kwargs)
            return measurement

        compositor = context_module.Context.compositor

        def remembering_compositor(data: Any, *args: Any, **kwargs: Any) -> Any:
            context = compositor(data, *args, **kwargs)
            context._dpw_data = data
            context._dpw_margins = kwargs.get("margins", args[5] if len(args) > 5 else None)
            return context

        self._resolved: dict[tuple[Any, ...], Any] = {}
        release = polars_module.LazyFrameQuery.release
        self._release_line = f"opendp/extras/polars/__init__.py:{release.__code__.co_firstlineno}"
        self.patch(polars_module, "make_private_lazyframe", make_private_lazyframe)
        self.patch(measurements_module, "make_private_lazyframe", make_private_lazyframe)
        for method in ("__call__", "invoke"):  # wraps whatever is there (the OpenDP adapter's hook passes frames on)
            self.patch(mod.Measurement, method, self._invocation_hook(getattr(mod.Measurement, method)))
        self.patch(context_module.Context, "compositor", staticmethod(remembering_compositor))
        self.patch(polars_module.LazyFrameQuery, "release", self._hook(release))

    def repro_hook(self) -> str:
        return """
import opendp.context as _context
import opendp.extras.polars as _polars
import opendp.measurements as _measurements
import opendp.mod as _mod
from opendp.accuracy import summarize_polars_measurement as _summarize

CALLS = []
_make = _polars.make_private_lazyframe
_compositor = _context.Context.compositor
_NAMES = ("input_domain", "input_metric", "output_measure", "lazyframe", "global_scale", "threshold")


def _remembered_lazyframe(*args, **kwargs):
    measurement = _make(*args, **kwargs)
    measurement._args = {**dict(zip(_NAMES, args)), **kwargs}
    return measurement


def _remembered_compositor(data, *args, **kwargs):
    context = _compositor(data, *args, **kwargs)
    context._data = data
    return context


class _Frame:
    def __init__(self, frame):
        self.frame = frame

    def collect(self):
        return self.frame


def _unnoised(measurement, data):
    # OpenDP's own plan at global scale 0: the aggregates before noise, one call per noised column
    rows = _summarize(measurement).to_dicts()
    frame = _make(**{**measurement._args, "global_scale": 0.0})(data).collect()
    keys = [name for name in frame.columns if name not in {row["column"] for row in rows}]
    ordered = frame.sort(keys, nulls_last=True) if keys else frame
    for column in dict.fromkeys(row["column"] for row in rows):  # one call per released column
        parts = [row for row in rows if row["column"] == column]
        mechanism = " and ".join(f"{row['distribution']} on {row['aggregate']} of {column!r}" for row in parts)
        declared = parts[0]["scale"] / (measurement._args.get("global_scale") or 1.0)  # for reading only
        CALLS.append(("LazyFrameQuery.release / Measurement.__call__", mechanism, declared, ordered[column].to_list()))
    return _Frame(frame)


def _unnoised_release(query):
    inner = object.__getattribute__(query, "_query")
    return _unnoised(object.__getattribute__(query, "resolve")(), inner._context._data)


_call = _mod.Measurement.__call__


def _unnoised_call(measurement, data):  # a private lazyframe invoked directly
    if getattr(measurement, "_args", None) is None:
        return _call(measurement, data)
    return _unnoised(measurement, data)


_polars.make_private_lazyframe = _remembered_lazyframe
_measurements.make_private_lazyframe = _remembered_lazyframe
_context.Context.compositor = staticmethod(_remembered_compositor)
_polars.LazyFrameQuery.release = _unnoised_release
_mod.Measurement.__call__ = _unnoised_call
_mod.Measurement.invoke = _unnoised_call
"""

    def _hook(self, original: Any) -> Any:
        adapter = self

        def released(query: Any) -> Any:
            recorder = active()
            if recorder is None or recorder.depth > 0:
                return original(query)
            inner = object.__getattribute__(query, "_query")
            context = inner._context
            if context is None or not hasattr(context, "_dpw_data"):
                raise AdapterError("opendp-polars adapter: the query's Context was not made while the hooks were installed")
            key = _plan_key(query, inner, context)
            measurement = adapter._resolved.get(key) if key is not None else None
            if measurement is None:  # OpenDP's own plan (its refusals raise here, before any data is read)
                measurement = object.__getattribute__(query, "resolve")()
                if key is not None:
                    if len(adapter._resolved) >= 64:
                        adapter._resolved.pop(next(iter(adapter._resolved)))
                    adapter._resolved[key] = measurement
            spend: Callable[[], Any] = functools.partial(context, measurement)  # the budget, spent as without the hook
            return adapter._record(recorder, measurement, context._dpw_data, context._dpw_margins, spend)

        return released

    def _invocation_hook(self, original: Any) -> Any:
        def invoked(measurement: Any, data: Any) -> Any:
            return self._invoked(measurement, data, original=original)

        return invoked

    def _invoked(self, measurement: Any, data: Any, *, original: Any) -> Any:
        """A private lazyframe measurement invoked directly (``m(lf)``, outside a context)."""
        recorder = active()
        if recorder is None or recorder.depth > 0 or not hasattr(measurement, "_dpw_lazyframe"):
            return original(measurement, data)
        margins = _domain_margins(measurement._dpw_lazyframe.get("input_domain"))
        spend = functools.partial(original, measurement, data)
        return self._record(
            recorder, measurement, data, margins, spend, site="opendp/mod.py: Measurement.__call__ (a private lazyframe)"
        )

    def _record(
        self, recorder: Any, measurement: Any, data: Any, margins: Any, spend: Callable[[], Any], site: str = ""
    ) -> Released:
        """Record one noise call per released column, then release as OpenDP would (``spend``)."""
        try:
            found = self._calls(measurement, data, margins, recorder.neighbours)
        except (Unsupported, AdapterError):
            raise
        except Exception as error:
            raise AdapterError(f"opendp-polars adapter: could not read the release ({type(error).__name__}: {error})") from error
        spent = spend()
        noisy = found["frame"] if recorder.mode == "unnoised" else spent.collect()
        ordered = noisy.sort(found["keys"], nulls_last=True) if found["keys"] else noisy
        for call in found["calls"]:
            noise_call(
                self,
                mechanism=call["mechanism"],
                sensitivity=call["sensitivity"],
                epsilon=call["epsilon"],
                delta=0.0,
                value=call["value"],
                noised=functools.partial(_released_column, ordered, call["column"]),
                norm=call["norm"],
                replay=call["replay"],
                invariant=found["invariant"],
                site=site or self._release_line,
            )
        return Released(noisy)

    def _calls(self, measurement: Any, data: Any, margins: Any, relation: str) -> dict[str, Any]:
        import polars as pl
        from opendp.accuracy import summarize_polars_measurement

        arguments = getattr(measurement, "_dpw_lazyframe", None)
        if arguments is None:
            raise AdapterError("opendp-polars adapter: the measurement was not built by make_private_lazyframe")
        table = data.collect() if isinstance(data, pl.LazyFrame) else pl.DataFrame(data)
        invariant, max_rows = _margins_contract(table, margins)
        self.max_rows = max_rows
        metric = str(measurement.input_metric)
        d = _distance(metric, relation)
        if d is None:
            raise Unsupported(f"privacy unit {metric}: the check's neighbours differ by one record, not by an identifier")
        if not hasattr(measurement, "_dpw_summary"):  # data-independent: once per resolved plan
            measurement._dpw_summary = summarize_polars_measurement(measurement)
            measurement._dpw_zero = self._make_lazyframe(**{**arguments, "global_scale": 0.0})
        summary = measurement._dpw_summary
        if "threshold" in summary.columns or arguments.get("threshold") is not None:
            raise Unsupported(
                "OpenDP selects the released groups with a noisy threshold (randomised inside Rust, cannot be pinned): "
                "declare the keys invariant in a margin, or join a public key set (with_keys)"
            )
        zero = measurement._dpw_zero
        frame = zero(data).collect()
        rows = summary.to_dicts()
        columns = [str(row["column"]) for row in rows]
        keys = [name for name in frame.columns if name not in columns]
        ordered = frame.sort(keys, nulls_last=True) if keys else frame
        scale = arguments.get("global_scale")
        loss_at = _loss(measurement, 1), _loss(measurement, d)
        gaussian = any(ADDITIVE.get(str(row["distribution"])) == "l2" for row in rows)
        readable = _identity_holds(scale, len(rows), loss_at[0], gaussian)
        growth = _growth(loss_at, gaussian)
        calls = []
        for column in dict.fromkeys(columns):  # in the summary's order, one call per released column
            parts = [row for row in rows if str(row["column"]) == column]
            values = ordered[column].to_list()
            if len(parts) > 1:  # e.g. dp.mean: a noisy sum over a noisy length, post-processed by OpenDP
                drawn = " and ".join(f"{p['aggregate']} ({p['distribution']}, scale {float(p['scale']):.6g})" for p in parts)
                mechanism, declared, epsilon, norm, replay = f"{column!r} computed from {drawn}", None, None, "l1", None
            else:
                (row,) = parts
                distribution, noise_scale = str(row["distribution"]), float(row["scale"])
                additive = ADDITIVE.get(distribution)
                declared = epsilon = None
                if additive is not None and readable and scale:
                    declared = noise_scale / float(scale) * growth
                elif additive is not None and len(rows) == 1:  # one noised column: OpenDP's map at d is its loss alone
                    declared = noise_scale * (math.sqrt(2 * loss_at[1]) if additive == "l2" else loss_at[1])
                if declared is not None:
                    epsilon = declared / noise_scale if additive == "l1" and noise_scale > 0 else None
                mechanism = f"{distribution} (scale {noise_scale:.6g}) on {row['aggregate']} of {column!r}"
                norm = additive or "l1"
                replay = _replay(distribution, noise_scale, values, ordered.schema[column]) if additive else None
            calls.append(
                {
                    "column": column,
                    "mechanism": mechanism,
                    "sensitivity": declared,
                    "epsilon": epsilon,
                    "norm": norm,
                    "value": values,
                    "replay": replay,
                }
            )
        return {"frame": frame, "keys": keys, "calls": calls, "invariant": invariant}


class Released:
    """What ``release()`` returns under a recorder: a ``OnceFrame`` look-alike over a computed frame
    (without noise in ``"unnoised"`` mode, OpenDP's noisy release in ``"record"`` mode)."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def collect(self) -> Any:
        return self.frame

    def lazy(self) -> Any:
        return self.frame.lazy()


def _domain_margins(domain: Any) -> list[Any]:
    """The margins a frame domain was given, read off the ``with_margin`` calls that built it."""
    margins: list[Any] = []
    while domain is not None:
        built = getattr(domain, "__opendp_dict__", None) or {}
        kwargs = built.get("__kwargs__", {})
        if kwargs.get("margin") is not None:
            margins.append(kwargs["margin"])
        domain = kwargs.get("frame_domain")
    return margins


def _released_column(frame: Any, column: str) -> tuple[Any, ...]:
    return tuple(frame[column].to_list())


def _plan_key(query: Any, inner: Any, context: Any) -> tuple[Any, ...] | None:
    """What OpenDP's resolution of a query depends on (none of it is data: the plan is built on an
    empty frame of the domain's schema), so that a function called many times resolves once."""
    try:
        plan = object.__getattribute__(query, "polars_plan").serialize()
    except Exception:  # a plan Polars cannot serialise: resolved each time
        return None
    chain = inner._chain
    return (
        plan,
        str(chain[0]),
        str(chain[1]),
        repr(context._dpw_margins),
        str(inner._output_measure),
        repr(inner._d_in),
        repr(inner._d_out),
    )


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    names = ("input_domain", "input_metric", "output_measure", "lazyframe", "global_scale", "threshold")
    return {**dict(zip(names, args, strict=False)), **kwargs}


def _margins_contract(table: Any, margins: Any) -> tuple[tuple[Any, ...] | None, int | None]:
    """Check the margins' declared bounds on ``table`` (Unsupported beyond them); return the
    invariants both neighbours must share, and the table size the by=() margin allows."""
    import polars as pl

    if not margins:
        return None, None
    if isinstance(margins, dict):
        margins = [replace(margin, by=by) for by, margin in margins.items()]
    invariants: list[Any] = []
    max_rows = None
    for margin in margins:
        by = list(margin.by or [])
        lengths = table.group_by(by).len(name="__len") if by else table.select(pl.len().alias("__len"))
        longest = int(lengths["__len"].max() or 0) if lengths.height else 0
        described = f"margin by {[str(b) for b in by]}"
        if margin.max_length is not None:
            if longest > margin.max_length:
                raise Unsupported(f"{described}: a group is longer than its declared max_length {margin.max_length}")
            if not by:
                max_rows = int(margin.max_length)
        if margin.max_groups is not None and by and lengths.height > margin.max_groups:
            raise Unsupported(f"{described}: more groups than its declared max_groups {margin.max_groups}")
        if margin.invariant in ("keys", "lengths") and by:
            ordered = lengths.sort(lengths.columns[:-1], nulls_last=True)
            kept = ordered if margin.invariant == "lengths" else ordered.drop("__len")
            invariants.append((described, margin.invariant, tuple(kept.iter_rows())))
        elif margin.invariant == "lengths":
            invariants.append((described, "lengths", longest))
    return (tuple(invariants) or None), max_rows


def _loss(measurement: Any, d: int) -> float:
    loss = measurement.map(d)
    return float(loss[0] if isinstance(loss, tuple) else loss)


def _identity_holds(scale: Any, columns: int, loss: float, gaussian: bool) -> bool:
    """OpenDP's map at one contribution is what a global scale applied per column's Δ gives."""
    if not scale or not columns or not math.isfinite(loss):
        return False
    expected = columns / (2 * float(scale) ** 2) if gaussian else columns / float(scale)
    return math.isclose(loss, expected, rel_tol=1e-6)


def _growth(loss_at: tuple[float, float], gaussian: bool) -> float:
    """How much Δ grows from one contribution to the neighbours' distance, read off the map."""
    one, d = loss_at
    if one <= 0:
        return 1.0
    return math.sqrt(d / one) if gaussian else d / one


def _replay(distribution: str, scale: float, values: list[Any], dtype: Any) -> Any:
    """Only the noise: OpenDP's own vector mechanism of the same distribution at the column's scale."""
    import opendp.prelude as dp

    dp.enable_features("contrib", "floating-point")
    integer = dtype.is_integer()
    kind = "i64" if integer else float
    atoms = dp.vector_domain(dp.atom_domain(T=kind, nan=None if integer else False))
    frozen = [int(v) if integer else float(v) for v in values if v is not None]
    if "Gaussian" in distribution:
        mechanism = dp.m.make_gaussian(atoms, dp.l2_distance(T=kind), scale)
    else:
        mechanism = dp.m.make_laplace(atoms, dp.l1_distance(T=kind), scale)
    unsigned = integer and not dtype.is_signed_integer()

    def noise() -> Any:
        released = mechanism(frozen)
        return [max(v, 0) for v in released] if unsigned else released  # u32 counts saturate at 0 in OpenDP

    return noise


ADAPTER = register(OpenDPPolarsAdapter())
