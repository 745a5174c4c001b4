"""The red team: differencing, membership inference, floating point and tamper, against their bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwitness import Laplace, ParameterError, witness
from dpwitness.attacks.differencing import differencing_attack, success_bound
from dpwitness.attacks.floating_point import floating_point_attack, grid_can_produce, naive_can_produce, numpy_laplace_noise
from dpwitness.attacks.membership import membership_attack, tpr_bound
from dpwitness.attacks.tamper import MISTAKES, TAMPERS, inverted_laplace, tamper_attack
from dpwitness.common.data import adult_column

AGES = np.array([39.0, 50.0, 38.0, 53.0, 28.0, 37.0, 49.0, 52.0, 31.0, 42.0, 37.0, 30.0])


# --- differencing ----------------------------------------------------------------------------


def test_exact_answers_reveal_the_target_with_certainty() -> None:
    result = differencing_attack(AGES, target=4, bounds=(0, 100))
    assert result.recovered and result.estimate == result.true_value == 28.0
    assert result.success_probability == 1.0 and result.epsilon_spent == math.inf


def test_dp_answers_are_bounded_by_the_budget() -> None:
    one = differencing_attack(AGES, target=4, bounds=(0, 100), epsilon=1.0, seed=1, trials=20_000)
    assert one.bound == pytest.approx(math.e / (1 + math.e))
    assert 0.5 < one.success_probability <= one.bound
    # the difference Z of two Laplace(b) answers, decided at the midpoint z of 28 and 100:
    # P(Z > z) = ½e^(−z/b)(1 + z/2b), b = 100
    z, b = (one.alternative - one.true_value) / 2, 100.0
    assert one.success_probability == pytest.approx(1 - 0.5 * math.exp(-z / b) * (1 + z / (2 * b)), abs=0.012)
    assert one.epsilon_spent == 2.0 and one.target_loss <= 1.0
    many = differencing_attack(AGES, target=4, bounds=(0, 100), epsilon=1.0, repeats=20, seed=1, trials=5_000)
    assert many.success_probability > one.success_probability
    assert many.success_probability <= many.bound and many.epsilon_spent == 40.0


def test_differencing_rejects_bad_input() -> None:
    with pytest.raises(ParameterError):
        differencing_attack(AGES, target=99, bounds=(0, 100))
    with pytest.raises(ParameterError):
        differencing_attack(AGES, target=1, bounds=(10, 0))
    with pytest.raises(ParameterError):
        differencing_attack(AGES, target=1, bounds=(0, 100), epsilon=0.0)
    assert success_bound(math.inf) == 1.0


# --- membership ------------------------------------------------------------------------------


def test_membership_attack_respects_the_dp_cap() -> None:
    result = membership_attack(AGES[1:], target_value=AGES[0], bounds=(0, 100), epsilon=1.0, trials=20_000, seed=2)
    fpr, tpr = result.roc
    assert fpr[0] == 0 and tpr[-1] == 1 and np.all(np.diff(fpr) >= 0)
    assert 0.5 < result.auc < 0.75
    assert result.bound == pytest.approx(math.tanh(0.5)) and result.likelihood_ratio_bound == pytest.approx(math.e)
    assert result.advantage <= result.bound + 0.02
    assert result.advantage > 0.1  # the attack does work, within the cap
    for level in (1e-3, 1e-2, 0.1):
        assert (
            result.tpr_at_fpr(level) <= float(tpr_bound(level, 1.0)) + 3 * math.sqrt(float(tpr_bound(level, 1.0)) / 20_000) + 1e-3
        )
    # the likelihood-ratio test is tight: at small FPR it reaches e^(target's loss)·FPR
    assert result.target_loss == pytest.approx(39.0 / 100.0, rel=1e-6)
    assert result.tpr_at_fpr(0.1) == pytest.approx(math.exp(0.39) * 0.1, abs=0.015)
    weak = membership_attack(AGES[1:], target_value=AGES[0], bounds=(0, 100), epsilon=0.05, trials=5_000, seed=2)
    assert weak.auc < result.auc and weak.advantage < 0.1


def test_membership_on_adult() -> None:
    ages = adult_column("age")
    if ages is None:
        pytest.skip("../shared/data/adult.csv not found")
    result = membership_attack(ages[1:], target_value=ages[0], bounds=(0, 100), epsilon=1.0, trials=5_000, seed=3)
    assert result.population == len(ages) - 1 and result.advantage <= result.bound + 0.03
    assert set(result.to_dict()["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}


# --- floating point --------------------------------------------------------------------------


def test_the_numpy_sampler_is_reproduced_exactly() -> None:
    rng, twin = np.random.default_rng(5), np.random.default_rng(5)
    drawn = rng.laplace(0.0, 1.7, 5_000)
    ks = twin.bit_generator.random_raw(5_000) >> np.uint64(11)
    assert all(numpy_laplace_noise(int(k), 1.7) == x for k, x in zip(ks, drawn, strict=True))
    assert all(naive_can_produce(float(1.0 + x), 1.0, 1.7) for x in drawn[:2000])


def test_floating_point_attack_identifies_naive_outputs_and_none_of_ours() -> None:
    result = floating_point_attack(samples=3_000, seed=4)
    payload = result.to_dict()
    assert payload["naive"]["identification_rate"] > 0.5
    assert payload["dpwitness"]["identification_rate"] == 0.0
    mechanism = Laplace(sensitivity=1.0, epsilon=1.0)
    assert grid_can_produce(float(mechanism.release(0.3, seed=1)), mechanism)
    assert not grid_can_produce(0.1 + 2.0**-50, mechanism)


# --- tamper ----------------------------------------------------------------------------------


def test_tamper_builders_for_the_witness_cli() -> None:
    assert set(TAMPERS) >= {"invert", "add-remove"}
    assert not witness(TAMPERS["add-remove"](sensitivity=2.0, epsilon=0.5)).ok
    assert witness(inverted_laplace(sensitivity=1.0, epsilon=0.5)).worst_log_ratio == pytest.approx(2.0, rel=1e-6)


def test_every_mistake_is_flagged_by_the_auditor() -> None:
    results = tamper_attack(epsilon=0.5, samples=200_000, seed=5)
    assert [r.name for r in results] == list(MISTAKES)
    for r in results:
        assert r.flagged, (r.name, r.audit)
        assert r.audit.epsilon_lower_bound <= r.true_loss * (1 + 1e-9)
        if r.witness_applies:
            assert "VIOLATED" in r.witness_verdict or r.witness_loss > 0.5, r.name
    assert not next(r for r in results if r.name == "fixed-seed").witness_applies
    with pytest.raises(ParameterError):
        tamper_attack(["nonsense"])
