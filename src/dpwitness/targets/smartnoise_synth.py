"""The SmartNoise Synth adapter (``smartnoise-synth`` 1.0, ``snsynth``): MWEM, MST and AIM.

What the hooks see. snsynth draws its noise as pure noise and adds it to the value itself
(``y = x + gaussian_noise(σ, size)``, ``actual + self._laplace(1/ε)``; the OpenDP measurement
inside is invoked on 0.0, so a hook on OpenDP would never see the value). The adapter therefore
hooks snsynth's own noise functions at their call sites and reads the value before noise from
the calling frame: MST's and AIM's ``gaussian_noise`` (the marginal ``x``, declared Δ₂ = 1:
both budget each measurement as ρ = Δ²/2σ² with Δ = 1, one record added or removed),
MWEM's ``_laplace`` (the query answer ``actual``, declared Δ₁ = scale·ε = 1). Their
exponential mechanisms (MST's ``exponential_mechanism``, AIM's, MWEM's
``_exponential_mechanism``) are recorded with no Δ the search can use (their quality's
sensitivity is an L∞ bound). It also records, with declared Δ = 0, what a synthesizer takes from
the data **without noise**: the categories (cardinalities) its transformer inferred from the
table when none were declared, the exact row count MST passes to mbi as ``known_total``, the
exact total MWEM starts its synthetic histogram with, and the row count ``sample()`` draws when
called without one.

Contract. Input: categorical (or ordinal) columns whose categories are declared, by passing a
``TableTransformer`` fitted on the public list of categories (otherwise the inferred
categories are recorded as a release without noise, and a changed category set is a finding);
a value outside the declared categories makes the library raise (the pair is skipped);
continuous columns whose bounds the preprocessor infers with ``preprocessor_eps``
(``approx_bounds``: a noisy search) are ``Unsupported``, and so are the synthesizers this adapter
does not hook (the GAN ones, DP-SGD through Opacus and torch; PAC-Synth's Rust noise). Size: the
structured search stays at or below 2¹² rows (snsynth's transformers run a Python loop per
value, and counts have no float-rounding class to find above). Internal randomness: NumPy's
global generator and Python's ``random`` are pinned before every run (both neighbours). The
synthesizers are adaptive: what they measure next depends on what they released so far. In the
unnoised run the adapter fixes that transcript to data-independent values: every noisy
measurement reads 1.0 in each cell (the noise hook returns 1 − x; the value recorded is x), and
every exponential mechanism picks uniformly with the pinned generator, so both neighbours take
the same path and each measurement is searched against its Δ given that path (adaptive
composition: each step must meet its Δ whatever the earlier outputs were).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import random
import sys
from typing import Any

from dpwitness.targets.hooks import Adapter, AdapterError, Unsupported, active, noise_call, outside_frames, register
from dpwitness.targets.opendp import non_nan_atoms

#: The seed NumPy's global generator and Python's ``random`` get before each run (both neighbours).
PINNED_SEED = 20260101
#: The largest table the structured search builds for this library (see the module docstring).
MAX_ROWS = 2**12
#: What each noisy measurement reads in the unnoised run, in every cell (a data-independent transcript).
TRANSCRIPT = 1.0
#: The synthesizers whose noise this adapter hooks (``Synthesizer.create`` names).
COVERED = ("mwem", "mst", "aim")


class SmartNoiseSynthAdapter(Adapter):
    name = "smartnoise-synth"
    module = "snsynth"
    distribution = "smartnoise-synth"
    contract = (
        "input: categorical/ordinal columns with declared categories (a TableTransformer fitted on the public "
        "categories; inferred ones are recorded as a release without noise); continuous columns whose bounds "
        "preprocessor_eps infers, and the GAN/PAC synthesizers, are Unsupported; size: ≤ 2^12 rows searched; "
        "randomness: NumPy's and Python's generators pinned, the adaptive transcript fixed to data-independent values"
    )
    max_rows = MAX_ROWS

    def install(self) -> None:
        import snsynth.base as base
        import snsynth.mwem as mwem
        import snsynth.transform.bin as bin_transform
        import snsynth.transform.minmax as minmax

        # MST and AIM need mbi, which the releases before 1.0.8 took from GitHub only: where it does not
        # import, neither synthesizer can run for the user either, and the others are still hooked.
        mst, aim = _importable("snsynth.mst.mst"), _importable("snsynth.aim.aim")
        classes = [mwem.MWEMSynthesizer]
        for module in (m for m in (mst, aim) if m is not None):
            self.patch(module, "gaussian_noise", self._gaussian(module.gaussian_noise))
        if aim is not None:
            self.patch(aim, "exponential_mechanism", self._aim_choice(aim.exponential_mechanism))
            classes.append(aim.AIMSynthesizer)
        if mst is not None:
            mst_class = mst.MSTSynthesizer
            self.patch(mst_class, "exponential_mechanism", self._mst_choice(vars(mst_class)["exponential_mechanism"]))
            self.patch(mst_class, "MST", self._known_total(vars(mst_class)["MST"]))
            classes.append(mst_class)
        mwem_class = mwem.MWEMSynthesizer
        self.patch(mwem_class, "_laplace", self._laplace(vars(mwem_class)["_laplace"]))
        self.patch(mwem_class, "_exponential_mechanism", self._mwem_choice(vars(mwem_class)["_exponential_mechanism"]))
        self.patch(mwem_class, "_initialize_a", self._initial_total(vars(mwem_class)["_initialize_a"]))
        for cls in classes:
            self.patch(cls, "sample", self._sample(vars(cls)["sample"]))
            self.patch(cls, "fit", _prints_to_stderr(vars(cls)["fit"]))
        self.patch(base.Synthesizer, "_get_train_data", self._train_data(vars(base.Synthesizer)["_get_train_data"]))
        self.patch(base.Synthesizer, "create", self._create(vars(base.Synthesizer)["create"]))
        for module in (minmax, bin_transform):
            self.patch(module, "approx_bounds", _bounds_refused(module.approx_bounds))

    def pin(self) -> None:
        import numpy as np

        np.random.seed(PINNED_SEED)
        random.seed(PINNED_SEED)

    # --- the noise ---------------------------------------------------------------------------

    def _gaussian(self, original: Any) -> Any:
        adapter = self

        def gaussian_noise(sigma: float, size: int | None = None) -> Any:
            import numpy as np

            if active() is None:
                return original(sigma, size)
            x = np.asarray(_caller_local("x", "gaussian_noise"), dtype=float)
            return noise_call(
                adapter,
                mechanism=f"gaussian noise on a marginal (σ = {sigma:.6g})",
                sensitivity=1.0,
                epsilon=None,
                delta=0.0,
                value=x,
                noised=lambda: original(sigma, size),
                unnoised=lambda: (TRANSCRIPT - x).tolist() if size is not None else TRANSCRIPT - float(x),
                norm="l2",
                replay=_replay("gaussian", sigma, x),
            )

        return gaussian_noise

    def _laplace(self, original: Any) -> Any:
        adapter = self

        def laplace(synthesizer: Any, sigma: float) -> Any:
            if active() is None:
                return original(synthesizer, sigma)
            actual = float(_caller_local("actual", "MWEM._laplace"))
            epsilon = float(_caller_local("eps", "MWEM._laplace"))
            return noise_call(
                adapter,
                mechanism=f"laplace noise on a query (scale {sigma:.6g})",
                sensitivity=sigma * epsilon,
                epsilon=epsilon,
                delta=0.0,
                value=actual,
                noised=lambda: original(synthesizer, sigma),
                unnoised=lambda: TRANSCRIPT - actual,
                replay=_replay("laplace", sigma, actual),
            )

        return laplace

    # --- the exponential mechanisms: the library's draw when noised, a pinned uniform pick when not

    def _choice(self, epsilon: Any, qualities: Any, noised: Any, uniform: Any) -> Any:
        return noise_call(
            self,
            mechanism=f"exponential mechanism (ε = {float(epsilon):.6g})",
            sensitivity=None,
            epsilon=float(epsilon),
            delta=0.0,
            value=qualities,
            noised=noised,
            unnoised=uniform,
            skip_frames=3,
        )

    def _mst_choice(self, original: Any) -> Any:
        adapter = self

        def exponential_mechanism(
            synthesizer: Any, q: Any, eps: float, sensitivity: float, prng: Any = None, monotonic: bool = False
        ) -> Any:
            import numpy as np

            generator = np.random if prng is None else prng
            return adapter._choice(
                eps,
                q,
                lambda: original(synthesizer, q, eps, sensitivity, generator, monotonic),
                lambda: generator.choice(np.asarray(q).size),
            )

        return exponential_mechanism

    def _aim_choice(self, original: Any) -> Any:
        adapter = self

        def exponential_mechanism(qualities: Any, epsilon: float, sensitivity: float = 1.0, base_measure: Any = None) -> Any:
            import numpy as np

            keys = list(qualities) if isinstance(qualities, dict) else list(range(np.asarray(qualities).size))
            values = [qualities[k] for k in keys] if isinstance(qualities, dict) else qualities
            return adapter._choice(
                epsilon,
                values,
                lambda: original(qualities, epsilon, sensitivity, base_measure),
                lambda: keys[int(np.random.choice(len(keys)))],
            )

        return exponential_mechanism

    def _mwem_choice(self, original: Any) -> Any:
        adapter = self

        def exponential_mechanism(
            synthesizer: Any, hist: Any, synth_hist: Any, queries: Any, eps: float, measurements: Any, iteration: int
        ) -> Any:
            import numpy as np

            def uniform() -> Any:  # what MWEM itself does with measure_only: a query not measured yet
                return np.random.choice([i for i in range(len(queries)) if i not in measurements])

            return adapter._choice(
                eps,
                math.nan,
                lambda: original(synthesizer, hist, synth_hist, queries, eps, measurements, iteration),
                uniform,
            )

        return exponential_mechanism

    # --- what a synthesizer takes from the data without noise (declared Δ = 0) ------------------

    def _exact(self, what: str, value: Any) -> None:
        noise_call(
            self, mechanism=what, sensitivity=0.0, epsilon=None, delta=0.0, value=value, noised=lambda: value, skip_frames=3
        )

    def _known_total(self, original: Any) -> Any:
        adapter = self

        def mst(synthesizer: Any, data: Any, epsilon: float, delta: float) -> Any:
            if active() is not None:
                adapter._exact("known_total = the exact row count (no noise), passed to mbi's estimation", len(data.df))
            return original(synthesizer, data, epsilon, delta)

        return mst

    def _initial_total(self, original: Any) -> Any:
        adapter = self

        def initialize(synthesizer: Any, histogram: Any, dimensions: Any) -> Any:
            import numpy as np

            if active() is not None:
                adapter._exact("the synthetic histogram starts at the exact total (no noise)", float(np.sum(histogram)))
            return original(synthesizer, histogram, dimensions)

        return initialize

    def _sample(self, original: Any) -> Any:
        adapter = self

        def sample(synthesizer: Any, samples: Any = None, *args: Any, **kwargs: Any) -> Any:
            if samples is None and active() is not None:
                adapter._exact("sample() draws the exact row count (no noise)", synthesizer.num_rows)
            return original(synthesizer, samples, *args, **kwargs)

        return sample

    def _train_data(self, original: Any) -> Any:
        adapter = self

        def get_train_data(synthesizer: Any, data: Any, *ignore: Any, **kwargs: Any) -> Any:
            recorder = active()
            transformer = kwargs.get("transformer")
            declared = transformer is not None and not isinstance(transformer, dict) and transformer.fit_complete
            train = original(synthesizer, data, *ignore, **kwargs)
            if recorder is not None and not declared:
                cards = tuple(synthesizer._transformer.cardinality)
                adapter._exact(f"categories inferred from the data (no noise): cardinalities {cards}", cards)
            return train

        return get_train_data

    def _create(self, original: Any) -> Any:
        def create(cls: Any, synth: Any = None, epsilon: Any = None, *args: Any, **kwargs: Any) -> Any:
            if active() is not None and isinstance(synth, str) and synth.lower() not in COVERED:
                raise Unsupported(f"snsynth's {synth!r} synthesizer is not hooked (covered: {', '.join(COVERED)})")
            return original.__func__(cls, synth, epsilon, *args, **kwargs)

        return classmethod(create)

    def repro_hook(self) -> str:
        return _REPRO_HOOK


def _replay(kind: str, scale: float, value: Any) -> Any:
    """Only the noise, value + noise: OpenDP's Laplace or Gaussian at snsynth's scale, the
    measurement snsynth's ``laplace_noise`` / ``gaussian_noise`` build (there invoked on 0.0 once
    per cell; here once per call on the vector of cells, the same sampler per cell), built once
    at the first replay."""
    import numpy as np

    frozen = np.array(value, dtype=float)
    built: list[Any] = []

    def replay() -> Any:
        if not built:
            import opendp.prelude as dp

            dp.enable_features("floating-point", "contrib")
            make = dp.m.make_gaussian if kind == "gaussian" else dp.m.make_laplace
            atom = non_nan_atoms(dp)
            if frozen.ndim:
                metric = dp.l2_distance(T=float) if kind == "gaussian" else dp.l1_distance(T=float)
                built.append(make(dp.vector_domain(atom), metric, scale))
            else:
                built.append(make(atom, dp.absolute_distance(T=float), scale))
        noise = built[0]([0.0] * frozen.size) if frozen.ndim else built[0](0.0)
        return frozen + np.asarray(noise, dtype=float).reshape(frozen.shape)

    return replay


def _caller_local(name: str, hook: str) -> Any:
    """The variable ``name`` of the library's frame that called the hooked noise function (the
    first frame outside dpwitness: the hook is called through :meth:`Adapter.guarded`'s wrapper)."""
    frame = next(outside_frames(2), None)
    if frame is None or name not in frame.f_locals:
        where = "dpwitness alone" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"
        raise AdapterError(
            f"smartnoise-synth adapter: {hook} was called from {where} "
            f"without a local {name!r} (the value before noise): snsynth's internals are not as expected"
        )
    return frame.f_locals[name]


def _importable(name: str) -> Any:
    """The module ``name``, or None when it (or a library it needs) does not import here."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _prints_to_stderr(original: Any) -> Any:
    """``fit``, with what the library prints (AIM prints as it fits) sent to stderr during a check,
    so that the check's own output (``--json``) stays what it says."""

    def fit(synthesizer: Any, *args: Any, **kwargs: Any) -> Any:
        if active() is None:
            return original(synthesizer, *args, **kwargs)
        with contextlib.redirect_stdout(sys.stderr):
            return original(synthesizer, *args, **kwargs)

    return fit


def _bounds_refused(original: Any) -> Any:
    def approx_bounds(vals: Any, epsilon: float) -> Any:
        if active() is not None:
            raise Unsupported("snsynth infers bounds with approx_bounds (a noisy search): declare the bounds")
        return original(vals, epsilon)

    return approx_bounds


_REPRO_HOOK = """
import importlib
import random
import sys
import snsynth.base as _base
import snsynth.mwem as _mwem


def _importable(name):  # MST and AIM need an mbi that releases before 1.0.8 do not find: hooked where they import
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_mst, _aim = _importable("snsynth.mst.mst"), _importable("snsynth.aim.aim")

CALLS = []  # (site, what, declared Δ, value before noise), in the order the library makes them


def PIN():
    np.random.seed(20260101)
    random.seed(20260101)


def _site(depth=2):
    frame = sys._getframe(depth)
    return frame, f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _gaussian(sigma, size=None):  # records the marginal x; the measurement then reads 1.0 (a fixed transcript)
    frame, site = _site()
    x = np.asarray(frame.f_locals["x"], dtype=float)
    CALLS.append((site, f"gaussian noise on a marginal (σ = {sigma:.6g})", 1.0, x))
    return (1.0 - x).tolist()


def _laplace(self, sigma):
    frame, site = _site()
    actual = float(frame.f_locals["actual"])
    CALLS.append((site, f"laplace noise on a query (scale {sigma:.6g})", sigma * frame.f_locals["eps"], actual))
    return 1.0 - actual


def _uniform(choose):  # an exponential mechanism: recorded, and a pinned uniform pick
    def pick(*args, **kwargs):
        CALLS.append((_site()[1], "exponential mechanism", None, math.nan))
        return choose(*args, **kwargs)
    return pick


def _exact(what, value):  # a value the library takes from the data without noise (declared Δ = 0)
    CALLS.append((_site(3)[1], what, 0.0, value))


_original_initialize = _mwem.MWEMSynthesizer._initialize_a
_original_train_data = _base.Synthesizer._get_train_data


def _mst_total(self, data, epsilon, delta):
    _exact("known_total = the exact row count (no noise)", len(data.df))
    return _original_mst(self, data, epsilon, delta)  # set below, where MST imports


def _initial_total(self, histogram, dimensions):
    _exact("the synthetic histogram starts at the exact total (no noise)", float(np.sum(histogram)))
    return _original_initialize(self, histogram, dimensions)


def _train_data(self, data, *ignore, **kwargs):
    transformer = kwargs.get("transformer")
    declared = transformer is not None and not isinstance(transformer, dict) and transformer.fit_complete
    train = _original_train_data(self, data, *ignore, **kwargs)
    if not declared:
        _exact("categories inferred from the data (no noise)", np.asarray(self._transformer.cardinality, dtype=float))
    return train


def _with_sample(cls):
    original = cls.sample

    def sample(self, samples=None, *args, **kwargs):
        if samples is None:
            _exact("sample() draws the exact row count (no noise)", self.num_rows)
        return original(self, samples, *args, **kwargs)

    cls.sample = sample


_mwem.MWEMSynthesizer._laplace = _laplace
_mwem.MWEMSynthesizer._exponential_mechanism = _uniform(
    lambda self, hist, synth_hist, queries, eps, measurements, i: (
        np.random.choice([q for q in range(len(queries)) if q not in measurements])
    )
)
_mwem.MWEMSynthesizer._initialize_a = _initial_total
_base.Synthesizer._get_train_data = _train_data
_with_sample(_mwem.MWEMSynthesizer)
if _mst is not None:
    _mst.gaussian_noise = _gaussian
    _mst.MSTSynthesizer.exponential_mechanism = _uniform(
        lambda self, q, eps, sensitivity, prng=np.random, monotonic=False: prng.choice(np.asarray(q).size)
    )
    _original_mst = _mst.MSTSynthesizer.MST
    _mst.MSTSynthesizer.MST = _mst_total
    _with_sample(_mst.MSTSynthesizer)
if _aim is not None:
    _aim.gaussian_noise = _gaussian
    _aim.exponential_mechanism = _uniform(
        lambda qualities, epsilon, sensitivity=1.0, base_measure=None: list(qualities)[int(np.random.choice(len(qualities)))]
    )
    _with_sample(_aim.AIMSynthesizer)
"""


ADAPTER = register(SmartNoiseSynthAdapter())
