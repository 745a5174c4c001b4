"""One query description: validation, and the exact Δ of every noisy part per relation × privacy unit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwitness import ParameterError
from dpwitness.privacy.neighbours import ContributionBound, Neighbours, partition_threshold, row_sensitivity, unit_sensitivity
from dpwitness.query.queries import Aggregate, Query

AR, R1 = "add-remove", "replace-one"

# (statistic, options, relation, k (rows per unit), expected {aggregate: Δ}) over ages in [0, 100]
# or [50, 100]. Each line is derived by hand in docs/statistics.md; nothing is a blanket ×2.
TABLE = [
    ("count", {}, AR, 1, {"count": 1}),
    ("count", {}, R1, 1, {"count": 0}),
    ("count", {}, AR, 5, {"count": 5}),
    ("count", {}, R1, 5, {"count": 5}),  # a unit's rows are dropped when its id is null: rows count 0 or 1
    ("sum", {"bounds": (0, 100)}, AR, 1, {"sum": 100}),
    ("sum", {"bounds": (0, 100)}, R1, 1, {"sum": 100}),
    ("sum", {"bounds": (50, 100)}, R1, 1, {"sum": 100}),  # a null ↔ a value: [50, 100] ∪ {0}, not U − L = 50
    ("sum", {"bounds": (-80, -20)}, R1, 1, {"sum": 80}),
    ("sum", {"bounds": (50, 100)}, R1, 3, {"sum": 300}),
    ("sum", {"bounds": (-30, 10)}, AR, 1, {"sum": 30}),
    ("sum", {"bounds": (-30, 10)}, AR, 3, {"sum": 90}),
    ("sum", {"bounds": (-30, 10)}, R1, 3, {"sum": 120}),
    ("mean", {"bounds": (0, 100)}, AR, 1, {"count": 1, "centred_sum": 50}),
    ("mean", {"bounds": (0, 100)}, AR, 4, {"count": 4, "centred_sum": 200}),
    ("mean", {"bounds": (0, 100)}, R1, 1, {"count": 1, "centred_sum": 100}),  # n counts non-null values: private
    ("mean", {"bounds": (0, 100)}, R1, 4, {"count": 4, "centred_sum": 400}),
    ("variance", {"bounds": (0, 100)}, AR, 1, {"count": 1, "centred_sum": 50, "centred_squares": 2500}),
    ("variance", {"bounds": (0, 100)}, R1, 1, {"count": 1, "centred_sum": 100, "centred_squares": 2500}),
    ("variance", {"bounds": (0, 100)}, AR, 2, {"count": 2, "centred_sum": 100, "centred_squares": 5000}),
    ("histogram", {"column": "g"}, AR, 1, {"count": 1}),
    ("histogram", {"column": "g"}, R1, 1, {"count": 2}),
    ("histogram", {"column": "g"}, AR, 3, {"count": 3}),
    ("histogram", {"column": "g"}, R1, 3, {"count": 6}),
    ("count", {"by": ("g",), "keys": ("a", "b")}, AR, 1, {"count": 1}),
    ("count", {"by": ("g",), "keys": ("a", "b")}, R1, 1, {"count": 2}),
    ("sum", {"bounds": (0, 100), "by": ("g",), "keys": ("a", "b")}, AR, 1, {"sum": 100}),
    ("sum", {"bounds": (0, 100), "by": ("g",), "keys": ("a", "b")}, R1, 1, {"sum": 200}),
    ("sum", {"bounds": (50, 100), "by": ("g",), "keys": ("a", "b")}, R1, 1, {"sum": 200}),  # moving key: 100 out, 100 in
    ("sum", {"bounds": (0, 100), "by": ("g",)}, AR, 2, {"count": 2, "sum": 200}),  # undeclared: a noisy count picks keys
    ("mean", {"bounds": (0, 100), "by": ("g",), "keys": ("a",)}, AR, 1, {"count": 1, "centred_sum": 50}),
    ("mean", {"bounds": (0, 100), "by": ("g",), "keys": ("a",)}, R1, 1, {"count": 2, "centred_sum": 100}),
    ("mean", {"bounds": (0, 100), "by": ("g",)}, R1, 3, {"count": 6, "centred_sum": 300}),
]


@pytest.mark.parametrize(("statistic", "options", "relation", "k", "expected"), TABLE)
def test_sensitivity_table(statistic: str, options: dict[str, object], relation: str, k: int, expected: dict[str, float]) -> None:
    column = options.pop("column", "x") if statistic != "count" else None
    query = Query(
        statistic=statistic,  # type: ignore[arg-type]
        column=column,  # type: ignore[arg-type]
        epsilon=1.0,
        neighbours=relation,  # type: ignore[arg-type]
        privacy_unit="pid" if k > 1 else None,
        max_contributions=k,
        **options,  # type: ignore[arg-type]
    )
    options.setdefault("column", column)
    assert {p.aggregate.value: p.sensitivity for p in query.parts} == expected
    assert math.fsum(p.share for p in query.parts) == pytest.approx(1.0)


def test_max_groups_bounds_groups_and_rows() -> None:
    query = Query(statistic="histogram", column="g", epsilon=1, privacy_unit="pid", max_contributions=3, max_groups=2)
    (part,) = query.parts
    assert part.sensitivity == 6 and part.changed_coordinates == 2
    ungrouped = Query(statistic="count", epsilon=1, privacy_unit="pid", max_contributions=3, max_groups=2)
    assert ungrouped.parts[0].sensitivity == 3  # max_groups only matters for grouped queries
    assert (
        Query(statistic="histogram", column="g", epsilon=1, keys=("a",), privacy_unit="p", max_contributions=9)
        .parts[0]
        .changed_coordinates
        == 1
    )


def test_replace_one_counts_of_non_null_values_are_not_free() -> None:
    """Replace-one may turn a null into a value: the count of non-null values (the n of a mean)
    moves by 1 per row, so it is not public and Δ = k, not 0. Only a count of all rows is fixed."""
    assert Query(statistic="count", epsilon=1, neighbours=R1).parts[0].sensitivity == 0
    assert Query(statistic="count", column="x", epsilon=1, neighbours=R1).parts[0].sensitivity == 1
    unit = Query(statistic="count", epsilon=1, neighbours=R1, privacy_unit="pid", max_contributions=3)
    assert unit.parts[0].sensitivity == 3  # rows with a null pid are dropped
    for statistic in ("mean", "variance"):
        query = Query(statistic=statistic, column="x", bounds=(0, 10), epsilon=1, neighbours=R1)  # type: ignore[arg-type]
        assert query.parts[0].aggregate is Aggregate.COUNT and query.parts[0].sensitivity == 1


def test_replace_one_grouped_parts_charge_the_keys_left_and_the_keys_joined() -> None:
    """Replacing a unit empties ≤ g keys and fills ≤ g others: 2g coordinates move, not g."""
    declared = Query(statistic="count", by=("g",), keys=("a", "b", "c"), epsilon=1, neighbours=R1)
    assert declared.parts[0].changed_coordinates == 2
    assert Query(statistic="count", by=("g",), keys=("a", "b", "c"), epsilon=1).parts[0].changed_coordinates == 1
    bounded = Query(
        statistic="histogram", column="g", epsilon=1, neighbours=R1, privacy_unit="pid", max_contributions=3, max_groups=2
    )
    assert bounded.parts[0].changed_coordinates == 4
    single = Query(statistic="histogram", column="g", keys=("a",), epsilon=1, neighbours=R1)
    assert single.parts[0].changed_coordinates == 1  # never more than the declared keys


def test_row_sensitivity_rules() -> None:
    assert row_sensitivity(Neighbours.ADD_REMOVE, -3, 2, grouped=False) == 3
    assert row_sensitivity(Neighbours.REPLACE_ONE, -3, 2, grouped=False) == 5
    assert row_sensitivity(Neighbours.REPLACE_ONE, -3, 2, grouped=True) == 6
    bound = ContributionBound.of(4)
    assert unit_sensitivity(Neighbours.ADD_REMOVE, 0, 10, bound, grouped=True) == 40
    assert ContributionBound.of(4, 3) == ContributionBound(12, 3, 4)
    assert ContributionBound.of(4, unit=False) == ContributionBound(1, 1, 1)


def test_a_wrong_sensitivity_would_be_caught() -> None:
    """The table's add/remove mean Δ is not the replace-one one: a test that mixed them would fail."""
    ar = Query(statistic="mean", column="x", bounds=(0, 100), epsilon=1)
    r1 = Query(statistic="mean", column="x", bounds=(0, 100), epsilon=1, neighbours="replace-one")
    assert [p.sensitivity for p in ar.parts] != [p.sensitivity for p in r1.parts]


def test_split_and_aggregates() -> None:
    query = Query(statistic="mean", column="x", bounds=(0, 10), epsilon=2.0, split=(1, 3))
    assert [query.epsilon_of(p) for p in query.parts] == [0.5, 1.5]
    assert query.aggregates == (Aggregate.COUNT, Aggregate.CENTRED_SUM)
    assert query.centre == 5 and query.half_range == 5
    replace_one = Query(statistic="mean", column="x", bounds=(0, 10), epsilon=1, neighbours="replace-one")
    assert [p.aggregate for p in replace_one.parts] == [Aggregate.COUNT, Aggregate.CENTRED_SUM]
    assert Query(statistic="sum", column="x", bounds=(0, 1), epsilon=1).aggregates == (Aggregate.COUNT, Aggregate.SUM)
    assert query.to_dict()["parts"][1] == {"aggregate": "centred_sum", "epsilon": 1.5, "sensitivity": 5.0, "l2_sensitivity": 5.0}


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"statistic": "median", "column": "x"}, "statistic"),
        ({"statistic": "sum", "column": "x", "bounds": (5, 5)}, "bounds"),
        ({"statistic": "sum", "column": "x", "bounds": (9, 1)}, "bounds"),
        ({"statistic": "sum", "column": "x", "bounds": (float("nan"), 1)}, "bounds"),
        ({"statistic": "sum", "column": "x", "bounds": (0, float("inf"))}, "bounds"),
        ({"statistic": "mean", "column": "x"}, "bounds"),
        ({"statistic": "sum", "bounds": (0, 1)}, "column"),
        ({"statistic": "count", "epsilon": 0}, "epsilon"),
        ({"statistic": "count", "epsilon": -1}, "epsilon"),
        ({"statistic": "count", "epsilon": float("nan")}, "epsilon"),
        ({"statistic": "count", "neighbours": "swap"}, "neighbours"),
        ({"statistic": "count", "keys": ("a",)}, "keys"),
        ({"statistic": "count", "by": ("g",), "keys": ()}, "keys"),
        ({"statistic": "count", "by": ("g",), "keys": ("a", "a")}, "keys"),
        ({"statistic": "count", "by": ("g", "h"), "keys": ("a",)}, "keys"),
        ({"statistic": "count", "max_contributions": 3}, "max_contributions"),
        ({"statistic": "count", "privacy_unit": "p", "max_contributions": 0}, "max_contributions"),
        ({"statistic": "count", "max_groups": 2}, "max_groups"),
        ({"statistic": "mean", "column": "x", "bounds": (0, 1), "split": (1,)}, "split"),
        ({"statistic": "mean", "column": "x", "bounds": (0, 1), "split": (1, -1)}, "split"),
        ({"statistic": "histogram", "column": "x", "by": ("g",)}, "by"),
        ({"statistic": "count", "by": ("g",), "delta": 0}, "delta"),
    ],
)
def test_bad_parameters_name_themselves(options: dict[str, object], parameter: str) -> None:
    options.setdefault("epsilon", 1.0)
    with pytest.raises(ParameterError) as caught:
        Query(**options)  # type: ignore[arg-type]
    assert caught.value.parameter == parameter


def test_partition_threshold_matches_the_closed_form_for_one_row() -> None:
    b, delta = 2.0, 1e-6
    tau, spent = partition_threshold(scale=b, bound=ContributionBound.of(1), delta=delta)
    assert tau == pytest.approx(1 + b * math.log(1 / (2 * delta)))
    assert spent == pytest.approx(delta)


def test_partition_threshold_covers_every_way_to_spread_k_rows() -> None:
    """Brute force over all splits of k rows into keys: the closed form is their maximum."""
    k, b = 4, 4.0
    tau, delta = partition_threshold(scale=b, bound=ContributionBound.of(k), delta=1e-5)

    def released(c: int) -> float:
        return 0.5 * math.exp(-(tau - c) / b)

    def splits(rows: int, most: int) -> list[list[int]]:
        if rows == 0:
            return [[]]
        return [[first, *rest] for first in range(1, min(rows, most) + 1) for rest in splits(rows - first, first)]

    worst = max(sum(released(c) for c in split) for rows in range(1, k + 1) for split in splits(rows, k))
    assert worst == pytest.approx(delta, rel=1e-9)


def test_partition_threshold_holds_empirically() -> None:
    """A key held by one unit's single row passes the threshold with probability ≈ δ (here large δ to see it)."""
    b, delta = 1.0, 0.05
    tau, _ = partition_threshold(scale=b, bound=ContributionBound.of(1), delta=delta)
    rng = np.random.default_rng(7)
    passed = np.mean(1 + rng.laplace(0, b, 400_000) >= tau)
    assert passed == pytest.approx(delta, rel=0.05)
    assert np.mean(1 + rng.laplace(0, b, 400_000) >= tau - 1) > 2 * delta  # a threshold one lower would leak more


def test_label_is_readable() -> None:
    query = Query(
        statistic="mean", column="hours", bounds=(0, 99), by=("sex",), epsilon=1, privacy_unit="pid", max_contributions=2
    )
    assert query.label == "mean(hours) in [0, 99] by sex, ≤ 2 row(s) per pid"


def test_only_the_plain_row_count_is_always_counted() -> None:
    """Every other part's record can move between counted and not counted, so its term ranges
    over [a, b] ∪ {0}: a null, a filter, an undeclared key or a null unit drops it."""
    assert Query(statistic="count", epsilon=1).always_counted
    for options in ({"column": "x"}, {"where": "x > 1"}, {"by": ("g",)}, {"privacy_unit": "p"}):
        assert not Query(statistic="count", epsilon=1, **options).always_counted  # type: ignore[arg-type]
    assert Query(statistic="count", epsilon=1, where="x > 1", neighbours=R1).parts[0].sensitivity == 1


def test_derivation_cases_cover_every_combination() -> None:
    from dpwitness.query.queries import CASE_FILTERS, CASE_OPTIONS, derivation_cases

    cases = list(derivation_cases())
    seen = {(q.statistic.value, q.neighbours.value, q.privacy_unit is not None, q.filtered) for q in cases}
    for statistic in CASE_OPTIONS:
        for relation in (AR, R1):
            for kind in CASE_FILTERS:
                assert (statistic, relation, False, kind) in seen
                assert (statistic, relation, True, kind) in seen or kind == "position"
    grouped = {(q.statistic.value, q.declared) for q in cases if q.by}
    assert {("count", True), ("count", False), ("sum", True), ("sum", False), ("mean", True), ("mean", False)} <= grouped
    assert {("variance", True), ("variance", False)} <= grouped
    assert all(q.bounds is None or q.bounds[0] > 0 for q in cases)  # bounds that exclude 0 show a forgotten ∪ {0}
