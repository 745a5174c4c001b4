"""(ε, δ) claims audited (issue 28, item 4): with no δ given, the check holds the release to the δ its
noise calls declare; a release whose event is likelier on one table than e^ε times on the other
plus δ is a finding, whose script shows the rate gap against δ. A Gaussian mechanism whose σ comes
from the wrong formula for its (ε, δ) is found; the classical Gaussian is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import targets_toyuser as user

import dpwitness
from dpwitness.targets.check import check

pl = pytest.importorskip("polars")
pytestmark = pytest.mark.slow  # checks with audits: not in the fast default
TESTS = Path(__file__).resolve().parents[1]
KEYS = {"k": ["a", "b", "c"]}
QUICK: dict[str, Any] = dict(epsilon=1.0, libraries=["toylib"], trials=20, structured=False, max_seconds=15)


def test_a_gaussian_whose_sigma_comes_from_the_wrong_formula_is_found(tmp_path: Path) -> None:
    report = check(user.gaussian_count_wrong_sigma, columns=KEYS, **QUICK)
    assert report.delta == pytest.approx(1e-5) and any("the sum of the δ its noise calls declare" in n for n in report.notes)
    (finding,) = report.findings
    assert finding.kind == "audit" and finding.mechanism == "GaussianNoiseRhoAsEpsilon" and finding.witnessed > 1.0
    assert "against the declared δ = 1e-05" in finding.detail, finding.detail
    assert report.audit is not None and report.audit.delta == pytest.approx(1e-5)
    gap = float(finding.detail.split("by ")[-1].split(",")[0])
    assert gap > 0.01, finding.detail  # the classical σ's δ(ε) is far below 1e-5; the ρ-for-ε σ's about 0.29
    script = tmp_path / "finding.py"
    script.write_text(finding.script, encoding="utf-8")
    path = os.pathsep.join([str(TESTS / "support"), str(Path(dpwitness.__file__).resolve().parents[1])])
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "vs δ = 1e-05" in run.stdout and "by more than δ" in run.stdout, run.stdout


def test_the_classical_gaussian_at_its_delta_is_not_flagged() -> None:
    report = check(user.gaussian_count, columns=KEYS, **QUICK)
    assert report.delta == pytest.approx(1e-5) and not report.findings, [str(f) for f in report.findings]
    assert report.verdict in ("ok", "inconclusive") and report.audit is not None and not report.audit.violated


def test_a_delta_given_by_the_user_is_the_claim() -> None:
    report = check(user.gaussian_count, columns=KEYS, **{**QUICK, "delta": 1e-3, "audit": False})
    assert report.delta == 1e-3 and not any("δ its noise calls declare" in n for n in report.notes)
