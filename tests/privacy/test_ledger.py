"""The durable budget ledger under Sessions: restarts, shared accounts, concurrent processes, kill -9."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpwitness import BudgetExceeded, ParameterError
from dpwitness.privacy.budget import Budget, Ledger
from dpwitness.session import Session


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    pl.DataFrame({"x": np.arange(1000.0), "g": np.arange(1000) % 3}).write_parquet(path)
    return path


def ledger_rows(path: Path) -> list[tuple[str, str, float]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT account, label, epsilon FROM spends ORDER BY id").fetchall()


def test_reopening_continues_from_what_was_spent(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    first = Session(table, epsilon=1.0, ledger=ledger)
    first.count(epsilon=0.4)
    first.mean("x", (0, 1000), epsilon=0.2)
    reopened = Session(str(table), epsilon=1.0, ledger=ledger)  # same file, another spelling: same account
    assert reopened.spent.epsilon == pytest.approx(0.6) and reopened.remaining.epsilon == pytest.approx(0.4)
    assert [s.label for s in reopened.history] == ["count()", "mean(x) in [0, 1000]"]
    with pytest.raises(BudgetExceeded):
        reopened.sum("x", (0, 1000), epsilon=0.5)
    reopened.sum("x", (0, 1000), epsilon=0.4)
    assert first.remaining.epsilon == pytest.approx(0.0)  # the first session sees the second's spend
    assert all(account == f"file:{table.resolve()}" for account, _, _ in ledger_rows(ledger))


def test_accounts_share_or_separate_budgets(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "accounts.db"
    frame = pl.read_parquet(table)  # an in-memory frame, as the service holds it
    alice_1 = Session(frame, epsilon=1.0, ledger=ledger, account="alice")
    alice_2 = Session(frame, epsilon=1.0, ledger=ledger, account="alice")
    bob = Session(frame, epsilon=1.0, ledger=ledger, account="bob")
    alice_1.count(epsilon=0.7)
    with pytest.raises(BudgetExceeded):
        alice_2.count(epsilon=0.7)
    bob.count(epsilon=0.7)
    assert alice_2.spent.epsilon == pytest.approx(0.7) and bob.spent.epsilon == pytest.approx(0.7)
    with pytest.raises(ParameterError, match="account") as caught:  # a frame has no name: never a shared "dataframe"
        Session(frame, epsilon=1.0, ledger=ledger)
    assert caught.value.parameter == "account"


SPENDER = textwrap.dedent(
    """
    import json, os, sys, time
    from dpwitness import BudgetExceeded
    from dpwitness.session import Session
    table, ledger, total, each, tries, pause, go = sys.argv[1:8]
    session = Session(table, epsilon=float(total), ledger=ledger, account="shared")
    session.preview("count", epsilon=float(each))  # open the table before the start line
    if go != "-":
        open(f"{go}.{os.getpid()}.ready", "w").close()
    while go != "-" and not os.path.exists(go):
        time.sleep(0.001)
    done = 0
    for i in range(int(tries)):
        try:
            release = session.count(epsilon=float(each))
        except BudgetExceeded:
            continue
        done += 1
        print(json.dumps({"i": i, "value": release.value}), flush=True)
        if float(pause):
            import time; time.sleep(float(pause))
    print(json.dumps({"done": done}), flush=True)
    """
)


def spender(
    table: Path, ledger: Path, *, total: float, each: float, tries: int, pause: float = 0.0, go: Path | None = None
) -> subprocess.Popen[str]:
    """A child process that spends ``each`` until ``tries`` run out, printing every release (after ``go`` exists)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-c", SPENDER, str(table), str(ledger), str(total), str(each), str(tries), str(pause), str(go or "-")]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.slow
def test_two_processes_spending_at_once_never_exceed_the_total(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "shared.db"
    Session(table, epsilon=1.0, ledger=ledger)  # create the schema once
    go = tmp_path / "go"
    children = [spender(table, ledger, total=1.0, each=0.05, tries=30, pause=0.01, go=go) for _ in range(2)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("go.*.ready"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # both have imported and opened the table
    go.touch()
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), [err for _, err in outputs]
    done = [json.loads(out.strip().splitlines()[-1])["done"] for out, _ in outputs]
    rows = ledger_rows(ledger)
    assert sum(done) == 20 == len(rows)  # 20 × 0.05 = 1.0: exactly the total, and not one spend more
    assert sum(eps for _, _, eps in rows) == pytest.approx(1.0)
    assert min(done) > 0  # both really ran at once


@pytest.mark.slow
def test_a_child_killed_mid_run_loses_no_spend_record(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "killed.db"
    child = spender(table, ledger, total=100.0, each=0.01, tries=10_000, pause=0.002)
    assert child.stdout is not None
    printed = []
    deadline = time.monotonic() + 60
    while len(printed) < 25 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if line:
            printed.append(json.loads(line))
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL and len(printed) == 25
    printed += [json.loads(line) for line in child.stdout.read().splitlines() if line.strip()]  # printed before the kill
    rows = ledger_rows(ledger)
    # every release the child printed was recorded before it was returned; at most one more
    # spend was committed for a release the kill prevented (budget lost, privacy never)
    assert len(printed) <= len(rows) <= len(printed) + 1
    assert all(label == "count()" for _, label, _ in rows)
    reopened = Session(table, epsilon=100.0, ledger=ledger, account="shared")
    assert reopened.spent.epsilon == pytest.approx(0.01 * len(rows))


# --- the ledger owns the total (issue 9.4) -------------------------------------------------------


def test_reopening_with_another_total_is_refused_until_raised_explicitly(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "owned.db"
    Session(table, epsilon=5.0, ledger=ledger)  # stores nothing until it spends: a failed run leaves no account
    Session(table, epsilon=2.0, ledger=ledger).count(epsilon=0.5)
    with pytest.raises(ParameterError) as caught:
        Session(table, epsilon=5.0, ledger=ledger)  # used to raise the total to 5 silently
    assert caught.value.parameter == "epsilon"
    assert "2" in caught.value.expected and "raise_budget" in caught.value.expected and "\n" not in str(caught.value)
    continued = Session(table, ledger=ledger)  # no total: the stored account continues
    assert continued.total == Budget(2.0, 0.0, math.inf) and continued.spent.epsilon == 0.5
    assert continued.raise_budget(epsilon=5.0) == Budget(5.0, 0.0, math.inf)
    assert Session(table, epsilon=5.0, ledger=ledger).remaining.epsilon == pytest.approx(4.5)
    store = Ledger(ledger)
    account = f"file:{table.resolve()}"
    assert [(kind, total.epsilon) for kind, _, total in store.events(account)] == [("open", 2.0), ("raise", 5.0)]
    assert len(ledger_rows(ledger)) == 1  # a raise is its own event, never a spend
    with pytest.raises(ParameterError) as lower:
        continued.raise_budget(epsilon=1.0)
    assert lower.value.parameter == "epsilon"
    with pytest.raises(ParameterError) as new_account:
        Session(table, ledger=ledger, account="never-opened")  # a new account needs a total
    assert new_account.value.parameter == "epsilon"


def test_the_delta_total_is_owned_too(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "delta.db"
    Session(table, epsilon=1.0, delta_budget=1e-6, ledger=ledger).count(epsilon=0.1)  # stored with the first spend
    assert Session(table, epsilon=1.0, ledger=ledger).total.delta == 1e-6  # δ not named: the stored one
    for attempt in ({"epsilon": 1.0, "delta_budget": 1e-5}, {"delta_budget": 0.0}):
        with pytest.raises(ParameterError) as caught:
            Session(table, ledger=ledger, **attempt)  # type: ignore[arg-type]
        assert caught.value.parameter == "delta_budget"
    with pytest.raises(ParameterError) as both:
        Session(table, epsilon=1.0, rho=0.5, ledger=tmp_path / "other.db")
    assert both.value.parameter == "rho"


def test_a_ledger_of_the_old_schema_is_migrated(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "old.db"
    account = f"file:{table.resolve()}"
    with sqlite3.connect(ledger) as connection:  # what the ε-only ledger wrote
        connection.execute(
            "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, "
            "label TEXT NOT NULL, epsilon REAL NOT NULL, at REAL NOT NULL)"
        )
        connection.executemany(
            "INSERT INTO spends (account, label, epsilon, at) VALUES (?, ?, ?, 0)", [(account, "count()", 0.25)] * 2
        )
    session = Session(table, epsilon=1.0, ledger=ledger)  # the first open after migration stores the total
    assert session.spent == Budget(0.5, 0.0, 0.0625) and session.remaining.epsilon == 0.5
    session.count(epsilon=0.5)
    with pytest.raises(BudgetExceeded):
        session.count(epsilon=0.01)
    with sqlite3.connect(ledger) as connection:
        rows = connection.execute("SELECT epsilon, delta, rho, selection_delta FROM spends ORDER BY id").fetchall()
    assert rows == [(0.25, 0.0, 0.03125, 0.0), (0.25, 0.0, 0.03125, 0.0), (0.5, 0.0, 0.125, 0.0)]


# --- δ is budgeted and sized to a declared bound (issue 9.5) -------------------------------------


def unique_ids(n: int) -> pl.DataFrame:
    return pl.DataFrame({"ssn": [f"{100_000_000 + 7 * i}" for i in range(n)]})


def test_unique_identifiers_are_protected_by_a_delta_sized_to_max_rows(tmp_path: Path) -> None:
    """The "3M unique identifiers" report at 200,000 rows: every key is one person's. The δ of
    a release over undeclared keys bounds each person's chance of exposure, so n·δ keys are
    expected to leak. With δ sized to the declared bound (1/(10·max_rows)) that is ≤ 0.1."""
    frame = unique_ids(200_000)
    ledger = tmp_path / "ids.db"
    session = Session(frame, epsilon=2.0, delta_budget=1e-5, max_rows=200_000, ledger=ledger, account="people", seed=12)
    assert session.delta == 1 / 2_000_000
    release = session.histogram("ssn", epsilon=1.0)
    assert isinstance(release.value, dict) and len(release.value) <= 2  # expected ≤ 0.1
    assert release.delta == 5e-7 and "at most 0.1 unique keys (max_rows·δ)" in release.notice
    assert ledger_deltas(ledger) == [(5e-7, 5e-7)]  # recorded: basic δ and selection δ
    assert session.spent.delta == 5e-7
    with pytest.raises(ParameterError) as too_large:
        session.histogram("ssn", epsilon=0.5, delta=1e-4)  # n·δ = 20 expected exposures
    assert too_large.value.parameter == "delta" and "5e-07" in str(too_large.value)
    # The bound is what protects: a lie about max_rows lets δ = 1e-4 through, and ≈ n·δ = 20 leak.
    lied = Session(frame, epsilon=1.0, delta_budget=1e-3, max_rows=1000, seed=12).histogram("ssn", epsilon=1.0, delta=1e-4)
    assert isinstance(lied.value, dict) and len(lied.value) >= 8
    assert len(ledger_deltas(ledger)) == 1  # the refusal spent nothing


def ledger_deltas(path: Path) -> list[tuple[float, float]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT delta, selection_delta FROM spends ORDER BY id").fetchall()


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"epsilon": 1.0, "delta_budget": 1e-5}, "max_rows"),  # no declared bound
        ({"epsilon": 1.0, "max_rows": 1000}, "delta_budget"),  # no δ budget
        ({"epsilon": 1.0, "max_rows": 1000, "delta_budget": 1e-3, "delta": 1e-3}, "delta"),  # δ > 1/(10·n)
        ({"epsilon": 1.0, "max_rows": 0}, "max_rows"),
        ({"epsilon": 1.0, "max_rows": 10, "delta": 1.5}, "delta"),
    ],
)
def test_undeclared_keys_without_a_sized_delta_are_refused_before_spending(
    tmp_path: Path, options: dict[str, float], parameter: str
) -> None:
    ledger = tmp_path / "refused.db"
    with pytest.raises(ParameterError) as caught:
        Session(unique_ids(100), ledger=ledger, account="people", **options).histogram("ssn", epsilon=0.5)  # type: ignore[arg-type]
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert ledger_rows(ledger) == [] if ledger.exists() else True


def test_the_delta_budget_is_enforced(tmp_path: Path) -> None:
    session = Session(unique_ids(100), epsilon=10.0, delta_budget=1e-3, max_rows=1000, ledger=tmp_path / "d.db", account="people")
    session.histogram("ssn", epsilon=0.1)  # δ = 1e-4 each
    for _ in range(9):
        session.histogram("ssn", epsilon=0.1)
    assert session.spent.delta == pytest.approx(1e-3) and session.remaining.delta == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(BudgetExceeded, match="δ"):
        session.histogram("ssn", epsilon=0.1)
    assert session.count(epsilon=0.1).delta == 0  # declared-key and ungrouped releases still fit


# --- the command line ---------------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, dict[str, Any] | str]:
    from typer.testing import CliRunner

    from dpwitness.cli import app

    result = CliRunner().invoke(app, ["query", *args])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, result.output


def test_cli_ledger_without_budget_continues_the_stored_account(table: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "cli.db")
    code, first = run_cli(str(table), "--epsilon", "0.5", "--count", "--ledger", ledger, "--budget", "2", "--json")
    assert code == 0 and isinstance(first, dict) and first["total"]["epsilon"] == 2.0
    code, second = run_cli(str(table), "--epsilon", "0.5", "--count", "--ledger", ledger, "--json")
    assert code == 0 and isinstance(second, dict)
    assert second["total"]["epsilon"] == 2.0 and second["spent"]["epsilon"] == 1.0  # used to reset the total to 0.5
    code, refused = run_cli(str(table), "--epsilon", "0.5", "--count", "--ledger", ledger, "--budget", "5", "--json")
    assert code == 2 and isinstance(refused, dict) and refused["error"]["parameter"] == "--budget"
    assert "--raise-budget" in refused["error"]["message"] and len(ledger_rows(Path(ledger))) == 2
    code, raised = run_cli(str(table), "--epsilon", "0.5", "--ledger", ledger, "--raise-budget", "5")
    assert code == 0 and "ε = 5" in str(raised)
    code, after = run_cli(str(table), "--epsilon", "0.5", "--count", "--ledger", ledger, "--budget", "5", "--json")
    assert code == 0 and isinstance(after, dict) and after["remaining"]["epsilon"] == pytest.approx(3.5)
    account = f"file:{table.resolve()}"
    assert [kind for kind, _, _ in Ledger(ledger).events(account)] == ["open", "raise"]


def test_cli_undeclared_keys_need_a_declared_bound(people_ids: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "keys.db")
    base = [str(people_ids), "--epsilon", "1", "--histogram", "ssn", "--ledger", ledger, "--json"]
    code, missing = run_cli(*base)
    assert code == 2 and isinstance(missing, dict) and missing["error"]["parameter"] == "--max-rows"
    code, too_large = run_cli(*base, "--max-rows", "1000", "--delta-budget", "1e-3", "--delta", "1e-3")
    assert code == 2 and isinstance(too_large, dict) and too_large["error"]["parameter"] == "--delta"
    code, released = run_cli(*base, "--max-rows", "1000", "--delta-budget", "1e-3", "--seed", "3")
    assert code == 0 and isinstance(released, dict)
    assert released["spent"]["delta"] == 1e-4 and released["total"]["delta"] == 1e-3
    assert "at most 0.1 unique keys" in released["releases"][0]["notice"]
    code, no_ledger = run_cli(str(people_ids), "--epsilon", "1", "--raise-budget", "3", "--json")
    assert code == 2 and isinstance(no_ledger, dict) and no_ledger["error"]["parameter"] == "--raise-budget"


@pytest.fixture
def people_ids(tmp_path: Path) -> Path:
    path = tmp_path / "ids.csv"
    unique_ids(500).write_csv(path)
    return path


# --- Gaussian releases in a session: recorded with their ρ (issue 12.4) --------------------------


def test_a_gaussian_release_records_its_delta_and_rho(table: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "gauss.db"
    session = Session(table, epsilon=5.0, delta_budget=1e-5, ledger=ledger, seed=8)
    release = session.run(session.query("count", epsilon=1.0, delta=1e-6), mechanism="gaussian")
    mechanism = release.mechanism
    assert mechanism is not None and type(mechanism).__name__ == "Gaussian"
    assert release.delta == 1e-6 and release.scale == pytest.approx(4.22, rel=0.01)  # the analytic σ (Balle–Wang)
    assert "mechanism: gaussian" in release.notice and abs(release.value - 1000) < 40  # type: ignore[operator]
    with sqlite3.connect(ledger) as connection:
        row = connection.execute("SELECT epsilon, delta, rho, selection_delta FROM spends").fetchone()
    assert row == (1.0, 1e-6, pytest.approx(mechanism.rho_spent), 0.0)  # type: ignore[union-attr]
    assert 0.02 < row[2] < 0.03  # ρ of σ ≈ 4.22 for Δ = 1: 1/(2σ²) ≈ 0.028
    preview = session.preview("count", epsilon=1.0, delta=1e-6, mechanism="gaussian")
    assert preview.scale == release.scale and preview.interval == pytest.approx(
        (-1.96 * release.scale, 1.96 * release.scale), rel=1e-3
    )
    auto = session.run(session.query("count", epsilon=1.0, delta=1e-6), mechanism="auto")
    assert "mechanism: laplace (auto: variance 2" in auto.notice  # L2 Δ = L1 Δ = 1: Laplace's 2 beats σ² ≈ 17.8


@pytest.mark.parametrize(
    ("mechanism", "statistic", "delta_budget", "parameter"),
    [
        ("uniform", "count", 1e-5, "mechanism"),
        ("gaussian", "variance", 1e-5, "mechanism"),  # noisy moments: Laplace only (a mean may be Gaussian)
        ("gaussian", "count", None, "mechanism"),  # no δ or ρ to spend: the option asked is named
    ],
)
def test_bad_mechanism_choices_are_refused_before_spending(
    table: Path, tmp_path: Path, mechanism: str, statistic: str, delta_budget: float | None, parameter: str
) -> None:
    ledger = tmp_path / "m.db"
    session = Session(table, epsilon=5.0, delta_budget=delta_budget, ledger=ledger)
    bounds = {"bounds": (0.0, 1000.0)} if statistic == "variance" else {}
    query = session.query(statistic, "x" if statistic == "variance" else None, epsilon=1.0, **bounds)  # type: ignore[arg-type]
    with pytest.raises(ParameterError) as caught:
        session.run(query, mechanism=mechanism)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert not ledger.exists() or ledger_rows(ledger) == []


def test_an_awaited_spend_commits_like_a_spend(tmp_path: Path) -> None:
    """Ledger.spend_async (the core ledger: its commit in a worker thread) and Accountant.spend_async
    (a ledger's, or in memory) record and refuse exactly as spend does."""
    import asyncio

    from dpwitness.privacy.budget import Accountant, Spend

    ledger = Ledger(tmp_path / "l.db")
    ledger.open_account("a", Budget(1.0, 0.0, math.inf))
    on_ledger = Accountant(ledger=ledger, account="a")
    in_memory = Accountant(1.0)

    async def spends() -> None:
        assert (await ledger.spend_async("a", Spend("one", 0.5))).label == "one"
        await on_ledger.spend_async(0.25, "two")
        await in_memory.spend_async(0.75, "three")
        with pytest.raises(BudgetExceeded):
            await on_ledger.spend_async(0.5, "too much")
        with pytest.raises(BudgetExceeded):
            await in_memory.spend_async(0.5, "too much")

    asyncio.run(spends())
    assert [s.label for s in ledger.history("a")] == ["one", "two"]
    assert [s.label for s in in_memory.history] == ["three"]
