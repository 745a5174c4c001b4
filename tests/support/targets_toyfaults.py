"""User code that makes the check's plumbing fail in the ways real code does (tests/targets/test_check_verdicts.py).

An adapter written for an older toylib that read one number where the library now returns a
tuple (as OpenDP's ``make_count_by`` map returns (l0, l1, l∞)), a function whose own code divides
by the row count, a function that calls no covered library, a library refusing the input and a
function whose library prints while it runs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import polars as pl
import targets_toylib as toylib
import targets_toyuser  # noqa: F401  (registers toylib's adapter)

from dpwitness.targets import Adapter, noise_call, register


class MappedLaplace(toylib.LaplaceNoise):
    """Laplace noise whose sensitivity is read from a stability map: (l0, l1, l∞) of one record."""

    def stability(self, d_in: int) -> tuple[int, float, float]:
        return (d_in, d_in * self.sensitivity, self.sensitivity)


class MappedAdapter(Adapter):
    """Hooks ``MappedLaplace.randomise``; reads the declared Δ as ``float(stability(1))``, as
    written for a library whose map returned one number."""

    name = "toylib-mapped"
    module = "targets_toylib"
    contract = "input: any float; no size limit; randomness: only the noise"

    def install(self) -> None:
        original = vars(toylib.LaplaceNoise)["randomise"]
        adapter = self

        def randomise(noise: Any, value: float) -> float:
            declared = float(noise.stability(1))  # TypeError: the map returns a tuple
            return noise_call(  # type: ignore[no-any-return]
                adapter,
                mechanism="MappedLaplace",
                sensitivity=declared,
                epsilon=noise.epsilon,
                delta=0.0,
                value=value,
                noised=lambda: original(noise, value),
            )

        self.patch(MappedLaplace, "randomise", randomise)


MAPPED_ADAPTER = register(MappedAdapter())


class AbsentAdapter(Adapter):
    """An adapter whose library is not installed here."""

    name = "toylib-absent"
    module = "targets_toylib_absent"
    contract = "none"


register(AbsentAdapter())


def mapped_count(table: pl.DataFrame) -> float:
    return MappedLaplace(1.0, 1.0).randomise(float(table.height))


def mean_without_noise(table: pl.DataFrame) -> float:
    values = table["x"].to_list()
    return sum(values) / len(values)  # ZeroDivisionError on the empty table; no covered library


def mean_of_positive_rows(table: pl.DataFrame) -> float:
    values = [v for v in table["x"].to_list() if v is not None and v > 10]
    return toylib.private_sum(values, lower=0.0, upper=1.0, epsilon=1.0) / len(values)  # raises on every table with x ≤ 10


def refused_by_the_library(table: pl.DataFrame) -> float:
    return toylib.private_sum(table["x"].to_list(), lower=0.0, upper=1.0, epsilon=-1.0)  # toylib refuses ε ≤ 0


def chatty_sum(table: pl.DataFrame) -> float:
    print("toylib: summing", table.height, "rows")  # a library's progress line, through Python
    sys.stdout.flush()
    os.write(1, b"native: done\n")  # and one written straight to file descriptor 1, as native code does
    return toylib.exact_private_sum(table["x"].drop_nulls().to_list(), lower=0.0, upper=1.0, epsilon=1.0)
