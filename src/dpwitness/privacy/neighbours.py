"""Neighbour relations and the exact L1 and L2 sensitivities Δ of each query under each.

* add/remove one record (unbounded DP): D' = D ± one record; n is not fixed.
* replace one record (bounded DP): D' = D with one record's values changed; n is fixed and public.

No blanket "×2": each Δ below is derived for its query and relation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_finite


class Neighbours(StrEnum):
    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"

    @classmethod
    def parse(cls, value: str | Neighbours) -> Neighbours:
        """The relation named by ``value`` ("add-remove" or "replace-one", or a :class:`Neighbours`);
        anything else raises ``ParameterError("neighbours", …)``."""
        try:
            return cls(value)
        except ValueError:
            raise ParameterError("neighbours", "'add-remove' or 'replace-one'", value) from None

    @property
    def description(self) -> str:
        if self is Neighbours.ADD_REMOVE:
            return "add/remove one record (n is private)"
        return "replace one record (n is fixed and public)"


#: Largest accepted |L| and |U| of clamping bounds: 2^50 (≈ 1.1e15). With it every Δ, scale
#: and aggregate stays far inside float64: a centred square is ≤ 2^100, and a sum of 2^63
#: clamped values ≤ 2^163, which the sampler releases exactly (big-integer path past 2^61 steps).
MAX_BOUND = 2.0**50


def check_bounds(lower: float, upper: float, parameter: str = "bounds") -> tuple[float, float]:
    """(L, U) with finite L < U and |L|, |U| ≤ 2^50 (:data:`MAX_BOUND`), checked before any spend.

    :param lower: L.
    :param upper: U.
    :param parameter: the parameter named in the error (default "bounds").
    """
    expected = "(L, U) with finite L < U and |L|, |U| ≤ 2^50 (≈ 1.1e15)"
    low = check_finite(parameter, lower, expected)
    high = check_finite(parameter, upper, expected)
    if not low < high or max(abs(low), abs(high)) > MAX_BOUND:
        raise ParameterError(parameter, expected, (lower, upper))
    return low, high


def count_sensitivity(neighbours: Neighbours) -> float:
    """Adding/removing a record moves a count by 1; replacing one cannot move it.

    :param neighbours: the relation: 1 under add/remove, 0 under replace-one.
    """
    return 1.0 if neighbours is Neighbours.ADD_REMOVE else 0.0


def sum_sensitivity(neighbours: Neighbours, lower: float, upper: float) -> float:
    """The textbook Δ of Σ clamp(x, L, U) over a column *without missing values*: max(|L|, |U|)
    for add/remove, U − L for replace-one. A session's sums use :func:`counted_range`, since a
    record that can be missing (or filtered out) adds 0: replace-one then has max(U, 0) − min(L, 0).
    ``lower`` and ``upper`` are L and U (checked by :func:`check_bounds`)."""
    low, high = check_bounds(lower, upper)
    return max(abs(low), abs(high)) if neighbours is Neighbours.ADD_REMOVE else high - low


def histogram_sensitivity(neighbours: Neighbours) -> float:
    """L1 over the bins: one bin moves by 1 (add/remove), or two bins by 1 each (replace).

    :param neighbours: the relation.
    """
    return 1.0 if neighbours is Neighbours.ADD_REMOVE else 2.0


def mean_sensitivity_public_n(lower: float, upper: float, n: int) -> float:
    """(U − L)/n: valid only under replace-one, where n is fixed and public.

    :param lower: L.
    :param upper: U (L < U, checked by :func:`check_bounds`).
    :param n: the public number of records, a whole number ≥ 1.
    """
    low, high = check_bounds(lower, upper)
    check_count("n", n)
    return (high - low) / n


def counted_range(low: float, high: float, *, always_counted: bool) -> tuple[float, float]:
    """The range of a record's term when the record may also be *not counted*: [low, high] ∪ {0}.

    A record adds nothing when it is dropped (a null or NaN value, a row outside the filter or
    outside the declared keys, a null privacy unit), so unless every record is always counted
    its term ranges over [low, high] ∪ {0} = [min(low, 0), max(high, 0)]. Under replace-one
    this is what separates a sum over [50, 100] (Δ = 100, not 50) from the textbook.

    :param always_counted: True only when every record is counted whatever its value (no
        missing values, no filter, no keys to fall outside): then [low, high] itself.
    """
    if always_counted:
        return low, high
    return min(low, 0.0), max(high, 0.0)


def effective_relation(neighbours: Neighbours, *, positional: bool) -> Neighbours:
    """The relation a query's rows move under.

    A row-position filter (``row_number <= 5`` over a declared order) is not record-wise:
    adding one record shifts the positions after it, so one record enters the window and
    another leaves, which moves the rows like replace-one even under add/remove.

    :param neighbours: the declared relation.
    :param positional: whether the query filters on row position; then replace-one.
    """
    return Neighbours.REPLACE_ONE if positional else neighbours


# --- privacy units: a person may own many rows ----------------------------------------------


@dataclass(frozen=True)
class ContributionBound:
    """What one privacy unit can contribute after contribution bounding.

    ``max_rows`` rows in all (the L1 multiplier), touching at most ``max_groups`` groups (L0)
    with at most ``max_rows_per_group`` rows in any one (L∞). Without a privacy unit every row
    is its own unit: one row, one group.
    """

    max_rows: int
    max_groups: int
    max_rows_per_group: int

    @classmethod
    def of(cls, max_contributions: int, max_groups: int | None = None, *, unit: bool = True) -> ContributionBound:
        """k rows per unit in all; or, with ``max_groups`` g, ≤ g groups with ≤ k rows in each (g·k rows).

        :param max_contributions: k, a whole number ≥ 1.
        :param max_groups: g, a whole number ≥ 1, or None (default: a unit may touch k groups).
        :param unit: False when there is no privacy unit: one row, one group (default True).
        """
        for name, value in (("max_contributions", max_contributions), ("max_groups", max_groups)):
            if value is not None:
                check_count(name, value)
        if not unit:
            return cls(1, 1, 1)
        if max_groups is None:
            return cls(max_contributions, max_contributions, max_contributions)
        return cls(max_groups * max_contributions, max_groups, max_contributions)


def row_sensitivity(neighbours: Neighbours, low: float, high: float, *, grouped: bool) -> float:
    """The L1 change one row can cause in Σ t(row), where each row's term t lies in [low, high].

    * add/remove: the row's term appears or vanishes: max(|low|, |high|);
    * replace-one, ungrouped: the term changes within its range: high − low;
    * replace-one, grouped: the row may also move to another group, leaving |t| in one and
      adding |t′| to another: max(high − low, 2·max(|low|, |high|)) = 2·max(|low|, |high|).

    Examples: a count (t = 1) gives 1 / 0 / 2; a sum over [L, U] gives max(|L|, |U|) / U − L /
    2·max(|L|, |U|); a sum centred at (L+U)/2 gives (U−L)/2 / U − L / U − L.

    :param neighbours: the relation.
    :param grouped: whether the output is a vector over keys (a row may change group).
    """
    largest = max(abs(low), abs(high))
    if neighbours is Neighbours.ADD_REMOVE:
        return largest
    if not grouped:
        return high - low
    return max(high - low, 2.0 * largest)


def unit_sensitivity(neighbours: Neighbours, low: float, high: float, bound: ContributionBound, *, grouped: bool) -> float:
    """Δ over a privacy unit: the unit's rows are added/removed (or all replaced) together.

    Each of its ≤ ``bound.max_rows`` kept rows moves the L1 norm by at most
    :func:`row_sensitivity`, so Δ = max_rows × that; no blanket factor beyond it.
    ``neighbours``, ``low``, ``high`` and ``grouped`` are as for :func:`row_sensitivity`.
    """
    return bound.max_rows * row_sensitivity(neighbours, low, high, grouped=grouped)


def unit_l2_sensitivity(
    neighbours: Neighbours, low: float, high: float, bound: ContributionBound, *, grouped: bool, cells: int | None = None
) -> float:
    """The L2 change one privacy unit can cause in the vector (Σ t per key), t in [low, high].

    Ungrouped, the output is one number: L2 Δ = L1 Δ (:func:`unit_sensitivity`). Grouped, a
    unit's kept rows hold ≤ k = ``bound.max_rows_per_group`` rows in any key and ≤ R =
    ``bound.max_rows`` in all, so it fills at most f = ⌈R/k⌉ keys (f = g with ``max_groups``
    g, 1 without), fewer if only ``cells`` keys are declared. With m = max(|low|, |high|):

    * add/remove: the unit's vector appears or vanishes; each key moves ≤ k·m, so the L2 norm
      is ≤ k·m·√f (‖c‖₂ over c_i ≤ k, Σc_i ≤ R is largest with f full keys);
    * replace-one: the old rows leave and the new ones arrive. A key held by one side only
      moves ≤ k·m; a key held by both moves ≤ k·(high − low) (the old rows at one end of the
      range, the new at the other). The squared norm is convex in the rows per key, so its
      maximum puts f full keys on each side, o of them shared: o·(k(high − low))² +
      2(f − o)·(k·m)², largest at o = f or at the fewest shared keys the declared cells
      allow: k·√f·max(high − low, √2·m) with enough keys. For counts (t ∈ [0, 1]) that is
      √2·k·√f; for a sum over [L, U] ∪ {0} with L < 0 < U, k·√f·max(U − L, √2·max(|L|, |U|)).

    Every way a row moves between counted and not counted (null, NaN, a filter, an undeclared
    key, a null unit) is in [low, high] already (:func:`counted_range`); rows outside the
    declared keys are dropped, which only shrinks the vector. ``grouped`` says whether the
    output is a vector over keys; ``cells`` (default None: unlimited) is the number of declared keys.
    """
    if not grouped:
        return unit_sensitivity(neighbours, low, high, bound, grouped=False)
    per = bound.max_rows_per_group
    full = -(-bound.max_rows // per)
    if cells is not None:
        full = min(full, cells)
    largest = max(abs(low), abs(high))
    if neighbours is Neighbours.ADD_REMOVE:
        return per * largest * math.sqrt(full)
    fewest_shared = 0 if cells is None else max(0, 2 * full - cells)
    squares = max(shared * (high - low) ** 2 + 2 * (full - shared) * largest**2 for shared in {fewest_shared, full})
    return per * math.sqrt(squares)


def partition_threshold(*, scale: float, bound: ContributionBound, delta: float) -> tuple[float, float]:
    """Threshold τ on Laplace-noised counts (scale ``scale``) so that undeclared keys cost ``delta``.

    Partition selection (Wilson et al. 2020): a key is released only if its noisy count is
    ≥ τ. Keys present in both neighbours are ε-DP as usual; the risk is a key that only the
    added unit creates. It holds c ≤ max_rows_per_group of the unit's rows and is released with
    probability ½·exp(−(τ − c)/b) (τ ≥ c), so over the ≤ max_groups keys one unit can create,
    with at most max_rows rows in all,

        δ = ½·exp(−τ/b) · max Σ_i exp(c_i/b).

    Σ exp(c_i/b) is convex, so the maximum is at a vertex: as many keys as possible full
    (max_rows_per_group rows), one with the remainder, the rest with one row. Returns (τ, δ).
    ``bound`` is the unit's :class:`ContributionBound`; ``delta`` is strictly between 0 and 1.
    """
    if not (isinstance(delta, float | int) and 0 < delta < 1):
        raise ParameterError("delta", "a number strictly between 0 and 1", delta)
    b = check_finite("scale", scale)
    per = bound.max_rows_per_group
    worst = -math.inf
    for keys in range(1, bound.max_groups + 1):
        extra = bound.max_rows - keys  # rows beyond one per key
        if extra < 0:
            break
        full = keys if per == 1 else min(keys, extra // (per - 1))
        remainder = 0 if per == 1 or full == keys else extra - full * (per - 1)
        sizes = [per] * full + ([1 + remainder] if full < keys else []) + [1] * max(keys - full - 1, 0)
        worst = max(worst, _log_sum_exp([c / b for c in sizes]))
    tau = max(float(per), b * (worst - math.log(2.0 * delta)))
    return tau, min(delta, 0.5 * math.exp(worst - tau / b))  # equal but for float rounding


def _log_sum_exp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


@dataclass(frozen=True)
class PrivateJoinBound:
    """The contribution bounds of an inner equi-join of two private tables that share a privacy unit.

    Both tables carry the unit's column; a neighbour adds or removes one unit's rows in *both*.
    Before the join each side is truncated, in this order (``engines.joins.join_private``):

    1. ≤ ``max_rows_left`` (m_l) rows per unit on the left, ≤ ``max_rows_right`` (m_r) on the
       right: which rows a unit keeps depends only on that unit's rows (the per-unit bounding);
    2. ≤ ``max_rows_per_key_left`` (k_l) rows per join-key value on the left, ≤
       ``max_rows_per_key_right`` (k_r) on the right: the kept rows of a key are its k rows with the
       smallest keyed hash of their content (the unit included), so every row's rank is fixed by
       its own content, whatever other rows the table holds.

    **Claim** (add/remove one unit u): at most M = m_l·k_r + m_r·k_l joined rows leave and at most
    M joined rows enter.

    *Proof.* Step 1 leaves every other unit's rows as they were, and gives u a_v rows of key v on
    the left and b_v on the right, Σ a_v ≤ m_l, Σ b_v ≤ m_r. In step 2, for key v, the rows of
    other units keep their hash ranks, so the kept left set L_v becomes L'_v = L_v − E + A with A
    ⊆ u's a_v rows and E (evicted rows of other units) |E| ≤ |A| ≤ a_v; the same on the right with
    F, B, |F| ≤ |B| ≤ b_v; |L_v|, |L'_v| ≤ k_l and |R_v|, |R'_v| ≤ k_r. The joined rows of key v
    are L_v × R_v. Those that leave are in E × R_v ∪ L_v × F: ≤ a_v·k_r + k_l·b_v; those that
    enter are in A × R'_v ∪ L'_v × B: ≤ a_v·k_r + k_l·b_v. Summed over v: ≤ m_l·k_r + m_r·k_l
    each way. Keys are disjoint, so nothing else moves. ∎

    So the joined rows move as a unit of M rows under replace-one (rows leave *and* enter; a
    count moves by ≤ M, a sum over [L, U] ∪ {0} by ≤ M·(max(U, 0) − min(L, 0))), and a
    replace-one neighbour (u's rows replaced) is two such moves: 2M. The model is Tumult
    Analytics' ``join_private`` with ``TruncationStrategy.DropExcess(k)`` on each side; the bound
    is derived here, not taken from its documentation.
    """

    max_rows_per_key_left: int
    max_rows_per_key_right: int
    max_rows_left: int
    max_rows_right: int
    #: the join's key columns (left, right), for the release's statement
    on: tuple[str, str] = ("", "")

    def __post_init__(self) -> None:
        check_count("max_rows_per_key", self.max_rows_per_key_left)
        check_count("max_rows_per_key", self.max_rows_per_key_right)
        check_count("max_rows_per_unit", self.max_rows_left)
        check_count("max_rows_per_unit", self.max_rows_right)

    def changed_rows(self, neighbours: Neighbours) -> int:
        """M = m_l·k_r + m_r·k_l joined rows leave and M enter when ``neighbours`` is add/remove; twice
        that for replace-one."""
        moved = self.max_rows_left * self.max_rows_per_key_right + self.max_rows_right * self.max_rows_per_key_left
        return moved if neighbours is Neighbours.ADD_REMOVE else 2 * moved

    @property
    def text(self) -> str:
        """The statement a release carries, e.g. ``private join on k = k, ≤ 2/1 row(s) per key …``."""
        m_l, m_r, k_l, k_r = self.max_rows_left, self.max_rows_right, self.max_rows_per_key_left, self.max_rows_per_key_right
        return (
            f"private join on {self.on[0]} = {self.on[1]}, ≤ {k_l}/{k_r} row(s) per key and ≤ {m_l}/{m_r} per unit "
            f"(left/right): one unit moves ≤ {m_l}·{k_r} + {m_r}·{k_l} = {m_l * k_r + m_r * k_l} joined rows each way"
        )
