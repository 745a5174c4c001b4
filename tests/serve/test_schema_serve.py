"""The service's config takes column types from the owner (a column's ``type``, or a table's
``schema`` file), never from the data: the loaded types, keys and start-up depend on the
config and the header only (the type oracle of issue 17 is closed)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import ColumnKind, Schema
from dpwitness.serve.auth import hash_token
from dpwitness.serve.config import parse_config
from dpwitness.serve.tables import load_table


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _config(table: dict[str, Any]) -> dict[str, Any]:
    return {"tables": {"t": table}, "analysts": {"a": {"epsilon": 1.0, "token_hash": hash_token("tok")}}}


@pytest.fixture
def people(tmp_path: Path) -> Path:
    rows = [{"id": i, "hours": 40, "sex": "F" if i % 3 else "M", "note": "x"} for i in range(30)]
    _write(tmp_path / "people.csv", rows)
    schema = Schema(
        {"id": "integer", "hours": "integer", "sex": "string", "note": "string"},
        bounds={"hours": (0, 100)},
        categories={"sex": ("F", "M")},
        privacy_unit="id",
        declared=True,
    )
    (tmp_path / "people.schema.toml").write_text(schema.to_toml(), encoding="utf-8")
    return tmp_path / "people.csv"


@pytest.mark.parametrize("body", [{"schema": "people.schema.toml"}, {}])  # given, or found beside people.csv
def test_a_tables_schema_gives_its_columns_types_and_unit(people: Path, body: dict[str, Any]) -> None:
    config = parse_config(_config({"path": "people.csv", **body}), base=people.parent)
    table = config.tables["t"]
    assert table.columns == ("hours", "sex")  # only columns with bounds or categories are exposed
    assert table.schema.columns == {"id": ColumnKind.INTEGER, "hours": ColumnKind.INTEGER, "sex": ColumnKind.STRING}
    assert table.schema.bounds == {"hours": (0.0, 100.0)} and table.schema.categories == {"sex": ("F", "M")}
    assert table.privacy_unit == "id"
    assert table.public()["columns"][0]["type"] == "integer"


def test_a_tables_own_entries_refine_the_schema(people: Path) -> None:
    body = {
        "path": "people.csv",
        "schema": "people.schema.toml",
        "columns": {"hours": {"bounds": [0, 60]}, "sex": {"description": "as recorded"}},
    }
    table = parse_config(_config(body), base=people.parent).tables["t"]
    assert table.schema.bounds["hours"] == (0.0, 60.0) and table.schema.columns["hours"] is ColumnKind.INTEGER
    assert table.schema.categories["sex"] == ("F", "M") and table.public()["columns"][1]["description"] == "as recorded"


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"schema": "absent.schema.toml"}, "tables.t.schema"),
        ({"schema": 3}, "tables.t.schema"),
        ({"schema": "people.schema.toml", "columns": {"salary": {"bounds": [0, 1]}}}, "tables.t.columns.salary"),
        ({"columns": {"x": {"type": "number", "bounds": [0, 1]}}}, "tables.t.columns.x.type"),
        ({"columns": {"x": {"type": "string", "bounds": [0, 1]}}}, "tables.t.columns.x.bounds"),
    ],
)
def test_a_bad_type_or_schema_is_one_line_naming_the_key(people: Path, body: dict[str, Any], parameter: str) -> None:
    plain = people.parent / "plain.csv"  # no schema beside it: the config's own columns alone
    plain.write_bytes(people.read_bytes())
    with pytest.raises(ParameterError) as error:
        parse_config(_config({"path": "people.csv" if "schema" in body else "plain.csv", **body}), base=people.parent)
    assert error.value.parameter == parameter


def test_declared_types_close_the_type_oracle(tmp_path: Path) -> None:
    """Issue 17: one person's hours 40 → 37.5 flipped the inferred type (integer ↔ float) and the
    printed keys ('40' vs '40.0'). With the type declared, both tables load the same types and keys."""
    rows = [{"hours": 40, "sex": "F"} for _ in range(50)]
    changed = [dict(r) for r in rows]
    changed[7]["hours"] = 37.5
    loaded = []
    for name, table_rows in (("a.csv", rows), ("b.csv", changed)):
        _write(tmp_path / name, table_rows)
        body = {"path": name, "columns": {"hours": {"type": "float", "bounds": [0, 100], "categories": [40]}}}
        loaded.append(load_table(parse_config(_config(body), base=tmp_path).tables["t"]))
    first, second = loaded
    assert first.frame.schema == second.frame.schema
    assert first.keys == second.keys == {"hours": (40.0,)}


def test_a_parquet_columns_type_comes_from_its_footer(tmp_path: Path) -> None:
    """Without a ``type``, a Parquet column takes the file's declared type (metadata): its
    categories are read in that type, and a declared ``type`` is applied as a non-strict cast."""
    import polars as pl

    pl.DataFrame(
        {"grade": [1, 2, 2], "hours": [40, 38, 41], "who": ["a", "b", "c"]}, schema_overrides={"grade": pl.Int32}
    ).write_parquet(tmp_path / "t.parquet")
    body = {
        "path": "t.parquet",
        "privacy_unit": "who",
        "columns": {"grade": {"categories": [1, 2]}, "hours": {"type": "float", "bounds": [0, 60]}},
    }
    table = load_table(parse_config(_config(body), base=tmp_path).tables["t"])
    assert table.schema.columns == {"grade": ColumnKind.INTEGER, "hours": ColumnKind.FLOAT, "who": ColumnKind.STRING}
    assert table.keys == {"grade": (1, 2)} and table.frame.schema["hours"].is_float()
    body["columns"] = {"grade": {"categories": ["1", "2"]}}
    with pytest.raises(ParameterError, match=r"column's type \(integer\)") as refused:
        parse_config(_config(body), base=tmp_path)
    assert refused.value.parameter == "tables.t.columns.grade.categories"
