"""``EXPLAIN SELECT WITHIN(aggregate, error) …``: target errors in SQL, solved by ``Session.plan``
(the same solver as ``dpwitness plan``), spending nothing; refusals name the SQL construct."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.privacy.accounting import gaussian_half_width, laplace_half_width
from dpwitness.query.resolve import Request
from dpwitness.session import Session, Target
from dpwitness.sql import Answer, Explanation, SqlError

pytest.importorskip("sqlglot")

AGES = [float(15 + i % 60) for i in range(600)]
SEXES = ["FM"[i % 2] for i in range(600)]


def _session(**options: object) -> Session:
    return Session(pl.DataFrame({"age": AGES, "sex": SEXES}), **options)  # type: ignore[arg-type]


@pytest.fixture
def people() -> Session:
    return _session(epsilon=5.0, seed=21)


def test_explain_within_is_the_plan_of_the_same_targets_and_spends_nothing(people: Session) -> None:
    statement = "EXPLAIN SELECT WITHIN(COUNT(*), 10), WITHIN(AVG(CLAMP(age, 0, 100)), 2, 1500) FROM data"
    explained = people.sql(statement)
    assert isinstance(explained, Explanation) and explained.plan is not None
    direct = people.plan(
        [Target(Request("count"), 10.0), Target(Request("mean", "age", bounds=(0.0, 100.0)), 2.0, min_rows=1500)]
    )
    assert [s.epsilon for s in explained.plan.statistics] == [s.epsilon for s in direct.statistics]
    assert explained.epsilon == direct.total.epsilon
    assert explained.previews[0].parts[0]["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-12)  # at the plan
    text = str(explained)
    assert "Budget plan (laplace, 95% intervals; nothing spent)" in text and "count ε = " in text and "fits" in text
    assert explained.to_dict()["targets"]["statistics"][1]["statistic"] == "mean(age) in [0, 100]"
    assert people.history == [] and people.releases == []


def test_a_count_released_at_the_planned_epsilon_meets_its_target_and_a_smaller_one_misses(people: Session) -> None:
    alpha, error = 0.05, 10.0
    explained = people.sql("SELECT WITHIN(COUNT(*), 10) FROM data WHERE sex IN ('F', 'M') GROUP BY sex", explain=True)
    assert isinstance(explained, Explanation)
    epsilon = explained.plan.statistics[0].epsilon
    planned = people.sql(f"SELECT EPSILON(COUNT(*), {epsilon!r}) FROM data WHERE sex IN ('F', 'M') GROUP BY sex")
    assert isinstance(planned, Answer)
    (release,) = planned.releases
    assert release.half_width == laplace_half_width(1.0 / epsilon, alpha) <= error
    assert release.half_width == pytest.approx(error, rel=1e-9)
    smaller = people.sql(f"SELECT EPSILON(COUNT(*), {epsilon * (1 - 1e-6)!r}) FROM data WHERE sex IN ('F', 'M') GROUP BY sex")
    assert isinstance(smaller, Answer) and smaller.releases[0].half_width > error


def test_a_gaussian_session_plans_a_gaussian_mean_with_the_closed_form_rho_split() -> None:
    session = _session(rho=1.0, delta=1e-7, mechanism="gaussian", seed=22)
    explained = session.sql("EXPLAIN SELECT WITHIN(AVG(CLAMP(age, 0, 100)), 2, 4000) FROM data")
    assert isinstance(explained, Explanation) and explained.plan.mechanism == "gaussian"
    (mean,) = explained.plan.statistics
    count, centred = mean.parts
    assert float(count["rho"]) / float(centred["rho"]) == pytest.approx((52 / 50) ** (2 / 3), rel=1e-9)
    release = session.ask(explained.plan.requests()[0])
    widths = [gaussian_half_width(p.scale, 0.05 / 2) for p in release.parts]  # type: ignore[attr-defined]
    assert (widths[1] + 50 * widths[0]) / (4000 - widths[0]) == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize(
    ("statement", "construct", "says"),
    [
        ("EXPLAIN SELECT WITHIN(COUNT(*), 10), COUNT(*) FROM data", "COUNT(*)", "on every aggregate or on none"),
        ("EXPLAIN SELECT WITHIN(AVG(CLAMP(age, 0, 100)), 2) FROM data", "WITHIN(AVG", "min_rows"),
        ("EXPLAIN SELECT WITHIN(COUNT(*), 2, 100) FROM data", "WITHIN(COUNT(*), 2, 100)", "only for AVG"),
        ("EXPLAIN SELECT WITHIN(AVG(CLAMP(age, 0, 100)), 2, 2.5) FROM data", "2.5", "whole number"),
        ("EXPLAIN SELECT WITHIN(MEDIAN(CLAMP(age, 0, 100)), 2) FROM data", "WITHIN(MEDIAN", "COUNT, SUM or AVG"),
        ("EXPLAIN SELECT WITHIN(COUNT(*), 0) FROM data", "0", "a number > 0"),
        ("EXPLAIN SELECT WITHIN(COUNT(*), 'x') FROM data", "'x'", "a number"),
        ("EXPLAIN SELECT WITHIN(EPSILON(COUNT(*), 1), 3) FROM data", "EPSILON(COUNT(*), 1)", "one EPSILON or WITHIN"),
        ("EXPLAIN SELECT WITHIN(COUNT(*)) FROM data", "WITHIN(COUNT(*))", "the half-width it needs"),
        ("EXPLAIN SELECT WITHIN(COUNT(*), 3) FROM data GROUP BY sex", "WITHIN(COUNT(*), 3)", "declared keys"),
        ("EXPLAIN SELECT WITHIN(AVG(CLAMP(age, 0, 100)), 100, 50) FROM data", "WITHIN(AVG", "cannot be planned: error"),
        ("SELECT WITHIN(COUNT(*), 10) FROM data", "WITHIN(COUNT(*), 10)", "planned, not released"),
    ],
)
def test_bad_targets_are_one_line_sql_errors_naming_the_construct(
    people: Session, statement: str, construct: str, says: str
) -> None:
    with pytest.raises(SqlError) as caught:
        people.sql(statement, epsilon=1.0)
    message = str(caught.value)
    assert caught.value.construct.startswith(construct) and says in message and "\n" not in message
    assert people.history == []


def test_the_cli_prints_the_plan_and_its_json(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    pl.DataFrame({"age": AGES, "sex": SEXES}).write_csv(path)
    (tmp_path / "people.schema.toml").write_text(
        "[columns.age]\ntype = 'float'\n[columns.sex]\ntype = 'string'\n", encoding="utf-8"
    )
    statement = "EXPLAIN SELECT WITHIN(COUNT(*), 10), WITHIN(SUM(CLAMP(age, 0, 100)), 500) FROM people"
    runner = CliRunner()
    shown = runner.invoke(app, ["sql", str(path), statement, "--epsilon", "1"])
    assert shown.exit_code == 0, shown.output
    assert "Budget plan (laplace" in shown.stdout and "total: ε = " in shown.stdout
    result = runner.invoke(app, ["sql", str(path), statement, "--epsilon", "1", "--json"])
    assert result.exit_code == 0, result.output
    targets = json.loads(result.stdout)["targets"]
    count, total = targets["statistics"]
    assert count["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-12)
    assert total["epsilon"] == pytest.approx(100 * math.log(20) / 500, rel=1e-12)  # Δ of a sum in [0, 100]: 100
    assert targets["fits"] is True
    refused = runner.invoke(app, ["sql", str(path), statement.removeprefix("EXPLAIN "), "--epsilon", "1"])
    assert refused.exit_code == 2 and "planned, not released" in refused.stderr
