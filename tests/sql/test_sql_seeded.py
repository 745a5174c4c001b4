"""A seeded SQL answer says it is not for production on every face: text, JSON and CSV (issue 26)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("sqlglot")

import dpwitness as dw  # noqa: E402
from dpwitness.mechanisms.release import NOT_FOR_PRODUCTION  # noqa: E402

STATEMENT = "SELECT COUNT(*) AS n FROM people"


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text("name,age\nAnn,30\nBob,40\nCid,50\n")
    return path


def test_a_seeded_answer_is_labelled_and_a_secure_one_is_not(people: Path) -> None:
    seeded = dw.Session(people, epsilon=1.0, seed=3).sql(STATEMENT, epsilon=1)
    assert seeded.seeded and NOT_FOR_PRODUCTION in str(seeded)
    assert NOT_FOR_PRODUCTION in seeded.to_dict()["notes"] and seeded.to_dict()["seeded"] is True
    secure = dw.Session(people, epsilon=1.0).sql(STATEMENT, epsilon=1)
    assert not secure.seeded and NOT_FOR_PRODUCTION not in str(secure)
    assert secure.to_dict()["seeded"] is False


@pytest.mark.parametrize("output", ["--json", "--csv", None])
def test_the_command_line_labels_a_seeded_answer_in_every_format(people: Path, output: str | None) -> None:
    command = [sys.executable, "-m", "dpwitness", "sql", str(people), STATEMENT, "--epsilon", "1", "--seed", "3"]
    done = subprocess.run([*command, *([output] if output else [])], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if output == "--json":
        assert NOT_FOR_PRODUCTION in json.loads(done.stdout)["notes"]
    elif output == "--csv":
        assert done.stdout.splitlines()[0].startswith("n")  # stdout stays one CSV table
        assert NOT_FOR_PRODUCTION not in done.stdout and NOT_FOR_PRODUCTION in done.stderr
    else:
        assert NOT_FOR_PRODUCTION in done.stdout
