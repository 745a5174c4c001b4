"""Noise no adapter covers: draws from ``numpy.random`` and ``random`` made by a library of its own.

A DP library that adds its noise with NumPy directly (``total + np.random.laplace(scale=1 / eps)``,
SmartNoise Synth's ``DPcovariance``, a user's own helper) calls no covered primitive, so the check
used to answer "no covered library touched". This adapter (library name ``numpy.random``) hooks
the draws of the location–scale noise distributions themselves:

* the legacy functions ``numpy.random.laplace``, ``normal``, ``gumbel`` and ``logistic`` (NumPy's
  global ``RandomState``);
* the same methods of every :class:`numpy.random.Generator` that ``numpy.random.default_rng``
  returns while the hooks are installed (a subclass sharing the bit generator it was given:
  ``isinstance(rng, numpy.random.Generator)`` still holds);
* ``random.gauss`` and ``random.normalvariate`` (Python's global generator).

Each draw is a :class:`~dpwitness.targets.hooks.NoiseCall` with **no declared Δ or ε** (the
library states none the hook can read), its ``scale`` (Laplace, Gumbel and logistic: the scale;
normal: σ) and the location as its value. Without noise a draw returns its location (an array of
it for ``size``), so the function's own output is the release without noise: the check searches
that output against the Δ the scale allows at the claimed ε (the pair with the largest shift per
unit of noise) and audits the release on it, black-box. What the hook cannot see: a generator
constructed directly (``Generator(PCG64())``) or fetched before the check began, functions
imported by name before it (``from numpy.random import laplace``), other distributions (uniform
draws, ``integers``, exponential pairs), and draws made inside a covered library's frames (its
noise is its own adapter's, its other randomness its contract's). Draws made while a module is
being imported are not noise on the data and are left alone: SciPy, which diffprivlib imports,
samples its distributions' docstring examples at import, inside the function's first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpwitness.targets.hooks import Adapter, _short, active, noise_call, outside_frames, register, registered

#: The noise distributions hooked: name → the norm its scale's Δ is read in.
DISTRIBUTIONS = {"laplace": "l1", "normal": "l2", "gumbel": "l1", "logistic": "l1"}
#: Python's ``random`` functions hooked (Gaussian draws: mu, sigma).
PYTHON_DRAWS = ("gauss", "normalvariate")


class NumpyRandomAdapter(Adapter):
    """Hooks NumPy's and Python's noise draws made outside every covered library (see the module docstring)."""

    name = "numpy.random"
    module = "numpy"
    distribution = "numpy"
    contract = (
        "input: whatever the library accepts; no size limit; randomness: the hooked draws are the noise (no Δ or ε "
        "declared: audited black-box on the pair with the largest shift per unit of noise); other draws stay random"
    )

    def install(self) -> None:
        import random

        import numpy as np

        self.package_roots = ()  # numpy is a helper, never the library under check
        for method in DISTRIBUTIONS:
            self.patch(np.random, method, self._hook(method, getattr(np.random, method), f"numpy.random.{method}"))

        class HookedGenerator(np.random.Generator):
            """A Generator whose noise draws are recorded while a check runs."""

        for method in DISTRIBUTIONS:
            original = getattr(np.random.Generator, method)
            setattr(HookedGenerator, method, self.guarded(self._method(method, original)))
        original_default_rng = np.random.default_rng

        def default_rng(seed: Any = None) -> Any:
            made = original_default_rng(seed)
            if isinstance(made, HookedGenerator):
                return made
            return HookedGenerator(made.bit_generator)

        self.patch(np.random, "default_rng", default_rng)
        for function in PYTHON_DRAWS:
            self.patch(random, function, self._python_hook(function, getattr(random, function)))

    def _record(self, name: str, loc: Any, scale: Any, size: Any, draw: Callable[[], Any], norm: str) -> Any:
        """Record one draw (when made outside every covered library, in a check that chose this adapter)."""
        import numpy as np

        recorder = active()
        if recorder is None or recorder.depth > 0 or self not in recorder.adapters:
            return draw()
        site, caller, covered = _draw_sites()
        if covered or not site:
            return draw()
        scale_value = float(np.min(np.asarray(scale, dtype=float))) if np.size(scale) else None

        def location() -> Any:  # what the draw returns without its noise: its location, in its shape
            if size is None and np.ndim(loc) == 0:
                return float(loc)
            return np.broadcast_to(np.asarray(loc, dtype=float), size if size is not None else np.shape(loc)).copy()

        return noise_call(
            self,
            mechanism=f"{name} (scale {scale_value:g})" if scale_value is not None else name,
            sensitivity=None,
            epsilon=None,
            delta=0.0,
            value=location(),
            noised=draw,
            unnoised=location,
            norm=norm,
            site=site,
            caller=caller,
            scale=scale_value,
        )

    def _hook(self, method: str, original: Any, name: str) -> Callable[..., Any]:
        norm = DISTRIBUTIONS[method]

        def draw(loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
            return self._record(name, loc, scale, size, lambda: original(loc, scale, size), norm)

        return draw

    def _method(self, method: str, original: Any) -> Callable[..., Any]:
        norm = DISTRIBUTIONS[method]
        adapter = self

        def draw(generator: Any, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
            return adapter._record(f"Generator.{method}", loc, scale, size, lambda: original(generator, loc, scale, size), norm)

        return draw

    def _python_hook(self, function: str, original: Any) -> Callable[..., Any]:
        def draw(mu: float = 0.0, sigma: float = 1.0) -> Any:
            return self._record(f"random.{function}", mu, sigma, None, lambda: original(mu, sigma), "l2")

        return draw


def _draw_sites() -> tuple[str, str, bool]:
    """(the line that drew: the first frame outside dpwitness; the next line in another file: its
    caller; whether the draw is left alone: a covered library's frame is on the stack, which leaves
    the draw to its adapter, or an import is running, whose draws are not noise on the data)."""
    others = (adapter for adapter in registered() if adapter.name != NumpyRandomAdapter.name)
    roots = tuple(root for adapter in others for root in adapter.package_roots if root)
    site = caller = ""
    site_file = ""
    covered = False
    for frame in outside_frames(1):
        filename = frame.f_code.co_filename
        if filename.startswith("<frozen importlib") or any(filename.startswith(root) for root in roots):
            covered = True
            break
        where = f"{_short(filename)}:{frame.f_lineno}"
        if not site:
            site, site_file = where, filename
        elif filename != site_file and not caller:
            caller = where
    return site, caller or site, covered


ADAPTER = register(NumpyRandomAdapter())

__all__ = ["DISTRIBUTIONS", "PYTHON_DRAWS", "NumpyRandomAdapter"]
