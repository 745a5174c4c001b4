"""Gaussian noise (and zCDP) over undeclared keys: Gaussian thresholding (issue 30, item 2).

One path: Session count/sum/histogram with ``by=`` and no keys, ``mechanism="gaussian"`` with
``delta=`` (or ``rho=`` on a ρ account), SQL ``GROUP BY`` on a Gaussian session and the CLI
flags all plan through ``Session._plan``; τ and the δ split come from
``dpwitness.privacy.accounting``. The δ check of the sampled distribution is in
tests/witness/test_selection.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness import Session
from dpwitness.cli import app
from dpwitness.common.errors import ParameterError
from dpwitness.mechanisms.additive import Gaussian
from dpwitness.mechanisms.release import Release
from dpwitness.privacy.accounting import gaussian_selection_split, gaussian_tail, gaussian_tail_point, gaussian_threshold
from dpwitness.privacy.budget import Ledger

TRUTH = {"a": 6_000, "b": 3_000, "c": 999, "rare": 1}


def frame() -> pl.DataFrame:
    groups = [g for g, n in TRUTH.items() for _ in range(n)]
    return pl.DataFrame({"g": groups, "x": np.linspace(0.0, 10.0, len(groups))})


# --- the formula, in one place ----------------------------------------------------------------


def test_tau_is_the_largest_count_plus_two_steps_plus_the_normal_quantile() -> None:
    sigma, step, tv = 4.0, 2.0**-14, 1e-15
    tau, delta = gaussian_threshold(sigma=sigma, step=step, tv=tv, max_keys=3, max_count=2, delta=3e-6)
    from statistics import NormalDist

    assert tau == pytest.approx(2 + 2 * step + sigma * NormalDist().inv_cdf(1 - (1e-6 - tv)), rel=1e-9)
    assert delta <= 3e-6 and delta == pytest.approx(3e-6, rel=1e-6)
    assert 3 * (gaussian_tail(sigma, tau - 2 - 2 * step) + tv) <= 3e-6  # the union bound holds at τ
    # more keys or a larger count need a higher τ; a larger δ a lower one
    assert gaussian_threshold(sigma=sigma, step=step, tv=tv, max_keys=6, max_count=2, delta=3e-6)[0] > tau
    assert gaussian_threshold(sigma=sigma, step=step, tv=tv, max_keys=3, max_count=3, delta=3e-6)[0] == pytest.approx(tau + 1)
    assert gaussian_threshold(sigma=sigma, step=step, tv=tv, max_keys=3, max_count=2, delta=3e-5)[0] < tau


def test_the_split_is_exact_and_the_tail_point_is_never_too_low() -> None:
    for delta in (1e-6, 3e-7, 0.1, 1 / 3):
        noise, threshold = gaussian_selection_split(delta)
        assert noise + threshold == delta and threshold == delta / 2
    for p in (0.3, 0.025, 1e-6, 1e-12):
        point = gaussian_tail_point(2.5, p)
        assert gaussian_tail(2.5, point) <= p and gaussian_tail(2.5, point * (1 - 1e-9)) > p * (1 - 1e-6)
    for bad in (0.0, 1.0, -1e-6, math.nan):
        with pytest.raises(ParameterError) as caught:
            gaussian_selection_split(bad)
        assert caught.value.parameter == "delta"


# --- the statistics ---------------------------------------------------------------------------


def test_a_gaussian_count_over_undeclared_keys_states_sigma_tau_and_the_delta_parts() -> None:
    session = Session(frame(), epsilon=4, delta_budget=1e-5, max_rows=100_000, seed=5)
    release = session.count(by="g", epsilon=1, delta=1e-6, mechanism="gaussian")
    assert release.distribution == "gaussian" and release.delta == 1e-6 and release.epsilon == 1
    selection = release.selection
    assert selection is not None and selection["mechanism"] == "gaussian"
    assert selection["delta_noise"] == selection["delta_threshold"] == 5e-7
    assert isinstance(release.mechanism, Gaussian) and selection["sigma"] == release.mechanism.sigma == release.scale
    assert selection["threshold"] == pytest.approx(1 + selection["sigma"] * 4.892, rel=1e-3)  # Φ⁻¹(1 − 5e-7) ≈ 4.892
    assert set(release.value) == {"a", "b", "c"}  # "rare" (one row) is far below τ ≈ 21
    for key, value in release.value.items():  # type: ignore[union-attr]
        assert abs(value - TRUTH[key]) < 6 * selection["sigma"]
    assert any("Gaussian thresholding" in note and "τ = " in note for note in release.notes)
    spend = session.history[-1]
    assert (spend.epsilon, spend.delta, spend.selection_delta) == (1, 1e-6, 5e-7) and spend.rho > 0
    archived = Release.from_dict(json.loads(json.dumps(release.to_dict())))
    assert archived.selection == selection and release.to_dict()["selection"]["threshold"] == selection["threshold"]


def test_a_gaussian_sum_selects_its_keys_with_a_gaussian_count() -> None:
    session = Session(frame(), epsilon=4, delta_budget=1e-5, max_rows=100_000, seed=6)
    release = session.sum("x", (0, 10), by="g", epsilon=2, delta=1e-6, mechanism="gaussian")  # δ ≤ 1/(10·max_rows)
    truth = frame().group_by("g").agg(pl.col("x").sum())
    sums = dict(zip(truth["g"], truth["x"], strict=True))
    assert release.distribution == "gaussian" and set(release.value) == {"a", "b", "c"}
    assert release.selection is not None and release.selection["delta_threshold"] == 5e-7
    for key, value in release.value.items():  # type: ignore[union-attr]
        assert abs(value - sums[key]) < 6 * release.scale
    assert session.history[-1].delta == 1e-6 and session.history[-1].epsilon == pytest.approx(2)
    assert any("2 noisy part(s)" in n or "δ = 5e-07 for the noise" in n for n in release.notes)


def test_a_rho_count_over_undeclared_keys_spends_rho_and_the_selection_delta() -> None:
    session = Session(frame(), rho=1.0, delta_budget=1e-5, max_rows=100_000, seed=7)
    release = session.count(by="g", rho=0.1, delta=1e-6)
    assert release.distribution == "gaussian" and release.rho == pytest.approx(0.1) and math.isinf(release.epsilon)
    assert release.selection is not None and release.selection["delta_noise"] == 0.0
    assert release.selection["delta_threshold"] == 1e-6 and set(release.value) == {"a", "b", "c"}
    assert session.spent.rho == pytest.approx(0.1) and session.history[-1].selection_delta == 1e-6
    assert session.remaining.delta == pytest.approx(9e-6)


def test_auto_over_undeclared_keys_compares_the_gaussian_with_its_halved_delta() -> None:
    """auto weighs Gaussian thresholding (σ at δ/2) against Laplace, and falls back to Laplace when δ is
    too small to split (δ/2 below the smallest δ the Gaussian sampler calibrates, 1e-10)."""
    session = Session(frame(), epsilon=8, delta_budget=1e-5, max_rows=100_000, seed=9)
    one = session.count(by="g", epsilon=1, delta=1e-6, mechanism="auto")  # one key per unit: Laplace's variance is smaller
    assert one.distribution == "laplace" and any("auto: variance" in n for n in one.notes)
    tiny = session.count(by="g", epsilon=1, delta=1.5e-10, mechanism="auto")
    assert tiny.distribution == "laplace" and any("too small to split" in n for n in tiny.notes)
    grouped = Session(
        frame().with_columns(pid=pl.int_range(pl.len()) // 20),
        epsilon=8,
        delta_budget=1e-3,
        max_rows=1_000,
        seed=9,
        privacy_unit="pid",
        max_contributions=1,
        max_groups=30,
    )
    many = grouped.count(by="g", epsilon=1, delta=1e-4, mechanism="auto")  # a unit in ≤ 30 keys: L2 Δ = √30, L1 Δ = 30
    assert many.distribution == "gaussian" and many.selection is not None


def test_a_preview_shows_the_gaussian_threshold_and_spends_nothing() -> None:
    session = Session(frame(), epsilon=4, delta_budget=1e-5, max_rows=100_000)
    preview = session.preview("histogram", "g", epsilon=1, delta=1e-6, mechanism="gaussian")
    assert preview.parts[0]["mechanism"] == "gaussian" and preview.threshold is not None and preview.threshold > 20
    assert session.history == []


def test_sql_group_by_on_a_gaussian_session_uses_gaussian_thresholding() -> None:
    session = Session(frame(), epsilon=4, delta_budget=1e-5, max_rows=100_000, mechanism="gaussian", seed=8)
    answer = session.sql("SELECT g, COUNT(*) AS n FROM data GROUP BY g", epsilon=1)
    (release,) = answer.releases
    assert release.distribution == "gaussian" and release.selection is not None
    assert {row[0] for row in answer.rows} == {"a", "b", "c"}


def test_the_cli_releases_a_gaussian_count_over_undeclared_keys(tmp_path: Path) -> None:
    path = tmp_path / "g.csv"
    frame().write_csv(path)
    args = [str(path), "--epsilon", "2", "--delta-budget", "1e-5", "--seed", "4", "--json"]
    args += ["--count", "--by", "g", "--mechanism", "gaussian", "--max-rows", "100000"]
    result = CliRunner().invoke(app, ["query", *args])
    assert result.exit_code == 0, result.output
    (release,) = json.loads(result.stdout)["releases"]
    assert release["distribution"] == "gaussian" and release["selection"]["mechanism"] == "gaussian"
    assert release["selection"]["delta_noise"] + release["selection"]["delta_threshold"] == release["delta"]
    text = CliRunner().invoke(app, ["query", *[a for a in args if a != "--json"]]).output
    assert "Gaussian σ = " in text and "keys with noisy count ≥ τ = " in text and "noise + " in text  # on the one line


def test_the_sql_command_takes_the_gaussian_mechanism_for_undeclared_group_by_keys(tmp_path: Path) -> None:
    path = tmp_path / "g.csv"
    frame().write_csv(path)
    statement = "SELECT g, COUNT(*) AS n FROM g GROUP BY g"
    args = ["sql", str(path), statement, "--epsilon", "1", "--delta-budget", "1e-5", "--max-rows", "100000", "--seed", "2"]
    result = CliRunner().invoke(app, [*args, "--mechanism", "gaussian", "--json"])
    assert result.exit_code == 0, result.output
    (release,) = json.loads(result.stdout)["releases"]
    assert release["mechanism"] == "gaussian" and release["selection"]["mechanism"] == "gaussian"
    text = CliRunner().invoke(app, [*args, "--mechanism", "gaussian"]).stdout
    assert "gaussian σ = " in text and "keys whose noisy count ≥ τ = " in text
    bad = CliRunner().invoke(app, [*args, "--mechanism", "gauss", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["parameter"] == "--mechanism"


# --- bad input: one line naming the parameter, before any spend --------------------------------


@pytest.mark.parametrize(
    ("total", "call", "named"),
    [
        ({"epsilon": 1.0}, {"epsilon": 0.1, "mechanism": "gaussian"}, "delta_budget"),  # no δ and no ρ on the account
        ({"epsilon": 1.0, "delta_budget": 1e-5}, {"epsilon": 0.1, "mechanism": "gaussian", "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "delta_budget": 1e-5}, {"epsilon": 0.1, "mechanism": "gaussian", "delta": 1.5}, "delta"),
        ({"epsilon": 1.0, "delta_budget": 1e-5}, {"epsilon": 0.1, "mechanism": "gaussian", "delta": 1e-10}, "delta"),
        ({"epsilon": 1.0, "delta_budget": 1e-5}, {"epsilon": 0.1, "mechanism": "gaussian", "delta": 1e-4}, "delta"),
        ({"rho": 0.5, "delta_budget": 1e-5}, {"rho": -1.0}, "rho"),
        ({"rho": 0.5}, {"rho": 0.01}, "delta_budget"),  # a ρ account with no δ for the selection
    ],
    ids=[
        "no-delta-no-rho",
        "delta-0",
        "delta-above-1",
        "delta-too-small-to-split",
        "delta-above-the-cap",
        "rho-negative",
        "rho-no-delta",
    ],
)
def test_bad_gaussian_input_is_one_line_naming_the_parameter_before_any_spend(
    tmp_path: Path, total: dict[str, Any], call: dict[str, Any], named: str
) -> None:
    ledger = tmp_path / "l.db"
    session = Session(frame(), ledger=ledger, account="t", max_rows=100_000, **total)
    with pytest.raises(ParameterError) as caught:
        session.count(by="g", **call)
    message = str(caught.value)
    assert caught.value.parameter == named and "\n" not in message
    assert "rare" not in message and "6000" not in message  # no data value quoted
    assert not Ledger(ledger).history("t")
