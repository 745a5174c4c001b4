"""The service config and tokens: hashed storage, constant-time checks, clear errors for bad files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpwitness.common.errors import ParameterError
from dpwitness.io.schema import ColumnKind
from dpwitness.serve.app import scale_rate_limits
from dpwitness.serve.auth import StoredToken, TokenStore, hash_token, new_token, parse_token_hash
from dpwitness.serve.config import load_config, parse_config
from dpwitness.serve.limits import RateLimiter
from dpwitness.serve.process import write_config
from dpwitness.serve.tables import load_table

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "service.toml"


def test_tokens_are_stored_salted_and_checked() -> None:
    token = new_token()
    stored = hash_token(token)
    assert token not in stored
    assert hash_token(token) != stored  # a fresh salt each time
    salt, digest = parse_token_hash(stored)
    store = TokenStore([StoredToken("alice", salt, digest), StoredToken("bob", *parse_token_hash(hash_token("other")))])
    assert store.analyst_for(token) == "alice"
    assert store.analyst_for("other") == "bob"
    assert store.analyst_for(token[:-1]) is None
    assert store.analyst_for("") is None and store.analyst_for(None) is None
    assert store.analyst_for("x" * 10_000) is None


def test_example_config_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adult = tmp_path / "adult.csv"
    adult.write_text("age,native_country\n39,United-States\n")
    monkeypatch.setenv("DPWITNESS_ADULT", str(adult))  # the config's path_env wins over its path
    config = load_config(EXAMPLE)
    assert set(config.analysts) == {"alice", "bob"}
    assert config.analysts["bob"].tables == ("people", "adult")
    assert config.tables["adult"].path == adult
    adult_schema = config.tables["adult"].schema  # the config's columns, built as a schema file's
    assert adult_schema.bounds["age"] == (17.0, 90.0) and adult_schema.columns["age"] is ColumnKind.FLOAT
    assert adult_schema.categories["native_country"][-1] == "Holand-Netherlands"
    assert adult_schema.categories["education_num"][:2] == (1, 2)  # categories keep the declared type
    assert config.tables["people"].path == EXAMPLE.parent / "people.csv"
    monkeypatch.setenv("DPWITNESS_ADULT", str(tmp_path / "absent.csv"))  # optional = true: left out, also from bob's list
    without = load_config(EXAMPLE)
    assert list(without.tables) == ["people"] and without.analysts["bob"].tables == ("people",)
    assert config.ledger == EXAMPLE.parent / "service-budget.db"
    store = TokenStore([a.token for a in config.analysts.values()])
    assert store.analyst_for("alice-demo-token-CHANGE-ME") == "alice"


def valid() -> dict[str, Any]:
    return {
        "tables": {"t": {"path": "t.csv", "columns": {"x": {"bounds": [0, 1]}, "g": {"categories": ["a", "b"]}}}},
        "analysts": {"a": {"epsilon": 1.0, "token_hash": hash_token("tok")}},
    }


@pytest.mark.parametrize(
    ("change", "parameter"),
    [
        (lambda c: c.pop("tables"), "tables"),
        (lambda c: c.pop("analysts"), "analysts"),
        (lambda c: c["analysts"]["a"].update(epsilon=0), "analysts.a.epsilon"),
        (lambda c: c["analysts"]["a"].update(epsilon=float("nan")), "analysts.a.epsilon"),
        (lambda c: c["analysts"]["a"].update(token_hash="plain-token"), "analysts.a.token_hash"),
        (lambda c: c["analysts"]["a"].update(tables=["elsewhere"]), "analysts.a.tables"),
        (lambda c: c["tables"]["t"]["columns"]["x"].update(bounds=[1, 0]), "tables.t.columns.x.bounds"),
        (lambda c: c["tables"]["t"]["columns"]["x"].update(bounds=[float("nan"), 1]), "tables.t.columns.x.bounds"),
        (lambda c: c["tables"]["t"]["columns"]["g"].update(categories=[]), "tables.t.columns.g.categories"),
        (lambda c: c["tables"]["t"]["columns"].update(y={}), "tables.t.columns.y"),
        (lambda c: c["tables"]["t"]["columns"]["x"].update(kind="integer"), "tables.t.columns.x"),  # not a schema field
        (lambda c: c["tables"]["t"].update(neighbours="swap"), "neighbours"),
        (lambda c: c.update(service={"rate_per_second": -1}), "service.rate_per_second"),
    ],
)
def test_bad_config_names_what_is_wrong(change: Any, parameter: str) -> None:
    config = valid()
    change(config)
    with pytest.raises(ParameterError) as error:
        parse_config(config, base=Path("."))
    assert error.value.parameter == parameter
    assert "plain-token" not in str(error.value)  # never echo a token


def test_tables_are_checked_against_column_types(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("x,g,n\n0.5,a,1\n0.7,c,2\n")
    config = valid()
    config["tables"]["t"]["columns"]["n"] = {"categories": ["1", "2"]}
    table = load_table(parse_config(config, base=tmp_path).tables["t"])
    # A CSV's types come from the config only: categories alone are text, never inferred as integers.
    assert table.keys == {"g": ("a", "b"), "n": ("1", "2")}
    assert table.frame["g"].null_count() == 1  # 'c' is not declared: treated as missing
    config["tables"]["t"]["columns"]["n"] = {"bounds": [0, 5], "categories": [1, 2]}
    table = load_table(parse_config(config, base=tmp_path).tables["t"])
    assert table.keys["n"] == (1.0, 2.0) and table.frame["n"].to_list() == [1.0, 2.0]  # bounds: read as numbers
    # A category keeps its declared type: text categories of a numeric column are refused, never converted.
    config["tables"]["t"]["columns"]["n"] = {"bounds": [0, 5], "categories": ["1", "2"]}
    with pytest.raises(ParameterError, match=r"column's type \(float\)") as refused:
        parse_config(config, base=tmp_path)
    assert refused.value.parameter == "tables.t.columns.n.categories"
    config["tables"]["t"]["columns"]["n"] = {"bounds": [0, 5]}
    config["tables"]["t"]["columns"]["g"] = {"bounds": [0, 1]}
    assert load_table(parse_config(config, base=tmp_path).tables["t"]).frame["g"].null_count() == 2  # text → null
    # A Parquet file's types are its declared metadata: bounds on a text column are refused.
    pl.read_csv(tmp_path / "t.csv", infer_schema=False).write_parquet(tmp_path / "t.parquet")
    config["tables"]["t"]["path"] = str(tmp_path / "t.parquet")
    with pytest.raises(ParameterError, match="numeric") as refused:
        load_table(parse_config(config, base=tmp_path).tables["t"])
    assert refused.value.parameter == "tables.t.columns.x.bounds"
    config["tables"]["t"]["columns"] = {"x": {"type": "float", "bounds": [0, 1]}, "n": {"categories": ["1", "2"]}}
    table = load_table(parse_config(config, base=tmp_path).tables["t"])  # a declared type is a non-strict cast
    assert table.schema.columns["n"] is ColumnKind.STRING and table.frame["x"].to_list() == [0.5, 0.7]
    config["tables"]["t"]["path"] = str(tmp_path / "t.csv")
    config["tables"]["t"]["columns"] = {"missing": {"bounds": [0, 1]}}
    with pytest.raises(ParameterError, match="columns"):
        load_table(parse_config(config, base=tmp_path).tables["t"])


def test_write_config_round_trips(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "s.toml",
        tables=valid()["tables"],
        analysts={"a": ("tok", 2.0)},
        analyst_options={"a": {"rate_per_second": 5.0, "rate_burst": 7}},
        service={"ledger": "x.db"},
    )
    config = load_config(path)
    assert config.analysts["a"].epsilon == 2.0 and config.analysts["a"].rate_burst == 7
    assert config.ledger == tmp_path / "x.db"
    halved = scale_rate_limits(config, 2)
    assert halved.analysts["a"].rate_per_second == 2.5 and halved.limits.rate_per_second == config.limits.rate_per_second / 2


def test_rate_limiter_is_a_token_bucket() -> None:
    limiter = RateLimiter(rate=1e-9, burst=3)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b")  # per analyst
    assert limiter.allow("c", rate=1e-9, burst=1) and not limiter.allow("c", rate=1e-9, burst=1)


def test_aggregate_cache_remembers_exact_values_only_without_privacy_unit() -> None:
    import polars as pl

    from dpwitness.engines import engine_for
    from dpwitness.serve.cache import CachedAggregates
    from dpwitness.session import Session

    frame = pl.DataFrame({"person": [1, 1, 2, 3], "x": [0.2, 0.4, 0.6, 0.8]})
    session = Session(frame, epsilon=100.0)
    cache = CachedAggregates(engine_for("polars"), capacity=2)
    session.engine = cache
    first = session.sum("x", (0, 1), epsilon=1.0)
    second = session.sum("x", (0, 1), epsilon=1.0)
    assert (cache.hits, cache.misses) == (1, 1)
    assert first.value != second.value  # the exact sum is remembered, the noise is fresh
    assert session.spent.epsilon == 2.0  # and every answer is paid for
    session.sum("x", (0, 2), epsilon=1.0)  # another shape (bounds)
    session.count(epsilon=1.0)
    assert cache.misses == 3 and len(cache._entries) == 2  # least recently used shape dropped
    bounded = Session(frame, epsilon=100.0, privacy_unit="person", max_contributions=1)
    bounded.engine = unit_cache = CachedAggregates(engine_for("polars"), capacity=8)
    bounded.count(epsilon=1.0)
    bounded.count(epsilon=1.0)
    assert unit_cache.hits == unit_cache.misses == 0  # a fresh random row selection each time


def test_replace_one_service_never_states_the_non_null_count(tmp_path: Path) -> None:
    """Under replace-one a record may change from null to a value, so how many values of a
    column are non-null is private. The service's mean used to state it exactly: as Δ = (U − L)/n
    and in the notes of every answer, and for free in /v1/preview."""
    from fastapi.testclient import TestClient

    from dpwitness.serve.app import create_app

    token = "r1-token-" + "x" * 24
    answers = []
    for ages in (["", "30", "40", "50"], ["20", "30", "40", "50"]):  # replace-one neighbours
        folder = tmp_path / str(len(answers))
        folder.mkdir()
        (folder / "t.csv").write_text("age\n" + "\n".join(ages) + "\n")
        config = write_config(
            folder / "service.toml",
            tables={"t": {"path": str(folder / "t.csv"), "neighbours": "replace-one", "columns": {"age": {"bounds": [0, 100]}}}},
            analysts={"r1": (token, 10.0)},
            service={"ledger": str(folder / "ledger.db")},
        )
        with TestClient(create_app(load_config(config))) as client:
            headers = {"Authorization": f"Bearer {token}"}
            body = {"table": "t", "statistic": "mean", "column": "age", "epsilon": 1.0}
            preview = client.post("/v1/preview", json=body, headers=headers)
            answer = client.post("/v1/query", json=body, headers=headers)
        assert preview.status_code == 200 and answer.status_code == 200
        release = answer.json()["release"]
        parts = [(p["sensitivity"], p["scale"]) for p in release.get("parts", [])]
        answers.append((preview.json(), release["sensitivity"], release["scale"], release["notice"], parts))
    assert answers[0] == answers[1]


def test_the_service_derives_delta_and_bounds_as_the_core_does(tmp_path: Path) -> None:
    """The service asks through the session with the table's declared schema: Δ comes from the one
    derivation, and its refusals from the core's rules. It used to refuse count(column=…) under
    replace-one as "Δ = 0" (the core derives 1: a value may become null) and to cap bounds at 1e15
    where the core allows 2^50."""
    from fastapi.testclient import TestClient

    from dpwitness import Schema, Session
    from dpwitness.serve.app import create_app

    token = "core-token-" + "x" * 24
    (tmp_path / "t.csv").write_text("age,town\n" + "".join(f"{20 + i % 50},{'AB'[i % 2]}\n" for i in range(200)))
    columns = {"age": {"bounds": [0, 100]}, "town": {"categories": ["A", "B"]}}
    config = write_config(
        tmp_path / "service.toml",
        tables={"t": {"path": str(tmp_path / "t.csv"), "neighbours": "replace-one", "columns": columns}},
        analysts={"r1": (token, 100.0)},
        service={"ledger": str(tmp_path / "ledger.db")},
    )
    schema = Schema({"age": "float", "town": "string"}, bounds={"age": (0, 100)}, categories={"town": ("A", "B")}, declared=True)
    core = Session(tmp_path / "t.csv", epsilon=100.0, neighbours="replace-one", schema=schema)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(load_config(config))) as client:

        def ask(**body: Any) -> Any:
            return client.post("/v1/query", json={"table": "t", "epsilon": 1.0, **body}, headers=headers)

        counted = ask(statistic="count", column="age")
        assert counted.status_code == 200, counted.text
        assert counted.json()["release"]["sensitivity"] == core.query("count", "age", epsilon=1.0).parts[0].sensitivity == 1.0
        plain = ask(statistic="count")  # Δ = 0 under replace-one: the service's policy refuses an exact answer
        assert plain.status_code == 422 and "Δ = 0" in plain.json()["detail"]
        grouped = ask(statistic="count", by=["town"])  # the declared categories are the keys, from the schema
        assert grouped.status_code == 200 and set(grouped.json()["release"]["value"]) == {"A", "B"}
        wide = ask(statistic="sum", column="age", bounds=[0, 1.1e15])  # above 1e15, within 2^50
        assert wide.status_code == 200, wide.text
        summed = core.query("sum", "age", epsilon=1.0, bounds=(0, 1.1e15))
        assert wide.json()["release"]["sensitivity"] == summed.parts[0].sensitivity
        too_wide = ask(statistic="sum", column="age", bounds=[0, 2.0**51])
        with pytest.raises(ParameterError) as refused:
            core.query("sum", "age", epsilon=1.0, bounds=(0.0, 2.0**51))
        assert too_wide.status_code == 422 and too_wide.json()["detail"] == str(refused.value)
