"""bench/anchors/opendp_polars.py declares OpenDP's privacy unit as the bound needs (issue 31, item 7).

With ``--max-contributions k`` a person holds one ``user_id`` and contributes up to k rows: OpenDP's
``unit_of(contributions=1, identifier=...)`` with ``truncate_per_group(k)``. The noise scale OpenDP
derives (the script's ``scales``, from ``summarize()``) must then be k·U/ε for a sum over [0, U] and
k/ε for a count, as dpwitness's for the same bound; declaring ``contributions=k`` as well made it k
times that, so every accuracy comparison was unfair to OpenDP. Runs in the anchors venv; skips,
saying so, without it (CI does not build it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-anchors" / "bin" / "python"
SCRIPT = ROOT / "bench" / "anchors" / "opendp_polars.py"
sys.path.insert(0, str(ROOT / "bench"))

from gen_parquet import generate  # noqa: E402  (bench/ is not a package)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PYTHON.exists(), reason=f"the anchors venv is absent ({PYTHON}): run bash bench/anchors/setup.sh"),
]


@pytest.mark.parametrize(
    ("stat", "bound", "scale"),
    [("sum", 5, 5 * 100.0), ("count", 5, 5.0), ("count", None, 1.0), ("histogram", None, 1.0)],
)
def test_opendp_noise_scale_is_the_one_the_bound_needs(stat: str, bound: int | None, scale: float, tmp_path: Path) -> None:
    path = generate(4_000, directory=tmp_path, quiet=True)
    command = [str(PYTHON), str(SCRIPT), str(path), "--stat", stat, "--repeats", "1", "--rows", "4000"]
    if bound is not None:
        command += ["--max-contributions", str(bound)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["error"] is None and result["bounded"] is (bound is not None)
    assert result["scales"] and all(s == pytest.approx(scale) for s in result["scales"]), result["scales"]
