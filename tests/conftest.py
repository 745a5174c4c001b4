"""Shared test fixtures: only what several test modules need."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from dpwitness.common.data import adult_path

#: Test-only modules (the known-verdict catalogue, the toy libraries and user code the targets
#: tests audit) live in tests/support, outside the shipped package.
SUPPORT = Path(__file__).resolve().parent / "support"
sys.path.insert(0, str(SUPPORT))

#: What ``pytest`` alone selects: the unit, property and distribution tests.
FAST_DEFAULT = "not slow and not spark and not browser"


def pytest_configure(config: pytest.Config) -> None:
    """``pytest`` with no file named and no ``-m`` runs the fast default; naming files (or giving
    ``-m``, as ``bash scripts/check`` does with ``-m ""``) runs what was asked for, every group."""
    # pytest-xdist's workers start with COLUMNS=80 in their environment; rich fixes a console's width
    # from COLUMNS when the console is built (the CLI's are built at import), so the tests that invoke
    # the CLI with a wide COLUMNS would wrap at 80 under -n 2 and not without it.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
    asked = any(arg == "-m" or arg.startswith("-m") for arg in config.invocation_params.args)
    if not asked and not config.option.markexpr and config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.option.markexpr = FAST_DEFAULT


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what needs Spark or a browser from what it uses, so that the fast default (``pytest``)
    leaves them out without a list to keep in step; Spark tests share one xdist group, so that under
    ``-n 2`` one worker runs them all in one Spark session. Then order the sweep (see below)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "spark" in fixtures or item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group("spark"))
        if "browser" in fixtures or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))  # one Chromium and one explorer server
    # The Spark sweep replays every case's worst Polars pair: its Polars searches go first (any
    # worker runs them and shares them, tests/witness/test_sensitivity_library.py), its Spark batch
    # last in the Spark worker's queue, so that worker finds them done instead of running them all.
    items.sort(key=lambda item: SWEEP_ORDER.get(getattr(item, "originalname", ""), 1))


#: Where the sensitivity sweep's tests go in the run (default 1: collection order kept).
SWEEP_ORDER = {
    "test_polars_aggregates_move_by_at_most_the_derived_delta": 0,
    "test_polars_aggregates_move_by_at_most_the_derived_l2_delta": 0,
    "test_spark_aggregates_move_by_at_most_the_derived_delta": 2,
}


@pytest.fixture(scope="session")
def adult() -> Path:
    """The UCI Adult extract; the test is skipped, saying why, when it is absent."""
    path = adult_path()
    if path is None:
        pytest.skip("the Adult extract is absent (set DPWITNESS_ADULT or put it at ../shared/data/adult.csv)")
    return path


@pytest.fixture(scope="session")
def adult_schema(adult: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Adult extract's declared column types, written as a data owner would (``dpwitness schema
    adult.csv > adult.schema.toml``: types only, no bounds or categories) to a file not beside the data."""
    from dpwitness.io.schema import Schema

    path = tmp_path_factory.mktemp("adult-schema") / "adult.schema.toml"
    path.write_text(Schema.infer(adult).to_toml(source=adult.name), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of the run (``local[2]``, bound to 127.0.0.1, no UI), started
    on first use (~10 s) and shared by every Spark test; skipped, saying why, without Java or pyspark."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (17+): `java` is not on PATH")
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'dpwitness[spark]')")
    from dpwitness.engines import spark as spark_engine

    session = spark_engine.local_session(cores=2, shuffle_partitions=2)
    yield session
    session.stop()


_SMALL_TABLES = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}


@pytest.fixture(scope="session")
def spark_small_tables() -> Callable[[Any], AbstractContextManager[Any]]:
    """``with spark_small_tables(spark):`` the shared session tuned for tables of a few rows (one
    shuffle partition, no adaptive re-planning, no whole-stage code generation: compiling Java for
    each plan costs more than running it), its settings restored afterwards."""

    @contextmanager
    def tuned(spark: Any) -> Iterator[Any]:
        saved = {name: spark.conf.get(name) for name in _SMALL_TABLES}
        for name, value in _SMALL_TABLES.items():
            spark.conf.set(name, value)
        try:
            yield spark
        finally:
            for name, value in saved.items():
                spark.conf.set(name, value)

    return tuned
