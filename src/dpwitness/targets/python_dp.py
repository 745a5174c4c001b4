"""The python-dp adapter (OpenMined's bindings to Google's C++ library, 1.1): hooks on its
algorithms (``Count``, ``BoundedSum``, …) and on its numerical mechanisms.

What the hooks see: ``LaplaceMechanism.add_noise`` / ``GaussianMechanism.add_noise`` with their
ε, δ, sensitivity and value; and every result of an algorithm (``quick_result``, or ``result``
after ``add_entries``/``add_entry``), whose noise is added inside C++. For those, the value
before noise is computed by the library itself: the same C++ algorithm, built with the same
bounds and contribution limits and fed the same entries, at ε = 10²⁰⁰ (noise of scale Δ·10⁻²⁰⁰,
below every float's resolution here). Declared Δ: ``Count`` l0·l∞; ``BoundedSum``
l0·l∞·max(|lower|, |upper|) (add-remove; under replace-one upper − lower when it is larger);
other algorithms declare no Δ the hook can read (their noise calls are audited, not searched).

Contract: input: any float (the library clamps to its bounds and skips NaN itself); an ``"int"``
algorithm takes 32-bit integers (its C++ type: the bindings refuse others with a TypeError, which is
the library's refusal, not the adapter's); no size limit; randomness: only the noise (inside C++),
so the unnoised function is deterministic.
"""

from __future__ import annotations

from typing import Any

from dpwitness.targets.hooks import Adapter, Unsupported, active, noise_call, register

#: ε of the shadow algorithm that computes the value before noise.
SHADOW_EPSILON = 1e200


class PythonDPAdapter(Adapter):
    name = "python-dp"
    module = "pydp"
    distribution = "python-dp"
    contract = (
        "input: any float (python-dp clamps to the declared bounds and skips NaN itself), 32-bit integers for an "
        "'int' algorithm; no size limit; "
        "randomness: only the noise, added in C++ (the value before noise is the same C++ algorithm at ε = 1e200)"
    )

    def install(self) -> None:
        from pydp._pydp import _algorithms
        from pydp.algorithms import _algorithm
        from pydp.algorithms.numerical_mechanisms import GaussianMechanism, LaplaceMechanism

        meta = _algorithm.MetaAlgorithm
        init, quick, partial = meta.__init__, meta.quick_result, meta.result
        add_entries, add_entry = meta.add_entries, meta.add_entry
        adapter = self
        private = "_MetaAlgorithm__algorithm"

        def __init__(algo: Any, **kwargs: Any) -> None:
            init(algo, **kwargs)
            algo._dpw_kwargs = {k: v for k, v in kwargs.items() if k != "dtype" and v is not None}
            algo._dpw_entries = []

        def shadow(algo: Any) -> Any:
            cls = type(getattr(algo, private))
            return cls(**{**algo._dpw_kwargs, "epsilon": SHADOW_EPSILON})

        def declared(algo: Any) -> tuple[float | None, tuple[float, float] | None]:
            kw = getattr(algo, "_dpw_kwargs", {})
            scale = float(kw.get("l0_sensitivity", 1)) * float(kw.get("linf_sensitivity", 1))
            kind = type(algo).__name__
            if kind == "Count":
                return scale, None
            if kind == "BoundedSum" and "lower_bound" in kw and "upper_bound" in kw:
                low, high = float(kw["lower_bound"]), float(kw["upper_bound"])
                recorder = active()
                relation = recorder.neighbours if recorder is not None else "add-remove"
                per_record = (high - low) if relation == "replace-one" else max(abs(low), abs(high))
                return scale * per_record, (low, high)
            return None, None

        def call(algo: Any, entries: list[Any] | None, noised: Any) -> Any:
            if active() is None or not hasattr(algo, "_dpw_kwargs"):
                return noised()
            delta_, bounds = declared(algo)
            inner = type(getattr(algo, private)).__name__
            data = list(algo._dpw_entries) if entries is None else entries
            try:
                value = shadow(algo).result(data)
            except TypeError as error:  # the C++ type refuses an entry (the bindings' message quotes them all)
                raise Unsupported(f"python-dp's {inner} refuses entries outside its C++ type") from error
            return noise_call(
                adapter,
                mechanism=f"{type(algo).__name__} (C++ {inner})",
                sensitivity=delta_,
                epsilon=algo.epsilon,
                delta=algo.delta,
                value=value,
                noised=noised,
                bounds=bounds,
                replay=_replay(algo, private, data, delta_, value),
                site=f"pydp C++ {inner}.Result",
            )

        def quick_result(algo: Any, data: Any) -> Any:
            if active() is None:
                return quick(algo, data)
            return call(algo, list(data), lambda: quick(algo, data))

        def result(algo: Any, *args: Any, **kwargs: Any) -> Any:
            return call(algo, None, lambda: partial(algo, *args, **kwargs))

        def add_entries_(algo: Any, data: Any) -> Any:
            if hasattr(algo, "_dpw_entries"):
                algo._dpw_entries.extend(data)
            return add_entries(algo, data)

        def add_entry_(algo: Any, value: Any) -> Any:
            if hasattr(algo, "_dpw_entries"):
                algo._dpw_entries.append(value)
            return add_entry(algo, value)

        self.patch(meta, "__init__", __init__)
        self.patch(meta, "quick_result", quick_result)
        self.patch(meta, "result", result)
        self.patch(meta, "add_entries", add_entries_)
        self.patch(meta, "add_entry", add_entry_)
        for mechanism, norm in ((LaplaceMechanism, "l1"), (GaussianMechanism, "l2")):
            self.patch(mechanism, "add_noise", self._mechanism_hook(mechanism.add_noise, norm))
        del _algorithms

    def _mechanism_hook(self, original: Any, norm: str) -> Any:
        adapter = self

        def add_noise(mech: Any, value: Any, *args: Any) -> Any:
            sensitivity = getattr(mech, "l2_sensitivity", None) if norm == "l2" else getattr(mech, "sensitivity", None)
            return noise_call(
                adapter,
                mechanism=type(mech).__name__,
                sensitivity=sensitivity,
                epsilon=mech.epsilon,
                delta=getattr(mech, "delta", 0.0),
                value=value,
                noised=lambda: original(mech, value, *args),
                norm=norm,
                replay=lambda: original(mech, value, *args),
            )

        return add_noise

    def repro_hook(self) -> str:
        return """
import sys
from pydp.algorithms import _algorithm
from pydp.algorithms.numerical_mechanisms import LaplaceMechanism, GaussianMechanism

CALLS = []
_init = _algorithm.MetaAlgorithm.__init__


def _keep_kwargs(algo, **kwargs):
    _init(algo, **kwargs)
    algo._kwargs = {k: v for k, v in kwargs.items() if k != "dtype" and v is not None}


def _unnoised_result(algo, data):
    # the same C++ algorithm at epsilon = 1e200: the value before noise, computed by the library
    cls = type(algo._MetaAlgorithm__algorithm)
    frame = sys._getframe(1)
    value = cls(**{**algo._kwargs, "epsilon": 1e200}).result(list(data))
    CALLS.append((f"{frame.f_code.co_filename}:{frame.f_lineno}", type(algo).__name__, None, value))
    return value


def _unnoised_add_noise(mech, value, *args):
    frame = sys._getframe(1)
    CALLS.append((f"{frame.f_code.co_filename}:{frame.f_lineno}", type(mech).__name__, getattr(mech, "sensitivity", None), value))
    return value


_algorithm.MetaAlgorithm.__init__ = _keep_kwargs
_algorithm.MetaAlgorithm.quick_result = _unnoised_result
LaplaceMechanism.add_noise = _unnoised_add_noise
GaussianMechanism.add_noise = _unnoised_add_noise
"""


def _replay(algo: Any, private: str, data: list[Any], sensitivity: float | None, value: Any) -> Any:
    """Only the noise: python-dp's own LaplaceMechanism at the algorithm's ε and Δ on the frozen
    value (Count and BoundedSum add exactly this noise); else the whole algorithm once more."""
    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

    if sensitivity is not None and sensitivity > 0 and not algo.delta:
        mechanism = LaplaceMechanism(epsilon=algo.epsilon, sensitivity=sensitivity)
        return lambda: mechanism.add_noise(float(value))
    return lambda: type(getattr(algo, private))(**algo._dpw_kwargs).result(data)


ADAPTER = register(PythonDPAdapter())
