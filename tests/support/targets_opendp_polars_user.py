"""Plain functions using OpenDP 0.16's Polars context the way its documentation shows (no glue).

Run by tests/targets/test_targets_opendp_polars.py in the anchors venv (``.venv-anchors``): each takes a
Polars table and returns what OpenDP released.
"""

from __future__ import annotations

from typing import Any

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")


def _context(table: pl.DataFrame | pl.LazyFrame, margins: list[Any], **loss: float) -> Any:
    return dp.Context.compositor(
        data=table.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(**(loss or {"epsilon": 1.0})),
        split_evenly_over=1,
        margins=margins,
    )


def sum_and_count(table: pl.DataFrame) -> Any:
    """Correct: a clipped sum and a count of one table, one record per person."""
    context = _context(table, [dp.polars.Margin(by=(), max_length=1000)])
    query = context.query().select(pl.col("x").cast(int).fill_null(0).dp.sum((0, 100)), pl.len().dp.noise())
    return query.release().collect()


def float_sum(table: pl.DataFrame) -> Any:
    """Correct: a float sum on [0, 1]; OpenDP needs max_length for it (its float-sum sensitivity uses it)."""
    context = _context(table, [dp.polars.Margin(by=(), max_length=100_000)])
    return context.query().select(pl.col("x").fill_nan(0.0).fill_null(0.0).dp.sum((0.0, 1.0))).release().collect()


def count_by_group(table: pl.DataFrame) -> Any:
    """Correct under OpenDP's contract: counts per group, the key set declared invariant."""
    context = _context(table, [dp.polars.Margin(by=["g"], invariant="keys", max_length=1000)])
    return context.query().group_by("g").agg(pl.len().dp.noise()).release().collect()


def count_by_group_private_keys(table: pl.DataFrame) -> Any:
    """Groups released by OpenDP's noisy threshold (keys not invariant, δ > 0): randomised key-set selection."""
    context = _context(table, [dp.polars.Margin(by=["g"], max_length=1000)], epsilon=1.0, delta=1e-7)
    return context.query().group_by("g").agg(pl.len().dp.noise()).release().collect()


def count_tags(table: pl.DataFrame) -> Any:
    """Wrong: one row per tag handed to OpenDP as if one row were one person (a record with two
    tags contributes two rows, OpenDP was told one)."""
    tags = table.lazy().with_columns(pl.col("tags").str.split(",")).explode("tags")
    context = _context(tags, [dp.polars.Margin(by=(), max_length=1000)])
    return context.query().select(dp.len(signed=True)).release().collect()


def sum_if_large(table: pl.DataFrame) -> Any:
    """Wrong: a second release only when the data has a large value (the query itself reveals it)."""
    context = dp.Context.compositor(
        data=table.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=2,
        margins=[dp.polars.Margin(by=(), max_length=1000)],
    )
    released = [context.query().select(dp.len(signed=True)).release().collect()]
    if (table["x"].max() or 0) > 50:
        released.append(context.query().select(pl.col("x").fill_null(0).dp.sum((0, 100))).release().collect())
    return released


def pets_by_grade(table: pl.DataFrame) -> Any:
    """OpenDP's make_private_lazyframe example: a measurement invoked directly, no context."""
    domain = dp.lazyframe_domain(
        [dp.series_domain("grade", dp.atom_domain(T=dp.i32)), dp.series_domain("pets", dp.atom_domain(T=dp.i32))]
    )
    domain = dp.with_margin(domain, dp.polars.Margin(by=[pl.col("grade")], invariant="keys", max_length=50))
    plan = (
        pl.LazyFrame(schema={"grade": pl.Int32, "pets": pl.Int32})
        .group_by("grade")
        .agg(pl.col("pets").dp.sum((0, 10), scale=1.0))
    )
    measurement = dp.m.make_private_lazyframe(
        input_domain=domain,
        input_metric=dp.symmetric_distance(),
        output_measure=dp.max_divergence(),
        lazyframe=plan,
        global_scale=1.0,
    )
    return measurement(table.lazy()).collect()


def visits_by_grade(table: pl.DataFrame) -> Any:
    """Wrong: one person's visits exploded to one row per visit, handed to a private lazyframe
    (invoked directly) that counts rows as people."""
    visits = table.lazy().with_columns(pl.col("visits").str.split(",")).explode("visits")
    domain = dp.lazyframe_domain(
        [dp.series_domain("grade", dp.atom_domain(T=str)), dp.series_domain("visits", dp.atom_domain(T=str))]
    )
    domain = dp.with_margin(domain, dp.polars.Margin(by=[pl.col("grade")], invariant="keys", max_length=50))
    plan = pl.LazyFrame(schema={"grade": pl.String, "visits": pl.String}).group_by("grade").agg(dp.len(scale=1.0))
    measurement = dp.m.make_private_lazyframe(
        input_domain=domain,
        input_metric=dp.symmetric_distance(),
        output_measure=dp.max_divergence(),
        lazyframe=plan,
        global_scale=1.0,
    )
    return measurement(visits).collect()


_MADE_EARLY = _context(pl.DataFrame({"x": [1, 2, 3]}), [dp.polars.Margin(by=(), max_length=1000)])


def count_of_a_context_made_at_import(table: pl.DataFrame) -> Any:
    """A context made before the check's hooks were installed: the adapter cannot see its data."""
    return _MADE_EARLY.query().select(dp.len(signed=True)).release().collect()
