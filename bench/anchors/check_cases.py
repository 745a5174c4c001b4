"""The public cases of ``dpwitness check`` (issue 18): plain functions calling each library as its users do.

Each takes a Polars table and returns the library's release; nothing else. Run one with
``.venv-anchors/bin/dpwitness check bench/anchors/check_cases.py:NAME --columns … --epsilon 1``
(the command line and the expected verdicts: :data:`CASES`; the timing: bench_check.py).
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: name → (columns JSON for --columns, expected verdict, what it shows). "ok" must be ok; "not
#: violated" may also be an honest inconclusive (the cases beyond the public ones).
CASES: dict[str, tuple[str, str, str]] = {
    "diffprivlib_laplace": ('{"x": [0.0, 1.0]}', "violated", "diffprivlib 0.6.6 float Laplace at 0 vs 1 (float test)"),
    "diffprivlib_geometric": ('{"x": [0, 1]}', "ok", "diffprivlib 0.6.6 Geometric"),
    "diffprivlib_linear_regression": (
        '{"x": [0.0, 50.0, 100.0], "y": [0.0, 100.0]}',
        "violated",
        "diffprivlib #105: the X² term noised with declared sensitivity 0",
    ),
    "diffprivlib_sum": ('{"x": "Float64"}', "violated", "diffprivlib tools.sum releases NaN for a NaN record"),
    "pydp_laplace": ('{"x": "Float64"}', "ok", "python-dp 1.1.5 LaplaceMechanism"),
    "pydp_count": ('{"x": "Int64"}', "ok", "python-dp 1.1.5 Count"),
    "pydp_bounded_sum": ('{"x": "Float64"}', "violated", "python-dp 1.1.5 float BoundedSum on [0, 1] (Casacuberta et al.)"),
    "opendp_laplace": ('{"x": [0.0, 0.5, 1.0]}', "ok", "OpenDP 0.16 make_laplace on a float sum"),
    "opendp_geometric": ('{"x": [0, 1, 2]}', "ok", "OpenDP 0.16 make_geometric on a count"),
}
#: Beyond the public cases: PipelineDP, in a venv of its own (bench/anchors/setup.sh builds it).
MORE_CASES: dict[str, tuple[str, str, str]] = {
    "pipelinedp_sum": ('{"x": "Float64"}', "violated", "PipelineDP 0.3.1 sum per public partition: a NaN value"),
    "pipelinedp_sum_without_nan": (
        '{"x": "Float64"}',
        "violated",
        "PipelineDP 0.3.1 sum, NaN dropped by the user: the float-sum class",
    ),
    "smartnoise_sum": ('{"x": [0.0, 0.5, 1.0]}', "not violated", "SmartNoise SQL 1.0.10 SELECT SUM(x)"),
}
#: Cases that need more than the default 100 s (PipelineDP's per-row cost: the structured
#: search needs the time to reach its 2^14-row shapes).
SECONDS: dict[str, float] = {"pipelinedp_sum_without_nan": 300.0}
#: The venv (under the repository) each case runs in.
VENVS: dict[str, str] = {name: ".venv-smartnoise" if name.startswith("smartnoise") else ".venv-pipelinedp" for name in MORE_CASES}


def diffprivlib_laplace(table: pl.DataFrame) -> Any:
    from diffprivlib.mechanisms import Laplace

    return Laplace(epsilon=1.0, sensitivity=1.0).randomise(float(table["x"].sum()))


def diffprivlib_geometric(table: pl.DataFrame) -> Any:
    from diffprivlib.mechanisms import Geometric

    return Geometric(epsilon=1.0, sensitivity=1).randomise(int(table["x"].sum()))


def diffprivlib_linear_regression(table: pl.DataFrame) -> Any:
    from diffprivlib.models import LinearRegression

    model = LinearRegression(bounds_X=(0, 100), bounds_y=(0, 100), fit_intercept=False, epsilon=1.0)
    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_


def diffprivlib_sum(table: pl.DataFrame) -> Any:
    from diffprivlib import tools

    return tools.sum(table["x"].to_numpy(), epsilon=1.0, bounds=(0, 1))


def pydp_laplace(table: pl.DataFrame) -> Any:
    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

    return LaplaceMechanism(epsilon=1.0, sensitivity=1.0).add_noise(float(table.height))


def pydp_count(table: pl.DataFrame) -> Any:
    from pydp.algorithms.laplacian import Count

    return Count(epsilon=1.0, dtype="int").quick_result(table["x"].drop_nulls().to_list())


def pydp_bounded_sum(table: pl.DataFrame) -> Any:
    from pydp.algorithms.laplacian import BoundedSum

    released_sum = BoundedSum(epsilon=1.0, lower_bound=0.0, upper_bound=1.0, dtype="float")
    return released_sum.quick_result(table["x"].drop_nulls().to_list())


def opendp_laplace(table: pl.DataFrame) -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    values = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)))
    released_sum = dp.t.make_sum(values, dp.symmetric_distance()) >> dp.m.then_laplace(scale=1.000000009313226)
    return released_sum(table["x"].to_list())


def opendp_geometric(table: pl.DataFrame) -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
    noise = dp.m.make_geometric(count.output_domain, count.output_metric, scale=1.0)
    return (count >> noise)(table["x"].to_list())


def pipelinedp_sum(table: pl.DataFrame) -> Any:
    """PipelineDP 0.3.1 (its own venv, .venv-pipelinedp): a sum per public partition, one row per person."""
    return _pipelinedp_sum(table["x"].drop_nulls().to_list())


def pipelinedp_sum_without_nan(table: pl.DataFrame) -> Any:
    """The same, NaN dropped by the user first (so only the float sum itself is judged)."""
    return _pipelinedp_sum(table["x"].fill_nan(None).drop_nulls().to_list())


def _pipelinedp_sum(values: list[float]) -> Any:
    import pipeline_dp

    budget = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=0.0)
    engine = pipeline_dp.DPEngine(budget, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.SUM],
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        min_value=0.0,
        max_value=1.0,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0], partition_extractor=lambda row: "all", value_extractor=lambda row: row[1]
    )
    rows = list(enumerate(values))
    result = engine.aggregate(rows, params, extractors, public_partitions=["all"])
    budget.compute_budgets()
    return {key: metrics.sum for key, metrics in result}


#: SmartNoise SQL's metadata for the table the query reads: one float column in [0, 1], a row per person.
SMARTNOISE_METADATA = {
    "": {"": {"t": {"row_privacy": True, "censor_dims": False, "x": {"type": "float", "lower": 0.0, "upper": 1.0}}}}
}


def smartnoise_sum(table: pl.DataFrame) -> Any:
    """SmartNoise SQL 1.0.10 (its own venv, .venv-smartnoise): SELECT SUM(x) over a pandas frame."""
    import snsql
    from snsql import Privacy

    reader = snsql.from_df(table.to_pandas(), privacy=Privacy(epsilon=1.0, delta=0.0), metadata=SMARTNOISE_METADATA)
    return reader.execute("SELECT SUM(x) AS total FROM t")[1][0]
