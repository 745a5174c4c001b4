"""Paired runs (common random numbers): the bound holds whatever the coupling, and is far sharper
when the coupling nests the event under one input inside the event under the other."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from catalogue import dp_sniper_table

from dpwitness.witness.audit import Sampler, audit
from dpwitness.witness.stats import epsilon_lower_bound, paired_epsilon_lower_bound, paired_projection

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

pytest.importorskip("scipy")

# (P(E under both), P(under the first only), P(under the second only)) of one pair of runs
COUPLINGS = {
    "nested": (0.20, 0.02, 0.0),
    "crossing": (0.05, 0.03, 0.01),
    "independent": (0.3 * 0.25, 0.3 * 0.75, 0.25 * 0.7),
}


def _cells(rng: np.random.Generator, probabilities: tuple[float, float, float], n: int, repeats: int) -> np.ndarray:
    c, a, b = probabilities
    return rng.multinomial(n, [c, a, b, 1 - c - a - b], size=repeats)[:, :3]


@pytest.mark.parametrize("name", sorted(COUPLINGS))
@pytest.mark.parametrize("split", [0.5, 0.95])
def test_the_paired_bound_holds_at_its_confidence(name: str, split: float) -> None:
    c, a, b = COUPLINGS[name]
    truth = math.log((c + a) / (c + b))
    cells = _cells(np.random.default_rng(3), COUPLINGS[name], 400, 4000)
    bounds = paired_epsilon_lower_bound(cells[:, 0], cells[:, 1], cells[:, 2], 400, delta=0.0, alpha=0.1, split=split)
    # at α = 0.1, 4 000 repeats: a bound that held only 88% of the time would exceed 0.1 + 4 sd
    assert np.mean(bounds > truth) <= 0.1 + 4 * math.sqrt(0.09 / 4000)
    # the same counts read without the confidence (plug-in) exceed the truth about half the time:
    # the test can tell a bound from an estimate
    t = cells.sum(axis=1)
    plug_in = np.log1p(-cells[:, 2] / t) - np.log1p(-cells[:, 1] / t)
    assert np.mean(plug_in > truth) > 0.3


def test_with_delta_the_bound_subtracts_it_and_holds() -> None:
    c, a, b = COUPLINGS["nested"]
    delta = 0.01
    truth = math.log((c + a - delta) / (c + b))
    cells = _cells(np.random.default_rng(4), COUPLINGS["nested"], 2000, 4000)
    bounds = paired_epsilon_lower_bound(cells[:, 0], cells[:, 1], cells[:, 2], 2000, delta=delta, alpha=0.1)
    assert np.mean(bounds > truth) <= 0.1 + 4 * math.sqrt(0.09 / 4000)
    assert np.median(bounds) < math.log((c + a) / (c + b))  # δ is taken off


def test_nested_runs_pin_the_ratio_that_separate_runs_cannot() -> None:
    """Laplace at 1 vs 2 (ε = 0.1), E = {X ≤ 1}: with shared noise E under 2 lies inside E under 1."""
    c, a = 0.5 * math.exp(-0.1), 0.5 * (1 - math.exp(-0.1))
    paired = paired_epsilon_lower_bound(round(c * 20_000), round(a * 20_000), 0, 20_000, delta=0.0, alpha=0.1, split=0.95)
    separate = epsilon_lower_bound(round((c + a) * 200_000), round(c * 200_000), 200_000, delta=0.0, alpha=0.1)
    assert 0.095 < paired <= 0.1 and separate < 0.093  # 20 000 pairs pin it better than 200 000 separate runs
    projected, split = paired_projection(
        np.array([c * 1e4]), np.array([a * 1e4]), np.array([0.0]), 1e4, 200_000, delta=0.0, alpha=0.1, shrink=0.5
    )
    assert split[0] == 0.95 and 0.09 < projected[0] <= 0.1  # nested counts send α to n₁₀


def test_paired_runs_start_from_one_state_and_pairs_are_independent() -> None:
    def draws_until_above(data: Any, rng: np.random.Generator) -> list[float]:
        out = []  # consumes a data-dependent number of draws, as a sparse vector does
        while not out or out[-1] < data:
            out.append(float(rng.random()))
        return out

    sampler = Sampler(draws_until_above, deadline=math.inf)
    ra, rb = sampler.draw_pairs(0.5, 0.9, np.random.SeedSequence(5), 2000)
    first_a, first_b = ra[:, 2], rb[:, 2]  # columns: shape, length, values…
    assert np.array_equal(first_a, first_b)  # the first draw of both runs of a pair is the same
    assert len(np.unique(first_a)) == 2000  # and no two pairs share it
    longer = rb[:, 1] >= ra[:, 1]  # the run that needs a larger draw never stops sooner
    assert longer.all() and (rb[:, 1] > ra[:, 1]).any()


def _laplace_per_call(answer: Any, rng: np.random.Generator) -> float:
    return float(answer[0]) + rng.laplace(0.0, 10.0)


def test_tight_mode_pairs_a_per_call_mechanism() -> None:
    """Laplace at ε = 0.1 called once per run: 10 s of paired runs pin ε_lb above 0.095; the
    separate runs of the fast phase alone stay far below."""
    result = audit(_laplace_per_call, [1.0], [2.0], epsilon=0.1, seed=21, tight=True, max_seconds=10, progress=False)
    assert result.tight_paired and result.tight_cells[2] <= result.tight_cells[1] // 100
    assert result.tight_epsilon_lower_bound is not None and 0.095 < result.tight_epsilon_lower_bound <= 0.1
    assert result.epsilon_lower_bound < result.tight_epsilon_lower_bound and "paired runs" in str(result)
    assert not result.violated


def test_a_mechanism_with_its_own_randomness_gets_independent_pairs_and_a_valid_bound() -> None:
    own = np.random.default_rng(99)

    def laplace_ignoring_rng(answer: Any, rng: np.random.Generator) -> float:
        return float(answer[0]) + own.laplace(0.0, 10.0)

    result = audit(
        laplace_ignoring_rng, [1.0], [2.0], epsilon=0.1, confidence=0.999, seed=22, tight=True, max_seconds=6, progress=False
    )
    assert result.tight_epsilon_lower_bound is not None and result.tight_epsilon_lower_bound <= 0.1
    assert not result.violated


def test_a_sparse_vector_that_stops_early_is_caught_from_paired_runs() -> None:
    """SVT Alg. 4 on DP-Sniper's pair (loss 0.175 against a claimed 0.1): stopping after the first
    positive consumes a different number of draws on each input, and the pairing still holds."""
    case = next(c.case for c in dp_sniper_table() if c.case.name == "SparseVectorTechnique4")
    result = audit(case.mechanism, case.d, case.d_prime, epsilon=0.1, seed=23, tight=True, max_seconds=15, progress=False)
    assert result.violated and result.best_epsilon_lower_bound > 0.11


def test_the_final_sample_certifies_a_tie_together_and_one_event_once() -> None:
    """Which selection proposals the final sample certifies: a vector's best proposal ranked by its
    paired counts alone, unless another event projects within 1% of it (RAPPOR: the coupled shift
    and a fitted projection tied on the selection sample); descriptions of one event count once."""
    from dpwitness.witness.audit.tight import certified_together

    cells = np.array([[900, 40, 10], [900, 40, 10], [700, 90, 30], [880, 41, 12]], dtype=float)
    unpaired = np.array([0.25, 0.25, 0.20, 0.24])
    clear = np.array([0.290, 0.290, 0.20, 0.250])  # the best, by pairs, far ahead of the next event
    assert certified_together(unpaired, clear, cells, vector=True) == [0]
    tied = np.array([0.290, 0.290, 0.20, 0.288])  # proposal 3 is another event within 1%; 1 is 0 again
    assert certified_together(unpaired, tied, cells, vector=True) == [0, 3]
    assert certified_together(unpaired, tied, cells, vector=False) == [0]  # not a vector: the best alone
    by_counts = np.array([0.10, 0.10, 0.05, 0.08])  # ranked by unpaired counts: a vector's best two events
    assert certified_together(unpaired, by_counts, cells, vector=True) == [0, 3]
