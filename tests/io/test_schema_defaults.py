"""A declared schema's bounds and categories are the defaults of a statistic call that gives none.

Each default is checked against the explicit call: same seed, same release (value, Δ, scale,
query text); a different bound would give another release, so the comparison can fail. Without
a schema, or for a column that declares nothing, the old rules hold and nothing is spent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dpwitness as dw
from dpwitness.cli import app
from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import ColumnKind as K
from dpwitness.io.schema import Schema
from dpwitness.mechanisms.release import Release

runner = CliRunner()

DECLARED = Schema(
    {"id": K.INTEGER, "age": K.INTEGER, "hours": K.FLOAT, "sex": K.STRING, "town": K.STRING, "name": K.STRING},
    bounds={"age": (0.0, 100.0)},
    categories={"sex": ("F", "M"), "town": ("Ashby", "Dent", "Eyre")},
    declared=True,
)
TOWNS = ("Ashby", "Dent", "Eyre")


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """A CSV as pandas writes it (a key outside the declared categories included: "X")."""
    frame = pd.DataFrame(
        {
            "id": list(range(8)),
            "age": [34, 51, 19, 42, 27, 88, 63, 45],
            "hours": [40.0, 37.5, 20.0, 60.0, 40.0, 35.0, 10.0, 45.0],
            "sex": ["F", "M", "F", "F", "M", "M", "X", "F"],
            "town": ["Ashby", "Dent", "Eyre", "Ashby", "Dent", "Ashby", "Eyre", "Zed"],
            "name": ["Doe, Jane", "Ann", "Bo", "Cy", "Di", "Ed", "Fay", "Gil"],
        }
    )
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def _session(people: Path, tmp_path: Path, name: str, schema: Schema | None = DECLARED) -> dw.Session:
    return dw.Session(str(people), epsilon=10.0, ledger=tmp_path / f"{name}.db", schema=schema, seed=7)


def _same(a: Release, b: Release) -> None:
    assert (a.value, a.sensitivity, a.scale, a.query, a.delta) == (b.value, b.sensitivity, b.scale, b.query, b.delta)


@pytest.mark.parametrize(
    ("implicit", "explicit", "other"),
    [
        (
            lambda s: s.mean("age", epsilon=1.0),
            lambda s: s.mean("age", (0, 100), epsilon=1.0),
            lambda s: s.mean("age", (0, 50), epsilon=1.0),
        ),
        (
            lambda s: s.sum("age", epsilon=1.0),
            lambda s: s.sum("age", (0, 100), epsilon=1.0),
            lambda s: s.sum("age", (0, 50), epsilon=1.0),
        ),
        (
            lambda s: s.median("age", epsilon=1.0),
            lambda s: s.median("age", (0, 100), epsilon=1.0),
            lambda s: s.median("age", (0, 50), epsilon=1.0),
        ),
        (
            lambda s: s.count(epsilon=1.0, by="sex"),
            lambda s: s.count(epsilon=1.0, by="sex", keys=["F", "M"]),
            lambda s: s.count(epsilon=1.0, by="sex", keys=["F"]),
        ),
        (
            lambda s: s.sum("age", epsilon=1.0, by=("sex", "town")),
            lambda s: s.sum("age", (0, 100), epsilon=1.0, by=("sex", "town"), keys=[(x, t) for x in "FM" for t in TOWNS]),
            lambda s: s.sum("age", (0, 100), epsilon=1.0, by=("sex", "town"), keys=[("F", "Ashby"), ("M", "Dent")]),
        ),
        (
            lambda s: s.histogram("town", epsilon=1.0),
            lambda s: s.histogram("town", ["Ashby", "Dent", "Eyre"], epsilon=1.0),
            lambda s: s.histogram("town", ["Ashby", "Dent"], epsilon=1.0),
        ),
    ],
    ids=["mean", "sum", "median", "count-by", "sum-by-two-columns", "histogram"],
)
def test_declared_bounds_and_categories_give_the_explicit_calls_release(
    people: Path, tmp_path: Path, implicit: object, explicit: object, other: object
) -> None:
    given = implicit(_session(people, tmp_path, "implicit"))  # type: ignore[operator]
    stated = explicit(_session(people, tmp_path, "explicit"))  # type: ignore[operator]
    _same(given, stated)
    assert given.delta == 0.0  # declared keys: pure ε, no δ, no max_rows
    different = other(_session(people, tmp_path, "other"))  # type: ignore[operator]
    assert (different.value, different.query) != (given.value, given.query)  # the comparison can fail


def test_the_query_text_shows_the_declared_bounds(people: Path, tmp_path: Path) -> None:
    release = _session(people, tmp_path, "text").mean("age", epsilon=1.0)
    assert "[0, 100]" in release.query
    keyed = _session(people, tmp_path, "keys").count(epsilon=1.0, by="sex").value
    assert isinstance(keyed, dict) and set(keyed) == {"F", "M"}  # never "X"


@pytest.mark.parametrize(
    ("schema", "ask"),
    [
        (None, lambda s: s.mean("age", epsilon=1.0)),  # no schema: bounds are the caller's
        (DECLARED, lambda s: s.mean("hours", epsilon=1.0)),  # declared column without bounds
        (DECLARED, lambda s: s.quantile("hours", 0.5, epsilon=1.0)),
    ],
)
def test_a_missing_bound_is_still_a_one_line_error_before_any_spend(
    people: Path, tmp_path: Path, schema: Schema | None, ask: object
) -> None:
    session = _session(people, tmp_path, "missing", schema)
    with pytest.raises(ParameterError) as error:
        ask(session)  # type: ignore[operator]
    assert error.value.parameter == "bounds" and "\n" not in str(error.value)
    assert session.spent.epsilon == 0 and session.history == [] and session.releases == []


@pytest.mark.parametrize("by", ["name", ("sex", "name")])
def test_a_column_without_declared_categories_keeps_the_undeclared_key_rule(people: Path, tmp_path: Path, by: object) -> None:
    session = _session(people, tmp_path, "undeclared")
    with pytest.raises(ParameterError) as error:
        session.count(epsilon=1.0, by=by)  # type: ignore[arg-type]
    assert error.value.parameter == "max_rows"
    assert session.spent.epsilon == 0 and session.history == []
    assert not session.query("count", epsilon=1.0, by=by).declared  # type: ignore[arg-type]
    assert not _session(people, tmp_path, "none", None).query("count", epsilon=1.0, by="sex").declared


def _cli(people: Path, tmp_path: Path, name: str, *flags: str) -> list[dict[str, object]]:
    ledger = str(tmp_path / f"{name}.db")
    result = runner.invoke(app, ["query", str(people), "--epsilon", "2", "--seed", "3", "--json", "--ledger", ledger, *flags])
    assert result.exit_code == 0, result.output
    releases: list[dict[str, object]] = json.loads(result.stdout)["releases"]
    return releases


def test_cli_query_with_schema_needs_no_keys_or_bounds(people: Path, tmp_path: Path) -> None:
    declared = tmp_path / "declared.toml"  # not beside people.csv: the last call has no schema
    declared.write_text(DECLARED.to_toml(), encoding="utf-8")
    short = _cli(people, tmp_path, "short", "--schema", str(declared), "--histogram", "town", "--mean", "age", "--by", "sex")
    long = _cli(
        people, tmp_path, "long", "--schema", str(declared),
        "--histogram", "town", "--categories", "Ashby,Dent,Eyre", "--mean", "age:0:100", "--by", "sex", "--keys", "F,M",
    )  # fmt: skip
    assert [(r["value"], r["query"]) for r in short] == [(r["value"], r["query"]) for r in long]
    no_schema = runner.invoke(app, ["query", str(people), "--mean", "age", "--epsilon", "1", "--ledger", str(tmp_path / "n.db")])
    assert no_schema.exit_code == 2 and "--mean" in no_schema.stderr and "\n" not in no_schema.stderr.strip()
