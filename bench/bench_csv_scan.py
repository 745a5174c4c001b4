"""How fast, and how sound, are the ways to scan a CSV with Polars (docs/engines.md, "Reading files").

Writes a CSV of ``--rows`` rows (id, age, workclass, income; 1 % of the workclass cells hold a
quoted comma), then times three scans on three queries (row count, a clamped sum of an untyped
column, a grouped clamped sum), best of ``--repeats``:

* ``quoted``: the previous scan, ``pl.scan_csv`` with quotes honoured (a quoted field may run
  across lines);
* ``lines`` : dpwitness's scan (:mod:`dpwitness.io.reader`: one physical line per record, RFC 4180
  within a line);
* ``arrow`` : a ``pyarrow.dataset`` CSV scan with ``newlines_in_values=False`` and bad rows
  skipped, wrapped with ``pl.scan_pyarrow_dataset``.

Then it adds one record ``41,"target`` in the middle of 1,000 rows and prints each scan's row
count: a sound scan shows 1,001. Usage: ``python bench/bench_csv_scan.py --rows 5000000``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from dpwitness.engines.polars import ENGINE
from dpwitness.io.cells import polars_number

Scan = Callable[[Path], pl.LazyFrame]


def quoted(path: Path) -> pl.LazyFrame:
    return pl.scan_csv(path, infer_schema=False, truncate_ragged_lines=True, ignore_errors=True, encoding="utf8-lossy")


def lines(path: Path) -> pl.LazyFrame:
    return ENGINE.open(path).frame


def arrow(path: Path) -> pl.LazyFrame:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds

    names = pl.scan_csv(path, infer_schema=False).collect_schema().names()
    csv_format = ds.CsvFileFormat(
        parse_options=pcsv.ParseOptions(newlines_in_values=False, invalid_row_handler=lambda row: "skip"),
        convert_options=pcsv.ConvertOptions(column_types={c: pa.string() for c in names}, strings_can_be_null=True),
    )
    return pl.scan_pyarrow_dataset(ds.dataset(path, format=csv_format), allow_pyarrow_filter=False)


SCANS: dict[str, Scan] = {"quoted": quoted, "lines": lines, "arrow": arrow}


def _number(column: str) -> pl.Expr:
    return polars_number(pl.col(column))  # the engines' read: the cell grammar


QUERIES: dict[str, Callable[[pl.LazyFrame], pl.LazyFrame]] = {
    "count": lambda frame: frame.select(pl.len()),
    "sum(age)": lambda frame: frame.select(_number("age").clip(0, 100).sum()),
    "sum(income) by workclass": lambda frame: frame.group_by("workclass").agg(_number("income").clip(0, 1e5).sum()),
}


def generate(rows: int, path: Path) -> Path:
    rng = np.random.default_rng(1)
    work = np.array(["Private", "Self-emp", "Gov", "Never"])[rng.integers(0, 4, rows)]
    frame = pl.DataFrame({"id": np.arange(rows), "age": rng.integers(17, 90, rows), "workclass": work})
    frame = frame.with_columns(
        pl.when(pl.col("id") % 100 == 0).then(pl.lit("Gov, local")).otherwise(pl.col("workclass")).alias("workclass"),
        income=rng.integers(0, 100_000, rows),
    )
    frame.write_csv(path)
    return path


def measure(path: Path, repeats: int) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    for scan_name, scan in SCANS.items():
        for query_name, query in QUERIES.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                query(scan(path)).collect(engine="streaming")
                times.append(time.perf_counter() - start)
            results.append({"scan": scan_name, "query": query_name, "best_s": min(times)})
    return results


def unclosed_quote_counts(folder: Path) -> dict[str, int]:
    rows = [f"{20 + i % 50},n{i}" for i in range(1000)]
    rows.insert(500, '41,"target')
    path = folder / "unclosed.csv"
    path.write_text("age,name\n" + "\n".join(rows) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: int(scan(path).select(pl.len()).collect().item()) for name, scan in SCANS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = generate(options.rows, Path(folder) / "scan.csv")
        print(f"{options.rows:,} rows, {path.stat().st_size / 1e6:.0f} MB; best of {options.repeats}, streaming collect")
        for row in measure(path, options.repeats):
            print(f"  {row['scan']:7} {row['query']:26} {row['best_s']:.2f} s")
        print("rows seen with one unclosed-quote record added to 1,000:", unclosed_quote_counts(Path(folder)))


if __name__ == "__main__":
    main()
