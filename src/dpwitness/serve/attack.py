"""The seed's differencing attack, mounted against a live ``dpwitness serve``.

The attacker knows one person (the *target*) is the only member of a public group (for Adult:
``native_country = Holand-Netherlands``) and wants their value of a numeric column.  Without
DP two aggregates suffice: the sum over everyone minus the sum over everyone else (the
partial sums of the seed scenario) is the target's value, exactly.  Against the service each
answer carries Laplace noise, so the attacker repeats the pair and averages, and the
service's budget stops them: after spending ε in total on queries that include the target,
no test can tell two values of the target apart with probability above e^ε / (1 + e^ε).

:func:`differencing_against_server` reports how far the attack got.
"""

from __future__ import annotations

import math
import time
from typing import Any

from dpwitness.common.errors import BudgetExceeded
from dpwitness.mechanisms.release import Release
from dpwitness.serve.client import Client, ServiceError


def differencing_against_server(
    *,
    url: str,
    token: str,
    table: str | None = None,
    column: str | None = None,
    target: tuple[str, str] | None = None,
    epsilon: float = 0.05,
    repeats: int = 1000,
    max_rate_waits: int = 200,
) -> dict[str, Any]:
    """Repeat (total sum, sum by the target's group) at ``epsilon`` each until ``repeats`` pairs
    are answered or the budget refuses; return the estimates, the ε spent and the DP bound.

    ``table`` and ``column`` default to the first table and its first numeric column; ``target``
    (group column, key) to the last declared key of the categorical column with most keys.
    """
    with Client(url, token) as client:
        schemas = client.tables()
        if not schemas:
            raise ServiceError(404, "this token may not query any table")
        schema = next((s for s in schemas if s["name"] == table), None) if table else schemas[0]
        if schema is None:
            raise ServiceError(404, f"no table named {table!r} is available to this token")
        numeric = {c["name"]: c for c in schema["columns"] if c["bounds"]}
        categorical = {c["name"]: c for c in schema["columns"] if c["categories"]}
        column = column or next(iter(numeric), "")
        if column not in numeric:
            raise ServiceError(422, f"the attack needs a numeric column with declared bounds; got {column!r}")
        if target is None:
            by = max(categorical, key=lambda name: len(categorical[name]["categories"]), default=None)
            if by is None:
                raise ServiceError(422, "the attack needs a categorical column to isolate the target")
            target = (by, str(categorical[by]["categories"][-1]))  # as the service writes a group's key
        by, key = target
        low, high = numeric[column]["bounds"]
        start_spent = client.budget(limit=1)["spent"]["epsilon"]
        started = time.perf_counter()

        differences: list[float] = []
        direct: list[float] = []
        scales: tuple[float, float] = (math.nan, math.nan)
        keys = 0
        queries = 0
        stopped_by = "repeats"
        waits = 0
        while len(differences) < repeats:
            try:
                total = _retrying(lambda: client.sum(schema["name"], column, epsilon=epsilon), max_rate_waits - waits)
                queries += 1
                grouped = _retrying(lambda: client.sum(schema["name"], column, epsilon=epsilon, by=[by]), max_rate_waits - waits)
                queries += 1
            except BudgetExceeded:
                stopped_by = "budget"
                break
            except _RateLimited:
                stopped_by = "rate limit"
                break
            values = grouped.value
            assert isinstance(values, dict)
            rest = math.fsum(v for k, v in values.items() if k != key)
            differences.append(float(total) - rest)
            direct.append(values[key])
            scales, keys = (total.scale, grouped.scale), len(values)
        spent = client.budget(limit=1)["spent"]["epsilon"] - start_spent

    pairs = len(differences)
    report: dict[str, Any] = {
        "attack": "differencing (partial sums) with repeated-query averaging",
        "server": url,
        "table": schema["name"],
        "column": column,
        "bounds": [low, high],
        "target": {"column": by, "key": key},
        "epsilon_per_query": epsilon,
        "pairs_answered": pairs,
        "queries_answered": queries,
        "stopped_by": stopped_by,
        "epsilon_spent": spent,
        "seconds": time.perf_counter() - started,
        "exact_answers": "one pair (2 queries) would reveal the target's value exactly",
    }
    if pairs == 0:
        return report | {"estimate": None, "half_width_95": None, "guess_success_bound": 0.5}
    total_scale, group_scale = scales
    # Var(total − Σ other groups) = 2b_T² + (K − 1)·2b_G²; Var(target's cell) = 2b_G².
    difference_sd = math.sqrt((2 * total_scale**2 + (keys - 1) * 2 * group_scale**2) / pairs)
    direct_sd = math.sqrt(2 * group_scale**2 / pairs)
    weights = (1 / difference_sd**2, 1 / direct_sd**2)
    combined = (weights[0] * _mean(differences) + weights[1] * _mean(direct)) / sum(weights)
    combined_sd = 1 / math.sqrt(sum(weights))
    target_loss = spent  # every query included the target, so its privacy loss is ≤ all ε spent
    return report | {
        "difference_estimate": _mean(differences),
        "difference_sd": difference_sd,
        "cell_estimate": _mean(direct),
        "cell_sd": direct_sd,
        "estimate": combined,
        "sd": combined_sd,
        "half_width_95": 1.96 * combined_sd,
        "half_width_over_range": 1.96 * combined_sd / (high - low),
        "single_pair_success_bound": _success_bound(2 * epsilon),
        "guess_success_bound": _success_bound(target_loss),
        "bound_explained": "P(telling two values of the target apart) ≤ e^ε/(1+e^ε) with ε = the target's total privacy loss",
    }


class _RateLimited(Exception):
    pass


def _retrying(call: Any, waits_left: int) -> Release:
    """Call, sleeping through 429 answers (the rate limit), up to ``waits_left`` times."""
    for _ in range(max(waits_left, 0) + 1):
        try:
            result: Release = call()
            return result
        except ServiceError as error:
            if error.status != 429:
                raise
            time.sleep(0.25)
    raise _RateLimited


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _success_bound(epsilon: float) -> float:
    return 1.0 / (1.0 + math.exp(-epsilon))
