"""Group commit for the SQLite budget ledger: many concurrent spends, one transaction, one fsync.

:class:`GroupCommitLedger` is a :class:`dpwitness.privacy.budget.Ledger` (same file, same table, same
checks) whose ``spend`` hands the request to one writer thread.  The writer takes every spend
waiting at that moment, opens ``BEGIN IMMEDIATE`` (the write lock, so other processes on the
same file are serialised too), re-reads each account's total, admits spends in arrival order
while they fit and refuses the rest with :class:`BudgetExceeded`, then commits with
``synchronous=FULL`` (one fsync of the WAL).  Only after that commit does any waiting
``spend`` return, so no answer can leave before its record is durable, and the budget check
and the insert are in the same transaction, so concurrent spends never overspend together.

:meth:`GroupCommitLedger.spend_async` is the same spend for a caller on an event loop: the
writer resolves the caller's future after the commit (one ``call_soon_threadsafe`` per loop
and batch), so the service's event loop waits for the commit without a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field, replace
from os import PathLike

from dpwitness.common.errors import ParameterError
from dpwitness.privacy.budget import (
    _INSERT,
    Budget,
    Ledger,
    Spend,
    Usage,
    _created,
    _row,
    _stored_total,
    _usage,
    admits,
    check_spend,
    refusal,
)

#: A prefix the service puts on every ledger label of the current request (its request id),
#: so that an answer can be matched to its spend record after a crash.
LABEL_PREFIX: contextvars.ContextVar[str] = contextvars.ContextVar("dpwitness_serve_label_prefix", default="")


@dataclass
class _Pending:
    """One spend waiting for the writer: a thread waits on ``done``, a coroutine on ``future``."""

    account: str
    spend: Spend
    create_with: Budget | None
    done: threading.Event = field(default_factory=threading.Event)
    future: asyncio.Future[None] | None = None
    error: BaseException | None = None


class GroupCommitLedger(Ledger):
    """A :class:`Ledger` whose concurrent spends share one transaction and one fsync."""

    def __init__(self, path: str | PathLike[str], *, max_batch: int = 512) -> None:
        super().__init__(path)
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._run, name="dpwitness-ledger-writer", daemon=True)
        self._closed = False
        self._stopped = False  # set by the writer as it exits; then nothing more is queued
        self._stop_lock = threading.Lock()
        self._readers = threading.local()
        self._histories: dict[str, tuple[int, list[Spend], Usage]] = {}
        self._usages: dict[str, tuple[int, Usage]] = {}  # the writer's: account → (last id read, sums)
        self._standings: dict[str, tuple[Budget, Usage]] = {}  # the writer's, after each commit: account → (total, sums)
        self._history_lock = threading.Lock()
        self.batches = 0
        self.records = 0
        self._writer.start()

    def spend(self, account: str, spend: Spend, *, create_with: Budget | None = None) -> Spend:
        """Record ``spend`` for ``account`` unless it would exceed the stored total; return once durable."""
        entry = check_spend(spend)
        if self._closed:
            raise RuntimeError("the ledger is closed")
        labelled = replace(entry, label=LABEL_PREFIX.get() + entry.label)
        pending = _Pending(account, labelled, create_with)
        self._put(pending)
        while not pending.done.wait(1.0):
            if not self._writer.is_alive():
                raise RuntimeError("the ledger writer stopped; nothing was recorded or released")
        if pending.error is not None:
            raise pending.error
        return labelled

    async def spend_async(self, account: str, spend: Spend, *, create_with: Budget | None = None) -> Spend:
        """:meth:`spend` for a caller on an event loop: returns once durable (or refused), the
        loop free meanwhile. Cancelling the caller does not withdraw the spend (the safe side)."""
        entry = check_spend(spend)
        if self._closed:
            raise RuntimeError("the ledger is closed")
        labelled = replace(entry, label=LABEL_PREFIX.get() + entry.label)
        pending = _Pending(account, labelled, create_with, future=asyncio.get_running_loop().create_future())
        self._put(pending)
        assert pending.future is not None
        await pending.future
        if pending.error is not None:
            raise pending.error
        return labelled

    def _put(self, pending: _Pending) -> None:
        """Queue ``pending`` for the writer, or refuse it once the writer has stopped (nothing would answer)."""
        with self._stop_lock:
            if self._stopped:
                raise RuntimeError("the ledger writer stopped; nothing was recorded or released")
            self._queue.put(pending)

    def usage(self, account: str) -> Usage:
        return self._read(account)[2]

    def standing(self, account: str) -> tuple[Budget, Usage]:
        """(total, usage) of ``account`` as the writer saw them inside its last committed transaction
        that touched the account: after a ``spend`` returns, that includes the spend (and every row
        committed before it, by any process). No SQLite read: what an answer reports.
        """
        found = self._standings.get(account)
        if found is None:
            return self.total(account), self.usage(account)
        return found

    def total(self, account: str) -> Budget:
        stored = _stored_total(self._reader(), account)
        if stored is None:
            raise ParameterError("account", "an account created in this ledger", account)
        return stored

    def history(self, account: str) -> list[Spend]:
        return list(self._read(account)[1])

    def _read(self, account: str) -> tuple[int, list[Spend], Usage]:
        """(last id, every spend in order, their sums) for ``account``, reading only rows added
        since the last call: the ledger is append-only and ids only grow."""
        with self._history_lock:
            last_id, entries, usage = self._histories.get(account, (0, [], Usage()))
            rows = (
                self._reader()
                .execute(
                    "SELECT id, label, epsilon, delta, rho, selection_delta, tv_distance FROM spends "
                    "WHERE account = ? AND id > ? ORDER BY id",
                    (account, last_id),
                )
                .fetchall()
            )
            if rows:
                added = [Spend(label, float(e), float(d), float(r), float(s), float(t)) for _, label, e, d, r, s, t in rows]
                entries = entries + added
                for item in added:
                    usage = usage.plus(item)
                self._histories[account] = (rows[-1][0], entries, usage)
            return last_id, entries, usage

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
            with self._stop_lock:
                self._stopped = True
            left: list[_Pending] = []  # queued after the stop: refused, and their callers woken
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item.error = RuntimeError("the ledger writer stopped; nothing was recorded or released")
                    left.append(item)
            _wake(left)

    def _committed_usage(self, connection: sqlite3.Connection, account: str) -> Usage:
        """The account's committed sums, inside the write transaction.

        Rows are only appended and ids only grow (AUTOINCREMENT, one writer at a time under the
        write lock), so adding the rows after the last id read to the last sums read is exact,
        whichever process wrote them.
        """
        last_id, usage = self._usages.get(account, (0, Usage()))
        added = _usage(connection, account, last_id)
        if added.records:
            (newest,) = connection.execute("SELECT MAX(id) FROM spends WHERE account = ?", (account,)).fetchone()
            usage = Usage(
                usage.epsilon + added.epsilon,
                usage.delta + added.delta,
                usage.rho + added.rho,
                usage.selection_delta + added.selection_delta,
                usage.records + added.records,
                usage.tv_distance + added.tv_distance,
            )
            self._usages[account] = (int(newest), usage)
        return usage

    def _commit(self, connection: sqlite3.Connection, batch: list[_Pending]) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            spent: dict[str, Usage] = {}
            totals: dict[str, Budget | None] = {}
            rows = []
            now = time.time()
            for item in batch:
                if item.account not in spent or totals[item.account] is None:
                    try:  # re-read: a raise may have landed; store a new account's total
                        totals[item.account] = _created(connection, item.account, item.create_with)
                    except ParameterError as error:
                        item.error = error
                        continue
                    spent[item.account] = self._committed_usage(connection, item.account)
                total, already = totals[item.account], spent[item.account]
                if total is None:
                    item.error = ParameterError("account", "an account created in this ledger", item.account)
                    continue
                after = already.plus(item.spend)
                if not admits(total, after):
                    item.error = refusal(total, already, item.spend, item.account)
                    continue
                spent[item.account] = after
                rows.append(_row(item.account, item.spend, now))
            connection.executemany(_INSERT, rows)
            connection.execute("COMMIT")
            self.batches += 1
            self.records += len(rows)
            for account, usage in spent.items():
                total = totals[account]
                if total is not None:
                    self._standings[account] = (total, usage)
        except BaseException as error:  # the batch is refused as a whole; nothing was recorded
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            for item in batch:
                item.error = RuntimeError(f"the ledger could not record the spend ({type(error).__name__})")
        finally:
            _wake(batch)


def _wake(batch: list[_Pending]) -> None:
    """Tell each waiting caller its spend is decided: set the events of threads, and resolve the
    futures of coroutines with one call into each event loop."""
    futures: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for item in batch:
        if item.future is None:
            item.done.set()
        else:
            futures.setdefault(item.future.get_loop(), []).append(item.future)
    for loop, waiting in futures.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(_resolve, waiting)


def _resolve(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():  # a cancelled caller's future is done already
            future.set_result(None)
