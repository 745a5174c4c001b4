"""OpenDP 0.16's Polars context against the REAL library, in the anchors venv (``.venv-anchors``).

CI does not build that venv (``bash bench/anchors/setup.sh`` does): without it these tests skip
with a message. The user functions (tests/support/targets_opendp_polars_user.py) use the Polars context
as OpenDP's documentation shows; the check runs them as a user would, through ``dpwitness
check`` of the venv or ``dw.check`` inside it.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-anchors"
PYTHON, CLI = VENV / "bin" / "python", VENV / "bin" / "dpwitness"
USER = Path(__file__).resolve().parents[1] / "support" / "targets_opendp_polars_user.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CLI.exists(), reason=f"the anchors venv is absent ({CLI}): run bash bench/anchors/setup.sh"),
]


def run_python(code: str) -> Any:
    """Run ``code`` in the venv's Python (the tests folder importable); it prints one JSON value."""
    run = subprocess.run([str(PYTHON), "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=USER.parent, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def run_check(name: str, columns: str, *, seconds: float = 10, scripts: Path | None = None) -> tuple[int, dict[str, Any]]:
    command = [str(CLI), "check", f"{USER}:{name}", "--columns", columns, "--epsilon", "1", "--max-seconds", str(seconds)]
    command += ["--json"] + (["--scripts", str(scripts)] if scripts is not None else [])
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.stdout.strip(), run.stderr[-3000:]
    return run.returncode, json.loads(run.stdout)


def test_each_noised_column_is_recorded_with_opendps_own_scale_and_delta() -> None:
    facts = run_python(
        """
        import json
        import opendp.prelude as dp
        import polars as pl
        import targets_opendp_polars_user as user
        from dpwitness.targets import Unsupported, recording

        table = pl.DataFrame({"x": [1, 5, None, 300, -7], "g": ["a", "a", "b", "b", "c"]}, schema={"x": pl.Int64, "g": pl.String})
        out = {}
        for relation in ("add-remove", "replace-one"):
            with recording("unnoised", epsilon=1.0, neighbours=relation) as recorder:
                released = user.sum_and_count(table)
            out[relation] = [[c.library, c.mechanism, c.sensitivity, c.epsilon, c.value, c.site] for c in recorder.calls]
        out["released"] = released.rows()
        out["replay"] = [type(v).__name__ for c in recorder.calls for v in c.replay()]
        # OpenDP's own account of the same query, read without the hooks
        context = dp.Context.compositor(data=table.lazy(), privacy_unit=dp.unit_of(contributions=1),
            privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1, margins=[dp.polars.Margin(by=(), max_length=1000)])
        query = context.query().select(pl.col("x").cast(int).fill_null(0).dp.sum((0, 100)), pl.len().dp.noise())
        out["summary"] = query.summarize().select("column", "distribution", "scale").rows()
        out["map"] = [query.resolve().map(1), query.resolve().map(2)]
        out["plain"] = [table["x"].fill_null(0).clip(0, 100).sum(), table.height]
        out["outside"] = type(query.release()).__name__
        with recording("record", epsilon=1.0) as recorder:
            noisy = user.sum_and_count(table)
        out["noisy"] = [noisy.rows(), [list(o) for o in recorder.outputs]]
        with recording("unnoised", epsilon=1.0) as recorder:
            user.count_by_group(table)
        out["grouped"] = [[c.value, c.sensitivity, c.invariant] for c in recorder.calls]
        pets = pl.DataFrame({"grade": [1, 0, 0], "pets": [20, 0, 3]}, schema={"grade": pl.Int32, "pets": pl.Int32})
        with recording("unnoised", epsilon=1.0) as recorder:
            unnoised = user.pets_by_grade(pets)
        out["direct"] = [[c.value, c.sensitivity, c.site, c.invariant is not None] for c in recorder.calls]
        out["direct"].append(unnoised.sort("grade").rows())
        refused = {}
        for name, frame in (("count_by_group_private_keys", table), ("sum_and_count", pl.concat([table] * 201))):
            try:
                with recording("unnoised", epsilon=1.0):
                    getattr(user, name)(frame)
            except Unsupported as error:
                refused[name] = str(error)
        out["refused"] = refused
        print(json.dumps(out, default=str))
        """
    )
    (sum_scale, len_scale) = [scale for _, _, scale in facts["summary"]]
    assert [row[:2] for row in facts["summary"]] == [["x", "Integer Laplace"], ["len", "Integer Laplace"]]
    add_remove, replace_one = facts["add-remove"], facts["replace-one"]
    # the declared Δ: what OpenDP's plan declares (clip bounds [0, 100]: 100; a count: 1), doubled
    # at symmetric distance 2 (replace-one), exactly as OpenDP's privacy map grows
    assert [call[2] for call in add_remove] == [100.0, 1.0]
    growth = facts["map"][1] / facts["map"][0]
    assert [call[2] for call in replace_one] == pytest.approx([100.0 * growth, 1.0 * growth], rel=1e-12)
    assert growth == pytest.approx(2.0, rel=1e-9)
    # each column's ε share is Δ / scale, and the shares add up to OpenDP's map at one contribution
    assert add_remove[0][3] == pytest.approx(100.0 / sum_scale) and add_remove[1][3] == pytest.approx(1.0 / len_scale)
    assert add_remove[0][3] + add_remove[1][3] == pytest.approx(facts["map"][0], rel=1e-9)
    assert f"scale {sum_scale:g}" in add_remove[0][1] and f"scale {len_scale:g}" in add_remove[1][1]
    # the value before noise is the clipped, filled sum and the length, as plain Polars computes them
    assert [call[4] for call in add_remove] == [[float(facts["plain"][0])], [float(facts["plain"][1])]]
    assert facts["released"] == [tuple(facts["plain"])] or facts["released"] == [list(facts["plain"])]
    assert {call[0] for call in add_remove} == {"opendp-polars"}
    assert add_remove[0][5].startswith("opendp/extras/polars/__init__.py:")
    assert facts["replay"] == ["int", "int"]
    assert facts["outside"] == "OnceFrame"  # outside a recorder OpenDP is untouched
    rows, outputs = facts["noisy"]
    assert [[v] for v in rows[0]] == outputs and rows[0] != list(facts["plain"])  # noise added in record mode
    # grouped, keys invariant: one value per group (sorted by key), the key set as the invariant
    ((values, declared, invariant),) = facts["grouped"]
    assert values == [2.0, 2.0, 1.0] and declared == 1.0 and "keys" in str(invariant) and "'c'" in str(invariant)
    # a private lazyframe invoked directly (OpenDP's own example, scale set by hand): Δ = scale × OpenDP's map
    # (one record moves one grade's clipped sum by at most 10), values per grade sorted by key
    (values, declared, site, has_invariant), unnoised = facts["direct"]
    assert values == [3.0, 10.0] and declared == 10.0 and "Measurement.__call__" in site and has_invariant
    assert unnoised == [[0, 3], [1, 10]]
    assert "noisy threshold" in facts["refused"]["count_by_group_private_keys"]
    assert "max_length 1000" in facts["refused"]["sum_and_count"]  # 1005 rows > the margin's max_length


def test_a_correct_sum_and_count_gets_no_false_alarm() -> None:
    code, report = run_check("sum_and_count", '{"x": "Int64"}')
    assert report["verdict"] in ("ok", "inconclusive") and code in (0, 3), report["notes"]
    assert not report["findings"] and report["pairs_tried"] > 20
    assert [(c["library"], c["sensitivity"]) for c in report["calls"]] == [("opendp-polars", 100.0), ("opendp-polars", 1.0)]


def test_a_correct_float_sum_gets_no_false_alarm_and_opendps_float_allowance() -> None:
    code, report = run_check("float_sum", '{"x": "Float64"}')
    assert report["verdict"] in ("ok", "inconclusive") and code in (0, 3), report["notes"]
    assert not report["findings"] and report["pairs_tried"] > 20
    # OpenDP's float sum declares a little more than U − L = 1: its allowance for float rounding at max_length rows
    ((call,),) = [report["calls"]]
    assert 1.0 < call["sensitivity"] < 1.001 and call["library"] == "opendp-polars"


def test_grouped_counts_with_invariant_keys_get_no_false_alarm() -> None:
    code, report = run_check("count_by_group", '{"g": ["a", "b", "c"]}')
    assert report["verdict"] in ("ok", "inconclusive") and code in (0, 3), report["notes"]
    assert not report["findings"]
    # pairs whose key sets differ are outside OpenDP's contract (the margin declared them invariant): skipped, not judged
    assert report["pairs_skipped"] > 0 and any("invariant" in note for note in report["notes"])


def test_rows_that_are_not_people_are_found(tmp_path: Path) -> None:
    code, report = run_check("count_tags", '{"tags": ["a", "a,b", "b"]}', scripts=tmp_path)
    assert code == 1 and report["verdict"] == "violated", report["notes"]
    finding = next(f for f in report["findings"] if f["kind"] == "sensitivity")
    assert finding["library"] == "opendp-polars" and finding["claimed"] == 1.0 and float(finding["witnessed"]) >= 2.0
    path, line = finding["caller"].rsplit(":", 1)  # the user's line that released the query
    assert path == str(USER) and ".release()" in USER.read_text().splitlines()[int(line) - 1]
    (script,) = sorted(tmp_path.glob("*_sensitivity.py"))
    run = subprocess.run([str(PYTHON), str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "BUG" in run.stdout, run.stdout + run.stderr  # OpenDP and polars alone show it


def test_a_private_lazyframe_invoked_directly_is_checked_too(tmp_path: Path) -> None:
    code, report = run_check("visits_by_grade", '{"grade": ["a", "b"], "visits": ["x", "x,y"]}', scripts=tmp_path)
    assert code == 1 and report["verdict"] == "violated", report["notes"]
    finding = next(f for f in report["findings"] if f["kind"] == "sensitivity")
    assert "Measurement.__call__" in finding["site"] and finding["claimed"] == 1.0 and float(finding["witnessed"]) >= 2.0
    (script,) = sorted(tmp_path.glob("*_sensitivity.py"))
    run = subprocess.run([str(PYTHON), str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "BUG" in run.stdout, run.stdout + run.stderr


def test_a_data_dependent_second_release_is_found() -> None:
    code, report = run_check("sum_if_large", '{"x": [0, 100]}')
    assert code == 1 and report["verdict"] == "violated", report["notes"]
    assert report["findings"][0]["kind"] == "noise-calls" and report["findings"][0]["library"] == "opendp-polars"


def test_key_selection_is_unsupported_and_an_unseen_context_is_an_adapter_error() -> None:
    verdicts = run_python(
        """
        import json
        import polars as pl
        import dpwitness as dw
        import targets_opendp_polars_user as user

        out = {}
        for name, columns in (("count_by_group_private_keys", {"g": ["a", "b"]}),
                              ("count_of_a_context_made_at_import", {"x": pl.Int64})):
            report = dw.check(getattr(user, name), columns=columns, epsilon=1.0, max_seconds=10)
            out[name] = [report.verdict, report.exit_code, list(report.notes), len(report.findings)]
        print(json.dumps(out))
        """
    )
    verdict, _, notes, findings = verdicts["count_by_group_private_keys"]
    assert verdict == "unsupported" and findings == 0, notes
    verdict, exit_code, notes, findings = verdicts["count_of_a_context_made_at_import"]
    assert (verdict, exit_code, findings) == ("adapter-error", 5, 0), notes
    assert any("Context was not made while the hooks were installed" in note for note in notes)
