"""L2 Δ per statistic, relation and privacy unit (issue 12.4), and Gaussian releases that use it
in sessions, the query CLI and the service; the bad input of issue 12, refused before any spend.

The sensitivity search checks every L2 derivation through both engines
(tests/witness/test_sensitivity_library.py); here: the closed forms, and that each interface uses them.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness import Gaussian
from dpwitness.cli import app as cli
from dpwitness.common.errors import ParameterError
from dpwitness.privacy.neighbours import ContributionBound, Neighbours, unit_l2_sensitivity
from dpwitness.query.queries import Query
from dpwitness.session import Session

KEYS = tuple(f"k{i}" for i in range(20))


def _part(**options: Any) -> tuple[float, float]:
    part = Query(epsilon=1.0, **options).parts[-1]
    return part.sensitivity, part.l2_sensitivity


@pytest.mark.parametrize(("groups", "rows"), [(1, 1), (10, 1), (3, 4), (10, 2)])
def test_a_unit_in_g_keys_with_k_rows_each_moves_a_histogram_by_k_root_g(groups: int, rows: int) -> None:
    options = {"statistic": "histogram", "column": "g", "keys": KEYS, "privacy_unit": "pid"}
    bound = {"max_contributions": rows, "max_groups": groups}
    assert _part(**options, **bound) == (groups * rows, pytest.approx(rows * math.sqrt(groups)))
    # replace-one: the old rows leave ≤ g keys, the new ones fill ≤ g others
    l1, l2 = _part(**options, **bound, neighbours="replace-one")
    assert l1 == 2 * groups * rows and l2 == pytest.approx(rows * math.sqrt(2 * groups))


def test_without_max_groups_all_k_rows_may_share_one_key() -> None:
    assert _part(statistic="count", by="g", keys=KEYS, privacy_unit="pid", max_contributions=3) == (3.0, 3.0)
    assert _part(statistic="histogram", column="g", keys=KEYS) == (1.0, 1.0)  # one row, no unit: textbook
    l1, l2 = _part(statistic="histogram", column="g", keys=KEYS, neighbours="replace-one")
    assert l1 == 2.0 and l2 == pytest.approx(math.sqrt(2))


def test_grouped_sums_use_the_larger_bound_and_the_range_when_keys_are_shared() -> None:
    base = {"statistic": "sum", "column": "x", "by": "g", "keys": KEYS, "privacy_unit": "pid", "max_contributions": 2}
    # add/remove: max(|L|, |U|)·k·√g
    assert _part(**base, bounds=(-3.0, 5.0), max_groups=4)[1] == pytest.approx(5 * 2 * 2)
    # replace-one, mixed signs: a shared key moves by k·(U − L) = 16 > √2·k·5: U − L wins
    assert _part(**base, bounds=(-3.0, 5.0), max_groups=4, neighbours="replace-one")[1] == pytest.approx(2 * 8 * 2)
    # replace-one, [2, 5] ∪ {0} = [0, 5]: disjoint keys are worse, √2·k·5·√g
    assert _part(**base, bounds=(2.0, 5.0), max_groups=4, neighbours="replace-one")[1] == pytest.approx(math.sqrt(2) * 2 * 5 * 2)


def test_few_declared_keys_force_shared_keys() -> None:
    bound = ContributionBound.of(1, 3)
    # 3 keys per side but only 4 declared: at least 2 are shared (each moves ≤ 1 for a count)
    assert unit_l2_sensitivity(Neighbours.REPLACE_ONE, 0.0, 1.0, bound, grouped=True, cells=4) == pytest.approx(2.0)
    assert unit_l2_sensitivity(Neighbours.REPLACE_ONE, 0.0, 1.0, bound, grouped=True) == pytest.approx(math.sqrt(6))
    assert unit_l2_sensitivity(Neighbours.ADD_REMOVE, 0.0, 1.0, bound, grouped=True, cells=2) == pytest.approx(math.sqrt(2))


def test_a_quantile_unit_may_fill_one_bin_so_its_l2_is_its_l1() -> None:
    options = {"statistic": "quantile", "column": "x", "bounds": (0.0, 1.0), "quantiles": (0.5,), "privacy_unit": "pid"}
    l1, l2 = _part(**options, max_contributions=2, max_groups=3)
    assert l1 == l2 == 6.0


# --- sessions ---------------------------------------------------------------------------------


def people(units: int = 400, keys: int = 50) -> pl.DataFrame:
    """Each person holds one row in each of 10 keys."""
    rows = [(p, f"k{(p + j) % keys}") for p in range(units) for j in range(10)]
    return pl.DataFrame(rows, schema={"pid": pl.Int64, "g": pl.String}, orient="row")


def test_a_gaussian_histogram_is_calibrated_to_its_l2_delta(tmp_path: Path) -> None:
    keys = [f"k{i}" for i in range(50)]
    ledger = tmp_path / "l2.db"
    session = Session(
        people(), epsilon=10.0, delta_budget=1e-5, privacy_unit="pid", max_groups=10, ledger=ledger, account="people", seed=3
    )
    release = session.run(session.query("histogram", "g", epsilon=1.0, keys=keys, delta=1e-6), mechanism="gaussian")
    expected = Gaussian(sensitivity=math.sqrt(10), epsilon=1.0, delta=1e-6, dimension=50, changed_coordinates=10)
    assert release.scale == pytest.approx(expected.sigma, rel=1e-12)
    assert release.sensitivity == pytest.approx(math.sqrt(10))
    assert "L2 Δ = 3.162 (L1 Δ = 10)" in release.notice and f"σ = {expected.sigma:.4g}" in release.notice
    assert isinstance(release.value, dict)
    assert max(abs(v - 80) for v in release.value.values()) < 6 * expected.sigma  # 400·10/50 = 80 per key
    with sqlite3.connect(ledger) as connection:
        epsilon, delta, rho = connection.execute("SELECT epsilon, delta, rho FROM spends").fetchone()
    assert (epsilon, delta) == (1.0, 1e-6) and rho == pytest.approx(expected.rho_spent)
    # the L1 calibration would have needed σ about √10 times larger
    loose = Gaussian(sensitivity=10.0, epsilon=1.0, delta=1e-6, dimension=50, changed_coordinates=10)
    assert loose.sigma > 3 * release.scale
    preview = session.preview("histogram", "g", epsilon=1.0, keys=keys, delta=1e-6, mechanism="gaussian")
    assert preview.sensitivity == pytest.approx(math.sqrt(10)) and preview.scale == release.scale
    assert preview.parts[0]["mechanism"] == "gaussian"


def test_auto_picks_gaussian_when_many_keys_move() -> None:
    """Laplace's variance grows as g², the Gaussian's as g: at 20 keys per person and ε = 1 the
    Gaussian wins (σ² ≈ 411 against 800); at 10 keys Laplace still does (200 against ≈ 205, the
    multi-key δ bound of the discrete Gaussian is the zCDP conversion, see docs/benchmarks.md)."""
    keys = [f"k{i}" for i in range(50)]
    for groups, chosen in ((20, "gaussian"), (10, "laplace")):
        session = Session(people(), epsilon=10.0, delta_budget=1e-5, privacy_unit="pid", max_groups=groups)
        release = session.run(session.query("histogram", "g", epsilon=1.0, keys=keys, delta=1e-6), mechanism="auto")
        assert release.distribution == chosen and f"mechanism: {chosen}" in release.notice, release.notice
        assert "auto: variance" in release.notice


def test_a_rho_total_pays_a_gaussian_release_in_rho() -> None:
    session = Session(people(), rho=1.0, privacy_unit="pid", max_groups=10, mechanism="gaussian")
    release = session.histogram("g", [f"k{i}" for i in range(50)], epsilon=1.0, delta=1e-6)
    assert release.distribution == "gaussian"
    assert session.spent.rho == pytest.approx(release.mechanism.rho_spent)  # type: ignore[union-attr]


# --- bad input: one line naming the parameter, nothing spent ----------------------------------------


def ledger_rows(path: Path) -> list[Any]:
    if not path.exists():
        return []
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT * FROM spends").fetchall()


@pytest.mark.parametrize(
    ("session_options", "call", "parameter"),
    [
        ({"epsilon": 5.0, "delta_budget": 1e-5}, {"mechanism": "laplace", "delta": 1e-6}, "delta"),  # δ for pure ε
        ({"epsilon": 5.0}, {"mechanism": "gaussian", "delta": 1e-6}, "delta"),  # δ on a pure-ε account
        ({"epsilon": 5.0, "rho": 0.5}, {"mechanism": "gaussian"}, "rho"),  # both (ε, δ) and ρ
    ],
)
def test_bad_gaussian_input_in_python(
    tmp_path: Path, session_options: dict[str, Any], call: dict[str, Any], parameter: str
) -> None:
    ledger = tmp_path / "bad.db"
    with pytest.raises(ParameterError) as caught:
        session = Session(people(), ledger=ledger, account="people", **session_options)
        mechanism = call.pop("mechanism")
        session.run(session.query("count", epsilon=1.0, by="g", keys=["k1", "k2"], **call), mechanism=mechanism)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert ledger_rows(ledger) == []


def test_delta_is_accepted_where_it_is_spent() -> None:
    session = Session(people(), epsilon=5.0, delta_budget=1e-5, max_rows=10_000)
    session.histogram("g", epsilon=0.5, delta=1e-6)  # undeclared keys: δ of the selection
    session.run(session.query("count", epsilon=0.5, delta=1e-6), mechanism="auto")  # δ offered to the Gaussian
    session.count(epsilon=0.5)  # the session's default δ is not "given"
    assert len(session.history) == 3


# --- CLI ---------------------------------------------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    people().write_csv(path)
    return path


def test_cli_gaussian_histogram_states_mechanism_sigma_and_delta(table: Path, tmp_path: Path) -> None:
    keys = ",".join(f"k{i}" for i in range(50))
    args = ["query", str(table), "--epsilon", "1", "--histogram", "g", "--categories", keys, "--privacy-unit", "pid"]
    args += ["--max-groups", "10", "--mechanism", "gaussian", "--delta", "1e-6", "--delta-budget", "1e-5", "--seed", "1"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    release = payload["releases"][0]
    sigma = Gaussian(sensitivity=math.sqrt(10), epsilon=1.0, delta=1e-6, dimension=50, changed_coordinates=10).sigma
    assert release["distribution"] == "gaussian" and release["delta"] == 1e-6
    assert release["scale"] == pytest.approx(sigma)
    assert payload["spent"]["rho"] > 0 and payload["spent"]["delta"] <= 1e-5
    text = CliRunner().invoke(cli, [*args, "--explain"], env={"COLUMNS": "250"})
    assert text.exit_code == 0, text.output
    assert "mechanism: gaussian" in text.output and f"Gaussian σ = {sigma:.4g}" in text.output
    assert f"Gaussian σ = {sigma:.4g}" in CliRunner().invoke(cli, args).output  # in the one line, without --explain
    rho = CliRunner().invoke(cli, [*[a for a in args if a not in ("--delta-budget", "1e-5")], "--rho", "2", "--json"])
    assert rho.exit_code == 0, rho.output
    assert json.loads(rho.stdout)["total"]["rho"] == 2.0


@pytest.mark.parametrize(
    ("extra", "parameter"),
    [
        (["--delta", "1e-6"], "delta"),  # δ with Laplace over declared keys
        (["--mechanism", "gaussian", "--delta", "1e-6"], "--delta"),  # δ on an account without δ (pure ε)
        (["--mechanism", "gaussian"], "--mechanism"),  # no δ or ρ in the budget for a Gaussian
        (["--mechanism", "gaussian", "--budget", "5", "--rho", "0.5"], "rho"),  # both ε and ρ totals
        (["--mechanism", "normal"], "mechanism"),
    ],
)
def test_cli_bad_gaussian_input_exits_2_spending_nothing(table: Path, tmp_path: Path, extra: list[str], parameter: str) -> None:
    ledger = tmp_path / "cli.db"
    args = ["query", str(table), "--epsilon", "1", "--count", "--by", "g", "--keys", "k1,k2", "--ledger", str(ledger)]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 2, result.output
    assert parameter in result.output and "Traceback" not in result.output
    assert ledger_rows(ledger) == []


# --- the service --------------------------------------------------------------------------------------


def test_the_service_accepts_a_mechanism_and_refuses_bad_gaussian_input(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from dpwitness.serve.app import create_app
    from dpwitness.serve.config import load_config
    from dpwitness.serve.process import write_config

    path = tmp_path / "people.csv"
    path.write_text("dept,salary\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i}\n" for i in range(300)))
    tokens = {name: f"{name}-token-{'c' * 24}" for name in ("pure", "relaxed", "zcdp")}
    config = write_config(
        tmp_path / "service.toml",
        tables={"people": {"path": str(path), "columns": {"dept": {"categories": ["A", "B", "C"]}}}},
        analysts={"pure": (tokens["pure"], 5.0), "relaxed": (tokens["relaxed"], 5.0), "zcdp": (tokens["zcdp"], None)},
        analyst_options={"relaxed": {"delta": 1e-5}, "zcdp": {"rho": 1.0}},
        service={"ledger": str(tmp_path / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )

    def post(client: Any, analyst: str, path: str = "/v1/query", **body: Any) -> Any:
        request = {"table": "people", "statistic": "histogram", "column": "dept", "epsilon": 1.0, **body}
        return client.post(path, json=request, headers={"Authorization": f"Bearer {tokens[analyst]}"})

    def spent(client: Any, analyst: str) -> Any:
        return client.get("/v1/budget", headers={"Authorization": f"Bearer {tokens[analyst]}"}).json()["spent"]

    with TestClient(create_app(load_config(config))) as client:
        for analyst in ("relaxed", "zcdp"):
            answer = post(client, analyst, mechanism="gaussian", delta=1e-6)
            assert answer.status_code == 200, answer.text
            release = answer.json()["release"]
            assert release["distribution"] == "gaussian" and release["scale"] == pytest.approx(
                Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6, dimension=3, changed_coordinates=1).sigma
            )
            assert "mechanism: gaussian" in " ".join(release["notes"])
        preview = post(client, "relaxed", "/v1/preview", mechanism="gaussian")
        assert preview.status_code == 200 and preview.json()["preview"]["parts"][0]["mechanism"] == "gaussian"
        before = spent(client, "pure")
        for analyst, body, parameter in [
            ("pure", {"mechanism": "gaussian"}, "delta_budget"),  # an ε-only analyst
            ("relaxed", {"delta": 1e-6}, "delta"),  # δ with Laplace over declared keys
            ("relaxed", {"mechanism": "normal"}, "mechanism"),
        ]:
            refused = post(client, analyst, **body)
            assert 400 <= refused.status_code < 500 and parameter in refused.text, refused.text
        assert spent(client, "pure") == before
        history = client.get("/v1/budget", headers={"Authorization": f"Bearer {tokens['relaxed']}"}).json()["history"]
        assert len(history) == 1  # the one Gaussian release; the refusals spent nothing
