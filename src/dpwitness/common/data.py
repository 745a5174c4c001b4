"""Where the example data lives: the UCI Adult extract when present, generated data otherwise."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

ADULT_ROWS = 32_561


def adult_path() -> Path | None:
    """``$DPWITNESS_ADULT`` when set (None if it is not a file), else ``../shared/data/adult.csv``
    beside the working folder or beside the checkout."""
    override = os.environ.get("DPWITNESS_ADULT")
    if override is not None:
        return Path(override) if Path(override).is_file() else None
    candidates = [Path.cwd().parent / "shared" / "data" / "adult.csv"]
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data" / "adult.csv")
    return next((p for p in candidates if p.is_file()), None)


def adult_missing() -> str:
    """Why Adult was not found, naming the path that was looked at (for messages)."""
    override = os.environ.get("DPWITNESS_ADULT")
    if override is not None:
        return f"DPWITNESS_ADULT={override} is not a file"
    return "../shared/data/adult.csv not found (set DPWITNESS_ADULT to its path)"


def adult_column(name: str) -> npt.NDArray[np.float64] | None:
    """One numeric column of Adult (missing values dropped), or None when the file is absent.

    :param name: the column's name in Adult's header (e.g. "age"); it must hold numbers.
    """
    path = adult_path()
    if path is None:
        return None
    with path.open(newline="") as handle:
        values = [row[name] for row in csv.DictReader(handle)]
    return np.array([float(v) for v in values if v != ""], dtype=np.float64)


def generated_ages(n: int = ADULT_ROWS, seed: int = 2006) -> npt.NDArray[np.float64]:
    """Synthetic ages in [17, 90] shaped roughly like a census (for machines without Adult).

    :param n: how many ages (default :data:`ADULT_ROWS`, Adult's row count).
    :param seed: the numpy generator's seed (default 2006): the same seed, the same ages.
    """
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.gamma(shape=7.5, scale=5.2, size=n) + 17), 17, 90)
