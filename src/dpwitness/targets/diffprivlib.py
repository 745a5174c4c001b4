"""The diffprivlib adapter (IBM's diffprivlib, 0.6): a hook on every mechanism's ``randomise``.

What the hook sees: each ``randomise(value)`` of a class in :mod:`diffprivlib.mechanisms`
(Laplace and its truncated/folded/bounded variants, Geometric, Gaussian, Staircase, …), with the
mechanism's own ``sensitivity``, ``epsilon`` and ``delta`` and the value before noise. The tools
(``tools.sum``, ``mean``, ``var``…) and models (``LinearRegression``, ``GaussianNB``…) all add
noise through these, so their every noise call is seen at its own line.

Contract: the input domain is what diffprivlib accepts (any float, NaN and ±∞ included: the
library takes them and releases what it computes); no size limit; the only randomness is the
mechanisms' noise (``random_state``), so the unnoised function is deterministic.
"""

from __future__ import annotations

from typing import Any

from dpwitness.targets.hooks import Adapter, noise_call, register


class DiffprivlibAdapter(Adapter):
    name = "diffprivlib"
    module = "diffprivlib"
    distribution = "diffprivlib"
    contract = (
        "input: any float (NaN and ±∞ included, as diffprivlib accepts them); no size limit; "
        "randomness: only the mechanisms' noise, so the unnoised function is deterministic"
    )

    def install(self) -> None:
        import diffprivlib.mechanisms as mechanisms
        from diffprivlib.mechanisms.base import DPMachine

        seen: set[type] = set()
        stack: list[type] = [DPMachine]
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            if cls in seen:
                continue
            seen.add(cls)
            original = vars(cls).get("randomise")
            if original is not None and not getattr(original, "__isabstractmethod__", False):
                self.patch(cls, "randomise", self._hook(original))
        if not any(issubclass(getattr(mechanisms, "Laplace", object), cls) for cls in seen):
            raise RuntimeError("diffprivlib.mechanisms.Laplace is not a DPMachine")

    def _hook(self, original: Any) -> Any:
        adapter = self

        def randomise(mech: Any, value: Any = None, *args: Any, **kwargs: Any) -> Any:
            name = type(mech).__name__
            return noise_call(
                adapter,
                mechanism=name,
                sensitivity=getattr(mech, "sensitivity", None),
                epsilon=getattr(mech, "epsilon", None),
                delta=getattr(mech, "delta", 0.0),
                value=value,
                noised=lambda: original(mech, value, *args, **kwargs),
                norm="l2" if "Gaussian" in name else "l1",
                replay=lambda: original(mech, value, *args, **kwargs),
            )

        randomise.__wrapped__ = original  # type: ignore[attr-defined]
        return randomise

    def repro_hook(self) -> str:
        return """
import sys
from diffprivlib.mechanisms.base import DPMachine

CALLS = []


def _unnoised(cls):
    def randomise(mech, value=None, *args, **kwargs):
        frame = sys._getframe(1)
        site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        CALLS.append((site, type(mech).__name__, getattr(mech, "sensitivity", None), value))
        return value
    return randomise


_stack = [DPMachine]
while _stack:
    _cls = _stack.pop()
    _stack.extend(_cls.__subclasses__())
    if "randomise" in vars(_cls):
        _cls.randomise = _unnoised(_cls)
"""


ADAPTER = register(DiffprivlibAdapter())
