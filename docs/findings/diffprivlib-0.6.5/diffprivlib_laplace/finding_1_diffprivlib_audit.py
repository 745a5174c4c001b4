"""Reproduces a dpwitness audit finding: ε_lb = 5.254 > ε = 1
at 95% confidence (certified on the audit's event bits(X) ∈ {[+2^-1, lsb 2^-53], [+2^-2, lsb 2^-53], [−2^-1, lsb 2^-52], [−2^-2, lsb 2^-52], [−2^-3, lsb 2^-52], [+2^-3, lsb 2^-53], … (14 values)}).

Samples the function on D and D' with the library alone (and polars, numpy), counts the runs in
EVENT on each and compares the ratio of the rates with e^ε: exit status 1 when the bug shows.
EVENT is one a script states alone, chosen by the check on the same pair."""
import math
import sys

import numpy as np
import polars as pl

import importlib
import os
import types

# the checked module, as it was checked (used when it is not importable here)
_SOURCE = '"""The public cases of ``dpwitness check`` (issue 18): plain functions calling each library as its users do.\n\nEach takes a Polars table and returns the library\'s release; nothing else. Run one with\n``.venv-anchors/bin/dpwitness check bench/anchors/check_cases.py:NAME --columns … --epsilon 1``\n(the command line and the expected verdicts: :data:`CASES`; the timing: bench_check.py).\n"""\n\nfrom __future__ import annotations\n\nfrom typing import Any\n\nimport polars as pl\n\n#: name → (columns JSON for --columns, expected verdict, what it shows). "ok" must be ok; "not\n#: violated" may also be an honest inconclusive (the cases beyond the public ones).\nCASES: dict[str, tuple[str, str, str]] = {\n    "diffprivlib_laplace": (\'{"x": [0.0, 1.0]}\', "violated", "diffprivlib 0.6.6 float Laplace at 0 vs 1 (float test)"),\n    "diffprivlib_geometric": (\'{"x": [0, 1]}\', "ok", "diffprivlib 0.6.6 Geometric"),\n    "diffprivlib_linear_regression": (\n        \'{"x": [0.0, 50.0, 100.0], "y": [0.0, 100.0]}\',\n        "violated",\n        "diffprivlib #105: the X² term noised with declared sensitivity 0",\n    ),\n    "diffprivlib_sum": (\'{"x": "Float64"}\', "violated", "diffprivlib tools.sum releases NaN for a NaN record"),\n    "pydp_laplace": (\'{"x": "Float64"}\', "ok", "python-dp 1.1.5 LaplaceMechanism"),\n    "pydp_count": (\'{"x": "Int64"}\', "ok", "python-dp 1.1.5 Count"),\n    "pydp_bounded_sum": (\'{"x": "Float64"}\', "violated", "python-dp 1.1.5 float BoundedSum on [0, 1] (Casacuberta et al.)"),\n    "opendp_laplace": (\'{"x": [0.0, 0.5, 1.0]}\', "ok", "OpenDP 0.16 make_laplace on a float sum"),\n    "opendp_geometric": (\'{"x": [0, 1, 2]}\', "ok", "OpenDP 0.16 make_geometric on a count"),\n}\n#: Beyond the public cases: PipelineDP, in a venv of its own (bench/anchors/setup.sh builds it).\nMORE_CASES: dict[str, tuple[str, str, str]] = {\n    "pipelinedp_sum": (\'{"x": "Float64"}\', "violated", "PipelineDP 0.3.1 sum per public partition: a NaN value"),\n    "pipelinedp_sum_without_nan": (\n        \'{"x": "Float64"}\',\n        "violated",\n        "PipelineDP 0.3.1 sum, NaN dropped by the user: the float-sum class",\n    ),\n    "smartnoise_sum": (\'{"x": [0.0, 0.5, 1.0]}\', "not violated", "SmartNoise SQL 1.0.10 SELECT SUM(x)"),\n}\n#: Cases that need more than the default 100 s (PipelineDP\'s per-row cost: the structured\n#: search needs the time to reach its 2^14-row shapes).\nSECONDS: dict[str, float] = {"pipelinedp_sum_without_nan": 300.0}\n#: The venv (under the repository) each case runs in.\nVENVS: dict[str, str] = {name: ".venv-smartnoise" if name.startswith("smartnoise") else ".venv-pipelinedp" for name in MORE_CASES}\n\n\ndef diffprivlib_laplace(table: pl.DataFrame) -> Any:\n    from diffprivlib.mechanisms import Laplace\n\n    return Laplace(epsilon=1.0, sensitivity=1.0).randomise(float(table["x"].sum()))\n\n\ndef diffprivlib_geometric(table: pl.DataFrame) -> Any:\n    from diffprivlib.mechanisms import Geometric\n\n    return Geometric(epsilon=1.0, sensitivity=1).randomise(int(table["x"].sum()))\n\n\ndef diffprivlib_linear_regression(table: pl.DataFrame) -> Any:\n    from diffprivlib.models import LinearRegression\n\n    model = LinearRegression(bounds_X=(0, 100), bounds_y=(0, 100), fit_intercept=False, epsilon=1.0)\n    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_\n\n\ndef diffprivlib_sum(table: pl.DataFrame) -> Any:\n    from diffprivlib import tools\n\n    return tools.sum(table["x"].to_numpy(), epsilon=1.0, bounds=(0, 1))\n\n\ndef pydp_laplace(table: pl.DataFrame) -> Any:\n    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism\n\n    return LaplaceMechanism(epsilon=1.0, sensitivity=1.0).add_noise(float(table.height))\n\n\ndef pydp_count(table: pl.DataFrame) -> Any:\n    from pydp.algorithms.laplacian import Count\n\n    return Count(epsilon=1.0, dtype="int").quick_result(table["x"].drop_nulls().to_list())\n\n\ndef pydp_bounded_sum(table: pl.DataFrame) -> Any:\n    from pydp.algorithms.laplacian import BoundedSum\n\n    released_sum = BoundedSum(epsilon=1.0, lower_bound=0.0, upper_bound=1.0, dtype="float")\n    return released_sum.quick_result(table["x"].drop_nulls().to_list())\n\n\ndef opendp_laplace(table: pl.DataFrame) -> Any:\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    values = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)))\n    released_sum = dp.t.make_sum(values, dp.symmetric_distance()) >> dp.m.then_laplace(scale=1.000000009313226)\n    return released_sum(table["x"].to_list())\n\n\ndef opendp_geometric(table: pl.DataFrame) -> Any:\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())\n    noise = dp.m.make_geometric(count.output_domain, count.output_metric, scale=1.0)\n    return (count >> noise)(table["x"].to_list())\n\n\ndef pipelinedp_sum(table: pl.DataFrame) -> Any:\n    """PipelineDP 0.3.1 (its own venv, .venv-pipelinedp): a sum per public partition, one row per person."""\n    return _pipelinedp_sum(table["x"].drop_nulls().to_list())\n\n\ndef pipelinedp_sum_without_nan(table: pl.DataFrame) -> Any:\n    """The same, NaN dropped by the user first (so only the float sum itself is judged)."""\n    return _pipelinedp_sum(table["x"].fill_nan(None).drop_nulls().to_list())\n\n\ndef _pipelinedp_sum(values: list[float]) -> Any:\n    import pipeline_dp\n\n    budget = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=0.0)\n    engine = pipeline_dp.DPEngine(budget, pipeline_dp.LocalBackend())\n    params = pipeline_dp.AggregateParams(\n        noise_kind=pipeline_dp.NoiseKind.LAPLACE,\n        metrics=[pipeline_dp.Metrics.SUM],\n        max_partitions_contributed=1,\n        max_contributions_per_partition=1,\n        min_value=0.0,\n        max_value=1.0,\n    )\n    extractors = pipeline_dp.DataExtractors(\n        privacy_id_extractor=lambda row: row[0], partition_extractor=lambda row: "all", value_extractor=lambda row: row[1]\n    )\n    rows = list(enumerate(values))\n    result = engine.aggregate(rows, params, extractors, public_partitions=["all"])\n    budget.compute_budgets()\n    return {key: metrics.sum for key, metrics in result}\n\n\n#: SmartNoise SQL\'s metadata for the table the query reads: one float column in [0, 1], a row per person.\nSMARTNOISE_METADATA = {\n    "": {"": {"t": {"row_privacy": True, "censor_dims": False, "x": {"type": "float", "lower": 0.0, "upper": 1.0}}}}\n}\n\n\ndef smartnoise_sum(table: pl.DataFrame) -> Any:\n    """SmartNoise SQL 1.0.10 (its own venv, .venv-smartnoise): SELECT SUM(x) over a pandas frame."""\n    import snsql\n    from snsql import Privacy\n\n    reader = snsql.from_df(table.to_pandas(), privacy=Privacy(epsilon=1.0, delta=0.0), metadata=SMARTNOISE_METADATA)\n    return reader.execute("SELECT SUM(x) AS total FROM t")[1][0]\n'
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
try:
    _module = importlib.import_module('check_cases')
except ModuleNotFoundError as _missing:
    if _missing.name != 'check_cases' or _SOURCE is None:
        raise
    _module = types.ModuleType('check_cases')
    sys.modules['check_cases'] = _module
    exec(compile(_SOURCE, 'check_cases.py', "exec"), _module.__dict__)
fn = _module
for _part in 'diffprivlib_laplace'.split("."):
    fn = getattr(fn, _part)

def table(runs):
    # runs of identical rows: (row, how many times), in order
    index = np.repeat(np.arange(len(runs)), [times for _, times in runs])
    schema = {'x': pl.Float64}
    return pl.DataFrame(
        {name: pl.Series(name, [row[i] for row, _ in runs], dtype=schema[name], strict=False).gather(index)
         for i, name in enumerate(schema)}
    )

def plain(output):
    """An output with numpy's types made Python's, a dict's keys in order and a frame as its columns."""
    if hasattr(output, "columns") and len(getattr(output, "shape", ())) == 2 and not isinstance(output, np.ndarray):
        return {str(name): plain(list(output[name])) for name in sorted(output.columns, key=repr)}
    if isinstance(output, dict):
        return {key: plain(output[key]) for key in sorted(output, key=repr)}
    if isinstance(output, np.ndarray):
        return plain(output.tolist())
    if isinstance(output, (list, tuple)):
        return tuple(plain(item) for item in output)
    if isinstance(output, np.generic):
        return output.item()
    if isinstance(output, bytearray):
        return bytes(output)
    return output


def shape_of(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {shape_of(item)}" for key, item in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(shape_of(item) for item in value) + ")"
    if isinstance(value, bytes):
        return f"bytes[{len(value)}]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def coordinates(value):
    if isinstance(value, dict):
        return [c for item in value.values() for c in coordinates(item)]
    if isinstance(value, tuple):
        return [c for item in value for c in coordinates(item)]
    if isinstance(value, (bool, int, float)):
        return [float(value)]
    if isinstance(value, bytes):  # a bit vector: its bits, little-endian within each byte
        return [float(byte >> k & 1) for byte in value for k in range(8)]
    return [math.nan]


def in_event(output, event):
    value = plain(output)
    if event[0] == "shape":
        return shape_of(value) in event[1]
    if event[0] == "value":
        return repr(value) in event[1]
    numbers = coordinates(value)
    x = numbers[event[1]] if event[1] < len(numbers) else math.nan
    return bool(x > event[2]) if event[0] == "above" else bool(x <= event[2])  # NaN: in neither

D = [((1.0,), 1)]
D_PRIME = [((1.0,), 2)]
EPSILON = 1.0
DELTA = 0.0

EVENT = ('below', 0, -0.6441266085180155)
FAVOURS = 'D'  # the table on which EVENT is likelier
SAMPLES = 2000  # runs per table: enough to see EVENT on the other table
# when chosen: 94 runs of 1000 in EVENT on D, 26 on D'


def hits(runs):
    frame = table(runs)
    return sum(in_event(fn(frame), EVENT) for _ in range(SAMPLES))


on_d, on_d_prime = hits(D), hits(D_PRIME)
likelier, other = (on_d, on_d_prime) if FAVOURS == "D" else (on_d_prime, on_d)
ratio = likelier / other if other else (math.inf if likelier else 1.0)
print(f"EVENT {EVENT!r}: {on_d} of {SAMPLES} runs on D, {on_d_prime} of {SAMPLES} on D'")
print(f"rate ratio (on {FAVOURS} over the other) {ratio:.4g} vs e^ε = {math.exp(EPSILON):.4g}")
gap = (likelier - math.exp(EPSILON) * other) / SAMPLES  # above δ: the (ε, δ) claim fails on EVENT
if DELTA:
    print(f"rate gap (the favoured rate minus e^ε times the other) {gap:.4g} vs δ = {DELTA:.4g}")
if gap > DELTA:
    print(
        "BUG: the event's rate on one table exceeds e^ε times its rate on the neighbour by more than δ"
        if DELTA
        else "BUG: the event is more than e^ε times likelier on one table than on its neighbour"
    )
    sys.exit(1)
print("not reproduced")
