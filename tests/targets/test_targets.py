"""The noise-call hooks (dpwitness.targets) on a small library written as people write one."""

from __future__ import annotations

import math

import pytest
import targets_toylib as toylib
import targets_toyuser as user

from dpwitness.targets import Adapter, NoiseCall, recording, register, registered
from dpwitness.targets.check import check

pytest.importorskip("polars")
pytest.importorskip("hypothesis")
ADAPTERS = (user.ADAPTER,)


def test_unnoised_mode_returns_the_value_before_noise_and_records_the_call() -> None:
    values = [0.25, 0.5, 3.0, math.nan]
    with recording("unnoised", ADAPTERS) as recorder:
        released = toylib.private_sum(values, lower=0.0, upper=1.0, epsilon=0.5)
    assert released == 1.75  # 0.25 + 0.5 + 1 (clamped), NaN skipped: no noise
    (call,) = recorder.calls
    assert isinstance(call, NoiseCall)
    assert (call.library, call.mechanism, call.sensitivity, call.epsilon, call.delta, call.value) == (
        "toylib",
        "LaplaceNoise",
        1.0,
        0.5,
        0.0,
        1.75,
    )
    assert call.site.endswith("targets_toylib.py:42")  # the library's line that adds the noise
    assert call.caller.rpartition("/")[2].startswith("test_targets.py:")  # the user's line


def test_record_mode_adds_the_noise_and_replay_adds_only_the_noise() -> None:
    with recording("record", ADAPTERS) as recorder:
        released = [toylib.private_sum([0.5], lower=0.0, upper=1.0, epsilon=1.0) for _ in range(20)]
    assert len(set(released)) == 20 and all(v != 0.5 for v in released)
    assert [c.value for c in recorder.calls] == [0.5] * 20
    replayed = [recorder.calls[0].replay() for _ in range(200)]  # type: ignore[misc]
    assert len(set(replayed)) == 200 and 0.2 < sum(replayed) / 200 < 0.8


def test_a_call_made_inside_another_hooked_call_counts_once() -> None:
    with recording("unnoised", ADAPTERS) as recorder:
        toylib.clamped_mean([0.5, 1.0], lower=0.0, upper=1.0, epsilon=1.0)
    assert [c.mechanism for c in recorder.calls] == ["ClampedLaplace"]


def test_outside_a_recorder_the_library_runs_unchanged_and_uninstall_restores_it() -> None:
    user.ADAPTER.uninstall()  # installed by the tests above: start from the library itself
    adapter = user.ToyAdapter()
    original = vars(toylib.LaplaceNoise)["randomise"]
    adapter.ensure_installed()
    try:
        assert vars(toylib.LaplaceNoise)["randomise"] is not original
        assert toylib.private_sum([0.5], lower=0.0, upper=1.0, epsilon=1.0) != 0.5  # noised, no recorder
    finally:
        adapter.uninstall()
    assert vars(toylib.LaplaceNoise)["randomise"] is original


class _BrokenAdapter(Adapter):
    name = "broken-toylib"
    module = "targets_toylib"
    contract = "none"

    def install(self) -> None:
        raise AttributeError("LaplaceNoise has no attribute 'add'")  # a library whose internals moved


def test_an_adapter_error_is_its_own_kind_never_violated() -> None:
    register(_BrokenAdapter())
    report = check(user.released_sum, columns={"x": [0.0, 1.0]}, epsilon=1.0, libraries=["broken-toylib"], audit=False)
    assert report.verdict == "adapter-error" and not report.findings and report.exit_code == 5
    assert "could not install its hooks" in report.notes[0]


def test_every_covered_library_states_its_contract() -> None:
    names = {adapter.name: adapter for adapter in registered()}
    assert {"diffprivlib", "opendp", "python-dp"} <= set(names)
    for name in ("diffprivlib", "opendp", "python-dp"):
        contract = names[name].contract
        assert "input" in contract and "randomness" in contract
    assert names["opendp"].max_rows == 2**20  # OpenDP's float sums subsample above it


def test_non_nan_atoms_fall_back_on_opendp_releases_without_the_nan_flag() -> None:
    """OpenDP 0.12 and 0.13's ``atom_domain`` has no ``nan`` flag (their float atoms are non-NaN by
    default): the adapters' replays built on ``nan=False`` raised TypeError there (SmartNoise Synth 1.0.5)."""
    from types import SimpleNamespace

    from dpwitness.targets.opendp import non_nan_atoms

    def old_atom_domain(bounds: object = None, nullable: bool = False, T: object = None) -> tuple[object, bool]:
        return (T, nullable)

    def new_atom_domain(bounds: object = None, nan: object = None, T: object = None) -> tuple[object, object]:
        return (T, nan)

    assert non_nan_atoms(SimpleNamespace(atom_domain=old_atom_domain)) == (float, False)
    assert non_nan_atoms(SimpleNamespace(atom_domain=new_atom_domain), int) == (int, False)
