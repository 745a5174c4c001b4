"""The Laplace mechanism's contract: names, guarantee, support, reproducibility, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpwitness import Laplace, ParameterError

positive = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def test_contract_values_for_the_worked_example() -> None:
    mech = Laplace(sensitivity=0.1, epsilon=1.0)
    assert mech.scale == pytest.approx(0.1)
    assert mech.variance == pytest.approx(0.02)
    assert mech.std == pytest.approx(0.1414, abs=1e-4)
    assert mech.interval(0.05) == pytest.approx(0.1 * math.log(20))
    assert round(mech.interval(0.05), 2) == 0.30


@settings(max_examples=60, deadline=None)
@given(sensitivity=positive, epsilon=st.floats(min_value=1e-2, max_value=50), fraction=st.floats(0, 1))
def test_privacy_loss_is_bounded_by_epsilon(sensitivity: float, epsilon: float, fraction: float) -> None:
    mech = Laplace(sensitivity=sensitivity, epsilon=epsilon)
    d = sensitivity * fraction
    loss = mech.privacy_loss(d)
    assert loss <= epsilon
    # and it is the ideal d/b, up to the grid's rounding charge (one step ≈ b·2^-27)
    assert loss == pytest.approx(d / mech.scale, abs=1e-7 * max(1.0, epsilon) + 1e-8)


@settings(max_examples=100, deadline=None)
@given(
    sensitivity=positive,
    epsilon=st.floats(min_value=1e-2, max_value=10),
    f=st.floats(-1e4, 1e4),
    fraction=st.floats(-1, 1),
    z=st.floats(-1e6, 1e6),
)
def test_log_density_ratio_never_leaves_plus_minus_epsilon(
    sensitivity: float, epsilon: float, f: float, fraction: float, z: float
) -> None:
    mech = Laplace(sensitivity=sensitivity, epsilon=epsilon)
    ratio = mech.log_density_ratio(z, f, f + fraction * sensitivity)
    # the float subtraction |z − f2| − |z − f1| errs by a few ulps of |z|: allow that, divided by b
    rounding = 4 * float(np.spacing(max(abs(z), abs(f)) + sensitivity)) / mech.scale
    assert abs(ratio) <= epsilon * (1 + 1e-9) + 1e-9 + rounding


def test_log_density_ratio_is_exactly_epsilon_in_the_tails_and_sign_flips() -> None:
    mech = Laplace(sensitivity=1.0, epsilon=0.5)
    assert mech.log_density_ratio(1e9, 1.0, 0.0) == pytest.approx(0.5)
    assert mech.log_density_ratio(-1e9, 1.0, 0.0) == pytest.approx(-0.5)
    assert mech.log_density_ratio(0.5, 1.0, 0.0) == pytest.approx(0.0)
    assert mech.log_density_ratio(3.0, 2.0, 2.0) == 0.0


def test_vector_release_uses_l1_sensitivity_and_independent_noise() -> None:
    mech = Laplace(sensitivity=2.0, epsilon=1.0, dimension=3)
    out = mech.release([1.0, 2.0, 3.0], size=50_000, seed=4).value
    assert isinstance(out, np.ndarray) and out.shape == (50_000, 3)
    noise = out - np.array([1.0, 2.0, 3.0])
    assert np.allclose(noise.var(axis=0), 8.0, rtol=0.05)
    assert abs(np.corrcoef(noise.T)[0, 1]) < 0.02
    assert mech.log_density_ratio([0, 0, 0], [1, 1, 0], [0, 0, 0]) == pytest.approx(-1.0)
    assert mech.privacy_loss(2.0) <= 1.0


def test_release_shapes() -> None:
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    assert isinstance(mech.release(3.0).value, float)
    many = mech.release(3.0, size=7).value
    assert isinstance(many, np.ndarray) and many.shape == (7,)


def test_seeded_release_is_reproducible_and_says_not_for_production() -> None:
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    first, again = mech.release(10.0, seed=42), mech.release(10.0, seed=42)
    assert first.value == again.value
    assert mech.release(10.0, seed=43).value != first.value
    assert first.seeded and "NOT for production" in first.notice
    assert "NOT for production" in first.to_dict()["notice"]
    secure = mech.release(10.0)
    assert not secure.seeded and "secure" in secure.randomness
    assert mech.release(10.0).value != secure.value


def test_neighbouring_inputs_have_identical_support() -> None:
    """Mironov 2012: every output lies on γ·ℤ whatever the input, so none identifies it."""
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    assert mech.noise is not None
    gamma = mech.noise.granularity
    for value in (0.0, 1.0, 0.1, 0.3, 123.456):
        out = mech.release(value, size=100_000, seed=1).value
        steps = np.asarray(out) / gamma
        assert np.array_equal(steps, np.round(steps)), value
        assert np.all(np.abs(steps) < 2**53)


def test_exact_same_noise_for_same_seed_regardless_of_value() -> None:
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    a = np.asarray(mech.release(0.0, size=1000, seed=9).value)
    b = np.asarray(mech.release(1.0, size=1000, seed=9).value)
    assert np.allclose(b - a, 1.0)


def test_zero_sensitivity_releases_the_exact_value_at_no_cost() -> None:
    mech = Laplace(sensitivity=0.0, epsilon=1.0)
    release = mech.release(5.25)
    assert release.value == 5.25 and release.epsilon == 0.0
    assert mech.privacy_loss(0) == 0.0 and mech.scale == 0.0 and mech.interval() == 0.0
    assert "no noise is needed" in release.notice
    assert math.isinf(mech.privacy_loss(1.0))  # an exact answer to a query that can move is not private


def test_interval_covers_the_stated_fraction() -> None:
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    noise = np.asarray(mech.release(0.0, size=200_000, seed=12).value)
    for alpha in (0.05, 0.2):
        outside = float(np.mean(np.abs(noise) > mech.interval(alpha)))
        assert abs(outside - alpha) < 0.005
    release = mech.release(2.0, seed=1)
    low, high = release.interval  # type: ignore[misc]
    assert high - low == pytest.approx(2 * mech.interval(0.05))
    low90, high90 = release.with_alpha(0.1).interval  # type: ignore[misc]
    assert high90 - low90 < high - low


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"sensitivity": 1, "epsilon": 0}, "epsilon"),
        ({"sensitivity": 1, "epsilon": -1}, "epsilon"),
        ({"sensitivity": 1, "epsilon": math.nan}, "epsilon"),
        ({"sensitivity": 1, "epsilon": math.inf}, "epsilon"),
        ({"sensitivity": 1, "epsilon": 1e-320}, "epsilon"),
        ({"sensitivity": -1, "epsilon": 1}, "sensitivity"),
        ({"sensitivity": math.nan, "epsilon": 1}, "sensitivity"),
        ({"sensitivity": "one", "epsilon": 1}, "sensitivity"),
        ({"sensitivity": 1, "epsilon": 1, "dimension": 0}, "dimension"),
    ],
)
def test_bad_parameters_name_themselves(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(ParameterError, match=parameter) as info:
        Laplace(**kwargs)  # type: ignore[arg-type]
    assert info.value.parameter == parameter


@pytest.mark.parametrize(
    ("value", "size", "parameter"),
    [
        (math.nan, None, "value"),
        (math.inf, None, "value"),
        ([1.0, 2.0], None, "value"),
        ([[1.0]], None, "value"),
        ("abc", None, "value"),
        (1.0, 0, "size"),
        (1.0, 2.5, "size"),
    ],
)
def test_bad_release_input_draws_no_noise(value: object, size: object, parameter: str) -> None:
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match=parameter):
        mech.release(value, size=size)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1e30, -1e30, 2.0**70 + 2.0**18, 1.7976931348623157e308, -(2.0**1023)])
def test_any_finite_value_is_released_correctly(value: float) -> None:
    """Past 2^61 grid steps the noise is added in Python integers: the release is the value plus
    noise of scale b (here far below the value's ulp, so exactly the value), never refused or clipped."""
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    released = mech.release(value, seed=3)
    assert released.value == value
    many = mech.release(value, size=5, seed=4)
    assert np.all(many.value == value)  # type: ignore[operator]


def test_a_large_value_gets_noise_of_the_calibrated_scale() -> None:
    """At 2^62 + 0.5 steps (the exact path) the noise is still Laplace(b): mean and spread checked
    against the value, on a scale where the float spacing (2^10 steps) is far below the noise."""
    mech = Laplace(sensitivity=2.0**20, epsilon=1.0)
    assert mech.noise is not None
    value = math.ldexp(1.0, 62 + mech.noise.granularity_log2) + 0.5 * mech.noise.granularity
    draws = np.asarray(mech.release(value, size=4000, seed=5).value) - value
    b = mech.scale
    assert abs(draws.mean()) < 5 * math.sqrt(2) * b / math.sqrt(4000)
    assert np.mean(np.abs(draws)) == pytest.approx(b, rel=0.08)  # E|X| = b; 8% is > 5 standard errors


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, math.nan])
def test_bad_alpha(alpha: float) -> None:
    with pytest.raises(ParameterError, match="alpha"):
        Laplace(sensitivity=1, epsilon=1).interval(alpha)


def test_bad_shift_for_privacy_loss() -> None:
    with pytest.raises(ParameterError, match="d must be"):
        Laplace(sensitivity=1, epsilon=1).privacy_loss(-1)


def test_rounding_is_charged_only_for_coordinates_one_record_can_change() -> None:
    histogram = Laplace(sensitivity=1.0, epsilon=1.0, dimension=16, changed_coordinates=1)
    assert histogram.privacy_loss(1.0) <= 1.0
    assert histogram.release(np.arange(16.0), seed=1).witness().ok
    # charging all 16 coordinates is also valid, just a hair more noise
    dense = Laplace(sensitivity=1.0, epsilon=1.0, dimension=16)
    assert dense.noise is not None and histogram.noise is not None
    assert dense.noise.m > histogram.noise.m and dense.privacy_loss(1.0) <= 1.0
    with pytest.raises(ParameterError, match="changed_coordinates"):
        Laplace(sensitivity=1.0, epsilon=1.0, dimension=4, changed_coordinates=0)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"sensitivity": 1, "epsilon": 1e308}, "epsilon"),  # OverflowError before
        ({"sensitivity": 1, "epsilon": 1e-300}, "epsilon"),  # ValueError before
        ({"sensitivity": 1, "epsilon": 1e-9}, "epsilon"),  # MemoryError before (release --epsilon 1e-9)
        ({"sensitivity": 1, "epsilon": 2e-9}, "epsilon"),  # silently 4× the claimed scale before
        ({"sensitivity": 1, "epsilon": 1.01e-9}, "epsilon"),  # silently 404× before
        ({"sensitivity": 1e300, "epsilon": 1}, "sensitivity"),  # OverflowError before
        ({"sensitivity": 1e-300, "epsilon": 1}, "sensitivity"),
        ({"sensitivity": 1e-100, "epsilon": 1e3}, "sensitivity"),  # scale Δ/ε below the range
        ({"sensitivity": 1e100, "epsilon": 1e-3}, "sensitivity"),  # scale Δ/ε above the range
        ({"sensitivity": 1, "epsilon": 1.0001e3}, "epsilon"),
        ({"sensitivity": 1, "epsilon": 0.999e-3}, "epsilon"),
    ],
)
def test_inputs_outside_the_accepted_ranges_are_one_line_errors(kwargs: dict[str, float], parameter: str) -> None:
    with pytest.raises(ParameterError) as info:
        Laplace(**kwargs)  # type: ignore[arg-type]
    assert info.value.parameter == parameter
    message = str(info.value)
    assert "\n" not in message and "[" in message  # names the accepted range


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1e-3), (1.0, 1e3), (1e-100, 1e-3), (1e100, 1e3), (1e97, 1e-3)])
def test_the_ends_of_the_accepted_ranges_calibrate(sensitivity: float, epsilon: float) -> None:
    mech = Laplace(sensitivity=sensitivity, epsilon=epsilon)
    assert mech.privacy_loss(sensitivity) <= epsilon
    assert mech.noise is not None and mech.noise.scale == pytest.approx(sensitivity / epsilon, rel=2e-6)
    assert math.isfinite(mech.variance)
    out = np.asarray(mech.release(0.0, size=4, seed=1).value)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize(
    ("args", "parameter"),
    [
        (["--epsilon", "1e-9", "--sensitivity", "1"], "epsilon"),
        (["--epsilon", "1e308", "--sensitivity", "1"], "epsilon"),
        (["--epsilon", "1e-300", "--sensitivity", "1"], "epsilon"),
        (["--epsilon", "1", "--sensitivity", "1e300"], "sensitivity"),
    ],
)
def test_cli_release_outside_the_ranges_is_one_line_exit_2(args: list[str], parameter: str) -> None:
    from typer.testing import CliRunner

    from dpwitness.cli import app

    result = CliRunner().invoke(app, ["release", "--value", "1", *args])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and parameter in result.output and "Traceback" not in result.output


def test_a_mechanisms_release_is_the_dataclass_it_would_construct() -> None:
    """``Release._built`` (the mechanisms' fast constructor) gives the object ``Release(**fields)`` gives:
    every field equal, the same attributes, still frozen, and a reloaded copy equal to it."""
    import dataclasses

    from dpwitness.mechanisms.additive import Gaussian
    from dpwitness.mechanisms.release import Release

    for release in (
        Laplace(sensitivity=1.0, epsilon=1.0).release(3.0, seed=1, query="q", neighbours="add/remove"),
        Laplace(sensitivity=1.0, epsilon=1.0).release(3.0),
        Gaussian(sensitivity=1.0, rho=0.5).release(2.0, seed=2),
    ):
        values = {f.name: getattr(release, f.name) for f in dataclasses.fields(Release)}
        constructed = Release(**values)
        assert release == constructed and vars(release) == vars(constructed)
        assert type(release) is Release
        with pytest.raises(dataclasses.FrozenInstanceError):
            release.epsilon = 0.0  # type: ignore[misc]
        assert Release.from_dict(release.to_dict()) == dataclasses.replace(release, mechanism=None)
