"""The auditor's former blind spots (issue 18, part 4): NaN and ±∞ outcomes, ties between
coordinates, the float test's blindness, replay of the noise alone, verdicts that agree with bounds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpwitness import Laplace, ParameterError, audit
from dpwitness.witness.audit import AuditResult, MechanismError, Sampler, agree_with_bounds
from dpwitness.witness.cases import releases
from dpwitness.witness.events import precision_bits

# --- NaN and ±∞ are outcomes -----------------------------------------------------------------


def noisy_sum(values: list[float], rng: np.random.Generator) -> float:
    """A sum as often written: no NaN handling, so one NaN record makes the release NaN."""
    return float(np.sum(values)) + rng.laplace(0.0, 1.0)


def test_a_nan_release_is_an_outcome_and_its_leak_is_caught() -> None:
    result = audit(noisy_sum, [1.0, 2.0, 3.0], [1.0, 2.0, math.nan], epsilon=1.0, samples=2000, seed=1)
    assert result.violated, result
    assert result.epsilon_lower_bound > 3  # NaN only ever comes from d′: ε = ∞
    assert result.event is not None and "shape" in result.event

    def vectorised(values: list[float], rng: np.random.Generator, size: int) -> Any:
        return np.sum(values) + rng.laplace(0.0, 1.0, size)

    assert audit(vectorised, [1.0, 2.0], [1.0, math.nan], epsilon=1.0, samples=2000, seed=1).violated


def test_nan_on_both_inputs_alike_is_no_violation() -> None:
    def sometimes_nan(x: float, rng: np.random.Generator) -> float:
        return math.nan if rng.random() < 0.3 else x + rng.laplace(0.0, 1.0)

    result = audit(sometimes_nan, 0.0, 1.0, epsilon=1.0, samples=100_000, seed=2)
    assert not result.violated and result.epsilon_lower_bound <= 1.0
    assert audit(sometimes_nan, 0.0, 1.0, epsilon=0.8, samples=100_000, seed=2).violated  # the finite part still counts
    constant = audit(lambda x, rng: math.nan, 0.0, 1.0, epsilon=1.0, samples=100)
    assert constant.verdict == "ok" and constant.event is None  # NaN on both, always: nothing leaks


def test_infinity_is_an_outcome() -> None:
    def overflowing_sum(values: list[float], rng: np.random.Generator, size: int) -> Any:
        with np.errstate(over="ignore"):
            return np.float64(values[0]) + np.float64(values[1]) + rng.laplace(0.0, 1.0, size)

    result = audit(overflowing_sum, [1e308, 0.0], [1e308, 1e308], epsilon=1.0, samples=2000, seed=3)
    assert result.violated and result.epsilon_lower_bound > 3, result
    array_nan = audit(lambda x, rng: np.array([x, math.nan if x > 0 else 0.0]), 0.0, 1.0, epsilon=1.0, samples=200)
    assert array_nan.violated  # a NaN inside an array output marks its shape


def test_per_call_rows_match_the_encoder() -> None:
    """The per-call fast path gives the rows and shape codes that the general Encoder gives."""
    for outputs in (
        [1.5, -2.0, math.nan, math.inf],
        [True, False, True],
        [np.array([1.0, math.nan]), np.array([2.0, 3.0])],
        [np.int64(3), np.int64(-1)],
    ):
        fast, slow = Sampler(lambda x, rng: x, 1e18), Sampler(lambda x, rng: x, 1e18)
        got, want = fast._rows_of(list(outputs), "d"), slow.encoder.rows(list(outputs), "d")
        np.testing.assert_array_equal(got[:, 1:], want[:, 1:])
        assert set(fast.encoder.shapes) == set(slow.encoder.shapes)  # the same shapes, numbered in any order
        names_fast = {code: name for name, code in fast.encoder.shapes.items()}
        names_slow = {code: name for name, code in slow.encoder.shapes.items()}
        assert [names_fast[c] for c in got[:, 0]] == [names_slow[c] for c in want[:, 0]]


# --- ties between coordinates ----------------------------------------------------------------


def counts_with_filled_keys(records: list[str], rng: np.random.Generator) -> tuple[float, ...]:
    """Noisy counts per declared key; a key with no record is filled with the previous key's noisy
    count (a forward fill, as a report table often is): one noisy value copied to a missing key."""
    keys = ("a", "b", "c", "d")
    noisy: dict[str, float] = {}
    previous = 0.0
    for key in keys:
        n = records.count(key)
        previous = n + rng.laplace(0.0, 1.0) if n else previous
        noisy[key] = previous
    return tuple(noisy[k] for k in keys)


def test_a_value_copied_to_a_missing_key_is_caught_from_80_runs() -> None:
    d, d_prime = ["a", "b", "c", "d"], ["a", "b", "d"]  # one record removed: key c has none left
    result = audit(counts_with_filled_keys, d, d_prime, epsilon=1.0, samples=80, seed=4)
    assert result.violated, result
    assert result.family == "ties" and result.epsilon_lower_bound > 1.0
    correct = audit(counts_with_filled_keys, ["a", "b", "c", "d"], ["a", "b", "c", "d", "d"], epsilon=1.0, samples=2000, seed=4)
    assert not correct.violated  # no key missing: independent noise, no tie


# --- the float test says inconclusive where it is blind --------------------------------------


def float_laplace(x: float, rng: np.random.Generator, size: int) -> Any:
    """Laplace noise as usually written: a float plus numpy's float Laplace (porous in the low bits)."""
    return x + rng.laplace(0.0, 1.0, size)


@pytest.mark.parametrize("x", [100.0, 1000.0, 12345.0, 1e6, -300.0])
def test_the_float_test_never_says_ok_on_full_precision_floats(x: float) -> None:
    result = audit(float_laplace, x, x + 1.0, epsilon=1.0, samples=200_000, seed=5, float_test=True)
    assert result.verdict != "ok", result
    assert result.violated or "float test is blind" in result.reason
    assert dict(result.power)["bit pattern"] == math.inf or result.violated
    # the default (real-number) audit is allowed its "ok": it says it does not judge doubles
    assert audit(float_laplace, x, x + 1.0, epsilon=1.0, samples=200_000, seed=5).verdict == "ok"


def test_the_float_test_keeps_its_ok_on_grid_outputs() -> None:
    grid_mechanism = releases(Laplace(sensitivity=1.0, epsilon=1.0))
    grid = audit(grid_mechanism, 100.0, 101.0, epsilon=1.0, samples=400_000, seed=6, float_test=True)
    assert grid.verdict == "ok", grid

    def geometric(x: int, rng: np.random.Generator, size: int) -> Any:
        p = 1.0 - math.exp(-1.0)
        return x + rng.geometric(p, size) - rng.geometric(p, size)

    assert audit(geometric, 100, 101, epsilon=1.0, samples=200_000, seed=6, float_test=True).verdict == "ok"
    assert precision_bits(np.array([100.0 + 2.0**-46, 3.0])) == 53
    assert precision_bits(np.array([1024.0, 3.0, 0.0])) == 11


# --- replay: only the noise is sampled -------------------------------------------------------


def test_replay_samples_the_noise_on_frozen_pre_noise_values() -> None:
    calls: list[Any] = []

    def slow_pipeline(records: list[float]) -> float:
        calls.append(records)  # a slow target: its pre-noise value, computed once per input
        return float(np.clip(records, 0.0, 10.0).sum())

    def noise(frozen: float, rng: np.random.Generator, size: int) -> Any:
        return frozen + rng.laplace(0.0, 10.0, size)  # Δ = 10, ε = 1

    d, d_prime = [1.0, 2.0, 3.0], [1.0, 2.0, 13.0]
    result = audit(slow_pipeline, d, d_prime, replay=noise, epsilon=1.0, samples=200_000, seed=7)
    assert calls == [d, d_prime] and result.replayed and "replayed" in result.model
    assert not result.violated and result.epsilon_lower_bound > 0.6

    def under_noised(frozen: float, rng: np.random.Generator) -> float:
        return frozen + rng.laplace(0.0, 5.0)  # per-call noise sampler, half the scale: loss 1.4

    broken = audit(slow_pipeline, d, d_prime, replay=under_noised, epsilon=1.0, samples=100_000, seed=7)
    assert broken.violated and 1.0 < broken.epsilon_lower_bound <= 1.4
    with pytest.raises(ParameterError) as error:
        audit(slow_pipeline, d, d_prime, replay=3, epsilon=1.0)  # type: ignore[arg-type]
    assert error.value.parameter == "replay"
    with pytest.raises(MechanismError, match="freezing"):
        audit(lambda data: 1 / 0, d, d_prime, replay=noise, epsilon=1.0, samples=100)


# --- the verdict agrees with the bounds beside it --------------------------------------------


@pytest.mark.slow
def test_a_tight_bound_above_epsilon_is_a_violation() -> None:
    def laplace_02(x: float, rng: np.random.Generator, size: int) -> Any:
        return x + rng.laplace(0.0, 1 / 0.2, size)  # loss 0.2, claimed 0.1

    # the fast phase sees 1 000 runs (far too few to prove 0.2 > 0.1); the tight phase millions
    result = audit(laplace_02, 0.0, 1.0, epsilon=0.1, max_samples=1000, seed=8, tight=True, max_seconds=6)
    assert result.tight_epsilon_lower_bound is not None and result.tight_epsilon_lower_bound > 0.1, result
    assert result.epsilon_lower_bound <= 0.1  # the fast bound alone proves nothing
    assert result.verdict == "violated" and result.violated and "tight measurement certifies" in result.reason

    def laplace_09(x: float, rng: np.random.Generator, size: int) -> Any:
        return x + rng.laplace(0.0, 1 / 0.9, size)  # loss 0.9, claimed 1: a bound above 1 would be off by 0.1

    # not float_laplace at its exact ε: a 95% bound on a mechanism whose loss *is* ε lands above ε
    # in up to 5% of runs by design, and the tight mode's sample count follows the CPU it gets
    correct = audit(laplace_09, 0.0, 1.0, epsilon=1.0, seed=8, tight=True, max_seconds=4)
    assert not correct.violated and correct.best_epsilon_lower_bound <= 1.0, correct
    assert correct.best_epsilon_lower_bound > 0.6, correct  # the tight mode did measure it


def test_agree_with_bounds_only_ever_raises_a_supported_violation() -> None:
    base = AuditResult(0.05, 0.1, 0.0, False, "inconclusive", "X ≤ 0", 1000, 0.9, 1.0)
    assert agree_with_bounds(base) == base
    assert agree_with_bounds(AuditResult(0.05, 0.1, 0.0, False, "ok", "X ≤ 0", 1000, 0.9, 1.0)).verdict == "ok"
    lifted = agree_with_bounds(AuditResult(0.05, 0.1, 0.0, False, "ok", "X ≤ 0", 1000, 0.9, 1.0, tight_epsilon_lower_bound=0.129))
    assert lifted.verdict == "violated" and lifted.violated
    assert agree_with_bounds(replace_bound(base, 0.1)).verdict == "inconclusive"  # equal to ε: not above it


def replace_bound(result: AuditResult, tight: float) -> AuditResult:
    from dataclasses import replace

    return replace(result, tight_epsilon_lower_bound=tight)


# --- the tight search's histogram-ratio events -----------------------------------------------


def test_binned_rows_threshold_a_histogram_estimate_of_the_log_ratio() -> None:
    """Rows (k, value): the value's meaning depends on k. Binned whole rows sorted by likelihood
    ratio find the cell where the densities differ, and the event replays on fresh rows."""
    from dpwitness.witness.events import Scorer, search

    rng = np.random.default_rng(12)

    def rows(shift: float, n: int) -> Any:
        k = rng.integers(0, 3, n).astype(np.float64)
        value = rng.laplace(0.0, 1.0, n) + np.where(k == 2, shift, 0.0)  # only k = 2 carries the input
        return np.column_stack([k, value])

    xa, xb = rows(0.0, 100_000), rows(1.0, 100_000)
    scorer = Scorer(len(xa), 1_000_000, delta=0.0, alpha=0.01)
    candidates, _ = search(xa, xb, scorer, float_test=False, rng=rng, every=True, binned_rows=True)
    binned = [c for c in candidates if c.family == "binned rows"]
    assert binned and binned[0].event.bins is not None
    fresh_a, fresh_b = rows(0.0, 200_000), rows(1.0, 200_000)
    event, direction = binned[0].event, binned[0].direction
    pa, pb = event.contains(fresh_a).mean(), event.contains(fresh_b).mean()
    ratio = math.log(pa / pb) if direction == 1 else math.log(pb / pa)
    assert 0.3 < ratio <= 1.0 + 0.1  # the k = 2 cells carry a loss up to 1 (Laplace shift 1); elsewhere 0
