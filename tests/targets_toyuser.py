"""User code for tests/targets_toylib.py, plus the adapter its users would register for it."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

import targets_toylib as toylib
from dpwitness.targets import Adapter, Unsupported, noise_call, register


class ToyAdapter(Adapter):
    """Hooks ``LaplaceNoise.randomise`` (and so ``ClampedLaplace``'s, which calls it)."""

    name = "toylib"
    module = "targets_toylib"
    contract = "input: finite floats below 1e12 (larger: Unsupported); no size limit; randomness: only the noise"

    def install(self) -> None:
        for cls in (toylib.LaplaceNoise, toylib.ClampedLaplace, toylib.VectorLaplace):
            self.patch(cls, "randomise", self._hook(vars(cls)["randomise"]))

    def _hook(self, original: Any) -> Any:
        adapter = self

        def randomise(noise: Any, value: float) -> float:
            if np.any(np.abs(np.asarray(value, dtype=float)) > 1e12):
                raise Unsupported("toylib takes values below 1e12")
            return noise_call(  # type: ignore[no-any-return]
                adapter,
                mechanism=type(noise).__name__,
                sensitivity=noise.sensitivity,
                epsilon=noise.epsilon,
                delta=0.0,
                value=value,
                noised=lambda: original(noise, value),
                replay=lambda: original(noise, value),
            )

        return randomise

    def repro_hook(self) -> str:
        return (
            "import sys\nimport targets_toylib\nCALLS = []\n\n\n"
            "def _unnoised(noise, value):\n"
            "    frame = sys._getframe(1)\n"
            "    CALLS.append((f'{frame.f_code.co_filename}:{frame.f_lineno}', type(noise).__name__, noise.sensitivity, value))\n"
            "    return value\n\n\n"
            "targets_toylib.LaplaceNoise.randomise = _unnoised\n"
            "targets_toylib.ClampedLaplace.randomise = _unnoised\n"
            "targets_toylib.VectorLaplace.randomise = _unnoised\n"
        )


ADAPTER = register(ToyAdapter())


def released_sum(table: pl.DataFrame) -> float:
    return toylib.private_sum(table["x"].drop_nulls().to_list(), lower=0.0, upper=1.0, epsilon=1.0)


def released_exact_sum(table: pl.DataFrame) -> float:
    return toylib.exact_private_sum(table["x"].drop_nulls().to_list(), lower=0.0, upper=1.0, epsilon=1.0)


def released_counts(table: pl.DataFrame) -> dict[str, float]:
    return toylib.count_by_key(table["k"].drop_nulls().to_list(), epsilon=1.0)


def released_mean(table: pl.DataFrame) -> float:
    return toylib.clamped_mean(table["x"].drop_nulls().to_list(), lower=0.0, upper=1.0, epsilon=1.0)


def released_large(table: pl.DataFrame) -> float:
    return toylib.LaplaceNoise(1.0, 1.0).randomise(1e13 + table.height)


#: The keys a grouped release declares public (the data owner's list).
PUBLIC_KEYS: list[object] = ["a", "b", "c"]


def released_sums_by_key(table: pl.DataFrame) -> dict[Any, float]:
    rows = table.drop_nulls("x")
    return toylib.sum_by_key(rows["k"].to_list(), rows["x"].to_list(), lower=0.0, upper=1.0, epsilon=1.0)


def released_sums_for_public_keys(table: pl.DataFrame) -> dict[Any, float]:
    rows = table.drop_nulls("x")
    return toylib.sum_by_key(rows["k"].to_list(), rows["x"].to_list(), lower=0.0, upper=1.0, epsilon=1.0, public_keys=PUBLIC_KEYS)


def released_group_totals(table: pl.DataFrame) -> dict[Any, float]:
    rows = table.drop_nulls("x")
    return toylib.group_totals(
        rows["k"].to_list(), rows["x"].to_list(), public_keys=PUBLIC_KEYS, lower=0.0, upper=1.0, epsilon=1.0
    )
