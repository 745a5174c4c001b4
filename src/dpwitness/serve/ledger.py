"""Group commit for the SQLite budget ledger: many concurrent spends, one transaction, one fsync.

:class:`GroupCommitLedger` is a :class:`dpwitness.budget.Ledger` (same file, same table, same
checks) whose ``spend`` hands the request to one writer thread.  The writer takes every spend
waiting at that moment, opens ``BEGIN IMMEDIATE`` (the write lock, so other processes on the
same file are serialised too), re-reads each account's total, admits spends in arrival order
while they fit and refuses the rest with :class:`BudgetExceeded`, then commits with
``synchronous=FULL`` (one fsync of the WAL).  Only after that commit does any waiting
``spend`` return, so no answer can leave before its record is durable, and the budget check
and the insert are in the same transaction, so concurrent spends never overspend together.
"""

from __future__ import annotations

import contextvars
import math
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from os import PathLike

from dpwitness.budget import Ledger, Spend
from dpwitness.errors import BudgetExceeded, check_positive_finite

#: A prefix the service puts on every ledger label of the current request (its request id),
#: so that an answer can be matched to its spend record after a crash.
LABEL_PREFIX: contextvars.ContextVar[str] = contextvars.ContextVar("dpwitness_serve_label_prefix", default="")


@dataclass
class _Pending:
    account: str
    epsilon: float
    total: float
    label: str
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class GroupCommitLedger(Ledger):
    """A :class:`Ledger` whose concurrent spends share one transaction and one fsync."""

    def __init__(self, path: str | PathLike[str], *, max_batch: int = 512) -> None:
        super().__init__(path)
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._run, name="dpwitness-ledger-writer", daemon=True)
        self._closed = False
        self._readers = threading.local()
        self._histories: dict[str, tuple[int, list[Spend], float]] = {}
        self._totals: dict[str, tuple[int, float]] = {}  # the writer's: account → (last id read, total)
        self._history_lock = threading.Lock()
        self.batches = 0
        self.records = 0
        self._writer.start()

    def spend(self, account: str, epsilon: float, total: float, label: str) -> Spend:
        """Record ``epsilon`` for ``account`` unless that would exceed ``total``; return once durable."""
        amount = 0.0 if epsilon == 0 else check_positive_finite("epsilon", epsilon)
        if self._closed:
            raise RuntimeError("the ledger is closed")
        pending = _Pending(account, amount, float(total), LABEL_PREFIX.get() + label)
        self._queue.put(pending)
        while not pending.done.wait(1.0):
            if not self._writer.is_alive():
                raise RuntimeError("the ledger writer stopped; nothing was recorded or released")
        if pending.error is not None:
            raise pending.error
        return Spend(pending.label, amount)

    def spent(self, account: str) -> float:
        return self._read(account)[2]

    def history(self, account: str) -> list[Spend]:
        return list(self._read(account)[1])

    def _read(self, account: str) -> tuple[int, list[Spend], float]:
        """(last id, every spend in order, their total) for ``account``, reading only rows added
        since the last call: the ledger is append-only and ids only grow."""
        with self._history_lock:
            last_id, entries, total = self._histories.get(account, (0, [], 0.0))
            rows = (
                self._reader()
                .execute("SELECT id, label, epsilon FROM spends WHERE account = ? AND id > ? ORDER BY id", (account, last_id))
                .fetchall()
            )
            if rows:
                entries = entries + [Spend(label, float(eps)) for _, label, eps in rows]
                total = math.fsum((total, *(float(eps) for _, _, eps in rows)))
                self._histories[account] = (rows[-1][0], entries, total)
            return last_id, entries, total

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection (autocommit: each SELECT sees the latest commit)."""
        connection: sqlite3.Connection | None = getattr(self._readers, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=True)
            self._readers.connection = connection
        return connection

    def close(self) -> None:
        """Finish queued spends and stop the writer."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._writer.join()

    # --- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        connection = self._connect()
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = False
                while len(batch) < self.max_batch:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stop = True
                        break
                    batch.append(item)
                self._commit(connection, batch)
                if stop:
                    return
        finally:
            connection.close()

    def _committed_total(self, connection: sqlite3.Connection, account: str) -> float:
        """The account's committed total, inside the write transaction.

        Rows are only appended and ids only grow (AUTOINCREMENT, one writer at a time under the
        write lock), so adding the rows after the last id read to the last total read is exact,
        whichever process wrote them.
        """
        last_id, total = self._totals.get(account, (0, 0.0))
        added, newest = connection.execute(
            "SELECT COALESCE(SUM(epsilon), 0), MAX(id) FROM spends WHERE account = ? AND id > ?", (account, last_id)
        ).fetchone()
        if newest is not None:
            total = math.fsum((total, float(added)))
            self._totals[account] = (int(newest), total)
        return total

    def _commit(self, connection: sqlite3.Connection, batch: list[_Pending]) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            spent: dict[str, float] = {}
            rows = []
            now = time.time()
            for item in batch:
                if item.account not in spent:
                    spent[item.account] = self._committed_total(connection, item.account)
                already = spent[item.account]
                if already + item.epsilon > item.total * (1 + 1e-12):
                    item.error = BudgetExceeded(
                        f"asked for ε = {item.epsilon:g} but only {max(item.total - already, 0.0):g} of "
                        f"{item.total:g} remains for {item.account!r}; nothing was released"
                    )
                    continue
                spent[item.account] = math.fsum((already, item.epsilon))
                rows.append((item.account, item.label, item.epsilon, now))
            connection.executemany("INSERT INTO spends (account, label, epsilon, at) VALUES (?, ?, ?, ?)", rows)
            connection.execute("COMMIT")
            self.batches += 1
            self.records += len(rows)
        except BaseException as error:  # the batch is refused as a whole; nothing was recorded
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            for item in batch:
                item.error = RuntimeError(f"the ledger could not record the spend ({type(error).__name__})")
        finally:
            for item in batch:
                item.done.set()
