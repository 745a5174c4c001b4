"""Every option where the statistic is asked; conflicts with the budget named before any spend;
results as tables; budgets that belong to a dataset (issue 19, parts 1–3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dpwitness import ParameterError, Release, Session
from dpwitness.privacy.budget import Ledger


def people(n: int = 2_000) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    return pl.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["Female", "Male"], n),
            "income": rng.choice(["<=50K", ">50K"], n),
            "town": rng.choice(["a", "b", "c"], n),
        }
    )


STATISTICS = [
    ("count", (), {}),
    ("sum", ("age", (0, 100)), {}),
    ("mean", ("age", (0, 100)), {}),
    ("variance", ("age", (0, 100)), {}),
    ("histogram", ("sex", ["Female", "Male"]), {}),
    ("quantile", ("age", 0.5, (0, 100)), {}),
    ("median", ("age", (0, 100)), {}),
    ("min", ("age", (0, 100)), {}),
    ("max", ("age", (0, 100)), {}),
]


@pytest.mark.parametrize(("method", "args", "extra"), STATISTICS)
def test_every_statistic_takes_its_options_where_it_is_asked(
    method: str, args: tuple[object, ...], extra: dict[str, object]
) -> None:
    session = Session(people(), epsilon=10, delta_budget=1e-5, seed=1)
    release = getattr(session, method)(*args, epsilon=0.5, alpha=0.2, mechanism="auto", max_rows=10_000, **extra)
    assert release.alpha == 0.2 and len(session.history) == 1
    assert session.preview("count", epsilon=0.5, alpha=0.2, mechanism="gaussian", delta=1e-6).alpha == 0.2
    assert len(session.history) == 1  # a preview spends nothing


def test_a_gaussian_with_its_delta_on_one_call_changes_no_other() -> None:
    session = Session(people(), epsilon=4, delta_budget=1e-5, seed=2)
    gaussian = session.count(epsilon=0.5, delta=1e-6, mechanism="gaussian", by="sex", keys=["Female", "Male"])
    laplace = session.count(epsilon=0.5, by="sex", keys=["Female", "Male"])
    assert gaussian.distribution == "gaussian" and gaussian.delta == 1e-6
    assert laplace.distribution == "laplace" and laplace.delta == 0


def test_max_rows_on_the_call_sizes_the_delta_of_undeclared_keys() -> None:
    session = Session(people(), epsilon=4, delta_budget=1e-4, seed=3)
    with pytest.raises(ParameterError) as missing:
        session.histogram("town", epsilon=1)
    assert missing.value.parameter == "max_rows" and session.history == []
    release = session.histogram("town", epsilon=1, max_rows=100_000)
    assert release.delta == pytest.approx(1e-6) and set(release.value) <= {"a", "b", "c"}


def test_rho_on_one_statistic_spends_rho_on_a_rho_account() -> None:
    session = Session(people(), rho=0.5, seed=4)
    release = session.count(rho=0.02, by="sex", keys=["Female", "Male"])
    assert release.distribution == "gaussian" and release.rho == pytest.approx(0.02) and math.isinf(release.epsilon)
    assert session.spent.rho == pytest.approx(0.02)
    archived = Release.from_dict(json.loads(json.dumps(release.to_dict())))
    assert archived.rho == release.rho and math.isinf(archived.epsilon)


@pytest.mark.parametrize(
    ("total", "call", "named"),
    [
        ({"epsilon": 1.0}, {"epsilon": 0.1, "delta": 1e-6, "mechanism": "gaussian"}, "delta"),  # δ on a pure-ε account
        ({"epsilon": 1.0}, {"epsilon": 0.1, "delta": 1e-6}, "delta"),
        ({"epsilon": 1.0}, {"epsilon": 0.1, "mechanism": "gaussian"}, "mechanism"),  # a Gaussian without δ or ρ
        ({"epsilon": 1.0, "delta_budget": 1e-5}, {"rho": 0.01}, "rho"),  # ρ with an (ε, δ) total
        ({"rho": 0.5}, {"rho": 0.01, "mechanism": "laplace"}, "mechanism"),
        ({"rho": 0.5}, {"rho": 0.01, "epsilon": 0.1}, "rho"),
    ],
)
def test_options_conflicting_with_the_budget_are_one_line_errors_before_any_spend(
    tmp_path: Path, total: dict[str, float], call: dict[str, object], named: str
) -> None:
    ledger = tmp_path / "l.db"
    session = Session(people(), ledger=ledger, account="people", **total)  # type: ignore[arg-type]
    with pytest.raises(ParameterError) as caught:
        session.count(by="sex", keys=["Female", "Male"], **call)  # type: ignore[arg-type]
    assert caught.value.parameter == named and "\n" not in str(caught.value)
    assert not Ledger(ledger).history("people")


def test_a_split_statistic_states_the_range_of_its_parts() -> None:
    session = Session(people(), epsilon=1)
    with pytest.raises(ParameterError) as caught:
        session.mean("age", (0, 100), epsilon=0.001)  # each part would get 0.0005
    message = str(caught.value)
    assert caught.value.parameter == "epsilon" and "[0.002," in message and "2 noisy parts share ε" in message
    assert session.history == []
    assert session.mean("age", (0, 100), epsilon=0.002).epsilon == pytest.approx(0.002)
    with pytest.raises(ParameterError, match=r"\[0.0025,"):  # a split states its own range
        session.mean("age", (0, 100), epsilon=0.002, split=(0.4, 0.6))


# --- results as tables ----------------------------------------------------------------------


def test_grouped_keys_are_columns_in_polars_pandas_and_json() -> None:
    session = Session(people(), epsilon=2, seed=5)
    keys = [(s, i) for s in ("Female", "Male") for i in ("<=50K", ">50K")]
    release = session.mean("age", (0, 100), epsilon=1, by=["sex", "income"], keys=keys)
    frame = release.to_polars()
    assert frame.columns[:2] == ["sex", "income"] and frame.height == 4
    assert {"value", "low", "high", "epsilon", "delta", "sensitivity", "neighbours", "mechanism"} <= set(frame.columns)
    assert list(zip(frame["sex"], frame["income"], strict=True)) == keys
    assert (frame["low"] <= frame["value"]).all() and (frame["value"] <= frame["high"]).all()
    pandas = release.to_pandas()
    assert list(pandas.columns[:2]) == ["sex", "income"] and len(pandas) == 4
    data = json.loads(json.dumps(release.to_dict()))
    assert data["key_columns"] == ["sex", "income"] and data["rows"][0]["sex"] == "Female"
    reloaded = Release.from_dict(data)
    assert reloaded.value == release.value  # typed tuple keys, every float exact


def test_session_results_holds_every_release() -> None:
    session = Session(people(), epsilon=2, seed=6)
    session.count(epsilon=0.5)
    session.histogram("sex", ["Female", "Male"], epsilon=0.5)
    results = session.results()
    assert results.height == 3 and results["sex"].to_list() == [None, "Female", "Male"]
    assert results["query"].to_list()[0] == "count()"


def test_budgets_are_archived_without_float_noise() -> None:
    session = Session(people(), epsilon=1)
    release = session.count(epsilon=0.1 + 0.2)  # 0.30000000000000004 in floating point
    assert release.to_dict()["epsilon"] == 0.3
    assert release.to_dict()["value"] == release.value  # the released value itself is exact


# --- budgets that belong to a dataset -------------------------------------------------------------


def test_a_ledger_with_a_frame_needs_an_account(tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        Session(people(), epsilon=1, ledger=tmp_path / "l.db")
    assert caught.value.parameter == "account" and "never derived from the data" in str(caught.value)
    named = Session(people(), epsilon=1, ledger=tmp_path / "l.db", account="census-2026")
    named.count(epsilon=0.5)
    again = Session(people().sample(fraction=1.0, shuffle=True, seed=1), ledger=tmp_path / "l.db", account="census-2026")
    assert again.remaining.epsilon == pytest.approx(0.5)  # the same dataset's budget, whatever the frame


def test_every_session_says_whose_budget_it_is(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    people().write_csv(path)
    in_memory = repr(Session(str(path), epsilon=1))
    assert f"file:{path.resolve()}" in in_memory and "the file's default account" in in_memory
    assert "lasts for this session only" in in_memory
    on_ledger = repr(Session(str(path), epsilon=1, ledger=tmp_path / "l.db", account="survey"))
    assert "'survey'" in on_ledger and "lasts for this session only" not in on_ledger
