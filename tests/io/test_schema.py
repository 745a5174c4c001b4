"""The declared schema: inferred by the data owner, written and read as TOML, and checked before any spend.

Inputs are written the way people write them (pandas' ``to_csv``); every refusal is checked
to spend nothing (the ledger holds no spend) and to name the column.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import dpwitness as dw
from dpwitness.cli import app
from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import ColumnKind, Schema, load_schema
from dpwitness.privacy.budget import Ledger

runner = CliRunner()


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """A CSV as pandas writes it: integers with a missing value, floats, text with quoted commas, booleans."""
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3, 4, 5, 6],
            "age": [34, None, 51, 19, 42, 27],
            "hours": [40.0, 37.5, 20.0, 60.0, 40.0, 35.0],
            "name": ["Doe, Jane", 'He said "hi"', "Ann", "Bo", "Cy", "Di"],
            "sex": ["F", "M", "F", "F", "M", "M"],
            "member": [True, False, True, True, False, True],
            "empty": [None] * 6,
        }
    )
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def test_infer_declares_the_narrowest_type_every_value_fits(people: Path) -> None:
    schema = Schema.infer(people)
    assert schema.declared and schema.bounds == {} and schema.categories == {} and schema.privacy_unit is None
    # pandas writes the integer column with a missing value as floats ("34.0"): it is a float column
    assert dict(schema.columns) == {
        "id": ColumnKind.INTEGER,
        "age": ColumnKind.FLOAT,
        "hours": ColumnKind.FLOAT,
        "name": ColumnKind.STRING,
        "sex": ColumnKind.STRING,
        "member": ColumnKind.BOOLEAN,
        "empty": ColumnKind.STRING,
    }


def test_infer_adds_bounds_categories_and_the_unit_only_when_asked(people: Path) -> None:
    schema = Schema.infer(people, bounds=True, categories=2, privacy_unit="id")
    assert schema.bounds == {"id": (1.0, 6.0), "age": (19.0, 51.0), "hours": (20.0, 60.0)}
    assert schema.categories == {"sex": ("F", "M")}  # name has 6 values > 2; empty has none
    assert schema.privacy_unit == "id"
    with pytest.raises(ParameterError, match="privacy_unit"):
        Schema.infer(people, privacy_unit="nobody")
    with pytest.raises(ParameterError, match="categories"):
        Schema.infer(people, categories=-1)


def test_infer_keeps_a_typed_sources_declared_types() -> None:
    frame = pl.DataFrame({"x": [1.5, 2.5], "k": [1, 2], "s": ["a", "b"]})
    schema = Schema.infer(frame, bounds=True, categories=5)
    assert dict(schema.columns) == {"x": "float", "k": "integer", "s": "string"}
    assert schema.bounds == {"x": (1.5, 2.5), "k": (1.0, 2.0)} and schema.categories == {"s": ("a", "b")}


def test_toml_round_trips_with_hostile_names_and_values() -> None:
    names = ['a "quoted" name', "dotted.name", "new\nline", "tab\tand\\slash", "ünïcode ✓", "nul\x00", "del\x7f"]
    schema = Schema(
        {**{name: "string" for name in names}, "x": "float", "n": "integer", "b": "boolean"},
        bounds={"x": (-1.5e-300, 1e15), "n": (0, 120)},
        categories={names[0]: ('"', "\\", "line\r\nbreak", ""), "b": (True, False), "n": (1, 2, 3), "x": (0.5, 2.0)},
        privacy_unit="n",
        declared=True,
    )
    text = schema.to_toml(source="people.csv")
    assert "READ THE VALUES" in text and "outside differential privacy" in text
    assert Schema.from_toml(text) == schema
    assert Schema.from_toml(text).categories["x"] == (0.5, 2.0)


@pytest.mark.parametrize(
    ("text", "parameter"),
    [
        ("columns = 3", "schema.columns"),
        ("[columns.a]\ntype = 'number'", "schema.columns.a.type"),
        ("[columns.a]\nbounds = [0, 1]", "schema.columns.a.type"),
        ("[columns.a]\ntype = 'string'\nbounds = [0, 1]", "schema.columns.a.bounds"),
        ("[columns.a]\ntype = 'float'\nbounds = [1, 1]", "schema.columns.a.bounds"),
        ("[columns.a]\ntype = 'integer'\ncategories = ['x']", "schema.columns.a.categories"),
        ("[columns.a]\ntype = 'string'\ncategories = ['x', 'x']", "schema.columns.a.categories"),
        ("[columns.a]\ntype = 'untyped'", "schema.columns.a.type"),
        ("privacy_unit = 'b'\n[columns.a]\ntype = 'string'", "schema.privacy_unit"),
        ("schema_version = 2\n[columns.a]\ntype = 'string'", "schema.schema_version"),
        ("[columns.a]\ntype = 'string'\nbound = [0, 1]", "schema.columns.a"),
        ("[columns.a\ntype = 'string'", "schema"),
    ],
)
def test_a_bad_schema_file_is_one_line_naming_the_key(tmp_path: Path, text: str, parameter: str) -> None:
    path = tmp_path / "bad.schema.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParameterError) as error:
        Schema.load(path)
    assert error.value.parameter == parameter and "\n" not in str(error.value).strip()


def test_load_schema_takes_a_schema_or_a_path_and_refuses_an_engines_metadata(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="schema"):
        load_schema(Schema({"a": ColumnKind.UNTYPED}))
    with pytest.raises(ParameterError, match="existing schema"):
        load_schema(tmp_path / "absent.toml")
    with pytest.raises(ParameterError, match="schema"):
        load_schema(42)  # type: ignore[arg-type]


# --- the session: every check before any spend -------------------------------------------------------


def _session(people: Path, tmp_path: Path, **options: object) -> dw.Session:
    schema = Schema.infer(people, categories=5)
    return dw.Session(str(people), epsilon=1.0, ledger=tmp_path / "ledger.db", schema=schema, seed=1, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ask", "parameter", "named"),
    [
        (lambda s: s.mean("sex", (0, 100), epsilon=0.1), "column", "sex"),  # a bounded statistic on text
        (lambda s: s.sum("name", (0, 1), epsilon=0.1), "column", "name"),
        (lambda s: s.count(epsilon=0.1, where="hours < '20'"), "where", "hours"),  # a number compared with text
        (lambda s: s.count(epsilon=0.1, where="sex > 3"), "where", "sex"),  # text compared with a number
        (lambda s: s.count(epsilon=0.1, by="sex", keys=["F", "X"]), "keys", "sex"),  # outside the categories
        (lambda s: s.histogram("sex", ["F", "x"], epsilon=0.1), "keys", "sex"),
        (lambda s: s.count(epsilon=0.1, column="nobody"), "column", "nobody"),
    ],
)
def test_with_a_schema_a_wrong_query_is_refused_before_any_spend(
    people: Path, tmp_path: Path, ask: object, parameter: str, named: str
) -> None:
    session = _session(people, tmp_path)
    with pytest.raises(ParameterError) as error:
        ask(session)  # type: ignore[operator]
    assert error.value.parameter == parameter and named in str(error.value)
    assert session.spent.epsilon == 0 and session.history == [] and session.releases == []


def test_an_undeclared_column_is_refused_naming_it(people: Path, tmp_path: Path) -> None:
    partial = Schema({"hours": "float", "sex": "string"}, categories={"sex": ("F", "M")}, declared=True)
    session = dw.Session(str(people), epsilon=1.0, schema=partial, seed=1)
    for ask in (
        lambda: session.count(epsilon=0.1, column="age"),
        lambda: session.count(epsilon=0.1, where="age > 3"),
        lambda: session.count(epsilon=0.1, by="name"),
    ):
        with pytest.raises(ParameterError, match=r"age|name") as error:
            ask()
        assert "undeclared" in str(error.value)
    assert session.spent.epsilon == 0
    release = session.mean("hours", (0, 100), epsilon=0.5)  # a declared column works, and is typed
    assert not any("read as numbers" in note for note in release.notes)


def test_a_schema_that_does_not_match_the_header_is_refused_before_any_spend(people: Path, tmp_path: Path) -> None:
    wrong = Schema({"hours": "float", "salary": "float"}, declared=True)
    session = dw.Session(str(people), epsilon=1.0, ledger=tmp_path / "l.db", schema=wrong)
    with pytest.raises(ParameterError) as error:
        session.count(epsilon=0.1)
    assert error.value.parameter == "schema" and "salary" in str(error.value) and "header" in str(error.value)
    assert Ledger(tmp_path / "l.db").history(session.account) == []


def test_a_declared_type_reads_the_column_as_declared(people: Path) -> None:
    """The declared types are applied: with a schema, a count by a boolean uses boolean keys;
    the answer at a large ε is the exact one."""
    session = dw.Session(str(people), epsilon=2000.0, schema=Schema.infer(people), seed=2)
    counts = session.count(epsilon=1000.0, by="member", keys=[True, False]).value
    assert isinstance(counts, dict) and round(counts[True]) == 4 and round(counts[False]) == 2
    assert float(session.mean("hours", (0, 100), epsilon=1000.0).value) == pytest.approx(38.75, abs=0.2)


def test_the_schemas_privacy_unit_is_the_sessions_default(people: Path, tmp_path: Path) -> None:
    schema = Schema.infer(people, privacy_unit="id")
    assert dw.Session(str(people), epsilon=1.0, schema=schema).privacy_unit == "id"
    with pytest.raises(ParameterError, match="privacy_unit"):
        dw.Session(str(people), epsilon=1.0, schema=schema, privacy_unit="sex")
    with pytest.raises(ParameterError, match="dtypes"):
        dw.Session(str(people), epsilon=1.0, schema=schema, dtypes={"age": "integer"})


#: The refusal of a statistic needing numbers from people.csv's untyped age: one line, every fix, no value.
AGE_UNTYPED = (
    'column must be a column with a declared numeric type (dtypes={"age": "integer"} or --dtype age:integer, '
    "schema=FILE or --schema FILE, or people.schema.toml beside the file: "
    "dpwitness schema people.csv > people.schema.toml); got 'age' (untyped CSV text)"
)


@pytest.mark.parametrize("engine", ["polars", pytest.param("spark", marks=pytest.mark.spark)])
def test_without_a_declared_type_a_statistic_needing_numbers_is_refused_before_the_spend(
    people: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    """The old silent path (text read as numbers, ε spent on missing values) is refused from the schema alone."""
    if engine == "spark":
        request.getfixturevalue("spark")
    session = dw.Session(str(people), epsilon=1.0, seed=3, engine=engine)
    for call in (
        lambda: session.mean("age", (0, 100), epsilon=0.5),
        lambda: session.mean("sex", (0, 1), epsilon=0.5),  # the case: text spent ε as "1 [0, 1]"
        lambda: session.quantile("hours", 0.5, (0, 100), epsilon=0.5),
        lambda: session.preview("sum", "age", epsilon=0.1, bounds=(0, 100)),
        lambda: session.count(epsilon=0.5, where="age < 40"),
        lambda: session.count(epsilon=0.5, where="age in [19, 27]"),
    ):
        with pytest.raises(ParameterError) as caught:
            call()
        assert caught.value.parameter in ("column", "where") and "untyped CSV text" in str(caught.value)
        assert "\n" not in str(caught.value) and "Doe" not in str(caught.value)
    with pytest.raises(ParameterError) as caught:
        session.mean("age", (0, 100), epsilon=0.5)
    assert str(caught.value) == AGE_UNTYPED  # the same line on every engine
    assert session.spent.epsilon == 0 and session.releases == []
    # Text stays text: counts, keys and comparisons with text need no declared type.
    assert set(session.count(epsilon=0.1, by="sex", keys=["F", "M"]).value) == {"F", "M"}
    assert session.count(epsilon=0.1, where="sex == 'F'").value is not None
    # Declaring the type (dtypes=) is the fix the message names.
    typed = dw.Session(str(people), epsilon=1.0, seed=3, engine=engine, dtypes={"age": "float"})
    assert typed.mean("age", (0, 100), epsilon=0.5).value is not None


def test_a_schema_beside_the_file_is_used_said_and_an_explicit_one_wins(people: Path, tmp_path: Path) -> None:
    beside = tmp_path / "people.schema.toml"
    beside.write_text(Schema.infer(people, bounds=True, categories=5).to_toml(), encoding="utf-8")
    session = dw.Session(str(people), epsilon=1.0, seed=3)
    assert session.declared_schema == Schema.load(beside)
    release = session.mean("age", epsilon=0.5)  # the declared float type and bounds [19, 51]
    assert "[19, 51]" in release.query
    assert "schema: people.schema.toml, found beside the file" in release.notes
    assert "schema: people.schema.toml, found beside the file" in session.preview("count", epsilon=0.1).notes
    explicit = tmp_path / "other.toml"
    explicit.write_text("[columns.age]\ntype = 'float'\nbounds = [0, 100]\n", encoding="utf-8")
    given = dw.Session(str(people), epsilon=1.0, seed=3, schema=explicit)
    assert "[0, 100]" in given.mean("age", epsilon=0.5).query  # schema= wins over the file beside
    assert "schema: other.toml (given)" in given.releases[-1].notes
    with_dtypes = dw.Session(str(people), epsilon=1.0, dtypes={"age": "float"})  # dtypes= declares instead
    assert with_dtypes.declared_schema is None and with_dtypes.schema().columns["sex"] is ColumnKind.UNTYPED
    beside.write_text("[columns.salary]\ntype = 'float'\n", encoding="utf-8")  # a stale file beside is checked too
    with pytest.raises(ParameterError) as caught:
        dw.Session(str(people), epsilon=1.0).count(epsilon=0.1)
    assert caught.value.parameter == "schema" and "salary" in str(caught.value)


# --- the command line ---------------------------------------------------------------------------------


def test_the_schema_command_writes_toml_and_warns_on_stderr(people: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema", str(people), "--bounds", "--categories", "2", "--privacy-unit", "id"])
    assert result.exit_code == 0, result.output
    assert "read the values of people.csv" in result.stderr
    assert Schema.from_toml(result.stdout) == Schema.infer(people, bounds=True, categories=2, privacy_unit="id")
    out = tmp_path / "people.schema.toml"
    assert runner.invoke(app, ["schema", str(people), "--output", str(out)]).exit_code == 0
    assert Schema.load(out) == Schema.infer(people)
    missing = runner.invoke(app, ["schema", str(tmp_path / "absent.csv")])
    assert missing.exit_code == 2 and "source" in missing.stderr


def test_query_refuses_a_mean_of_text_with_a_schema_and_of_untyped_text_without(people: Path, tmp_path: Path) -> None:
    declared = tmp_path / "declared.toml"
    declared.write_text(Schema.infer(people).to_toml(), encoding="utf-8")
    ledger = tmp_path / "l.db"
    refused = runner.invoke(
        app, ["query", str(people), "--mean", "sex:0:100", "--epsilon", "0.1", "--schema", str(declared), "--ledger", str(ledger)]
    )
    assert refused.exit_code == 2 and "sex" in refused.stderr and "string" in refused.stderr
    assert not ledger.exists() or Ledger(ledger).history(f"file:{people.resolve()}") == []
    plain = runner.invoke(app, ["query", str(people), "--mean", "age:0:100", "--epsilon", "0.1", "--ledger", str(ledger)])
    assert plain.exit_code == 2 and plain.stderr.strip() == "error: --mean (" + AGE_UNTYPED.replace("column must", "column) must")
    assert not ledger.exists() or Ledger(ledger).history(f"file:{people.resolve()}") == []
    typed = runner.invoke(app, ["query", str(people), "--mean", "age:0:100", "--epsilon", "0.1", "--dtype", "age:float"])
    assert typed.exit_code == 0, typed.output
    bad = tmp_path / "bad.schema.toml"
    bad.write_text("[columns.salary]\ntype = 'float'\n", encoding="utf-8")
    mismatch = runner.invoke(app, ["query", str(people), "--count", "--epsilon", "0.1", "--schema", str(bad)])
    assert mismatch.exit_code == 2 and "salary" in mismatch.stderr and "\n" not in mismatch.stderr.strip()


def test_the_adult_mean_of_sex_is_refused_with_a_schema(adult: Path, tmp_path: Path) -> None:
    """The issue's report: `query adult.csv --mean sex:0:100` spent ε on text; with a schema it is refused."""
    declared = tmp_path / "adult.schema.toml"
    assert runner.invoke(app, ["schema", str(adult), "--output", str(declared), "--categories", "20"]).exit_code == 0
    schema = Schema.load(declared)
    assert schema.columns["sex"] is ColumnKind.STRING and schema.columns["age"] is ColumnKind.INTEGER
    assert schema.categories["sex"] == ("Female", "Male") and "native_country" not in schema.categories  # 41 values
    refused = runner.invoke(app, ["query", str(adult), "--mean", "sex:0:100", "--epsilon", "0.1", "--schema", str(declared)])
    assert refused.exit_code == 2 and "'sex' (string)" in refused.stderr
    session = dw.Session(str(adult), epsilon=10.0, schema=schema, seed=5)
    assert math.isclose(float(session.mean("age", (0, 100), epsilon=9.0).value), 38.58, abs_tol=0.1)


@pytest.mark.spark
def test_the_spark_engine_checks_the_header_and_applies_the_declared_types(spark: object, people: Path) -> None:
    """The same schema on Spark: the header is checked, the types declared, and the refusals are the same."""
    schema = Schema.infer(people, categories=5)
    session = dw.Session(str(people), epsilon=2000.0, engine="spark", schema=schema, seed=4)
    assert session.schema() == schema
    with pytest.raises(ParameterError, match="'sex' \\(string\\)"):
        session.mean("sex", (0, 100), epsilon=0.1)
    counts = session.count(epsilon=1000.0, by="member", keys=[True, False]).value
    assert isinstance(counts, dict) and round(counts[True]) == 4 and round(counts[False]) == 2
    wrong = dw.Session(str(people), epsilon=1.0, engine="spark", schema=Schema({"salary": "float"}, declared=True))
    with pytest.raises(ParameterError, match="salary"):
        wrong.count(epsilon=0.1)
    assert wrong.spent.epsilon == 0
