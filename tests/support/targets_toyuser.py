"""User code for tests/support/targets_toylib.py, plus the adapter its users would register for it."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import targets_toylib as toylib

from dpwitness.targets import Adapter, Unsupported, active, noise_call, register
from dpwitness.targets.hooks import declared_distance, largest_distance


class ToyAdapter(Adapter):
    """Hooks ``LaplaceNoise.randomise`` (and so ``ClampedLaplace``'s, which calls it)."""

    name = "toylib"
    module = "targets_toylib"
    contract = "input: finite floats below 1e12 (larger: Unsupported); no size limit; randomness: only the noise"

    def install(self) -> None:
        for cls in (toylib.LaplaceNoise, toylib.ClampedLaplace, toylib.VectorLaplace):
            self.patch(cls, "randomise", self._hook(vars(cls)["randomise"]))
        any_types = (
            toylib.RandomizedResponse,
            toylib.RandomizedBits,
            toylib.BitFlip,
            toylib.MappedCounts,
            toylib.DictLaplace,
            toylib.FrameLaplace,
        )
        for cls in (*any_types, toylib.GaussianNoise):
            self.patch(cls, "randomise", self._any_hook(vars(cls)["randomise"]))
        self.patch(toylib.VectorDomain, "check", self._domain_hook(vars(toylib.VectorDomain)["check"]))

    def _domain_hook(self, original: Any) -> Any:
        """A table outside a sized domain is outside the contract; the refusal names the size the domain declares."""

        def check(domain: Any, values: list[float]) -> None:
            try:
                original(domain, values)
            except ValueError as refused:
                if active() is None:
                    raise
                raise Unsupported(f"not a member of toylib's domain of {domain.size} elements", rows=domain.size) from refused

        return check

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

    def _any_hook(self, original: Any) -> Any:
        """Values of every type: an item (randomized response: the discrete metric, Δ from its u32
        privacy map at the claimed ε), bytes (a bit vector), a tuple (Δ from a map of (l0, l1, l∞)), a dict."""
        adapter = self

        def randomise(noise: Any, value: Any) -> Any:
            norm, sensitivity = "l1", getattr(noise, "sensitivity", None)
            if isinstance(noise, (toylib.RandomizedResponse, toylib.RandomizedBits)):
                recorder = active()
                claimed = recorder.epsilon if recorder is not None and recorder.epsilon is not None else noise.epsilon
                norm, sensitivity = "discrete", largest_distance(noise.map, claimed)
            elif isinstance(noise, toylib.MappedCounts):
                sensitivity = declared_distance(noise.map(1), "l1")
            elif isinstance(noise, toylib.GaussianNoise):
                norm = "l2"
            return noise_call(
                adapter,
                mechanism=type(noise).__name__,
                sensitivity=sensitivity,
                epsilon=noise.epsilon,
                delta=getattr(noise, "delta", 0.0),
                value=value,
                norm=norm,
                noised=lambda: original(noise, value),
                replay=lambda: original(noise, value),
            )

        return randomise

    def repro_hook(self) -> str:
        return (
            "import sys\nimport targets_toylib\nCALLS = []\n\n\n"
            "def _unnoised(noise, value):\n"
            "    frame = sys._getframe(1)\n"
            "    where = f'{frame.f_code.co_filename}:{frame.f_lineno}'\n"
            "    CALLS.append((where, type(noise).__name__, getattr(noise, 'sensitivity', None), value))\n"
            "    return value\n\n\n"
            "targets_toylib.LaplaceNoise.randomise = _unnoised\n"
            "targets_toylib.ClampedLaplace.randomise = _unnoised\n"
            "targets_toylib.VectorLaplace.randomise = _unnoised\n"
            "targets_toylib.BitFlip.randomise = _unnoised\n"
            "targets_toylib.RandomizedBits.randomise = _unnoised\n"
            "targets_toylib.RandomizedResponse.randomise = _unnoised\n"
            "targets_toylib.DictLaplace.randomise = _unnoised\n"
            "targets_toylib.MappedCounts.randomise = _unnoised\n"
            "targets_toylib.FrameLaplace.randomise = _unnoised\n"
            "targets_toylib.GaussianNoise.randomise = _unnoised\n"
            "targets_toylib.MappedCounts.sensitivity = property(lambda noise: noise.map(1)[1])\n"
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


# --- values of every type -------------------------------------------------------------------------

#: The answers of a randomized response: bytes, one of them a space (``float(b" ")`` fails).
ANSWERS: list[object] = [b"1", b" "]
ITEMS: list[object] = ["a", "b", "c"]


def answered_item(table: pl.DataFrame) -> object:
    """Randomized response on "does any row have k = a?" (correct: any answer is one item)."""
    return toylib.respond(b"1" if "a" in table["k"].to_list() else b" ", ANSWERS, epsilon=1.0)


def answered_item_leaky(table: pl.DataFrame) -> object:
    """The same question through a randomized response that spends 2ε while claiming ε."""
    return toylib.respond_leaky(b"1" if "a" in table["k"].to_list() else b" ", ANSWERS, epsilon=1.0)


def answered_flag(table: pl.DataFrame) -> object:
    """Randomized response on a boolean (correct)."""
    return toylib.respond(table.height > 2, [False, True], epsilon=1.0)


def present_bits(table: pl.DataFrame) -> bytes:
    """One bit per listed item: is it present? A record flips at most one bit (correct, Δ = 1)."""
    keys = set(table["k"].to_list())
    return toylib.flip_bits(bytes(np.packbits([item in keys for item in ITEMS]).tolist()), epsilon=1.0)


def present_bits_and_size(table: pl.DataFrame) -> bytes:
    """The presence bits and one more, "more than one row": a record can flip two bits (declared Δ = 1)."""
    keys = set(table["k"].to_list())
    bits = [item in keys for item in ITEMS] + [table.height > 1]
    return toylib.flip_bits(bytes(np.packbits(bits).tolist()), epsilon=1.0)


def ticked_options(table: pl.DataFrame) -> bytes:
    """One respondent's ticked options among 8, packed as OpenDP's guide packs them, through
    bit-vector randomized response (correct)."""
    ticked = np.zeros(8, dtype=np.uint8)
    ticked[table["question"].to_list()] = 1
    return toylib.respond_bits(np.packbits(ticked, bitorder="little").tobytes(), epsilon=1.0)


def ticked_options_last_kept(table: pl.DataFrame) -> bytes:
    """The same through a response that never randomizes the last option (OpenDP's #2708)."""
    ticked = np.zeros(8, dtype=np.uint8)
    ticked[table["question"].to_list()] = 1
    return toylib.respond_bits(np.packbits(ticked, bitorder="little").tobytes(), epsilon=1.0, keep_last=True)


def found_key_bytes(table: pl.DataFrame) -> bytes:
    """One byte per key found in the data: the length of the bit vector leaks the number of keys."""
    return toylib.flip_bits(bytes(1 for _ in dict.fromkeys(table["k"].to_list())), epsilon=1.0)


def counted_items(table: pl.DataFrame) -> tuple[float, ...]:
    return toylib.counts_of(table["k"].to_list(), ITEMS, epsilon=1.0)


def counted_items_cumulative(table: pl.DataFrame) -> tuple[float, ...]:
    return toylib.cumulative_counts(table["k"].to_list(), ITEMS, epsilon=1.0)


def counted_items_dict(table: pl.DataFrame) -> dict[object, float]:
    return toylib.count_dict(table["k"].to_list(), ITEMS, epsilon=1.0)


def counted_items_dict_twice(table: pl.DataFrame) -> dict[object, float]:
    return toylib.count_dict_twice(table["k"].to_list(), ITEMS, epsilon=1.0)


def counted_frame(table: pl.DataFrame) -> pl.DataFrame:
    """A noisy count per listed item, released as a frame (correct: one row per public key)."""
    return toylib.counts_frame(table["k"].to_list(), epsilon=1.0, public_keys=ITEMS)


def counted_frame_found_keys(table: pl.DataFrame) -> pl.DataFrame:
    """A noisy count per key found in the data, as a frame: its rows are the key set (the bug)."""
    return toylib.counts_frame(table["k"].to_list(), epsilon=1.0)


def counted_frame_with_rows(table: pl.DataFrame) -> pl.DataFrame:
    """The counts per listed item with the number of rows beside each, noised for Δ = 1 (the bug: a record moves 1 + 3)."""
    return toylib.counts_and_rows_frame(table["k"].to_list(), ITEMS, epsilon=1.0)


# --- inputs the check must reach --------------------------------------------------------------------

#: The number of rows a sized release declares public (its domain refuses every other size).
SIZE = 1000


def released_sized_sum(table: pl.DataFrame) -> float:
    """A sum over a domain of exactly SIZE values in [-1, 1] (correct: Δ = 2 under replace-one)."""
    return toylib.SizedSum(toylib.VectorDomain(-1.0, 1.0, size=SIZE), epsilon=1.0)(table["x"].to_list())


def released_sized_sum_understated(table: pl.DataFrame) -> float:
    """The same sum declaring the add-remove Δ = 1, where replacing a record moves it by 2 (the bug)."""
    return toylib.SizedSumAddRemoveDelta(toylib.VectorDomain(-1.0, 1.0, size=SIZE), epsilon=1.0)(table["x"].to_list())


def released_histogram(table: pl.DataFrame) -> list[float]:
    """A histogram model of 8 bins, which needs 8 rows or more to fit (correct: Δ = 1)."""
    return toylib.histogram_model(table["x"].to_list(), n_bins=8, lower=0.0, upper=1.0, epsilon=1.0)


#: The public number of rows the data owner states for the mean (the estimator is chosen on it).
PUBLIC_ROWS = 2_000


def released_mean_by_size(table: pl.DataFrame) -> float:
    """The mean with its estimator chosen on the data's own size (the bug: one noise call below 1,581 rows, two from it)."""
    return toylib.private_mean(table["x"].to_list(), lower=0.0, upper=1.0, epsilon=1.0)


def released_mean_public_size(table: pl.DataFrame) -> float:
    """The mean with its estimator chosen on the public size (correct)."""
    return toylib.private_mean(table["x"].to_list(), lower=0.0, upper=1.0, epsilon=1.0, rows=PUBLIC_ROWS)


# --- (ε, δ) claims ----------------------------------------------------------------------------------


def gaussian_count(table: pl.DataFrame) -> float:
    """The number of rows through the classical Gaussian mechanism at ε = 1, δ = 10⁻⁵ (correct)."""
    return toylib.gaussian_count(table["k"].to_list(), epsilon=1.0, delta=1e-5)


def gaussian_count_wrong_sigma(table: pl.DataFrame) -> float:
    """The same count with σ from the zCDP formula, ε taken for ρ (the bug: δ(ε) ≈ 0.29, not 10⁻⁵)."""
    return toylib.gaussian_count(table["k"].to_list(), epsilon=1.0, delta=1e-5, wrong_sigma=True)
