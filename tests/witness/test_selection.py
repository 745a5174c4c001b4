"""The witness's δ check of key selection on the sampled distribution (dpwitness.witness.selection).

The neighbours: D without one unit, D′ with it; the unit's own keys (L0 of them, Δ∞ rows each,
the worst case) exist in D′ only. The plan's own count mechanism is sampled with its own τ; a
key only D′ holds must be released with probability ≤ δ_threshold. Each check draws a fixed
number of runs from a fixed seed, with Clopper–Pearson bounds at 1 − 1e-9 each side: a false
"violation" has probability ≤ 1e-9. δ is taken large (0.1 and 1/60) so that the rate is
measured to a few per cent: a τ that is wrong by a fifth of its σ term fails the same check.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from dpwitness import Session
from dpwitness.common.errors import ParameterError
from dpwitness.mechanisms.additive import Gaussian
from dpwitness.privacy.accounting import gaussian_threshold
from dpwitness.query.planning import Plan
from dpwitness.witness.selection import selection_check

pytest.importorskip("scipy")  # the Clopper–Pearson bounds (the audit extra)

SAMPLES = 200_000


def _plan(**options: object) -> tuple[Plan, float]:
    """The Gaussian plan of a count by g over undeclared keys, and its δ_threshold."""
    unit = options.pop("unit", False)
    frame = pl.DataFrame({"g": ["a"], "pid": [1]})
    session_options = {"privacy_unit": "pid", "max_contributions": 2, "max_groups": 3} if unit else {}
    rho = options.pop("rho", None)
    if rho is not None:
        session = Session(frame, rho=1.0, delta_budget=0.5, max_rows=1, seed=1, **session_options)  # type: ignore[arg-type]
        plan = session._plan(session.query("count", by="g", epsilon=math.sqrt(2 * rho), delta=options["delta"]), rho=rho)  # type: ignore[arg-type]
    else:
        session = Session(frame, epsilon=10, delta_budget=0.5, max_rows=1, seed=1, **session_options)  # type: ignore[arg-type]
        plan = session._plan(session.query("count", by="g", epsilon=1.0, **options), "gaussian")  # type: ignore[arg-type]
    assert plan.threshold is not None and plan.threshold_delta is not None
    return plan, plan.threshold_delta


@pytest.mark.parametrize(
    ("options", "counts"),
    [
        ({"delta": 0.1}, [1.0]),  # one row, one key: L0 = Δ∞ = 1
        ({"delta": 0.1, "unit": True}, [2.0, 2.0, 2.0]),  # a unit in ≤ 3 keys with ≤ 2 rows each: L0 = 3, Δ∞ = 2
        ({"delta": 0.1, "rho": 0.3}, [1.0]),  # zCDP noise: all of δ is the selection's
    ],
    ids=["one-row", "unit-3-keys-2-rows", "rho"],
)
def test_a_key_only_one_neighbour_holds_is_released_at_most_delta_threshold(
    options: dict[str, object], counts: list[float]
) -> None:
    plan, delta = _plan(**dict(options))
    mechanism = plan.mechanisms[0]
    assert isinstance(mechanism, Gaussian)
    check = selection_check(mechanism, threshold=plan.threshold, counts=counts, delta=delta, samples=SAMPLES, seed=3)  # type: ignore[arg-type]
    assert check.verdict != "violation", str(check)
    assert check.upper > 0.5 * delta  # the τ is not wastefully high: the rate is near the δ it claims
    # the same check, run on thresholds that are wrong, fails
    noise = mechanism.noise
    assert noise is not None
    largest, keys = max(counts), len(counts)
    sigma_term = plan.threshold - largest  # type: ignore[operator]
    wrong = {
        "τ = Δ∞ (no σ term)": largest,
        "τ with 0.8 × its σ term": largest + 0.8 * sigma_term,
    }
    if keys > 1:  # τ for one key, when the unit creates L0 of them (no union over the keys)
        wrong["τ for L0 = 1"] = gaussian_threshold(
            sigma=noise.sigma, step=noise.granularity, tv=noise.tv_distance(), max_keys=1, max_count=largest, delta=delta
        )[0]
    for name, tau in wrong.items():
        bad = selection_check(mechanism, threshold=tau, counts=counts, delta=delta, samples=SAMPLES, seed=3)
        assert bad.verdict == "violation", f"{name}: {bad}"


def test_the_laplace_partition_threshold_passes_the_same_check() -> None:
    """One check for both kinds of selection: Laplace's τ (neighbours.partition_threshold) holds too."""
    session = Session(pl.DataFrame({"g": ["a"]}), epsilon=10, delta_budget=0.5, max_rows=1, seed=1)
    plan = session._plan(session.query("count", by="g", epsilon=1.0, delta=0.1), "laplace")
    assert plan.threshold is not None
    check = selection_check(plan.mechanisms[0], threshold=plan.threshold, counts=[1.0], delta=0.1, samples=SAMPLES, seed=4)
    assert check.verdict != "violation", str(check)
    assert (
        selection_check(plan.mechanisms[0], threshold=1.0, counts=[1.0], delta=0.1, samples=SAMPLES, seed=4).verdict
        == "violation"
    )


def test_the_check_names_its_bad_input() -> None:
    plan, delta = _plan(delta=0.1)
    for options, parameter in (({"counts": []}, "counts"), ({"samples": 0}, "samples"), ({"threshold": math.nan}, "threshold")):
        arguments = {"threshold": plan.threshold, "counts": [1.0], "delta": delta, **options}
        with pytest.raises(ParameterError) as caught:
            selection_check(plan.mechanisms[0], **arguments)  # type: ignore[arg-type]
        assert caught.value.parameter == parameter
