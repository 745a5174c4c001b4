"""Progress for long work: shown on a terminal (forced here with DPWITNESS_PROGRESS=1), silent
when stderr is not a terminal, under the CLI's --json, inside another display and with =0."""

from __future__ import annotations

import json
import sys

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness import audit, sensitivity_search
from dpwitness.cli import app
from dpwitness.common.progress import progress, silenced


def total(frame: pl.DataFrame) -> float:
    return float(frame["x"].fill_nan(0.0).fill_null(0.0).clip(0, 1).sum())


def search() -> None:
    sensitivity_search(total, columns={"x": pl.Float64}, claimed=1.0, trials=30, seed=1)


def test_a_sensitivity_search_shows_its_progress_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DPWITNESS_PROGRESS", "1")
    search()
    assert "sensitivity search" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["", "0"])
def test_silent_when_not_a_terminal_or_switched_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    monkeypatch.setenv("DPWITNESS_PROGRESS", setting)  # "": stderr is captured here, not a terminal
    search()
    assert capsys.readouterr().err == ""


def test_silenced_and_nested_displays_show_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DPWITNESS_PROGRESS", "1")
    with silenced():
        search()
    assert capsys.readouterr().err == ""
    with progress("outer", total=1) as outer:
        search()  # one display at a time: the inner search stays silent
        outer.advance()
    err = capsys.readouterr().err
    assert "outer" in err and "sensitivity search" not in err


def test_the_cli_is_silent_under_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPWITNESS_PROGRESS", "1")
    args = ["witness", "--sensitivity-search", "test_progress:total", "--columns", '{"x": "Float64"}']
    result = CliRunner().invoke(app, [*args, "--claimed", "1", "--trials", "30", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["violated"] is False and "sensitivity search" not in result.output


@pytest.mark.spark
def test_a_spark_job_shows_its_progress(
    spark: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpwitness import Session

    frame = spark.createDataFrame([(float(i),) for i in range(50)], ["x"])  # type: ignore[attr-defined]
    session = Session(frame, epsilon=1, engine="spark", seed=1)
    monkeypatch.setenv("DPWITNESS_PROGRESS", "1")
    session.count(epsilon=0.5)
    assert "spark: count()" in capsys.readouterr().err
    monkeypatch.setenv("DPWITNESS_PROGRESS", "0")
    session.count(epsilon=0.5)
    assert capsys.readouterr().err == ""


def _laplace(x: float, rng: np.random.Generator, size: int) -> np.ndarray:
    return x + rng.laplace(0.0, 1.0, size)


@pytest.mark.parametrize(("setting", "shown"), [("1", True), ("0", False), ("", True)])
def test_the_auditor_uses_the_one_display(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setting: str, shown: bool
) -> None:
    """The auditor had a bar of its own, on whenever stderr was a terminal, deaf to DPWITNESS_PROGRESS."""
    monkeypatch.setenv("DPWITNESS_PROGRESS", setting)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal: only the setting decides
    audit(_laplace, 0.0, 1.0, epsilon=1.0, samples=2000, seed=1, progress=True)
    assert ("auditing" in capsys.readouterr().err) == shown
