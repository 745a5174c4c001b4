"""Known-verdict mechanisms from the DP-testing literature: every buggy one flagged, no correct one."""

from __future__ import annotations

import pytest

from dpwitness import audit
from dpwitness.attacks.tamper import MISTAKES
from dpwitness.witness.catalogue import Case, buggy_cases, correct_cases

#: Runs per input: enough for every known bug at a fixed seed, in about a second each.
SAMPLES = 200_000


@pytest.mark.parametrize("case", correct_cases(), ids=lambda c: c.name)
def test_correct_mechanisms_are_never_flagged(case: Case) -> None:
    result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, samples=SAMPLES, seed=2017)
    assert not result.violated, result
    assert result.verdict in {"ok", "inconclusive"}
    assert result.epsilon_lower_bound <= case.epsilon


@pytest.mark.parametrize("case", buggy_cases(), ids=lambda c: c.name)
def test_buggy_mechanisms_are_flagged(case: Case) -> None:
    result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, samples=SAMPLES, seed=2017)
    assert result.violated, result
    assert result.epsilon_lower_bound > case.epsilon
    # a lower bound: never above the mechanism's true loss on this pair, where it is known
    assert result.epsilon_lower_bound <= case.true_loss * (1 + 1e-9)


def test_the_catalogue_covers_the_literature_and_the_tamper_list() -> None:
    names = {c.name for c in correct_cases() + buggy_cases()}
    for expected in [
        "laplace",
        "geometric",
        "noisy max index, Laplace",
        "noisy max index, exponential",
        "noisy max index, Gumbel",
        "histogram",
        "SVT Alg. 1",
        "SVT Alg. 2",
        "noisy max value",
        "SVT Alg. 3",
        "SVT Alg. 4",
        "SVT Alg. 5",
        "SVT Alg. 6",
        "histogram, inverted scale",
    ]:
        assert expected in names
    assert {f"tamper: {m}" for m in MISTAKES} <= names
    assert all(c.private for c in correct_cases()) and not any(c.private for c in buggy_cases())


def test_correct_mechanisms_are_tight_where_the_pair_is_worst_case() -> None:
    """Laplace, geometric and the histogram lose exactly ε on their pairs: the auditor sees ≥ 90% of it."""
    checked = []
    for case in correct_cases():
        if case.true_loss == case.true_loss:  # known (not NaN)
            result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, samples=SAMPLES, seed=7)
            assert result.epsilon_lower_bound >= 0.9 * case.true_loss, (case.name, result)
            checked.append(case.name)
    assert checked == ["laplace", "geometric", "histogram"]  # the loop is not vacuous
