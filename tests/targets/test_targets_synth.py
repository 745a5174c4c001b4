"""The SmartNoise Synth adapter against the REAL library (smartnoise-synth 1.0.8), in its own venv.

bench/anchors/setup.sh builds ``.venv-synth`` (``DPW_SYNTH_VENV``); CI does not, so there these
tests skip with a message. Everything runs in one subprocess of the venv's Python (JAX and mbi
load once): the user functions are tests/support/targets_synth_user.py, written as snsynth's docs fit a
synthesizer, and each is checked with ``dw.check`` exactly as a user would call it (no glue, no
library named).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("DPW_SYNTH_VENV", ROOT / ".venv-synth"))
PYTHON = VENV / "bin" / "python"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PYTHON.exists(), reason=f"no SmartNoise Synth venv at {VENV}: run bash bench/anchors/setup.sh"),
]

# The table every recording runs on, and its neighbour under add-remove (one more row).
ROWS = [("F", "school"), ("M", "college"), ("F", "school"), ("F", "degree"), ("M", "school")]

DRIVER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import polars as pl
    import dpwitness as dw
    from dpwitness.targets import Unsupported, recording
    import targets_synth_user as user

    rows = json.loads(sys.argv[2])
    d = pl.DataFrame({"sex": [r[0] for r in rows], "education": [r[1] for r in rows]})
    d_prime = pl.concat([d, pl.DataFrame({"sex": ["M"], "education": ["degree"]})])
    out = {}

    def calls(fn, table, mode="unnoised"):
        with recording(mode) as recorder:
            fn(table)
        return recorder

    unnoised = calls(user.mst_declared, d)
    out["mst_calls"] = [
        {"site": c.site, "mechanism": c.mechanism, "sensitivity": c.sensitivity, "norm": c.norm,
         "value": c.value, "library": c.library, "version": c.version, "caller": c.caller}
        for c in unnoised.calls
    ]
    out["mst_neighbour_signatures"] = [
        [[c.site, c.mechanism, len(c.value) if isinstance(c.value, tuple) else None] for c in calls(user.mst_declared, t).calls]
        for t in (d, d_prime)
    ]
    noised = calls(user.mst_declared, d, "record")
    out["mst_noised_count"] = len(noised.calls)
    out["mst_noise"] = [np.asarray(o, dtype=float).ravel().tolist() for o in noised.outputs[1:3]]
    first = next(c for c in unnoised.calls if c.norm == "l2" and c.replay is not None)
    replays = np.array([first.replay() for _ in range(2000)])
    out["replay_mean"] = replays.mean(axis=0).tolist()
    out["replay_std"] = replays.std(axis=0).tolist()
    out["replay_mechanism"] = first.mechanism

    # MWEM sizes its histogram from the largest label in the data, even with declared categories:
    # a table without the last category ("school") against one with it
    without = pl.DataFrame({"sex": ["F", "M", "F", "M"], "education": ["degree", "college", "degree", "college"]})
    with_it = pl.concat([without, pl.DataFrame({"sex": ["M"], "education": ["school"]})])
    out["mwem_calls"] = [
        [c.mechanism for c in calls(user.mwem_declared, t).calls] for t in (without, with_it)
    ]

    out["refused"] = {}
    ages = pl.DataFrame({"sex": ["F", "M", "F"], "age": [30, 41, 52]})
    for name, fn, table in (("bounds", user.mwem_inferred_bounds, ages), ("dpctgan", user.dpctgan, d)):
        try:
            calls(fn, table)
        except Unsupported as refused:
            out["refused"][name] = str(refused)

    checks = {
        "aim": dict(fn=user.aim_declared, audit=False, max_seconds=15),
        "mst": dict(fn=user.mst_declared, audit=False, max_seconds=8),
        "mst_replace_one": dict(fn=user.mst_declared, neighbours="replace-one", audit=False, max_seconds=8),
        "mwem": dict(fn=user.mwem_inferred, audit=False, max_seconds=6),
        "dpctgan": dict(fn=user.dpctgan, max_seconds=5),
        "own_noise": dict(fn=user.own_noise, max_seconds=5),
        "bounds": dict(fn=user.mwem_inferred_bounds, columns={"sex": ["F", "M"], "age": pl.Int64}, max_seconds=5),
    }
    for name, kwargs in checks.items():
        columns = kwargs.pop("columns", user.COLUMNS)
        report = dw.check(kwargs.pop("fn"), columns=columns, epsilon=1.0, **kwargs)
        out[name] = report.to_dict()
    with open(sys.argv[1], "w") as handle:
        json.dump(out, handle, default=str)
    """
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("synth") / "results.json"
    run = subprocess.run(
        [str(PYTHON), "-c", DRIVER, str(path), json.dumps(ROWS)],
        cwd=ROOT / "tests" / "support",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_each_noise_call_is_recorded_with_its_value_before_noise(results: dict[str, Any]) -> None:
    calls = results["mst_calls"]
    assert {c["library"] for c in calls} == {"smartnoise-synth"} and calls[0]["version"] == "1.0.8"
    # MST passes the exact row count to mbi (no noise): recorded with declared Δ = 0
    assert calls[0]["mechanism"].startswith("known_total") and calls[0]["value"] == len(ROWS)
    assert calls[0]["sensitivity"] == 0.0
    gaussians = [c for c in calls if c["mechanism"].startswith("gaussian")]
    assert len(gaussians) == 3 and all(c["site"] == "snsynth/mst/mst.py:139" for c in gaussians)
    assert all(c["sensitivity"] == 1.0 and c["norm"] == "l2" for c in gaussians)
    assert all(c["caller"].endswith(f"targets_synth_user.py:{_line('mst_declared', 'synth.fit(')}") for c in calls)
    # the one-way marginals, in the transformer's (sorted) category order: F, M; college, degree, school
    sex, education = gaussians[0]["value"], gaussians[1]["value"]
    assert sex == [3.0, 2.0] and education == [1.0, 1.0, 3.0]
    # the two-way marginal of the clique MST selected: six cells summing to n
    assert len(gaussians[2]["value"]) == 6 and sum(gaussians[2]["value"]) == len(ROWS)
    (choice,) = [c for c in calls if c["mechanism"].startswith("exponential mechanism")]
    assert choice["sensitivity"] is None and choice["site"].startswith("snsynth/mst/mst.py:")


def test_both_neighbours_take_the_same_path_and_the_noise_is_the_librarys(results: dict[str, Any]) -> None:
    on_d, on_d_prime = results["mst_neighbour_signatures"]
    assert on_d == on_d_prime  # the transcript is fixed: the same calls, sites and sizes on both
    assert results["mst_noised_count"] == len(results["mst_calls"])
    noise = [v for vector in results["mst_noise"] for v in vector]
    assert noise and all(v != 0.0 for v in noise)  # with noise: the library's own draws were added
    # replay: only the noise, added to the frozen value; σ as the library declared it
    sigma = float(results["replay_mechanism"].split("σ = ")[1].rstrip(")"))
    value = results["mst_calls"][1]["value"]
    for mean, std, exact in zip(results["replay_mean"], results["replay_std"], value, strict=True):
        assert abs(mean - exact) < 5 * sigma / 2000**0.5
        assert 0.9 < std / sigma < 1.1


def test_aim_with_declared_categories_raises_no_false_alarm(results: dict[str, Any]) -> None:
    report = results["aim"]
    assert report["verdict"] in ("ok", "inconclusive"), report["notes"]
    assert report["findings"] == []
    searched = [c for c in report["calls"] if c["sensitivity"] is not None]
    assert searched and all(c["site"].startswith("snsynth/aim/aim.py:") for c in searched)
    assert report["pairs_tried"] > report["pairs_skipped"]


def test_mst_uses_the_exact_row_count(results: dict[str, Any]) -> None:
    report = results["mst"]
    assert report["verdict"] == "violated"
    (finding,) = [f for f in report["findings"] if f["mechanism"].startswith("known_total")]
    assert finding["kind"] == "sensitivity" and finding["library"] == "smartnoise-synth"
    assert finding["claimed"] == 0.0 and finding["witnessed"] == 1.0
    assert finding["site"].startswith("snsynth/mst/mst.py:")
    rows = [sum(run["times"] for run in finding[side]) for side in ("d", "d_prime")]
    assert abs(rows[0] - rows[1]) == 1  # add-remove: one row more or less
    assert "CALLS" in finding["script"] and "snsynth" in finding["script"]


def test_under_replace_one_a_marginal_moves_by_sqrt_2_against_the_budgeted_1(results: dict[str, Any]) -> None:
    report = results["mst_replace_one"]  # snsynth budgets for add-remove: one record moves one cell
    assert report["verdict"] == "violated"
    finding = report["findings"][0]
    assert finding["kind"] == "sensitivity" and finding["mechanism"].startswith("gaussian noise on a marginal")
    assert finding["claimed"] == 1.0 and abs(finding["witnessed"] - 2**0.5) < 1e-12
    assert [sum(run["times"] for run in finding[side]) for side in ("d", "d_prime")] == [1, 1]


def test_each_finding_script_shows_its_bug_with_the_library_alone(results: dict[str, Any], tmp_path: Path) -> None:
    for name in ("mst", "mst_replace_one"):
        finding = results[name]["findings"][0]
        script = tmp_path / f"{name}.py"
        script.write_text(finding["script"])
        run = subprocess.run([str(PYTHON), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 1 and "BUG" in run.stdout, run.stdout + run.stderr[-2000:]
        assert "dpwitness" not in finding["script"].split('"""', 2)[2]  # the library alone


def test_mwem_as_its_quick_start_fits_it_leaks_the_categories(results: dict[str, Any]) -> None:
    report = results["mwem"]
    assert report["verdict"] == "violated"
    assert report["calls"][0]["mechanism"].startswith("categories inferred from the data")
    kinds = {(f["kind"], f["mechanism"].split(":")[0]) for f in report["findings"]}
    assert ("noise-calls", "categories inferred from the data (no noise)") in kinds or any(
        f["kind"] == "sensitivity" and f["claimed"] == 0.0 for f in report["findings"]
    ), kinds


def test_mwem_sizes_its_histogram_from_the_data_even_with_declared_categories(results: dict[str, Any]) -> None:
    without, with_it = results["mwem_calls"]
    queries = [sum(m.startswith("laplace") for m in calls) for calls in (without, with_it)]
    assert queries[0] < queries[1]  # one neighbour more: more noisy queries (a changed number of noise calls)
    assert without[0] == with_it[0] and without[0].startswith("the synthetic histogram starts at the exact total")


def test_outside_the_contract_is_unsupported_and_an_adapter_failure_is_its_own_verdict(results: dict[str, Any]) -> None:
    assert results["dpctgan"]["verdict"] == "unsupported" and not results["dpctgan"]["findings"]
    assert results["bounds"]["verdict"] == "unsupported" and not results["bounds"]["findings"]
    assert "approx_bounds" in results["refused"]["bounds"] and "'dpctgan'" in results["refused"]["dpctgan"]
    assert results["own_noise"]["verdict"] == "adapter-error" and not results["own_noise"]["findings"]
    assert any("without a local 'x'" in note for note in results["own_noise"]["notes"])


def _line(function: str, text: str) -> int:
    """The line of ``text`` in ``function`` of tests/support/targets_synth_user.py (the user's call)."""
    lines = (ROOT / "tests" / "support" / "targets_synth_user.py").read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"def {function}(")))
    return next(i + 1 for i, line in enumerate(lines) if i > start and text in line)
