"""SQL answered through the library's own queries: a corpus of statements written for the tests.

Accepted statements are answered at a large ε and every released cell's interval must hold the
exact answer, computed independently by Polars SQL (``pl.SQLContext``) on the same file read with
typed columns (the statement is translated: ``CLAMP`` → ``LEAST(GREATEST(…))``, ``EPSILON(a, ε)``
→ ``a``, population variance spelled out, ``PERCENTILE_CONT`` → ``QUANTILE_CONT``). They run on a
generated table (always) and on Adult (when present). Refused statements are refused before any
spend, with the construct and its position. A wrong answer fails: an interval that misses the
exact value, a missing or extra group, a spend on a refusal.
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import sqlglot
from sqlglot import exp

import dpwitness as dw
from dpwitness.common.errors import ParameterError
from dpwitness.sql import Answer, Cell, Explanation, SqlError

EPSILON = 400.0  # large: each interval is narrow, and must still hold the exact answer
#: Intervals at 1 − 1e-9: over the ~100 cells of the corpus a false miss has probability < 1e-6.
ALPHA = 1e-9
AGE = "CLAMP(age, 0, 100)"
HOURS = "CLAMP(hours_per_week, 0, 100)"

ACCEPTED = [
    "SELECT COUNT(*) FROM adult",
    "SELECT COUNT(*) FROM adult WHERE age < 20",
    "select count(*) from adult where 20 > age",
    "SELECT COUNT(*) AS n FROM adult WHERE age >= 30 AND age <= 40",
    "SELECT COUNT(*) FROM adult WHERE age BETWEEN 25 AND 35",
    "SELECT COUNT(*) FROM adult WHERE age NOT BETWEEN 25 AND 35",
    "SELECT COUNT(*) FROM adult WHERE workclass IS NULL",
    "SELECT COUNT(*) FROM adult WHERE workclass IS NOT NULL",
    "SELECT COUNT(*) FROM adult WHERE NOT (workclass IS NULL) AND sex = 'Female'",
    "SELECT COUNT(*) FROM adult WHERE sex = 'Male' OR age > 60",
    "SELECT COUNT(*) FROM adult WHERE income <> '<=50K'",
    "SELECT COUNT(*) FROM adult WHERE income != '>50K' AND (age < 25 OR age > 65)",
    "SELECT COUNT(*) FROM adult WHERE workclass IN ('Private', 'State-gov')",
    "SELECT COUNT(*) FROM adult WHERE workclass NOT IN ('Private')",
    "SELECT COUNT(*) FROM adult WHERE hours_per_week > 39.5",
    "SELECT COUNT(*) FROM adult WHERE sex LIKE 'F%'",
    "SELECT COUNT(*) FROM adult WHERE workclass NOT LIKE '%gov' AND workclass LIKE '%e%'",
    "SELECT COUNT(*) FROM adult WHERE workclass LIKE 'Self-emp%' OR income LIKE '>__K'",
    "SELECT sex, COUNT(*) FROM adult WHERE sex IN ('Male', 'Female') AND NOT (workclass LIKE 'P_ivate') GROUP BY sex",
    "SELECT COUNT(*) FROM adult WHERE age > -1",
    "SELECT COUNT(workclass) FROM adult",
    "SELECT COUNT(workclass) AS known FROM adult WHERE age < 30",
    f"SELECT SUM({AGE}) FROM adult",
    "SELECT SUM(CLAMP(age, 20, 60)) FROM adult",
    "SELECT SUM(CLAMP(age, -10, 50)) FROM adult WHERE sex = 'Female'",
    f"SELECT AVG({AGE}) FROM adult",
    f"SELECT AVG({HOURS}) AS mean_hours FROM adult WHERE income = '>50K'",
    f"SELECT VAR({AGE}) FROM adult",
    f"SELECT VARIANCE({HOURS}) FROM adult",
    f"SELECT VAR_POP({AGE}) FROM adult WHERE sex = 'Male'",
    f"SELECT STDDEV({AGE}) FROM adult",
    f"SELECT STDDEV_POP({HOURS}) FROM adult",
    f"SELECT MEDIAN({AGE}) FROM adult",
    f"SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY {AGE}) FROM adult",
    f"SELECT PERCENTILE_CONT(0.25) WITHIN GROUP (ORDER BY {HOURS}) AS q1 FROM adult",
    f"SELECT MIN({AGE}), MAX({AGE}) FROM adult",
    f"SELECT COUNT(*), SUM({AGE}), AVG({AGE}) FROM adult",
    f"SELECT COUNT(*) AS n, SUM({AGE}) / COUNT(*) AS ratio FROM adult",
    f"SELECT ROUND(AVG({AGE}), 1) AS a, ROUND(COUNT(*)) AS n FROM adult",
    f"SELECT SUM({AGE}) - SUM({HOURS}) AS gap, 2 * COUNT(*) + 1 AS twice FROM adult",
    f"SELECT -AVG({AGE}) AS negative FROM adult",
    "SELECT EPSILON(COUNT(*), 100) AS n, AVG(CLAMP(age, 0, 100)) FROM adult",
    "SELECT sex, COUNT(*) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex",
    f"SELECT sex, COUNT(*) AS n, AVG({AGE}) AS mean_age FROM adult WHERE sex IN ('Female', 'Male') GROUP BY sex ORDER BY n DESC",
    f"SELECT income, SUM({HOURS}) FROM adult WHERE income IN ('<=50K', '>50K') GROUP BY income",
    "SELECT sex, income, COUNT(*) FROM adult "
    "WHERE sex IN ('Male', 'Female') AND income IN ('<=50K', '>50K') GROUP BY sex, income",
    f"SELECT sex, MEDIAN({AGE}) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex",
    "SELECT sex, COUNT(*) FROM adult GROUP BY sex",
    "SELECT income, sex, COUNT(*) AS n FROM adult GROUP BY income, sex ORDER BY n LIMIT 2",
    f"SELECT workclass, COUNT(*) AS n, AVG({AGE}) FROM adult GROUP BY workclass HAVING COUNT(*) > 1000",
    "SELECT sex, COUNT(*) AS n FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex HAVING n > 1 ORDER BY sex",
    "SELECT sex, COUNT(*) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex ORDER BY COUNT(*) LIMIT 1",
    "SELECT a.sex, COUNT(*) FROM adult AS a WHERE a.sex IN ('Male', 'Female') GROUP BY a.sex",
    "SELECT COUNT(*) FROM adult WHERE age < 20 LIMIT 5",
    "SELECT income, COUNT(*) FROM adult WHERE income IN ('<=50K', '>50K') GROUP BY income ORDER BY 2 DESC",
    "EXPLAIN SELECT COUNT(*) FROM adult WHERE age < 20",
    # grouped variance and standard deviation: declared keys, or keys released by a count or by the variance itself
    f"SELECT sex, VAR({AGE}), STDDEV({HOURS}) AS sd FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex",
    f"SELECT income, COUNT(*) AS n, VARIANCE({AGE}), STDDEV_POP({AGE}) FROM adult GROUP BY income",
    f"SELECT sex, STDDEV({AGE}) FROM adult GROUP BY sex",
    # CASE in GROUP BY: the keys are the CASE's literals (declared by the statement)
    "SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END AS band, COUNT(*) AS n, "
    f"AVG({HOURS}) FROM adult GROUP BY CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END",
    f"SELECT sex, CASE WHEN workclass IN ('Private') THEN 1 WHEN workclass IS NULL THEN -1 ELSE 0 END AS private, "
    f"SUM({AGE}) FROM adult WHERE sex IN ('Male', 'Female') "
    "GROUP BY sex, CASE WHEN workclass IN ('Private') THEN 1 WHEN workclass IS NULL THEN -1 ELSE 0 END",
    "SELECT CASE income WHEN '>50K' THEN TRUE ELSE FALSE END AS rich, COUNT(*) FROM adult "
    "GROUP BY CASE income WHEN '>50K' THEN TRUE ELSE FALSE END",
    # scalar functions of released values (post-processing)
    f"SELECT SQRT(VARIANCE({AGE})) AS sd, ABS(SUM({AGE}) - SUM({HOURS})) AS gap FROM adult",
    f"SELECT POWER(AVG({AGE}), 2), POWER(COUNT(*), -1.0), POWER(AVG({HOURS}), 0.5) FROM adult",
    f"SELECT LN(COUNT(*)), EXP(AVG({AGE}) / 100), LEAST(AVG({AGE}), AVG({HOURS})), GREATEST(COUNT(*), 10, 20) FROM adult",
    "SELECT sex, SQRT(COUNT(*)) AS root FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex HAVING ABS(COUNT(*)) > 1",
]

REFUSED = [
    ("SELECT age FROM adult", "row-level output"),
    ("SELECT * FROM adult", "row-level output"),
    ("SELECT DISTINCT sex FROM adult", "SELECT DISTINCT"),
    ("SELECT age, COUNT(*) FROM adult", "row-level output"),
    ("SELECT sex, age, COUNT(*) FROM adult GROUP BY sex", "GROUP BY must cover"),
    ("SELECT SUM(age + hours_per_week) FROM adult", "Δ cannot be derived"),
    ("SELECT SUM(age * 2) FROM adult", "Δ cannot be derived"),
    ("SELECT SUM(SUM(age)) FROM adult", "nested aggregate"),
    ("SELECT AVG(CLAMP(COUNT(*), 0, 1)) FROM adult", "nested aggregate"),
    ("SELECT COUNT(*) FROM (SELECT * FROM adult ORDER BY age LIMIT 10)", "subquer"),
    ("SELECT COUNT(*) FROM adult WHERE age IN (SELECT age FROM adult)", "subquer"),
    ("WITH young AS (SELECT * FROM adult WHERE age < 20) SELECT COUNT(*) FROM young", "common table"),
    ("SELECT COUNT(*) FROM adult a JOIN adult b ON a.age = b.age", "private tables"),
    ("SELECT COUNT(*) FROM adult JOIN planets ON adult.native_country = planets.name", "only with a declared public table"),
    ("SELECT COUNT(*) FROM adult RIGHT JOIN countries c ON native_country = c.country", "only an inner or a LEFT JOIN"),
    ("SELECT COUNT(*) FROM adult FULL OUTER JOIN countries c ON native_country = c.country", "only an inner or a LEFT JOIN"),
    ("SELECT COUNT(*) FROM adult CROSS JOIN countries c", "only an inner or a LEFT JOIN"),
    ("SELECT COUNT(*) FROM adult LEFT JOIN countries USING (country)", "not USING"),
    ("SELECT COUNT(*) FROM adult JOIN countries c ON native_country <> c.country", "ON one equality"),
    ("SELECT COUNT(*) FROM adult JOIN countries c ON c.region = c.country", "ON one equality"),
    (
        "SELECT COUNT(*) FROM adult JOIN countries c ON native_country = c.country "
        "JOIN languages l ON native_country = l.country",
        "one JOIN",
    ),
    (
        "SELECT c.population, COUNT(*) FROM adult JOIN countries c ON native_country = c.country GROUP BY c.population",
        "unknown column",
    ),
    ("SELECT SUM(age) OVER (PARTITION BY sex) FROM adult", "window function"),
    ("SELECT COUNT(*) FROM adult ORDER BY age", "not in GROUP BY" if False else "row-level output in ORDER BY"),
    ("SELECT COUNT(*) FROM people", "unknown table"),
    ("SELECT COUNT(*) FROM adult WHERE salary > 3", "unknown column"),
    ("SELECT SUM(CLAMP(wage, 0, 1)) FROM adult", "unknown column"),
    ("SELECT SUM(age) FROM adult", "needs bounds"),
    ("SELECT COUNT(DISTINCT sex) FROM adult", "privacy unit"),
    ("SELECT COUNT(*) FROM adult WHERE sex ILIKE 'f%'", "case-insensitive"),
    ("SELECT COUNT(*) FROM adult WHERE sex LIKE 'F!%' ESCAPE '!'", "no escape character"),
    ("SELECT COUNT(*) FROM adult WHERE sex LIKE 'F\\%'", "no backslash"),
    ("SELECT COUNT(*) FROM adult WHERE sex LIKE income", "a 'pattern' in quotes"),
    ("SELECT COUNT(*) FROM adult WHERE age = NULL", "IS NULL"),
    ("SELECT COUNT(*) FROM adult WHERE age < hours_per_week", "one column with one literal"),
    ("SELECT COUNT(*) FROM adult WHERE COUNT(*) > 3", "an aggregate in WHERE"),
    ("SELECT COUNT(*) FROM adult UNION SELECT COUNT(*) FROM adult", "set operations"),
    ("DELETE FROM adult", "only SELECT"),
    ("SELECT COUNT(* FROM adult", "not valid SQL"),
    (f"SELECT sex, MEDIAN({AGE}) FROM adult GROUP BY sex", "undeclared keys"),
    ("SELECT SUM(CLAMP(age, 10, 5)) FROM adult", "bounds"),
    ("SELECT COUNT(*) FROM adult GROUP BY age + 1", "GROUP BY takes columns"),
    ("SELECT sex, COUNT(*) FROM adult WHERE sex IN ('Male') GROUP BY sex ORDER BY 3", "a position of the SELECT list"),
    ("SELECT LOWER(sex), COUNT(*) FROM adult GROUP BY sex", "not supported in SELECT"),
    ("SELECT COUNT(*) FROM adult WHERE UPPER(sex) = 'MALE'", "no functions"),
    ("SELECT COUNT(*) FROM adult; SELECT COUNT(*) FROM adult", "one statement"),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 30 THEN 'young' END", "needs an ELSE"),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 30 THEN 'y' ELSE NULL END", "needs an ELSE"),
    (
        "SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 30 THEN 'y' WHEN sex = 'Male' THEN 'm' ELSE 'o' END",
        "one and the same column",
    ),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 30 THEN 'y' ELSE 0 END", "of one type"),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 30 THEN sex ELSE 'o' END", "a literal category"),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN age < 'x' THEN 'y' ELSE 'o' END", "a number for 'age'"),
    ("SELECT COUNT(*) FROM adult GROUP BY CASE WHEN LOWER(sex) = 'm' THEN 'y' ELSE 'o' END", "compares a column"),
    ("SELECT CASE WHEN age < 30 THEN 1 ELSE 0 END AS young, COUNT(*) FROM adult", "only as a GROUP BY expression"),
    ("SELECT SUM(ABS(CLAMP(age, 0, 10))) FROM adult", "ABS of row values inside an aggregate"),
    ("SELECT AVG(SQRT(age)) FROM adult", "apply it to the released aggregate"),
    ("SELECT SQRT(age) FROM adult", "row-level output"),
    ("SELECT POWER(COUNT(*), age) FROM adult", "constant exponent"),
    ("SELECT sex, COUNT(*) FROM adult GROUP BY sex HAVING LN(age) > 1", "not in GROUP BY"),
]


#: Public (lookup) tables: countries has unique keys (M = 1), languages two rows for Canada (M = 2).
PUBLIC = {
    "countries": pl.DataFrame(
        {
            "country": ["United-States", "Mexico", "Canada", "Germany", "India"],
            "region": ["America", "America", "America", "Europe", "Asia"],
        }
    ),
    "languages": pl.DataFrame(
        {"country": ["United-States", "Mexico", "Canada", "Canada"], "language": ["English", "Spanish", "English", "French"]}
    ),
}
JOINED = [
    "SELECT COUNT(*) FROM adult a JOIN countries c ON a.native_country = c.country",
    "SELECT COUNT(*) FROM adult JOIN languages l ON native_country = l.country",
    "SELECT c.region, COUNT(*) AS n FROM adult a JOIN countries c ON a.native_country = c.country "
    "GROUP BY c.region ORDER BY n DESC",
    f"SELECT region, AVG({AGE}), SUM({HOURS}) FROM adult INNER JOIN countries ON native_country = country GROUP BY region",
    "SELECT language, COUNT(*) FROM adult JOIN languages l ON native_country = l.country GROUP BY language",
    "SELECT COUNT(*) FROM adult JOIN languages l ON l.country = adult.native_country WHERE l.language = 'English' AND age < 40",
    f"SELECT sex, COUNT(*), MEDIAN({AGE}) FROM adult JOIN countries c ON native_country = c.country "
    "WHERE c.region = 'America' AND sex IN ('Male', 'Female') GROUP BY sex",
    # LEFT JOIN: every private row kept, an unmatched one with null public columns
    "SELECT COUNT(*) FROM adult a LEFT JOIN countries c ON a.native_country = c.country",
    "SELECT COUNT(*) AS n FROM adult a LEFT OUTER JOIN languages l ON a.native_country = l.country",
    "SELECT c.region, COUNT(*) AS n FROM adult a LEFT JOIN countries c ON a.native_country = c.country GROUP BY c.region",
    f"SELECT COUNT(*), AVG({AGE}) FROM adult LEFT JOIN languages l ON native_country = l.country "
    "WHERE l.language IS NULL OR l.language = 'English'",
]


# --- tables ---------------------------------------------------------------------------------------


def _generated(path: Path) -> Path:
    """An Adult-shaped CSV written as Python's csv module writes it (missing = empty), 4,000 rows."""
    rng = random.Random(20)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "workclass", "sex", "income", "hours_per_week", "pid", "native_country"])
        for row in range(4000):
            age = rng.randint(17, 90)
            workclass = "" if rng.random() < 0.06 else rng.choice(["Private", "Private", "State-gov", "Self-emp, inc"])
            writer.writerow(
                [
                    age,
                    workclass,
                    rng.choice(["Male", "Female"]),
                    rng.choice(["<=50K", ">50K"]),
                    rng.randint(1, 99),
                    row % 1500,
                    rng.choice(["United-States", "United-States", "Mexico", "Canada", "Germany", "", "Laos"]),
                ]
            )
    return path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generated(tmp_path_factory.mktemp("sql") / "adult.csv")


@pytest.fixture(params=["generated", "adult"])
def table(request: pytest.FixtureRequest, generated: Path) -> Path:
    if request.param == "generated":
        return generated
    path: Path = request.getfixturevalue("adult")
    return path


#: The numeric columns of both tables, declared as a user would (a CSV's columns are text until declared).
NUMBERS = {"age": "integer", "hours_per_week": "integer"}


def _session(path: Path, **options: Any) -> dw.Session:
    if "schema" not in options:
        options.setdefault("dtypes", NUMBERS)
    return dw.Session(str(path), epsilon=1e6, seed=7, max_rows=100_000, delta_budget=1e-3, **options)


# --- the exact answer, by Polars SQL --------------------------------------------------------------


def _exact_sql(statement: str) -> str:
    """The statement as Polars SQL computes it exactly (no DP constructs)."""
    tree = sqlglot.parse_one(statement.replace("EXPLAIN ", ""))

    def unclamp(node: Any) -> Any:
        if isinstance(node, exp.Anonymous) and node.name.upper() == "CLAMP":
            column, low, high = node.expressions
            return exp.func("LEAST", exp.func("GREATEST", column, low), high)
        if isinstance(node, exp.Anonymous) and node.name.upper() == "EPSILON":
            return node.expressions[0]
        return node

    def rewrite(node: Any) -> Any:
        if isinstance(node, exp.WithinGroup):
            return exp.func("QUANTILE_CONT", node.expression.expressions[0].this, node.this.this)
        if isinstance(node, exp.Median):
            return exp.func("QUANTILE_CONT", node.this, exp.Literal.number(0.5))
        variance = isinstance(node, exp.Variance | exp.VariancePop) or (
            isinstance(node, exp.Anonymous) and node.name.upper() == "VAR"
        )
        stddev = isinstance(node, exp.Stddev | exp.StddevPop)
        if variance or stddev:
            x = node.this if not isinstance(node, exp.Anonymous) else node.expressions[0]
            second = exp.Avg(this=exp.Mul(this=x.copy(), expression=x.copy()))
            first = exp.Avg(this=x.copy())
            value: Any = exp.Sub(this=second, expression=exp.Mul(this=first, expression=first.copy()))
            return exp.func("SQRT", value) if stddev else exp.Paren(this=value)
        return node

    tree = tree.transform(unclamp).transform(rewrite)
    return str(tree.sql(dialect="postgres"))


def _exact(path: Path, statement: str) -> pl.DataFrame:
    frame = pl.read_csv(path, infer_schema_length=None, null_values=[""])
    context = pl.SQLContext(frames={"adult": frame, **PUBLIC})
    result: pl.DataFrame = context.execute(_exact_sql(statement), eager=True)
    return result


def _close(cell: Cell, value: float) -> bool:
    slack = 1e-9 * max(1.0, abs(value))
    return cell.low - slack <= value <= cell.high + slack


def _check(answer: Answer, exact: pl.DataFrame, statement: str) -> None:
    columns = list(exact.columns)
    assert len(columns) == len(answer.columns)
    keyed = [i for i, row in enumerate(answer.rows[:1]) for i, c in enumerate(row) if not isinstance(c, Cell)]
    if not answer.columns or not keyed:  # ungrouped: one row
        assert len(answer.rows) == 1 and exact.height == 1, statement
        for cell, value in zip(answer.rows[0], exact.row(0), strict=True):
            assert isinstance(cell, Cell) and _close(cell, float(value)), (statement, cell, value)
        return
    # a NULL key is not a group of the library (rows with a null key are dropped, docs/sql.md)
    exact = exact.filter(pl.all_horizontal(pl.col(exact.columns[i]).is_not_null() for i in keyed))
    truth = {tuple(row[i] for i in keyed): row for row in exact.rows()}
    declared = any(word in statement for word in ("IN (", " JOIN ", "CASE "))
    empty = []  # declared keys with no rows: released (a declared key always is), absent from SQL's answer
    for row in answer.rows:
        key = tuple(row[i] for i in keyed)
        if key not in truth and declared:
            empty.append(row)
            counts = [c for c, name in zip(row, answer.columns, strict=True) if "COUNT" in name or name == "n"]
            assert all(_close(c, 0.0) for c in counts), (statement, key)
            continue
        assert key in truth, (statement, key)
        for cell, value in zip(row, truth[key], strict=True):
            if isinstance(cell, Cell):
                assert _close(cell, float(value)), (statement, key, cell, value)
    if empty:
        assert "LIMIT" not in statement and "HAVING" not in statement
        assert len(answer.rows) == exact.height + len(empty), statement
        return
    if not declared and "LIMIT" not in statement and "HAVING" not in statement:
        # undeclared keys: every group far above the release threshold is released
        big = {k for k, row in truth.items() if all(not isinstance(v, int | float) or v > 50 for v in row)}
        assert big <= {tuple(row[i] for i in keyed) for row in answer.rows}, statement
    else:
        assert len(answer.rows) == exact.height, statement
    if "ORDER BY" in statement:
        assert [tuple(r[i] for i in keyed) for r in answer.rows] == [tuple(r[i] for i in keyed) for r in exact.rows()]


@pytest.mark.parametrize("statement", ACCEPTED)
def test_accepted_statements_hold_the_exact_answer(statement: str, table: Path) -> None:
    session = _session(table)
    if statement.startswith("EXPLAIN"):
        plan = session.sql(statement, epsilon=EPSILON)
        assert isinstance(plan, Explanation) and "nothing spent" in str(plan) and session.history == []
        statement = statement.removeprefix("EXPLAIN ")
    answer = session.sql(statement, epsilon=EPSILON, alpha=ALPHA)
    assert isinstance(answer, Answer)
    _check(answer, _exact(table, statement), statement)
    # the release set states ε, δ, Δ and the relation per aggregate; ε adds up to the statement's
    assert math.isclose(sum(r["epsilon"] for r in answer.release_set()), EPSILON)
    assert all(r["neighbours"] and r["parts"] and all(p["sensitivity"] > 0 for p in r["parts"]) for r in answer.release_set())
    assert math.isclose(session.spent.epsilon, EPSILON)


@pytest.mark.parametrize("statement", JOINED)
def test_joins_with_public_tables_hold_the_exact_answer(statement: str, table: Path) -> None:
    session = _session(table)
    answer = session.sql(statement, epsilon=EPSILON, alpha=ALPHA, public=PUBLIC)
    assert isinstance(answer, Answer)
    _check(answer, _exact(table, statement), statement)
    multiplicity = 2 if "languages" in statement else 1
    for release in answer.release_set():
        assert f"≤ {multiplicity} row(s) per key" in release["query"]
        counts = [p["sensitivity"] for p in release["parts"] if p["aggregate"] == "count"]
        assert all(delta == multiplicity for delta in counts)  # a count's Δ: × M
    assert any(f"≤ {multiplicity} public row(s) per key" in note for note in answer.notes)


@pytest.mark.parametrize(("statement", "reason"), REFUSED)
def test_refused_statements_spend_nothing(statement: str, reason: str, generated: Path) -> None:
    session = _session(generated)
    with pytest.raises(ParameterError) as raised:
        session.sql(statement, epsilon=1.0, public=PUBLIC)
    message = str(raised.value)
    assert reason.lower() in message.lower(), message
    assert "\n" not in message
    if isinstance(raised.value, SqlError):
        assert f"at position {raised.value.position}" in message and 1 <= raised.value.position <= len(statement)
    assert session.history == [] and session.spent.epsilon == 0


def test_the_corpus_is_large_enough() -> None:
    assert len(ACCEPTED) + len(JOINED) + len(REFUSED) >= 60


def test_a_refusal_names_the_construct_and_its_position(generated: Path) -> None:
    with pytest.raises(SqlError) as raised:
        _session(generated).sql("SELECT COUNT(*), SUM(age + hours_per_week) FROM adult", epsilon=1.0)
    assert raised.value.position == len("SELECT COUNT(*), SUM(") + 1
    assert "age + hours_per_week" in raised.value.construct


def test_refusals_do_not_depend_on_the_data(tmp_path: Path, generated: Path) -> None:
    """The same statements are refused, with the same message, on a table with other values."""
    other = tmp_path / "adult.csv"
    other.write_text("age,workclass,sex,income,hours_per_week,pid,native_country\n", encoding="utf-8")  # header only
    for statement, _ in REFUSED:
        messages = []
        for path in (generated, other):
            with pytest.raises(ParameterError) as raised:
                _session(path).sql(statement, epsilon=1.0, public=PUBLIC)
            messages.append(str(raised.value))
        assert messages[0] == messages[1], statement


def test_the_younger_than_20_example(generated: Path) -> None:
    session = _session(generated)
    answer = session.sql("SELECT COUNT(*) FROM people WHERE age < 20", epsilon=1.0, name="people")
    assert isinstance(answer, Answer)
    exact = _exact(generated, "SELECT COUNT(*) FROM adult WHERE age < 20").item()
    (cell,) = answer.rows[0]
    assert isinstance(cell, Cell) and abs(cell.value - exact) < 30  # b = 1: |noise| > 30 has probability e^-30
    # the same query through the Python API, the same seed and position: the same release
    api = _session(generated).count(epsilon=1.0, where="age < 20")
    assert float(api) == cell.value


def test_epsilon_is_split_evenly_or_as_the_statement_says(generated: Path) -> None:
    session = _session(generated)
    answer = session.sql(f"SELECT EPSILON(COUNT(*), 0.5), SUM({AGE}), AVG({AGE}) FROM adult", epsilon=2.0)
    assert isinstance(answer, Answer)
    assert [r["epsilon"] for r in answer.release_set()] == [0.5, 0.75, 0.75]
    assert any("split evenly: 0.75 each" in n for n in answer.notes)
    with pytest.raises(ParameterError, match="epsilon"):
        _session(generated).sql("SELECT EPSILON(COUNT(*), 3), COUNT(workclass) FROM adult", epsilon=2.0)
    only = _session(generated).sql("SELECT EPSILON(COUNT(*), 0.3), EPSILON(COUNT(workclass), 0.2) FROM adult")
    assert isinstance(only, Answer) and math.isclose(only.epsilon, 0.5)


def test_explain_spends_nothing_and_states_each_delta(generated: Path) -> None:
    session = _session(generated)
    plan = session.sql(
        f"SELECT sex, COUNT(*), AVG({AGE}) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex", epsilon=1.0, explain=True
    )
    assert isinstance(plan, Explanation)
    queries = plan.to_dict()["queries"]
    assert [q["epsilon"] for q in queries] == [0.5, 0.5]
    assert [p["sensitivity"] for p in queries[1]["parts"]] == [1.0, 50.0]
    assert session.history == [] and session.spent.epsilon == 0


def test_a_derived_column_says_it_is_post_processing(generated: Path) -> None:
    answer = _session(generated).sql(f"SELECT SUM({AGE}) / COUNT(*) AS ratio FROM adult", epsilon=10.0)
    assert isinstance(answer, Answer)
    assert any("ratio is computed from the released (noisy) aggregates" in n for n in answer.notes)
    frame = answer.to_polars()
    assert frame.columns == ["ratio", "ratio_low", "ratio_high"]


def test_count_distinct_unit_counts_units(generated: Path) -> None:
    session = _session(generated, privacy_unit="pid", max_contributions=3)
    answer = session.sql("SELECT COUNT(DISTINCT pid) AS people, COUNT(*) AS rows FROM adult", epsilon=400.0, alpha=ALPHA)
    assert isinstance(answer, Answer)
    people, rows = answer.rows[0]
    assert _close(people, 1500.0)  # 4,000 rows over 1,500 units
    assert rows.value > 3000  # ≤ 3 rows kept per unit
    releases = answer.release_set()
    assert releases[0]["parts"][0]["sensitivity"] == 1.0 and releases[1]["parts"][0]["sensitivity"] == 3.0


def test_count_distinct_unit_per_group(generated: Path) -> None:
    """Per group, each unit once: exact when every unit is in at most max_groups groups (here 2 sexes)."""
    statement = "SELECT sex, COUNT(DISTINCT pid) AS people FROM adult WHERE sex IN ('Female', 'Male') GROUP BY sex"
    with pytest.raises(SqlError, match="max_groups"):
        _session(generated, privacy_unit="pid", max_contributions=3).sql(statement, epsilon=1.0)
    session = _session(generated, privacy_unit="pid", max_contributions=3, max_groups=2)
    answer = session.sql(statement, epsilon=EPSILON, alpha=ALPHA)
    assert isinstance(answer, Answer)
    _check(answer, _exact(generated, statement), statement)
    assert answer.release_set()[0]["parts"][0]["sensitivity"] == 2.0  # one row in each of ≤ 2 groups


def test_schema_bounds_and_categories_are_used(generated: Path, tmp_path: Path) -> None:
    schema = tmp_path / "adult.schema.toml"
    schema.write_text(
        '[columns.age]\ntype = "integer"\nbounds = [0, 100]\n\n[columns.workclass]\ntype = "string"\n\n'
        '[columns.sex]\ntype = "string"\ncategories = ["Female", "Male"]\n\n[columns.income]\ntype = "string"\n\n'
        '[columns.hours_per_week]\ntype = "integer"\n\n[columns.pid]\ntype = "integer"\n\n'
        '[columns.native_country]\ntype = "string"\n',
        encoding="utf-8",
    )
    session = _session(generated, schema=str(schema))
    answer = session.sql("SELECT sex, AVG(age) FROM adult GROUP BY sex", epsilon=EPSILON, alpha=ALPHA)
    assert isinstance(answer, Answer)
    assert [row[0] for row in answer.rows] == ["Female", "Male"]
    assert "from the schema's categories" in " ".join(answer.notes)
    _check(answer, _exact(generated, f"SELECT sex, AVG({AGE}) FROM adult GROUP BY sex"), "schema")


def test_a_frame_is_the_table_data(generated: Path) -> None:
    frame = pl.read_csv(generated, infer_schema_length=None)
    session = dw.Session(frame, epsilon=10.0, seed=1)
    answer = session.sql("SELECT COUNT(*) FROM data WHERE age < 20", epsilon=1.0)
    assert isinstance(answer, Answer) and len(answer.rows) == 1


# --- both engines: the same answers for the same seed -------------------------------------------

SPARK_SUBSET = [
    "SELECT COUNT(*) FROM adult WHERE workclass NOT LIKE '%gov' AND (workclass LIKE 'Self-emp, %' OR income LIKE '>__K')",
    "SELECT language, COUNT(*) FROM adult JOIN languages l ON native_country = l.country GROUP BY language",
    f"SELECT region, COUNT(*), SUM({AGE}) FROM adult LEFT JOIN countries c ON native_country = c.country GROUP BY region",
    "SELECT COUNT(*) FROM adult WHERE age < 20",
    f"SELECT COUNT(*), SUM({AGE}), AVG({AGE}) FROM adult WHERE workclass IS NOT NULL",
    f"SELECT sex, COUNT(*) AS n, AVG({HOURS}) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex ORDER BY n",
    f"SELECT MEDIAN({AGE}), VAR({AGE}) FROM adult WHERE income = '>50K' OR age BETWEEN 20 AND 30",
    "SELECT COUNT(*) FROM adult WHERE workclass NOT IN ('Private') AND NOT (sex = 'Male')",
    f"SELECT sex, VAR({AGE}), SQRT(VAR({HOURS})) FROM adult WHERE sex IN ('Male', 'Female') GROUP BY sex",
    "SELECT CASE WHEN hours_per_week > 40.5 THEN 'long' WHEN hours_per_week IS NULL THEN 'unknown' ELSE 'short' END "
    "AS b, COUNT(*), AVG(CLAMP(age, 0, 100)) FROM adult GROUP BY b",
]


@pytest.mark.spark
def test_spark_gives_the_same_answers(spark: Any, generated: Path) -> None:
    for statement in SPARK_SUBSET:
        polars = _session(generated).sql(statement, epsilon=EPSILON, alpha=ALPHA, public=PUBLIC)
        on_spark = _session(generated, engine="spark").sql(statement, epsilon=EPSILON, alpha=ALPHA, public=PUBLIC)
        assert isinstance(polars, Answer) and isinstance(on_spark, Answer)
        assert polars.rows == on_spark.rows, statement
        _check(on_spark, _exact(generated, statement), statement)


# --- the sensitivity search sweeps the query shapes SQL reaches ---------------------------------

#: A public lookup for the sweep: key "a" matches two rows (M = 2), "b" one, "c" none.
SWEPT_PUBLIC = {
    "p": pl.DataFrame({"g": ["a", "a", "b"], "h": ["h1", "h2", "h1"]}),
    "q": pl.DataFrame({"g": ["a", "b"], "h": ["h1", "h2"]}),  # unique keys (M = 1)
}
SWEPT = [
    "SELECT COUNT(*) FROM t JOIN p ON t.g = p.g",
    "SELECT SUM(CLAMP(x, 2, 5)) FROM t JOIN p ON t.g = p.g WHERE p.h = 'h1' OR x > 3",
    "SELECT h, COUNT(*), AVG(CLAMP(x, 2, 5)) FROM t JOIN p ON t.g = p.g GROUP BY h",
    "SELECT h, COUNT(*) FROM t JOIN p ON t.g = p.g WHERE pid IS NOT NULL GROUP BY h",
    "SELECT COUNT(*) FROM t WHERE x > 3 OR g = 'a'",
    "SELECT COUNT(x) FROM t WHERE x IS NOT NULL AND NOT g IN ('c')",
    "SELECT SUM(CLAMP(x, 2, 5)) FROM t WHERE g LIKE 'a%' OR g NOT LIKE '_'",
    "SELECT SUM(CLAMP(x, 2, 5)) FROM t WHERE x BETWEEN 2.5 AND 4",
    "SELECT g, AVG(CLAMP(x, 2, 5)) FROM t WHERE g IN ('a', 'b') GROUP BY g",
    "SELECT g, VAR(CLAMP(x, 2, 5)) FROM t WHERE g IN ('a', 'b') GROUP BY g",
    "SELECT g, STDDEV(CLAMP(x, 2, 5)) FROM t GROUP BY g",
    "SELECT CASE WHEN x < 3 THEN 'low' WHEN x IS NULL THEN 'none' ELSE 'high' END AS b, COUNT(*), SUM(CLAMP(x, 2, 5)) "
    "FROM t GROUP BY b",
    "SELECT CASE g WHEN 'a' THEN 1 ELSE 2 END AS k, COUNT(DISTINCT pid), AVG(CLAMP(x, 2, 5)) FROM t GROUP BY k",
    "SELECT h, CASE WHEN x >= 3.5 THEN TRUE ELSE FALSE END AS big, COUNT(*) FROM t JOIN p ON t.g = p.g GROUP BY h, big",
    "SELECT COUNT(*), SUM(CLAMP(x, 2, 5)) FROM t LEFT JOIN p ON t.g = p.g",
    "SELECT h, COUNT(*), AVG(CLAMP(x, 2, 5)) FROM t LEFT JOIN p ON t.g = p.g WHERE h IS NULL OR x > 3 GROUP BY h",
    "SELECT COUNT(*) FROM t LEFT JOIN q ON t.g = q.g WHERE q.h IS NULL",
    "SELECT g, COUNT(*) FROM t GROUP BY g",
    "SELECT COUNT(DISTINCT pid) FROM t",
    "SELECT g, COUNT(DISTINCT pid) FROM t WHERE g IN ('a', 'b') GROUP BY g",
    "SELECT h, COUNT(DISTINCT pid), SUM(CLAMP(x, 2, 5)) FROM t JOIN p ON t.g = p.g GROUP BY h",
]


@pytest.mark.parametrize("statement", SWEPT)
def test_the_sensitivity_search_holds_each_sql_query_to_its_delta(statement: str) -> None:
    from dpwitness.engines import engine_for
    from dpwitness.engines.derived import add_case
    from dpwitness.engines.joins import join_public
    from dpwitness.io.schema import ColumnKind
    from dpwitness.privacy.neighbours import Neighbours
    from dpwitness.query.queries import Query, Schema
    from dpwitness.query.resolve import Request, resolve
    from dpwitness.sql import compile_statement

    ADD_REMOVE = Neighbours.ADD_REMOVE
    from dpwitness.witness.sensitivity import search_claims

    unit = "pid" if "pid" in statement else None
    kinds = {"x": ColumnKind.FLOAT, "g": ColumnKind.STRING, "pid": ColumnKind.INTEGER}

    def build(request: Request) -> Query:
        groups = 2 if unit and "GROUP BY" in statement else None
        contributions = 2 if unit else 1
        return resolve(
            request, schema=None, neighbours=ADD_REMOVE, privacy_unit=unit, max_contributions=contributions, max_groups=groups
        )

    compiled = compile_statement(
        statement, table="t", schema=Schema(kinds), epsilon=1.0, resolve=build, privacy_unit=unit, public=SWEPT_PUBLIC
    )
    join, on = compiled.join, compiled.join_on
    engine = engine_for("polars")
    key = (1, 2, 3, 4)
    for query in compiled.queries:
        claims = {p.aggregate.value: p.sensitivity for p in query.parts}

        def outputs(frame: pl.DataFrame, query: Query = query, claims: dict[str, float] = claims) -> dict[str, Any]:
            table = engine.open(frame)
            if join is not None and on is not None:  # the private rows joined with the public table
                table = join_public(engine, table, join, left=on)
            for case in compiled.cases:  # GROUP BY CASE …: the key computed from each row
                table = add_case(engine, table, case)
            exact = engine.aggregate(table, query, selection_key=key)
            return {name: exact.get(name, 0.0) for name in claims}

        results = search_claims(
            outputs,
            columns={"x": [None, math.nan, -7.0, 0.0, 2.0, 3.5, 5.0, 9.0], "g": ["a", "b", "c", None], "pid": pl.Int64},
            claims=claims,
            privacy_unit=query.privacy_unit,
            max_contributions=query.max_contributions,
            max_groups=query.max_groups,
            trials=30,
            seed=5,
        )
        for name, result in results.items():
            assert result.ok, (statement, name, result)


def test_the_sweep_would_catch_a_join_delta_without_its_multiplicity() -> None:
    """Δ of a count over a join whose keys match 2 rows is 2: claiming 1 (no × M) is found wrong."""
    from dpwitness.engines import engine_for
    from dpwitness.engines.joins import join_public
    from dpwitness.io.schema import ColumnKind
    from dpwitness.privacy.neighbours import Neighbours
    from dpwitness.query.queries import Query, Schema
    from dpwitness.query.resolve import Request, resolve
    from dpwitness.sql import compile_statement

    ADD_REMOVE = Neighbours.ADD_REMOVE
    from dpwitness.witness.sensitivity import search_claims

    def build(request: Request) -> Query:
        return resolve(request, schema=None, neighbours=ADD_REMOVE, privacy_unit=None)

    kinds = {"x": ColumnKind.FLOAT, "g": ColumnKind.STRING}
    compiled = compile_statement(
        "SELECT COUNT(*) FROM t JOIN p ON t.g = p.g",
        table="t",
        schema=Schema(kinds),
        epsilon=1.0,
        resolve=build,
        public=SWEPT_PUBLIC,
    )
    (query,) = compiled.queries
    assert query.parts[0].sensitivity == 2.0
    engine = engine_for("polars")
    join, on = compiled.join, compiled.join_on
    assert join is not None and on is not None

    def outputs(frame: pl.DataFrame) -> dict[str, Any]:
        exact = engine.aggregate(join_public(engine, engine.open(frame), join, left=on), query, selection_key=(1, 2, 3, 4))
        return {"count": exact["count"]}

    (result,) = search_claims(outputs, columns={"g": ["a", "b", "c", None]}, claims={"count": 1.0}, trials=30, seed=5).values()
    assert not result.ok


@pytest.mark.parametrize(("how", "delta"), [("LEFT JOIN", 0.0), ("JOIN", 1.0)])
def test_a_left_join_on_unique_keys_keeps_the_private_tables_delta(how: str, delta: float) -> None:
    """Replace one record: a LEFT JOIN on unique public keys keeps every record as one row, so COUNT(*)
    has Δ = 0 (the private table's), which the search through the real join holds; an inner join drops
    a record whose key matches nothing, so its Δ is 1, and the search finds a claim of 0 wrong."""
    from dpwitness.engines import engine_for
    from dpwitness.engines.joins import join_public
    from dpwitness.io.schema import ColumnKind
    from dpwitness.query.queries import Query, Schema
    from dpwitness.query.resolve import Request, resolve
    from dpwitness.sql import compile_statement
    from dpwitness.witness.sensitivity import search_claims

    def build(request: Request) -> Query:
        return resolve(request, schema=None, neighbours="replace-one", privacy_unit=None)  # type: ignore[arg-type]

    statement = f"SELECT COUNT(*) FROM t {how} q ON t.g = q.g"
    kinds = {"x": ColumnKind.FLOAT, "g": ColumnKind.STRING}
    compiled = compile_statement(statement, table="t", schema=Schema(kinds), epsilon=1.0, resolve=build, public=SWEPT_PUBLIC)
    (query,) = compiled.queries
    assert query.parts[0].sensitivity == delta
    engine = engine_for("polars")
    join, on = compiled.join, compiled.join_on
    assert join is not None and on is not None

    def outputs(frame: pl.DataFrame) -> dict[str, Any]:
        exact = engine.aggregate(join_public(engine, engine.open(frame), join, left=on), query, selection_key=(1, 2, 3, 4))
        return {"count": exact["count"]}

    columns = {"g": ["a", "b", "c", None]}
    options: dict[str, Any] = {"columns": columns, "neighbours": "replace-one", "trials": 30, "seed": 5}
    (held,) = search_claims(outputs, claims={"count": delta}, **options).values()
    assert held.ok
    (zero,) = search_claims(outputs, claims={"count": 0.0}, **options).values()
    assert zero.ok == (how == "LEFT JOIN")


def test_sql_releases_what_the_python_api_releases(generated: Path) -> None:
    """The same queries in the same order with the same seed: the same noisy values, bit for bit."""
    statement = f"SELECT sex, COUNT(*), AVG({AGE}) FROM adult WHERE sex IN ('Female', 'Male') AND age > 30 GROUP BY sex"
    answer = _session(generated).sql(statement, epsilon=2.0)
    api = _session(generated)
    keys = ["Female", "Male"]
    where = "(sex in ['Female', 'Male']) and (age > 30)"
    count = api.count(epsilon=1.0, by="sex", keys=keys, where=where)
    mean = api.mean("age", (0, 100), epsilon=1.0, by="sex", keys=keys, where=where)
    assert isinstance(answer, Answer) and isinstance(count.value, dict) and isinstance(mean.value, dict)
    assert [(row[0], row[1].value, row[2].value) for row in answer.rows] == [(k, count.value[k], mean.value[k]) for k in keys]


def test_grouped_variance_is_the_python_apis_grouped_variance(generated: Path) -> None:
    """Per key, the three noisy parts of the one grouped query (Δ of each from the one derivation):
    the same release as ``Session.variance(by=…, keys=…)``, bit for bit."""
    statement = f"SELECT sex, VAR({AGE}) AS v, STDDEV({AGE}) AS sd FROM adult WHERE sex IN ('Female', 'Male') GROUP BY sex"
    answer = _session(generated).sql(statement, epsilon=3.0)
    assert isinstance(answer, Answer) and len(answer.releases) == 1
    keys, where = ["Female", "Male"], "sex in ['Female', 'Male']"
    api = _session(generated).variance("age", (0, 100), epsilon=3.0, by="sex", keys=keys, where=where)
    assert isinstance(api.value, dict)
    assert [(row[0], row[1].value) for row in answer.rows] == [(k, api.value[k]) for k in ("Female", "Male")]
    assert all(math.isclose(row[2].value ** 2, row[1].value) for row in answer.rows)
    (release,) = answer.release_set()
    assert [p["sensitivity"] for p in release["parts"]] == [1.0, 50.0, 2500.0]  # count, Σ(v−c), Σ(v−c)²: c = 50, h = 50


@pytest.mark.parametrize("statement", ACCEPTED[:12] + [s for s in ACCEPTED if "GROUP BY" in s][:4])
def test_replace_one_sessions_answer_within_the_interval(statement: str, generated: Path) -> None:
    session = _session(generated, neighbours="replace-one")
    answer = session.sql(statement.removeprefix("EXPLAIN "), epsilon=EPSILON, alpha=ALPHA)
    assert isinstance(answer, Answer)
    _check(answer, _exact(generated, statement.removeprefix("EXPLAIN ")), statement)
    assert all("replace one record" in r["neighbours"] for r in answer.release_set())


def test_aggregates_of_one_release_share_it(generated: Path) -> None:
    """VAR and STDDEV of one column are one release; quantiles of one column and bounds one histogram."""
    session = _session(generated)
    statement = f"SELECT VAR({AGE}), STDDEV({AGE}), MEDIAN({AGE}), MIN({AGE}), COUNT(*) FROM adult"
    answer = session.sql(statement, epsilon=3.0)
    assert isinstance(answer, Answer)
    assert [len(a.calls) for a in answer.aggregates] == [2, 2, 1] and len(answer.releases) == 3
    variance, stddev, median, minimum, _ = answer.rows[0]
    assert math.isclose(stddev.value**2, variance.value) and minimum.value <= median.value
    assert [r["epsilon"] for r in answer.release_set()] == [1.0, 1.0, 1.0]
    assert math.isclose(session.spent.epsilon, 3.0)


def test_released_keys_beyond_a_quantiles_cells_keep_the_largest_groups(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing after the spend fails because of how many keys were released: the later grouped quantile
    takes the groups with the largest released counts, as many as its cells allow, and says so."""
    import dpwitness.mechanisms.quantiles

    monkeypatch.setattr(dpwitness.mechanisms.quantiles, "MAX_CELLS", 2 * 64)
    statement = f"SELECT workclass, COUNT(*) AS n, MEDIAN({AGE}) FROM adult GROUP BY workclass"
    answer = _session(generated).sql(statement, epsilon=50.0)
    assert isinstance(answer, Answer)
    assert len(answer.rows) == 2 and answer.rows[0][0] == "Private"  # the two largest of four groups
    counts = sorted((row[1].value for row in answer.rows), reverse=True)
    assert counts[1] > 500  # not one of the small groups (the 6% empty workclass is null, no group)
    assert any("the 2 groups with the largest released COUNT(*)" in note for note in answer.notes)


def test_like_matches_as_sql_defines_it() -> None:
    """LIKE through the filter language on Polars against a reference written from the SQL standard:
    % any run (newlines too), _ one character, every other character itself (regex syntax included)."""
    from dpwitness.query.predicates import parse, to_polars

    def reference(value: str, pattern: str) -> bool:  # dynamic programming over the two strings
        matched = [[False] * (len(value) + 1) for _ in range(len(pattern) + 1)]
        matched[0][0] = True
        for i, p in enumerate(pattern, 1):
            matched[i][0] = matched[i - 1][0] and p == "%"
            for j, v in enumerate(value, 1):
                matched[i][j] = (matched[i - 1][j] or matched[i][j - 1]) if p == "%" else matched[i - 1][j - 1] and p in ("_", v)
        return matched[-1][-1]

    values = ["Doe, Jane", "a.b\nc", "a+b", "(x)", "[y]", "$^", "", "100%", "Dodo", "ünï", "a_b", "a|b"]
    patterns = ["Do%", "%e", "_", "a.b%", "a+b", "(%)", "[_]", "$^", "", "%", "100%", "__", "%_%", "ü%", "a_b", "a|b", "%.%"]
    frame = pl.DataFrame({"v": [*values, None]})
    for pattern in patterns:
        text = pattern.replace("'", "''")
        kept = frame.filter(to_polars(parse(f"v like '{text}'"), {"v": "string"}))["v"].to_list()
        assert kept == [v for v in values if reference(v, pattern)], pattern
        dropped = frame.filter(to_polars(parse(f"v not like '{text}'"), {"v": "string"}))["v"].to_list()
        assert dropped == [v for v in values if not reference(v, pattern)], pattern  # null: unknown, never kept
