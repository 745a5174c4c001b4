"""Every rate an attack reports carries its Clopper–Pearson interval and is held to the DP cap through it.

At the README's 2000 trials the membership attack's TPR at FPR 0.001 is seen as 0.0035 above the
ε-DP cap 0.0027 (seed 0): sampling error, not a failure of DP. A correct mechanism must never be
reported as exceeding its cap (fixed seeds); one with too little noise must be.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import dpwitness.attacks.differencing as differencing
import dpwitness.attacks.membership as membership
import dpwitness.cli.redteam as redteam
from dpwitness.attacks.floating_point import floating_point_attack
from dpwitness.attacks.rates import CONSISTENT, EXCEEDS, rate_check
from dpwitness.cli import app
from dpwitness.mechanisms.additive import Laplace

pytest.importorskip("scipy")
runner = CliRunner()
POPULATION = np.array([39.0, 50.0, 38.0, 53.0, 28.0, 37.0, 49.0, 52.0, 31.0, 42.0, 37.0, 30.0] * 10)
README_TRIALS = 2000


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables one cell per line, so their headers and verdicts can be read back."""
    monkeypatch.setattr(redteam.console, "width", 400)


def _too_little_noise(factor: float) -> Any:
    """A Laplace with ``factor`` times the claimed ε: the broken mechanism the verdict must catch."""

    def build(*, sensitivity: float, epsilon: float) -> Laplace:
        return Laplace(sensitivity=sensitivity, epsilon=factor * epsilon)

    return build


def test_a_rate_is_held_to_its_cap_through_its_interval() -> None:
    seen = rate_check(7, 2000, 0.0027)  # 0.0035 > 0.0027, but 7 hits in 2000 are no evidence of that
    assert seen.rate == 0.0035 and seen.lower < 0.0027 < seen.upper and seen.verdict == CONSISTENT
    assert rate_check(30, 2000, 0.0027).verdict == EXCEEDS
    assert rate_check(0, 100, 0.0).verdict == CONSISTENT and rate_check(1, 100, 0.0).verdict == EXCEEDS


def test_a_correct_membership_release_is_never_reported_as_exceeding_its_cap() -> None:
    # the target at the bound loses the full ε: the attack reaches the cap, the hardest case for the verdict
    for seed in range(20):
        result = membership.membership_attack(
            POPULATION, target_value=100.0, bounds=(0, 100), epsilon=1.0, trials=README_TRIALS, seed=seed
        )
        payload = result.to_dict()
        for level, check in payload["tpr_check"].items():
            assert check["verdict"] == CONSISTENT, (seed, level, check)
            low, high = check["tpr_interval"]
            assert low <= check["tpr"] <= high and check["fpr"] <= float(level) < check["fpr_upper"]
            assert check["cap_at_fpr_upper"] >= check["cap_at_level"]
        assert payload["advantage_verdict"] == CONSISTENT


def test_too_little_noise_is_reported_as_exceeding_the_membership_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(membership, "Laplace", _too_little_noise(8.0))
    result = membership.membership_attack(
        POPULATION, target_value=100.0, bounds=(0, 100), epsilon=1.0, trials=README_TRIALS, seed=0
    )
    payload = result.to_dict()
    assert payload["tpr_check"]["0.01"]["verdict"] == EXCEEDS and payload["tpr_check"]["0.1"]["verdict"] == EXCEEDS
    assert payload["advantage_verdict"] == EXCEEDS
    assert result.tpr_check(0.1, epsilon=8.0).tpr.verdict == CONSISTENT  # against the ε it really has


def test_the_readme_membership_command_reports_intervals_and_stays_within_the_cap() -> None:
    done = runner.invoke(app, ["attack", "membership", "--trials", str(README_TRIALS), "--seed", "0", "--json"])
    assert done.exit_code == 0, done.output
    check = json.loads(done.stdout)["tpr_check"]["0.001"]
    assert check["tpr"] > check["cap_at_level"]  # the point estimate alone would look like a failure of DP
    assert check["tpr_interval"][0] <= check["cap_at_level"] and check["verdict"] == CONSISTENT
    table = runner.invoke(app, ["attack", "membership", "--trials", str(README_TRIALS), "--seed", "0"])
    text = " ".join(table.output.split())
    assert table.exit_code == 0 and "interval" in text and "jointly" in text and EXCEEDS not in text and "consistent" in text
    assert "threshold" in text and "FPR" in text


def test_differencing_success_carries_its_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in range(10):
        fair = differencing.differencing_attack(POPULATION, target=4, bounds=(0, 100), epsilon=1.0, seed=seed, trials=2000)
        low, high = fair.success_interval
        assert low <= fair.success_probability <= high and fair.verdict == CONSISTENT, seed
        assert fair.to_dict()["success_interval"] == [low, high]
    monkeypatch.setattr(differencing, "Laplace", _too_little_noise(20.0))
    broken = differencing.differencing_attack(POPULATION, target=4, bounds=(0, 100), epsilon=0.2, seed=0, trials=2000)
    assert broken.success_interval[0] > broken.bound and broken.verdict == EXCEEDS


def test_differencing_cli_prints_the_interval() -> None:
    done = runner.invoke(app, ["attack", "differencing", "--rows", "50", "--trials", "1000", "--repeats", "1", "--seed", "1"])
    text = " ".join(done.output.split())
    assert done.exit_code == 0 and "95% interval" in text and EXCEEDS not in text
    payload = json.loads(
        runner.invoke(app, ["attack", "differencing", "--rows", "50", "--trials", "1000", "--repeats", "1", "--json"]).stdout
    )
    assert {"success_interval", "verdict", "confidence"} <= set(payload["dp"][0])


def test_floating_point_rates_carry_their_intervals() -> None:
    result = floating_point_attack(samples=300, seed=4)
    naive, ours = result.to_dict()["naive"], result.to_dict()["dpwitness"]
    assert naive["verdict"] == EXCEEDS and naive["interval"][0] > 0.5 and naive["cap"] == 0.0
    assert ours["verdict"] == CONSISTENT and ours["interval"][0] == 0.0 < ours["interval"][1] < 0.01
    done = runner.invoke(app, ["attack", "floating-point", "--samples", "200", "--seed", "4"])
    text = " ".join(done.output.split())
    assert done.exit_code == 0 and "95% interval" in text and EXCEEDS in text and CONSISTENT in text
