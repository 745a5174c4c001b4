"""The Polars engine's clamp (engines/polars.py ``_clamped``) gives, value for value, what Polars'
float64 ``clip`` gives, for every integer type and any bounds (nulls stay null), whether the
integer column is clamped in its own type or cast first."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from dpwitness.engines.polars import _clamped

TYPES = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64]
EDGES = [-(2**63), -(2**53) - 1, -(2**31), -129, -1, 0, 1, 127, 255, 2**31, 2**53 + 1, 2**63 - 1, 2**64 - 1]
bound = st.one_of(
    st.integers(-(2**64), 2**64).map(float),
    st.sampled_from(EDGES).map(float),
    st.floats(-1e20, 1e20, allow_nan=False),  # fractional bounds among them
    st.integers(-300, 300).map(lambda i: i / 2),
)


def _reference(column: pl.Series, low: float, high: float) -> list[float | None]:
    return column.cast(pl.Float64).clip(low, high).to_list()


@settings(max_examples=300, deadline=None)
@given(
    dtype=st.sampled_from(TYPES),
    raw=st.lists(st.one_of(st.none(), st.integers(-(2**64), 2**64), st.sampled_from(EDGES)), max_size=30),
    bounds=st.tuples(bound, bound),
)
def test_an_integer_column_clamps_to_the_float64_clamp(
    dtype: pl.DataType, raw: list[int | None], bounds: tuple[float, float]
) -> None:
    low, high = sorted(bounds)
    column = pl.Series("v", raw, dtype=pl.Int128 if hasattr(pl, "Int128") else pl.Float64, strict=False).cast(dtype, strict=False)
    got = pl.DataFrame([column]).select(_clamped(pl.col("v"), dtype, (low, high))).to_series()
    assert got.dtype == pl.Float64
    assert got.to_list() == _reference(column, low, high)


def test_integral_bounds_clamp_in_the_columns_type_and_others_in_float64() -> None:
    """The fast path is taken only where it is exact (a mutant that always clamped in the integer type
    would truncate 0.5 to 0 and fail above; this checks that the fast path is used at all)."""

    def plan(dtype: pl.DataType, bounds: tuple[float, float]) -> str:
        return pl.LazyFrame(schema={"v": dtype}).select(_clamped(pl.col("v"), dtype, bounds)).explain(optimized=False)

    assert 'col("v") < 0' in plan(pl.Int64, (0.0, 100.0))  # compared in Int64, cast after
    for dtype, bounds in [
        (pl.Int64, (0.5, 100.0)),
        (pl.UInt8, (-1.0, 100.0)),
        (pl.Int8, (0.0, 200.0)),
        (pl.Float32, (0.0, 1.0)),
    ]:
        assert "cast(Float64) <" in plan(dtype, bounds)  # cast first


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from([pl.Float32, pl.Float64]),
    raw=st.lists(st.one_of(st.none(), st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1e308, -1e308])), max_size=30),
    bounds=st.tuples(bound, bound),
)
def test_a_float_column_clamps_as_polars_clip_does(
    dtype: pl.DataType, raw: list[float | None], bounds: tuple[float, float]
) -> None:
    low, high = sorted(bounds)
    column = pl.Series("v", raw, dtype=pl.Float64).cast(dtype)
    got = pl.DataFrame([column]).select(_clamped(pl.col("v"), dtype, (low, high))).to_series()
    assert got.to_list() == _reference(column, low, high)
