"""Privacy budgets: (ε, δ) or ρ totals, composition, and the durable SQLite ledger.

Every spend records four numbers (:class:`Spend`):

* ``epsilon``, ``delta``: its (ε, δ)-DP guarantee, added up by *basic composition*
  (Σε, Σδ); ``epsilon`` is ∞ for a release that only has a zCDP guarantee;
* ``rho``: its ρ-zCDP guarantee (a pure ε-DP release is ε²/2-zCDP, Bun–Steinke 2016, Prop. 1.4);
* ``selection_delta``: δ that is *not* zCDP (data-dependent key selection); it adds to the
  δ converted from Σρ (approximate zCDP, Bun–Steinke 2016, §1.2.6);
* ``tv_distance``: for a Gaussian release, the total-variation distance η·c between the noise
  really sampled (integer tables) and the ideal discrete Gaussian whose ρ is recorded; the
  converted δ at ε is charged (1 + e^ε)·Σ tv_distance (a hybrid argument: each release's
  outputs are within that distance of an exactly ρ-zCDP mechanism, on both neighbours).

A total is either (ε, δ) or ρ (with an optional δ for selection). Against an (ε, δ) total a
spend is admitted when the account, spend included, fits by basic composition
(Σε ≤ ε and Σδ ≤ δ) *or* by zCDP composition converted with the tight bound of
Canonne–Kamath–Steinke 2020 (:func:`zcdp_delta`(Σρ, ε) + Σ selection δ + (1 + e^ε)·Σ tv ≤ δ): the better of
the two. Against a ρ total, Σρ ≤ ρ and Σ selection δ ≤ δ. See docs/budget.md for why taking
the better route per spend is sound and when.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.common.validation import check_non_negative_finite, check_positive_finite
from dpwitness.privacy.accounting import pure_dp_rho, zcdp_delta, zcdp_epsilon, zcdp_rho

if TYPE_CHECKING:
    import sqlite3

#: Relative float slack on every budget comparison (sums of floats).
_SLACK = 1e-12


# --- values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """An amount of privacy: ε and δ, and ρ (zCDP). A field that does not apply is ∞ in a total
    (an (ε, δ) total has ρ = ∞, a ρ total has ε = ∞) and is left out of ``str``."""

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0

    def __str__(self) -> str:
        parts = [f"ε = {self.epsilon:g}"] if math.isfinite(self.epsilon) else []
        parts.append(f"δ = {self.delta:g}")
        if self.rho and math.isfinite(self.rho):
            parts.append(f"ρ = {self.rho:g}")
        return ", ".join(parts)

    @property
    def is_zcdp(self) -> bool:
        """True for a ρ total (ε unconstrained, ρ constrained)."""
        return math.isinf(self.epsilon) and math.isfinite(self.rho)

    def to_dict(self) -> dict[str, float | None]:
        """JSON-safe: ∞ (a field that does not apply) becomes None."""
        return {
            k: (v if math.isfinite(v) else None) for k, v in (("epsilon", self.epsilon), ("delta", self.delta), ("rho", self.rho))
        }


@dataclass(frozen=True)
class Spend:
    """One recorded spend: its (ε, δ) for basic composition, its ρ for zCDP composition, and
    the part of δ that is not zCDP (``selection_delta``, from undeclared-key selection)."""

    label: str
    epsilon: float
    delta: float = 0.0
    rho: float = math.nan  # NaN: not given, take ε²/2 (pure ε-DP)
    selection_delta: float = math.nan  # NaN: not given, take δ
    tv_distance: float = 0.0  # a Gaussian's table error η·c: charged (1 + e^ε)·η·c on the zCDP route

    def __post_init__(self) -> None:
        if math.isnan(self.rho):
            object.__setattr__(self, "rho", pure_dp_rho(self.epsilon))
        if math.isnan(self.selection_delta):
            object.__setattr__(self, "selection_delta", self.delta)


@dataclass(frozen=True)
class Usage:
    """The sums over an account's spends: Σε, Σδ (basic) and Σρ, Σ selection δ (zCDP)."""

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    selection_delta: float = 0.0
    records: int = 0
    tv_distance: float = 0.0

    @classmethod
    def of(cls, spends: Iterable[Spend]) -> Usage:
        items = list(spends)
        return cls(
            math.fsum(s.epsilon for s in items),
            math.fsum(s.delta for s in items),
            math.fsum(s.rho for s in items),
            math.fsum(s.selection_delta for s in items),
            len(items),
            math.fsum(s.tv_distance for s in items),
        )

    def plus(self, spend: Spend) -> Usage:
        """These sums with one more spend added (``records`` one higher).

        :param spend: the spend to add, as the account records it.
        """
        return Usage(
            math.fsum((self.epsilon, spend.epsilon)),
            math.fsum((self.delta, spend.delta)),
            math.fsum((self.rho, spend.rho)),
            math.fsum((self.selection_delta, spend.selection_delta)),
            self.records + 1,
            math.fsum((self.tv_distance, spend.tv_distance)),
        )


_FIELDS = ("epsilon", "delta", "rho", "selection_delta", "tv_distance")


class RunningUsage:
    """:meth:`Usage.of` an account's spends kept up to date one spend at a time, in O(1) per spend.

    Each sum is held exactly as Shewchuk's non-overlapping partials (what :func:`math.fsum` keeps
    inside), so the value is bit for bit ``Usage.of`` of every spend so far, however long the
    history; a non-finite amount (ε = ∞ on a ρ account) makes it fall back to ``Usage.of``."""

    def __init__(self) -> None:
        self._partials: list[list[float]] = [[] for _ in _FIELDS]
        self._records = 0
        self._finite = True
        self._value = Usage()

    def add(self, spend: Spend) -> None:
        """Count ``spend`` in."""
        self._records += 1
        amounts = [float(getattr(spend, name)) for name in _FIELDS]
        if not all(math.isfinite(a) for a in amounts):
            self._finite = False
        if self._finite:
            for partials, amount in zip(self._partials, amounts, strict=True):
                _add_exact(partials, amount)
            self._finite = all(math.isfinite(x) for p in self._partials for x in p)  # no overflow on the way
        if self._finite:
            sums = [math.fsum(p) for p in self._partials]
            self._value = Usage(sums[0], sums[1], sums[2], sums[3], self._records, sums[4])

    def value(self, history: Sequence[Spend]) -> Usage:
        """The sums over ``history`` (the spends added, in order)."""
        return self._value if self._finite else Usage.of(history)


def _add_exact(partials: list[float], x: float) -> None:
    """Add ``x`` to the exact sum held as non-overlapping ``partials`` (Shewchuk; Python's msum recipe)."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        high = x + y
        low = y - (high - x)
        if low:
            partials[i] = low
            i += 1
        x = high
    partials[i:] = [x]


def check_total(*, epsilon: float | None = None, delta: float | None = None, rho: float | None = None) -> Budget:
    """A validated total: (``epsilon``, ``delta``) with ε > 0 and 0 ≤ δ < 1, or ``rho`` > 0 with
    0 ≤ δ < 1; not both ε and ρ."""
    if epsilon is not None and rho is not None:
        raise ParameterError("rho", "not given together with epsilon (a total is either (ε, δ) or ρ)", rho)
    if epsilon is None and rho is None:
        raise ParameterError("epsilon", "a total ε (or rho= for a zCDP total)", None)
    total_delta = 0.0 if delta is None else check_non_negative_finite("delta_budget", delta)
    if total_delta >= 1:
        raise ParameterError("delta_budget", "a number in [0, 1)", delta)
    if rho is not None:
        return Budget(math.inf, total_delta, check_positive_finite("rho", rho))
    return Budget(check_positive_finite("epsilon", epsilon), total_delta, math.inf)


def check_spend(spend: Spend) -> Spend:
    """Every number of a spend in range (ε may be ∞ for a zCDP-only release)."""
    if not (spend.epsilon == math.inf or (math.isfinite(spend.epsilon) and spend.epsilon >= 0)):
        raise ParameterError("epsilon", "a finite number ≥ 0", spend.epsilon)
    for name in ("delta", "selection_delta", "tv_distance"):
        value = getattr(spend, name)
        if not (math.isfinite(value) and 0 <= value < 1):
            raise ParameterError(name, "a number in [0, 1)", value)
    if not (math.isfinite(spend.rho) and spend.rho >= 0):
        raise ParameterError("rho", "a finite number ≥ 0", spend.rho)
    return spend


# --- zCDP → (ε, δ): zcdp_delta, zcdp_epsilon and zcdp_rho live in dpwitness.privacy.accounting


# --- composition against a total ---------------------------------------------------------------


def tv_charge(tv_distance: float, epsilon: float) -> float:
    """(1 + e^ε)·Σ tv: what outputs within TV Σ tv of an (ε, δ)-DP mechanism's add to δ at ε.

    :param tv_distance: Σ tv ≥ 0, the summed total-variation distance (0 gives 0).
    :param epsilon: the ε at which δ is charged; above 700 the charge is ∞.
    """
    if tv_distance == 0:
        return 0.0
    return math.inf if epsilon > 700 else (1.0 + math.exp(epsilon)) * tv_distance


def _non_zcdp_delta(usage: Usage, epsilon: float) -> float:
    """The δ on the zCDP route that is not converted from Σρ: selection δ and the tables' TV charge."""
    return usage.selection_delta + tv_charge(usage.tv_distance, epsilon)


def admits(total: Budget, usage: Usage) -> bool:
    """Whether ``usage`` (every spend of the account, the new one included) fits ``total``."""
    if total.is_zcdp:
        return usage.rho <= total.rho * (1 + _SLACK) and usage.selection_delta <= total.delta * (1 + _SLACK)
    basic = usage.epsilon <= total.epsilon * (1 + _SLACK) and usage.delta <= total.delta * (1 + _SLACK)
    other = _non_zcdp_delta(usage, total.epsilon)
    return basic or (other < total.delta and zcdp_delta(usage.rho, total.epsilon) + other <= total.delta * (1 + _SLACK))


def guarantee(total: Budget, usage: Usage) -> Budget:
    """What the account's releases together satisfy: the better of basic composition (Σε, Σδ)
    and zCDP composition (Σρ converted at the total's δ, plus the selection δ); with ρ.

    :param total: the account's total (its δ is the one Σρ is converted at).
    :param usage: the sums over the account's spends.
    """
    basic = Budget(usage.epsilon, usage.delta, usage.rho)
    room = total.delta - usage.selection_delta
    if usage.rho == 0 or room <= 0:
        return basic
    converted = Budget(_converted_epsilon(usage.rho, usage.tv_distance, room), total.delta, usage.rho)
    if total.is_zcdp or converted.epsilon < basic.epsilon or basic.delta > total.delta:
        return converted
    return basic


def _converted_epsilon(rho: float, tv_distance: float, room: float) -> float:
    """The smallest ε (rounded up) with zcdp_delta(ρ, ε) + (1 + e^ε)·tv ≤ room (∞ if none is found).

    ε grows as the room left for zcdp_delta shrinks by the charge at the last ε; the charge is
    ≈ 10^-14 per release, so this settles in a step or two. Each candidate is confirmed exactly."""
    target = room
    for _ in range(60):
        if target <= 0:
            return math.inf
        epsilon = zcdp_epsilon(rho, target)
        if math.isinf(epsilon) or tv_distance == 0:  # no finite ε, or zcdp_epsilon's own answer holds
            return epsilon
        charge = tv_charge(tv_distance, epsilon)
        if zcdp_delta(rho, epsilon) + charge <= room:
            return epsilon
        target = room - charge * (1 + 1e-6)
    return math.inf


def remaining(total: Budget, usage: Usage) -> Budget:
    """What one more release could still spend: ε (the most a pure ε-DP release could take by
    either route), δ (the most selection δ), ρ (the most zCDP ρ).

    On a ρ total the account is kept in ρ: ε does not apply (∞, shown as nothing and as null in
    JSON, as for the total and for what is spent, whose ε is ∞ without a δ to convert at), so
    no ε is ever reported beside ρ that the account's ε figures could not back. A Laplace
    release of ε fits while ε²/2 ≤ the ρ left.

    :param total: the account's total budget.
    :param usage: the sums over the spends recorded so far.
    """
    if total.is_zcdp:
        rho_left = max(total.rho - usage.rho, 0.0)
        return Budget(math.inf, max(total.delta - usage.selection_delta, 0.0), rho_left)
    if math.isinf(total.epsilon):  # an unlimited accountant
        return Budget(math.inf, max(total.delta - usage.delta, 0.0), math.inf)
    basic_ok = usage.epsilon <= total.epsilon * (1 + _SLACK) and usage.delta <= total.delta * (1 + _SLACK)
    epsilon_basic = max(total.epsilon - usage.epsilon, 0.0) if basic_ok else 0.0
    room = total.delta - _non_zcdp_delta(usage, total.epsilon)
    rho_left = max(zcdp_rho(total.epsilon, room) - usage.rho, 0.0) if room > 0 else 0.0
    epsilon_left = max(epsilon_basic, math.sqrt(2 * rho_left))
    delta_left = max(total.delta - max(usage.delta if basic_ok else 0.0, usage.selection_delta), 0.0)
    return Budget(epsilon_left, delta_left, rho_left)


def refusal(total: Budget, usage: Usage, spend: Spend, account: str | None = None) -> BudgetExceeded:
    """The :class:`BudgetExceeded` for a spend that does not fit (no data values in it).

    :param total: the account's total budget, quoted in the message.
    :param usage: the sums over the spends recorded before this one.
    :param spend: the refused spend.
    :param account: the account's name, quoted in the message; None (default) names none.
    """
    left = remaining(total, usage)
    if not (total.is_zcdp or total.delta > 0):  # ρ is never shown beside a pure-ε total
        asked, left = Budget(spend.epsilon, spend.delta, 0.0), Budget(left.epsilon, left.delta, 0.0)
    else:
        asked = Budget(spend.epsilon, spend.delta, spend.rho)
    whose = f" for {account!r}" if account is not None else ""
    return BudgetExceeded(f"asked for {asked} but only {left} remains of {total}{whose}; nothing was released")


# --- in memory or on a ledger --------------------------------------------------------------------


class Accountant:
    """Tracks an account's spends against its total; refuses a spend that would exceed it.

    In memory by default (``Accountant(1.0)``: ε = 1, δ = 0; ``Accountant()``: unlimited). With
    ``ledger`` (a :class:`Ledger`) the total lives in the ledger: given, it must equal the
    stored one; omitted, the stored account continues. A new account is stored with its total
    in the same transaction as its first spend (or by :meth:`raise_budget`), so a run that fails
    before spending leaves nothing behind. Every spend is recorded durably before it counts.
    Admission and recording are atomic: in memory under one lock (threads sharing a session
    never overspend together), on a ledger inside one SQLite transaction (processes too).
    The total is ``total_epsilon`` with an optional total ``delta``, or ``rho`` (a zCDP total);
    ``account`` names the ledger's account. A spend (:meth:`spend`) charges ``epsilon`` (and its
    ``delta``, ``rho``) under a ``label`` that the history and the ledger keep; :meth:`raise_budget`
    takes the new ``epsilon``, ``delta`` or ``rho`` of the total, recorded under its ``label``.
    """

    def __init__(
        self,
        total_epsilon: float | None = None,
        *,
        delta: float | None = None,
        rho: float | None = None,
        ledger: Ledger | None = None,
        account: str = "default",
    ) -> None:
        self.ledger = ledger
        self.account = account
        self._history: list[Spend] = []
        self._usage = RunningUsage()  # Usage.of(self._history), kept up to date
        self._lock = threading.Lock()  # admission and recording of one spend are one step
        self._pending: Budget | None = None  # a new account's total, stored with its first spend
        if ledger is not None:
            wanted = None if total_epsilon is None and rho is None else check_total(epsilon=total_epsilon, delta=delta, rho=rho)
            stored = ledger.open_account(account, wanted, delta_given=delta is not None, create=False)
            if stored is None:
                assert wanted is not None  # open_account refuses a new account without a total
                self._pending = wanted
            self._total: Budget = wanted if stored is None else stored  # type: ignore[assignment]
            if wanted is None and delta is not None:  # continuing, with a δ named: it must be the stored one
                _check_same_total(
                    account, self._total, replace(self._total, delta=check_total(epsilon=1, delta=delta).delta), delta_given=True
                )
        elif total_epsilon is None and rho is None:
            self._total = Budget(math.inf, math.inf if delta is None else check_total(epsilon=1, delta=delta).delta, math.inf)
        else:
            self._total = check_total(epsilon=total_epsilon, delta=delta, rho=rho)

    @property
    def total(self) -> Budget:
        if self.ledger is not None and not self._is_pending():
            self._total = self.ledger.total(self.account)
        return self._total

    def _is_pending(self) -> bool:
        """True while this accountant's new account is not yet in the ledger."""
        if self._pending is not None and self.ledger is not None and self.ledger.has_account(self.account):
            _check_same_total(self.account, self.ledger.total(self.account), self._pending, delta_given=True)
            self._pending = None  # another session created it meanwhile, with the same total
        return self._pending is not None

    @property
    def usage(self) -> Usage:
        if self.ledger is not None:
            return self.ledger.usage(self.account)
        return self._usage.value(self._history)

    @property
    def spent(self) -> Budget:
        """What the releases so far satisfy together (the better of basic and zCDP composition)."""
        return guarantee(self.total, self.usage)

    @property
    def remaining(self) -> Budget:
        return remaining(self.total, self.usage)

    @property
    def history(self) -> list[Spend]:
        if self.ledger is not None:
            return self.ledger.history(self.account)
        return list(self._history)

    @property
    def history_length(self) -> int:
        """``len(self.history)``, without copying the history when it is held in memory."""
        if self.ledger is not None:
            return len(self.ledger.history(self.account))
        return len(self._history)

    def check(self, spend: Spend) -> None:
        """Raise :class:`BudgetExceeded` if ``spend`` would not fit; records nothing."""
        self.check_all([spend])

    def check_all(self, spends: Iterable[Spend]) -> None:
        """Raise :class:`BudgetExceeded` unless all of ``spends`` together fit; records nothing."""
        total, usage = self.total, self.usage
        for spend in spends:
            usage = usage.plus(check_spend(spend))
            if not admits(total, usage):
                raise refusal(total, self.usage, spend, self.account if self.ledger else None)

    def spend(
        self,
        epsilon: float,
        label: str = "release",
        *,
        delta: float = 0.0,
        rho: float | None = None,
        selection_delta: float | None = None,
        tv_distance: float = 0.0,
    ) -> Spend:
        """Record a release's cost (ε = 0 allowed: a Δ = 0 release costs nothing).

        ``rho`` defaults to ε²/2 (pure ε-DP) and ``selection_delta`` to ``delta`` (δ from key
        selection); a Gaussian release passes its own ρ, ``selection_delta=0`` and its tables'
        ``tv_distance`` (:attr:`dpwitness.Gaussian.tv_spent`).
        """
        entry = _entry(epsilon, label, delta=delta, rho=rho, selection_delta=selection_delta, tv_distance=tv_distance)
        with self._lock:
            if self.ledger is not None:
                recorded = self.ledger.spend(self.account, entry, create_with=self._pending)
                self._pending = None
                return recorded
            before = self._usage.value(self._history)
            if not admits(self._total, before.plus(entry)):
                raise refusal(self._total, before, entry)
            self._history.append(entry)
            self._usage.add(entry)
            return entry

    async def spend_async(
        self,
        epsilon: float,
        label: str = "release",
        *,
        delta: float = 0.0,
        rho: float | None = None,
        selection_delta: float | None = None,
        tv_distance: float = 0.0,
    ) -> Spend:
        """:meth:`spend` for an event loop: on a ledger, :meth:`Ledger.spend_async` is awaited (the loop
        runs other tasks until the spend is durable, or refused); in memory, :meth:`spend` (no wait).
        ``epsilon``, ``label``, ``delta``, ``rho``, ``selection_delta`` and ``tv_distance`` as for :meth:`spend`."""
        if self.ledger is None:
            return self.spend(epsilon, label, delta=delta, rho=rho, selection_delta=selection_delta, tv_distance=tv_distance)
        entry = _entry(epsilon, label, delta=delta, rho=rho, selection_delta=selection_delta, tv_distance=tv_distance)
        pending = self._pending  # a new account's total is stored with its first spend (either path)
        recorded = await self.ledger.spend_async(self.account, entry, create_with=pending)
        if pending is not None:
            with self._lock:
                self._pending = None
        return recorded

    def raise_budget(
        self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None, label: str = "raise"
    ) -> Budget:
        """Raise the total (each given field to its new, not smaller, value); on a ledger this
        is recorded as its own event. Returns the new total."""
        with self._lock:
            if self.ledger is not None:
                if self._is_pending():
                    assert self._pending is not None
                    self.ledger.open_account(self.account, self._pending)
                    self._pending = None
                self._total = self.ledger.raise_budget(self.account, epsilon=epsilon, delta=delta, rho=rho, label=label)
            else:
                self._total = raised(self._total, epsilon=epsilon, delta=delta, rho=rho)
            return self._total


def _entry(
    epsilon: float, label: str, *, delta: float, rho: float | None, selection_delta: float | None, tv_distance: float
) -> Spend:
    """The checked :class:`Spend` of :meth:`Accountant.spend`'s arguments."""
    amount = 0.0 if epsilon == 0 else (math.inf if epsilon == math.inf else check_positive_finite("epsilon", epsilon))
    return check_spend(
        Spend(
            label,
            amount,
            delta,
            math.nan if rho is None else rho,
            math.nan if selection_delta is None else selection_delta,
            tv_distance,
        )
    )


def raised(current: Budget, *, epsilon: float | None, delta: float | None, rho: float | None) -> Budget:
    """``current`` with the given fields (``epsilon``, ``delta``, ``rho``) raised; each must be ≥ its
    current value and of the total's kind."""
    if epsilon is None and delta is None and rho is None:
        raise ParameterError("raise_budget", "at least one of epsilon, delta, rho", None)
    new_epsilon, new_delta, new_rho = current.epsilon, current.delta, current.rho
    if epsilon is not None:
        if current.is_zcdp:
            raise ParameterError("epsilon", "not given for an account whose total is ρ (raise rho instead)", epsilon)
        new_epsilon = check_positive_finite("epsilon", epsilon)
    if rho is not None:
        if not current.is_zcdp:
            raise ParameterError("rho", "not given for an account whose total is (ε, δ) (raise epsilon instead)", rho)
        new_rho = check_positive_finite("rho", rho)
    if delta is not None:
        new_delta = check_total(epsilon=1.0, delta=delta).delta
    for name, old, new in (
        ("epsilon", current.epsilon, new_epsilon),
        ("delta", current.delta, new_delta),
        ("rho", current.rho, new_rho),
    ):
        if new < old:
            raise ParameterError(name, f"at least the current total {old:g} (a budget can only be raised)", new)
    return Budget(new_epsilon, new_delta, new_rho)


class Ledger:
    """A durable, shared budget ledger in SQLite (WAL, fsync on commit).

    Tables: ``accounts`` (each account's total, stored when it is created), ``spends`` (one row
    per release: ε, δ, ρ, selection δ) and ``budget_events`` (creation and every explicit
    raise). Every spend is written and committed *before* the caller releases anything, inside
    one ``BEGIN IMMEDIATE`` transaction that re-reads the account's total and spends:
    concurrent processes on one file therefore never overspend together, and a crash after
    the commit loses no record (at worst a budget unit is spent for a release never returned).
    Files written before totals and δ were recorded are migrated on open (their spends count
    δ = 0, ρ = ε²/2: that schema recorded only ε). ``path`` is the SQLite file (created if
    absent). :meth:`raise_budget` sets an account's new ``epsilon``, ``delta`` or ``rho`` (never
    lower), recorded as an event under its ``label``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS spends (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, "
                "label TEXT NOT NULL, epsilon REAL NOT NULL, at REAL NOT NULL, delta REAL NOT NULL DEFAULT 0, "
                "rho REAL, selection_delta REAL NOT NULL DEFAULT 0, tv_distance REAL NOT NULL DEFAULT 0)"
            )
            columns = {row[1] for row in connection.execute("PRAGMA table_info(spends)")}
            for name, declaration in (
                ("delta", "REAL NOT NULL DEFAULT 0"),
                ("rho", "REAL"),
                ("selection_delta", "REAL NOT NULL DEFAULT 0"),
                ("tv_distance", "REAL NOT NULL DEFAULT 0"),  # added with the Gaussian's table charge
            ):
                if name not in columns:  # a ledger written by the ε-only schema
                    connection.execute(f"ALTER TABLE spends ADD COLUMN {name} {declaration}")
            if "rho" not in columns:  # the old rows were pure ε-DP releases: ρ = ε²/2
                connection.execute("UPDATE spends SET rho = epsilon * epsilon / 2 WHERE rho IS NULL")
            connection.execute("CREATE INDEX IF NOT EXISTS spends_account ON spends(account)")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS accounts (account TEXT PRIMARY KEY, epsilon REAL, delta REAL NOT NULL, "
                "rho REAL, created REAL NOT NULL)"
            )
            connection.execute(
                "CREATE TABLE IF NOT EXISTS budget_events (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, "
                "kind TEXT NOT NULL, label TEXT NOT NULL, epsilon REAL, delta REAL NOT NULL, rho REAL, at REAL NOT NULL)"
            )
            connection.execute("COMMIT")
        finally:
            connection.close()

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # here: a session without a durable ledger never loads it (docs/benchmarks.md, memory)

        connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        return connection

    # --- totals ----------------------------------------------------------------------------
    def open_account(self, account: str, total: Budget | None, *, delta_given: bool = True, create: bool = True) -> Budget | None:
        """The account's stored total; ``total`` must equal it (ParameterError naming the field,
        the stored value and how to raise it) or, for a new account, is stored (``create``;
        otherwise None is returned and :meth:`spend` stores it with the first spend).
        ``delta_given=False``: the caller did not name a δ, so the stored δ is kept."""
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            stored = _stored_total(connection, account)
            if stored is None:
                if total is None:
                    connection.execute("ROLLBACK")
                    raise ParameterError(
                        "epsilon", f"a total for the new ledger account {account!r} (e.g. epsilon=1, or --budget)", None
                    )
                if not create:
                    connection.execute("ROLLBACK")
                    return None
                _write_total(connection, account, total, "open", "created")
                connection.execute("COMMIT")
                return total
            connection.execute("ROLLBACK")
        finally:
            connection.close()
        if total is not None:
            _check_same_total(account, stored, total, delta_given=delta_given)
        return stored

    def has_account(self, account: str) -> bool:
        with closing(self._connect()) as connection:
            return _stored_total(connection, account) is not None

    def total(self, account: str) -> Budget:
        with closing(self._connect()) as connection:
            stored = _stored_total(connection, account)
        if stored is None:
            raise ParameterError("account", "an account created in this ledger", account)
        return stored

    def raise_budget(
        self,
        account: str,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        label: str = "raise",
    ) -> Budget:
        """Raise the account's stored total; recorded in ``budget_events``. Returns the new total."""
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            stored = _stored_total(connection, account)
            if stored is None:
                connection.execute("ROLLBACK")
                raise ParameterError("account", "an account created in this ledger", account)
            try:
                new = raised(stored, epsilon=epsilon, delta=delta, rho=rho)
            except ParameterError:
                connection.execute("ROLLBACK")
                raise
            _write_total(connection, account, new, "raise", label)
            connection.execute("COMMIT")
        finally:
            connection.close()
        return new

    def events(self, account: str) -> list[tuple[str, str, Budget]]:
        """(kind, label, total after it) for the account's creation and every raise, in order."""
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT kind, label, epsilon, delta, rho FROM budget_events WHERE account = ? ORDER BY id", (account,)
            ).fetchall()
        return [(kind, label, _budget(e, d, r)) for kind, label, e, d, r in rows]

    # --- spends ----------------------------------------------------------------------------
    def spend(self, account: str, spend: Spend, *, create_with: Budget | None = None) -> Spend:
        """Atomically record ``spend`` for ``account`` unless it would exceed the stored total
        (``create_with``: the total of a new account, stored in the same transaction)."""
        entry = check_spend(spend)
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                total = _created(connection, account, create_with)
            except ParameterError:
                connection.execute("ROLLBACK")
                raise
            usage = _usage(connection, account)
            if total is None or not admits(total, usage.plus(entry)):
                connection.execute("ROLLBACK")
                if total is None:
                    raise ParameterError("account", "an account created in this ledger", account)
                raise refusal(total, usage, entry, account)
            connection.execute(_INSERT, _row(account, entry, time.time()))
            connection.execute("COMMIT")
        finally:
            connection.close()
        return entry

    async def spend_async(self, account: str, spend: Spend, *, create_with: Budget | None = None) -> Spend:
        """:meth:`spend` (``spend`` for ``account``, ``create_with`` a new account's total), awaitable:
        here in a worker thread (the event loop is not blocked by the commit);
        :class:`dpwitness.serve.ledger.GroupCommitLedger` resolves it from its writer thread."""
        import asyncio  # here, as sqlite3 above: only the service awaits a spend

        return await asyncio.to_thread(self.spend, account, spend, create_with=create_with)

    def usage(self, account: str) -> Usage:
        with closing(self._connect()) as connection:
            return _usage(connection, account)

    def spent(self, account: str) -> Budget:
        """The account's spends composed (see :func:`guarantee`)."""
        return guarantee(self.total(account), self.usage(account))

    def history(self, account: str) -> list[Spend]:
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT label, epsilon, delta, rho, selection_delta, tv_distance FROM spends WHERE account = ? ORDER BY id",
                (account,),
            ).fetchall()
        return [Spend(label, float(e), float(d), float(r), float(s), float(t)) for label, e, d, r, s, t in rows]


_INSERT = (
    "INSERT INTO spends (account, label, epsilon, delta, rho, selection_delta, tv_distance, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(account: str, spend: Spend, at: float) -> tuple[str, str, float, float, float, float, float, float]:
    return (account, spend.label, spend.epsilon, spend.delta, spend.rho, spend.selection_delta, spend.tv_distance, at)


def _usage(connection: sqlite3.Connection, account: str, after_id: int = 0) -> Usage:
    row = connection.execute(
        "SELECT COALESCE(SUM(epsilon), 0), COALESCE(SUM(delta), 0), COALESCE(SUM(rho), 0), "
        "COALESCE(SUM(selection_delta), 0), COUNT(*), COALESCE(SUM(tv_distance), 0) FROM spends WHERE account = ? AND id > ?",
        (account, after_id),
    ).fetchone()
    return Usage(float(row[0]), float(row[1]), float(row[2]), float(row[3]), int(row[4]), float(row[5]))


def _budget(epsilon: float | None, delta: float, rho: float | None) -> Budget:
    return Budget(math.inf if epsilon is None else float(epsilon), float(delta), math.inf if rho is None else float(rho))


def _stored_total(connection: sqlite3.Connection, account: str) -> Budget | None:
    row = connection.execute("SELECT epsilon, delta, rho FROM accounts WHERE account = ?", (account,)).fetchone()
    return None if row is None else _budget(*row)


def _created(connection: sqlite3.Connection, account: str, create_with: Budget | None) -> Budget | None:
    """The stored total, after storing ``create_with`` for a new account (inside a transaction)."""
    stored = _stored_total(connection, account)
    if create_with is None:
        return stored
    if stored is None:
        _write_total(connection, account, create_with, "open", "created")
        return create_with
    _check_same_total(account, stored, create_with, delta_given=True)
    return stored


def _write_total(connection: sqlite3.Connection, account: str, total: Budget, kind: str, label: str) -> None:
    epsilon = total.epsilon if math.isfinite(total.epsilon) else None
    rho = total.rho if math.isfinite(total.rho) else None
    now = time.time()
    connection.execute(
        "INSERT INTO accounts (account, epsilon, delta, rho, created) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(account) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta, rho = excluded.rho",
        (account, epsilon, total.delta, rho, now),
    )
    connection.execute(
        "INSERT INTO budget_events (account, kind, label, epsilon, delta, rho, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (account, kind, label, epsilon, total.delta, rho, now),
    )


#: The raise_budget argument that raises each total field.
_RAISED = {"epsilon": "epsilon", "rho": "rho", "delta_budget": "delta"}


def _check_same_total(account: str, stored: Budget, wanted: Budget, *, delta_given: bool) -> None:
    fields = [("epsilon", stored.epsilon, wanted.epsilon), ("rho", stored.rho, wanted.rho)]
    if delta_given:
        fields.append(("delta_budget", stored.delta, wanted.delta))
    for name, old, new in fields:
        if old != new and not (math.isfinite(old) and math.isfinite(new) and math.isclose(old, new, rel_tol=_SLACK)):
            shown = "none (the account's total is " + str(stored) + ")" if not math.isfinite(old) else f"{old:g}"
            raise ParameterError(
                name,
                f"the total stored in the ledger for account {account!r}, {shown} "
                f"(omit it to continue the account; raise it explicitly with raise_budget({_RAISED[name]}=…))",
                new if math.isfinite(new) else None,
            )


__all__ = [
    "Accountant",
    "Budget",
    "Ledger",
    "Spend",
    "Usage",
    "admits",
    "check_total",
    "guarantee",
    "remaining",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
]
