"""The answer's spent and remaining come from the group-commit writer (no SQLite read), and equal the ledger's."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpwitness.privacy.budget import Budget, Spend
from dpwitness.serve.ledger import GroupCommitLedger


def test_the_standing_after_a_spend_is_what_the_ledger_holds(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ours, other = GroupCommitLedger(path), GroupCommitLedger(path)  # two processes on one file
    try:
        ours.open_account("alice", Budget(10.0, 1e-6, float("inf")))
        assert ours.standing("alice") == (ours.total("alice"), ours.usage("alice"))  # nothing committed yet: read
        ours.spend("alice", Spend("a", 0.25))
        other.spend("alice", Spend("b", 0.5, delta=1e-7))  # committed by the other writer
        ours.spend("alice", Spend("c", 0.125))
        total, usage = ours.standing("alice")
        assert total == ours.total("alice")
        read = ours.usage("alice")
        assert usage.records == read.records == 3  # the other process's row is counted too
        assert usage.epsilon == pytest.approx(read.epsilon, rel=1e-15) and usage.epsilon == pytest.approx(0.875)
        assert usage.delta == pytest.approx(1e-7) and usage.rho == pytest.approx(read.rho, rel=1e-15)
    finally:
        ours.close()
        other.close()
