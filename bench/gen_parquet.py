"""Generate (once) the benchmark table: ``user_id, age, category`` as Parquet.

``python3 bench/gen_parquet.py --rows 10000000`` writes ``bench/data/statistics_10000000.parquet``
(gitignored) unless it already exists. Rows are written in chunks with pyarrow, so 100M rows
never sit in memory at once.

Shape: ``user_id`` (int64) drawn uniformly from ``rows // 4`` users, so each user has about
4 rows (Poisson, many users have more than 5: bounding with ``max_contributions=5`` really
drops rows); ``age`` (int64) uniform on [0, 100]; ``category`` (string, dictionary-encoded)
one of 20 values ``c00`` … ``c19`` with unequal frequencies. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
CATEGORIES = [f"c{i:02d}" for i in range(20)]
ROWS_PER_USER = 4
CHUNK_ROWS = 5_000_000
SEED = 2024


def parquet_path(rows: int, directory: Path = DATA_DIR, rows_per_user: int = ROWS_PER_USER) -> Path:
    suffix = "" if rows_per_user == ROWS_PER_USER else f"_per_user_{rows_per_user}"
    return directory / f"statistics_{rows}{suffix}.parquet"


def _chunk(rng: np.random.Generator, n: int, users: int) -> pa.Table:
    weights = np.linspace(1.0, 3.0, len(CATEGORIES))
    codes = rng.choice(len(CATEGORIES), size=n, p=weights / weights.sum()).astype(np.int32)
    category = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(CATEGORIES))
    return pa.table(
        {
            "user_id": pa.array(rng.integers(0, users, size=n, dtype=np.int64)),
            "age": pa.array(rng.integers(0, 101, size=n, dtype=np.int64)),
            "category": category,
        }
    )


def generate(
    rows: int,
    *,
    directory: Path = DATA_DIR,
    seed: int = SEED,
    force: bool = False,
    quiet: bool = False,
    rows_per_user: int = ROWS_PER_USER,
) -> Path:
    """The path of a ``rows``-row table, written now if it is not cached yet.

    ``rows_per_user`` sets the users' number (``rows // rows_per_user``), hence the Poisson mean of
    each user's rows (``bench/bench_bounding.py`` uses 5: at k = 5 most rows belong to users above it).
    """
    path = parquet_path(rows, directory, rows_per_user)
    if path.exists() and not force:
        return path
    directory.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".partial-{os.getpid()}")
    rng = np.random.default_rng(seed)
    users = max(1, rows // rows_per_user)
    started = time.perf_counter()
    writer: pq.ParquetWriter | None = None
    try:
        written = 0
        while written < rows:
            n = min(CHUNK_ROWS, rows - written)
            table = _chunk(rng, n, users)
            if writer is None:
                writer = pq.ParquetWriter(partial, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=1_000_000)
            written += n
            if not quiet:
                print(f"  {written:,}/{rows:,} rows  {time.perf_counter() - started:.1f} s", file=sys.stderr)
    finally:
        if writer is not None:
            writer.close()
    partial.replace(path)  # atomic: a half-written file is never mistaken for the cache
    if not quiet:
        size = path.stat().st_size / 1e6
        print(f"wrote {path} ({rows:,} rows, {size:.0f} MB) in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--dir", type=Path, default=DATA_DIR)
    parser.add_argument("--force", action="store_true", help="rewrite even when cached")
    parser.add_argument("--rows-per-user", type=int, default=ROWS_PER_USER, help="mean rows per user (Poisson)")
    args = parser.parse_args(argv)
    print(generate(args.rows, directory=args.dir, seed=args.seed, force=args.force, rows_per_user=args.rows_per_user))


if __name__ == "__main__":
    main()
