"""The service's budgets: (ε, δ) or ρ per analyst, owned by the ledger; and no timing side channel
between analysts through the sampler's caches (a real server process, two real analysts)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dpwitness.cli import app as cli
from dpwitness.common.errors import ParameterError
from dpwitness.privacy.accounting import zcdp_rho
from dpwitness.privacy.budget import Ledger
from dpwitness.serve.app import create_app
from dpwitness.serve.config import load_config
from dpwitness.serve.process import write_config

TOKENS = {name: f"{name}-token-{'b' * 24}" for name in ("pure", "relaxed", "zcdp", "alice", "bob")}


def tables(folder: Path) -> dict[str, Any]:
    path = folder / "people.csv"
    path.write_text("dept,salary\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i}\n" for i in range(300)))
    return {"people": {"path": str(path), "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 5000]}}}}


def budget_config(folder: Path, *, pure_epsilon: float = 1.0) -> Path:
    return write_config(
        folder / f"service-{pure_epsilon:g}.toml",
        tables=tables(folder),
        analysts={"pure": (TOKENS["pure"], pure_epsilon), "relaxed": (TOKENS["relaxed"], 1.0), "zcdp": (TOKENS["zcdp"], None)},
        analyst_options={"relaxed": {"delta": 1e-6}, "zcdp": {"rho": 0.02}},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )


def answered(client: Any, analyst: str, epsilon: float, limit: int = 1000) -> int:
    """How many count queries at ``epsilon`` the analyst gets before a 402."""
    headers = {"Authorization": f"Bearer {TOKENS[analyst]}"}
    for done in range(limit):
        response = client.post("/v1/query", json={"table": "people", "statistic": "count", "epsilon": epsilon}, headers=headers)
        if response.status_code == 402:
            assert "nothing was released" in response.json()["detail"]
            return done
        assert response.status_code == 200, response.text
    return limit


def test_budgets_in_epsilon_delta_or_rho(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    with TestClient(create_app(load_config(budget_config(tmp_path)))) as client:
        shown = {
            a: client.get("/v1/budget", headers={"Authorization": f"Bearer {TOKENS[a]}"}).json()
            for a in TOKENS
            if a in ("pure", "relaxed", "zcdp")
        }
        assert shown["pure"]["total"] == {"epsilon": 1.0, "delta": 0.0, "rho": None}
        assert shown["relaxed"]["total"] == {"epsilon": 1.0, "delta": 1e-6, "rho": None}
        assert shown["zcdp"]["total"] == {"epsilon": None, "delta": 0.0, "rho": 0.02}
        assert answered(client, "pure", 0.02) == 50  # basic composition: 50 × 0.02 = 1
        # zCDP composition (ρ = ε²/2 each, converted with CKS at δ = 1e-6) admits more
        assert answered(client, "relaxed", 0.02) == math.floor(zcdp_rho(1.0, 1e-6) / 2e-4 * (1 + 1e-12)) > 100
        assert answered(client, "zcdp", 0.1) == 4  # ρ = 0.005 each against 0.02
        relaxed = client.get("/v1/budget", headers={"Authorization": f"Bearer {TOKENS['relaxed']}"}).json()
        assert relaxed["spent"]["delta"] == 1e-6 and relaxed["spent"]["epsilon"] <= 1.0 and relaxed["history"][0]["rho"] == 2e-4


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"epsilon": 1.0, "rho": 0.5}, "analysts.a.rho"),
        ({}, "analysts.a.epsilon"),
        ({"rho": 0.0}, "analysts.a.rho"),
        ({"epsilon": 1.0, "delta": 1.0}, "analysts.a.delta"),
        ({"epsilon": 1.0, "delta": -1e-6}, "analysts.a.delta"),
        ({"epsilon": 1.0, "delta": "small"}, "analysts.a.delta"),
    ],
)
def test_bad_budgets_in_the_config_name_the_key(options: dict[str, Any], parameter: str) -> None:
    from dpwitness.serve.auth import hash_token
    from dpwitness.serve.config import parse_config

    raw = {
        "tables": {"t": {"path": "t.csv", "columns": {"x": {"bounds": [0, 1]}}}},
        "analysts": {"a": {"token_hash": hash_token("tok"), **options}},
    }
    with pytest.raises(ParameterError) as caught:
        parse_config(raw, base=Path("."))
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


def test_a_restart_with_another_total_is_refused_unless_raised(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    config = budget_config(tmp_path)
    with TestClient(create_app(load_config(config))) as client:
        assert answered(client, "pure", 0.5) == 2
    raised_config = budget_config(tmp_path, pure_epsilon=3.0)  # the operator edits the total
    with pytest.raises(ParameterError) as caught:
        create_app(load_config(raised_config))
    assert caught.value.parameter == "analysts.pure.epsilon" and "--raise-budgets" in str(caught.value)
    result = CliRunner().invoke(cli, ["serve", "--config", str(raised_config), "--port", "1"])
    assert result.exit_code == 2 and "analysts.pure.epsilon" in result.output and "Traceback" not in result.output
    with TestClient(create_app(load_config(raised_config), raise_budgets=True)) as client:
        assert answered(client, "pure", 0.5) == 4  # 1 spent of 1, now of 3: four more
    kinds = [(kind, total.epsilon) for kind, _, total in Ledger(tmp_path / "ledger.db").events("pure")]
    assert kinds == [("open", 1.0), ("raise", 3.0)]
    with pytest.raises(ParameterError) as lower:
        create_app(load_config(config), raise_budgets=True)  # 1 < 3: a budget is never lowered
    assert lower.value.parameter == "analysts.pure.epsilon"


# --- no timing side channel between analysts ------------------------------------------------------


def test_what_one_analyst_previewed_is_computed_afresh_for_another(tmp_path: Path) -> None:
    """The issue's attack: bob times free previews at ε values alice may have used. With the
    sampler's caches shared, alice's ε were warm for bob (9 ms against 225 ms, a ratio of about
    0.1 in every round) and bob guessed them all. Counted here rather than timed (a timing depends
    on the machine's load): bob's first preview of each of alice's ε computes its calibration in
    bob's own cache scope, exactly as for an ε nobody used; only bob's own repeats are hits."""
    from fastapi.testclient import TestClient

    from dpwitness.noise import GridLaplace

    config = write_config(
        tmp_path / "service.toml",
        tables=tables(tmp_path),
        analysts={"alice": (TOKENS["alice"], 100.0), "bob": (TOKENS["bob"], 100.0)},
        service={"ledger": str(tmp_path / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000},
    )
    computed = GridLaplace.calibrate.computations  # type: ignore[attr-defined]
    used = [round(0.0011 + 0.0000137 * i, 7) for i in range(8)]  # ε values never used before in this process
    with TestClient(create_app(load_config(config))) as client:

        def preview(analyst: str, epsilon: float) -> None:
            body = {"table": "people", "statistic": "count", "epsilon": epsilon}
            response = client.post("/v1/preview", json=body, headers={"Authorization": f"Bearer {TOKENS[analyst]}"})
            assert response.status_code == 200, response.text

        for epsilon in used:
            preview("alice", epsilon)
        alice, bob = computed("alice"), computed("bob")
        for epsilon in used:
            preview("bob", epsilon)
        assert computed("bob") - bob == len(used)  # alice's ε are no warmer for bob than new ones
        for epsilon in used:
            preview("bob", epsilon)
            preview("alice", epsilon)
        assert computed("bob") - bob == len(used) and computed("alice") == alice  # each one's repeats are its own hits


def test_cache_scopes_are_independent_but_share_memory() -> None:
    """What one scope computed is a miss (and a fresh computation) in another; equal results are
    one object in memory; outside any scope the process-wide cache works as before."""
    import numpy as np

    from dpwitness.common.caching import cache_scope, scoped_cache

    calls: list[tuple[object, int]] = []

    @scoped_cache(2)
    def table(m: int) -> np.ndarray:
        calls.append((m, len(calls)))
        return np.arange(m)

    with cache_scope("alice"):
        first = table(5)
        assert table(5) is first and len(calls) == 1  # alice's hit
    with cache_scope("bob"):
        second = table(5)  # bob's miss: computed again, as if nobody had asked
        assert len(calls) == 2 and second is first  # ... but kept once in memory
        table(6), table(7)  # bob's LRU (2 entries) evicts 5 ...
    with cache_scope("alice"):
        assert table(5) is first and len(calls) == 4  # ... never alice's
    assert table(5) is first and len(calls) == 5 and table(5) is first and len(calls) == 5  # the default scope


def test_serve_token_writes_the_budget_it_is_given() -> None:
    from dpwitness.serve.config import parse_config

    runner = CliRunner()
    made = runner.invoke(cli, ["serve-token", "carol", "--epsilon", "2", "--delta", "1e-6"])
    assert made.exit_code == 0, made.output
    snippet = made.stdout[made.stdout.index("[analysts.carol]") :]
    raw = {"tables": {"t": {"path": "t.csv", "columns": {"x": {"bounds": [0, 1]}}}}, **tomllib.loads(snippet)}
    assert parse_config(raw, base=Path(".")).analysts["carol"].total.to_dict() == {"epsilon": 2.0, "delta": 1e-6, "rho": None}
    bad = runner.invoke(cli, ["serve-token", "eve", "--delta", "2"])
    assert bad.exit_code == 2 and "delta" in bad.output and "token_hash" not in bad.output
