"""Verdicts a CI can trust (issue 28, item 1): the tool's faults, the user's errors, the library's
refusals and "no covered library" each get their own verdict, on a small library written as
people write one (tests/support/targets_toylib.py) and user code that trips the plumbing
(tests/support/targets_toyfaults.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import targets_toyfaults as faults
import targets_toylib as toylib
import targets_toyuser as user

from dpwitness.common.errors import ExitCode, ParameterError
from dpwitness.targets import Adapter, hooks
from dpwitness.targets.check import check

pytestmark = pytest.mark.slow  # long audits, real subprocesses or servers: not in the fast default

pl = pytest.importorskip("polars")
pytest.importorskip("hypothesis")
TESTS = Path(__file__).resolve().parents[1]
QUICK = dict(epsilon=1.0, audit=False, trials=10, structured=False, max_seconds=20)


def _line(text: str) -> int:
    """The line of tests/support/targets_toyfaults.py that holds ``text``."""
    lines = (TESTS / "support" / "targets_toyfaults.py").read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def test_an_exception_in_a_hook_is_an_adapter_error_naming_the_adapter_and_its_line() -> None:
    report = check(faults.mapped_count, columns={"x": pl.Float64}, libraries=["toylib-mapped"], **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.exit_code, report.findings) == ("adapter-error", ExitCode.INTERNAL, ())
    (note,) = report.notes
    where = f"targets_toyfaults.py:{_line('declared = float(noise.stability(1))')}"
    assert note.startswith("toylib-mapped adapter failed in its hook (TypeError at ") and note.endswith(f"{where})"), note


def test_outside_a_check_the_hooked_library_raises_as_it_would() -> None:
    faults.MAPPED_ADAPTER.ensure_installed()
    with pytest.raises(TypeError):  # no recorder: the user's own exception, untouched
        faults.mapped_count(pl.DataFrame({"x": [1.0]}))


def test_no_covered_library_is_its_own_verdict_and_the_users_error_is_named() -> None:
    report = check(faults.mean_without_noise, columns={"x": pl.Float64}, libraries=["toylib"], **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.exit_code, report.findings, report.calls) == ("not-covered", 6, (), ())
    where = f"targets_toyfaults.py:{_line('return sum(values) / len(values)')}"
    assert any(
        n.startswith("the 0-row table: the function raised ZeroDivisionError at ") and n.endswith(where) for n in report.notes
    )
    assert any(n.startswith("no noise call of a covered library seen") for n in report.notes), report.notes


def test_a_function_that_fails_on_every_table_is_bad_input_naming_its_error() -> None:
    with pytest.raises(ParameterError) as raised:
        check(faults.mean_of_positive_rows, columns={"x": pl.Float64}, libraries=["toylib"], **QUICK)  # type: ignore[arg-type]
    assert raised.value.parameter == "fn"
    where = f"targets_toyfaults.py:{_line('/ len(values)  # raises on every table')}"
    assert "the function raised ZeroDivisionError at " in str(raised.value) and where in str(raised.value)


def test_the_library_refusing_every_table_is_unsupported() -> None:
    report = check(faults.refused_by_the_library, columns={"x": pl.Float64}, libraries=["toylib"], **QUICK)  # type: ignore[arg-type]
    assert report.verdict == "unsupported" and report.exit_code == ExitCode.INCONCLUSIVE
    assert any("the library refused the table (ValueError at " in n and "targets_toylib.py:" in n for n in report.notes)


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> list[Adapter]:
    """A registry of toylib's adapter alone (other tests register adapters that fail on purpose)."""
    registry: list[Adapter] = [user.ADAPTER]
    monkeypatch.setattr(hooks, "_REGISTRY", registry)
    return registry


def test_a_broken_package_the_function_never_imports_cannot_fail_the_check(
    own_registry: list[Adapter], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "brokenlib").mkdir()
    (tmp_path / "brokenlib" / "__init__.py").write_text("raise ImportError('brokenlib needs a newer numpy')\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class BrokenLibAdapter(Adapter):
        name = "brokenlib"
        module = "brokenlib"
        contract = "none"

        def install(self) -> None:
            import brokenlib  # noqa: F401

    own_registry.append(BrokenLibAdapter())
    report = check(user.released_exact_sum, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert report.verdict != "adapter-error", report.notes
    assert [c.library for c in report.calls] == ["toylib"] and "brokenlib" not in sys.modules


def test_an_exception_pinning_a_librarys_randomness_is_an_adapter_error(own_registry: list[Adapter]) -> None:
    class PinningAdapter(Adapter):
        name = "toylib-pinned"
        module = "targets_toylib"
        contract = "input: any float; no size limit; randomness: its generator, pinned before each run"

        def install(self) -> None:
            pass

        def pin(self) -> None:
            raise RuntimeError("the library's generator moved")  # the adapter's own line

    own_registry.append(PinningAdapter())
    report = check(user.released_exact_sum, columns={"x": pl.Float64}, libraries=["toylib", "toylib-pinned"], **QUICK)  # type: ignore[arg-type]
    assert (report.verdict, report.exit_code) == ("adapter-error", ExitCode.INTERNAL)
    (note,) = report.notes
    assert note.startswith("toylib-pinned adapter failed pinning its library's randomness (RuntimeError at ")
    assert "test_check_verdicts.py:" in note, note


@pytest.fixture
def lazylib(own_registry: list[Adapter], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library ``lazylib`` (not imported yet) and its adapter, registered beside toylib's."""
    (tmp_path / "lazylib.py").write_text(
        "import numpy as np\n\n\n"
        "def noisy_count(n, epsilon):\n    return n + np.random.default_rng().laplace(0.0, 1.0 / epsilon)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazylib", raising=False)

    class LazyAdapter(Adapter):
        name = "lazylib"
        module = "lazylib"
        contract = "input: any table; no size limit; randomness: only the noise"

        def install(self) -> None:
            import lazylib

            original, adapter = lazylib.noisy_count, self

            def noisy_count(n: int, epsilon: float) -> float:
                return hooks.noise_call(  # type: ignore[no-any-return]
                    adapter,
                    mechanism="laplace",
                    sensitivity=1.0,
                    epsilon=epsilon,
                    delta=0.0,
                    value=float(n),
                    noised=lambda: original(n, epsilon),
                )

            self.patch(lazylib, "noisy_count", noisy_count)

    own_registry.append(LazyAdapter())


def test_a_library_imported_inside_the_function_is_hooked(lazylib: None) -> None:
    def count(table: object) -> float:
        import lazylib

        return lazylib.noisy_count(table.height, 1.0)  # type: ignore[attr-defined, no-any-return]

    report = check(count, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert [c.library for c in report.calls] == ["lazylib"] and report.verdict == "inconclusive", report.notes


def test_a_library_imported_inside_the_function_is_hooked_beside_one_already_hooked(lazylib: None) -> None:
    """The first run already finds a noise call (toylib's): the library it imported is hooked all the same."""

    def count_and_sum(table: pl.DataFrame) -> tuple[float, float]:
        import lazylib

        noisy_sum = toylib.LaplaceNoise(1.0, 1.0).randomise(float(table["x"].fill_nan(0.0).fill_null(0.0).clip(0, 1).sum()))
        return noisy_sum, lazylib.noisy_count(table.height, 1.0)  # type: ignore[attr-defined]

    report = check(count_and_sum, columns={"x": pl.Float64}, **QUICK)  # type: ignore[arg-type]
    assert sorted(c.library for c in report.calls) == ["lazylib", "toylib"], report.notes


def _cli(function: str, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "dpwitness", "check", str(TESTS / "support" / "targets_toyfaults.py") + ":" + function]
    command += ["--columns", '{"x": "Float64"}', "--epsilon", "1", "--no-structured", "--no-audit", "--trials", "5", *flags]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS / "support"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)


def test_json_stdout_is_one_object_when_the_library_prints() -> None:
    run = _cli("chatty_sum", "--library", "toylib", "--json")
    payload = json.loads(run.stdout)  # the prints (Python's and fd 1's) went to stderr
    assert payload["verdict"] == "inconclusive" and payload["calls"][0]["library"] == "toylib", run.stderr
    assert "toylib: summing" in run.stderr and "native: done" in run.stderr


def test_the_command_line_exit_codes_of_the_new_verdicts() -> None:
    uncovered = _cli("mean_without_noise", "--library", "toylib", "--json")
    assert uncovered.returncode == 6 and json.loads(uncovered.stdout)["verdict"] == "not-covered", uncovered.stderr
    broken = _cli("mapped_count", "--library", "toylib-mapped")
    assert broken.returncode == 5 and "toylib-mapped adapter failed in its hook (TypeError at " in broken.stdout
    failing = _cli("mean_of_positive_rows", "--library", "toylib", "--json")
    error = json.loads(failing.stdout)["error"]
    assert failing.returncode == 2 and error["parameter"] == "FUNCTION" and "ZeroDivisionError" in error["message"]
    absent = _cli("chatty_sum", "--library", "toylib-absent", "--json")  # named, but not installed here
    error = json.loads(absent.stdout)["error"]
    assert absent.returncode == 2 and error["parameter"] == "--library" and "toylib-absent" in error["message"]


def test_help_keeps_the_square_brackets() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "dpwitness", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert run.returncode == 0 and "[allowed values]" in run.stdout, run.stdout
