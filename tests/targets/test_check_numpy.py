"""Noise no adapter covers (issue 28, item 4): a library that draws numpy.random or random itself.

The generic hook (:mod:`dpwitness.targets.numpy_random`) records each draw as a noise call with no
declared Δ; the check searches the function's output without its noise against the shift the
noise's scale allows at ε and audits the release, black-box, on the pair that moves it most. A
library that adds np.random.laplace(scale=1/ε) to a sum it never clips is flagged; the same sum
clipped first is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import targets_toylib as toylib
import targets_toynumpy_user as user
import targets_toyuser  # noqa: F401 (registers the toylib adapter)

import dpwitness
from dpwitness.targets import hooks
from dpwitness.targets.check import check
from dpwitness.targets.numpy_random import ADAPTER

pl = pytest.importorskip("polars")
TESTS = Path(__file__).resolve().parents[1]
TABLE = {"x": [0.5, 2.0], "k": ["a", "b"]}


def test_each_draw_is_a_noise_call_with_no_declared_delta_and_its_scale() -> None:
    table = pl.DataFrame(TABLE)
    with hooks.recording("unnoised", (ADAPTER,), epsilon=1.0) as recorder:
        released = (user.numpy_sum(table), user.numpy_counts(table), user.python_gaussian_count(table))
    assert released == (2.5, [1.0, 1.0, 0.0], 2.0)  # each draw returns its location: the release without its noise
    legacy, generator, python = recorder.calls
    assert [c.mechanism for c in recorder.calls] == [
        "numpy.random.laplace (scale 1)",
        "Generator.laplace (scale 1)",
        "random.gauss (scale 4.84481)",
    ]
    assert all(c.sensitivity is None and c.epsilon is None and c.library == "numpy.random" for c in recorder.calls)
    assert (legacy.norm, generator.norm, python.norm) == ("l1", "l1", "l2") and python.scale == pytest.approx(4.8448, abs=1e-4)
    assert all("targets_toynumpy.py:" in c.site and "targets_toynumpy_user.py:" in c.caller for c in recorder.calls)
    assert generator.shape == ("array", (3,)) and legacy.value == 0.0
    with hooks.recording("record", (ADAPTER,), epsilon=1.0) as recorder:
        noisy = user.numpy_counts(table)
    assert len(recorder.calls) == 1 and noisy != [1.0, 1.0, 0.0] and isinstance(np.random.default_rng(), np.random.Generator)


def test_draws_inside_a_covered_library_or_outside_a_check_are_left_alone() -> None:
    toy = next(a for a in hooks.registered() if a.name == "toylib")
    with hooks.recording("record", (toy, ADAPTER), epsilon=1.0) as recorder:
        toylib.LaplaceNoise(1.0, 1.0).randomise(3.0)  # its Generator's draw is inside toylib's own hook
        toylib.VectorLaplace(1.0, 1.0).randomise(np.zeros(2))
    assert [c.library for c in recorder.calls] == ["toylib", "toylib"]
    with hooks.recording("unnoised", (toy,), epsilon=1.0) as recorder:  # a check that did not choose the generic hook
        assert user.numpy_sum(pl.DataFrame(TABLE)) != 2.5
    assert recorder.calls == []
    assert np.random.laplace(0.0, 1.0, size=3).shape == (3,)  # outside a check: numpy as it is


def test_draws_made_while_a_module_is_imported_are_not_noise_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SciPy samples its distributions' docstring examples when it is imported, and a library
    imported inside the function (diffprivlib imports SciPy) is imported during the check's first
    call: those draws are not noise on the data (they made every diffprivlib case inconclusive)."""
    (tmp_path / "draws_at_import.py").write_text(
        "import numpy as np\nEXAMPLE = np.random.default_rng().normal(0.0, 1.0, size=4)\nLEGACY = np.random.laplace(0.0, 1.0)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "draws_at_import", raising=False)

    def release(table: pl.DataFrame) -> float:
        import draws_at_import  # noqa: F401 (first imported here, inside the check)

        return user.numpy_sum(table)

    with hooks.recording("unnoised", (ADAPTER,), epsilon=1.0) as recorder:
        assert release(pl.DataFrame(TABLE)) == 2.5
    assert [c.mechanism for c in recorder.calls] == ["numpy.random.laplace (scale 1)"]
    assert "targets_toynumpy.py:" in recorder.calls[0].site


@pytest.mark.slow
def test_an_unclipped_sum_noised_with_numpy_directly_is_found(tmp_path: Path) -> None:
    report = check(user.numpy_sum, columns={"x": pl.Float64}, epsilon=1.0, max_seconds=20)
    assert report.verdict == "violated", str(report)
    (finding,) = report.findings
    assert finding.kind == "audit" and finding.library == "numpy.random" and finding.witnessed > 1.0
    assert "targets_toynumpy.py:" in finding.site and "numpy.random.laplace" in finding.mechanism
    assert any("the release without its noise moved by" in note for note in report.notes), report.notes
    script = tmp_path / "finding.py"
    script.write_text(finding.script, encoding="utf-8")
    path = os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])])
    env = {**os.environ, "PYTHONPATH": path}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 1 and "BUG" in run.stdout, run.stdout + run.stderr


@pytest.mark.slow
def test_the_same_sum_clipped_first_is_not_flagged() -> None:
    report = check(user.numpy_clipped_sum, columns={"x": pl.Float64}, epsilon=1.0, max_seconds=20)
    assert report.verdict in ("ok", "inconclusive") and not report.findings, str(report)
    assert report.audit is not None and not report.audit.violated and report.calls[0].library == "numpy.random"


@pytest.mark.slow
def test_the_command_line_flags_the_unclipped_sum_from_its_draws() -> None:
    command = [sys.executable, "-m", "dpwitness", "check", str(TESTS / "support" / "targets_toynumpy_user.py") + ":numpy_sum"]
    command += ["--columns", '{"x": "Float64"}', "--epsilon", "1", "--no-structured", "--trials", "20", "--max-seconds", "20"]
    run = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    payload = json.loads(run.stdout)
    assert payload["verdict"] == "violated" and [f["kind"] for f in payload["findings"]] == ["audit"]
    assert payload["calls"][0]["library"] == "numpy.random" and payload["calls"][0]["scale"] == 1.0
    assert payload["calls"][0]["sensitivity"] is None
