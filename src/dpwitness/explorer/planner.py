"""The budget planner: split a total ε across queries on the Adult table, see each query's
expected error and the whole plan's disclosure risk, then release the plan through a real
:class:`~dpwitness.Session` whose SQLite ledger refuses a second release once the budget is spent.

Expected errors come from ``Session.preview`` (nothing spent, only the schema read); the
disclosure risk is that of the plan's composed total ε (basic composition: the ledger's sum).
When the Adult file is absent the planner runs on generated data and says so.
"""

from __future__ import annotations

import math
import re
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.data import ADULT_ROWS, adult_path, generated_ages
from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.common.validation import check_positive_finite
from dpwitness.privacy.accounting import analytic_gaussian_sigma
from dpwitness.privacy.budget import Ledger
from dpwitness.session import Session

#: The planner's queries: name → (statistic, column, options). Bounds and keys are public.
AGE_BOUNDS = (17.0, 90.0)
RACES = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
QUERIES: dict[str, dict[str, Any]] = {
    "count": {"statistic": "count", "column": None, "options": {}},
    "mean": {"statistic": "mean", "column": "age", "options": {"bounds": AGE_BOUNDS}},
    "histogram": {"statistic": "histogram", "column": "race", "options": {"keys": RACES}},
}
#: ε values of the error curves (log-spaced) and of the risk curve.
CURVE_EPSILONS = np.geomspace(0.01, 10.0, 61)
MAX_TOTAL_EPSILON = 10.0
ALPHA = 0.05
_PLAN_ID = re.compile(r"^[A-Za-z0-9_-]{6,64}$")


@lru_cache(maxsize=1)
def source() -> tuple[Any, str]:
    """The Adult table (a path) or, when absent, a generated frame with the same columns; and its name."""
    path = adult_path()
    if path is not None:
        return str(path), "adult"
    import polars as pl

    ages = generated_ages()
    rng = np.random.default_rng(2006)
    races = rng.choice(np.array(RACES), size=ages.size, p=[0.854, 0.096, 0.032, 0.01, 0.008])
    return pl.DataFrame({"age": ages, "race": races}), "generated"


def _session(
    total: float, *, ledger: Ledger | None = None, account: str = "planner-preview", delta_budget: float | None = None
) -> Session:
    data, _ = source()
    # age declared a number (a CSV's columns are text until declared; the generated frame's already are)
    return Session(data, epsilon=total, delta_budget=delta_budget, ledger=ledger, account=account, dtypes={"age": "float"})


def _query_epsilons(count: float, mean: float, histogram: float) -> dict[str, float]:
    shares = {"count": count, "mean": mean, "histogram": histogram}
    for name, value in shares.items():
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not (math.isfinite(number) and 0 <= number <= MAX_TOTAL_EPSILON):
            raise ParameterError(f"{name}_epsilon", f"a number in [0, {MAX_TOTAL_EPSILON:g}] (0 leaves the query out)", value)
        shares[name] = float(f"{number:.6g}")
    if sum(shares.values()) <= 0:
        raise ParameterError("count_epsilon", "> 0 for at least one query (a plan needs one query)", count)
    return shares


def total_param(value: Any) -> float:
    total = check_positive_finite("total_epsilon", value)
    if total > MAX_TOTAL_EPSILON:
        raise ParameterError("total_epsilon", f"a number in (0, {MAX_TOTAL_EPSILON:g}] in the explorer", value)
    return float(f"{total:.6g}")


def posterior(prior: float, epsilon: float) -> float:
    """The most an attacker's belief that one person is in the data can rise from ``prior``
    after an ε-DP release: p·e^ε / (1 − p + p·e^ε)."""
    return prior * math.exp(epsilon) / (1.0 - prior + prior * math.exp(epsilon))


def advantage(epsilon: float, delta: float = 0.0) -> float:
    """Bound on membership advantage (TPR − FPR): (e^ε − 1 + 2δ)/(e^ε + 1); tanh(ε/2) when δ = 0."""
    if delta == 0:
        return math.tanh(epsilon / 2.0)
    return min(1.0, (math.exp(epsilon) - 1.0 + 2.0 * delta) / (math.exp(epsilon) + 1.0))


@lru_cache(maxsize=64)
def _unit_error(name: str) -> dict[str, Any]:
    """The query's preview at ε = 1: its parts' Δ and scale (scale ∝ 1/ε, so one preview gives the curve)."""
    spec = QUERIES[name]
    preview = _session(1.0).preview(spec["statistic"], spec["column"], epsilon=1.0, alpha=ALPHA, **spec["options"])
    parts = preview.to_dict()["parts"]
    if name == "mean":
        # n is private here (noisy sum / noisy count); for planning, the published row count of
        # the table stands in for n and the centring error is left out: sd ≈ √2·b_sum / n.
        sum_part = next(p for p in parts if p["aggregate"] != "count")
        sd = math.sqrt(2.0) * float(sum_part["scale"]) / ADULT_ROWS
    else:
        sd = math.sqrt(2.0) * float(parts[-1]["scale"])
    return {"query": preview.query, "parts": parts, "sd_at_1": sd, "notes": list(preview.notes)}


#: Queries that may use Gaussian noise (the session offers it for counts and declared-key histograms).
GAUSSIAN_QUERIES = ("count", "histogram")
MECHANISMS = ("laplace", "gaussian")


def delta_total_param(value: Any) -> float:
    """The plan's total δ: 0 (pure ε-DP, Laplace only) or a number in (0, 0.1]."""
    delta = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(delta) and 0 <= delta <= 0.1):
        raise ParameterError("total_delta", "0 (pure ε-DP) or a number in (0, 0.1]", value)
    return float(f"{delta:.3g}")


def _mechanisms(total_delta: float, count_mechanism: str, histogram_mechanism: str) -> dict[str, str]:
    chosen = {"count": count_mechanism, "mean": "laplace", "histogram": histogram_mechanism}
    for name in GAUSSIAN_QUERIES:
        if chosen[name] not in MECHANISMS:
            raise ParameterError(f"{name}_mechanism", f"one of {list(MECHANISMS)}", chosen[name])
        if chosen[name] == "gaussian" and total_delta == 0:
            raise ParameterError("total_delta", "> 0 when a query uses Gaussian noise (its (ε, δ) needs a δ)", total_delta)
    return chosen


def _split_delta(total_delta: float, chosen: dict[str, str], shares: dict[str, float]) -> dict[str, float]:
    """δ split evenly across the Gaussian queries that run (Laplace queries spend none)."""
    gaussian = [n for n, m in chosen.items() if m == "gaussian" and shares[n] > 0]
    return {n: (total_delta / len(gaussian) if n in gaussian else 0.0) for n in chosen}


def _gaussian_sd(sensitivity: float, epsilons: npt.NDArray[np.float64], delta: float) -> list[float]:
    """σ of the analytic Gaussian (Balle–Wang) per ε: the planning figure (the release's
    discrete Gaussian is within its grid-rounding charge of it)."""
    return [analytic_gaussian_sigma(sensitivity, float(e), delta) for e in epsilons]


def plan(
    total_epsilon: float,
    count_epsilon: float,
    mean_epsilon: float,
    histogram_epsilon: float,
    total_delta: float = 0.0,
    count_mechanism: str = "laplace",
    histogram_mechanism: str = "laplace",
) -> dict[str, Any]:
    """Each query's Δ, its expected error at its ε and as a curve against ε; the plan's composed (ε, δ) and risk."""
    total = total_param(total_epsilon)
    shares = _query_epsilons(count_epsilon, mean_epsilon, histogram_epsilon)
    delta_total = delta_total_param(total_delta)
    chosen = _mechanisms(delta_total, count_mechanism, histogram_mechanism)
    deltas = _split_delta(delta_total, chosen, shares)
    composed = sum(shares.values())
    composed_delta = sum(deltas.values())
    queries = []
    for name, epsilon in shares.items():
        unit = _unit_error(name)
        gaussian = chosen[name] == "gaussian"
        sensitivity = float(unit["parts"][-1]["sensitivity"])
        if gaussian:
            curve = _gaussian_sd(sensitivity, CURVE_EPSILONS, deltas[name]) if deltas[name] > 0 else []
            expected = analytic_gaussian_sigma(sensitivity, epsilon, deltas[name]) if epsilon > 0 else None
        else:
            curve = (unit["sd_at_1"] / CURVE_EPSILONS).tolist()
            expected = unit["sd_at_1"] / epsilon if epsilon > 0 else None
        queries.append(
            {
                "name": name,
                "label": unit["query"],
                "epsilon": epsilon,
                "delta": deltas[name],
                "mechanism": chosen[name],
                "parts": [
                    {**p, "epsilon": p["epsilon"] * epsilon, "scale": p["scale"] / epsilon if epsilon else None}
                    for p in unit["parts"]
                ],
                "sensitivity": [p["sensitivity"] for p in unit["parts"]],
                "expected_sd": expected,
                "curve": {"epsilon": CURVE_EPSILONS.tolist(), "sd": curve},
                "notes": unit["notes"],
            }
        )
    priors = np.linspace(0.0, 1.0, 51)
    _, name = source()
    return {
        "data": name,
        "rows": ADULT_ROWS,
        "total_epsilon": total,
        "total_delta": delta_total,
        "composed_epsilon": composed,
        "composed_delta": composed_delta,
        "within_budget": composed <= total * (1 + 1e-12) and composed_delta <= delta_total * (1 + 1e-12),
        "queries": queries,
        "risk": {
            "epsilon": composed,
            "delta": composed_delta,
            "advantage": advantage(composed, composed_delta),
            "posterior_at_1pct": posterior(0.01, composed),
            "posterior_at_half": posterior(0.5, composed),
            "prior": priors.tolist(),
            "posterior": [posterior(float(p), composed) for p in priors],
            "advantage_curve": {
                "epsilon": CURVE_EPSILONS.tolist(),
                "advantage": [advantage(float(e), composed_delta) for e in CURVE_EPSILONS],
            },
        },
    }


class PlanLedger:
    """The server's ledger of released plans (SQLite in a temporary folder, one account per plan)."""

    def __init__(self, folder: str | None = None) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="dpwitness-planner-") if folder is None else None
        root = Path(folder) if folder is not None else Path(self._folder.name)  # type: ignore[union-attr]
        self.ledger = Ledger(root / "planner-ledger.sqlite")
        self._lock = threading.Lock()

    def release(
        self,
        plan_id: str,
        total_epsilon: float,
        count_epsilon: float,
        mean_epsilon: float,
        histogram_epsilon: float,
        total_delta: float = 0.0,
        count_mechanism: str = "laplace",
        histogram_mechanism: str = "laplace",
    ) -> dict[str, Any]:
        """Release every query of the plan through one ``Session`` on this ledger (account = plan id).

        The session's accountant refuses a query that would go over the plan's total: a second
        release of a spent plan gets ``BudgetExceeded`` before any data is read.
        """
        if not isinstance(plan_id, str) or not _PLAN_ID.match(plan_id):
            raise ParameterError("plan_id", "6-64 letters, digits, '-' or '_'", plan_id)
        total = total_param(total_epsilon)
        shares = _query_epsilons(count_epsilon, mean_epsilon, histogram_epsilon)
        delta_total = delta_total_param(total_delta)
        chosen = _mechanisms(delta_total, count_mechanism, histogram_mechanism)
        deltas = _split_delta(delta_total, chosen, shares)
        if sum(shares.values()) > total * (1 + 1e-12):
            raise BudgetExceeded(
                f"the plan spends ε = {sum(shares.values()):g}, more than its total {total:g}; nothing was released"
            )
        with self._lock:
            session = _session(total, ledger=self.ledger, account=f"plan-{plan_id}", delta_budget=delta_total or None)
            needed = sum(shares.values())
            if needed > session.remaining.epsilon * (1 + 1e-12):
                raise BudgetExceeded(
                    f"this plan has already spent ε = {session.spent.epsilon:g} of {total:g}; "
                    f"releasing it again needs {needed:g}; nothing was released"
                )
            answers = []
            for name, epsilon in shares.items():
                if epsilon <= 0:
                    continue
                spec = QUERIES[name]
                options = {**spec["options"], **({"delta": deltas[name]} if chosen[name] == "gaussian" else {})}
                query = session.query(spec["statistic"], spec["column"], epsilon=epsilon, **options)
                release = session.run(query, alpha=ALPHA, mechanism=chosen[name])
                answers.append({"name": name, "mechanism": chosen[name], **release.to_dict()})
            return {
                "plan_id": plan_id,
                "data": source()[1],
                "answers": answers,
                "spent": session.spent.epsilon,
                "spent_delta": session.spent.delta,
                "remaining": session.remaining.epsilon,
                "total_epsilon": total,
                "total_delta": delta_total,
                "history": [{"label": s.label, "epsilon": s.epsilon, "delta": s.delta} for s in session.history],
            }
