"""Joint quantiles (JointExp on a grid): the privacy map by exact enumeration, accuracy against
separate quantiles at the same ε, and bad input.

The privacy test enumerates the distribution the sampler really draws from (its integer
weights, as exact fractions) for every dataset of 3–4 records on 4 bins and every neighbour,
and shows the same check fails when Δ of the utility is halved (and, under add/remove, when
Δ is taken as 1): it can fail. The accuracy test uses fixed seeds.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from dpwitness import noise
from dpwitness.common.errors import ParameterError
from dpwitness.mechanisms.additive import Laplace
from dpwitness.mechanisms.joint_quantiles import (
    JointQuantileRelease,
    bin_counts,
    calibrated_beta,
    joint_quantiles,
    joint_tables,
    utility_sensitivity,
)
from dpwitness.mechanisms.quantiles import DEFAULT_BINS, GUARD_ALPHA, estimate, rank_error
from dpwitness.mechanisms.release import Release
from dpwitness.noise import bit_source, draw_log_categorical, dyadic_weights
from dpwitness.privacy.neighbours import Neighbours, histogram_sensitivity

Counts = tuple[int, ...]
Distribution = dict[tuple[int, ...], Fraction]


# --- (a) the privacy map, by enumeration ------------------------------------------------------
def exact_weights(log_weights: npt.NDArray[np.float64]) -> list[Fraction]:
    """The weights M_i·2^(k_i) that the draw samples, as exact fractions."""
    mantissas, exponents = dyadic_weights(log_weights)
    return [Fraction(int(m)) * Fraction(2) ** int(k) for m, k in zip(mantissas, exponents, strict=True)]


def exact_distribution(counts: Counts, levels: tuple[float, ...], beta: float) -> Distribution:
    """P(e₁, …, e_m) exactly: the product of the backward draws' integer weights, as fractions."""
    tables = joint_tables(np.array(counts, dtype=np.int64), levels, beta)
    out: Distribution = {}

    def walk(j: int, following: int, probability: Fraction, suffix: tuple[int, ...]) -> None:
        weights = exact_weights(tables.conditional(j, following))
        total = sum(weights)
        for edge, weight in enumerate(weights):
            if weight:
                share = probability * Fraction(weight, total)
                if j == 0:
                    out[(edge, *suffix)] = share
                else:
                    walk(j - 1, edge, share, (edge, *suffix))

    walk(len(levels) - 1, len(counts), Fraction(1), ())
    return out


def _log(p: Fraction) -> float:
    return math.log(p.numerator) - math.log(p.denominator)


def _neighbours(counts: Counts, relation: Neighbours) -> list[Counts]:
    bins = len(counts)
    if relation is Neighbours.ADD_REMOVE:  # both directions: the pair (c, c + one record) is checked both ways
        return [tuple(c + (i == k) for i, c in enumerate(counts)) for k in range(bins)]
    moved = []
    for source, target in itertools.permutations(range(bins), 2):
        if counts[source]:
            moved.append(tuple(c - (i == source) + (i == target) for i, c in enumerate(counts)))
    return moved


def worst_log_ratio(relation: Neighbours, levels: tuple[float, ...], beta: float, *, bins: int = 4) -> float:
    """max |log P(o | D) − log P(o | D′)| over every dataset of 3 or 4 records on ``bins`` bins, its neighbours, every o."""
    cache: dict[Counts, Distribution] = {}

    def law(counts: Counts) -> Distribution:
        if counts not in cache:
            cache[counts] = exact_distribution(counts, levels, beta)
        return cache[counts]

    worst = 0.0
    for size in (3, 4):
        for counts in itertools.product(range(size + 1), repeat=bins):
            if sum(counts) != size:
                continue
            here = law(counts)
            for other in _neighbours(counts, relation):
                there = law(other)
                assert here.keys() == there.keys()  # every output possible under both: pure DP
                worst = max(worst, max(abs(_log(here[o]) - _log(there[o])) for o in here))
    return worst


@pytest.mark.parametrize("relation", list(Neighbours))
@pytest.mark.parametrize("levels", [(0.25, 0.75), (0.5, 0.9)])
def test_exact_privacy_loss_is_within_epsilon_and_the_check_catches_half_the_sensitivity(
    relation: Neighbours, levels: tuple[float, ...]
) -> None:
    epsilon = 1.0
    delta = utility_sensitivity(levels, relation)
    beta = calibrated_beta(epsilon=epsilon, sensitivity=delta, bins=4, levels=len(levels))
    assert worst_log_ratio(relation, levels, beta) <= epsilon
    # Δ/2 (the calibration of 2ε): the same enumeration sees a loss above ε.
    assert worst_log_ratio(relation, levels, 2.0 * beta) > epsilon


def test_add_remove_sensitivity_is_not_one() -> None:
    levels = (0.25, 0.75)
    assert utility_sensitivity(levels, Neighbours.ADD_REMOVE) == 1.5  # 2·(1 − min(0.25, 0.5, 0.25))
    assert utility_sensitivity(levels, Neighbours.REPLACE_ONE) == 2.0
    # Calibrating add/remove with Δ = 1 would break ε = 1 on 3–4 records already.
    assert worst_log_ratio(Neighbours.ADD_REMOVE, levels, 1.0 / 2.0) > 1.0


def test_the_draw_follows_the_exact_distribution() -> None:
    counts, levels = (1, 0, 2, 1), (0.25, 0.75)
    beta = calibrated_beta(epsilon=1.0, sensitivity=2.0, bins=4, levels=2)
    law = exact_distribution(counts, levels, beta)
    draws = 4000
    seen: dict[tuple[int, ...], int] = {}
    for seed in range(draws):
        release = joint_quantiles(counts, levels, bounds=(0, 4), epsilon=1.0, neighbours="replace-one", seed=seed)
        seen[release.edges] = seen.get(release.edges, 0) + 1
    # Chi-square against the enumerated law, cells with expectation ≥ 5 (fixed seeds: deterministic).
    kept = [o for o, p in law.items() if p * draws >= 5]
    statistic = sum((seen.get(o, 0) - float(law[o]) * draws) ** 2 / (float(law[o]) * draws) for o in kept)
    assert statistic < 2.0 * len(kept) + 30.0
    assert set(seen) <= set(law)


def test_the_fast_program_matches_the_quadratic_one() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        bins = int(rng.integers(2, 60))
        counts = (rng.integers(0, 6, size=bins) * (rng.random(bins) < 0.6)).astype(np.int64)
        levels = tuple(sorted(float(q) for q in rng.choice(np.arange(1, 20), int(rng.integers(1, 5)), replace=False) / 20))
        beta = float(rng.choice([0.01, 0.4, 3.0]))
        tables = joint_tables(counts, levels, beta)
        edges = np.arange(bins + 1)
        start, end = np.meshgrid(edges, edges, indexing="ij")
        expected = tables.gap(0, 0, edges)
        for j in range(1, len(levels)):
            terms = expected[:, None] + tables.gap(j, start, end)
            top = terms.max(axis=0)
            expected = top + np.log(np.exp(terms - top).sum(axis=0))
            assert np.max(np.abs(tables.forward[j] - expected)) < 1e-9


@pytest.mark.parametrize("head_bits", [noise.HEAD_BITS, 1])
def test_the_categorical_draw_is_exact_in_the_head_and_in_the_tail(head_bits: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # With HEAD_BITS = 1 most weights are in the tail and reached by rejection: same law.
    monkeypatch.setattr(noise, "HEAD_BITS", head_bits)
    log_weights = np.array([0.0, -0.7, -2.0, -np.inf, -3.5, -6.0])
    shares = exact_weights(log_weights)
    law = [float(w / sum(shares)) for w in shares]
    bits = bit_source(5)
    draws = 40_000
    seen = np.bincount([draw_log_categorical(log_weights, bits) for _ in range(draws)], minlength=len(law))
    assert seen[3] == 0
    kept = [i for i, p in enumerate(law) if p > 0]
    statistic = sum((seen[i] - law[i] * draws) ** 2 / (law[i] * draws) for i in kept)
    assert statistic < 20.5  # χ² with 4 degrees of freedom: P(> 20.5) < 0.0005 for the right law


# --- (b) accuracy against separate quantiles ----------------------------------------------------
def rank_errors(data: npt.NDArray[np.float64], estimates: Any, levels: tuple[float, ...]) -> list[float]:
    """Per level, the distance from q·n to the ranks the estimate can take ([#{x < o}, #{x ≤ o}])."""
    ordered = np.sort(data)
    errors = []
    for q, value in zip(levels, np.atleast_1d(np.asarray(estimates, dtype=np.float64)), strict=True):
        below = np.searchsorted(ordered, value, side="left")
        upto = np.searchsorted(ordered, value, side="right")
        target = q * ordered.size
        errors.append(float(max(below - target, target - upto, 0.0)))
    return errors


def separate_quantiles(
    data: npt.NDArray[np.float64], levels: tuple[float, ...], bounds: tuple[float, float], epsilon: float, seed: int
) -> list[float]:
    """Each level from its own noisy histogram (dpwitness's single-quantile method) at ε/m."""
    counts = bin_counts(data, bounds, DEFAULT_BINS).astype(np.float64)
    share = epsilon / len(levels)
    mechanism = Laplace(
        sensitivity=histogram_sensitivity(Neighbours.ADD_REMOVE), epsilon=share, dimension=DEFAULT_BINS, changed_coordinates=1
    )
    guard = rank_error(mechanism.scale, DEFAULT_BINS, GUARD_ALPHA)
    values = []
    for i, q in enumerate(levels):
        noisy = np.asarray(mechanism.release(counts, seed=seed * 1000 + i).value, dtype=np.float64)
        values.extend(estimate(noisy, [q], bounds, guard))
    return values


def test_joint_beats_separate_quantiles_at_the_same_epsilon() -> None:
    data = np.random.default_rng(2021).lognormal(mean=3.0, sigma=0.6, size=10_000)
    bounds, levels, epsilon = (0.0, 150.0), (0.25, 0.5, 0.75), 1.0
    counts = bin_counts(data, bounds)
    joint, separate = [], []
    for seed in range(20):
        release = joint_quantiles(counts, levels, bounds=bounds, epsilon=epsilon, neighbours="add-remove", seed=seed)
        assert np.all(np.diff(release.value) >= 0)
        joint.append(np.mean(rank_errors(data, release.value, levels)))
        separate.append(np.mean(rank_errors(data, separate_quantiles(data, levels, bounds, epsilon, seed), levels)))
    assert np.mean(joint) < np.mean(separate)
    # Not by luck of a grid: the joint error stays within its stated rank bound plus resolution.
    resolution = float(bin_counts(data, bounds).max())
    assert max(joint) <= release.rank_error + resolution


def test_release_states_its_guarantee() -> None:
    release = joint_quantiles([3, 1, 4, 1, 5, 9], [0.1, 0.5], bounds=(0.0, 6.0), epsilon=0.5, neighbours="replace-one", seed=1)
    assert isinstance(release, JointQuantileRelease)
    assert release.epsilon == 0.5 and release.sensitivity == 2.0 and release.seeded
    assert release.value.shape == (2,) and release.value[0] <= release.value[1]
    assert set(release.value) <= {float(e) for e in range(7)}  # grid edges only
    assert "JointExp" in release.notice and "utility Δ = 2" in release.notice and "NOT for production" in release.notice
    data = release.to_dict()
    assert data["kind"] == "JointQuantileRelease" and data["quantiles"] == [0.1, 0.5] and data["rank_error"] > 0
    back = Release.from_dict(json.loads(json.dumps(data)))
    assert isinstance(back, JointQuantileRelease) and back.edges == release.edges and back.bounds == (0.0, 6.0)
    assert back.rank_error == release.rank_error and list(back.value) == list(release.value)
    secure = joint_quantiles([3, 1, 4, 1, 5, 9], [0.1, 0.5], bounds=(0.0, 6.0), epsilon=0.5, neighbours="add-remove")
    assert not secure.seeded


# --- (c) bad input --------------------------------------------------------------------------
GOOD: dict[str, Any] = {"counts": [1, 2, 3, 4], "quantiles": [0.25, 0.5], "bounds": (0.0, 1.0), "epsilon": 1.0}


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("quantiles", []),
        ("quantiles", [0.5, 0.25]),
        ("quantiles", [0.5, 0.5]),
        ("quantiles", [0.0, 0.5]),
        ("quantiles", [0.5, 1.0]),
        ("quantiles", [0.5, math.nan]),
        ("quantiles", 0.5),
        ("quantiles", "0.5"),
        ("bounds", (0.0, math.inf)),
        ("bounds", (1.0, 1.0)),
        ("bounds", (2.0, 1.0)),
        ("epsilon", 0.0),
        ("epsilon", -1.0),
        ("epsilon", math.nan),
        ("counts", [1]),
        ("counts", [1, -1]),
        ("counts", [1.5, 2]),
        ("counts", [[1, 2]]),
    ],
)
def test_bad_input_is_one_line_naming_the_parameter(parameter: str, value: Any) -> None:
    options = {**GOOD, parameter: value}
    with pytest.raises(ParameterError) as caught:
        joint_quantiles(
            options["counts"], options["quantiles"], bounds=options["bounds"], epsilon=options["epsilon"], neighbours="add-remove"
        )
    assert caught.value.parameter == parameter
    assert "\n" not in str(caught.value)


def test_bad_relation_names_neighbours() -> None:
    with pytest.raises(ParameterError, match=r"^neighbours"):
        joint_quantiles([1, 2], [0.5], bounds=(0, 1), epsilon=1.0, neighbours="swap")
