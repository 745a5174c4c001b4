"""The PipelineDP adapter (0.3): hooks on its additive mechanisms and its noise functions.

What the hooks see: ``dp_computations.AdditiveMechanism.add_noise`` (the Laplace and Gaussian
mechanisms of every aggregation: count, sum, mean, variance…, vectors included) and the module
functions ``apply_laplace_mechanism`` / ``apply_gaussian_mechanism``, each with the sensitivity
PipelineDP computed for it (L1 for Laplace, L2 for Gaussian), ε, δ and the value before noise.
PipelineDP adds its noise through python-dp's mechanisms; a call seen here is not counted again
by the python-dp adapter.

Contract: input: what PipelineDP's extractors accept; no size limit; internal randomness:
contribution bounding samples each privacy unit's rows with NumPy's global generator, which the
adapter pins (the same seed before every run, on both neighbours); private partition selection
draws inside C++ and cannot be pinned, so a pipeline that selects partitions privately is
``Unsupported`` (give ``public_partitions``).
"""

from __future__ import annotations

from typing import Any

from dpwitness.targets.hooks import Adapter, Unsupported, active, noise_call, register

#: The seed NumPy's global generator gets before each run of the function (both neighbours).
PINNED_SEED = 20260101


class PipelineDPAdapter(Adapter):
    name = "pipeline-dp"
    module = "pipeline_dp"
    distribution = "pipeline-dp"
    contract = (
        "input: what PipelineDP's extractors accept; no size limit; randomness: contribution bounding's sampling "
        "(NumPy's global generator) pinned on both neighbours; private partition selection (C++) is Unsupported: "
        "use public_partitions"
    )

    def install(self) -> None:
        import pipeline_dp.dp_computations as computations
        import pipeline_dp.partition_selection as selection

        adapter = self
        add_noise = computations.AdditiveMechanism.add_noise

        def additive(mechanism: Any, value: Any) -> Any:
            inner = getattr(mechanism, "_mechanism", None)
            gaussian = "Gaussian" in type(mechanism).__name__
            return noise_call(
                adapter,
                mechanism=type(mechanism).__name__,
                sensitivity=mechanism.sensitivity,
                epsilon=getattr(inner, "epsilon", None),
                delta=getattr(inner, "delta", 0.0) if gaussian else 0.0,
                value=value,
                noised=lambda: add_noise(mechanism, value),
                norm="l2" if gaussian else "l1",
                replay=lambda: add_noise(mechanism, value),
            )

        laplace, gaussian = computations.apply_laplace_mechanism, computations.apply_gaussian_mechanism

        def apply_laplace(value: float, eps: float, l1_sensitivity: float) -> Any:
            return noise_call(
                adapter,
                mechanism="apply_laplace_mechanism",
                sensitivity=l1_sensitivity,
                epsilon=eps,
                delta=0.0,
                value=value,
                noised=lambda: laplace(value, eps, l1_sensitivity),
                replay=lambda: laplace(value, eps, l1_sensitivity),
            )

        def apply_gaussian(value: float, eps: float, delta: float, l2_sensitivity: float) -> Any:
            return noise_call(
                adapter,
                mechanism="apply_gaussian_mechanism",
                sensitivity=l2_sensitivity,
                epsilon=eps,
                delta=delta,
                value=value,
                noised=lambda: gaussian(value, eps, delta, l2_sensitivity),
                norm="l2",
                replay=lambda: gaussian(value, eps, delta, l2_sensitivity),
            )

        self.patch(computations.AdditiveMechanism, "add_noise", additive)
        self.patch(computations, "apply_laplace_mechanism", apply_laplace)
        self.patch(computations, "apply_gaussian_mechanism", apply_gaussian)
        for name in (
            "create_partition_selection_strategy",
            "create_laplace_thresholding",
            "create_gaussian_thresholding",
            "create_weighted_gaussian_thresholding",
        ):
            original = getattr(selection, name, None)
            if original is not None:
                self.patch(selection, name, _refused_while_recording(original))

    def repro_hook(self) -> str:
        return """
import sys
import numpy as np
import pipeline_dp.dp_computations as _computations

CALLS = []


def _site():
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _unnoised_add_noise(mechanism, value):
    CALLS.append((_site(), type(mechanism).__name__, mechanism.sensitivity, value))
    return value


def _unnoised_laplace(value, eps, l1_sensitivity):
    CALLS.append((_site(), "apply_laplace_mechanism", l1_sensitivity, value))
    return value


def _unnoised_gaussian(value, eps, delta, l2_sensitivity):
    CALLS.append((_site(), "apply_gaussian_mechanism", l2_sensitivity, value))
    return value


_computations.AdditiveMechanism.add_noise = _unnoised_add_noise
_computations.apply_laplace_mechanism = _unnoised_laplace
_computations.apply_gaussian_mechanism = _unnoised_gaussian


def PIN():  # contribution bounding's sampling, pinned before each run as the check pinned it
    np.random.seed(PINNED_SEED)
""".replace("PINNED_SEED", str(PINNED_SEED))

    def pin(self) -> None:
        import numpy as np

        np.random.seed(PINNED_SEED)


def _refused_while_recording(original: Any) -> Any:
    def create(*args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            raise Unsupported("PipelineDP's private partition selection is randomised in C++: give public_partitions")
        return original(*args, **kwargs)

    return create


ADAPTER = register(PipelineDPAdapter())
