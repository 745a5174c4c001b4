"""GroupCommitLedger.spend_async: the group-commit spend awaited on an event loop (issue 31, item 6)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from dpwitness.common.errors import BudgetExceeded
from dpwitness.privacy.budget import Budget, Spend
from dpwitness.serve.ledger import LABEL_PREFIX, GroupCommitLedger


def recorded(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {label for (label,) in db.execute("SELECT label FROM spends")}


def test_an_awaited_spend_is_durable_when_it_returns_and_concurrent_ones_share_commits(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = GroupCommitLedger(path)
    ledger.open_account("a", Budget(10.0, 0.0, float("inf")))

    async def one(index: int) -> None:
        LABEL_PREFIX.set(f"request{index} ")  # this task's own context, as a request's
        spent = await ledger.spend_async("a", Spend(f"q{index}", 0.1))
        assert spent.label == f"request{index} q{index}"
        assert spent.label in recorded(path)  # committed (another connection sees it) before the return

    async def many() -> None:
        await asyncio.gather(*(one(i) for i in range(40)))

    try:
        asyncio.run(many())
        assert len(recorded(path)) == 40
        assert ledger.batches < 40  # waiting coroutines shared transactions (and fsyncs)
        _, usage = ledger.standing("a")
        assert usage.records == 40 and usage.epsilon == pytest.approx(4.0)
    finally:
        ledger.close()


def test_awaited_spends_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = GroupCommitLedger(path)
    ledger.open_account("a", Budget(1.0, 0.0, float("inf")))

    async def one(index: int) -> bool:
        try:
            await ledger.spend_async("a", Spend(f"q{index}", 0.1))
        except BudgetExceeded:
            return False
        return True

    async def many() -> list[bool]:
        return await asyncio.gather(*(one(i) for i in range(64)))

    try:
        admitted = asyncio.run(many())
        assert sum(admitted) == 10 and len(recorded(path)) == 10
    finally:
        ledger.close()


def test_an_awaited_spend_is_refused_once_the_writer_stopped_never_left_waiting(tmp_path: Path) -> None:
    ledger = GroupCommitLedger(tmp_path / "ledger.db")
    ledger.open_account("a", Budget(1.0, 0.0, float("inf")))
    ledger._queue.put(None)  # the writer stops (as at close) while the ledger still takes spends
    ledger._writer.join(10)

    async def spend() -> None:
        await asyncio.wait_for(ledger.spend_async("a", Spend("late", 0.1)), 10)

    with pytest.raises(RuntimeError, match="writer stopped"):
        asyncio.run(spend())
    assert recorded(tmp_path / "ledger.db") == set()
    ledger.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(spend())
