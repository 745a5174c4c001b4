"""Sequential composition: k releases at ε each cost kε, and a budget is never overspent."""

from __future__ import annotations

import math
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass

from dpwitness.errors import BudgetExceeded, check_positive_finite


@dataclass(frozen=True)
class Spend:
    label: str
    epsilon: float


class Accountant:
    """Tracks ε under basic composition against a total; refuses a spend that would exceed it.

    In memory by default; with ``ledger`` (a :class:`Ledger`) every spend is recorded durably
    under ``account`` before it counts, and earlier spends on that account are honoured.
    """

    def __init__(self, total_epsilon: float = math.inf, *, ledger: Ledger | None = None, account: str = "default") -> None:
        self.total = math.inf if total_epsilon == math.inf else check_positive_finite("total_epsilon", total_epsilon)
        self._history: list[Spend] = []
        self.ledger = ledger
        self.account = account

    @property
    def spent(self) -> float:
        if self.ledger is not None:
            return self.ledger.spent(self.account)
        return math.fsum(s.epsilon for s in self._history)

    @property
    def remaining(self) -> float:
        return self.total - self.spent

    @property
    def history(self) -> list[Spend]:
        if self.ledger is not None:
            return self.ledger.history(self.account)
        return list(self._history)

    def check(self, epsilon: float) -> None:
        """Raise :class:`BudgetExceeded` if ``epsilon`` more would go over the total."""
        if self.spent + epsilon > self.total * (1 + 1e-12):
            raise BudgetExceeded(
                f"asked for ε = {epsilon:g} but only {self.remaining:g} of {self.total:g} remains; nothing was released"
            )

    def spend(self, epsilon: float, label: str = "release") -> Spend:
        """Record ε (0 allowed: a Δ = 0 release costs nothing)."""
        amount = 0.0 if epsilon == 0 else check_positive_finite("epsilon", epsilon)
        if self.ledger is not None:
            return self.ledger.spend(self.account, amount, self.total, label)
        self.check(amount)
        entry = Spend(label, amount)
        self._history.append(entry)
        return entry


class Ledger:
    """A durable, shared budget ledger in SQLite (WAL, fsync on commit).

    Every spend is written and committed *before* the caller releases anything, inside one
    ``BEGIN IMMEDIATE`` transaction that re-reads the account's total: concurrent processes
    on one file therefore never overspend together, and a crash after the commit loses no
    record (at worst a budget unit is spent for a release that was never returned).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        with self._connect() as connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS spends (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, "
                "label TEXT NOT NULL, epsilon REAL NOT NULL, at REAL NOT NULL)"
            )
            connection.execute("CREATE INDEX IF NOT EXISTS spends_account ON spends(account)")

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        return connection

    def spend(self, account: str, epsilon: float, total: float, label: str) -> Spend:
        """Atomically record ``epsilon`` for ``account`` unless that would exceed ``total``."""
        amount = 0.0 if epsilon == 0 else check_positive_finite("epsilon", epsilon)
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            (spent,) = connection.execute(
                "SELECT COALESCE(SUM(epsilon), 0) FROM spends WHERE account = ?", (account,)
            ).fetchone()
            if spent + amount > total * (1 + 1e-12):
                connection.execute("ROLLBACK")
                raise BudgetExceeded(
                    f"asked for ε = {amount:g} but only {max(total - spent, 0.0):g} of {total:g} remains "
                    f"for {account!r}; nothing was released"
                )
            connection.execute(
                "INSERT INTO spends (account, label, epsilon, at) VALUES (?, ?, ?, ?)",
                (account, label, amount, time.time()),
            )
            connection.execute("COMMIT")
        finally:
            connection.close()
        return Spend(label, amount)

    def spent(self, account: str) -> float:
        with closing(self._connect()) as connection:
            (value,) = connection.execute(
                "SELECT COALESCE(SUM(epsilon), 0) FROM spends WHERE account = ?", (account,)
            ).fetchone()
        return float(value)

    def history(self, account: str) -> list[Spend]:
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT label, epsilon FROM spends WHERE account = ? ORDER BY id", (account,)
            ).fetchall()
        return [Spend(label, float(eps)) for label, eps in rows]
