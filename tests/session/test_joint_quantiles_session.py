"""`Session.quantile(..., joint=True)`: JointExp behind the one resolver, over the engine's exact
bin counts, charged ε once, its utility Δ derived in `Query` (× k rows per privacy unit)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import dpwitness as dw
from dpwitness.mechanisms.joint_quantiles import JointQuantileRelease, bin_counts, joint_quantiles, utility_sensitivity
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.query.resolve import Request

LEVELS = (0.25, 0.5, 0.75)


@pytest.fixture
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    return pl.DataFrame({"age": rng.integers(18, 90, 2000).astype(float), "pid": np.arange(2000) // 4})


def test_joint_quantiles_are_one_jointexp_draw_over_the_exact_bin_counts(frame: pl.DataFrame) -> None:
    session = dw.Session(frame, epsilon=2.0, seed=11)
    release = session.quantile("age", list(LEVELS), (0, 100), epsilon=1.0, joint=True, bins=512)
    assert isinstance(release, JointQuantileRelease) and set(release.value) == set(LEVELS)
    assert session.spent.epsilon == pytest.approx(1.0) and len(session.history) == 1  # ε charged once
    assert release.sensitivity == utility_sensitivity(LEVELS, Neighbours.ADD_REMOVE) == 1.5
    exact = np.quantile(frame["age"].to_numpy(), LEVELS)
    width = 100 / 512
    for q, value in release.value.items():
        assert abs(value - exact[LEVELS.index(q)]) < 5, (q, value)
        assert abs(value / width - round(value / width)) < 1e-9  # grid edges only
    assert "JointExp" in " ".join(release.notes) and "Laplace vector" not in " ".join(release.notes)


def test_the_session_feeds_the_engines_exact_counts(frame: pl.DataFrame) -> None:
    """Calibrated as the mechanism on bin_counts of the same column: the same utility, Δ and scale."""
    session = dw.Session(frame, epsilon=2.0, seed=3)
    release = session.quantile("age", list(LEVELS), (0, 100), epsilon=1.0, joint=True, bins=256)
    direct = joint_quantiles(
        bin_counts(frame["age"].to_numpy(), (0, 100), 256), LEVELS, bounds=(0, 100), epsilon=1.0, neighbours="add-remove"
    )
    assert release.scale == direct.scale and release.rank_error == direct.rank_error


def test_a_unit_of_k_rows_multiplies_the_utility_delta_by_k(frame: pl.DataFrame) -> None:
    one = dw.Session(frame, epsilon=2.0).query("quantile", "age", epsilon=1.0, bounds=(0, 100), quantiles=LEVELS, joint=True)
    unit = dw.Session(frame, epsilon=2.0, privacy_unit="pid", max_contributions=4)
    per_unit = unit.query("quantile", "age", epsilon=1.0, bounds=(0, 100), quantiles=LEVELS, joint=True)
    assert one.parts[0].sensitivity == 1.5 and per_unit.parts[0].sensitivity == 4 * 1.5
    replaced = dw.Session(frame, epsilon=2.0, neighbours="replace-one", privacy_unit="pid", max_contributions=4)
    assert replaced.query("quantile", "age", epsilon=1.0, bounds=(0, 100), quantiles=LEVELS, joint=True).parts[0].sensitivity == 8
    release = unit.quantile("age", list(LEVELS), (0, 100), epsilon=1.0, joint=True, bins=128)
    assert release.sensitivity == 6.0 and "× 4 rows per unit" in " ".join(release.notes)


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"q": [0.5, 0.25], "bounds": (0, 100)}, "q"),  # not increasing
        ({"q": [0.0, 0.5], "bounds": (0, 100)}, "q"),  # 0 is not in (0, 1)
        ({"q": [0.5, 0.5], "bounds": (0, 100)}, "q"),
        ({"q": [0.25, 0.75]}, "bounds"),  # no bounds, no schema
        ({"q": [0.25, 0.75], "bounds": (0, 100), "by": "g"}, "by"),  # ungrouped only
        ({"q": [0.25, 0.75], "bounds": (0, 100), "mechanism": "gaussian"}, "mechanism"),
    ],
)
def test_bad_joint_requests_are_refused_before_the_spend(frame: pl.DataFrame, options: dict[str, object], parameter: str) -> None:
    session = dw.Session(frame.with_columns(g=pl.lit("a")), epsilon=2.0, delta_budget=1e-5)
    with pytest.raises(dw.ParameterError) as refused:
        session.quantile("age", epsilon=1.0, joint=True, **options)  # type: ignore[arg-type]
    assert refused.value.parameter == parameter and "\n" not in str(refused.value)
    assert session.spent.epsilon == 0 and not session.releases


def test_joint_is_only_for_a_quantile(frame: pl.DataFrame) -> None:
    session = dw.Session(frame, epsilon=2.0)
    with pytest.raises(dw.ParameterError, match="joint"):
        session.ask(Request("sum", "age", epsilon=1.0, bounds=(0, 100), joint=True))
