"""Every output shows its numbers: the HTML report, print(), repr() and the notebook forms."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import dpwitness as dw
from dpwitness.cli import app
from dpwitness.mechanisms.release import Release
from dpwitness.mechanisms.report import release_html, render_html, sensitivity_text

pl = pytest.importorskip("polars")

KEYS = ["Female", "Male"]


@pytest.fixture(scope="module")
def session() -> dw.Session:
    rng = np.random.default_rng(5)
    frame = pl.DataFrame({"age": rng.integers(17, 91, 4000).astype(float), "sex": rng.choice(KEYS, 4000)})
    s = dw.Session(frame, epsilon=10.0, seed=3)
    s.count(epsilon=1.0)
    s.mean("age", bounds=(0, 100), epsilon=1.0, by="sex", keys=KEYS)
    s.histogram("sex", KEYS, epsilon=1.0)
    s.mean("age", bounds=(0, 100), epsilon=1.0)
    return s


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg.*?</svg>", page, re.S)


def test_keyed_releases_list_every_key_value_and_interval_as_text(session: dw.Session) -> None:
    page = render_html(session.releases, spent=session.spent, remaining=session.remaining)
    assert all(release_html(r) in page for r in session.releases)
    for release in session.releases:
        if isinstance(release.value, dict):
            section = release_html(release)
            intervals = release.interval
            assert isinstance(intervals, dict)
            for key, value in release.value.items():
                low, high = intervals[key]
                cell = "<td class=num>([^<]+)</td>"
                row = re.search(rf"<tr><td>{key}</td>{cell}{cell}{cell}", section)
                assert row is not None, key
                shown = [float(cell.replace(",", "")) for cell in row.groups()]
                assert shown == pytest.approx([value, low, high], rel=1e-5)
    assert "see chart" not in page


def test_charts_are_svg_text_and_nothing_is_clipped(session: dw.Session) -> None:
    keyed = [r for r in session.releases if isinstance(r.value, dict)]
    for release in keyed:
        (svg,) = _svgs(release_html(release))
        assert "<path" not in svg  # labels are <text>, not glyph outlines
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        assert set(KEYS) <= set(labels)
        width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())  # type: ignore[union-attr]
        xs = [float(v) for v in re.findall(r' (?:x|x1|x2|cx)="(-?[\d.]+)"', svg)]
        ys = [float(v) for v in re.findall(r' (?:y|y1|y2|cy)="(-?[\d.]+)"', svg)]
        assert xs and ys
        assert all(0.0 <= x <= width for x in xs) and all(0.0 < y < height for y in ys)  # inside the drawing
        tops = [float(v) for v in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)" r="4"', svg)]
        assert all(cy - 4 >= 0 for cy in tops)  # a marker at the top is whole (the "Male" dot was half-clipped)


def test_delta_reads_the_same_in_the_terminal_the_report_and_print(session: dw.Session, tmp_path: Path) -> None:
    mean = session.releases[-1]
    assert sensitivity_text(mean) == "count 1, centred_sum 50"
    assert "Δ = count 1, centred_sum 50" in release_html(mean) and "Δ = count 1, centred_sum 50" in str(mean)
    table = tmp_path / "t.csv"
    table.write_text("age\n" + "\n".join(str(20 + i % 60) for i in range(300)) + "\n")
    result = CliRunner().invoke(
        app, ["query", str(table), "--epsilon", "1", "--mean", "age:0:100", "--dtype", "age:integer"], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0 and "count 1, centred_sum 50" in result.stdout


def test_print_and_repr_are_readable(session: dw.Session) -> None:
    count, grouped, _, mean = session.releases
    assert str(count).startswith("count() = ") and "95% interval" in str(count) and "neighbours: add/remove" in str(count)
    assert all(key in str(grouped) for key in KEYS)
    assert repr(mean).startswith("CompositeRelease(") and "nan" not in repr(mean) and "scale" not in repr(mean)
    assert "Release(" in repr(count) and "scale=" in repr(count)
    assert "object at 0x" not in repr(session) and "4 release(s)" in repr(session)
    preview = session.preview("count", epsilon=0.5)
    assert "nothing spent" in str(preview) and "Preview(" not in repr(preview)


def test_notebook_forms_exist_for_every_result(session: dw.Session) -> None:
    mechanism = dw.Laplace(sensitivity=1, epsilon=1)
    report = dw.witness(mechanism)
    audited = mechanism.release(0.0, seed=1).audit(samples=2000, seed=1)
    objects: list[Any] = [*session.releases, session, session.preview("count", epsilon=0.5), report, audited]
    for item in objects:
        html = item._repr_html_()
        assert html.startswith("<") and "object at 0x" not in html


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_releases_round_trip_through_json(session: dw.Session, index: int) -> None:
    release = session.releases[index]
    back = Release.from_dict(json.loads(json.dumps(release.to_dict())))
    assert type(back) is type(release) and back == release
    assert back.interval == release.interval and str(back) == str(release)


def test_a_vector_release_round_trips() -> None:
    release = dw.Laplace(sensitivity=1, epsilon=1, dimension=3).release([1.0, 2.0, 3.0], seed=4)
    back = Release.from_dict(json.loads(json.dumps(release.to_dict())))
    assert np.array_equal(back.value, release.value) and back.epsilon == release.epsilon  # type: ignore[arg-type]


def test_the_session_archive_holds_releases_and_history(session: dw.Session) -> None:
    archive = json.loads(json.dumps(session.to_dict()))
    assert len(archive["releases"]) == len(session.releases) == len(archive["history"])
    assert [Release.from_dict(r) for r in archive["releases"]] == session.releases


def test_the_report_needs_no_plotting_library(tmp_path: Path, session: dw.Session) -> None:
    """matplotlib blocked for real (an import hook in sitecustomize): the report still draws its charts."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nclass B:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'matplotlib':\n            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, B())\n"
    )
    data = tmp_path / "releases.json"
    data.write_text(json.dumps([r.to_dict() for r in session.releases]))
    script = (
        "import json, sys\nfrom dpwitness.mechanisms.release import Release\n"
        "from dpwitness.mechanisms.report import render_html\n"
        f"page = render_html([Release.from_dict(r) for r in json.load(open({str(data)!r}))])\n"
        "assert 'matplotlib' not in sys.modules\nprint(page.count('<svg'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 2  # the two keyed releases
