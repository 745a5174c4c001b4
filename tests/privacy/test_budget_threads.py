"""The accountant is atomic in memory as on disk: threads sharing one account never overspend.

The admission check is slowed down (a real sleep inside the real check) to widen the window
between checking and recording: with the two not under one lock, threads overspend every time."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

import dpwitness.privacy.budget
from dpwitness import Accountant, BudgetExceeded, Session

THREADS = 8


@pytest.fixture
def slow_admission(monkeypatch: pytest.MonkeyPatch) -> None:
    admits = dpwitness.privacy.budget.admits

    def slowly(total: dpwitness.privacy.budget.Budget, usage: dpwitness.privacy.budget.Usage) -> bool:
        time.sleep(0.002)  # lets other threads run between the check and the record
        return admits(total, usage)

    monkeypatch.setattr(dpwitness.privacy.budget, "admits", slowly)


def _race(attempt: Callable[[], object], tries: int) -> int:
    """Run ``attempt`` ``tries`` times on each of 8 threads started together; the successes."""
    start = threading.Barrier(THREADS)
    answers: list[object] = []

    def worker() -> None:
        start.wait()
        for _ in range(tries):
            with contextlib.suppress(BudgetExceeded):
                answers.append(attempt())

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(answers)


@pytest.mark.usefixtures("slow_admission")
def test_eight_threads_on_one_session_spend_at_most_the_total() -> None:
    session = Session(pl.DataFrame({"x": list(range(200))}), epsilon=1.0, seed=1)
    answered = _race(lambda: session.count(epsilon=0.05), tries=4)  # 32 asked, 20 fit
    assert answered == 20 == len(session.history) == len(session.releases)
    assert session.spent.epsilon <= 1.0 * (1 + 1e-12)


@pytest.mark.usefixtures("slow_admission")
def test_eight_threads_on_a_bare_accountant_spend_at_most_the_total() -> None:
    accountant = Accountant(1.0)
    answered = _race(lambda: accountant.spend(0.05, "q"), tries=4)
    assert answered == 20 == len(accountant.history)
    assert accountant.spent.epsilon <= 1.0 * (1 + 1e-12)


def test_eight_threads_on_a_ledger_spend_at_most_the_total(tmp_path: Path) -> None:
    ledger = dpwitness.privacy.budget.Ledger(tmp_path / "budget.sqlite")
    accountant = Accountant(1.0, ledger=ledger, account="adult")
    answered = _race(lambda: accountant.spend(0.05, "q"), tries=4)
    assert answered == 20 == len(ledger.history("adult"))
